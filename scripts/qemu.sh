#!/bin/bash
# Boot a kernel in QEMU (TCG only):
#   scripts/qemu.sh BZIMAGE INITRAMFS DISKDIR LOG MODE BOOT [TIMEOUT] [EXTRA_CMDLINE]
# DISKDIR holds vda.img .. vdg.img (created 1 GiB sparse if missing): vda ext4,
# vdb ext4 1K blocks, vdc f2fs, vdd btrfs, vde scratch, vdf XFS, vdg XFS 1K blocks.
# The serial console goes to LOG (and to the terminal when interactive).
# Exit status: QEMU's, or 124 when the host timeout hit.
set -eu

kernel=$1 initrd=$2 disks=$3 log=$4 mode=$5 boot=$6
timeout=${7:-1800}
extra=${8:-}

[ -f "$kernel" ] || { echo "qemu: no kernel $kernel" >&2; exit 2; }
mkdir -p "$disks" "$(dirname "$log")"
# BLK_QUEUES=N gives each virtio-blk disk N request queues (1: every
# completion on one queue); unset, QEMU's default (7.2: one per vCPU,
# completions spread over the vCPUs as on NVMe)
drives=()
for d in vda vdb vdc vdd vde vdf vdg; do
	[ -f "$disks/$d.img" ] || truncate -s 1G "$disks/$d.img"
	if [ -n "${BLK_QUEUES:-}" ]; then
		drives+=(-drive "file=$disks/$d.img,format=raw,if=none,id=$d,cache=unsafe"
			-device "virtio-blk-pci,drive=$d,num-queues=$BLK_QUEUES")
	else
		drives+=(-drive "file=$disks/$d.img,format=raw,if=virtio,cache=unsafe")
	fi
done

cmd=(qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m 2G
	-nographic -no-reboot -nic none
	-kernel "$kernel" -initrd "$initrd"
	-append "console=ttyS0 panic=-1 no_timer_check fsv.mode=$mode fsv.boot=$boot $extra"
	"${drives[@]}")

if [ -t 0 ] && [ -t 1 ]; then
	# interactive: -nographic = serial console + monitor (Ctrl-a) on stdio
	set +e
	timeout --foreground -k 10 "$timeout" "${cmd[@]}" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	stty sane 2>/dev/null || true
	exit "$rc"
fi
set +e
timeout -k 10 "$timeout" "${cmd[@]}" </dev/null >"$log" 2>&1
exit $?
