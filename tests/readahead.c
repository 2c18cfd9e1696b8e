// SPDX-License-Identifier: GPL-2.0
/*
 * Tree readahead at submission: when ext4, f2fs or XFS starts reading data
 * of a verity file (->readahead, ->read_folio), fs-verity reads ahead the
 * Merkle tree pages that verifying that range will need, before the data
 * bios go out, so a cold read does not stall on one tree page at a time.
 * btrfs keeps its tree in btree items and asks for none.
 *
 * Seen through the counter tree_pages_read_ahead of /sys/fs/verity/<dev>/
 * (tree pages asked for that were not in the page cache), the trace event
 * fsverity_tree_readahead and the read requests completed on the
 * filesystem's disk (the first field of its block device's stat file):
 *
 *  - a cold sequential read of a verity file costs at most a quarter of
 *    its tree's pages in requests more than the same read of a plain
 *    copy (32 for 64 MiB with SHA-256 and 4 KiB blocks);
 *  - with the tree still cached, a read asks for no tree readahead;
 *  - cold random reads ask only for the tree pages they need.
 *
 * Mainline 6.12 has neither the counter nor the event: there these tests
 * skip (tests/expected-skips).
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

/* 64 MiB: at SHA-256 and 4 KiB blocks, a tree of 128 leaves + the root */
#define FILE_SIZE	(64 << 20)
/* the sequential reads' size: read()s of an ordinary reader */
#define READ_SIZE	(128 << 10)
/*
 * Read one by one, the tree pages of FILE_SIZE would cost a request each
 * (129 with 4 KiB blocks, 530 with 1 KiB); read ahead, the cold read may
 * cost at most a quarter of that more than the read of its plain copy:
 * 32 requests for the 4 KiB tree.
 */
#define EXTRA_REQUESTS_SHIFT	2
/* cold random reads, of RANDOM_READ_SIZE bytes each */
#define RANDOM_READS	64
#define RANDOM_READ_SIZE 4096
/* 64 MiB written twice, hashed, read twice cold; a debug kernel is slower */
#define TEST_SECS	300

#define COUNTER		"tree_pages_read_ahead"
#define EVENT		"fsverity_tree_readahead"
#define EVENT_DIR	TRACEFS "/events/fsverity/" EVENT

/* the reads' cost: disk requests, tree pages read ahead, trace events */
struct cost {
	long long requests, tree_pages, events;
};

/* Skip on a kernel without the statistics and trace events (mainline) */
static void need_readahead_stats(void)
{
	if (!kernel_is_ours())
		skip("no /sys/fs/verity: kernel without fs-verity statistics");
	if (access(TRACEFS "/events/fsverity", F_OK))
		skip("no events/fsverity: kernel without fs-verity tracepoints");
	if (access(EVENT_DIR, F_OK))
		fail("no %s: the kernel has fs-verity trace events but not this one",
		     EVENT_DIR);
}

/* Does fs-verity read this filesystem's tree ahead?  Not btrfs's. */
static bool reads_tree_ahead(void)
{
	return strcmp(env.fs, "btrfs") != 0;
}

/* Merkle tree blocks: 4096 where the filesystem takes them, else 1024 */
static int merkle_bs(void)
{
	return block_size_unsupported(4096) ? 1024 : 4096;
}

/* Levels of a SHA-256 tree over FILE_SIZE (2 with 4 KiB blocks) */
static int tree_levels(void)
{
	unsigned long long blocks = FILE_SIZE / merkle_bs();
	int per_block = merkle_bs() / 32, levels = 0;

	while (blocks > 1) {
		blocks = (blocks + per_block - 1) / per_block;
		levels++;
	}
	return levels;
}

/* Pages of that tree (129 with 4 KiB blocks, 530 with 1 KiB) */
static long long tree_pages(void)
{
	unsigned long long blocks = FILE_SIZE / merkle_bs(), total = 0;
	int per_block = merkle_bs() / 32;

	while (blocks > 1) {
		blocks = (blocks + per_block - 1) / per_block;
		total += blocks;
	}
	return (total * merkle_bs() + 4095) / 4096;
}

/* Read requests completed on env.dev's disk: the first field of its stat */
static long long disk_read_requests(void)
{
	char devno[32], path[96];
	long long n;
	FILE *f;

	dev_numbers(env.dev, devno, sizeof(devno));
	snprintf(path, sizeof(path), "/sys/dev/block/%s/stat", devno);
	f = fopen(path, "r");
	if (!f)
		fail("%s: %s", path, strerror(errno));
	if (fscanf(f, "%lld", &n) != 1)
		fail("%s: not a number", path);
	fclose(f);
	return n;
}

static void trace_on(void)
{
	put_str(TRACEFS "/trace", "");
	put_str(EVENT_DIR "/enable", "1");
}

static void trace_off(void)
{
	put_str(EVENT_DIR "/enable", "0");
	put_str(TRACEFS "/trace", "");
}

/* Start measuring: the event's lines are counted from here */
static void cost_start(struct cost *c)
{
	put_str(TRACEFS "/trace", "");
	c->requests = disk_read_requests();
	c->tree_pages = verity_counter(COUNTER);
	c->events = 0;
}

/* What was spent since cost_start() */
static void cost_end(struct cost *c)
{
	c->requests = disk_read_requests() - c->requests;
	c->tree_pages = verity_counter(COUNTER) - c->tree_pages;
	c->events = trace_count(EVENT ":", NULL);
}

/* A fresh FILE_SIZE file of random data from @seed, on disk */
static char *make_synced(const char *name, uint64_t seed)
{
	char *path = test_path("%s", name);
	int fd;

	unlink(path);	/* a verity file left by an earlier run */
	make_file(path, FILE_SIZE, seed);
	fd = CHECK_OK(open(path, O_RDONLY));
	CHECK_OK(fsync(fd));
	close(fd);
	return path;
}

static char *make_verity(const char *name, uint64_t seed)
{
	char *path = make_synced(name, seed);

	must_enable(path, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	return path;
}

/* The whole file, in order, in read()s of READ_SIZE */
static void read_sequentially(const char *path)
{
	static char buf[READ_SIZE];
	int fd = CHECK_OK(open(path, O_RDONLY));
	long long total = 0;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	if (n < 0)
		fail("read %s at %lld: %s", path, total, strerror(errno));
	if (total != FILE_SIZE)
		fail("read %s: %lld bytes, expected %d", path, total, FILE_SIZE);
	close(fd);
}

/* Cold (caches dropped), what reading @path sequentially costs */
static struct cost cold_read_cost(const char *path)
{
	struct cost c;

	drop_caches();
	cost_start(&c);
	read_sequentially(path);
	cost_end(&c);
	return c;
}

/*
 * The tree pages a cold read needs are read ahead, so reading a verity
 * file costs hardly more disk requests than reading a plain copy of it.
 */
TEST_TIMEOUT(cold_sequential_read_reads_the_tree_ahead, TEST_SECS)
{
	const long long bound = tree_pages() >> EXTRA_REQUESTS_SHIFT;
	char *plain, *verity;
	struct cost p, v;

	need_readahead_stats();
	plain = make_synced("plain", 11);
	verity = make_verity("verity", 11);
	trace_on();
	p = cold_read_cost(plain);
	v = cold_read_cost(verity);
	trace_off();
	note("cold reads of %d MiB in %d KiB read()s: plain %lld requests, verity %lld; %lld tree pages read ahead in %lld events",
	     FILE_SIZE >> 20, READ_SIZE >> 10, p.requests, v.requests,
	     v.tree_pages, v.events);
	if (!reads_tree_ahead()) {
		CHECK(v.tree_pages == 0);
		CHECK(v.events == 0);
	} else {
		CHECK(v.tree_pages > 0);
		CHECK(v.events > 0);
		if (v.requests - p.requests > bound)
			fail("the verity file cost %lld read requests, its plain copy %lld: more than %lld extra (a quarter of its %lld tree pages)",
			     v.requests, p.requests, bound, tree_pages());
	}
	unlink(plain);
	unlink(verity);
}

/*
 * With the tree still in the page cache (only the data dropped, as
 * stats/verified_tree_blocks_are_not_hashed_again does), reading the data
 * again asks for no tree readahead.
 */
TEST_TIMEOUT(read_with_the_tree_cached_asks_for_no_tree_readahead, TEST_SECS)
{
	long long verified;
	char *path;
	struct cost c;
	int fd;

	need_readahead_stats();
	path = make_verity("cached", 12);
	drop_caches();
	read_sequentially(path);
	fd = CHECK_OK(open(path, O_RDONLY));
	fadvise_or_fail(fd, 0, FILE_SIZE, POSIX_FADV_DONTNEED);
	close(fd);

	trace_on();
	verified = verity_counter("data_blocks_verified");
	cost_start(&c);
	read_sequentially(path);
	cost_end(&c);
	verified = verity_counter("data_blocks_verified") - verified;
	trace_off();
	note("data read again: %lld requests, %lld data blocks verified; %lld tree pages read ahead in %lld events",
	     c.requests, verified, c.tree_pages, c.events);
	if (c.requests == 0 && verified == 0)
		fail("the data was not read again: no request, no block verified");
	CHECK(c.tree_pages == 0);
	CHECK(c.events == 0);
	unlink(path);
}

/* RANDOM_READS random offsets in the file, RANDOM_READ_SIZE aligned */
static void random_offsets(off_t *offs)
{
	uint64_t r[RANDOM_READS];

	fill_random(r, sizeof(r), 13);
	for (int i = 0; i < RANDOM_READS; i++)
		offs[i] = (off_t)(r[i] % (FILE_SIZE / RANDOM_READ_SIZE)) *
			  RANDOM_READ_SIZE;
}

/*
 * Cold random reads (POSIX_FADV_RANDOM: no data readahead) need at most
 * one tree page per level each: fs-verity reads ahead no more than that,
 * no big windows.
 */
TEST_TIMEOUT(random_reads_read_ahead_only_what_they_need, TEST_SECS)
{
	const long long bound = (long long)RANDOM_READS * tree_levels();
	static char buf[RANDOM_READ_SIZE];
	off_t offs[RANDOM_READS];
	struct cost c;
	char *path;
	int fd;

	need_readahead_stats();
	path = make_verity("random", 14);
	random_offsets(offs);
	drop_caches();
	trace_on();
	fd = CHECK_OK(open(path, O_RDONLY));
	fadvise_or_fail(fd, 0, 0, POSIX_FADV_RANDOM);
	cost_start(&c);
	for (int i = 0; i < RANDOM_READS; i++) {
		ssize_t n = pread(fd, buf, sizeof(buf), offs[i]);

		if (n != sizeof(buf))
			fail("pread %s at %lld: %zd (%s)", path,
			     (long long)offs[i], n, n < 0 ? strerror(errno) : "short");
	}
	cost_end(&c);
	close(fd);
	trace_off();
	note("%d random %d-byte reads, %d tree levels: %lld requests; %lld tree pages read ahead (at most %lld) in %lld events",
	     RANDOM_READS, RANDOM_READ_SIZE, tree_levels(), c.requests,
	     c.tree_pages, bound, c.events);
	if (!reads_tree_ahead())
		CHECK(c.tree_pages == 0);
	else
		CHECK(c.tree_pages > 0);
	if (c.tree_pages > bound)
		fail("%lld tree pages read ahead for %d random reads of a %d-level tree: more than %lld",
		     c.tree_pages, RANDOM_READS, tree_levels(), bound);
	unlink(path);
}
