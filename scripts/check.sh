#!/bin/bash
# make check, the gate (run it before every commit; .ci/run runs it):
#   1. one kernel (ours by default), built once, booted twice: the guest
#      suite on all six filesystems (scripts/check-kernel.sh) but for the
#      long robustness areas CHECK_SKIP_TESTS ("soak hostile"; with TESTS
#      set, none), with the deadlock stress CHECK_DEADLOCK_SECONDS (20)
#      and the stats mount cycles CHECK_MOUNT_CYCLES (50) short;
#   2. the lint of our code: checkpatch, sparse, W=1, kernel-doc
#      (scripts/lint.sh; ours only, LINT=0 skips it);
#   3. a short version of the power cuts: CHECK_CUTS (2) per filesystem
#      (scripts/powercut.sh; POWERCUT=0, DEBUG=1 or TESTS= skip it).
# The rest (the other kernels, compat, the power cuts in full) is make
# check-all (scripts/check-all.sh).
#   KERNEL=ours|upstream DEBUG=0|1 NOSIG=0|1 TESTS="a b" FS="ext4 f2fs" scripts/check.sh
# One PASS/FAIL/SKIP line per test, each stage's time, the total (also in
# build/logs/check-<kernel>.time), and "N passed, N failed" last.
set -eu

main() {

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/check-lib.sh
. "$top/scripts/check-lib.sh"
run_start=$(date +%s)
kernel=${KERNEL:-ours}
suffix=; [ "${DEBUG:-0}" = 1 ] && suffix=-debug
[ "${NOSIG:-0}" = 1 ] && suffix=$suffix-nosig
name=$kernel$suffix
mkdir -p "$top/build/logs"
results=$top/build/logs/check-$name.gate.results
: >"$results"

# the Debian packages (a new machine installs them here: timed with the rest)
start=$(date +%s)
"$top/scripts/deps.sh"
STAGE_TIMES+=("deps $(($(date +%s) - start))")

# the long runs left out or shortened to fit the gate's time; make
# check-all runs them all at the guest's full defaults (fsv.soak also
# bounds the XFS writeback race's cycles, which the gate still runs)
skip_tests=${CHECK_SKIP_TESTS-soak hostile}
[ -z "${TESTS:-}" ] || skip_tests=
[ -z "$skip_tests" ] || echo "check: not run here: $skip_tests (make check-all runs them)"
stage "$name" -- env SKIP_TESTS="$skip_tests" \
	CHECK_SOAK_SECONDS="${CHECK_SOAK_SECONDS:-10}" \
	CHECK_HOSTILE_ROUNDS="${CHECK_HOSTILE_ROUNDS:-5}" \
	CHECK_DEADLOCK_SECONDS="${CHECK_DEADLOCK_SECONDS:-20}" \
	CHECK_MOUNT_CYCLES="${CHECK_MOUNT_CYCLES:-50}" "$top/scripts/check-kernel.sh"

if [ "$kernel" = ours ] && [ "${LINT:-1}" = 1 ]; then
	stage lint -- "$top/scripts/lint.sh"
fi

if [ "${POWERCUT:-1}" = 0 ] || [ "${DEBUG:-0}" = 1 ] || [ -n "${TESTS:-}" ]; then
	echo "check: no power cuts (POWERCUT=0, DEBUG=1 or TESTS set)"
else
	stage powercut -- gated env CUTS="${CHECK_CUTS:-2}" "$top/scripts/powercut.sh"
fi

times_table "check-$name"
summary
}

# one line: bash has read it whole before main runs, so an edit of this
# file during a run cannot make it run a stale offset's text afterwards
main "$@"; exit
