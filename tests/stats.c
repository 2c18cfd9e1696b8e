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
#include <sys/mount.h>


static const char * const counter_names[] = {
	"data_blocks_verified", "tree_blocks_hashed", "hash_cache_hits",
	"verify_failures", "enables", "bio_shares_queued",
};
enum { DATA, TREE, HITS, FAILURES, ENABLES, SHARES, NR_COUNTERS };

struct counters {
	unsigned long long v[NR_COUNTERS];
};

/*
 * /sys/fs/verity/<device of env.dev>, or skip() on a kernel without the
 * statistics.  The directory comes with the first verity inode the mount
 * sets up and goes at unmount, so it may not be there yet.
 */
static const char *stats_dir(void)
{
	static char dir[256];
	char dev[64];

	if (access("/sys/fs/verity", F_OK))
		skip("no /sys/fs/verity: kernel without fs-verity statistics");
	snprintf(dev, sizeof(dev), "%s", env.dev);
	snprintf(dir, sizeof(dir), "/sys/fs/verity/%s", basename(dev));
	return dir;
}

/* The counters, all zero if the mount has not used verity yet */
static void read_counters(struct counters *c)
{
	const char *dir = stats_dir();
	int i;

	memset(c, 0, sizeof(*c));
	if (access(dir, F_OK))
		return;
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
	return strstr(env.fs, "-1k") ? 10 : 12;	/* ext4-1k, xfs-1k */
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
	struct counters before, enabled, first;
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
}

/*
 * The point of remembering verified tree blocks: with the tree still
 * cached, reading the data again hashes the data blocks and no tree block.
 */
TEST(verified_tree_blocks_are_not_hashed_again)
{
	struct counters first, second;
	char *path;

	path = make_verity_file("again");
	fs_unmount();
	fs_mount();
	read_all(path);
	drop_data_pages(path, FILE_SIZE);
	read_counters(&first);
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

/* Does this filesystem's read path hand whole bios to fs-verity? */
static bool verifies_bios(void)
{
	/* btrfs verifies folio by folio */
	return strcmp(env.fs, "btrfs") != 0;
}

/*
 * A large cold read arrives in bios of the readahead window's size: each
 * is split over the CPUs.  Where the filesystem verifies folio by folio
 * instead, that does not happen, and the counters say so.
 */
TEST(large_cold_reads_split_bios)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct counters before, after;
	char *path;

	path = make_verity_file("bios");
	fs_unmount();
	fs_mount();
	read_counters(&before);
	read_all(path);
	read_counters(&after);
	note("%ld CPUs; %llu bio shares queued", cpus,
	     delta(&before, &after, SHARES));
	CHECK(delta(&before, &after, DATA) == data_blocks());
	CHECK(delta(&before, &after, FAILURES) == 0);
	if (!verifies_bios()) {
		CHECK(delta(&before, &after, SHARES) == 0);
		return;
	}
	if (cpus > 1)
		CHECK(delta(&before, &after, SHARES) > 0);
	else
		CHECK(delta(&before, &after, SHARES) == 0);
}

/*
 * Each mount has its own directory, gone at unmount: make ext4 and btrfs
 * in turn on the spare disk (both are named after it, but btrfs's device
 * number is an anonymous one that changes, all the more with another
 * anonymous mount in between), use verity once on each, unmount.
 */
#define SPARE_DEV	"/dev/vde"
#define SPARE_MNT	"/mnt/stats-cycle"
#define ANON_MNT	"/mnt/stats-anon"
/* fsv.cycles=<n>; make check's 50 */
#define MOUNT_CYCLES	cmdline_int("fsv.cycles=", 200)

static void spare_mkfs(const char *fs)
{
	char out[4096];
	int err;

	if (!strcmp(fs, "ext4"))
		err = run_cmd(out, sizeof(out),
			      "mkfs.ext4 -q -F -b 4096 -O verity -E nodiscard %s 64M",
			      SPARE_DEV);
	else
		err = run_cmd(out, sizeof(out), "mkfs.btrfs -q -f -K %s",
			      SPARE_DEV);
	if (err)
		fail("mkfs.%s %s: %s", fs, SPARE_DEV, out);
}

static unsigned long long spare_counter(const char *name)
{
	char path[128];
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/fs/verity/vde/%s", name);
	f = fopen(path, "r");
	if (!f)
		fail("%s: %s", path, strerror(errno));
	if (fscanf(f, "%llu", &v) != 1)
		fail("%s: not a number", path);
	fclose(f);
	return v;
}

TEST_TIMEOUT(mount_cycles_keep_one_directory_per_live_filesystem, 900)
{
	char *file = SPARE_MNT "/f";
	int i, cycles = MOUNT_CYCLES;

	stats_dir();
	if (strcmp(env.fs, "ext4"))
		skip("filesystem independent: runs in the ext4 pass only");
	mkdir(SPARE_MNT, 0755);
	mkdir(ANON_MNT, 0755);
	umount(SPARE_MNT);	/* in case an earlier run failed midway */
	umount(ANON_MNT);
	for (i = 0; i < cycles; i++) {
		const char *fs = i % 2 ? "btrfs" : "ext4";

		spare_mkfs(fs);
		if (i % 4 == 1)
			CHECK_OK(mount("anon", ANON_MNT, "tmpfs", 0, NULL));
		CHECK_OK(mount(SPARE_DEV, SPARE_MNT, fs, 0, NULL));
		if (!access("/sys/fs/verity/vde", F_OK))
			fail("cycle %d: /sys/fs/verity/vde exists before verity was used",
			     i);
		make_file(file, 65536, i);
		if (enable_verity_path(file, FS_VERITY_HASH_ALG_SHA256, 12,
				       NULL, 0))
			fail("cycle %d: enable on %s failed", i, fs);
		if (spare_counter("enables") != 1)
			fail("cycle %d (%s): enables = %llu, want 1 on a fresh mount",
			     i, fs, spare_counter("enables"));
		CHECK_OK(umount(SPARE_MNT));
		if (i % 4 == 3)
			CHECK_OK(umount(ANON_MNT));
		if (!access("/sys/fs/verity/vde", F_OK))
			fail("cycle %d (%s): /sys/fs/verity/vde outlived the unmount",
			     i, fs);
	}
	umount(ANON_MNT);
	note("%d mounts, alternating ext4 and btrfs on %s", cycles,
	     SPARE_DEV);
}

TEST(tracepoints_report_enable_and_verification)
{
	char *path;

	if (access(TRACEFS "/events/fsverity", F_OK))
		skip("no events/fsverity: kernel without fs-verity tracepoints");
	put_str(TRACEFS "/trace", "");
	put_str(TRACEFS "/events/fsverity/enable", "1");

	path = make_verity_file("trace");
	fs_unmount();
	fs_mount();
	read_all(path);

	put_str(TRACEFS "/events/fsverity/enable", "0");
	note("events: %llu data verified, %llu tree hashed, %llu hits, %llu misses",
	     trace_count("fsverity_data_verified:", NULL),
	     trace_count("fsverity_tree_block_hashed:", NULL),
	     trace_count("fsverity_cache_hit:", NULL),
	     trace_count("fsverity_cache_miss:", NULL));
	CHECK(trace_count("fsverity_enable_start:", NULL) == 1);
	CHECK(trace_count("fsverity_enable_end:", NULL) == 1);
	CHECK(trace_count("fsverity_data_verified:", NULL) == data_blocks());
	CHECK(trace_count("fsverity_tree_block_hashed:", NULL) >= tree_blocks());
	CHECK(trace_count("fsverity_cache_miss:", NULL) >= tree_blocks());
	CHECK(trace_count("fsverity_cache_hit:", NULL) >=
	      data_blocks() - tree_blocks());
	CHECK(trace_count("fsverity_verify_failed:", NULL) == 0);
	put_str(TRACEFS "/trace", "");
}
