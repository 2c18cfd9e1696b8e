#!/bin/sh
# Guest side of "make bench": make each filesystem on a fresh disk and run
# fsvbench on it, prefixing its lines with the filesystem's name.
# Disks: vda ext4, vdc f2fs, vdd btrfs, vdf xfs (the same as "make check").
# fsv.fs=ext4,f2fs on the kernel command line limits it to those.  XFS runs
# only on a kernel with XFS fs-verity (ours): mainline has none, so its XFS
# rows compare the verity file with the plain file of the same boot.
# ext4-layout, f2fs-layout, btrfs-layout, xfs-layout (only when named):
# the page-cache layout experiment, "fsvbench DIR cachelayout".
# ext4-delay, f2fs-delay, xfs-delay: that filesystem on vdb behind dm-delay
# (10 ms a read bio, writes not delayed), a disk with real latency; only
# cold sequential reads of 64 MiB ("fsvbench DIR seqread").
# tmpfs, tmpfs-swap (only when named; skipped on a kernel without fs-verity
# on tmpfs, mainline): a verity file against its plain copy on a tmpfs,
# page-cached ("fsvbench DIR warm") and read back from swap on vde, which no
# other row uses ("fsvbench DIR swapread CGROUP").
# the disks' request queues (BLK_QUEUES on the host), for the record
echo "BENCH-INFO vda has $(ls /sys/block/vda/mq | wc -l) request queue(s)"
only=$(sed -n 's/.*fsv\.fs=\([^ ]*\).*/\1/p' /proc/cmdline | tr ',' ' ')
dm="DM_DISABLE_UDEV=1 dmsetup"

mkfs_cmd() {
	case $1 in
	ext4) echo "mkfs.ext4 -F -q -O verity" ;;
	f2fs) echo "mkfs.f2fs -f -q -O extra_attr,verity" ;;
	btrfs) echo "mkfs.btrfs -f -q" ;;
	xfs) echo "mkfs.xfs -f -q -i verity=1" ;;
	esac
}

# is row $1 (filesystem $2) asked for, and can this kernel run it?
wanted() {
	case " ${only:-$1} " in *" $1 "*) ;; *) return 1 ;; esac
	if [ "$2" = xfs ] && ! grep -q ' xfs_fsverity_' /proc/kallsyms; then
		echo "BENCH-INFO $1: this kernel has no XFS fs-verity"
		return 1
	fi
}

# make filesystem $2 on $3, mount it and run fsvbench there with $4..,
# its lines prefixed with row name $1
bench_on() {
	name=$1 fs=$2 dev=$3
	shift 3
	mnt=/mnt/$name
	mkdir -p "$mnt"
	if ! $(mkfs_cmd "$fs") "$dev" >/dev/null 2>&1 ||
	   ! mount -t "$fs" "$dev" "$mnt"; then
		echo "BENCH-FAIL $name: cannot make or mount $dev"
		return
	fi
	/bench/fsvbench "$mnt" "$@" | sed "s/^BENCH /BENCH $name /"
	umount "$mnt"
}

for spec in ext4:/dev/vda f2fs:/dev/vdc btrfs:/dev/vdd xfs:/dev/vdf; do
	name=${spec%%:*} dev=${spec#*:}
	wanted "$name" "$name" || continue
	bench_on "$name" "$name" "$dev"
done

# ext4-layout, ...: "fsvbench DIR cachelayout", the experiment behind the
# method of the page-cached rows; only when FS= names it
for spec in ext4:/dev/vda f2fs:/dev/vdc btrfs:/dev/vdd xfs:/dev/vdf; do
	fs=${spec%%:*} dev=${spec#*:}
	case " $only " in *" $fs-layout "*) ;; *) continue ;; esac
	wanted "$fs-layout" "$fs" || continue
	bench_on "$fs-layout" "$fs" "$dev" cachelayout
done

for fs in ext4 f2fs xfs; do
	name=$fs-delay
	wanted "$name" "$fs" || continue
	mnt=/mnt/$name
	mkdir -p "$mnt"
	if $(mkfs_cmd "$fs") /dev/vdb >/dev/null 2>&1 &&
	   eval "$dm create fsv-delay --table '0 $(cat /sys/block/vdb/size) delay /dev/vdb 0 10 /dev/vdb 0 0'" &&
	   mount -t "$fs" /dev/mapper/fsv-delay "$mnt"; then
		/bench/fsvbench "$mnt" seqread | sed "s/^BENCH /BENCH $name /"
		umount "$mnt"
	else
		echo "BENCH-FAIL $name: cannot put $fs on dm-delay over /dev/vdb"
	fi
	eval "$dm remove fsv-delay" 2>/dev/null
done

# tmpfs: two 256 MiB files and a 2 MiB tree, in RAM (the guest has 2 GiB)
case " $only " in *" tmpfs "*)
	mkdir -p /mnt/tmpfs
	if mount -t tmpfs -o size=768m tmpfs /mnt/tmpfs; then
		/bench/fsvbench /mnt/tmpfs warm | sed "s/^BENCH /BENCH tmpfs /"
		umount /mnt/tmpfs
	else
		echo "BENCH-FAIL tmpfs: cannot mount a tmpfs"
	fi
esac

# tmpfs-swap: two 64 MiB files in a memory cgroup, swapped out to vde
case " $only " in *" tmpfs-swap "*)
	cg=/sys/fs/cgroup/fsvbench
	mkdir -p /mnt/tmpfs-swap
	grep -q '^[^ ]* /sys/fs/cgroup cgroup2 ' /proc/mounts ||
		mount -t cgroup2 none /sys/fs/cgroup
	if mkswap /dev/vde >/dev/null && swapon /dev/vde &&
	   echo +memory >/sys/fs/cgroup/cgroup.subtree_control && mkdir "$cg" &&
	   mount -t tmpfs -o size=256m tmpfs /mnt/tmpfs-swap; then
		/bench/fsvbench /mnt/tmpfs-swap swapread "$cg" |
			sed "s/^BENCH /BENCH tmpfs-swap /"
	else
		echo "BENCH-FAIL tmpfs-swap: cannot set up swap on /dev/vde, a memory cgroup and a tmpfs"
	fi
	# the tmpfs first: its pages on swap are then freed, not read back
	umount /mnt/tmpfs-swap 2>/dev/null
	rmdir "$cg" 2>/dev/null
	swapoff /dev/vde 2>/dev/null
esac
