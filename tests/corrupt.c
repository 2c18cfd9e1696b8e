// SPDX-License-Identifier: GPL-2.0
/*
 * Corruption underneath a verity file is caught: flip one byte on the block
 * device (filesystem unmounted) in a data block, a Merkle tree block or the
 * descriptor, mount again, and reads must fail cleanly (read() -> EIO, mmap
 * -> SIGBUS, open fails for an invalid descriptor) while data not covered by
 * the damage still reads correctly.  The host runner fails the test on any
 * kernel splat, so "cleanly" includes "no oops".
 *
 * The bytes are located by searching the raw device for content we know:
 * the file data we wrote, and the Merkle tree and descriptor that
 * "fsverity digest --out-merkle-tree/--out-descriptor" computes for it.
 *
 * btrfs checksums its own data and metadata, which would turn the flip into
 * a btrfs checksum error before fs-verity ever sees it.  So on btrfs the data
 * files are NOCOW (which also means no data checksums), and after flipping a
 * byte inside a metadata leaf (where btrfs keeps the Merkle tree and the
 * descriptor) we recompute the leaf's crc32c: the damage is then invisible
 * to btrfs and only fs-verity can catch it.
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

/* userspace reference outputs live off the tested device */
#define REF_DIR "/tmp"

struct vfile {
	char *path;
	unsigned char *data;	/* expected contents (zeroes in holes) */
	size_t size;
	int bs;
	unsigned char *tree;	/* Merkle tree as fsverity digest wrote it */
	size_t tree_size;
	unsigned char desc[256];
};

static bool is_btrfs(void)
{
	return !strcmp(env.fs, "btrfs");
}

/* ---- btrfs leaf checksum fixup ---- */

static uint32_t le32_at(const unsigned char *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * After the byte at @off was flipped, find the btrfs tree block holding it
 * (the one, starting at most nodesize before @off on a 4 KiB boundary, whose
 * stored crc32c matches its contents once the flip is undone) and store a
 * new checksum over the modified contents.
 */
static void btrfs_fix_csum(uint64_t off)
{
	unsigned char sb[4096], *node;
	uint32_t nodesize;
	int fd = open(env.dev, O_RDWR);

	CHECK_OK(fd);
	CHECK(pread(fd, sb, sizeof(sb), 65536) == sizeof(sb));
	if (memcmp(sb + 64, "_BHRfS_M", 8))
		fail("no btrfs superblock on %s", env.dev);
	if (sb[196] | sb[197])
		skip("btrfs checksum type %d is not crc32c", sb[196] | sb[197] << 8);
	nodesize = le32_at(sb + 148);
	node = malloc(nodesize);
	CHECK(node);
	for (uint64_t back = 0; back < nodesize && back <= (off & ~4095ULL); back += 4096) {
		uint64_t start = (off & ~4095ULL) - back;
		uint32_t good, now;

		if (pread(fd, node, nodesize, start) != nodesize)
			continue;
		now = crc32c(0, node + 32, nodesize - 32);
		node[off - start] ^= 0xff;	/* as it was before the flip */
		good = crc32c(0, node + 32, nodesize - 32);
		node[off - start] ^= 0xff;
		if (le32_at(node) != good)
			continue;
		memset(node, 0, 32);
		memcpy(node, &now, 4);	/* x86: little endian, as on disk */
		CHECK(pwrite(fd, node, 32, start) == 32);
		CHECK_OK(fsync(fd));
		close(fd);
		free(node);
		return;
	}
	fail("byte %" PRIu64 " of %s is in no btrfs tree block", off, env.dev);
}

/* ---- setup ---- */

static void ref_outputs(struct vfile *v, int alg)
{
	char out[512], tpath[256], dpath[256];
	size_t dlen;
	unsigned char *d;
	int rc;

	mkdir(REF_DIR, 0755);
	snprintf(tpath, sizeof(tpath), REF_DIR "/corrupt-tree");
	snprintf(dpath, sizeof(dpath), REF_DIR "/corrupt-desc");
	rc = run_cmd(out, sizeof(out),
		     "fsverity digest --hash-alg=%s --block-size=%d "
		     "--out-merkle-tree=%s --out-descriptor=%s '%s'",
		     alg_name(alg), v->bs, tpath, dpath, v->path);
	if (rc)
		fail("fsverity digest: %s", out);
	v->tree = read_whole(tpath, &v->tree_size);
	d = read_whole(dpath, &dlen);
	CHECK(dlen == 256);
	memcpy(v->desc, d, 256);
	free(d);
	unlink(tpath);
	unlink(dpath);
}

/* Create the (empty) file, NOCOW on btrfs so btrfs keeps no data csums. */
static int create_file(const char *path)
{
	int fd, flags = FS_NOCOW_FL;

	unlink(path);
	fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
	CHECK_OK(fd);
	if (is_btrfs() && ioctl(fd, FS_IOC_SETFLAGS, &flags))
		fail("btrfs: chattr +C: %s", strerror(errno));
	return fd;
}

/*
 * A verity file of @size bytes where the ranges [i*stride, i*stride + @dlen)
 * hold random data and everything else is a hole (stride = dlen = size for a
 * fully written file).
 */
static struct vfile make_vfile(const char *name, size_t size, size_t stride,
			       size_t dlen, int bs, uint64_t seed)
{
	struct vfile v = { .size = size, .bs = bs };
	int fd;

	v.path = test_path("%s-bs%d", name, bs);
	v.data = calloc(1, size);
	CHECK(v.data);
	fd = create_file(v.path);
	for (size_t o = 0; o < size; o += stride) {
		size_t n = dlen < size - o ? dlen : size - o;

		fill_random(v.data + o, n, seed + o);
		CHECK(pwrite(fd, v.data + o, n, o) == (ssize_t)n);
	}
	CHECK_OK(ftruncate(fd, size));
	CHECK_OK(fsync(fd));
	close(fd);
	ref_outputs(&v, FS_VERITY_HASH_ALG_SHA256);
	must_enable(v.path, FS_VERITY_HASH_ALG_SHA256, bs, 0);
	return v;
}

/*
 * With the filesystem unmounted, flip byte @delta of every copy of @pat on
 * the device (btrfs keeps metadata twice), then mount again.
 */
static void corrupt_pattern(const void *pat, size_t len, size_t align,
			    size_t delta, const char *what)
{
	uint64_t offs[16];
	int n;

	fs_unmount();
	n = dev_find(env.dev, pat, len, is_btrfs() && align > 1 &&
		     strcmp(what, "data") ? 1 : align, offs, 16);
	if (n < 1 || n > 16) {
		fs_mount();
		fail("%s: found %d copies on %s", what, n, env.dev);
	}
	for (int i = 0; i < n; i++) {
		flip_byte(env.dev, offs[i] + delta);
		if (is_btrfs() && strcmp(what, "data"))
			btrfs_fix_csum(offs[i] + delta);
	}
	fs_mount();
}

static void corrupt_data(const struct vfile *v, size_t file_off)
{
	/* any data block starts 512-aligned on the device */
	size_t start = file_off & ~511UL;

	corrupt_pattern(v->data + start, 64, 512, file_off - start, "data");
}

static void corrupt_tree_block(const struct vfile *v, size_t tree_block)
{
	size_t off = tree_block * v->bs;

	CHECK(off + v->bs <= v->tree_size);
	corrupt_pattern(v->tree + off, 64, 512, 5, "Merkle tree block");
}

/* ---- checks ---- */

static int read_errno(int fd, size_t off, size_t len)
{
	unsigned char *buf = malloc(len);
	ssize_t n;

	CHECK(buf);
	n = pread(fd, buf, len, off);
	free(buf);
	return n < 0 ? errno : 0;
}

/* pread of [off, off+len) must return the expected bytes. */
static void expect_good(int fd, const struct vfile *v, size_t off, size_t len)
{
	unsigned char *buf = malloc(len);
	ssize_t n;

	CHECK(buf);
	n = pread(fd, buf, len, off);
	if (n != (ssize_t)len)
		fail("read [%zu, +%zu) outside the damage: %s", off, len,
		     n < 0 ? strerror(errno) : "short read");
	if (memcmp(buf, v->data + off, len))
		fail("read [%zu, +%zu): wrong data", off, len);
	free(buf);
}

/*
 * A read spanning damaged data stops before it: like any read() error after
 * some bytes were copied, it returns the good bytes before the damage (or
 * fails with EIO if there are none), and never bytes from @bad on.
 */
static void expect_short(int fd, const struct vfile *v, size_t off, size_t len,
			 size_t bad)
{
	unsigned char *buf = malloc(len);
	ssize_t n;

	CHECK(buf);
	n = pread(fd, buf, len, off);
	if (n < 0 && errno != EIO)
		fail("read [%zu, +%zu) across damage at %zu: %s", off, len, bad,
		     strerror(errno));
	if (n < 0 && bad > off)
		note("read across the damage failed without returning the %zu good bytes before it",
		     bad - off);
	if (n > (ssize_t)(bad - off))
		fail("read [%zu, +%zu) returned %zd bytes, past the damage at %zu",
		     off, len, n, bad);
	if (n > 0 && memcmp(buf, v->data + off, n))
		fail("read [%zu, +%zu): wrong data before the damage", off, len);
	free(buf);
}

static void expect_eio(int fd, size_t off, size_t len, const char *what)
{
	int err = read_errno(fd, off, len);

	if (err != EIO)
		fail("read of %s at %zu: got %s, expected EIO", what, off,
		     err ? errno_name(err) : "success");
}

/* Touch one byte of a mapping in a child; returns the signal or 0. */
static int mmap_touch_signal(const char *path, size_t size, size_t off)
{
	int status;
	pid_t pid = fork();

	CHECK_OK(pid);
	if (pid == 0) {
		int fd = open(path, O_RDONLY);
		volatile unsigned char *m;

		signal(SIGBUS, SIG_DFL);
		if (fd < 0)
			_exit(2);
		m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			_exit(3);
		(void)m[off];
		_exit(0);
	}
	CHECK_OK(waitpid(pid, &status, 0));
	if (WIFEXITED(status) && WEXITSTATUS(status))
		fail("mmap child failed (%d)", WEXITSTATUS(status));
	return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static int page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

/* The largest and the smallest Merkle block size this fs supports. */
static int test_block_sizes(int out[2])
{
	int n = 0;

	if (!block_size_unsupported(4096))
		out[n++] = 4096;
	out[n++] = 1024;
	return n;
}

#define DATA_FILE_SIZE (256 * 1024)
#define BAD_PAGE 20	/* the page whose data we damage */

TEST_TIMEOUT(corrupt_data_block_read_is_eio_rest_reads_fine, 300)
{
	int bss[2], nbs = test_block_sizes(bss);

	for (int i = 0; i < nbs; i++) {
		int ps = page_size(), bs = bss[i], fd;
		/* the second Merkle block of the page (the page itself if equal) */
		size_t bad = BAD_PAGE * ps + (bs < ps ? bs : 0) + 100;
		struct vfile v = make_vfile("data-read", DATA_FILE_SIZE,
					    DATA_FILE_SIZE, DATA_FILE_SIZE, bs,
					    100 + i);

		corrupt_data(&v, bad);
		fd = open(v.path, O_RDONLY);
		CHECK_OK(fd);
		expect_eio(fd, bad & ~(size_t)(bs - 1), bs, "the damaged block");
		expect_eio(fd, bad - 100, 1, "the damaged block");
		expect_short(fd, &v, 0, DATA_FILE_SIZE,
			     bad & ~(size_t)(bs - 1));
		/* every other page is intact, in any order */
		for (size_t p = DATA_FILE_SIZE / ps; p-- > 0;)
			if (p != BAD_PAGE)
				expect_good(fd, &v, p * ps, ps);
		expect_eio(fd, BAD_PAGE * ps, ps, "the damaged page again");
		close(fd);
	}
}

TEST_TIMEOUT(corrupt_data_block_mmap_is_sigbus, 300)
{
	int bss[2], nbs = test_block_sizes(bss);

	for (int i = 0; i < nbs; i++) {
		int ps = page_size(), bs = bss[i], sig;
		size_t bad = BAD_PAGE * ps + 333;
		struct vfile v = make_vfile("data-mmap", DATA_FILE_SIZE,
					    DATA_FILE_SIZE, DATA_FILE_SIZE, bs,
					    200 + i);

		corrupt_data(&v, bad);
		sig = mmap_touch_signal(v.path, v.size, bad);
		if (sig != SIGBUS)
			fail("bs %d: touching the damaged page gave signal %d, expected SIGBUS",
			     bs, sig);
		sig = mmap_touch_signal(v.path, v.size, 2 * ps + 1);
		if (sig)
			fail("bs %d: touching an intact page gave signal %d",
			     bs, sig);
	}
}

/* Readahead (fadvise, readahead(2)) must not let damaged data through. */
TEST_TIMEOUT(corrupt_data_block_detected_after_readahead, 300)
{
	int bss[2], nbs = test_block_sizes(bss);

	for (int i = 0; i < nbs; i++) {
		int ps = page_size(), bs = bss[i], fd;
		size_t bad = BAD_PAGE * ps + 1;
		struct vfile v = make_vfile("data-ra", DATA_FILE_SIZE,
					    DATA_FILE_SIZE, DATA_FILE_SIZE, bs,
					    300 + i);

		corrupt_data(&v, bad);
		fd = open(v.path, O_RDONLY);
		CHECK_OK(fd);
		fadvise_or_fail(fd, 0, 0, POSIX_FADV_WILLNEED);
		CHECK_OK(readahead(fd, 0, DATA_FILE_SIZE));
		usleep(200000);	/* let the readahead I/O complete */
		expect_eio(fd, BAD_PAGE * ps, ps, "the damaged page");
		expect_good(fd, &v, 0, ps);
		expect_good(fd, &v, (BAD_PAGE + 1) * ps, ps);
		expect_good(fd, &v, DATA_FILE_SIZE - ps, ps);
		close(fd);
	}
}

/*
 * A large cold sequential read: readahead brings the data in bios of many
 * pages, which may be split into shares verified on several CPUs, and the
 * tree pages come in with them.  Damage far from the start of a bio, in
 * what would be its second or a later share, must still fail exactly the
 * damaged pages.  Pages 31, 62 and 301 lie in the second half of every
 * aligned power-of-two window of 128 KiB or more that holds them.
 */
#define BIG_FILE_SIZE (2 * 1024 * 1024)

TEST_TIMEOUT(corrupt_pages_late_in_large_reads_are_eio, 300)
{
	static const size_t bad_pages[] = { 31, 62, 301 };
	const size_t nbad = sizeof(bad_pages) / sizeof(bad_pages[0]);
	int bss[2], ps = page_size(), fd;
	struct vfile v;
	size_t p, i;

	test_block_sizes(bss);
	v = make_vfile("data-large", BIG_FILE_SIZE, BIG_FILE_SIZE,
		       BIG_FILE_SIZE, bss[0], 500);
	for (i = 0; i < nbad; i++)
		corrupt_data(&v, bad_pages[i] * ps + 7);
	fd = open(v.path, O_RDONLY);
	CHECK_OK(fd);
	fadvise_or_fail(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	expect_short(fd, &v, 0, BIG_FILE_SIZE, bad_pages[0] * ps);
	for (p = 0, i = 0; p < (size_t)(BIG_FILE_SIZE / ps); p++) {
		if (i < nbad && p == bad_pages[i]) {
			expect_eio(fd, p * ps, ps, "a damaged page");
			i++;
		} else {
			expect_good(fd, &v, p * ps, ps);
		}
	}
	close(fd);
}

/*
 * Damage a level-0 (leaf) tree block: all data it covers, holes included,
 * fails with EIO, and data under the other tree blocks reads fine.  Each
 * leaf block covers (bs / 32) data blocks; the file spans four of them and
 * holds random data only in the first data block of each, the rest being
 * holes (which also makes each tree block unique on the device).
 */
TEST_TIMEOUT(corrupt_tree_block_fails_covered_reads_including_holes, 300)
{
	int bss[2], nbs = test_block_sizes(bss);

	for (int i = 0; i < nbs; i++) {
		int ps = page_size(), bs = bss[i], fd, sig;
		size_t span = (size_t)(bs / 32) * bs;	/* data per leaf block */
		struct vfile v = make_vfile("tree", 4 * span, span, bs, bs,
					    400 + i);

		/* tree: [root][leaf 0][leaf 1][leaf 2][leaf 3] */
		if (v.tree_size != 5 * (size_t)bs)
			fail("bs %d: reference tree is %zu bytes, expected %d",
			     bs, v.tree_size, 5 * bs);
		corrupt_tree_block(&v, 1 + 2);
		fd = open(v.path, O_RDONLY);
		CHECK_OK(fd);
		expect_eio(fd, 2 * span, bs, "data under the damaged tree block");
		expect_eio(fd, 2 * span + span / 2, ps,
			   "a hole under the damaged tree block");
		expect_eio(fd, 3 * span - ps, ps,
			   "the last page under the damaged tree block");
		expect_good(fd, &v, 0, ps);
		expect_good(fd, &v, span / 2, ps);		/* hole */
		expect_good(fd, &v, span, ps);
		expect_good(fd, &v, 3 * span, ps);
		expect_good(fd, &v, 3 * span + span / 2, ps);	/* hole */
		expect_good(fd, &v, 4 * span - ps, ps);
		close(fd);
		sig = mmap_touch_signal(v.path, v.size, 2 * span + span / 2);
		if (sig != SIGBUS)
			fail("bs %d: mmap of a hole under the damaged tree block gave signal %d",
			     bs, sig);
	}
}

/*
 * A read of cold data brings in the tree page it needs, and with blocks
 * smaller than a page the blocks next to the one it needs.  A damaged
 * tree block that came in that way, not yet needed, must still be
 * checked when a later read needs it: the reads under it fail and the
 * reads under its neighbours do not.
 */
TEST_TIMEOUT(corrupt_tree_block_next_to_one_read_earlier_is_eio, 300)
{
	int bss[2], nbs = test_block_sizes(bss);

	for (int i = 0; i < nbs; i++) {
		int ps = page_size(), bs = bss[i], fd;
		size_t span = (size_t)(bs / 32) * bs;	/* data per leaf block */
		/* dense enough under leaf 0 for one readahead-sized bio */
		size_t first = span / 2 < 128 * 1024 ? span / 2 : 128 * 1024;
		struct vfile v = make_vfile("tree-ra", 4 * span, span, first,
					    bs, 450 + i);

		/* tree: [root][leaf 0][leaf 1][leaf 2][leaf 3] */
		corrupt_tree_block(&v, 1 + 1);
		fd = open(v.path, O_RDONLY);
		CHECK_OK(fd);
		/* reads leaf 0, and leaf 1 with it if they share a page */
		expect_good(fd, &v, 0, first);
		expect_eio(fd, span, bs,
			   "data under the read-ahead damaged tree block");
		expect_good(fd, &v, 2 * span, ps);
		expect_good(fd, &v, 3 * span, ps);
		expect_eio(fd, span + span / 2, ps,
			   "a hole under the damaged tree block");
		expect_eio(fd, span, bs,
			   "data under the damaged tree block, again");
		close(fd);
	}
}

static struct vfile make_desc_victim(const char *name, uint64_t seed)
{
	int bs = block_size_unsupported(4096) ? 1024 : 4096;

	return make_vfile(name, 64 * 1024, 64 * 1024, 64 * 1024, bs, seed);
}

/* An invalid descriptor (a reserved byte set) makes open() fail. */
TEST(corrupt_descriptor_reserved_field_fails_open)
{
	struct vfile v = make_desc_victim("desc-reserved", 500);
	int fd;

	/* the pattern covers the root hash (unique); flip __reserved[100] */
	corrupt_pattern(v.desc, 48, 512, 112 + 100, "descriptor");
	fd = open(v.path, O_RDONLY);
	if (fd >= 0) {
		int err = read_errno(fd, 0, 4096);

		close(fd);
		fail("open of a file with a damaged descriptor succeeded (read: %s)",
		     err ? errno_name(err) : "success");
	}
	note("open failed with %s", errno_name(errno));
	/* the name and the inode are fine: stat and unlink work */
	CHECK(path_has_statx_verity(v.path));
	CHECK_OK(unlink(v.path));
}

/*
 * A descriptor whose root hash no longer matches the tree: either open fails
 * or the file measures differently and no data can be read.
 */
TEST(corrupt_descriptor_root_hash_fails_open_or_reads)
{
	struct vfile v = make_desc_victim("desc-root", 600);
	char before[2 * MAX_DIGEST + 1], after[2 * MAX_DIGEST + 1];
	unsigned char d[MAX_DIGEST];
	int fd, alg, size, err;

	kernel_digest_hex(v.path, before, &alg);
	corrupt_pattern(v.desc, 48, 512, 16 + 3, "descriptor");
	fd = open(v.path, O_RDONLY);
	if (fd < 0) {
		note("open failed with %s", errno_name(errno));
		return;
	}
	err = measure_verity(fd, d, &alg, &size);
	if (err)
		fail("open succeeded but MEASURE failed: %s", errno_name(err));
	to_hex(d, size, after);
	if (!strcmp(before, after))
		fail("digest unchanged after the root hash was damaged");
	expect_eio(fd, 0, 4096, "data with a damaged root hash");
	expect_eio(fd, 32768, 4096, "data with a damaged root hash");
	close(fd);
}
