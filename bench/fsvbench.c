// SPDX-License-Identifier: GPL-2.0
/*
 * fsvbench: the guest side of "make bench".
 *
 *	fsvbench DIR
 *
 * Runs each workload once on the filesystem mounted at DIR and prints one
 * line per result:
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
#include <sys/stat.h>
#include <linux/fsverity.h>

#define BIG_SIZE	(256ULL << 20)
#define SLOW_SIZE	(64ULL << 20)
#define IO_SIZE		(1 << 20)
#define RANDOM_READS	4096
#define WARM_PASSES	11
#define MEASURE_CALLS	20000

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

static double enable(const char *p)
{
	struct fsverity_enable_arg arg = {
		.version = 1,
		.hash_algorithm = FS_VERITY_HASH_ALG_SHA256,
		.block_size = 4096,
	};
	int fd = open(p, O_RDONLY);
	double t;

	if (fd < 0)
		die(p);
	t = now();
	if (ioctl(fd, FS_IOC_ENABLE_VERITY, &arg))
		die("FS_IOC_ENABLE_VERITY");
	t = now() - t;
	close(fd);
	return t;
}

/*
 * Page-cached reads of @a and @b, in MiB/s: the median of WARM_PASSES
 * passes each, since one pass takes under a second, where the host's
 * scheduling shows.  The passes alternate, so both see the same host.
 */
static void warm_reads(const char *a, const char *b, double *rate_a,
		       double *rate_b)
{
	double ta[WARM_PASSES], tb[WARM_PASSES];
	int i;

	read_file(a);
	read_file(b);
	for (i = 0; i < WARM_PASSES; i++) {
		ta[i] = read_file(a);
		tb[i] = read_file(b);
	}
	qsort(ta, WARM_PASSES, sizeof(ta[0]), cmp_double);
	qsort(tb, WARM_PASSES, sizeof(tb[0]), cmp_double);
	*rate_a = BIG_SIZE / ta[WARM_PASSES / 2] / (1 << 20);
	*rate_b = BIG_SIZE / tb[WARM_PASSES / 2] / (1 << 20);
}

/* 4 KiB preads at fixed random offsets; returns reads per second */
static double random_reads(const char *p)
{
	char buf[4096];
	uint64_t seed = 12345;
	int fd = open(p, O_RDONLY);
	double t;
	int i;

	if (fd < 0)
		die(p);
	t = now();
	for (i = 0; i < RANDOM_READS; i++) {
		off_t off = (rnd(&seed) % (BIG_SIZE / 4096)) * 4096;

		if (pread(fd, buf, sizeof(buf), off) != sizeof(buf))
			die("pread");
	}
	t = now() - t;
	close(fd);
	return RANDOM_READS / t;
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
	verity = path("verity");
	plain = path("plain");
	make_file(verity, SLOW_SIZE, 1);
	make_file(plain, SLOW_SIZE, 1);
	enable(verity);
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

int main(int argc, char **argv)
{
	char *warm, *cold, *plain, *small;
	struct cpu_times cpu;
	pthread_t thr;
	double t, v, p;

	if (argc == 3 && !strcmp(argv[2], "seqread"))
		return seqread_only(argv[1]);
	if (argc != 2) {
		fprintf(stderr, "usage: fsvbench DIR [seqread]\n");
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
	v = random_reads(warm);
	drop_caches();
	p = random_reads(plain);
	result("randread_verity", v, "reads/s");
	result("randread_plain", p, "reads/s");
	result("randread_verity_of_plain", 100 * v / p, "%");

	/*
	 * Warm (page-cached) reads: verification must cost nothing.  The
	 * plain file's show what the same kernel does without fs-verity.
	 */
	warm_reads(warm, plain, &v, &p);
	result("warmread_verity", v, "MiB/s");
	result("warmread_plain", p, "MiB/s");
	result("warmread_verity_of_plain", 100 * v / p, "%");

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
