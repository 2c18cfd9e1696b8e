#!/bin/bash
# Build xfsprogs from Debian's own source package with our fs-verity patches
# (userspace/xfsprogs/*.patch): scripts/xfsprogs.sh
#   -> build/xfsprogs/sbin/{mkfs.xfs,xfs_repair},
#      build/xfsprogs/usr/sbin/{xfs_db,xfs_io,xfs_spaceman}
# Only those tools and the libraries they link are built; nothing goes to
# /usr and the host's own xfsprogs, if any, is left alone.  The source is
# fetched once (apt-get source, from a deb-src twin of the archive apt already
# uses) and the build is redone only when the source version, a patch or this
# script changes.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
dl=$top/build/xfsprogs-src
out=$top/build/xfsprogs
log=$top/build/logs/xfsprogs-build.log
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C
TOOLS="sbin/mkfs.xfs sbin/xfs_repair usr/sbin/xfs_db usr/sbin/xfs_io
usr/sbin/xfs_spaceman"

# one build at a time (make check may start one while you run another)
mkdir -p "$top/build"
exec 9>"$top/build/.xfsprogs.lock"
flock 9

# 1. the source, once: needs a deb-src entry with the URIs, suites and
# components of the Debian archive apt already uses
if ! ls "$dl"/xfsprogs_*.dsc >/dev/null 2>&1; then
	if ! apt-get source --print-uris xfsprogs >/dev/null 2>&1; then
		[ "$(id -u)" = 0 ] || { echo "xfsprogs: needs root once, to add deb-src and fetch the source" >&2; exit 1; }
		if [ -f /etc/apt/sources.list.d/debian.sources ]; then
			sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
				>/etc/apt/sources.list.d/debian-src.sources
		else
			sed -n 's/^deb /deb-src /p' /etc/apt/sources.list \
				>/etc/apt/sources.list.d/debian-src.list
		fi
		echo "xfsprogs: added deb-src entries; apt-get update"
		apt-get update -q >/dev/null
	fi
	mkdir -p "$dl"
	(cd "$dl" && apt-get source -q --download-only xfsprogs)
fi
dsc=$(ls "$dl"/xfsprogs_*.dsc | sort -V | tail -n1)

# 2. up to date?
# by content (not by the path this script was called by)
patches=$(ls "$top"/userspace/xfsprogs/*.patch)
# shellcheck disable=SC2086
stamp=$( { basename "$dsc"; cat $patches "$top/scripts/xfsprogs.sh"; } | sha256sum | cut -d' ' -f1)
if [ "$(cat "$out/.stamp" 2>/dev/null)" = "$stamp" ]; then
	exit 0
fi
echo "xfsprogs: building $(basename "$dsc" .dsc) + $(echo "$patches" | wc -l) patches (log: build/logs/$(basename "$log"))"

# 3. unpack (Debian's own patches applied), ours on top, build, install into
# a fresh tree that replaces build/xfsprogs only once it is complete
src=$dl/src
new=$out.new
rm -rf "$src" "$new"
mkdir -p "$(dirname "$log")"
dpkg-source -q -x "$dsc" "$src" >"$log" 2>&1
for p in $patches; do
	patch -d "$src" -p1 --no-backup-if-mismatch -s <"$p"
done
cd "$src"
# our Makefile exports DEBUG=0 (and KERNEL, TESTS, ...); xfsprogs's own
# build rules read DEBUG as compiler flags ("ld: cannot find 0")
unset DEBUG KERNEL NOSIG TESTS FS
# through ccache, as the kernel (scripts/build.sh): a clean clone on a
# machine that built this before compiles nothing again
if [ -x /usr/lib/ccache/gcc ] && [ "${CCACHE_DISABLE:-0}" != 1 ]; then
	export PATH=/usr/lib/ccache:$PATH CCACHE_BASEDIR=$top CCACHE_NOHASHDIR=1
fi
if ! { ./configure --enable-gettext=no --enable-scrub=no --enable-editline=no \
		--enable-lto=no &&
	make -j"$(nproc)" headers &&
	make -j"$(nproc)" mkfs repair db io spaceman &&
	for d in mkfs repair db io spaceman; do DIST_ROOT=$new make -C "$d" install; done
	} >>"$log" 2>&1; then
	tail -n 30 "$log" >&2
	echo "xfsprogs: build failed, see $log" >&2
	exit 1
fi
for t in $TOOLS; do
	[ -x "$new/$t" ] || { echo "xfsprogs: $new/$t missing" >&2; exit 1; }
	strip --strip-debug "$new/$t"	# as Debian ships them; a smaller initramfs
done
echo "$stamp" >"$new/.stamp"
rm -rf "$out"
mv "$new" "$out"
echo "xfsprogs: $("$out/sbin/mkfs.xfs" -V) in build/xfsprogs"
