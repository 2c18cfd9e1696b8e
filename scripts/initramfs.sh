#!/bin/bash
# Build the guest initramfs: scripts/initramfs.sh [suffix]
#   -> build/initramfs[-suffix].cpio.gz
# busybox-static, the Debian fs/verity tools with their shared libraries, our
# xfsprogs with XFS fs-verity (scripts/xfsprogs.sh: mkfs.xfs, xfs_repair,
# xfs_db, xfs_io, xfs_spaceman from build/xfsprogs, into /usr/sbin), our
# static test programs (/tests/bin/<area>, one per tests/*.c), their data
# (/tests/data, from tests/data) and the guest
# runner (tests/guest/init).  EXTRA_TESTS=dir adds that dir's *.c as tests.
# Rebuilt only when an input changed.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
suffix=${1:+-$1}
out=$top/build/initramfs$suffix.cpio.gz
stage=$top/build/initramfs$suffix.d
bindir=$top/build/tests-bin$suffix
extra=${EXTRA_TESTS:-}
export PATH=/usr/sbin:/usr/bin:/sbin:/bin

TOOLS="mkfs.ext4 e2fsck debugfs tune2fs dumpe2fs filefrag chattr lsattr
mkfs.f2fs fsck.f2fs dump.f2fs mkfs.btrfs btrfs btrfs-map-logical
fsverity keyctl openssl dmsetup mkfs.erofs"
# ours, built from Debian's source with userspace/xfsprogs/*.patch
XFS_TOOLS="sbin/mkfs.xfs sbin/xfs_repair usr/sbin/xfs_db usr/sbin/xfs_io
usr/sbin/xfs_spaceman"
"$top/scripts/xfsprogs.sh"
CFLAGS="-static -O2 -Wall -Wextra -Werror"

srcs() {
	ls "$top"/tests/*.c "$top"/tests/*.h "$top"/tests/data/* "$top"/bench/*.c \
		"$top"/bench/guest.sh
	[ -z "$extra" ] || ls "$extra"/*.c
}

# stamp: everything that goes in, by content (tests, runner, this script)
# and by version (the host tools and libraries)
stamp=$( {
	# shellcheck disable=SC2046
	sha256sum $(srcs) "$top/tests/guest/init" "$0" /etc/mke2fs.conf
	for t in busybox $TOOLS; do ls -lL "$(command -v "$t")"; done
	for t in $XFS_TOOLS; do sha256sum "$top/build/xfsprogs/$t"; done
	echo "$CFLAGS"
} | sha256sum | cut -d' ' -f1)
if [ -f "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ]; then
	exit 0
fi
echo "initramfs: building build/$(basename "$out")"

# 1. the tests
rm -rf "$bindir"
mkdir -p "$bindir"
for c in "$top"/tests/*.c ${extra:+"$extra"/*.c}; do
	area=$(basename "$c" .c)
	[ "$area" = lib ] && continue
	gcc $CFLAGS -I"$top/tests" -o "$bindir/$area" "$c" "$top/tests/lib.c"
done

# 2. the tree
rm -rf "$stage"
mkdir -p "$stage"
cd "$stage"
mkdir -p bin sbin usr/bin usr/sbin etc dev proc sys tmp root run mnt tests/bin \
	usr/lib/ssl
cp "$(command -v busybox)" bin/busybox
for a in $(bin/busybox --list-full); do
	[ -e "$a" ] || ln -s /bin/busybox "$a"
done
add_lib() {
	[ -e ".$1" ] && return
	mkdir -p ".$(dirname "$1")"
	cp -L "$1" ".$1"
}
add_tool() { # add_tool PATH DIR: the binary into DIR, with what it loads
	rm -f "$2/$(basename "$1")"
	cp -L "$1" "$2/"
	# the libraries it loads, and the dynamic loader
	for lib in $(ldd "$1" | awk '/=> \// { print $3 } /^\t\// { print $1 }'); do
		add_lib "$lib"
	done
}
for t in $TOOLS; do
	add_tool "$(command -v "$t")" usr/bin
done
for t in $XFS_TOOLS; do
	add_tool "$top/build/xfsprogs/$t" usr/sbin
done
cp /etc/mke2fs.conf etc/
cp -L /usr/lib/ssl/openssl.cnf usr/lib/ssl/openssl.cnf
cp "$bindir"/* tests/bin/
# images and other inputs the tests read (tests/data/README says what each is)
mkdir -p tests/data
cp "$top"/tests/data/* tests/data/
# the benchmark (make bench): bench/*.c are whole programs
mkdir -p bench
for c in "$top"/bench/*.c; do
	gcc $CFLAGS -pthread -o "bench/$(basename "$c" .c)" "$c"
done
cp "$top/bench/guest.sh" bench/guest.sh
cp "$top/tests/guest/init" init
chmod 755 init
[ -e dev/console ] || mknod dev/console c 5 1 2>/dev/null || true
[ -e dev/null ] || mknod dev/null c 1 3 2>/dev/null || true
printf 'root:x:0:0:root:/root:/bin/sh\n' >etc/passwd
printf 'root:x:0:\n' >etc/group

find . -print0 | LC_ALL=C sort -z | cpio --quiet -o -0 -H newc -R 0:0 | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
echo "$stamp" >"$out.stamp"
echo "initramfs: $(du -h "$out" | cut -f1) with tests: $(ls "$bindir" | tr '\n' ' ')"
