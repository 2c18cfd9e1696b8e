// SPDX-License-Identifier: GPL-2.0
/*
 * Verified reads return exactly the file's data through every read path --
 * read() in odd-sized pieces and in random order, readahead (fadvise and
 * readahead(2)), mmap -- including holes and the zero tail of the last page,
 * for every Merkle tree block size the filesystem supports, with the page
 * cache cold each time.  (That damaged data is refused through these same
 * paths is tests/corrupt.c.  That a verified tree block is not hashed again
 * while it stays cached is proven through our counters, in tests/stats.c.)
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#include <sys/mman.h>

#define SIZE ((1 << 20) + 5000)	/* not a multiple of any block size */

struct vf {
	char *path;
	unsigned char *data;
	size_t size;
};

/*
 * Data in three places -- the start, the middle (not block aligned), and up
 * to the unaligned EOF -- and holes in between.
 */
static struct vf make_sparse(const char *name, int bs, int alg, uint64_t seed)
{
	const struct { size_t off, len; } ext[] = {
		{ 0, 3 * 4096 + 17 },
		{ 300000 + 123, 70000 },
		{ SIZE - 20000, 20000 },
	};
	struct vf v = { .size = SIZE };
	int fd;

	v.path = test_path("%s-bs%d", name, bs);
	v.data = calloc(1, SIZE);
	CHECK(v.data);
	unlink(v.path);
	fd = open(v.path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	CHECK_OK(fd);
	for (int i = 0; i < 3; i++) {
		fill_random(v.data + ext[i].off, ext[i].len, seed + i);
		CHECK(pwrite(fd, v.data + ext[i].off, ext[i].len, ext[i].off) ==
		      (ssize_t)ext[i].len);
	}
	CHECK_OK(fsync(fd));
	close(fd);
	must_enable(v.path, alg, bs, 16);
	return v;
}

/* Run @check on a sparse verity file for each usable block size. */
static void for_each_block_size(const char *name,
				void (*check)(const struct vf *, int bs))
{
	const int bss[] = { 1024, 2048, 4096 };
	int used = 0;

	for (int i = 0; i < 3; i++) {
		struct vf v;

		if (block_size_unsupported(bss[i]))
			continue;
		v = make_sparse(name, bss[i], i & 1 ? FS_VERITY_HASH_ALG_SHA512 :
				FS_VERITY_HASH_ALG_SHA256, 10 * i + 1);
		drop_caches();	/* nothing of it cached: every read verifies */
		check(&v, bss[i]);
		used++;
	}
	if (!used)
		fail("no usable Merkle block size");
}

static void check_read_sequential(const struct vf *v, int bs)
{
	unsigned char *got = malloc(v->size + 3000);
	size_t off = 0;
	ssize_t n;
	int fd = open(v->path, O_RDONLY);

	CHECK(got);
	CHECK_OK(fd);
	while ((n = read(fd, got + off, 2999)) > 0)
		off += n;
	if (n < 0)
		fail("bs %d: read at %zu: %s", bs, off, strerror(errno));
	if (off != v->size || memcmp(got, v->data, v->size))
		fail("bs %d: sequential read() returned wrong data", bs);
	close(fd);
	free(got);
}

TEST(verified_read_returns_file_data)
{
	for_each_block_size("read", check_read_sequential);
}

/* Blocks in a scrambled order, each read cold from the page cache's view. */
static void check_read_random_order(const struct vf *v, int bs)
{
	size_t nblocks = (v->size + bs - 1) / bs;
	unsigned char *buf = malloc(bs);
	int fd = open(v->path, O_RDONLY);

	CHECK(buf);
	CHECK_OK(fd);
	for (size_t i = 0; i < nblocks; i++) {
		size_t b = (i * 7919) % nblocks;	/* 7919 is prime */
		size_t off = b * bs;
		size_t len = off + bs > v->size ? v->size - off : (size_t)bs;

		if (pread(fd, buf, bs, off) != (ssize_t)len)
			fail("bs %d: pread block %zu: %s", bs, b, strerror(errno));
		if (memcmp(buf, v->data + off, len))
			fail("bs %d: block %zu: wrong data", bs, b);
	}
	close(fd);
	free(buf);
}

TEST(verified_random_order_reads_return_file_data)
{
	for_each_block_size("random", check_read_random_order);
}

static void check_readahead(const struct vf *v, int bs)
{
	int fd = open(v->path, O_RDONLY);

	CHECK_OK(fd);
	fadvise_or_fail(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	fadvise_or_fail(fd, 0, v->size / 2, POSIX_FADV_WILLNEED);
	CHECK_OK(readahead(fd, v->size / 2, v->size));
	close(fd);
	check_read_sequential(v, bs);
	/* and once more after dropping just this file's pages */
	fd = open(v->path, O_RDONLY);
	CHECK_OK(fd);
	fadvise_or_fail(fd, 0, 0, POSIX_FADV_DONTNEED);
	CHECK_OK(readahead(fd, 0, v->size));
	close(fd);
	check_read_random_order(v, bs);
}

TEST(verified_readahead_returns_file_data)
{
	for_each_block_size("readahead", check_readahead);
}

static void check_mmap(const struct vf *v, int bs)
{
	long ps = sysconf(_SC_PAGESIZE);
	size_t maplen = (v->size + ps - 1) / ps * ps;
	unsigned char *m;
	int fd = open(v->path, O_RDONLY);

	CHECK_OK(fd);
	m = mmap(NULL, maplen, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED);
	/* touch the pages backwards, so fault-around is not sequential */
	for (size_t off = maplen; off > 0;) {
		off -= ps;
		size_t len = off + ps > v->size ? v->size - off : (size_t)ps;

		if (memcmp(m + off, v->data + off, len))
			fail("bs %d: mmap page at %zu: wrong data", bs, off);
		/* past EOF in the last page: zeroes */
		for (size_t i = len; i < (size_t)ps; i++)
			if (m[off + i])
				fail("bs %d: mmap byte %zu past EOF is %#x", bs,
				     off + i, m[off + i]);
	}
	CHECK_OK(munmap(m, maplen));
	/* and populated up front */
	fadvise_or_fail(fd, 0, 0, POSIX_FADV_DONTNEED);
	m = mmap(NULL, maplen, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
	CHECK(m != MAP_FAILED);
	if (memcmp(m, v->data, v->size))
		fail("bs %d: MAP_POPULATE mapping: wrong data", bs);
	CHECK_OK(munmap(m, maplen));
	close(fd);
}

TEST(verified_mmap_returns_file_data)
{
	for_each_block_size("mmap", check_mmap);
}
