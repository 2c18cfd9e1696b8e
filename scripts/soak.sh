#!/bin/bash
# make soak: the long versions of the robustness tests.
#   [KERNEL=ours] [DEBUG=0|1] [FS="ext4 f2fs"] [SOAK_SECONDS=300]
#   [HOSTILE_ROUNDS=100] [CUTS=17] [POWERCUT=1] scripts/soak.sh
# 1. one boot running tests/soak.c (SOAK_SECONDS per filesystem), the XFS
#    writeback race of tests/xfs.c (as long, on XFS),
#    tests/hostile.c (HOSTILE_ROUNDS x 10 mutated cases per filesystem) and
#    tests/faults.c (which SKIPs unless DEBUG=1);
# 2. scripts/powercut.sh (CUTS power cuts per filesystem during an enable).
# One PASS/FAIL/SKIP line per test, then "N passed, N failed".
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
kernel=${KERNEL:-ours}
debug=${DEBUG:-0}
suffix=; [ "$debug" = 1 ] && suffix=-debug
name=$kernel$suffix
secs=${SOAK_SECONDS:-300}
rounds=${HOSTILE_ROUNDS:-100}
logs=$top/build/logs
mkdir -p "$logs"
results=$logs/soak-$name.results
: >"$results"

if ! "$top/scripts/build.sh" "$kernel" "$debug" || ! "$top/scripts/initramfs.sh"; then
	echo "FAIL soak/build: the kernel, the tests or the initramfs do not build"
	echo "0 passed, 1 failed"
	exit 1
fi
extra="fsv.tests=soak,hostile,faults,xfs fsv.soak=$secs fsv.hostile=$rounds"
# of xfs, the writeback race, repeated for fsv.soak= seconds
extra="$extra fsv.only=xfs/writeback_begun_before_an_enable_writes_the_tree_it_finds"
# a KASAN kernel under TCG runs ACPI's _PRT so slowly that it hits the AML
# loop timeout and soft-lockup splats at boot: route PCI IRQs without ACPI
[ "$debug" = 1 ] && extra="$extra pci=noacpi"
[ -z "${FS:-}" ] || extra="$extra fsv.fs=$(echo $FS | tr ' ' ',')"
disks=$top/build/disks/soak-$name
rm -rf "$disks"
log=$logs/soak-$name.log
# 4 filesystems x (soak + hostile + faults) + xfs and xfs-1k x the writeback
# race, a debug kernel several times slower
timeout=$(( (secs * 6 + rounds * 40 + 1800) * ($debug + 1) * ($debug + 1) ))
echo "soak: $name: soak ${secs}s, hostile $rounds rounds, faults (console: build/logs/$(basename "$log"), timeout ${timeout}s)"
start=$(date +%s)
"$top/scripts/qemu.sh" "$top/build/$name/bzImage" "$top/build/initramfs.cpio.gz" \
	"$disks" "$log" check 1 "$timeout" "$extra" || true
echo "soak: the boot took $(( $(date +%s) - start ))s"
awk -v boot=soak -v splats="$top/scripts/splats" -f "$top/scripts/splats.awk" -f "$top/scripts/parse-log.awk" "$log" | tee -a "$results"
grep -a -E '# (soak|hostile|faults)/' "$log" | sed 's/^.*\] //' || true

if [ "${POWERCUT:-1}" = 1 ]; then
	"$top/scripts/powercut.sh" 2>&1 | tee "$logs/powercut-$name.out" || true
	grep -E '^(PASS|FAIL|SKIP) ' "$logs/powercut-$name.out" >>"$results" || true
fi
pass=$(grep -c '^PASS' "$results" || true)
failed=$(grep -c '^FAIL' "$results" || true)
echo "$pass passed, $failed failed"
[ "$failed" = 0 ] && [ "$pass" != 0 ]
