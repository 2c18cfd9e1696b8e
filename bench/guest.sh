#!/bin/sh
# Guest side of "make bench": make each filesystem on a fresh disk and run
# fsvbench on it, prefixing its lines with the filesystem's name.
# Disks: vda ext4, vdc f2fs, vdd btrfs, vdf xfs (the same as "make check").
# fsv.fs=ext4,f2fs on the kernel command line limits it to those.  XFS runs
# only on a kernel with XFS fs-verity (ours): mainline has none, so its XFS
# rows compare the verity file with the plain file of the same boot.
# ext4-delay: ext4 on vdb behind dm-delay (10 ms a read bio, writes not
# delayed), a disk with real latency; only cold sequential reads of 64 MiB
# ("fsvbench DIR seqread"), on every kernel.
# the disks' request queues (BLK_QUEUES on the host), for the record
echo "BENCH-INFO vda has $(ls /sys/block/vda/mq | wc -l) request queue(s)"
only=$(sed -n 's/.*fsv\.fs=\([^ ]*\).*/\1/p' /proc/cmdline | tr ',' ' ')
for spec in ext4:/dev/vda:mkfs.ext4+-F+-q+-O+verity \
	    f2fs:/dev/vdc:mkfs.f2fs+-f+-q+-O+extra_attr,verity \
	    btrfs:/dev/vdd:mkfs.btrfs+-f+-q \
	    xfs:/dev/vdf:mkfs.xfs+-f+-q+-i+verity=1; do
	name=${spec%%:*}; rest=${spec#*:}
	case " ${only:-$name} " in *" $name "*) ;; *) continue ;; esac
	if [ "$name" = xfs ] && ! grep -q ' xfs_fsverity_' /proc/kallsyms; then
		echo "BENCH-INFO xfs: this kernel has no XFS fs-verity"
		continue
	fi
	dev=${rest%%:*}; mkfs=$(echo "${rest#*:}" | tr '+' ' ')
	mnt=/mnt/$name
	mkdir -p "$mnt"
	if ! $mkfs "$dev" >/dev/null 2>&1 || ! mount -t "$name" "$dev" "$mnt"; then
		echo "BENCH-FAIL $name: cannot make or mount $dev"
		continue
	fi
	/bench/fsvbench "$mnt" | sed "s/^BENCH /BENCH $name /"
	umount "$mnt"
done

case " ${only:-ext4-delay} " in *" ext4-delay "*)
	dm="DM_DISABLE_UDEV=1 dmsetup" mnt=/mnt/ext4-delay
	mkdir -p "$mnt"
	if mkfs.ext4 -F -q -O verity /dev/vdb >/dev/null 2>&1 &&
	   eval "$dm create fsv-delay --table '0 $(cat /sys/block/vdb/size) delay /dev/vdb 0 10 /dev/vdb 0 0'" &&
	   mount -t ext4 /dev/mapper/fsv-delay "$mnt"; then
		/bench/fsvbench "$mnt" seqread | sed "s/^BENCH /BENCH ext4-delay /"
		umount "$mnt"
	else
		echo "BENCH-FAIL ext4-delay: cannot put ext4 on dm-delay over /dev/vdb"
	fi
	eval "$dm remove fsv-delay" 2>/dev/null
esac
