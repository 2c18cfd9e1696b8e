# Where a boot's time goes: each test's time from its RUN line to its
# verdict (the kernel's timestamps on the guest console), then each
# area's time summed over the filesystems.
# Usage: awk -f scripts/test-times.awk build/logs/check-ours-boot1.log
/^\[ *[0-9]+\.[0-9]+\] (RUN|PASS|FAIL|SKIP) [^ ]/ {
	line = $0
	sub(/^\[ */, "", line)
	t = line; sub(/\].*/, "", t)
	sub(/^[^\]]*\] /, "", line)
	split(line, w, " ")
	name = w[2]; sub(/:$/, "", name)
	if (w[1] == "RUN") { start[name] = t; next }
	if (!(name in start)) next
	d = t - start[name]; delete start[name]
	printf "%7.1f s  %s\n", d, name
	split(name, p, "/"); area[p[1]] += d
}
END { for (a in area) printf "%7.1f s  %s (area)\n", area[a], a }
