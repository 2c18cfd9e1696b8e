#!/bin/bash
# One kernel's guest suite: build it, boot it twice on fresh disks (boot 1
# makes the filesystems, boot 2 only mounts them), every test on every
# filesystem.
#   KERNEL=ours|upstream DEBUG=0|1 NOSIG=0|1 NOVERITY=0|1 TESTS="a b" FS="ext4 f2fs"
#   ONLY="area/test ..." (in those areas, only those tests)
#   [CHECK_SOAK_SECONDS=s] [CHECK_HOSTILE_ROUNDS=n] [CHECK_DEADLOCK_SECONDS=s]
#   [CHECK_MOUNT_CYCLES=n] [SKIP_TESTS="a b" (areas not run)] scripts/check-kernel.sh
# One PASS/FAIL/SKIP line per test, gated by tests/expected-skips and
# tests/expected-failures for this kernel, then "N passed, N failed".
# Console logs: build/logs/check-<name>-boot{1,2}.log.
set -eu

# Everything is in main(), read whole before it runs: an edit of this file
# during a (long) run cannot change what the running check executes.
main() {

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/check-lib.sh
. "$top/scripts/check-lib.sh"
kernel=${KERNEL:-ours}
debug=${DEBUG:-0}
suffix=; [ "$debug" = 1 ] && suffix=-debug
[ "${NOSIG:-0}" = 1 ] && suffix=$suffix-nosig
[ "${NOVERITY:-0}" = 1 ] && suffix=$suffix-noverity
name=$kernel$suffix
# per boot; a debug (KASAN, lockdep) kernel is several times slower
timeout=${CHECK_TIMEOUT:-$([ "$debug" = 1 ] && echo 3600 || echo 2700)}
ifs_suffix=${EXTRA_TESTS:+proof}
extra=
[ -z "${TESTS:-}" ] || extra="$extra fsv.tests=$(echo $TESTS | tr ' ' ',')"
[ -z "${FS:-}" ] || extra="$extra fsv.fs=$(echo $FS | tr ' ' ',')"
[ -z "${ONLY:-}" ] || extra="$extra fsv.only=$(echo $ONLY | tr ' ' ',')"
# the short robustness runs' length (the guest's defaults: 30 s of soak
# and 13 hostile rounds per filesystem)
[ -z "${CHECK_SOAK_SECONDS:-}" ] || extra="$extra fsv.soak=$CHECK_SOAK_SECONDS"
[ -z "${CHECK_HOSTILE_ROUNDS:-}" ] || extra="$extra fsv.hostile=$CHECK_HOSTILE_ROUNDS"
# and of the deadlock stress (60 s) and the stats mount cycles (200)
[ -z "${CHECK_DEADLOCK_SECONDS:-}" ] || extra="$extra fsv.deadlock=$CHECK_DEADLOCK_SECONDS"
[ -z "${CHECK_MOUNT_CYCLES:-}" ] || extra="$extra fsv.cycles=$CHECK_MOUNT_CYCLES"
[ -z "${SKIP_TESTS:-}" ] || extra="$extra fsv.skip=$(echo $SKIP_TESTS | tr ' ' ',')"
# a KASAN kernel under TCG runs ACPI's _PRT so slowly that it hits the AML
# loop timeout and soft-lockup splats at boot: route PCI IRQs without ACPI
[ "$debug" = 1 ] && extra="$extra pci=noacpi"
# KERNEL_CMDLINE: more kernel parameters, for experiments
[ -z "${KERNEL_CMDLINE:-}" ] || extra="$extra $KERNEL_CMDLINE"
logs=$top/build/logs
mkdir -p "$logs"

start=$(date +%s)
if ! "$top/scripts/build.sh" "$kernel" "$debug"; then
	echo "FAIL build/$name: the kernel does not build (build/logs/build-$name.log)"
	echo "0 passed, 1 failed"
	exit 1
fi
echo "check: $name: kernel ready in $(($(date +%s) - start)) s"
start=$(date +%s)
if ! "$top/scripts/initramfs.sh" $ifs_suffix; then
	echo "FAIL build/tests: the tests or the initramfs do not build"
	echo "0 passed, 1 failed"
	exit 1
fi
echo "check: $name: xfsprogs and initramfs ready in $(($(date +%s) - start)) s"
initrd=$top/build/initramfs${ifs_suffix:+-$ifs_suffix}.cpio.gz

disks=$top/build/disks/check-$name
# one run per kernel at a time: they share the disks and the logs
mkdir -p "$top/build/disks"
exec 8>"$top/build/disks/check-$name.lock"
if ! flock -n 8; then
	echo "check: waiting for another check of $name (build/disks/check-$name.lock)"
	flock 8
fi
rm -rf "$disks"
mkdir -p "$disks"
results=$logs/check-$name.results
: >"$results"

for boot in 1 2; do
	log=$logs/check-$name-boot$boot.log
	echo "check: $name boot $boot (console: build/logs/$(basename "$log"), timeout ${timeout}s)"
	start=$(date +%s)
	rc=0
	"$top/scripts/qemu.sh" "$top/build/$name/bzImage" "$initrd" "$disks" "$log" \
		check "$boot" "$timeout" "$extra" || rc=$?
	echo "check: $name boot $boot took $(($(date +%s) - start)) s$([ "$rc" = 124 ] && echo ", TIMED OUT")"
	# where the boot's time went, slowest first (make check's budget)
	awk -f "$top/scripts/test-times.awk" "$log" | sort -rn >"${log%.log}.times"
	echo "check: slowest areas of boot $boot (build/logs/$(basename "${log%.log}.times")):" \
		$(grep '(area)' "${log%.log}.times" | head -n 5 | awk '{printf "%s%s %d s", (NR > 1 ? ", " : ""), $3, $1}')
	awk -v boot="boot$boot" -v splats="$top/scripts/splats" \
		-f "$top/scripts/splats.awk" -f "$top/scripts/parse-log.awk" "$log" |
		gate | tee -a "$results"
done
summary
}

# one line: bash has read it whole before main runs, so an edit of this
# file during a run cannot make it run a stale offset's text afterwards
main "$@"; exit
