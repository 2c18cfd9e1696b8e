// SPDX-License-Identifier: GPL-2.0
/*
 * Sparse Merkle trees.  A run of zeroes spanning a whole lowest-level tree
 * block makes a tree block that is the digest of a zero data block,
 * repeated.  XFS does not store such a block when it is one filesystem
 * block in size, and reads it back filled in (the rule of the upstream
 * XFS posting, v11); every other filesystem, and XFS with tree blocks
 * smaller than its own, stores every block.
 *
 *  - zero runs aligned and not aligned to a lowest-level block's span, a
 *    file of zeroes, a sparse file, zeroes at the end (the tree's last
 *    block a hole) and a one-block tree that is a hole; both algorithms,
 *    salts and every tree block size the filesystem takes: the digest is
 *    fsverity-utils'; on XFS, FIEMAP maps every tree block except those
 *    the rule leaves out, and the device holds the stored ones;
 *    FS_IOC_READ_VERITY_METADATA returns the whole tree as fsverity-utils
 *    builds it, the filled-in blocks too, right after the enable and from
 *    disk; tree_blocks_zero_filled counts each filled-in block once (and
 *    stays put elsewhere, where nothing is left out); cold reads verify;
 *    the filesystem checker is clean;
 *  - data that is not zeroes under a block of zero-block digests fails its
 *    read (EIO), whether that block was stored or filled in;
 *  - reads that cross EOF while the tree is written leave it intact.
 */
#include "vutil.h"

#include <linux/fiemap.h>
#include <linux/fsverity.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define START_ALIGN	65536	/* XFS and ext4: the tree's alignment past EOF */
#define EVENTS		TRACEFS "/events/fsverity"

enum kind { ALIGNED, UNALIGNED, ZEROES, SPARSE, TAIL, ONE_SPAN, NR_KINDS };

static const char * const kind_names[] = {
	"aligned-zero-run", "unaligned-zero-run", "all-zeroes", "sparse",
	"zero-tail", "one-span-of-zeroes",
};

/* the tree parameters tried, where the filesystem takes the block size */
static const struct params {
	int alg, bs, salt;
} params[] = {
	{ FS_VERITY_HASH_ALG_SHA256, 4096, 0 },
	{ FS_VERITY_HASH_ALG_SHA512, 4096, 16 },
	{ FS_VERITY_HASH_ALG_SHA256, 2048, 0 },
	{ FS_VERITY_HASH_ALG_SHA256, 1024, 7 },
	{ FS_VERITY_HASH_ALG_SHA512, 1024, 32 },
};
#define NR_PARAMS	(sizeof(params) / sizeof(params[0]))

static bool is_xfs(void)
{
	return !strncmp(env.fs, "xfs", 3);
}

static uint32_t fs_block_size(void)
{
	struct statfs st;

	CHECK_OK(statfs(env.mnt, &st));
	return st.f_bsize;
}

/* Bytes of data that one lowest-level tree block covers */
static uint64_t span(const struct params *p)
{
	return (uint64_t)p->bs / alg_digest_size(p->alg) * p->bs;
}

/*
 * Write the file of @kind for @p at @path; return its contents (malloc'd)
 * and size.  Zeroes are written as zeroes except in SPARSE, which is mostly
 * holes.
 */
static unsigned char *make_kind(const char *path, enum kind kind,
				const struct params *p, size_t *size)
{
	const uint64_t s = span(p);
	unsigned char *data;
	int fd;

	switch (kind) {
	case ALIGNED:		/* data, two spans of zeroes, a little data */
		*size = 3 * s + 777;
		data = random_buf(*size, 0x5a1 + p->bs);
		memset(data + s, 0, 2 * s);
		break;
	case UNALIGNED:		/* zeroes from mid-span, one whole span */
		*size = 3 * s + 1234;
		data = random_buf(*size, 0x5a2 + p->bs);
		memset(data + s / 2 + 100, 0, 2 * s);
		break;
	case ZEROES:		/* zeroes, the last span partial */
		*size = 4 * s + 5000;
		data = calloc(1, *size);
		CHECK(data);
		break;
	case TAIL:		/* the tree's last block is a hole */
		*size = 2 * s;
		data = random_buf(*size, 0x5a3 + p->bs);
		memset(data + s, 0, s);
		break;
	case ONE_SPAN:		/* a tree of one block, a hole */
		*size = s;
		data = calloc(1, *size);
		CHECK(data);
		break;
	default:		/* holes around 10000 bytes of data mid-span */
		*size = 5 * s + 3000;
		data = calloc(1, *size);
		CHECK(data);
		fill_random(data + 5 * s / 2, 10000, 0x5a4 + p->bs);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		CHECK_OK(fd);
		CHECK_OK(ftruncate(fd, *size));
		CHECK(pwrite(fd, data + 5 * s / 2, 10000, 5 * s / 2) == 10000);
		CHECK_OK(close(fd));
		return data;
	}
	write_file(path, data, *size);
	return data;
}

/* Is the tree block at @b every digest the zero-block digest @zero? */
static bool zero_hashes(const unsigned char *b, int bs, const unsigned char *zero,
			int ds)
{
	for (int i = 0; i < bs; i += ds)
		if (memcmp(b + i, zero, ds))
			return false;
	return true;
}

/* The salted digest of a zero block: the root hash of a one-block file */
static void zero_digest(const struct params *p, unsigned char *out)
{
	const char *zpath = "/tmp/sparse-zero-block";
	unsigned char desc[256], *tree, *z = calloc(1, p->bs);
	size_t tree_size;

	CHECK(z);
	write_file(zpath, z, p->bs);
	ref_metadata(zpath, p->alg, p->bs, p->salt, &tree, &tree_size, desc);
	CHECK(tree_size == 0);
	memcpy(out, desc + 16, alg_digest_size(p->alg));	/* root_hash */
	unlink(zpath);
	free(tree);
	free(z);
}

/* FIEMAP: which of @n blocks of @bs bytes from @start are mapped */
static void mapped_blocks(const char *path, uint64_t start, int bs,
			  uint64_t n, bool *mapped)
{
	struct fiemap_extent fe[128];
	uint64_t pos = start, end = start + n * bs;
	unsigned int got;

	memset(mapped, 0, n * sizeof(*mapped));
	while (pos < end &&
	       (got = fiemap_extents(path, pos, end - pos, FIEMAP_FLAG_SYNC,
				     fe, 128))) {
		for (unsigned int i = 0; i < got; i++)
			for (uint64_t b = fe[i].fe_logical;
			     b < fe[i].fe_logical + fe[i].fe_length; b += bs)
				if (b >= start && b < end)
					mapped[(b - start) / bs] = true;
		if (fe[got - 1].fe_flags & FIEMAP_EXTENT_LAST)
			break;
		pos = fe[got - 1].fe_logical + fe[got - 1].fe_length;
	}
}

/* FS_IOC_READ_VERITY_METADATA of the whole tree (malloc'd) */
static unsigned char *kernel_tree(const char *path, size_t tree_size)
{
	unsigned char *buf = malloc(tree_size + 1);
	struct fsverity_read_metadata_arg arg = {
		.metadata_type = FS_VERITY_METADATA_TYPE_MERKLE_TREE,
		.length = tree_size + 1,
	};
	int fd = open(path, O_RDONLY);
	ssize_t n;

	CHECK(buf);
	CHECK_OK(fd);
	arg.buf_ptr = (uintptr_t)buf;
	n = ioctl(fd, FS_IOC_READ_VERITY_METADATA, &arg);
	if (n != (ssize_t)tree_size)
		fail("%s: FS_IOC_READ_VERITY_METADATA of the tree: %zd (%s), want %zu bytes",
		     path, n, n < 0 ? strerror(errno) : "short", tree_size);
	close(fd);
	return buf;
}

/* A file made and enabled, and what fsverity-utils says it must be */
struct made {
	char *path;
	const struct params *p;
	unsigned char *data;
	size_t size;
};

/*
 * The stored tree of @f, checked against fsverity-utils' after a remount:
 * the holes on the device, the blocks read back.  Returns the number of
 * blocks the rule leaves out.
 */
static uint64_t check_tree(const struct made *f)
{
	const struct params *p = f->p;
	const int ds = alg_digest_size(p->alg);
	const bool sparse_rule = is_xfs() && (uint32_t)p->bs == fs_block_size();
	unsigned char desc[256], zero[64], *tree, *got;
	char want[160], have[160];
	uint64_t meta = (f->size + START_ALIGN - 1) / START_ALIGN * START_ALIGN;
	uint64_t nblocks, holes = 0;
	long long before, after;
	size_t tree_size;
	bool *mapped;
	int alg;

	/* the first reads of the file since the remount start here */
	before = verity_counter("tree_blocks_zero_filled");
	user_digest_hex(f->path, p->alg, p->bs, p->salt, want);
	kernel_digest_hex(f->path, have, &alg);
	if (strcmp(want, have))
		fail("%s: digest %s, fsverity digest says %s", f->path, have, want);

	ref_metadata(f->path, p->alg, p->bs, p->salt, &tree, &tree_size, desc);
	zero_digest(p, zero);
	nblocks = tree_size / p->bs;
	mapped = calloc(nblocks + 1, sizeof(*mapped));
	CHECK(mapped);
	if (is_xfs())
		mapped_blocks(f->path, meta, p->bs, nblocks, mapped);
	for (uint64_t i = 0; i < nblocks; i++) {
		const unsigned char *b = tree + i * p->bs;
		bool hole = sparse_rule && zero_hashes(b, p->bs, zero, ds);

		holes += hole;
		if (!is_xfs())
			continue;
		if (hole && mapped[i])
			fail("%s: tree block %" PRIu64 " (at %" PRIu64 ") is zero-block digests but stored",
			     f->path, i, meta + i * p->bs);
		if (!hole && !mapped[i])
			fail("%s: tree block %" PRIu64 " (at %" PRIu64 ") is %s, but a hole",
			     f->path, i, meta + i * p->bs,
			     zero_hashes(b, p->bs, zero, ds) ?
			     "zero-block digests smaller than a filesystem block" :
			     "not zero-block digests");
		if (!hole) {
			unsigned char blk[4096];
			uint64_t phys = phys_offset(f->path, meta + i * p->bs);
			int fd = open(env.dev, O_RDONLY);

			CHECK_OK(fd);
			CHECK(pread(fd, blk, p->bs, phys) == p->bs);
			close(fd);
			if (memcmp(blk, b, p->bs))
				fail("%s: tree block %" PRIu64 " on the device is not fsverity-utils'",
				     f->path, i);
		}
	}

	got = kernel_tree(f->path, tree_size);
	check_contents(f->path, f->data, f->size);
	after = verity_counter("tree_blocks_zero_filled");
	for (uint64_t i = 0; i < nblocks; i++)
		if (memcmp(got + i * p->bs, tree + i * p->bs, p->bs))
			fail("%s: FS_IOC_READ_VERITY_METADATA: tree block %" PRIu64 " (%s) is not fsverity-utils'",
			     f->path, i, mapped[i] || !is_xfs() ? "stored" : "a hole");
	/* each hole filled in once: the tree stays cached between reads */
	if (before >= 0 && after - before != (long long)holes)
		fail("%s: tree_blocks_zero_filled moved by %lld reading a tree with %" PRIu64 " holes",
		     f->path, after - before, holes);
	free(mapped);
	free(tree);
	free(got);
	return holes;
}

/*
 * Every kind of file with every tree the filesystem takes: made, enabled,
 * read, remounted (the tree from the device, not the cache), and checked.
 */
TEST_TIMEOUT(tree_blocks_of_zero_digests_are_holes_exactly_where_the_rule_says, 600)
{
	struct made files[NR_PARAMS * NR_KINDS];
	unsigned int nr = 0, with_holes = 0;
	char out[4096];

	for (unsigned int i = 0; i < NR_PARAMS; i++) {
		if (block_size_unsupported(params[i].bs))
			continue;
		for (int k = 0; k < NR_KINDS; k++) {
			struct made *f = &files[nr++];

			f->p = &params[i];
			f->path = test_path("%s-%s-%d-%d", kind_names[k],
					    alg_name(f->p->alg), f->p->bs,
					    f->p->salt);
			unlink(f->path);
			f->data = make_kind(f->path, k, f->p, &f->size);
			must_enable(f->path, f->p->alg, f->p->bs, f->p->salt);
		}
	}
	/* the tree at once, as the enable left it in the page cache */
	for (unsigned int i = 0; i < nr; i++) {
		unsigned char desc[256], *tree, *got;
		size_t tree_size;

		ref_metadata(files[i].path, files[i].p->alg, files[i].p->bs,
			     files[i].p->salt, &tree, &tree_size, desc);
		got = kernel_tree(files[i].path, tree_size);
		if (memcmp(got, tree, tree_size))
			fail("%s: right after the enable, FS_IOC_READ_VERITY_METADATA is not fsverity-utils' tree",
			     files[i].path);
		free(tree);
		free(got);
	}
	fs_unmount();
	fs_mount();
	for (unsigned int i = 0; i < nr; i++) {
		uint64_t holes = check_tree(&files[i]);

		with_holes += holes > 0;
		note("%s: %" PRIu64 " tree blocks not stored", files[i].path,
		     holes);
	}
	/* the premise: on XFS the rule applied to something */
	if (is_xfs() && !with_holes)
		fail("no file got a tree with holes");
	/* with the files there: xfs_repair -n takes the trees' holes */
	if (fs_check(out, sizeof(out)))
		fail("filesystem check with sparse trees: %s", out);
	for (unsigned int i = 0; i < nr; i++) {
		unlink(files[i].path);
		free(files[i].data);
	}
}

/*
 * Zeroes under a block of zero-block digests, changed on the device: the
 * read of that data fails with EIO (on XFS the block is a hole, filled in),
 * the data around it still reads.
 */
TEST_TIMEOUT(nonzero_data_under_a_zero_digest_tree_block_is_eio, 300)
{
	const struct params p = {
		FS_VERITY_HASH_ALG_SHA256, block_size_unsupported(4096) ? 1024 : 4096, 0
	};
	const uint64_t s = span(&p);
	char *path = test_path("zero-run-damaged");
	unsigned char *data, *got;
	long long before;
	size_t size;
	uint64_t phys;
	bool mapped;
	int fd;

	unlink(path);
	data = make_kind(path, ALIGNED, &p, &size);
	must_enable(path, p.alg, p.bs, p.salt);
	if (is_xfs() && (uint32_t)p.bs == fs_block_size()) {
		/* the premise: the leaf over [s, 2s) is a hole */
		uint64_t meta = (size + START_ALIGN - 1) / START_ALIGN * START_ALIGN;
		unsigned char desc[256], *tree;
		size_t tree_size;
		uint64_t leaf;

		ref_metadata(path, p.alg, p.bs, p.salt, &tree, &tree_size, desc);
		leaf = tree_size / p.bs - 4 + 1;	/* 4 leaves: 3 s + 777 */
		mapped_blocks(path, meta + leaf * p.bs, p.bs, 1, &mapped);
		if (mapped)
			fail("%s: the leaf over the zero run (tree block %" PRIu64 ") is stored",
			     path, leaf);
		free(tree);
	}
	phys = phys_offset(path, s + 100);
	fs_unmount();
	flip_byte(env.dev, phys);
	fs_mount();
	before = verity_counter("tree_blocks_zero_filled");
	got = malloc(size);
	CHECK(got);
	fd = open(path, O_RDONLY);
	CHECK_OK(fd);
	CHECK_ERRNO(pread(fd, got, 4096, s), EIO);
	CHECK(pread(fd, got, s, 0) == (ssize_t)s && !memcmp(got, data, s));
	CHECK(pread(fd, got, size - 2 * s, 2 * s) == (ssize_t)(size - 2 * s));
	CHECK(!memcmp(got, data + 2 * s, size - 2 * s));
	close(fd);
	/* on XFS the block the read failed against was a hole, filled in */
	if (is_xfs() && (uint32_t)p.bs == fs_block_size() && before >= 0 &&
	    verity_counter("tree_blocks_zero_filled") <= before)
		fail("%s: no tree block was filled in", path);
	unlink(path);
	free(data);
	free(got);
}

/*
 * A read() that crosses EOF while verity is being enabled looks at the
 * cached pages past EOF, and fills in what is not uptodate there.  With
 * filesystem blocks smaller than a page, a tree page whose stored blocks
 * were written and whose left-out blocks were not is such a page; were
 * its left-out blocks filled with zeroes and kept, the data under them
 * would fail to verify until the page left the cache.  Here a process
 * reads across EOF in a loop while files whose first tree page has holes
 * (64 KiB aligned, so the tree starts at EOF) are enabled; then their data
 * is read again from disk, through the tree as cached.
 */
TEST_TIMEOUT(reads_across_eof_during_enable_leave_the_sparse_tree_intact, 300)
{
	/* 8 leaves: data under the first and last, zeroes between */
	const struct params p = { FS_VERITY_HASH_ALG_SHA256, 1024, 0 };
	const uint64_t s = span(&p), size = 8 * s;
	unsigned char *data = random_buf(size, 0x5a5), *got = malloc(size);
	static unsigned char buf[1 << 16];
	volatile int *stop;
	long long before;
	char first[200] = "";
	int bad = 0;

	CHECK(got);
	memset(data + s, 0, 6 * s);
	stop = mmap(NULL, sizeof(*stop), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(stop != MAP_FAILED);
	before = verity_counter("tree_blocks_zero_filled");
	for (int round = 0; round < 20; round++) {
		char *path = test_path("eof-race-%d", round);
		pid_t pid;
		int fd, st;

		unlink(path);
		write_file(path, data, size);
		*stop = 0;
		pid = fork();
		CHECK_OK(pid);
		if (!pid) {
			fd = open(path, O_RDONLY);
			CHECK_OK(fd);
			while (!*stop)
				if (pread(fd, buf, sizeof(buf), size - 4096) < 0)
					_exit(1);
			_exit(0);
		}
		must_enable(path, p.alg, p.bs, p.salt);
		*stop = 1;
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st) && !WEXITSTATUS(st));
		/* the data again from disk, checked against the cached tree */
		fd = open(path, O_RDONLY);
		CHECK_OK(fd);
		fadvise_or_fail(fd, 0, size, POSIX_FADV_DONTNEED);
		for (uint64_t off = 0; off < size; off += 4096) {
			ssize_t n = pread(fd, got + off, 4096, off);

			if (n == 4096 && !memcmp(got + off, data + off, n))
				continue;
			if (!bad++)
				snprintf(first, sizeof(first),
					 "round %d: %s at %" PRIu64 " (zero-filled span %" PRIu64 "-%" PRIu64 ")",
					 round, n < 0 ? strerror(errno) :
					 "wrong data", off, s, 7 * s);
			break;
		}
		close(fd);
		unlink(path);
		free(path);
	}
	if (bad)
		fail("%d of 20 rounds read wrong after the enable; %s", bad,
		     first);
	if (is_xfs() && fs_block_size() == 1024 &&
	    verity_counter("tree_blocks_zero_filled") <= before)
		fail("no tree block was filled in: the files had no holes");
	munmap((void *)stop, sizeof(*stop));
	free(data);
	free(got);
}

/*
 * The trace events show the rule at work: enabling a file of zeroes
 * reports each tree block left out (fsverity_tree_block_not_stored), and
 * reading it cold after a remount each block filled in
 * (fsverity_tree_zero_filled), the blocks tree_blocks_zero_filled counts.
 * Where the rule leaves nothing out, neither fires.
 */
TEST(trace_events_report_each_tree_block_left_out_and_filled_in)
{
	const int bs = block_size_unsupported(fs_block_size()) ? 4096 :
		(int)fs_block_size();
	const struct params p = { FS_VERITY_HASH_ALG_SHA256, bs, 0 };
	/* four leaves of zero-block digests, under one stored block */
	const uint64_t size = 4 * span(&p);
	const unsigned long long want = is_xfs() ? 4 : 0;
	unsigned long long left_out, filled, n_left_out, n_filled;
	unsigned char *zeroes = calloc(1, size);
	char *path = test_path("trace-zeroes");
	long long before, after;

	if (access(EVENTS "/fsverity_tree_zero_filled", F_OK))
		skip("no sparse-tree trace events in this kernel");
	CHECK(zeroes);
	unlink(path);
	write_file(path, zeroes, size);
	put_str(TRACEFS "/trace", "");
	put_str(EVENTS "/fsverity_tree_block_not_stored/enable", "1");
	must_enable(path, p.alg, p.bs, p.salt);
	put_str(EVENTS "/fsverity_tree_block_not_stored/enable", "0");
	n_left_out = trace_count("fsverity_tree_block_not_stored:", &left_out);

	fs_unmount();
	fs_mount();
	before = verity_counter("tree_blocks_zero_filled");
	put_str(TRACEFS "/trace", "");
	put_str(EVENTS "/fsverity_tree_zero_filled/enable", "1");
	check_contents(path, zeroes, size);
	put_str(EVENTS "/fsverity_tree_zero_filled/enable", "0");
	n_filled = trace_count("fsverity_tree_zero_filled:", &filled);
	after = verity_counter("tree_blocks_zero_filled");
	put_str(TRACEFS "/trace", "");
	note("%d-byte tree blocks: %llu left out in %llu events, %llu filled in in %llu events, counter +%lld",
	     bs, left_out / bs, n_left_out, filled / bs, n_filled,
	     after - before);

	if (left_out != want * bs || n_left_out != want)
		fail("fsverity_tree_block_not_stored: %llu events, %llu bytes; want %llu blocks of %d",
		     n_left_out, left_out, want, bs);
	if (filled != want * bs || (want && !n_filled))
		fail("fsverity_tree_zero_filled: %llu events, %llu bytes; want %llu blocks of %d",
		     n_filled, filled, want, bs);
	if (after - before != (long long)want)
		fail("tree_blocks_zero_filled moved by %lld, want %llu",
		     after - before, want);
	unlink(path);
	free(zeroes);
	free(path);
}
