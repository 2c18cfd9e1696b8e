#!/bin/bash
# Prepare the kernel trees under build/src:
#   build/src/upstream  pristine Debian linux-source-6.12 (tag "pristine")
#   build/src/ours      branch "ours" = pristine + our overlay (kernel/) + kernel/patches
# The ours commits are built with git plumbing and the worktree is moved with
# "git reset --hard", so only files whose content changed get rewritten and
# the kernel build stays incremental.
set -eu
# "name order" below is byte order, whatever the caller's locale: the
# series must come out the same for everyone
export LC_ALL=C

top=$(cd "$(dirname "$0")/.." && pwd)
tarball=${LINUX_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
src=$top/build/src
up=$src/upstream
ours=$src/ours
GIT_AUTHOR_NAME=${GIT_AUTHOR_NAME:-$(git -C "$top" config user.name || echo "fs-verity developers")}
GIT_AUTHOR_EMAIL=${GIT_AUTHOR_EMAIL:-$(git -C "$top" config user.email || echo "fsverity@localhost")}
export GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL
export GIT_COMMITTER_NAME=$GIT_AUTHOR_NAME GIT_COMMITTER_EMAIL=$GIT_AUTHOR_EMAIL
# Fixed dates keep the commit ids stable when nothing changed.
export GIT_AUTHOR_DATE="2025-01-01T00:00:00Z" GIT_COMMITTER_DATE="2025-01-01T00:00:00Z"

g() { git -C "$up" "$@"; }

# never move the trees under a running kernel build (build.sh holds the lock)
if [ -z "${FSV_LOCKED:-}" ]; then
	mkdir -p "$top/build"
	exec 9>"$top/build/.lock"
	flock 9
fi

# 1. pristine tree, once
if ! g rev-parse -q --verify refs/tags/pristine >/dev/null 2>&1; then
	echo "tree: extracting $tarball (once, takes a few minutes)"
	rm -rf "$src"
	mkdir -p "$up"
	tar -xf "$tarball" -C "$up" --strip-components=1
	g init -q -b upstream
	g config core.autocrlf false
	g config gc.auto 0
	g config feature.manyFiles true
	# -f: the tarball is the truth, even files the tree's .gitignore would skip
	g add -f -A .
	g commit -q -m "Debian $(basename "$tarball" .tar.xz) pristine tree" \
		-m "Extracted from $(basename "$tarball") ($(dpkg-query -W -f '${Version}' linux-source-6.12 2>/dev/null || echo unknown))."
	g tag pristine
fi
if [ ! -e "$ours/.git" ]; then
	g worktree prune
	g branch -f ours refs/tags/pristine
	g worktree add -q "$ours" ours
fi

# 2. the ours commits, on top of pristine
# First the overlay, committed as an ordered list of steps; each step takes
# the not-yet-added files of kernel/ under its path prefixes ("ALL" = all
# the rest).  kernel/fs/verity and its headers hold the plain core: the
# whole UAPI and in-kernel API, a serial tree build, straightforward
# verification.  A prefix "@name.patch" applies kernel/patches/name.patch
# in that step instead of as a commit of its own.
# Then one commit per patch, in name order: kernel/patches/mm/*.patch (what
# later patches build on outside fs/verity), kernel/patches/fs-verity/*.patch
# (each feature or optimisation of our fs/verity, on top of the plain
# core), then kernel/patches/*.patch (the other parts of the tree), then
# kernel/patches/tmpfs/*.patch (fs-verity on tmpfs and memfd, new, whose
# documentation follows XFS's).
OVERLAY_STEPS=(
"fs/verity include/linux/fsverity.h include/uapi/linux/fsverity.h|fs-verity: replace the implementation with a new one|Replace fs/verity/ with an independent implementation that keeps the
in-kernel API of include/linux/fsverity.h, the UAPI and the on-disk
format, so that ext4, f2fs, btrfs and the other callers work unchanged.

This is the implementation in its plainest correct form; the patches
after the documentation add one feature or optimisation each.  One file
per concern around a private internal.h: enable.c (the ioctl: arguments
checked in the documented order, the filesystem's begin/end callbacks,
rollback on any error or fatal signal), build.c (the Merkle tree, built
by the calling task in one pass, one block in progress per level, each
block written at its place as soon as it is complete), open.c (the
descriptor, checked as hostile, and the per-inode state), verify.c
(read verification: each data block's path climbed to the first tree
block known good, remembered by PG_checked or, for tree blocks smaller
than a page, a bitmap that is only trusted for the page instance it
was set on), measure.c (FS_IOC_MEASURE_VERITY, fsverity_get_digest()
and the BPF kfunc), read_metadata.c, hash.c, signature.c (built-in
signatures) and init.c (start-up, the sysctl, rate-limited messages).

Against mainline (make bench KERNELS=\"upstream step-0002\", the kernel
of the documentation patch, which is this one's code, in the per-patch
run of 2026-12-04, FS=ext4 ROUNDS=3; ext4, 256
MiB, SHA-256, 4K blocks, 2 vCPUs under QEMU TCG, medians of 3 boots):
enable 38.8 warm and 46.1 cold MiB/s against 41.4 and 45.0, sequential
verified reads 41.9 MiB/s against 44.0, both within the run's noise;
random 4 KiB reads at 39.9 % of plain reads' rate against 48.5 %, at
the noise's edge (the carried leaf, later in the series, brings them to
51.9 %).

Cc: Eric Biggers <ebiggers@kernel.org>
Cc: \"Theodore Y. Ts'o\" <tytso@mit.edu>
Cc: fsverity@lists.linux.dev"
"Documentation|fs-verity: document the new implementation|Rewrite Documentation/filesystems/fsverity.rst for it: the UAPI with
every errno, the digest computation, built-in signatures and their
limits, filesystem support, how verification and enabling work, and an
FAQ.  The patches that follow document what they add.

Cc: Eric Biggers <ebiggers@kernel.org>
Cc: \"Theodore Y. Ts'o\" <tytso@mit.edu>
Cc: fsverity@lists.linux.dev"
"ALL|fs-verity: add the remaining files|Files of the overlay that no earlier step took."
)
kdir=${OVERLAY_DIR:-$top/kernel}
idx=$src/.ours-index
export GIT_INDEX_FILE=$idx
trap 'rm -f "$idx"' EXIT
parent=$(g rev-parse refs/tags/pristine^{commit})
tree=$(g rev-parse "$parent^{tree}")

commit_step() { # $1 = subject, $2 = body
	local newtree
	newtree=$(g write-tree)
	if [ "$newtree" != "$tree" ]; then
		parent=$(printf '%s\n\n%s\n\nSigned-off-by: %s <%s>\n' "$1" "$2" \
			"$GIT_AUTHOR_NAME" "$GIT_AUTHOR_EMAIL" |
			g commit-tree "$newtree" -p "$parent")
		tree=$newtree
	fi
}

# kernel/** except patches/ and config/, relative to kernel/
remaining=$(cd "$kdir" 2>/dev/null && find . -type f \
	! -path './patches/*' ! -path './config/*' | sed 's|^\./||' | LC_ALL=C sort || true)

g read-tree "$parent"
replaced= folded=
for step in "${OVERLAY_STEPS[@]}"; do
	prefixes=${step%%|*}; rest=${step#*|}
	subject=${rest%%|*}; body=${rest#*|}
	# our code (once it has any file; git keeps no empty dirs) replaces the
	# tree's fs/verity wholesale, in the step that adds it
	case " $prefixes " in *" fs/verity "*|*" ALL "*)
		if [ -z "$replaced" ] &&
		   [ -n "$(find "$kdir/fs/verity" -type f 2>/dev/null | head -n1)" ]; then
			g rm -q -r --cached --ignore-unmatch fs/verity >/dev/null
			replaced=1
		fi ;;
	esac
	take= keep=
	while IFS= read -r f; do
		[ -n "$f" ] || continue
		hit=
		for pre in $prefixes; do
			case $pre in ALL) hit=1 ;; *) case $f in "$pre"*) hit=1 ;; esac ;; esac
		done
		if [ -n "$hit" ]; then take+=$f$'\n'; else keep+=$f$'\n'; fi
	done <<<"$remaining"
	remaining=$keep
	for pre in $prefixes; do
		case $pre in @*)
			g apply --cached --whitespace=nowarn "$kdir/patches/${pre#@}"
			folded+=" ${pre#@}" ;;
		esac
	done
	printf '%s' "$take" | while IFS= read -r f; do
		mode=100644
		[ -x "$kdir/$f" ] && mode=100755
		blob=$(g hash-object -w --no-filters -- "$kdir/$f")
		printf '%s %s\t%s\n' "$mode" "$blob" "$f"
	done | g update-index --add --index-info
	commit_step "$subject" "$body"
done
[ -z "$remaining" ] || { echo "tree: no overlay step takes: $remaining" >&2; exit 1; }

for p in "$kdir"/patches/mm/*.patch "$kdir"/patches/fs-verity/*.patch \
	 "$kdir"/patches/*.patch "$kdir"/patches/tmpfs/*.patch; do
	[ -e "$p" ] || continue
	case " $folded " in *" ${p#"$kdir"/patches/} "*) continue ;; esac
	g apply --cached --whitespace=nowarn "$p"
	# the patch's own subject (unfolded) and description, as git am would
	subj=$(awk '/^Subject:/ { s = $0; while ((getline l) > 0 && l ~ /^[ \t]/) s = s l
		print s; exit }' "$p" | sed 's/^Subject: *\(\[PATCH[^]]*\] *\)\{0,1\}//; s/[ \t]\+/ /g')
	[ -n "$subj" ] || subj="fs-verity: $(basename "$p" .patch)"
	body=$(awk 'f && /^---$/ { exit } f { print } !f && /^$/ { f = 1 }' "$p")
	[ -n "$body" ] || body="Applied from kernel/patches/${p#"$kdir"/patches/}."
	commit_step "$subj" "$body"
done

rm -f "$idx"
unset GIT_INDEX_FILE
# refresh first: files whose stat changed but content did not must not be
# rewritten (a rewrite bumps the mtime and make rebuilds them)
git -C "$ours" update-index -q --refresh >/dev/null || true
if [ "$(git -C "$ours" rev-parse HEAD)" != "$parent" ]; then
	git -C "$ours" reset -q --hard "$parent"
	echo "tree: ours = $(git -C "$ours" log -1 --format='%h %s')"
else
	git -C "$ours" reset -q --hard "$parent"   # undo stray edits, if any
fi
