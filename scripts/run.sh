#!/bin/bash
# make run: boot a kernel (KERNEL, DEBUG) with four fresh verity filesystems.
# On a terminal: an interactive shell.  Otherwise: the scripted demo, whose
# DEMO-OK marker decides the exit status.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
kernel=${KERNEL:-ours}
debug=${DEBUG:-0}
name=$kernel$([ "$debug" = 1 ] && echo -debug || true)

# one run per kernel at a time: a second one would share the disks and log
mkdir -p "$top/build"
exec 8>"$top/build/.run-$name.lock"
if ! flock -n 8; then
	echo "run: waiting for another make run of $name (build/.run-$name.lock)"
	flock 8
fi
"$top/scripts/build.sh" "$kernel" "$debug"
"$top/scripts/initramfs.sh"
disks=$top/build/disks/run-$name
rm -rf "$disks"
log=$top/build/logs/run-$name.log

if [ -t 0 ] && [ -t 1 ]; then
	echo "run: booting $name (Ctrl-a x quits QEMU; console log: build/logs/run-$name.log)"
	exec "$top/scripts/qemu.sh" "$top/build/$name/bzImage" "$top/build/initramfs.cpio.gz" \
		"$disks" "$log" shell 1 86400
fi
echo "run: no terminal: running the scripted demo on $name"
rc=0
"$top/scripts/qemu.sh" "$top/build/$name/bzImage" "$top/build/initramfs.cpio.gz" \
	"$disks" "$log" demo 1 900 || rc=$?
# the guest's side of the story, without the kernel's boot chatter
sed -n '/^fsv: mode=/,$p' "$log" | tr -d '\r' | grep -v '^\[ *[0-9]*\.[0-9]*\] \(ACPI\|PCI\|pci\|virtio\)' || true
if grep -q '^DEMO-OK' "$log" && ! grep -q '^DEMO-FAIL' "$log"; then
	echo "run: DEMO-OK"
	exit 0
fi
echo "run: the demo FAILED (qemu exit $rc; log: build/logs/run-$name.log)" >&2
exit 1
