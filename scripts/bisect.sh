#!/bin/bash
# make series BISECT=1: every patch of the series builds, is W=1 and sparse
# clean where it touches C, boots, and passes the smoke tests.
#   scripts/bisect.sh          (FIRST=n LAST=m: only patches n..m;
#                               BOOT=0: build and w1 only, no smoke boot)
# Each commit of pristine..ours is checked out in its own worktree
# (build/src/bisect, objects in build/obj/bisect, the config of ours), so
# the incremental builds of ours are left alone.  Per patch:
#   build  bzImage (incremental; ccache as in build.sh)
#   w1     W=1 and sparse (C=2) warnings on the lines the patch adds, in
#          the objects of the .c files it touches
#   smoke  tests/smoke.c, one boot on fresh disks, on ext4, ext4-1k, f2fs
#          and btrfs (plus xfs, xfs-1k once the step mounts a verity XFS
#          read-write: XFS_SB_FEAT_RO_COMPAT_ALL has the verity bit)
#   checkpatch  its --strict counts (errors/warnings/checks), as
#          scripts/series.sh found them (build/logs/series-checkpatch.txt)
# One line per patch, then "bisect: N of M patches build, boot and pass
# smoke"; exit status 1 unless all do.  About 3 to 5 minutes a patch
# under TCG: too slow for make check, which tests the tip.  Each step's
# kernel stays as build/step-NNNN/bzImage, for "KERNELS=step-0004
# step-0005 make bench" (a feature's numbers, before and after).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
up=$top/build/src/upstream
src=$top/build/src/bisect
obj=$top/build/obj/bisect
logs=$top/build/logs/bisect
disks=$top/build/disks/bisect

# ours first: the tree (tree.sh), its .config, the initramfs and xfsprogs
"$top/scripts/build.sh" ours 0 >/dev/null
"$top/scripts/xfsprogs.sh" >/dev/null
"$top/scripts/initramfs.sh" >/dev/null
initrd=$top/build/initramfs.cpio.gz

exec 9>"$top/build/.lock"
flock 9
mkdir -p "$obj" "$logs"
cp "$top/build/obj/ours/.config" "$top/build/obj/ours/ipe-test-cert.pem" "$obj/"
if [ -x /usr/lib/ccache/gcc ] && [ "${CCACHE_DISABLE:-0}" != 1 ]; then
	export PATH=/usr/lib/ccache:$PATH CCACHE_BASEDIR=$top CCACHE_NOHASHDIR=1
fi
git -C "$up" worktree remove -f -f "$src" 2>/dev/null || rm -rf "$src"
git -C "$up" worktree prune
git -C "$up" worktree add -q --detach "$src" refs/tags/pristine
trap 'git -C "$up" worktree remove -f -f "$src" 2>/dev/null || true' EXIT
mk() { make -C "$src" O="$obj" ARCH=x86_64 -j"$(nproc)" "$@"; }

# new_warnings COMMIT LOG: the W=1/sparse warnings of LOG on lines that
# COMMIT adds (what was there before is the file's, not the patch's)
new_warnings() {
	git -C "$up" diff -U0 "$1^" "$1" | awk -v logf="$2" '
		/^\+\+\+ b\// { file = substr($0, 7); next }
		/^@@ / {
			split($3, a, ","); start = substr(a[1], 2) + 0
			len = (a[2] == "") ? 1 : a[2] + 0
			for (l = start; l < start + len; l++) added[file ":" l] = 1
		}
		END {
			while ((getline line < logf) > 0) {
				if (line !~ /: (warning|error):/) continue
				sub(/^.*src\/bisect\//, "", line)
				split(line, f, ":")
				if ((f[1] ":" f[2]) in added) n++
			}
			print n + 0
		}'
}

# xfs_verity_mountable TREE: does TREE's XFS mount a verity filesystem
# read-write, i.e. is XFS_SB_FEAT_RO_COMPAT_VERITY inside the
# XFS_SB_FEAT_RO_COMPAT_ALL definition of fs/xfs/libxfs/xfs_format.h?
# The XFS patches before the one that adds it mount such a filesystem
# read-only only, so their steps smoke-test the other filesystems alone.
xfs_verity_mountable() {
	awk '/^#define[ \t]+XFS_SB_FEAT_RO_COMPAT_ALL/ { in_all = 1 }
		in_all && /XFS_SB_FEAT_RO_COMPAT_VERITY/ { found = 1 }
		in_all && !/\\$/ { exit }
		END { exit !found }' "$1/fs/xfs/libxfs/xfs_format.h"
}

mapfile -t commits < <(git -C "$up" rev-list --reverse refs/tags/pristine..ours)
first=${FIRST:-1} last=${LAST:-${#commits[@]}}
good=0 total=0
for ((i = first; i <= last; i++)); do
	c=${commits[i - 1]}
	n=$(printf '%04d' "$i")
	subject=$(git -C "$up" log -1 --format=%s "$c")
	total=$((total + 1))
	git -C "$src" checkout -q --detach "$c"

	build=FAIL w1=- smoke=- cp=-
	cpl=$(grep "^checkpatch: $n-" "$top/build/logs/series-checkpatch.txt" 2>/dev/null || true)
	[ -z "$cpl" ] || cp=$(echo "$cpl" | sed 's/.*: \([0-9]*\) errors, \([0-9]*\) warnings, \([0-9]*\) checks/\1\/\2\/\3/')
	if mk olddefconfig bzImage >"$logs/$n-build.log" 2>&1; then
		build=ok
		mkdir -p "$top/build/step-$n"
		cp "$obj/arch/x86/boot/bzImage" "$top/build/step-$n/bzImage"
		# the objects of the C files this patch touches (gone ones skipped)
		objs=$(git -C "$up" diff --name-only --diff-filter=AM "$c^" "$c" -- '*.c' |
			sed 's/\.c$/.o/')
		w1=0
		if [ -n "$objs" ]; then
			# shellcheck disable=SC2086
			mk W=1 C=2 $objs >"$logs/$n-w1.log" 2>&1 || w1=error
			[ "$w1" = error ] || w1=$(new_warnings "$c" "$logs/$n-w1.log")
		fi
		if [ "${BOOT:-1}" = 0 ]; then
			[ "$w1" != 0 ] || good=$((good + 1))
			echo "bisect: $n build=$build w1=$w1 smoke=not-booted checkpatch(e/w/c)=$cp  $subject"
			continue
		fi
		fs="ext4 ext4-1k f2fs btrfs"
		! grep -q '^CONFIG_XFS_FS=y' "$obj/.config" ||
			! xfs_verity_mountable "$src" ||
			fs="$fs xfs xfs-1k"
		rm -rf "$disks"
		log=$logs/$n-boot.log
		"$top/scripts/qemu.sh" "$obj/arch/x86/boot/bzImage" "$initrd" "$disks" "$log" \
			check 1 1200 "fsv.tests=smoke fsv.fs=$(echo "$fs" | tr ' ' ',')" ||
			true
		res=$(awk -v boot=boot1 -v splats="$top/scripts/splats" \
			-f "$top/scripts/splats.awk" -f "$top/scripts/parse-log.awk" "$log")
		p=$(printf '%s\n' "$res" | grep -c '^PASS' || true)
		f=$(printf '%s\n' "$res" | grep -c '^FAIL' || true)
		smoke=$p/$f
		[ "$f" != 0 ] || [ "$p" = 0 ] || [ "$w1" != 0 ] || good=$((good + 1))
		printf '%s\n' "$res" | grep '^FAIL' | sed "s/^/#   $n /" || true
	fi
	echo "bisect: $n build=$build w1=$w1 smoke(pass/fail)=$smoke checkpatch(e/w/c)=$cp  $subject"
done
if [ "${BOOT:-1}" = 0 ]; then
	echo "bisect: $good of $total patches build W=1/sparse clean, none booted (BOOT=0; logs: build/logs/bisect/)"
else
	echo "bisect: $good of $total patches build, boot and pass smoke (logs: build/logs/bisect/)"
fi
[ "$good" = "$total" ]
