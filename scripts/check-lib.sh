# shellcheck shell=bash
# Shared by the test entry points, sourced: scripts/check.sh (the gate),
# scripts/check-all.sh (the gate and the rest) and scripts/check-kernel.sh
# (one kernel, two boots).  They set $top, $name (the kernel's build name,
# for the lists) and $results (the file every verdict line is appended to).

# listed FILE TEST: does a line of FILE allow TEST on kernel $name?
listed() {
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

# gate (a filter): a SKIP is a decision written down, so each must match a
# line of tests/expected-skips for this kernel, or it becomes a FAIL; a FAIL
# that matches a line of tests/expected-failures (a known mainline bug, on
# the kernel that has it) becomes an XFAIL, counted apart.
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

# stage NAME [TAG] -- CMD...: run CMD, a part of the run that says its own
# verdicts.  Its verdict lines (with "TAG/" put before the test's name when
# a TAG is given) and its progress lines ("build: ...", "check: ...") are
# shown as they come and the verdicts appended to $results; all its output
# goes to build/logs/stage-NAME.log.  A stage that ends without a verdict, or that
# fails without naming a failure, is a FAIL of its own.  Its time goes to
# the table that times_table prints.
STAGE_TIMES=()
stage() {
	local what=$1 tag= log start rc

	shift
	[ "$1" = -- ] || { tag=$1; shift; }
	shift
	log=$top/build/logs/stage-$what.log
	start=$(date +%s)
	: >"$log"
	"$@" >"$log" 2>&1 &
	rc=0
	follow $! "$log" "$tag" || rc=$?
	STAGE_TIMES+=("$what $(($(date +%s) - start))")
	if ! grep -qE '^(PASS|FAIL|SKIP) ' "$log"; then
		echo "FAIL $what: ended without a verdict (exit $rc): $(tail -n 1 "$log")" |
			tee -a "$results"
	elif [ "$rc" != 0 ] && ! grep -qE '^FAIL ' "$log"; then
		echo "FAIL $what: exited $rc without naming a failure: $(tail -n 1 "$log")" |
			tee -a "$results"
	fi
}

# follow PID LOG TAG: show LOG's verdict and progress lines while PID
# writes it, append the verdicts to $results; returns PID's status
follow() {
	local pid=$1 log=$2 tag=$3

	tail -n +1 -F --pid="$pid" "$log" 2>/dev/null |
		grep --line-buffered -E '^(PASS|FAIL|XFAIL|SKIP) |^[a-z-]+: ' |
		sed -u "${tag:+s#^\(PASS\|FAIL\|XFAIL\|SKIP\) \([a-z0-9-]*/\)#\1 $tag/\2#}" |
		while IFS= read -r line; do
			case $line in
			PASS*|FAIL*|XFAIL*|SKIP*) echo "$line" | tee -a "$results" ;;
			*) echo "$line" ;;
			esac
		done
	wait "$pid"
}

# gated CMD...: CMD's output through gate (for a CMD that does not gate
# its own verdicts: the power cuts, compat); CMD's status
gated() {
	"$@" | gate
	return "${PIPESTATUS[0]}"
}

# times_table LABEL: each stage's time, the total since $run_start, and one
# line "N min (S s) DATE COMMIT[ SETTINGS]" in build/logs/<LABEL>.time
times_table() {
	local label=$1 s total commit settings=

	total=$(($(date +%s) - run_start))
	for s in "${STAGE_TIMES[@]}"; do
		printf 'check: time %-24s %5d s\n' "${s% *}" "${s##* }"
	done
	printf 'check: time %-24s %5d s (%d min)\n' total "$total" $(((total + 30) / 60))
	commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)
	[ -z "$(git -C "$top" status --porcelain 2>/dev/null)" ] || commit=$commit+changes
	# what the run was asked to do other than the default
	for v in TESTS FS; do
		[ -z "${!v:-}" ] || settings="$settings $v=\"${!v}\""
	done
	for v in DEBUG NOSIG NOVERITY; do
		[ "${!v:-0}" = 0 ] || settings="$settings $v=${!v}"
	done
	for v in POWERCUT LINT; do
		[ "${!v:-1}" = 1 ] || settings="$settings $v=${!v}"
	done
	echo "$(((total + 30) / 60)) min ($total s) $(date -u +%F) $commit$settings" \
		>"$top/build/logs/$label.time"
}

# summary: the closing lines over $results; true when all passed
summary() {
	local pass failed

	echo "check: $name: $(grep -c '^SKIP' "$results" || true) skipped as listed, $(grep -c '^XFAIL' "$results" || true) known mainline bugs (XFAIL)"
	pass=$(grep -c '^PASS' "$results" || true)
	failed=$(grep -c '^FAIL' "$results" || true)
	if [ "$failed" != 0 ]; then
		echo "check: failures:"
		grep '^FAIL' "$results" | sed 's/^/  /'
	fi
	echo "$pass passed, $failed failed"
	[ "$failed" = 0 ] && [ "$pass" != 0 ]
}
