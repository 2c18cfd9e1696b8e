#!/bin/sh
# Guest side of "make bench": make each filesystem on a fresh disk and run
# fsvbench on it, prefixing its lines with the filesystem's name.
# Disks: vda ext4, vdc f2fs, vdd btrfs (the same as "make check").
for spec in ext4:/dev/vda:mkfs.ext4_-F_-q_-O_verity \
	    f2fs:/dev/vdc:mkfs.f2fs_-f_-q_-O_extra_attr,verity \
	    btrfs:/dev/vdd:mkfs.btrfs_-f_-q; do
	name=${spec%%:*}; rest=${spec#*:}
	dev=${rest%%:*}; mkfs=$(echo "${rest#*:}" | tr '_' ' ')
	mnt=/mnt/$name
	mkdir -p "$mnt"
	if ! $mkfs "$dev" >/dev/null 2>&1 || ! mount -t "$name" "$dev" "$mnt"; then
		echo "BENCH-FAIL $name: cannot make or mount $dev"
		continue
	fi
	/bench/fsvbench "$mnt" | sed "s/^BENCH /BENCH $name /"
	umount "$mnt"
done
