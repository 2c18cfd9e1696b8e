// SPDX-License-Identifier: GPL-2.0
/*
 * fsvbench: the guest side of "make bench".
 *
 *	fsvbench DIR [seqread | cachelayout | warm | swapread CGROUP]
 *
 * Runs each workload once on the filesystem mounted at DIR (or only those
 * of the mode named, see each) and prints one line per result:
 *
 *	BENCH <workload> <value> <unit>
 *
 * The host runs it in alternating boots of both kernels and compares.
 * Absolute numbers under TCG mean little; only ratios within a run do.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/fsverity.h>

#define BIG_SIZE	(256ULL << 20)
#define SLOW_SIZE	(64ULL << 20)
#define IO_SIZE		(1 << 20)
#define RANDOM_READS	4096
#define WARM_RANDOM_READS 16384
#define WARM_PASSES	11
#define MEASURE_CALLS	20000
#define SWAP_PASSES	5
#define SWAP_RECLAIMS	10
/* memory.stat may lag the truth by 64 pages a CPU (MEMCG_CHARGE_BATCH) */
#define SWAP_LEFT	(1 << 20)

static const char *dir;

static void die(const char *what)
{
	fprintf(stderr, "fsvbench: %s: %s\n", what, strerror(errno));
	printf("BENCH-FAIL %s\n", what);
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void result(const char *workload, double value, const char *unit)
{
	printf("BENCH %s %.3f %s\n", workload, value, unit);
	fflush(stdout);
}

static char *path(const char *name)
{
	char *p;

	if (asprintf(&p, "%s/bench-%s", dir, name) < 0)
		die("asprintf");
	return p;
}

static void drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);

	sync();
	if (fd < 0 || write(fd, "3", 1) != 1)
		die("drop_caches");
	close(fd);
}

/* xorshift64: the same bytes and offsets in every boot */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void make_file(const char *p, uint64_t size, uint64_t seed)
{
	static uint64_t buf[IO_SIZE / 8];
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	uint64_t done;
	size_t i;

	if (fd < 0)
		die(p);
	for (done = 0; done < size; done += IO_SIZE) {
		for (i = 0; i < IO_SIZE / 8; i++)
			buf[i] = rnd(&seed);
		if (write(fd, buf, IO_SIZE) != IO_SIZE)
			die("write");
	}
	if (fsync(fd))
		die("fsync");
	close(fd);
}

/*
 * Jiffies all CPUs spent busy (not idle, not waiting for I/O) and in
 * total, from /proc/stat: says whether a workload was bound by the CPUs.
 */
struct cpu_times {
	unsigned long long busy, total;
};

static struct cpu_times cpu_times(void)
{
	unsigned long long v[8];
	struct cpu_times c = { 0, 0 };
	FILE *f = fopen("/proc/stat", "r");
	int i;

	if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
			 &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
			 &v[7]) != 8)
		die("/proc/stat");
	fclose(f);
	for (i = 0; i < 8; i++)
		c.total += v[i];
	c.busy = c.total - v[3] - v[4];
	return c;
}

/* Percent of all CPUs' time busy since @start */
static double cpu_busy_since(struct cpu_times start)
{
	struct cpu_times end = cpu_times();

	if (end.total == start.total)
		return 0;
	return 100.0 * (end.busy - start.busy) / (end.total - start.total);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Read a whole file sequentially; returns seconds */
static double read_file(const char *p)
{
	static char buf[IO_SIZE];
	int fd = open(p, O_RDONLY);
	double t;
	ssize_t n;

	if (fd < 0)
		die(p);
	t = now();
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	t = now() - t;
	if (n < 0)
		die("read");
	close(fd);
	return t;
}

static struct fsverity_enable_arg enable_arg = {
	.version = 1,
	.hash_algorithm = FS_VERITY_HASH_ALG_SHA256,
	.block_size = 4096,
};

static double enable(const char *p)
{
	int fd = open(p, O_RDONLY);
	double t;

	if (fd < 0)
		die(p);
	t = now();
	if (ioctl(fd, FS_IOC_ENABLE_VERITY, &enable_arg))
		die("FS_IOC_ENABLE_VERITY");
	t = now() - t;
	close(fd);
	return t;
}

/*
 * Does DIR's filesystem take FS_IOC_ENABLE_VERITY?  ENOTTY or EOPNOTSUPP
 * (mainline's tmpfs has no fs-verity): says so in a BENCH-INFO line and
 * returns 0, for the caller to skip; any other error is a failure.
 */
static int has_verity(void)
{
	char *p = path("probe");
	int fd, err = 0;

	make_file(p, 4096, 3);
	fd = open(p, O_RDONLY);
	if (fd < 0)
		die(p);
	if (ioctl(fd, FS_IOC_ENABLE_VERITY, &enable_arg))
		err = errno;
	close(fd);
	unlink(p);
	free(p);
	if (err == ENOTTY || err == EOPNOTSUPP) {
		printf("BENCH-INFO %s: this kernel has no fs-verity there (%s): skipped\n",
		       dir, strerror(err));
		printf("BENCH-DONE\n");
		return 0;
	}
	errno = err;
	if (err)
		die("FS_IOC_ENABLE_VERITY on a 4 KiB file");
	return 1;
}

/* @count 4 KiB preads at fixed random offsets; returns seconds */
static double random_reads(const char *p, int count)
{
	char buf[4096];
	uint64_t seed = 12345;
	int fd = open(p, O_RDONLY);
	double t;
	int i;

	if (fd < 0)
		die(p);
	t = now();
	for (i = 0; i < count; i++) {
		off_t off = (rnd(&seed) % (BIG_SIZE / 4096)) * 4096;

		if (pread(fd, buf, sizeof(buf), off) != sizeof(buf))
			die("pread");
	}
	t = now() - t;
	close(fd);
	return t;
}

/*
 * Page-cached reads of @a and @b, whole files in MiB/s and WARM_RANDOM_READS
 * random 4 KiB preads in reads/s: the median of WARM_PASSES passes each,
 * since one pass takes under a second, where the host's scheduling shows.
 * The passes alternate, so both files see the same host.  The caller has
 * cached both files.
 */
struct warm_rates {
	double seq_a, seq_b, rand_a, rand_b;
};

static double median_rate(double *t, double amount)
{
	qsort(t, WARM_PASSES, sizeof(t[0]), cmp_double);
	return amount / t[WARM_PASSES / 2];
}

static struct warm_rates warm_reads(const char *a, const char *b)
{
	double ta[WARM_PASSES], tb[WARM_PASSES];
	double ra[WARM_PASSES], rb[WARM_PASSES];
	struct warm_rates r;
	int i;

	for (i = 0; i < WARM_PASSES; i++) {
		ta[i] = read_file(a);
		tb[i] = read_file(b);
		ra[i] = random_reads(a, WARM_RANDOM_READS);
		rb[i] = random_reads(b, WARM_RANDOM_READS);
	}
	r.seq_a = median_rate(ta, BIG_SIZE / (1 << 20));
	r.seq_b = median_rate(tb, BIG_SIZE / (1 << 20));
	r.rand_a = median_rate(ra, WARM_RANDOM_READS);
	r.rand_b = median_rate(rb, WARM_RANDOM_READS);
	return r;
}

/*
 * Where the page cache holds @p, as one line "BENCH-INFO cache <name> ...":
 * pages cached, runs of physically consecutive pages in file order, large
 * folios (compound heads), and pages with PG_active, PG_referenced and
 * PG_private, from /proc/self/pagemap and /proc/kpageflags (root only).
 * Mapping the file to look sets nothing a later read() depends on; it runs
 * after the timed passes anyway.  Returns the runs.
 */
#define KPF_REFERENCED		2
#define KPF_ACTIVE		6
#define KPF_COMPOUND_HEAD	15
#define KPF_PRIVATE		35

static long report_cache_layout(const char *name, const char *p)
{
	long pages = 0, runs = 0, large = 0, active = 0, refd = 0, priv = 0;
	int fd = open(p, O_RDONLY);
	int pm = open("/proc/self/pagemap", O_RDONLY);
	int kf = open("/proc/kpageflags", O_RDONLY);
	uint64_t prev = 0, e, f;
	unsigned char *m;
	size_t i;

	if (fd < 0 || pm < 0 || kf < 0)
		die("report_cache_layout: open");
	m = mmap(NULL, BIG_SIZE, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (m == MAP_FAILED)
		die("report_cache_layout: mmap");
	for (i = 0; i < BIG_SIZE / 4096; i++) {
		off_t at = (uintptr_t)(m + i * 4096) / 4096 * 8;
		uint64_t pfn;

		if (pread(pm, &e, 8, at) != 8)
			die("report_cache_layout: pagemap");
		if (!(e >> 63))
			continue;
		pfn = e & ((1ULL << 55) - 1);
		if (pread(kf, &f, 8, pfn * 8) != 8)
			die("report_cache_layout: kpageflags");
		runs += !pages || pfn != prev + 1;
		pages++;
		prev = pfn;
		large += (f >> KPF_COMPOUND_HEAD) & 1;
		active += (f >> KPF_ACTIVE) & 1;
		refd += (f >> KPF_REFERENCED) & 1;
		priv += (f >> KPF_PRIVATE) & 1;
	}
	printf("BENCH-INFO cache %s pages %ld physical_runs %ld large_folios %ld active %ld referenced %ld private %ld\n",
	       name, pages, runs, large, active, refd, priv);
	munmap(m, BIG_SIZE);
	close(kf);
	close(pm);
	close(fd);
	return runs;
}

/* The page-cached rows of a verity file against its plain copy */
static void warm_results(const struct warm_rates *wr, const char *verity,
			 const char *plain)
{
	result("warmread_verity", wr->seq_a, "MiB/s");
	result("warmread_plain", wr->seq_b, "MiB/s");
	result("warmread_verity_of_plain", 100 * wr->seq_a / wr->seq_b, "%");
	result("warmrand_verity", wr->rand_a, "reads/s");
	result("warmrand_plain", wr->rand_b, "reads/s");
	result("warmrand_verity_of_plain", 100 * wr->rand_a / wr->rand_b, "%");
	report_cache_layout("verity", verity);
	report_cache_layout("plain", plain);
}

/* Mean latency of FS_IOC_MEASURE_VERITY, in microseconds */
static double measure_latency(const char *p)
{
	struct {
		struct fsverity_digest d;
		unsigned char buf[64];
	} arg;
	int fd = open(p, O_RDONLY);
	double t;
	int i;

	if (fd < 0)
		die(p);
	t = now();
	for (i = 0; i < MEASURE_CALLS; i++) {
		arg.d.digest_size = sizeof(arg.buf);
		if (ioctl(fd, FS_IOC_MEASURE_VERITY, &arg))
			die("FS_IOC_MEASURE_VERITY");
	}
	t = now() - t;
	close(fd);
	return t / MEASURE_CALLS * 1e6;
}

/* Peak of (used - page cache) memory while enabling, sampled every 5 ms */
static volatile int sampling;
static long long peak_kib, base_kib;

static long long nonfile_kib(void)
{
	char line[128];
	long long total = 0, free_ = 0, cached = 0, buffers = 0, v;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		die("/proc/meminfo");
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemTotal: %lld", &v) == 1)
			total = v;
		else if (sscanf(line, "MemFree: %lld", &v) == 1)
			free_ = v;
		else if (sscanf(line, "Cached: %lld", &v) == 1)
			cached = v;
		else if (sscanf(line, "Buffers: %lld", &v) == 1)
			buffers = v;
	}
	fclose(f);
	return total - free_ - cached - buffers;
}

static void *sampler(void *unused)
{
	(void)unused;
	while (sampling) {
		long long v = nonfile_kib();

		if (v > peak_kib)
			peak_kib = v;
		usleep(5000);
	}
	return NULL;
}

/* Object size of the fsverity_info slab cache, from /proc/slabinfo */
static void report_slab(void)
{
	char line[512], name[64];
	long long active, num, objsize;
	FILE *f = fopen("/proc/slabinfo", "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %lld %lld %lld", name, &active, &num,
			   &objsize) == 4 && !strcmp(name, "fsverity_info"))
			result("info_slab_object", objsize, "bytes");
	}
	fclose(f);
}

/* The in-guest hash rate limit, from openssl speed (1 and all CPUs) */
static void report_hash_limit(void)
{
	const char *cmds[2] = {
		"openssl speed -elapsed -seconds 3 -bytes 4096 sha256 2>/dev/null",
		"openssl speed -elapsed -seconds 3 -bytes 4096 -multi 2 sha256 2>/dev/null",
	};
	const char *names[2] = { "limit_sha256_1cpu", "limit_sha256_allcpu" };
	int i;

	for (i = 0; i < 2; i++) {
		char line[512];
		double kbs = 0;
		FILE *f = popen(cmds[i], "r");

		if (!f)
			continue;
		/* the last line is "sha256 <rate for 4096 bytes>k" */
		while (fgets(line, sizeof(line), f)) {
			double v;

			if (sscanf(line, "sha256 %lfk", &v) == 1)
				kbs = v;
		}
		pclose(f);
		if (kbs > 0)
			result(names[i], kbs * 1000 / (1 << 20), "MiB/s");
	}
}

/* A verity file of @size and its plain copy, "verity" and "plain" in dir */
static void make_pair(uint64_t size, char **verity, char **plain)
{
	*verity = path("verity");
	*plain = path("plain");
	make_file(*verity, size, 1);
	make_file(*plain, size, 1);
	enable(*verity);
}

/*
 * "fsvbench DIR seqread": only cold sequential reads, of a file of
 * SLOW_SIZE, for a slow device (guest.sh's ext4 over dm-delay), where the
 * full run would take too long.  Both files are written and the verity
 * one enabled from the page cache, so only the timed reads are slow.
 */
static int seqread_only(const char *d)
{
	char *verity, *plain;

	dir = d;
	make_pair(SLOW_SIZE, &verity, &plain);
	drop_caches();
	result("seqread_verity", SLOW_SIZE / read_file(verity) / (1 << 20),
	       "MiB/s");
	drop_caches();
	result("seqread_plain", SLOW_SIZE / read_file(plain) / (1 << 20),
	       "MiB/s");
	unlink(verity);
	unlink(plain);
	printf("BENCH-DONE\n");
	return 0;
}

/*
 * "fsvbench DIR cachelayout": why page-cached reads of two files differ
 * when nothing but their history does.  A verity file and its plain copy
 * reach the page cache in three ways in turn, each followed by the warm
 * passes and the layout of both files:
 *
 *	scattered	as the bench did until it changed: after a drop, cold
 *			random reads of each file (the verity file's dropped
 *			again before the plain file's), then one sequential
 *			read of each; the plain file keeps its random pages
 *	verity_first	after a drop, one sequential read of each, verity
 *			file first (what the bench does now)
 *	plain_first	the same, the plain file first
 *
 * Rows: <way>_warmread_{verity,plain} (MiB/s), <way>_warmrand_* (reads/s)
 * and <way>_runs_* (runs of physically consecutive pages).
 */
static void cached_way(const char *way, const char *verity, const char *plain)
{
	struct warm_rates wr = warm_reads(verity, plain);
	char row[64];

	snprintf(row, sizeof(row), "%s_warmread_verity", way);
	result(row, wr.seq_a, "MiB/s");
	snprintf(row, sizeof(row), "%s_warmread_plain", way);
	result(row, wr.seq_b, "MiB/s");
	snprintf(row, sizeof(row), "%s_warmrand_verity", way);
	result(row, wr.rand_a, "reads/s");
	snprintf(row, sizeof(row), "%s_warmrand_plain", way);
	result(row, wr.rand_b, "reads/s");
	snprintf(row, sizeof(row), "%s_runs_verity", way);
	result(row, report_cache_layout(row, verity), "runs");
	snprintf(row, sizeof(row), "%s_runs_plain", way);
	result(row, report_cache_layout(row, plain), "runs");
}

static int cachelayout(const char *d)
{
	char *verity, *plain;

	dir = d;
	make_pair(BIG_SIZE, &verity, &plain);

	drop_caches();
	random_reads(verity, RANDOM_READS);
	drop_caches();
	random_reads(plain, RANDOM_READS);
	read_file(verity);
	read_file(plain);
	cached_way("scattered", verity, plain);

	drop_caches();
	read_file(verity);
	read_file(plain);
	cached_way("verity_first", verity, plain);

	drop_caches();
	read_file(plain);
	read_file(verity);
	cached_way("plain_first", verity, plain);

	unlink(verity);
	unlink(plain);
	printf("BENCH-DONE\n");
	return 0;
}

/*
 * "fsvbench DIR warm": only the page-cached rows, for a filesystem whose
 * files live in the page cache alone (guest.sh's tmpfs), where the cold
 * rows mean nothing.  Both files reach memory the same way, written in
 * order, the verity file first; its reads do not enter fs-verity, so they
 * must cost what the plain file's do.
 */
static int warm_only(const char *d)
{
	char *verity, *plain;
	struct warm_rates wr;

	dir = d;
	if (!has_verity())
		return 0;
	make_pair(BIG_SIZE, &verity, &plain);
	wr = warm_reads(verity, plain);
	warm_results(&wr, verity, plain);
	unlink(verity);
	unlink(plain);
	printf("BENCH-DONE\n");
	return 0;
}

/* write @s to cgroup file @cg/@file: 0 or the errno */
static int cg_write(const char *cg, const char *file, const char *s)
{
	char p[256];
	int fd, err = 0;

	snprintf(p, sizeof(p), "%s/%s", cg, file);
	fd = open(p, O_WRONLY);
	if (fd < 0)
		return errno;
	if (write(fd, s, strlen(s)) < 0)
		err = errno;
	close(fd);
	return err;
}

/* "@key N" of @cg/memory.stat, in bytes */
static long long cg_stat(const char *cg, const char *key)
{
	char p[256], line[256];
	size_t kl = strlen(key);
	long long v = -1;
	FILE *f;

	snprintf(p, sizeof(p), "%s/memory.stat", cg);
	f = fopen(p, "r");
	if (!f)
		die(p);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ' ')
			v = atoll(line + kl + 1);
	fclose(f);
	if (v < 0) {
		errno = ENOENT;
		die(key);
	}
	return v;
}

/*
 * Everything of @cg's tmpfs files out to swap: memory.reclaim, swap-backed
 * pages first, until memory.stat shows neither their pages in the page
 * cache (shmem) nor copies left in the swap cache (swapcached), which a
 * read would find without reading the swap device.  One reclaim may leave
 * some: the swap cache of pages just written out is freed by the next.
 */
static void push_out(const char *cg)
{
	long long left = 0;
	int i, err;

	for (i = 0; i < SWAP_RECLAIMS; i++) {
		/* EAGAIN: less than asked for was reclaimed, all there was */
		err = cg_write(cg, "memory.reclaim", "4G swappiness=200");
		if (err && err != EAGAIN) {
			errno = err;
			die("memory.reclaim");
		}
		left = cg_stat(cg, "shmem") + cg_stat(cg, "swapcached");
		if (left <= SWAP_LEFT)
			return;
	}
	fprintf(stderr, "fsvbench: %lld KiB in memory after %d reclaims\n",
		left >> 10, SWAP_RECLAIMS);
	errno = EAGAIN;
	die("memory.reclaim: the files stay in memory");
}

/*
 * "fsvbench DIR swapread CGROUP": sequential reads of a verity file of
 * SLOW_SIZE and its plain copy, on a tmpfs, read back from swap, where
 * tmpfs verifies the verity file's data before it returns to the page
 * cache.  The caller made the swap and CGROUP (cgroup v2, memory
 * controller); the files are written and enabled by a child in CGROUP,
 * so their pages (the tree's too) are charged to it, and memory.reclaim
 * there pushes them out; a swap-in is charged back to the cgroup the
 * page was swapped out from, so this process stays outside.  Each pass
 * reads both files, each from all swap, in turn; every other pass the
 * plain file first.  The median of SWAP_PASSES.
 */
static int swapread(const char *d, const char *cg)
{
	double tv[SWAP_PASSES], tp[SWAP_PASSES], v, p;
	char *verity, *plain, pid[32];
	int i, status;
	pid_t child;

	dir = d;
	if (!has_verity())
		return 0;
	fflush(stdout);		/* or the child prints it again */
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		snprintf(pid, sizeof(pid), "%d", getpid());
		errno = cg_write(cg, "cgroup.procs", pid);
		if (errno)
			die("joining the cgroup");
		make_pair(SLOW_SIZE, &verity, &plain);
		exit(0);
	}
	if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		exit(1);	/* the child said BENCH-FAIL */
	verity = path("verity");	/* the names make_pair() gave them */
	plain = path("plain");

	for (i = 0; i < SWAP_PASSES; i++) {
		if (i % 2) {
			push_out(cg);
			tp[i] = read_file(plain);
		}
		push_out(cg);
		tv[i] = read_file(verity);
		if (!(i % 2)) {
			push_out(cg);
			tp[i] = read_file(plain);
		}
	}
	qsort(tv, SWAP_PASSES, sizeof(tv[0]), cmp_double);
	qsort(tp, SWAP_PASSES, sizeof(tp[0]), cmp_double);
	v = SLOW_SIZE / tv[SWAP_PASSES / 2] / (1 << 20);
	p = SLOW_SIZE / tp[SWAP_PASSES / 2] / (1 << 20);
	result("swapread_verity", v, "MiB/s");
	result("swapread_plain", p, "MiB/s");
	result("swapread_verity_of_plain", 100 * v / p, "%");
	unlink(verity);
	unlink(plain);
	printf("BENCH-DONE\n");
	return 0;
}

int main(int argc, char **argv)
{
	char *warm, *cold, *plain, *small;
	struct cpu_times cpu;
	struct warm_rates wr;
	pthread_t thr;
	double t, v, p;

	if (argc == 3 && !strcmp(argv[2], "seqread"))
		return seqread_only(argv[1]);
	if (argc == 3 && !strcmp(argv[2], "cachelayout"))
		return cachelayout(argv[1]);
	if (argc == 3 && !strcmp(argv[2], "warm"))
		return warm_only(argv[1]);
	if (argc == 4 && !strcmp(argv[2], "swapread"))
		return swapread(argv[1], argv[3]);
	if (argc != 2) {
		fprintf(stderr, "usage: fsvbench DIR [seqread|cachelayout|warm|swapread CGROUP]\n");
		return 2;
	}
	dir = argv[1];
	warm = path("warm");
	cold = path("cold");
	plain = path("plain");
	small = path("small");

	make_file(warm, BIG_SIZE, 1);
	make_file(cold, BIG_SIZE, 1);
	make_file(plain, BIG_SIZE, 1);
	make_file(small, 4096, 2);

	/* 1. enable, page cache warm and cold */
	drop_caches();
	read_file(warm);
	cpu = cpu_times();
	t = enable(warm);
	result("enable_warm", BIG_SIZE / t / (1 << 20), "MiB/s");
	result("enable_warm_cpu_busy", cpu_busy_since(cpu), "%");
	drop_caches();
	t = enable(cold);
	result("enable_cold", BIG_SIZE / t / (1 << 20), "MiB/s");
	enable(small);

	/* 2. cold sequential reads */
	drop_caches();
	cpu = cpu_times();
	result("seqread_verity", BIG_SIZE / read_file(warm) / (1 << 20),
	       "MiB/s");
	result("seqread_verity_cpu_busy", cpu_busy_since(cpu), "%");
	drop_caches();
	cpu = cpu_times();
	result("seqread_plain", BIG_SIZE / read_file(plain) / (1 << 20),
	       "MiB/s");
	result("seqread_plain_cpu_busy", cpu_busy_since(cpu), "%");

	/*
	 * 3. cold random 4 KiB reads.  Their rate moves between boots of
	 * either kernel by more than fs-verity costs, plain reads alike; so
	 * also the verity file's rate as a share of the plain one's, in the
	 * same boot: what verification costs, on this kernel.
	 */
	drop_caches();
	v = RANDOM_READS / random_reads(warm, RANDOM_READS);
	drop_caches();
	p = RANDOM_READS / random_reads(plain, RANDOM_READS);
	result("randread_verity", v, "reads/s");
	result("randread_plain", p, "reads/s");
	result("randread_verity_of_plain", 100 * v / p, "%");

	/*
	 * Page-cached reads, which do not enter fs-verity: they must cost
	 * what the plain file's cost on the same kernel.  Both files reach
	 * the cache the same way, one cold sequential read each right after
	 * a drop.  Cached by the random reads above and then filled in, the
	 * plain file's pages lay scattered over physical memory (7,700 runs
	 * of consecutive frames against under 100), and under QEMU TCG its
	 * page-cached rates were then 0.71-1.01x the verity file's, against
	 * 0.98-1.02x cached the same way ("fsvbench DIR cachelayout",
	 * bench/README.md).
	 */
	drop_caches();
	read_file(warm);
	read_file(plain);
	wr = warm_reads(warm, plain);
	warm_results(&wr, warm, plain);

	/* 4. measure latency must not depend on the size */
	result("measure_4k", measure_latency(small), "us");
	result("measure_256m", measure_latency(warm), "us");

	/*
	 * 5. memory used while enabling, sampled on the plain file now that
	 * nothing else reads it.  Apart from the timed enables: sampling takes
	 * CPU time that an enable using every vCPU would lose and one using a
	 * single vCPU would not.
	 */
	drop_caches();
	read_file(plain);
	base_kib = nonfile_kib();
	peak_kib = base_kib;
	sampling = 1;
	if (pthread_create(&thr, NULL, sampler, NULL))
		die("pthread_create");
	enable(plain);
	sampling = 0;
	pthread_join(thr, NULL);
	result("enable_peak_mem", peak_kib - base_kib, "KiB");

	/* 6. the limit */
	report_hash_limit();
	report_slab();

	unlink(warm);
	unlink(cold);
	unlink(plain);
	unlink(small);
	printf("BENCH-DONE\n");
	return 0;
}
