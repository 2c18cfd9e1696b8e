// SPDX-License-Identifier: GPL-2.0
/*
 * The guest has the block-layer tools the other tests build on: a
 * device-mapper linear and delay target (dmsetup, without udev), and
 * block cgroups whose io.max throttles reads.  Each is shown working, not
 * only present, so that a test that puts a filesystem on a slow device or
 * an enable in a throttled cgroup fails for its own reason, never for a
 * missing piece of the guest.
 *
 * These are properties of the guest, not of a filesystem: they run in the
 * ext4 pass only (tests/expected-skips), on a 128 MiB ext4 of their own on
 * the spare disk.  Each body runs in a child process; the device-mapper
 * devices and the cgroup are removed however it ends.
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#include <time.h>

#define SPARE_DEV	"/dev/vde"
#define SPARE_MNT	"/mnt/env-spare"
#define SPARE_SECTORS	262144		/* 128 MiB */
#define LINEAR		"fsv-env-linear"
#define DELAY		"fsv-env-delay"
#define DELAY_MS	100
#define DELAY_MS_STR	"100"	/* the same, for the table */
#define CG		CGROOT "/fsv-env-io"
#define RBPS		(2 << 20)	/* io.max read limit, bytes/s */
#define THROTTLED	(8 << 20)	/* bytes read under it */
#define BODY_SECS	120

/* dmsetup without udev: it makes the /dev/mapper nodes itself */
#define DMSETUP		"DM_DISABLE_UDEV=1 dmsetup"

static void only_in_the_ext4_pass(void)
{
	if (strcmp(env.fs, "ext4"))
		skip("a property of the guest, not of %s: tested in the ext4 pass",
		     env.fs);
	if (access(SPARE_DEV, F_OK))
		fail("no spare disk %s", SPARE_DEV);
}

static void dm_remove(void)
{
	umount(SPARE_MNT);
	run_cmd(NULL, 0, DMSETUP " remove " DELAY " 2>/dev/null");
	run_cmd(NULL, 0, DMSETUP " remove " LINEAR " 2>/dev/null");
}

/* a linear device over the spare disk's first 128 MiB, with an ext4 on it */
static void make_linear_ext4(void)
{
	must_run("dm-linear", DMSETUP " create " LINEAR " --table '0 262144 linear "
		 SPARE_DEV " 0'");
	must_run("mkfs on dm-linear", "mkfs.ext4 -q -F -E nodiscard /dev/mapper/" LINEAR);
}

static void linear_body(void)
{
	static const char data[] = "written through dm-linear\n";
	char got[64] = "";
	int fd;

	make_linear_ext4();
	mkdir(SPARE_MNT, 0755);
	CHECK_OK(mount("/dev/mapper/" LINEAR, SPARE_MNT, "ext4", 0, NULL));
	write_file(SPARE_MNT "/f", data, sizeof(data));
	CHECK_OK(umount(SPARE_MNT));
	CHECK_OK(mount("/dev/mapper/" LINEAR, SPARE_MNT, "ext4", MS_RDONLY, NULL));
	fd = CHECK_OK(open(SPARE_MNT "/f", O_RDONLY));
	CHECK(read(fd, got, sizeof(got)) == sizeof(data));
	close(fd);
	CHECK(!memcmp(got, data, sizeof(data)));
	CHECK_OK(umount(SPARE_MNT));
}

/* a filesystem on dm-linear mounts, and what was written reads back */
TEST_TIMEOUT(dm_linear_device_holds_a_filesystem, BODY_SECS + 30)
{
	only_in_the_ext4_pass();
	with_cleanup(linear_body, dm_remove, BODY_SECS);
}

static void delay_body(void)
{
	char buf[4096];
	double t;
	int fd;

	make_linear_ext4();
	mkdir(SPARE_MNT, 0755);
	CHECK_OK(mount("/dev/mapper/" LINEAR, SPARE_MNT, "ext4", 0, NULL));
	make_file(SPARE_MNT "/f", sizeof(buf), 1);
	CHECK_OK(umount(SPARE_MNT));
	must_run("dmsetup remove", DMSETUP " remove " LINEAR);
	/* reads delayed, writes not */
	must_run("dm-delay", DMSETUP " create " DELAY " --table '0 262144 delay "
		 SPARE_DEV " 0 " DELAY_MS_STR " " SPARE_DEV " 0 0'");
	CHECK_OK(mount("/dev/mapper/" DELAY, SPARE_MNT, "ext4", MS_RDONLY, NULL));
	drop_caches();
	t = mono_now();
	fd = CHECK_OK(open(SPARE_MNT "/f", O_RDONLY));
	CHECK(read(fd, buf, sizeof(buf)) == sizeof(buf));
	close(fd);
	t = mono_now() - t;
	note("a cold 4 KiB read through dm-delay (%d ms) took %.0f ms",
	     DELAY_MS, t * 1000);
	if (t < DELAY_MS / 1000.0)
		fail("a cold read took %.0f ms, less than the %d ms delay",
		     t * 1000, DELAY_MS);
	CHECK_OK(umount(SPARE_MNT));
}

/* reads through a dm-delay device wait at least its delay */
TEST_TIMEOUT(dm_delay_device_delays_reads, BODY_SECS + 30)
{
	only_in_the_ext4_pass();
	with_cleanup(delay_body, dm_remove, BODY_SECS);
}

static void cg_remove(void)
{
	rmdir(CG);
}

static void io_max_body(void)
{
	char devno[32], buf[128];
	double t;
	void *mem;
	pid_t pid;
	int status;

	if (access(CGROOT "/cgroup.controllers", F_OK) &&
	    mount("none", CGROOT, "cgroup2", 0, NULL))
		fail("no cgroup v2: %s", strerror(errno));
	put_str(CGROOT "/cgroup.subtree_control", "+io");
	dev_numbers(SPARE_DEV, devno, sizeof(devno));
	rmdir(CG);
	CHECK_OK(mkdir(CG, 0755));
	snprintf(buf, sizeof(buf), "%s rbps=%d", devno, RBPS);
	put_str(CG "/io.max", buf);

	t = mono_now();
	pid = CHECK_OK(fork());
	if (pid == 0) {
		int fd;

		snprintf(buf, sizeof(buf), "%d", getpid());
		put_str(CG "/cgroup.procs", buf);
		fd = open(SPARE_DEV, O_RDONLY | O_DIRECT);
		if (fd < 0 || posix_memalign(&mem, 4096, 1 << 20))
			_exit(100);
		for (int i = 0; i < THROTTLED >> 20; i++)
			if (pread(fd, mem, 1 << 20, (off_t)i << 20) != 1 << 20)
				_exit(101);
		_exit(0);
	}
	CHECK_OK(waitpid(pid, &status, 0));
	t = mono_now() - t;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("the reader in the cgroup failed (status 0x%x)", status);
	note("%d MiB read in a cgroup with io.max rbps=%d KiB/s: %.1f s, io.stat rbytes=%lld",
	     THROTTLED >> 20, RBPS >> 10, t, cgroup_rbytes(CG, devno));
	/* the first slice may go unthrottled: ask for three quarters */
	if (t < 0.75 * THROTTLED / RBPS)
		fail("%d MiB read in %.1f s under rbps=%d: not throttled",
		     THROTTLED >> 20, t, RBPS);
	if (cgroup_rbytes(CG, devno) < THROTTLED)
		fail("io.stat counts %lld bytes read, less than the %d read",
		     cgroup_rbytes(CG, devno), THROTTLED);
}

/* a cgroup's io.max rbps slows its reads down to the limit, io.stat counts them */
TEST_TIMEOUT(io_max_throttles_a_cgroups_reads, BODY_SECS + 30)
{
	only_in_the_ext4_pass();
	with_cleanup(io_max_body, cg_remove, BODY_SECS);
}
