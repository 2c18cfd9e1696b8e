# Turns a guest console log into verdicts: one "PASS|FAIL|SKIP name[: reason]"
# line per test.  A kernel splat fails the test that was running (or the
# pseudo test boot/<boot>); a log without FSV-DONE fails the running test.
# Usage: awk -v boot=boot1 -v splats=scripts/splats -f splats.awk \
#        -f parse-log.awk console.log
function verdict(kind, name, reason) {
	if (reason != "")
		print kind " " name ": " reason
	else
		print kind " " name
}
function flush_running(reason) {
	if (running != "") {
		verdict("FAIL", running, splat[running] != "" ? "kernel splat: " splat[running] : reason)
		running = ""
	}
}
BEGIN {
	done = 0; running = ""; nboot = 0
	splat_load()
}
{ sub(/\r$/, "") }
# verdicts written through /dev/kmsg carry the kernel's timestamp
/^\[ *[0-9]+\.[0-9]+\] (RUN|PASS|FAIL|SKIP) [^ ]|^\[ *[0-9]+\.[0-9]+\] FSV-DONE/ {
	sub(/^\[ *[0-9]+\.[0-9]+\] /, "")
}
/^RUN [^ ]+$/ {
	flush_running("no verdict (the test program died)")
	running = $2; splat[running] = ""
	next
}
/^(PASS|FAIL|SKIP) [^ :]+/ {
	kind = $1; name = $2; sub(/:$/, "", name)
	reason = $0; sub(/^[A-Z]+ [^ :]+:? ?/, "", reason)
	if (name == running && splat[name] != "") {
		verdict("FAIL", name, "kernel splat: " splat[name] (kind == "FAIL" ? " (and: " reason ")" : ""))
	} else {
		verdict(kind, name, reason)
	}
	if (name == running) running = ""
	next
}
/^FSV-DONE/ { done = 1; next }
/\[ *[0-9]+\.[0-9]+\]/ {
	line = $0; sub(/^.*\[ *[0-9]+\.[0-9]+\] /, "", line)
	if (splat_match(line) != "") {
		if (running != "") {
			if (splat[running] == "") splat[running] = line
		} else if (bootsplat == "") {
			bootsplat = line
		}
	}
}
END {
	if (running != "")
		flush_running(done ? "no verdict" : \
			"no result: the VM died or timed out while it ran (no FSV-DONE)")
	else if (!done)
		notdone = "no FSV-DONE: the VM died or timed out"
	if (bootsplat != "")
		verdict("FAIL", "boot/" boot "/kernel", "kernel splat outside a test: " bootsplat)
	if (notdone != "")
		verdict("FAIL", "boot/" boot "/done", notdone)
}
