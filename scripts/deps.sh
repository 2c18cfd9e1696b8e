#!/bin/sh
# Install the Debian 12 packages the pipeline needs (fast when all present).
# The last line is for scripts/xfsprogs.sh: apt-get source, and what configure
# and make of mkfs, repair, db and io need (Build-Depends of xfsprogs' .dsc
# minus what only the Debian packaging, xfs_scrub, gettext and editline use).
set -eu
PKGS="linux-source-6.12 qemu-system-x86 busybox-static e2fsprogs f2fs-tools
btrfs-progs fsverity keyutils openssl dmsetup bc flex bison libelf-dev libssl-dev
cpio sparse gnuplot-nox gcc ccache make libc6-dev xz-utils git coreutils util-linux
gzip perl python3 python3-ply python3-git erofs-utils
dpkg-dev patch uuid-dev libblkid-dev libinih-dev liburcu-dev"
missing=
for p in $PKGS; do
	dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing:$missing"
[ "$(id -u)" = 0 ] || { echo "deps: run as root (apt-get install$missing)" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
