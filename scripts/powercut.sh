#!/bin/bash
# Power cuts during FS_IOC_ENABLE_VERITY:
#   [KERNEL=ours] [DEBUG=0] [CUTS=17] [PC_FS="ext4 f2fs btrfs xfs"] scripts/powercut.sh
# Per filesystem: a prep boot writes a 48 MiB file and times an enable of a
# copy; then CUTS boots each check what the previous cut left (fsck clean;
# the file plain with its bytes and writable, or verity with the right digest
# and every block verified), start an enable, and get QEMU killed with
# SIGKILL at a delay spread over [0, 1.3 x the enable time] after the
# "PC-ENABLE-START" line - from the first tree blocks to after the ioctl
# returned, while the guest sync()s, and after that; a last boot only
# checks.  Guest side: tests/powercut/powercut.c.
#
# QEMU's disks are cache=unsafe (scripts/qemu.sh): what the guest wrote to its
# virtio disk before the kill is in the host's page cache and survives; what
# was still in the guest's page cache or in flight inside the guest is lost.
# So this cuts power to the guest kernel (its ordering of writeback, journal
# commits and verity flag updates), not to a disk with a volatile cache: a
# host crash, or a disk dropping unflushed writes, is not modelled.
# Ends with "N passed, N failed" (one verdict per cut).
set -eu

# the guest's output as one string, without the kernel's console lines:
# a printk can land inside a marker line ("PC-ENABLE-S[ 3.40] fs-verity:
# sha256 using ...\nTART"), which would hide the marker from a grep
console_text() {
	sed -E 's/\[ *[0-9]+\.[0-9]+\] .*$//' "$1" | tr -d '\r\n'
}

top=$(cd "$(dirname "$0")/.." && pwd)
kernel=${KERNEL:-ours}
debug=${DEBUG:-0}
suffix=; [ "$debug" = 1 ] && suffix=-debug
name=$kernel$suffix
cuts=${CUTS:-17}
fslist=${PC_FS:-ext4 f2fs btrfs xfs}
logs=$top/build/logs/powercut
mkdir -p "$logs"

"$top/scripts/build.sh" "$kernel" "$debug" >/dev/null
EXTRA_TESTS=$top/tests/powercut "$top/scripts/initramfs.sh" powercut
initrd=$top/build/initramfs-powercut.cpio.gz
bz=$top/build/$name/bzImage

pass=0 failed=0
verdict() { # PASS|FAIL name [reason]
	echo "$1 $2${3:+: $3}"
	if [ "$1" = PASS ]; then pass=$((pass + 1)); else failed=$((failed + 1)); fi
}

# boot in the background; QEMU's pid in $qpid, the wrapper's in $wpid
boot() { # disks log bootno mode
	# (qemu.sh's "Killed" notice for the SIGKILLed QEMU goes to $2.err)
	"$top/scripts/qemu.sh" "$bz" "$initrd" "$1" "$2" check "$3" 900 \
		"fsv.tests=powercut fsv.fs=$fs fsv.powercut=$4" 2>"$2.err" &
	wpid=$!
	qpid=
	for _ in $(seq 100); do
		t=$(pgrep -P "$wpid" -x timeout || true)
		[ -n "$t" ] && qpid=$(pgrep -P "$t" || true)
		[ -n "$qpid" ] && return 0
		sleep 0.1
	done
	echo "powercut: QEMU did not start" >&2
	return 1
}

# the log's problems: a splat, or a FAIL/PC-VERIFY-FAIL line
problems() {
	awk -v splats="$top/scripts/splats" -f "$top/scripts/splats.awk" \
		-f "$top/scripts/splat-lines.awk" "$1" | head -n 3
	grep -a -E '(^|\] )FAIL |PC-VERIFY-FAIL' "$1" | head -n 3
}

for fs in $fslist; do
	disks=$top/build/disks/powercut-$name-$fs
	rm -rf "$disks"
	mkdir -p "$disks"
	log=$logs/$fs-prep.log
	boot "$disks" "$log" 1 prep
	wait "$wpid" || true
	cal=$(sed -n 's/.*PC-CALIBRATE \([0-9]*\).*/\1/p' "$log" | head -n 1)
	# a filesystem this kernel cannot take (the runner's FS_SKIP: a verity
	# XFS on a kernel without XFS fs-verity) skips, as expected-skips says
	skipped=$(grep -a -o 'SKIP powercut/[^ ]*: .*' "$log" | head -n 1 | tr -d '\r')
	if [ -z "$cal" ] && [ -n "$skipped" ] && [ -z "$(problems "$log")" ]; then
		echo "SKIP powercut/$fs/prep: ${skipped#*: }"
		continue
	fi
	if [ -z "$cal" ] || [ -n "$(problems "$log")" ]; then
		verdict FAIL "powercut/$fs/prep" "no calibration: $(problems "$log" | head -n 1) (see $log)"
		continue
	fi
	echo "powercut: $fs: an enable of 48 MiB takes ${cal} ms; $cuts cuts"
	states=
	for i in $(seq 1 "$cuts"); do
		# spread over [0, 1.3 cal], a little jitter; the last two cuts
		# 3 s and 6 s after the enable (past ext4's 5 s journal commit)
		delay=$(( (2 * i - 1) * cal * 13 / (20 * cuts) + RANDOM % 50 ))
		[ "$i" -lt $((cuts - 1)) ] || [ "$cuts" -lt 4 ] ||
			delay=$(( cal + 3000 * (i - cuts + 2) ))
		log=$logs/$fs-cut$i.log
		boot "$disks" "$log" 2 cut
		started=
		for _ in $(seq 3000); do
			if console_text "$log" | grep -a -q PC-ENABLE-START; then
				started=1
				break
			fi
			kill -0 "$qpid" 2>/dev/null || break
			sleep 0.1
		done
		if [ -z "$started" ]; then
			kill -9 "$qpid" 2>/dev/null || true
			wait "$wpid" || true
			verdict FAIL "powercut/$fs/cut$i" "no PC-ENABLE-START: $(problems "$log" | head -n 1) (see $log)"
			break
		fi
		sleep "$(awk -v d="$delay" 'BEGIN { printf "%.3f", d / 1000 }')"
		returned=$(grep -a -c PC-ENABLE-RETURNED "$log" || true)
		synced=$(grep -a -c PC-SYNCED "$log" || true)
		kill -9 "$qpid"
		wait "$wpid" || true
		state=$(sed -n 's/.*PC-VERIFY-OK \([a-z]*\).*/\1/p' "$log" | head -n 1)
		p=$(problems "$log")
		if [ -n "$p" ] || [ -z "$state" ]; then
			verdict FAIL "powercut/$fs/cut$((i - 1))-check" "${p:-no PC-VERIFY-OK} (see $log)"
		else
			verdict PASS "powercut/$fs/cut$((i - 1))-check" "$state"
		fi
		when=during
		[ "$returned" = 0 ] || when=syncing
		[ "$synced" = 0 ] || when=synced
		states="$states $delay:$when"
	done
	# the last cut's result, and a clean shutdown with the runner's fsck
	log=$logs/$fs-final.log
	boot "$disks" "$log" 2 verify
	wait "$wpid" || true
	state=$(sed -n 's/.*PC-VERIFY-OK \([a-z]*\).*/\1/p' "$log" | head -n 1)
	p=$(problems "$log")
	if [ -n "$p" ] || [ -z "$state" ] || ! grep -a -q FSV-DONE "$log"; then
		verdict FAIL "powercut/$fs/cut$cuts-check" "${p:-no PC-VERIFY-OK or FSV-DONE} (see $log)"
	else
		verdict PASS "powercut/$fs/cut$cuts-check" "$state"
	fi
	echo "powercut: $fs: cuts at ms:(during the ioctl|after it, during sync()|after sync()):$states"
done
echo "$pass passed, $failed failed"
[ "$failed" = 0 ] && [ "$pass" != 0 ]
