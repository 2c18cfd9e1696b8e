#!/bin/bash
# make check-all: the gate and everything that needs another kernel or a
# long run (before resolving an issue that changes kernel code):
#   gate      scripts/check.sh without its short power cuts, with the soak
#             (30 s), hostile metadata (13 rounds), the deadlock stress
#             (60 s) and the stats mount cycles (200) at the guest's
#             defaults: ours, both boots, the lint
#   nosig     ours without built-in signatures (NOSIG=1): the signature and
#             error tests (lines nosig/...; NOSIG_CHECK=0 skips it)
#   noverity  ours without CONFIG_FS_VERITY (NOVERITY=1): it builds, and
#             mounts a verity XFS read-only only, first mount and
#             remount,rw (lines noverity/setup/xfs*; NOVERITY_CHECK=0 skips it)
#   debug     ours sanitized (DEBUG=1: KASAN, UBSAN, lockdep, kmemleak, fault
#             injection): DEBUG_TESTS on all filesystems but xfs-1k (lines
#             debug/...; DEBUG_CHECK=0 skips it)
#   compat    the pristine kernel against ours and fsverity-utils
#             (scripts/compat.sh; COMPAT=0 skips it)
#   powercut  CUTS (4) power cuts per filesystem during an enable
#             (scripts/powercut.sh; POWERCUT=0 skips it)
# Each stage's time, the total (also in build/logs/check-all.time), and one
# "N passed, N failed" over all of it, last.
set -eu

main() {

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/check-lib.sh
. "$top/scripts/check-lib.sh"
run_start=$(date +%s)
name=ours
mkdir -p "$top/build/logs"
results=$top/build/logs/check-all.results
: >"$results"
unset KERNEL DEBUG NOSIG NOVERITY TESTS FS

stage gate -- env POWERCUT=0 CHECK_SKIP_TESTS= CHECK_SOAK_SECONDS=30 \
	CHECK_HOSTILE_ROUNDS=13 CHECK_DEADLOCK_SECONDS=60 CHECK_MOUNT_CYCLES=200 \
	"$top/scripts/check.sh"

# without built-in signatures: a signature given to enable is refused,
# everything else still works
[ "${NOSIG_CHECK:-1}" = 0 ] ||
	stage nosig nosig -- env NOSIG=1 TESTS="signature errors" \
		"$top/scripts/check-kernel.sh"

# without fs-verity at all: every test on XFS skips, the verdicts are the
# setup steps' refusals; the run keeps to XFS, whose check is ours
[ "${NOVERITY_CHECK:-1}" = 0 ] ||
	stage noverity noverity -- env NOVERITY=1 TESTS=smoke FS="xfs xfs-1k" \
		"$top/scripts/check-kernel.sh"

# on the sanitized kernel, on the filesystems but xfs-1k (ext4-1k covers
# blocks smaller than a page); the whole suite there is make check DEBUG=1.
# Of xfs, the writeback race, which XFS error injection (a debug kernel's)
# makes happen every time, and the enables that free other files' blocks
# (xfs_flush_inodes() and a blockgc scan under i_rwsem) or whose flag's
# commit meets a log shutdown; readahead and deadlock put the tree
# readahead that ->readahead starts under invalidate_lock in front of
# lockdep.
[ "${DEBUG_CHECK:-1}" = 0 ] ||
	stage debug debug -- env DEBUG=1 \
		TESTS="${DEBUG_TESTS:-smoke errors verify metadata faults stats xfs readahead deadlock}" \
		ONLY="${DEBUG_ONLY-xfs/writeback_begun_before_an_enable_writes_the_tree_it_finds xfs/enable_frees_other_files_preallocation_when_the_quota_is_full xfs/a_failed_commit_of_the_verity_flag_leaves_nothing_claiming_verity}" \
		FS="ext4 ext4-1k f2fs btrfs xfs" "$top/scripts/check-kernel.sh"

# the differential compatibility suite: three boots of its own
[ "${COMPAT:-1}" = 0 ] ||
	stage compat -- gated "$top/scripts/compat.sh"

[ "${POWERCUT:-1}" = 0 ] ||
	stage powercut -- gated env CUTS="${CUTS:-4}" "$top/scripts/powercut.sh"

times_table check-all
summary
}

# one line: bash has read it whole before main runs, so an edit of this
# file during a run cannot make it run a stale offset's text afterwards
main "$@"; exit
