// SPDX-License-Identifier: GPL-2.0
/*
 * Observability of our fs-verity: the counters in /sys/fs/verity/<dev>/ and
 * the tracepoints in events/fsverity/.  Mainline 6.12 has neither, so on it
 * these tests skip.
 *
 * The counters also prove that verified tree blocks are cached: reading a
 * file a second time, with only its data dropped from the page cache,
 * hashes data blocks but no tree block.
 */
#include "vutil.h"

#include <dirent.h>
#include <libgen.h>

#define TRACEFS "/sys/kernel/tracing"

static const char * const counter_names[] = {
	"data_blocks_verified", "tree_blocks_hashed", "hash_cache_hits",
	"verify_failures", "enables",
};
enum { DATA, TREE, HITS, FAILURES, ENABLES, NR_COUNTERS };

struct counters {
	unsigned long long v[NR_COUNTERS];
};

/* /sys/fs/verity/<device of env.dev>, or skip() if there is none */
static const char *stats_dir(void)
{
	static char dir[256];
	char dev[64];

	if (access("/sys/fs/verity", F_OK))
		skip("no /sys/fs/verity: kernel without fs-verity statistics");
	snprintf(dev, sizeof(dev), "%s", env.dev);
	snprintf(dir, sizeof(dir), "/sys/fs/verity/%s", basename(dev));
	if (access(dir, F_OK)) {
		char out[256];

		run_cmd(out, sizeof(out), "ls /sys/fs/verity");
		fail("no %s; /sys/fs/verity has: %s", dir, out);
	}
	return dir;
}

static void read_counters(struct counters *c)
{
	const char *dir = stats_dir();
	int i;

	for (i = 0; i < NR_COUNTERS; i++) {
		char path[320];
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, counter_names[i]);
		f = fopen(path, "r");
		if (!f)
			fail("%s: %s", path, strerror(errno));
		if (fscanf(f, "%llu", &c->v[i]) != 1)
			fail("%s: not a number", path);
		fclose(f);
	}
}

static unsigned long long delta(const struct counters *a,
				const struct counters *b, int i)
{
	return b->v[i] - a->v[i];
}

/* Read the whole file through read(), checking nothing fails */
static void read_all(const char *path)
{
	static char buf[1 << 16];
	int fd = CHECK_OK(open(path, O_RDONLY));
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		fail("read %s: %s", path, strerror(errno));
	close(fd);
}

/* Drop the file's data pages, but not its Merkle tree pages past EOF */
static void drop_data_pages(const char *path, off_t size)
{
	int fd = CHECK_OK(open(path, O_RDONLY));

	/* posix_fadvise() returns the error instead of setting errno */
	errno = posix_fadvise(fd, 0, size, POSIX_FADV_DONTNEED);
	if (errno)
		fail("posix_fadvise(DONTNEED): %s", strerror(errno));
	close(fd);
}

#define FILE_SIZE	(4 << 20)

/* Merkle tree blocks: 4096 where the filesystem allows, else 1024 */
static int log_bs(void)
{
	return strcmp(env.fs, "ext4-1k") ? 12 : 10;
}

static unsigned long long data_blocks(void)
{
	return FILE_SIZE >> log_bs();
}

/* Blocks of a SHA-256 tree over data_blocks() blocks */
static unsigned long long tree_blocks(void)
{
	unsigned long long blocks = data_blocks(), total = 0;
	unsigned int per_block = (1U << log_bs()) / 32;

	while (blocks > 1) {
		blocks = (blocks + per_block - 1) / per_block;
		total += blocks;
	}
	return total;
}

static char *make_verity_file(const char *name)
{
	char *path = test_path("%s", name);

	make_file(path, FILE_SIZE, 42);
	if (enable_verity_path(path, FS_VERITY_HASH_ALG_SHA256, log_bs(),
			       NULL, 0))
		fail("enable %s failed", path);
	return path;
}

TEST(counts_enable_and_verified_reads)
{
	struct counters before, enabled, first, second;
	char *path;

	read_counters(&before);
	path = make_verity_file("count");
	read_counters(&enabled);
	CHECK(delta(&before, &enabled, ENABLES) == 1);

	/* A cold read hashes every data block and every tree block once */
	fs_unmount();
	fs_mount();
	read_counters(&before);
	read_all(path);
	read_counters(&first);
	note("first read: %llu data, %llu tree, %llu hits",
	     delta(&before, &first, DATA), delta(&before, &first, TREE),
	     delta(&before, &first, HITS));
	CHECK(delta(&before, &first, DATA) == data_blocks());
	/* Verifying CPUs may race to check the same tree block: at least */
	CHECK(delta(&before, &first, TREE) >= tree_blocks());
	CHECK(delta(&before, &first, FAILURES) == 0);

	/* With the tree still cached, only data is hashed the second time */
	drop_data_pages(path, FILE_SIZE);
	read_all(path);
	read_counters(&second);
	note("second read: %llu data, %llu tree, %llu hits",
	     delta(&first, &second, DATA), delta(&first, &second, TREE),
	     delta(&first, &second, HITS));
	CHECK(delta(&first, &second, DATA) == data_blocks());
	CHECK(delta(&first, &second, TREE) == 0);
	CHECK(delta(&first, &second, HITS) >= data_blocks());
	CHECK(delta(&first, &second, FAILURES) == 0);
}

static void write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_TRUNC);

	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		fail("write %s: %s", path, strerror(errno));
	close(fd);
}

/* How many lines of the trace buffer name @event */
static unsigned long long count_events(const char *event)
{
	char line[512];
	unsigned long long n = 0;
	FILE *f = fopen(TRACEFS "/trace", "r");

	if (!f)
		fail("open trace: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (strstr(line, event))
			n++;
	fclose(f);
	return n;
}

TEST(tracepoints_report_enable_and_verification)
{
	char *path;

	if (access(TRACEFS "/events/fsverity", F_OK))
		skip("no events/fsverity: kernel without fs-verity tracepoints");
	write_str(TRACEFS "/trace", "");
	write_str(TRACEFS "/events/fsverity/enable", "1");

	path = make_verity_file("trace");
	fs_unmount();
	fs_mount();
	read_all(path);

	write_str(TRACEFS "/events/fsverity/enable", "0");
	note("events: %llu data verified, %llu tree hashed, %llu hits, %llu misses",
	     count_events("fsverity_data_verified:"),
	     count_events("fsverity_tree_block_hashed:"),
	     count_events("fsverity_cache_hit:"),
	     count_events("fsverity_cache_miss:"));
	CHECK(count_events("fsverity_enable_start:") == 1);
	CHECK(count_events("fsverity_enable_end:") == 1);
	CHECK(count_events("fsverity_data_verified:") == data_blocks());
	CHECK(count_events("fsverity_tree_block_hashed:") >= tree_blocks());
	CHECK(count_events("fsverity_cache_miss:") >= tree_blocks());
	CHECK(count_events("fsverity_cache_hit:") >=
	      data_blocks() - tree_blocks());
	CHECK(count_events("fsverity_verify_failed:") == 0);
	write_str(TRACEFS "/trace", "");
}
