# The splat matcher every log parser shares (parse-log.awk; powercut.sh
# through splat-lines.awk).  Needs -v splats=FILE (scripts/splats).
#
# splat_load() reads the patterns; splat_match(line) returns the line if
# it is a splat, "" if not.  A "!"-prefixed pattern starts a report that
# is not a splat: the call trace that follows it (up to its "</TASK>")
# belongs to that report.  That is how warn_alloc() reports an ENOMEM,
# which fault injection causes on purpose.
function splat_load(	pat) {
	if (splats == "") { print "splats.awk: set -v splats=FILE" > "/dev/stderr"; exit 2 }
	splat_re = ""; report_re = ""; in_report = 0
	while ((getline pat < splats) > 0) {
		if (pat ~ /^#/ || pat == "")
			continue
		if (pat ~ /^!/)
			report_re = report_re (report_re == "" ? "" : "|") substr(pat, 2)
		else
			splat_re = splat_re (splat_re == "" ? "" : "|") pat
	}
	close(splats)
	if (splat_re == "") { print "splats.awk: no patterns in " splats > "/dev/stderr"; exit 2 }
}
function splat_match(line) {
	if (report_re != "" && line ~ report_re) { in_report = 1; return "" }
	if (in_report) {
		if (line ~ /<\/TASK>/) in_report = 0
		if (line ~ /Call Trace:|<\/?TASK>|^ +[^ ]/ || line ~ /^(CPU:|Hardware name:)/)
			return ""
		in_report = 0
	}
	return line ~ splat_re ? line : ""
}
