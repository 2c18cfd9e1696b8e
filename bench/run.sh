#!/bin/bash
# make bench: ours against mainline 6.12 in the same QEMU, alternating boots
# (upstream, ours, upstream, ours, ...), ROUNDS rounds (default 3);
# FS="ext4 btrfs" limits it to those filesystems; KERNELS="upstream ours x"
# also boots build/x/bzImage (a copy of another build, for an A/B test, or
# build/step-NNNN, the kernel of patch NNNN kept by scripts/bisect.sh);
# "ours-copy" is ours under a second name, copied here: an A/A pair that
# sizes the noise (KERNELS="upstream ours ours-copy").
# Writes build/bench/results.csv (round,kernel,fs,workload,value,unit),
# build/bench/summary.txt (the table printed here) and build/bench/ratios.png.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${ROUNDS:-3}
out=$top/build/bench
mkdir -p "$out"

# mainline only when it is booted (KERNELS=ours runs rows only ours has)
case " ${KERNELS:-upstream} " in
*" upstream "*) "$top/scripts/build.sh" upstream 0 ;;
esac
"$top/scripts/build.sh" ours 0
"$top/scripts/initramfs.sh"
case " ${KERNELS:-} " in
*" ours-copy "*)
	mkdir -p "$top/build/ours-copy"
	cp "$top/build/ours/bzImage" "$top/build/ours-copy/bzImage" ;;
esac

csv=$out/results.csv
echo "round,kernel,fs,workload,value,unit" >"$csv"
for round in $(seq "$rounds"); do
	for kernel in ${KERNELS:-upstream ours}; do
		disks=$out/disks
		rm -rf "$disks"
		mkdir -p "$disks"
		for d in vda vdb vdc vdd vde vdf vdg; do truncate -s 2G "$disks/$d.img"; done
		log=$out/boot-$round-$kernel.log
		echo "bench: round $round/$rounds, $kernel"
		"$top/scripts/qemu.sh" "$top/build/$kernel/bzImage" \
			"$top/build/initramfs.cpio.gz" "$disks" "$log" bench 1 2400 \
			"${FS:+fsv.fs=$(echo $FS | tr ' ' ',')}" ||
			echo "bench: $kernel exited with $? (see $log)"
		grep -a 'BENCH-FAIL' "$log" && { echo "bench: a workload failed" >&2; exit 1; }
		tr -d '\r' <"$log" | awk -v r="$round" -v k="$kernel" \
			'$1 == "BENCH" && NF == 5 { print r "," k "," $2 "," $3 "," $4 "," $5 }' >>"$csv"
	done
done
rm -rf "$out/disks"
"$top/bench/summary.sh" "$csv" | tee "$out/summary.txt"
