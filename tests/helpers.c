// SPDX-License-Identifier: GPL-2.0
/*
 * The tasks that help FS_IOC_ENABLE_VERITY hash a file answer to its
 * caller (Documentation/filesystems/fsverity.rst, "Enabling"): they run
 * only on the CPUs the caller may run on, no more of them than
 * /proc/sys/fs/verity/enable_threads allows, and the page cache they read
 * is charged to the caller's memory cgroup.  Who hashed what is read from
 * the trace event fsverity_enable_part (task and CPU of each part), so on
 * a kernel without it (mainline, which hashes in the caller alone) the
 * tests that need it skip.  Their reads are charged to the caller's
 * block cgroup: an io.max read limit holds for the whole enable.
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>

#define EVENT		TRACEFS "/events/fsverity/fsverity_enable_part"
#define THREADS		"/proc/sys/fs/verity/enable_threads"
#define CG		CGROOT "/fsverity-test"
#define FILE_SIZE	(64 << 20)	/* two batches with SHA-256, 4K */
#define RBPS		(8 << 20)	/* io.max read limit, bytes/s */

static int merkle_bs(void)
{
	return block_size_unsupported(4096) ? 1024 : 4096;
}

static char *make_big(const char *name)
{
	char *p = test_path("%s", name);

	unlink(p);
	make_file(p, FILE_SIZE, 7);
	return p;
}

/* The parts of the traced enables: how many, on which CPUs, by whom */
struct parts {
	int n;
	unsigned long cpus;		/* bit per CPU */
	int by_caller;			/* parts hashed by task @caller */
};

static void trace_start(void)
{
	if (access(EVENT, F_OK))
		skip("no %s: kernel without the fs-verity enable trace events",
		     EVENT);
	put_str(TRACEFS "/trace", "");
	put_str(EVENT "/enable", "1");
}

/* Trace lines look like "  task-123  [001] ..... 12.34: fsverity_..." */
static struct parts trace_stop(pid_t caller)
{
	struct parts r = { 0 };
	char line[512];
	FILE *f;

	put_str(EVENT "/enable", "0");
	f = fopen(TRACEFS "/trace", "r");
	if (!f)
		fail("open trace: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *br = strchr(line, '['), *dash;
		int cpu, pid;

		if (line[0] == '#' || !strstr(line, "fsverity_enable_part:") ||
		    !br || sscanf(br, "[%d]", &cpu) != 1)
			continue;
		*br = '\0';
		dash = strrchr(line, '-');
		pid = dash ? atoi(dash + 1) : -1;
		r.n++;
		r.cpus |= 1UL << cpu;
		r.by_caller += pid == caller;
	}
	fclose(f);
	put_str(TRACEFS "/trace", "");
	return r;
}

static int online_cpus(void)
{
	return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

TEST(enable_is_hashed_on_every_cpu_of_the_caller)
{
	char *p = make_big("helpers-all");
	struct parts r;

	trace_start();
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	r = trace_stop(getpid());
	note("%d parts on CPUs %#lx, %d by the caller", r.n, r.cpus,
	     r.by_caller);
	if (!r.n)
		fail("no fsverity_enable_part event");
	if (online_cpus() > 1 && r.cpus == (r.cpus & -r.cpus))
		fail("%d CPUs online, yet every part ran on CPUs %#lx",
		     online_cpus(), r.cpus);
	if (!r.by_caller)
		fail("the caller hashed no part itself");
}

TEST(enable_helpers_stay_on_the_cpus_the_caller_may_use)
{
	char *p = make_big("helpers-pinned");
	cpu_set_t one, all;
	struct parts r;

	if (online_cpus() < 2)
		skip("one CPU online: nothing to pin away from");
	CHECK_OK(sched_getaffinity(0, sizeof(all), &all));
	CPU_ZERO(&one);
	CPU_SET(1, &one);
	CHECK_OK(sched_setaffinity(0, sizeof(one), &one));
	trace_start();
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	r = trace_stop(getpid());
	CHECK_OK(sched_setaffinity(0, sizeof(all), &all));
	note("caller pinned to CPU 1: %d parts on CPUs %#lx, %d by the caller",
	     r.n, r.cpus, r.by_caller);
	if (!r.n)
		fail("no fsverity_enable_part event");
	if (r.cpus != 1UL << 1)
		fail("parts ran on CPUs %#lx, not only on CPU 1", r.cpus);
}

TEST(enable_threads_1_hashes_in_the_caller_alone)
{
	char *p = make_big("helpers-serial");
	char old[32] = "0";
	struct parts r;

	if (access(THREADS, F_OK))
		skip("no %s: kernel without the setting", THREADS);
	get_str(THREADS, old, sizeof(old));
	put_str(THREADS, "1");
	trace_start();
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	r = trace_stop(getpid());
	put_str(THREADS, old);
	note("enable_threads=1: %d parts, %d by the caller", r.n, r.by_caller);
	if (!r.n || r.by_caller != r.n)
		fail("%d of %d parts were hashed by another task", r.n - r.by_caller,
		     r.n);
	/* and bad values are refused, leaving the setting as it was */
	if (put_str_errno(THREADS, "-1") != EINVAL)
		fail("enable_threads took -1");
}

/*
 * Enable verity on @p (nothing of it cached) in a child moved into CG,
 * tracing who hashed the parts into *@r unless @r is NULL: the child's
 * exit code (an errno, 100 if
 * the open failed, -1 if it died), *@secs the time the enable took.
 */
static int enable_in_cg(const char *p, struct parts *r, double *secs)
{
	char buf[32];
	int status;
	pid_t pid;

	drop_caches();
	if (r)
		trace_start();
	*secs = mono_now();
	pid = CHECK_OK(fork());
	if (pid == 0) {
		int fd;

		snprintf(buf, sizeof(buf), "%d", getpid());
		put_str(CG "/cgroup.procs", buf);
		fd = open(p, O_RDONLY);
		if (fd < 0)
			_exit(100);
		_exit(enable_verity(fd, FS_VERITY_HASH_ALG_SHA256,
				    merkle_bs() == 4096 ? 12 : 10, NULL, 0,
				    NULL, 0));
	}
	CHECK_OK(waitpid(pid, &status, 0));
	*secs = mono_now() - *secs;
	if (r)
		*r = trace_stop(pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void must_succeed_in_cg(int err)
{
	if (err)
		fail("enable in the cgroup: %s", err == 100 ? "open failed" :
		     err < 0 ? "child died" : errno_name(err));
}

/* Bytes of @path in the page cache (mincore over a read-only mapping) */
static long long cached_bytes(const char *path, off_t size)
{
	long ps = sysconf(_SC_PAGESIZE);
	size_t pages = (size + ps - 1) / ps;
	unsigned char *vec = malloc(pages);
	long long n = 0;
	int fd = CHECK_OK(open(path, O_RDONLY));
	void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);

	CHECK(m != MAP_FAILED && vec);
	CHECK_OK(mincore(m, size, vec));
	for (size_t i = 0; i < pages; i++)
		n += (vec[i] & 1) * ps;
	munmap(m, size);
	close(fd);
	free(vec);
	return n;
}

/*
 * In a memory cgroup allowed a quarter of the file, enable verity on the
 * file with nothing of it cached: the enable succeeds, and no more of the
 * file stays cached than the cgroup may hold, so the helpers' reads were
 * charged to it too (charged to the root, they would stay cached).
 */
TEST(enable_in_a_small_memory_cgroup_charges_the_helpers_reads_to_it)
{
	char *p = make_big("helpers-memcg");
	long long max = FILE_SIZE / 4, cached;
	char buf[64], stat[4096];
	double t;
	int err;

	cg_make(CG, "memory");
	snprintf(buf, sizeof(buf), "%lld", max);
	put_str(CG "/memory.max", buf);
	err = enable_in_cg(p, NULL, &t);
	cached = cached_bytes(p, FILE_SIZE);
	{
		int fd = CHECK_OK(open(CG "/memory.stat", O_RDONLY));
		ssize_t n = read(fd, stat, sizeof(stat) - 1);

		close(fd);
		stat[n > 0 ? n : 0] = '\0';
		/* its first two lines: anon and file */
		*strchrnul(strchrnul(stat, '\n') + 1, '\n') = '\0';
		*strchrnul(stat, '\n') = ' ';
	}
	note("memory.max %lld KiB: %lld KiB of the file cached; %s", max >> 10,
	     cached >> 10, stat);
	rmdir(CG);
	must_succeed_in_cg(err);
	if (cached > max + (4 << 20))
		fail("%lld KiB of the file cached, more than the cgroup's %lld KiB: reads charged elsewhere",
		     cached >> 10, max >> 10);
}

/*
 * In a block cgroup whose io.max lets it read a fraction of the disk's
 * rate, enable verity on a file with nothing of it cached: the enable
 * takes at least as long as the cgroup may take to read the file, and
 * its io.stat counts the file's bytes, although helpers hashed parts of
 * it.  Charged to the root, the helpers' reads would be neither slowed
 * nor counted.
 */
TEST_TIMEOUT(enable_in_an_io_max_cgroup_charges_the_helpers_reads_to_it, 180)
{
	char *p = make_big("helpers-blkcg"), devno[32], buf[64];
	double cold, t, floor = 0.75 * FILE_SIZE / RBPS;
	long long rbytes;
	struct parts r;
	size_t len;
	int err;

	if (online_cpus() < 2)
		skip("one CPU online: no helper to charge");
	dev_numbers(env.dev, devno, sizeof(devno));

	/* the disk's cold rate, outside the cgroup: the limit must be well below */
	drop_caches();
	cold = mono_now();
	free(read_whole(p, &len));
	cold = mono_now() - cold;
	if (cold > floor / 3)
		fail("a cold read of %d MiB took %.1f s: too slow a disk to tell io.max rbps=%d KiB/s",
		     FILE_SIZE >> 20, cold, RBPS >> 10);

	cg_make(CG, "io");
	snprintf(buf, sizeof(buf), "%s rbps=%d", devno, RBPS);
	put_str(CG "/io.max", buf);
	err = enable_in_cg(p, &r, &t);
	rbytes = cgroup_rbytes(CG, devno);
	rmdir(CG);
	note("%d MiB: cold read %.1f s; enable under io.max rbps=%d KiB/s %.1f s, io.stat rbytes %lld KiB, %d of %d parts by helpers",
	     FILE_SIZE >> 20, cold, RBPS >> 10, t, rbytes >> 10,
	     r.n - r.by_caller, r.n);
	must_succeed_in_cg(err);
	if (r.n == r.by_caller)
		fail("no helper hashed a part: nothing shown");
	if (t < floor)
		fail("the enable read %d MiB in %.1f s under rbps=%d KiB/s: helpers' reads not throttled",
		     FILE_SIZE >> 20, t, RBPS >> 10);
	if (rbytes < FILE_SIZE)
		fail("io.stat counts %lld KiB read, less than the file's %d KiB: helpers' reads charged elsewhere",
		     rbytes >> 10, FILE_SIZE >> 10);
}
