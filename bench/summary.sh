#!/bin/bash
# Summarise build/bench/results.csv: median and min-max per kernel, the
# ratio ours/mainline, and ours as a fraction of the in-guest limit
# min(plain read, all-CPU SHA-256 rate); with a kernel "ours-copy" (the same
# build under a second name: KERNELS="upstream ours ours-copy"), the A/A
# ratio ours-copy/ours, the noise any ours/main ratio must exceed to mean
# something.  Also draws ratios.png with gnuplot.
set -eu
csv=${1:?usage: summary.sh results.csv}
dir=$(dirname "$csv")

# fs,workload,kernel,median,min,max,unit
stats=$(tail -n +2 "$csv" | sort -t, -k3,3 -k4,4 -k2,2 -k5,5g | awk -F, '
	function flush() {
		if (n) printf "%s,%s,%s,%s,%s,%s,%s\n", key_fs, key_wl, key_k,
			(n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2),
			v[1], v[n], unit
		n = 0
	}
	{
		if ($3 != key_fs || $4 != key_wl || $2 != key_k) flush()
		key_fs = $3; key_wl = $4; key_k = $2; unit = $6
		v[++n] = $5
	}
	END { flush() }')

echo "$stats" | awk -F, '
	{
		med[$1, $2, $3] = $4; lo[$1, $2, $3] = $5; hi[$1, $2, $3] = $6
		unit[$1, $2] = $7
		if (!(($1, $2) in seen)) { seen[$1, $2] = 1; order[++n] = $1 SUBSEP $2 }
	}
	function limit(fs, wl,   h, p) {
		h = med[fs, "limit_sha256_allcpu", "ours"]
		p = med[fs, "seqread_plain", "ours"]
		if (wl == "enable_warm") return h
		if (wl == "enable_cold" || wl == "seqread_verity") return (p < h ? p : h)
		return 0
	}
	END {
		for (i = 1; i <= n; i++) {
			split(order[i], k, SUBSEP)
			if ((k[1], k[2], "ours-copy") in med) aa = 1
		}
		printf "%-7s %-24s %-8s %24s %24s %9s %8s", "fs", "workload", "unit",
			"mainline med (min-max)", "ours med (min-max)", "ours/main", "ours/lim"
		printf (aa ? " %8s\n" : "\n"), "A/A"
		for (i = 1; i <= n; i++) {
			split(order[i], k, SUBSEP); fs = k[1]; wl = k[2]
			hasm = ((fs, wl, "upstream") in med)
			m = med[fs, wl, "upstream"]; o = med[fs, wl, "ours"]
			r = (m > 0 ? sprintf("%.2f", o / m) : "-")
			l = limit(fs, wl)
			f = (l > 0 ? sprintf("%.2f", o / l) : "")
			# no mainline column where it did not run (XFS: no verity)
			if (hasm)
				ms = sprintf("%9.1f (%5.1f-%5.1f)", m, lo[fs, wl, "upstream"], hi[fs, wl, "upstream"])
			else
				ms = sprintf("%24s", "-")
			printf "%-7s %-24s %-8s %s %9.1f (%5.1f-%5.1f) %9s %8s",
				fs, wl, unit[fs, wl], ms,
				o, lo[fs, wl, "ours"], hi[fs, wl, "ours"], r, f
			c = med[fs, wl, "ours-copy"]
			if (aa) printf " %8s", (o > 0 && c != "" ? sprintf("%.2f", c / o) : "-")
			printf "\n"
		}
		print ""
		# what the host really gives the vCPUs: the ceiling of every
		# parallel gain above (enable, cold sequential reads)
		for (i = 1; i <= n; i++) {
			split(order[i], k, SUBSEP); fs = k[1]
			if ((fs, "limit_sha256_1cpu", "ours") in med && !(fs in told)) {
				told[fs] = 1
				one = med[fs, "limit_sha256_1cpu", "ours"]
				all = med[fs, "limit_sha256_allcpu", "ours"]
				if (one > 0)
					printf "%s: all vCPUs hash %.2fx one vCPU (SHA-256): no parallel gain above can exceed it\n", fs, all / one
			}
		}
		print "Random 4 KiB reads: compare randread_verity, then randread_verity_of_plain."
		if (aa) print "A/A: ours-copy/ours, the same kernel booted under two names: an ours/main\nratio nearer 1 than its A/A ratio is noise, not a finding."
		print ""
		print "Under QEMU TCG absolute numbers mean little: only the ratios of one run"
		print "compare.  For \"us\" (latency) lower is better; for all else higher is."
		print "*_cpu_busy: share of all vCPUs busy during that workload (100 = CPU bound)."
	}'

# KERNELS="a b c" (an A/B test, or the steps of the series kept by
# scripts/bisect.sh): the medians side by side, each column's kernel
# against the column before it
if [ -n "${KERNELS:-}" ] && [ "$KERNELS" != "upstream ours" ]; then
	echo ""
	echo "$stats" | awk -F, -v kernels="$KERNELS" '
		{
			med[$1, $2, $3] = $4; unit[$1, $2] = $7
			if (!(($1, $2) in seen)) { seen[$1, $2] = 1; order[++n] = $1 SUBSEP $2 }
		}
		END {
			nk = split(kernels, k, " ")
			printf "%-7s %-24s %-8s", "fs", "workload", "unit"
			for (j = 1; j <= nk; j++) printf " %16s", k[j]
			printf "\n"
			for (i = 1; i <= n; i++) {
				split(order[i], f, SUBSEP)
				printf "%-7s %-24s %-8s", f[1], f[2], unit[f[1], f[2]]
				for (j = 1; j <= nk; j++) {
					v = med[f[1], f[2], k[j]]
					p = (j > 1) ? med[f[1], f[2], k[j - 1]] : 0
					if (v == "") printf " %16s", "-"
					else if (p > 0) printf " %9.1f (%4.2f)", v, v / p
					else printf " %9.1f       ", v
				}
				printf "\n"
			}
			print "(medians; in brackets: against the kernel of the column before)"
		}'
fi

# chart: ours/mainline per workload and filesystem (1.0 = parity)
command -v gnuplot >/dev/null || exit 0
echo "$stats" | awk -F, '
	{ med[$1 "/" $2, $3] = $4; if (!(($1 "/" $2) in s)) { s[$1 "/" $2]; o[++n] = $1 "/" $2 } }
	END { for (i = 1; i <= n; i++) if (med[o[i], "upstream"] > 0)
		printf "%s %.3f\n", o[i], med[o[i], "ours"] / med[o[i], "upstream"] }' \
	>"$dir/ratios.dat"
[ -s "$dir/ratios.dat" ] || exit 0	# no mainline and ours in this run
gnuplot <<GP
set terminal png size 1200,600
set output "$dir/ratios.png"
set title "fs-verity: ours / mainline 6.12 (median of rounds; latency: lower is better)"
set style data histogram
set style fill solid
set xtics rotate by -45
set yrange [0:*]
set grid ytics
plot "$dir/ratios.dat" using 2:xtic(1) title "ours/mainline", 1 with lines title "parity"
GP
