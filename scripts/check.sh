#!/bin/bash
# The test run: build, boot twice on fresh disks, report.
#   KERNEL=ours|upstream DEBUG=0|1 NOSIG=0|1 TESTS="a b" FS="ext4 f2fs" LINT=0|1 scripts/check.sh
# Prints one PASS/FAIL/SKIP line per test and ends with "N passed, N failed".
set -eu

# Everything is in main(), read whole before it runs: an edit of this file
# during a (long) run cannot change what the running check executes.
main() {

top=$(cd "$(dirname "$0")/.." && pwd)
kernel=${KERNEL:-ours}
debug=${DEBUG:-0}
suffix=; [ "$debug" = 1 ] && suffix=-debug
[ "${NOSIG:-0}" = 1 ] && suffix=$suffix-nosig
name=$kernel$suffix
# per boot; a debug (KASAN, lockdep) kernel is several times slower
timeout=${CHECK_TIMEOUT:-$([ "$debug" = 1 ] && echo 3600 || echo 2700)}
ifs_suffix=${EXTRA_TESTS:+proof}
extra=
[ -z "${TESTS:-}" ] || extra="$extra fsv.tests=$(echo $TESTS | tr ' ' ',')"
[ -z "${FS:-}" ] || extra="$extra fsv.fs=$(echo $FS | tr ' ' ',')"
# a KASAN kernel under TCG runs ACPI's _PRT so slowly that it hits the AML
# loop timeout and soft-lockup splats at boot: route PCI IRQs without ACPI
[ "$debug" = 1 ] && extra="$extra pci=noacpi"

if ! "$top/scripts/build.sh" "$kernel" "$debug"; then
	echo "FAIL build/$name: the kernel does not build (build/logs/build-$name.log)"
	echo "0 passed, 1 failed"
	exit 1
fi
if ! "$top/scripts/initramfs.sh" $ifs_suffix; then
	echo "FAIL build/tests: the tests or the initramfs do not build"
	echo "0 passed, 1 failed"
	exit 1
fi
initrd=$top/build/initramfs${ifs_suffix:+-$ifs_suffix}.cpio.gz

disks=$top/build/disks/check-$name
logs=$top/build/logs
# one run per kernel at a time: they share the disks and the logs
mkdir -p "$top/build/disks"
exec 8>"$top/build/disks/check-$name.lock"
if ! flock -n 8; then
	echo "check: waiting for another check of $name (build/disks/check-$name.lock)"
	flock 8
fi
rm -rf "$disks"
mkdir -p "$disks" "$logs"
results=$logs/check-$name.results
: >"$results"

# gate: a SKIP is a decision written down: each must match a line of
# tests/expected-skips for this kernel, or it becomes a FAIL.  A FAIL
# that matches a line of tests/expected-failures (a known mainline bug,
# on the kernel that has it) becomes an XFAIL, counted apart.
listed() { # FILE TEST: does a line of FILE allow TEST on this kernel?
	local k glob why
	while read -r k glob why; do
		case $k in ''|'#'*) continue ;; esac
		# shellcheck disable=SC2254
		case $name in $k) ;; *) continue ;; esac
		# shellcheck disable=SC2254
		case $2 in $glob) return 0 ;; esac
	done <"$1"
	return 1
}
gate() {
	local line test
	while IFS= read -r line; do
		test=${line#* }; test=${test%%:*}
		case $line in
		"SKIP "*)
			listed "$top/tests/expected-skips" "$test" ||
				line="FAIL $test: skipped, and no line of tests/expected-skips allows it on $name (${line#*: })" ;;
		"FAIL "*)
			! listed "$top/tests/expected-failures" "$test" ||
				line="XFAIL $test: known bug of $name (tests/expected-failures): ${line#*: }" ;;
		esac
		echo "$line"
	done
}

# stage NAME CMD...: CMD's verdict lines; a stage that ends without one, or
# fails without saying what failed, is a FAIL of its own
stage() {
	local what=$1 out rc=0

	shift
	out=$(mktemp)
	"$@" >"$out" 2>&1 || rc=$?
	grep -E '^(PASS|FAIL|SKIP) ' "$out" || true
	if ! grep -qE '^(PASS|FAIL|SKIP) ' "$out"; then
		echo "FAIL $what: ended without a verdict (exit $rc): $(tail -n 1 "$out")"
	elif [ "$rc" != 0 ] && ! grep -qE '^FAIL ' "$out"; then
		echo "FAIL $what: exited $rc without naming a failure: $(tail -n 1 "$out")"
	fi
	rm -f "$out"
}
for boot in 1 2; do
	log=$logs/check-$name-boot$boot.log
	echo "check: $name boot $boot (console: build/logs/$(basename "$log"), timeout ${timeout}s)"
	start=$(date +%s)
	rc=0
	"$top/scripts/qemu.sh" "$top/build/$name/bzImage" "$initrd" "$disks" "$log" \
		check "$boot" "$timeout" "$extra" || rc=$?
	echo "check: boot $boot took $(( $(date +%s) - start ))s$([ "$rc" = 124 ] && echo ", TIMED OUT")"
	awk -v boot="boot$boot" -v splats="$top/scripts/splats" \
		-f "$top/scripts/splats.awk" -f "$top/scripts/parse-log.awk" "$log" |
		gate | tee -a "$results"
done

# the code-quality gates (checkpatch, sparse, W=1) on our code
if [ "$kernel" = ours ] && [ "${LINT:-1}" = 1 ]; then
	"$top/scripts/lint.sh" | grep -v "^RUN " | tee -a "$results"
fi

# power cuts during an enable, a short version of make soak's (POWERCUT=0
# skips it): CHECK_CUTS SIGKILLs of QEMU per filesystem, each checked
if [ "${POWERCUT:-1}" = 0 ] || [ "$debug" = 1 ] || [ -n "${TESTS:-}" ]; then
	echo "SKIP powercut: not asked for (POWERCUT=0, DEBUG=1 or TESTS set)" | tee -a "$results"
else
	echo "check: power cuts (build/logs/powercut-*)"
	stage powercut env CUTS="${CHECK_CUTS:-4}" "$top/scripts/powercut.sh" |
		gate | tee -a "$results"
fi

# ours again as another kernel: variant TAG SWITCH WHAT VAR=VALUE...  runs
# this script with those variables and adds its lines as "PASS TAG/fs/test";
# only from the top-level run of ours, and not when $SWITCH is 0.
variant() {
	local tag=$1 switch=$2 what=$3

	shift 3
	if [ "$kernel" != ours ] || [ "$debug" = 1 ] || [ "${NOSIG:-0}" = 1 ] ||
		[ -n "${TESTS:-}" ] || [ "${!switch:-1}" = 0 ]; then
		echo "SKIP $tag: not asked for ($switch=0, DEBUG=1, TESTS set or not ours)" | tee -a "$results"
		return
	fi
	echo "check: ours $what (build/logs/check-ours-$tag-boot*.log)"
	# its own run gates its skips, against its own kernel's name
	stage "$tag" env "$@" LINT=0 "$top/scripts/check.sh" |
		sed "s#^\(PASS\|FAIL\|SKIP\) \([a-z0-9-]*/\)#\1 $tag/\2#" |
		tee -a "$results"
}

# without built-in signatures (NOSIG=1): a signature given to enable is
# refused, everything else still works
variant nosig NOSIG_CHECK "without built-in signatures" \
	NOSIG=1 TESTS="signature errors"

# on the sanitized kernel (DEBUG=1: KASAN, UBSAN, lockdep, kmemleak, fault
# injection), the tests that fit next to the rest in CI's time, on the
# filesystems but xfs-1k (ext4-1k covers blocks smaller than a page); the
# whole suite there is `make check DEBUG=1`
variant debug DEBUG_CHECK "on the sanitized kernel" \
	DEBUG=1 TESTS="${DEBUG_TESTS:-smoke errors verify metadata faults stats}" \
	FS="${FS:-ext4 ext4-1k f2fs btrfs xfs}"

# the differential compatibility suite: ours vs upstream vs the host's
# fsverity-utils, three boots of its own (scripts/compat.sh, COMPAT=0 skips it)
if [ "${COMPAT:-1}" = 0 ] || [ "$debug" = 1 ] ||
	! case " ${TESTS:-compat} " in *" compat "*) true ;; *) false ;; esac; then
	echo "SKIP compat: not asked for (COMPAT=0, DEBUG=1 or TESTS without compat)" | tee -a "$results"
else
	stage compat "$top/scripts/compat.sh" | gate | tee -a "$results"
fi

echo "check: $name: $(grep -c '^SKIP' "$results" || true) skipped, $(grep -c '^XFAIL' "$results" || true) known mainline bugs (XFAIL)"
pass=$(grep -c '^PASS' "$results" || true)
failed=$(grep -c '^FAIL' "$results" || true)
if [ "$failed" != 0 ]; then
	echo "check: failures:"
	grep '^FAIL' "$results" | sed 's/^/  /'
	echo "check: console logs in build/logs/check-$name-boot*.log"
fi
echo "$pass passed, $failed failed"
[ "$failed" = 0 ] && [ "$pass" != 0 ]
}

main "$@"
exit
