// SPDX-License-Identifier: GPL-2.0
/*
 * Where XFS differs: its fs-verity format and the paths of its own that
 * must not get around verification.
 *
 *  - the format, that of the upstream posting (v4 to v11): the Merkle tree
 *    in the data fork from M = round_up(i_size, 64 KiB), the descriptor
 *    from round_up(M + tree size, 64 KiB), its size as a big-endian u32 in
 *    the last four bytes of the data fork's last block; checked on the
 *    device through FIEMAP against "fsverity digest";
 *  - blocks past EOF: left by a crashed enable, they are removed by the
 *    next one (xfs_repair -n clean after); a killed enable leaves none,
 *    nor pages cached there; an extent size hint changes nothing of the
 *    layout; data may not exceed 2^53 bytes (EFBIG);
 *  - a failed commit of the verity flag (the log shut down during it)
 *    leaves nothing in core claiming verity;
 *  - O_DIRECT reads fall back to buffered ones: verified data, EIO for a
 *    damaged block, holes as verified zeroes; statx offers no direct I/O
 *    alignment for a verity file, also before its first open;
 *  - FIDEDUPERANGE needs no write access: into a verity file it is EPERM;
 *    the COW blocks a reflinked file staged for writes are freed by the
 *    enable;
 *  - the DAX flag cannot be turned on for a verity file (EINVAL);
 *  - statx and FS_IOC_GETFLAGS report the verity attribute; xfs_info
 *    reports the feature from the kernel's XFS_IOC_FSGEOMETRY;
 *  - quota charges the tree's blocks to the file's owner: past a hard
 *    limit the enable fails with EDQUOT and changes nothing (on a spare
 *    XFS on /dev/vde, mounted with user quota), but only after the
 *    preallocation of the owner's other files was freed for it; on a full
 *    filesystem it fails with ENOSPC and changes nothing either.
 *
 * The area runs on the XFS filesystems only (tests/expected-skips).
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */
#include "sig.h"

#include <linux/dqblk_xfs.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/fsverity.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/quota.h>
#include <sys/statvfs.h>

#define START_ALIGN	65536			/* XFS_FSVERITY_START_ALIGN */
#define LARGEST_FILE	((uint64_t)1 << 53)	/* XFS_FSVERITY_LARGEST_FILE */
#ifndef FS_XFLAG_VERITY
#define FS_XFLAG_VERITY	0x00020000	/* our series; mainline after 6.12 */
#endif
/* <xfs/xfs_fs.h>, which the guest's build has no package for */
#define XFS_IOC_GOINGDOWN_			_IOR('X', 125, uint32_t)
#define XFS_FSOP_GOING_FLAGS_NOLOGFLUSH_	0x2

static uint64_t round_up_to(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

/* where the Merkle tree of a file of @size bytes starts */
static uint64_t tree_start(uint64_t size)
{
	return round_up_to(size, START_ALIGN);
}

static void need_xfs(void)
{
	if (strncmp(env.fs, "xfs", 3))
		skip("XFS's own fs-verity paths: tested on xfs and xfs-1k");
}

static uint32_t fs_block_size(void)
{
	struct statfs st;

	CHECK_OK(statfs(env.mnt, &st));
	return st.f_bsize;
}

/* Merkle tree block size: 4096, or the filesystem's smaller blocks */
static int merkle_bs(void)
{
	return block_size_unsupported(4096) ? 1024 : 4096;
}

static void remount(void)
{
	fs_unmount();
	fs_mount();
}

static void dev_read(uint64_t off, void *buf, size_t len)
{
	int fd = open(env.dev, O_RDONLY);

	CHECK_OK(fd);
	if (pread(fd, buf, len, off) != (ssize_t)len)
		fail("pread %s @%" PRIu64 ": %s", env.dev, off, strerror(errno));
	close(fd);
}

/* the file's extents from @start on: count, and the end of the last one */
static int extents_from(const char *path, uint64_t start, uint64_t *end)
{
	struct fiemap_extent fe[64];
	unsigned int n = fiemap_extents(path, start, FIEMAP_MAX_OFFSET - start,
					FIEMAP_FLAG_SYNC, fe, 64);

	if (end && n)
		*end = fe[n - 1].fe_logical + fe[n - 1].fe_length;
	return n;
}

/* device bytes of [logical, logical + len) of the file, extent by extent */
static void read_mapped(const char *path, uint64_t logical, void *buf,
			size_t len)
{
	while (len) {
		struct fiemap_extent fe;
		uint64_t in, n;

		fiemap_extent_at(path, logical, &fe);
		in = logical - fe.fe_logical;
		n = fe.fe_length - in < len ? fe.fe_length - in : len;
		dev_read(fe.fe_physical + in, buf, n);
		buf = (unsigned char *)buf + n;
		logical += n;
		len -= n;
	}
}

static uint32_t be32_at(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

/* xfs_db's "verity" finds the tree at @meta and the descriptor at @desc */
static void xfs_db_says_where(const char *path, uint64_t meta, uint64_t desc)
{
	char out[4096], want[128];
	struct stat st;

	CHECK_OK(stat(path, &st));
	if (run_cmd(out, sizeof(out), "xfs_db -r -c 'inode %llu' -c verity %s",
		    (unsigned long long)st.st_ino, env.dev))
		fail("xfs_db verity: %s", out);
	snprintf(want, sizeof(want), "merkle tree: file offset %" PRIu64 " ", meta);
	if (!strstr(out, want))
		fail("%s: xfs_db does not say \"%s\":\n%s", path, want, out);
	snprintf(want, sizeof(want), "descriptor: file offset %" PRIu64 " ", desc);
	if (!strstr(out, want) || !strstr(out, "descriptor size: 256 bytes"))
		fail("%s: xfs_db does not say \"%s\" of 256 bytes:\n%s", path,
		     want, out);
}

/*
 * The metadata of @p (@size bytes of data), read from the device: @tree
 * at M, the 256-byte @desc at round_up(M + tree size, 64 KiB), its size
 * (be32) at the end of its block, nothing mapped between EOF and M or
 * after the descriptor's block, and xfs_db's "verity" says the same
 */
static void layout_is_right(const char *p, uint64_t size,
			    const unsigned char *tree, size_t tree_size,
			    const unsigned char *desc)
{
	uint64_t meta = tree_start(size), desc_off, end = 0;
	uint32_t fsbs = fs_block_size();
	unsigned char *got = malloc(tree_size), blk[4096];

	CHECK(got);
	read_mapped(p, meta, got, tree_size);
	if (memcmp(got, tree, tree_size))
		fail("%s: the %zu bytes mapped at M = %" PRIu64 " are not the Merkle tree",
		     p, tree_size, meta);
	if (extents_from(p, round_up_to(size, fsbs), NULL) !=
	    extents_from(p, meta, NULL))
		fail("%s: blocks mapped between EOF and M = %" PRIu64, p, meta);
	desc_off = round_up_to(meta + tree_size, START_ALIGN);
	read_mapped(p, desc_off, blk, fsbs);
	if (memcmp(blk, desc, 256))
		fail("%s: no descriptor at round_up(M + %zu, 64 KiB) = %" PRIu64,
		     p, tree_size, desc_off);
	if (be32_at(blk + fsbs - 4) != 256)
		fail("%s: descriptor size (be32, end of its block) is %u",
		     p, be32_at(blk + fsbs - 4));
	extents_from(p, meta, &end);
	if (end != desc_off + fsbs)
		fail("%s: the data fork ends at %" PRIu64
		     ", not after the descriptor's block (%" PRIu64 ")",
		     p, end, desc_off + fsbs);
	xfs_db_says_where(p, meta, desc_off);
	free(got);
}

/*
 * The on-disk format, read back from the device: the tree at
 * M = round_up(size, 64 KiB) exactly as fsverity-utils builds it, the
 * descriptor at round_up(M + tree size, 64 KiB), its size (be32) in the
 * last four bytes of the block holding its end, and nothing mapped after
 * that block; and xfs_db's "verity" says the same.  For both hash
 * algorithms, every tree block size the filesystem takes, and sizes on
 * either side of a 64 KiB boundary, after a remount (the data on disk,
 * not in cache).
 */
TEST_TIMEOUT(ondisk_tree_at_64k_past_eof_then_descriptor_and_be32_size, 300)
{
	const int algs[] = { FS_VERITY_HASH_ALG_SHA256, FS_VERITY_HASH_ALG_SHA512 };
	const int bss[] = { 1024, 2048, 4096 };

	need_xfs();
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 3; b++) {
			char *p = test_path("fmt-%d-%d", a, bss[b]);
			unsigned char desc[256], *tree;
			/* 64 KiB + 1 on one side of a boundary, 300000 inside */
			uint64_t size = b == 1 ? 65537 + a : 300000 + 4096 * b + a;
			size_t tree_size;

			if (block_size_unsupported(bss[b]))
				continue;
			unlink(p);
			make_file(p, size, 0x5f5 + a * 3 + b);
			ref_metadata(p, algs[a], bss[b], 16, &tree, &tree_size, desc);
			must_enable(p, algs[a], bss[b], 16);
			remount();
			layout_is_right(p, size, tree, tree_size, desc);
			free(tree);
			unlink(p);
		}
}

/*
 * A file with an extent size hint of 1 MiB: XFS allocates its data in
 * hint-aligned unwritten extents, past EOF into where the tree goes, and
 * could do the same for the tree's own blocks past the descriptor, where
 * the layout reads the descriptor's size from the fork's last block.  The
 * enable leaves the layout as without the hint, after a remount, and the
 * file measures as fsverity-utils computes.  (Upstream's v11 12/20 fixed
 * the hint's write path losing the metadata's mapping flag.)
 */
TEST_TIMEOUT(an_extent_size_hint_leaves_the_layout_as_without_it, 300)
{
	char *p = test_path("extsize");
	char want[2 * MAX_DIGEST + 1], got_hex[2 * MAX_DIGEST + 1], out[8192];
	const uint64_t size = 300000;
	unsigned char desc[256], *tree, *data = malloc(size);
	struct fsxattr fsx;
	size_t tree_size;
	int fd, alg, past_eof;

	need_xfs();
	CHECK(data != NULL);
	unlink(p);
	fd = CHECK_OK(open(p, O_RDWR | O_CREAT | O_TRUNC, 0644));
	CHECK_OK(ioctl(fd, FS_IOC_FSGETXATTR, &fsx));
	fsx.fsx_xflags |= FS_XFLAG_EXTSIZE;
	fsx.fsx_extsize = 1 << 20;
	CHECK_OK(ioctl(fd, FS_IOC_FSSETXATTR, &fsx));
	fill_random(data, size, 0xe575);
	CHECK(write(fd, data, size) == (ssize_t)size);
	CHECK_OK(fsync(fd));
	past_eof = extents_from(p, round_up_to(size, fs_block_size()), NULL);
	close(fd);
	ref_metadata(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 16, &tree,
		     &tree_size, desc);
	user_digest_hex(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 16, want);
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 16);
	remount();
	CHECK_OK(ioctl(fd = CHECK_OK(open(p, O_RDONLY)), FS_IOC_FSGETXATTR, &fsx));
	close(fd);
	if (!(fsx.fsx_xflags & FS_XFLAG_EXTSIZE) || fsx.fsx_extsize != 1 << 20)
		fail("premise: the extent size hint is gone (xflags 0x%x, extsize %u)",
		     fsx.fsx_xflags, fsx.fsx_extsize);
	layout_is_right(p, size, tree, tree_size, desc);
	kernel_digest_hex(p, got_hex, &alg);
	if (strcmp(got_hex, want))
		fail("digest %s, fsverity digest says %s", got_hex, want);
	check_contents(p, data, size);
	if (fs_check(out, sizeof(out)))
		fail("xfs_repair -n after the enable: %s", out);
	note("%d extent(s) past EOF from the hint before the enable", past_eof);
	free(tree);
	free(data);
	unlink(p);
}

/*
 * Blocks past EOF in the metadata region before an enable (what a crash
 * during an enable leaves, made here with fallocate KEEP_SIZE, also far
 * past where the descriptor goes): the enable removes them, the file
 * measures as fsverity-utils computes, and xfs_repair -n finds nothing.
 */
TEST_TIMEOUT(enable_removes_blocks_left_past_eof, 300)
{
	char *p = test_path("leftover");
	char want[2 * MAX_DIGEST + 1], got[2 * MAX_DIGEST + 1], out[8192];
	int fd, alg, bs = merkle_bs();
	uint64_t end = 0, meta = tree_start(200000);

	need_xfs();
	unlink(p);
	make_file(p, 200000, 0x1ef7);
	fd = open(p, O_RDWR);
	CHECK_OK(fd);
	CHECK_OK(fallocate(fd, FALLOC_FL_KEEP_SIZE, meta, 65536));
	CHECK_OK(fallocate(fd, FALLOC_FL_KEEP_SIZE, meta + (1 << 30), 4096));
	CHECK_OK(fsync(fd));
	close(fd);
	CHECK(extents_from(p, meta, NULL) >= 2);
	user_digest_hex(p, FS_VERITY_HASH_ALG_SHA256, bs, 0, want);
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, bs, 0);
	kernel_digest_hex(p, got, &alg);
	if (strcmp(got, want))
		fail("digest %s, fsverity digest says %s", got, want);
	extents_from(p, meta, &end);
	if (end > meta + (1 << 30))
		fail("the block fallocated at M + 1 GiB is still mapped");
	remount();
	kernel_digest_hex(p, got, &alg);
	if (strcmp(got, want))
		fail("after a remount: digest %s, fsverity digest says %s", got, want);
	if (fs_check(out, sizeof(out)))
		fail("xfs_repair -n after the enable: %s", out);
	CHECK(run_cmd(NULL, 0, "cat '%s' >/dev/null", p) == 0);
	unlink(p);
}

/* more than the tree of 128 MiB of SHA-512 over 1 KiB blocks (8 MiB) */
#define KILLED_TREE_SPAN	(16 << 20)

/*
 * Pages of @fd's page cache in [@off, @off + @len): mincore() over a shared
 * mapping, which may lie past EOF (the guest kernel has no cachestat())
 */
static unsigned long cached_pages(int fd, uint64_t off, size_t len)
{
	size_t pages = len / 4096;
	unsigned char *vec = malloc(pages);
	unsigned long n = 0;
	void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, off);

	CHECK(vec != NULL);
	if (m == MAP_FAILED)
		fail("mmap past EOF: %s", strerror(errno));
	CHECK_OK(mincore(m, len, vec));
	for (size_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	munmap(m, len);
	free(vec);
	return n;
}

/*
 * An enable killed midway, once part of its tree is in the page cache,
 * removes what it wrote past EOF: no blocks there, no pages cached there,
 * no verity flag, xfs_repair -n clean, and the next enable works.
 */
TEST_TIMEOUT(killed_enable_leaves_nothing_past_eof, 600)
{
	char *p = test_path("killed");
	char want[2 * MAX_DIGEST + 1], got[2 * MAX_DIGEST + 1], out[8192];
	int fd, alg, status;
	pid_t pid;

	uint64_t meta = tree_start(128 << 20);
	unsigned long cached = 0;
	double t0;

	need_xfs();
	unlink(p);
	make_file(p, 128 << 20, 0x4b1);
	sync();
	fd = CHECK_OK(open(p, O_RDONLY));
	pid = fork();
	CHECK_OK(pid);
	if (pid == 0) {
		/* SHA-512 over 1 KiB blocks: the slowest tree to build */
		_exit(enable_verity(fd, FS_VERITY_HASH_ALG_SHA512, 10, NULL, 0,
				    NULL, 0));
	}
	/* killed once it has written part of its tree into the page cache */
	t0 = mono_now();
	while (!(cached = cached_pages(fd, meta, KILLED_TREE_SPAN)) &&
	       waitpid(pid, &status, WNOHANG) == 0 && mono_now() - t0 < 120)
		usleep(1000);
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &status, 0) == pid);
	if (WIFEXITED(status))
		fail("the enable ended (status %d) before the kill: the premise needs a bigger file",
		     WEXITSTATUS(status));
	if (!cached)
		fail("premise: no page of the tree was cached before the kill");
	CHECK(!fd_has_verity_flag(fd));
	if (cached_pages(fd, meta, KILLED_TREE_SPAN))
		fail("a killed enable left %lu pages past EOF in the page cache (%lu when killed)",
		     cached_pages(fd, meta, KILLED_TREE_SPAN), cached);
	note("killed with %lu pages of its tree cached past EOF: none left", cached);
	close(fd);
	if (extents_from(p, tree_start(128 << 20), NULL))
		fail("a killed enable left blocks past EOF");
	if (fs_check(out, sizeof(out)))
		fail("xfs_repair -n after a killed enable: %s", out);
	user_digest_hex(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0, want);
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	kernel_digest_hex(p, got, &alg);
	if (strcmp(got, want))
		fail("the enable after the killed one: digest %s, fsverity digest %s",
		     got, want);
	unlink(p);
}

/* Data of 2^53 bytes at most, as the layout says.  EFBIG, file as it was. */
TEST(enable_on_data_beyond_2_pow_53_is_efbig)
{
	char *p = test_path("huge");
	struct fsverity_enable_arg arg;
	struct stat st;
	int fd;

	need_xfs();
	unlink(p);
	fd = open(p, O_CREAT | O_RDWR, 0644);
	CHECK_OK(fd);
	CHECK_OK(pwrite(fd, "x", 1, 0));
	CHECK_OK(ftruncate(fd, LARGEST_FILE + 1));
	close(fd);
	fd = open(p, O_RDONLY);
	CHECK_OK(fd);
	enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, 4096 > fs_block_size() ?
			fs_block_size() : 4096);
	CHECK(raw_enable(fd, &arg) == EFBIG);
	CHECK(!fd_has_verity_flag(fd));
	close(fd);
	CHECK_OK(stat(p, &st));
	CHECK(st.st_size == (off_t)(LARGEST_FILE + 1));
	CHECK(extents_from(p, fs_block_size(), NULL) == 0);
	CHECK_OK(truncate(p, 0));	/* still writable */
	unlink(p);
}

/* O_DIRECT reads of [off, off + len) into an aligned buffer; errno or 0 */
static int direct_read(const char *path, uint64_t off, size_t len,
		       unsigned char *out, ssize_t *got)
{
	void *buf;
	int fd, err = 0;

	CHECK(posix_memalign(&buf, 4096, len) == 0);
	fd = open(path, O_RDONLY | O_DIRECT);
	CHECK_OK(fd);
	*got = pread(fd, buf, len, off);
	if (*got < 0)
		err = errno;
	else
		memcpy(out, buf, *got);
	close(fd);
	free(buf);
	return err;
}

/*
 * O_DIRECT reads of a verity file are buffered reads: the right bytes, and
 * EIO for a block damaged on the device, where a direct read would return
 * the damage.  statx offers no direct I/O alignment for such a file, also
 * before its first open after a mount (upstream's v11 10/20 asks
 * fsverity_active(), which is false until then).
 */
TEST_TIMEOUT(o_direct_reads_are_verified, 300)
{
	const size_t size = 1 << 20;
	char *p = test_path("direct");
	unsigned char *data = random_buf(size, 0xd1ec7), *got = malloc(size);
	struct statx stx;
	ssize_t n;
	uint64_t phys;
	int err;

	need_xfs();
	CHECK(got);
	unlink(p);
	write_file(p, data, size);
	/* the premise: before the enable, O_DIRECT is direct I/O here */
	CHECK_OK(statx(AT_FDCWD, p, 0, STATX_DIOALIGN, &stx));
	CHECK((stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align);
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	CHECK_OK(statx(AT_FDCWD, p, 0, STATX_DIOALIGN, &stx));
	if ((stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align)
		fail("statx offers direct I/O (offset alignment %u) on a verity file",
		     stx.stx_dio_offset_align);
	drop_caches();
	err = direct_read(p, 0, size, got, &n);
	if (err || (size_t)n != size || memcmp(got, data, size))
		fail("O_DIRECT read of the verity file: %s, %zd bytes%s",
		     err ? errno_name(err) : "ok", n,
		     !err && (size_t)n == size ? ", not the file's" : "");
	/* damage block 5 on the device; a cold O_DIRECT read must fail */
	phys = phys_offset(p, 5 * 4096 + 100);
	fs_unmount();
	flip_byte(env.dev, phys);
	fs_mount();
	/* nor after a mount cycle, before anything opened the file */
	CHECK_OK(statx(AT_FDCWD, p, 0, STATX_DIOALIGN, &stx));
	if ((stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align)
		fail("after a remount, before any open, statx offers direct I/O (offset alignment %u) on a verity file",
		     stx.stx_dio_offset_align);
	drop_caches();
	err = direct_read(p, 5 * 4096, 4096, got, &n);
	if (err != EIO)
		fail("O_DIRECT read of a damaged block: %s (%zd bytes%s), expected EIO",
		     err ? errno_name(err) : "success", n,
		     !err && n == 4096 && !memcmp(got, data + 5 * 4096, 4096) ?
		     ", intact" : ", the damaged bytes");
	err = direct_read(p, 64 * 4096, 8192, got, &n);
	if (err || n != 8192 || memcmp(got, data + 64 * 4096, 8192))
		fail("O_DIRECT read of intact blocks after the damage: %s",
		     err ? errno_name(err) : "wrong bytes");
	/* a buffered read agrees */
	{
		int fd = open(p, O_RDONLY);

		CHECK_OK(fd);
		CHECK_ERRNO(pread(fd, got, 4096, 5 * 4096), EIO);
		close(fd);
	}
	unlink(p);
	free(data);
	free(got);
}

/*
 * Holes of a verity file (XFS keeps them: FIEMAP shows them) read as
 * zeroes that were verified, buffered and with O_DIRECT, and the digest
 * counts them as zero blocks.
 */
TEST_TIMEOUT(holes_read_as_verified_zeroes_also_with_o_direct, 300)
{
	const size_t size = 3 << 20;
	char *p = test_path("holes");
	char want[2 * MAX_DIGEST + 1], kd[2 * MAX_DIGEST + 1];
	unsigned char *data = calloc(1, size), *got = malloc(size);
	ssize_t n;
	int fd, alg, err;

	need_xfs();
	CHECK(data && got);
	unlink(p);
	fill_random(data + 256 * 1024, 64 * 1024, 0x401e);
	fill_random(data + 2 * 1024 * 1024, 4096, 0x401f);
	/* direct writes: no speculative preallocation to fill the holes */
	fd = open(p, O_CREAT | O_RDWR | O_DIRECT, 0644);
	CHECK_OK(fd);
	{
		void *b;

		CHECK(posix_memalign(&b, 4096, 64 * 1024) == 0);
		memcpy(b, data + 2 * 1024 * 1024, 4096);
		CHECK(pwrite(fd, b, 4096, 2 * 1024 * 1024) == 4096);
		memcpy(b, data + 256 * 1024, 64 * 1024);
		CHECK(pwrite(fd, b, 64 * 1024, 256 * 1024) == 64 * 1024);
		free(b);
	}
	CHECK_OK(ftruncate(fd, size));
	CHECK_OK(fsync(fd));
	close(fd);
	if (extents_from(p, 0, NULL) != 2)
		fail("the premise: 2 extents and holes, FIEMAP says %d extents",
		     extents_from(p, 0, NULL));
	user_digest_hex(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0, want);
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	kernel_digest_hex(p, kd, &alg);
	if (strcmp(kd, want))
		fail("digest %s, fsverity digest %s", kd, want);
	remount();
	drop_caches();
	err = direct_read(p, 0, size, got, &n);
	if (err || (size_t)n != size || memcmp(got, data, size))
		fail("O_DIRECT read of a file with holes: %s",
		     err ? errno_name(err) : "wrong bytes");
	drop_caches();
	check_contents(p, data, size);
	unlink(p);
	free(data);
	free(got);
}

/*
 * FIDEDUPERANGE needs no write access to the destination: into a verity
 * file it must be refused (EPERM), even with identical contents, and the
 * file stays as it was.  From a verity file into another one it works.
 */
TEST(fideduperange_into_verity_file_is_eperm)
{
	const size_t size = 256 * 1024;
	char *pv = test_path("dedupe-verity"), *pp = test_path("dedupe-plain");
	char before[2 * MAX_DIGEST + 1], after[2 * MAX_DIGEST + 1];
	unsigned char *data = random_buf(size, 0xdedc);
	struct {
		struct file_dedupe_range r;
		struct file_dedupe_range_info i;
	} d;
	int fv, fp, alg;

	need_xfs();
	unlink(pv);
	unlink(pp);
	write_file(pv, data, size);
	write_file(pp, data, size);
	must_enable(pv, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	kernel_digest_hex(pv, before, &alg);
	fv = open(pv, O_RDONLY);
	fp = open(pp, O_RDWR);
	CHECK_OK(fv);
	CHECK_OK(fp);

	/* plain -> verity: refused */
	memset(&d, 0, sizeof(d));
	d.r.src_offset = 0;
	d.r.src_length = size;
	d.r.dest_count = 1;
	d.i.dest_fd = fv;
	d.i.dest_offset = 0;
	errno = 0;
	if (ioctl(fp, FIDEDUPERANGE, &d.r) == 0) {
		if (d.i.status != -EPERM)
			fail("FIDEDUPERANGE into a verity file: status %lld (%s), expected -EPERM",
			     (long long)d.i.status,
			     d.i.status < 0 ? errno_name(-d.i.status) :
			     d.i.status == FILE_DEDUPE_RANGE_SAME ? "same: deduped" :
			     "differs");
	} else if (errno != EPERM) {
		fail("FIDEDUPERANGE into a verity file: %s, expected EPERM",
		     errno_name(errno));
	}
	/* verity -> plain: the verity file's blocks may be shared */
	memset(&d, 0, sizeof(d));
	d.r.src_length = size;
	d.r.dest_count = 1;
	d.i.dest_fd = fp;
	CHECK_OK(ioctl(fv, FIDEDUPERANGE, &d.r));
	if (d.i.status != FILE_DEDUPE_RANGE_SAME || d.i.bytes_deduped != size)
		fail("FIDEDUPERANGE from a verity file: status %d, %llu bytes",
		     d.i.status, (unsigned long long)d.i.bytes_deduped);
	close(fv);
	close(fp);
	remount();
	kernel_digest_hex(pv, after, &alg);
	CHECK(!strcmp(before, after));
	check_contents(pv, data, size);
	check_contents(pp, data, size);
	unlink(pv);
	unlink(pp);
	free(data);
}

/* free bytes of the filesystem holding @path */
static uint64_t free_bytes(const char *path)
{
	struct statvfs sv;

	CHECK_OK(statvfs(path, &sv));
	return (uint64_t)sv.f_bfree * sv.f_frsize;
}

/*
 * A reflinked file rewritten under a cowextsize hint stages copy-on-write
 * blocks a megabyte at a time, most of which it never writes.  A verity
 * file is never written again: the enable frees them (the posting frees
 * the COW fork's reservations) rather than hold the space until blockgc
 * finds them -- seen as free space the enable gives back, more than its
 * metadata takes -- and the file reads and measures the same after a
 * remount.  (The COW fork itself shows only to a CONFIG_XFS_DEBUG kernel.)
 */
TEST(enable_frees_the_cow_staging_blocks_of_a_reflinked_file)
{
	const size_t size = 2 << 20, at = 4096, len = 4096;
	const uint64_t cow = 1 << 20;
	char *ps = test_path("cow-source"), *pv = test_path("cow-verity");
	char before[2 * MAX_DIGEST + 1], after[2 * MAX_DIGEST + 1];
	unsigned char *data = random_buf(size, 0xc0f);
	uint64_t free_before, free_after;
	char out[4096];
	int fs, fv, alg;

	need_xfs();
	unlink(ps);
	unlink(pv);
	write_file(ps, data, size);
	fs = open(ps, O_RDONLY);
	fv = open(pv, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK_OK(fs);
	CHECK_OK(fv);
	CHECK_OK(ioctl(fv, FICLONE, fs));
	close(fs);
	close(fv);
	/* the write stages [0, 1 MiB) and fsync uses 4 KiB of it */
	if (run_cmd(out, sizeof(out), "xfs_io -c 'cowextsize %llu' "
		    "-c 'pwrite -q -S 0x5a %zu %zu' -c fsync '%s'",
		    (unsigned long long)cow, at, len, pv))
		fail("xfs_io cowextsize, pwrite, fsync: %s", out);
	memset(data + at, 0x5a, len);
	sync();
	free_before = free_bytes(pv);

	must_enable(pv, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	sync();
	free_after = free_bytes(pv);
	if (free_after < free_before + cow / 2)
		fail("the enable freed %lld bytes, want the COW fork's staging "
		     "(%llu bytes less the 4 KiB written) less the metadata",
		     (long long)(free_after - free_before),
		     (unsigned long long)cow);
	note("the enable freed %llu bytes",
	     (unsigned long long)(free_after - free_before));
	kernel_digest_hex(pv, before, &alg);
	remount();
	kernel_digest_hex(pv, after, &alg);
	CHECK(!strcmp(before, after));
	check_contents(pv, data, size);
	unlink(ps);
	unlink(pv);
	free(data);
}

/* FS_XFLAG_DAX of @path, after setting it to @on; 0 or the errno of the set */
static int set_dax(const char *path, bool on, bool *now)
{
	struct fsxattr fsx;
	int fd = CHECK_OK(open(path, O_RDONLY)), err = 0;

	CHECK_OK(ioctl(fd, FS_IOC_FSGETXATTR, &fsx));
	fsx.fsx_xflags = on ? fsx.fsx_xflags | FS_XFLAG_DAX :
			      fsx.fsx_xflags & ~FS_XFLAG_DAX;
	if (ioctl(fd, FS_IOC_FSSETXATTR, &fsx))
		err = errno;
	CHECK_OK(ioctl(fd, FS_IOC_FSGETXATTR, &fsx));
	*now = fsx.fsx_xflags & FS_XFLAG_DAX;
	close(fd);
	return err;
}

/*
 * The DAX flag cannot be turned on for a verity file (EINVAL, as in the
 * posting's v11): DAX reads would not be verified.  XFS never gives a
 * verity inode S_DAX anyway, but the flag would claim otherwise and
 * persist.  A plain file takes the flag (a hint, also on a disk without
 * DAX): the control.
 */
TEST(fsxattr_cannot_turn_dax_on_for_a_verity_file)
{
	char *pv = test_path("dax-verity"), *pp = test_path("dax-plain");
	bool now;
	int err;

	need_xfs();
	unlink(pv);
	unlink(pp);
	make_file(pv, 100000, 0xda1);
	make_file(pp, 100000, 0xda2);
	must_enable(pv, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	err = set_dax(pp, true, &now);
	if (err || !now)
		fail("premise: FS_XFLAG_DAX on a plain file: %s, flag %s",
		     err ? errno_name(err) : "accepted", now ? "set" : "clear");
	CHECK(!set_dax(pp, false, &now) && !now);
	err = set_dax(pv, true, &now);
	if (err != EINVAL || now)
		fail("FS_XFLAG_DAX on a verity file: %s, flag %s afterwards (expected EINVAL, clear)",
		     err ? errno_name(err) : "accepted", now ? "set" : "clear");
	remount();
	CHECK(!set_dax(pv, false, &now) && !now);
	unlink(pv);
	unlink(pp);
}

/* statx's STATX_ATTR_VERITY and FS_IOC_GETFLAGS' FS_VERITY_FL, also after a remount */
TEST(statx_and_getflags_report_verity)
{
	char *p = test_path("attr");
	int fd;

	need_xfs();
	unlink(p);
	make_file(p, 5000, 0xa77);
	CHECK(!path_has_statx_verity(p));
	fd = open(p, O_RDONLY);
	CHECK_OK(fd);
	CHECK(!fd_has_verity_flag(fd));
	close(fd);
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	CHECK(path_has_statx_verity(p));
	remount();
	CHECK(path_has_statx_verity(p));
	fd = open(p, O_RDONLY);
	CHECK_OK(fd);
	CHECK(fd_has_verity_flag(fd));
	close(fd);
	unlink(p);
}

/*
 * xfs_info of a mounted XFS asks the kernel (XFS_IOC_FSGEOMETRY, through
 * xfs_spaceman), so "verity=1" comes from XFS_FSOP_GEOM_FLAGS_VERITY.
 */
TEST(xfs_info_of_the_mounted_filesystem_reports_verity)
{
	char out[4096];

	need_xfs();
	/* what xfs_info runs for a mount point (it finds one with findmnt) */
	if (run_cmd(out, sizeof(out), "xfs_spaceman -p xfs_info -c info %s",
		    env.mnt))
		fail("xfs_info %s: %s", env.mnt, out);
	if (!strstr(out, "verity=1"))
		fail("xfs_info %s does not report verity=1:\n%s", env.mnt, out);
}

/* ---- quota and a full filesystem, on a spare XFS (mkfs'd per test) ---- */

#define SPARE_DEV	"/dev/vde"
#define SPARE_MNT	"/mnt/xfs-spare"
#define QUOTA_UID	4242
#define QUOTA_DATA	(4 << 20)
#define SPARE_DATA	(8 << 20)	/* a tree of 17+ blocks */

static void spare_umount(void)
{
	umount_if_mounted(SPARE_MNT);
}

static void spare_mkfs_and_mount(const char *opts)
{
	char out[4096];

	if (run_cmd(out, sizeof(out),
		    "mkfs.xfs -f -q -b size=%u -i verity=1 " SPARE_DEV,
		    fs_block_size()))
		fail("mkfs.xfs: %s", out);
	mkdir(SPARE_MNT, 0755);
	if (mount(SPARE_DEV, SPARE_MNT, "xfs", 0, opts))
		fail("mount -o %s " SPARE_DEV ": %s", opts, strerror(errno));
}

/* the spare filesystem is unmounted and passes xfs_repair -n */
static void spare_umount_and_repair(void)
{
	char out[4096];

	spare_umount();
	if (run_cmd(out, sizeof(out), "xfs_repair -n " SPARE_DEV))
		fail("xfs_repair -n " SPARE_DEV ": %s", out);
}

/* body() on a spare XFS, unmounted whatever happens (on xfs and xfs-1k) */
static void on_spare_xfs(void (*body)(void))
{
	need_xfs();
	if (access(SPARE_DEV, F_OK))
		fail("no spare disk " SPARE_DEV);
	spare_umount();		/* left by a test that timed out */
	with_cleanup(body, spare_umount, 240);
}

/* FS_IOC_ENABLE_VERITY on @path fails with @want (@why: the cause) and the file stays plain */
static void enable_is_refused(const char *path, int want, const char *why)
{
	int fd = open(path, O_RDONLY), err;

	CHECK_OK(fd);
	err = enable_verity(fd, FS_VERITY_HASH_ALG_SHA256, ilog2_u32(merkle_bs()),
			    NULL, 0, NULL, 0);
	if (err != want)
		fail("enable %s: %s, expected %s", why,
		     err ? strerror(err) : "success", errno_name(want));
	CHECK(!fd_has_verity_flag(fd));
	close(fd);
}

/* QUOTA_UID's usage (512-byte blocks); sets its hard limit first if @limit >= 0 */
static uint64_t quota_usage(int64_t limit)
{
	struct fs_disk_quota q = { 0 };

	if (limit >= 0) {
		q.d_version = FS_DQUOT_VERSION;
		q.d_flags = FS_USER_QUOTA;
		q.d_id = QUOTA_UID;
		q.d_fieldmask = FS_DQ_BHARD;
		q.d_blk_hardlimit = limit;
		if (quotactl(QCMD(Q_XSETQLIM, USRQUOTA), SPARE_DEV, QUOTA_UID,
			     (caddr_t)&q))
			fail("Q_XSETQLIM: %s", strerror(errno));
	}
	if (quotactl(QCMD(Q_XGETQUOTA, USRQUOTA), SPARE_DEV, QUOTA_UID,
		     (caddr_t)&q))
		fail("Q_XGETQUOTA: %s", strerror(errno));
	return q.d_bcount;
}

static uint64_t st_blocks(const char *path)
{
	struct stat st;

	CHECK_OK(stat(path, &st));
	return st.st_blocks;
}

static void quota_body(void)
{
	const char *p = SPARE_MNT "/owned";
	char before[2 * MAX_DIGEST + 1], after[2 * MAX_DIGEST + 1];
	unsigned char *data = malloc(QUOTA_DATA);
	uint64_t data_blocks, used;
	int alg, fd;

	CHECK(data != NULL);
	spare_mkfs_and_mount("uquota");
	fill_random(data, QUOTA_DATA, 0x9a07a);
	write_file(p, data, QUOTA_DATA);
	fd = open(p, O_RDONLY);
	CHECK_OK(fd);
	CHECK_OK(fsync(fd));
	close(fd);
	CHECK_OK(chown(p, QUOTA_UID, QUOTA_UID));
	data_blocks = QUOTA_DATA / 512;

	/* room for the data and one 4 KiB block: not for the tree */
	used = quota_usage(data_blocks + 8);
	CHECK(used >= data_blocks);
	enable_is_refused(p, EDQUOT, "past the owner's hard limit");
	used = quota_usage(-1);
	if (used != st_blocks(p) || used > data_blocks + 8)
		fail("after the refused enable: %llu blocks charged, the file has %llu",
		     (unsigned long long)used, (unsigned long long)st_blocks(p));
	check_contents(p, data, QUOTA_DATA);

	/* no limit: the tree and the descriptor are charged to the owner */
	quota_usage(0);
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	kernel_digest_hex(p, before, &alg);
	used = quota_usage(-1);
	note("quota: %llu blocks of 512 bytes charged for %llu of data",
	     (unsigned long long)used, (unsigned long long)data_blocks);
	/* at least 32 KiB of SHA-256 hashes of 4 MiB, plus the root's block */
	if (used != st_blocks(p) || used < data_blocks + 9 * 8)
		fail("after enabling: %llu blocks charged, the file has %llu",
		     (unsigned long long)used, (unsigned long long)st_blocks(p));
	/* the charge survives a remount (quotacheck-free: it is on disk) */
	spare_umount();
	if (mount(SPARE_DEV, SPARE_MNT, "xfs", 0, "uquota"))
		fail("mount -o uquota " SPARE_DEV ": %s", strerror(errno));
	CHECK(quota_usage(-1) == used);
	kernel_digest_hex(p, after, &alg);
	CHECK(!strcmp(before, after));
	check_contents(p, data, QUOTA_DATA);
	free(data);
	spare_umount_and_repair();
}

/*
 * fallocate files until not even one more block fits, then write blocks
 * one by one: an fallocate reserves room for extent tree splits as well,
 * a buffered write of one block hardly anything
 */
static void fill_up(void)
{
	char path[64], block[4096] = { 0 };
	int fd, blocks_fd, i = 0;
	off_t off;

	/* created first: on a full XFS, there is no room for an inode */
	blocks_fd = open(SPARE_MNT "/filler-blocks", O_WRONLY | O_CREAT | O_TRUNC,
			 0600);
	CHECK_OK(blocks_fd);

	for (off_t chunk = 64 << 20; chunk >= fs_block_size(); chunk /= 2) {
		for (;;) {
			snprintf(path, sizeof(path), SPARE_MNT "/filler-%d", i++);
			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
			if (fd < 0) {
				if (errno != ENOSPC)
					fail("create %s: %s", path, strerror(errno));
				break;
			}
			if (fallocate(fd, 0, 0, chunk)) {
				if (errno != ENOSPC)
					fail("fallocate %s: %s", path, strerror(errno));
				close(fd);
				unlink(path);
				break;
			}
			close(fd);
		}
	}
	fd = blocks_fd;
	for (off = 0; ; off += fs_block_size()) {
		if (pwrite(fd, block, fs_block_size(), off) < 0) {
			if (errno != ENOSPC)
				fail("write filler: %s", strerror(errno));
			break;
		}
		/* on disk now: delayed allocation reserves more than it uses */
		if (fsync(fd) && errno != ENOSPC)
			fail("fsync filler: %s", strerror(errno));
	}
	close(fd);
	sync();
}

static void enospc_body(void)
{
	const char *p = SPARE_MNT "/data";
	char out[4096], k[2 * MAX_DIGEST + 1];
	unsigned char *data = malloc(SPARE_DATA);
	struct statvfs before, after;
	int alg;

	CHECK(data != NULL);
	spare_mkfs_and_mount("");
	fill_random(data, SPARE_DATA, 0xe5bc);
	write_file(p, data, SPARE_DATA);
	fill_up();
	CHECK_OK(statvfs(SPARE_MNT, &before));
	enable_is_refused(p, ENOSPC, "on a full filesystem");
	/* what the enable had allocated is free again, the data is intact */
	sync();
	CHECK_OK(statvfs(SPARE_MNT, &after));
	if (after.f_bfree < before.f_bfree)
		fail("%llu blocks free after the refused enable, %llu before",
		     (unsigned long long)after.f_bfree,
		     (unsigned long long)before.f_bfree);
	check_contents(p, data, SPARE_DATA);

	/* with room again, the same file takes verity */
	if (run_cmd(out, sizeof(out), "rm -f " SPARE_MNT "/filler-*"))
		fail("rm: %s", out);
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	kernel_digest_hex(p, k, &alg);
	spare_umount_and_repair();
	free(data);
}

/* On a full filesystem enable is ENOSPC and leaves the file and the free space as they were */
TEST_TIMEOUT(enable_on_a_full_filesystem_is_enospc_and_changes_nothing, 300)
{
	on_spare_xfs(enospc_body);
}

/* Quota charges the tree's blocks; past a hard limit enable is EDQUOT */
TEST_TIMEOUT(quota_charges_the_tree_and_a_full_quota_refuses_the_enable, 300)
{
	on_spare_xfs(quota_body);
}

/*
 * Another file of the owner holds speculative preallocation past its EOF
 * (blocks XFS takes ahead of an appending writer and trims later): the
 * tree's writes that find the quota full are retried once after XFS frees
 * such blocks, as a buffered write of the same size would be.  Shown by
 * the growing file's blocks: its preallocation is gone after the enable.
 * On a kernel without the retry, the control shows the enable refused
 * what a write got.
 */
static void prealloc_quota_body(void)
{
	const char *grow = SPARE_MNT "/growing", *p = SPARE_MNT "/owned";
	const char *ctl = SPARE_MNT "/control";
	static unsigned char chunk[256 << 10];
	char k[2 * MAX_DIGEST + 1], u[2 * MAX_DIGEST + 1];
	unsigned char *data = malloc(QUOTA_DATA);
	uint64_t grow_before, grow_after, used;
	int alg, fd, ctl_fd, err;

	CHECK(data != NULL);
	spare_mkfs_and_mount("uquota");
	fill_random(data, QUOTA_DATA, 0x9a1c);
	write_file(p, data, QUOTA_DATA);
	ctl_fd = CHECK_OK(open(ctl, O_WRONLY | O_CREAT | O_TRUNC, 0600));
	CHECK_OK(fchown(ctl_fd, QUOTA_UID, QUOTA_UID));
	sync();
	CHECK_OK(chown(p, QUOTA_UID, QUOTA_UID));

	/* 16 MiB appended in 256 KiB writes, on disk, the file kept open */
	fd = CHECK_OK(open(grow, O_WRONLY | O_CREAT | O_TRUNC, 0600));
	CHECK_OK(fchown(fd, QUOTA_UID, QUOTA_UID));
	fill_random(chunk, sizeof(chunk), 0x9a1d);
	for (int i = 0; i < 64; i++)
		CHECK(write(fd, chunk, sizeof(chunk)) == sizeof(chunk));
	CHECK_OK(fsync(fd));
	grow_before = st_blocks(grow);
	if (grow_before < (16 << 20) / 512 + 256)
		fail("premise: no speculative preallocation past EOF (%llu blocks for 16 MiB)",
		     (unsigned long long)grow_before);

	/* room for one more 4 KiB block: the tree fits only without it */
	used = quota_usage(-1);
	quota_usage(used + 8);
	err = enable_verity_path(p, FS_VERITY_HASH_ALG_SHA256,
				 ilog2_u32(merkle_bs()), NULL, 0);
	grow_after = st_blocks(grow);
	if (err == EDQUOT) {
		/* the control: a buffered write of 64 KiB by the same owner */
		ssize_t n = pwrite(ctl_fd, chunk, 64 << 10, 0);

		fail("enable: EDQUOT, with %llu blocks of 512 bytes past the growing file's EOF; a buffered write of 64 KiB then %s (%s), leaving %llu there",
		     (unsigned long long)(grow_after - (16 << 20) / 512),
		     n == 64 << 10 ? "succeeded" : "failed too",
		     n < 0 ? strerror(errno) : "-",
		     (unsigned long long)(st_blocks(grow) - (16 << 20) / 512));
	}
	if (err)
		fail("enable: %s", strerror(err));
	if (grow_after >= grow_before)
		fail("the enable succeeded, but the growing file still has its %llu blocks: nothing was freed",
		     (unsigned long long)grow_after);
	note("the growing file's blocks %llu -> %llu: its preallocation was freed for the tree",
	     (unsigned long long)grow_before, (unsigned long long)grow_after);
	kernel_digest_hex(p, k, &alg);
	user_digest_hex(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0, u);
	CHECK(!strcmp(k, u));
	check_contents(p, data, QUOTA_DATA);
	used = quota_usage(-1);
	if (used != st_blocks(p) + st_blocks(grow) + st_blocks(ctl))
		fail("%llu blocks charged, the owner's files have %llu",
		     (unsigned long long)used,
		     (unsigned long long)(st_blocks(p) + st_blocks(grow) +
					  st_blocks(ctl)));
	close(fd);
	close(ctl_fd);
	free(data);
	spare_umount_and_repair();
}

/* Tree writes past a full quota are retried after other files' preallocation is freed */
TEST_TIMEOUT(enable_frees_other_files_preallocation_when_the_quota_is_full, 300)
{
	on_spare_xfs(prealloc_quota_body);
}

/*
 * The transaction that sets XFS_DIFLAG2_VERITY fails: the log shuts down
 * while it commits.  The enable fails, and nothing in core says verity:
 * not i_diflags2 (FS_IOC_FSGETXATTR, FS_IOC_GETFLAGS), not S_VERITY
 * (FS_IOC_MEASURE_VERITY).  After a remount, log recovery decides: the file
 * is verity with the right digest if the flag reached the log, or plain,
 * and then the next enable seals it.  The commit is caught by the
 * xfs_log_force trace event of the transaction's synchronous commit, with
 * the spare disk behind dm-delay so that the log write takes a second.
 */
#define SEAL_DM		"fsv-xfs-seal-delay"
#define SEAL_DMSETUP	"DM_DISABLE_UDEV=1 dmsetup"
#define SEAL_DATA	(1 << 20)

/* the xfs_log_force trace line of a transaction's commit on device @devno */
static bool seal_commit_forced(const char *devno)
{
	FILE *f = fopen(TRACEFS "/trace", "r");
	char line[512], want[48];
	bool found = false;

	if (!f)
		fail("open trace: %s", strerror(errno));
	snprintf(want, sizeof(want), "dev %s ", devno);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "xfs_log_force:") && strstr(line, want) &&
			strstr(line, "__xfs_trans_commit");
	fclose(f);
	return found;
}

/* say what the trace holds (for a premise that failed) */
static void seal_trace_note(void)
{
	FILE *f = fopen(TRACEFS "/trace", "r");
	char line[512];

	while (f && fgets(line, sizeof(line), f))
		if (line[0] != '#')
			note("trace: %s", line);
	if (f)
		fclose(f);
}

static void seal_body(void)
{
	const char *p = SPARE_MNT "/sealed";
	unsigned char *data = malloc(SEAL_DATA), d[MAX_DIGEST];
	char devno[32], k[2 * MAX_DIGEST + 1], u[2 * MAX_DIGEST + 1];
	struct fsxattr fsx;
	int alg, size, fd, status, err, flags = 0;
	uint32_t how = XFS_FSOP_GOING_FLAGS_NOLOGFLUSH_;
	double t0;
	pid_t enabler;

	CHECK(data != NULL);
	spare_mkfs_and_mount("");
	fill_random(data, SEAL_DATA, 0x5ea1);
	write_file(p, data, SEAL_DATA);
	spare_umount();
	must_run("dm-delay", SEAL_DMSETUP " create " SEAL_DM " --table \"0 $(blockdev --getsz "
		 SPARE_DEV ") delay " SPARE_DEV " 0 0 " SPARE_DEV " 0 1000\"");
	if (mount("/dev/mapper/" SEAL_DM, SPARE_MNT, "xfs", 0, NULL))
		fail("mount /dev/mapper/" SEAL_DM ": %s", strerror(errno));
	dev_numbers("/dev/mapper/" SEAL_DM, devno, sizeof(devno));
	put_str(TRACEFS "/trace", "");
	put_str(TRACEFS "/events/xfs/xfs_log_force/enable", "1");

	fd = CHECK_OK(open(p, O_RDONLY));
	enabler = CHECK_OK(fork());
	if (enabler == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(enable_verity(fd, FS_VERITY_HASH_ALG_SHA256,
				    ilog2_u32(merkle_bs()), NULL, 0, NULL, 0));
	}
	t0 = mono_now();
	while (!seal_commit_forced(devno)) {
		if (waitpid(enabler, &status, WNOHANG) == enabler)
			fail("premise: the enable ended (%s) before its commit was seen",
			     WIFEXITED(status) ? errno_name(WEXITSTATUS(status)) : "killed");
		if (mono_now() - t0 > 60)
			fail("premise: no commit of the verity flag in 60 s");
		usleep(10000);
	}
	CHECK_OK(ioctl(fd, XFS_IOC_GOINGDOWN_, &how));
	put_str(TRACEFS "/events/xfs/xfs_log_force/enable", "0");
	CHECK_OK(waitpid(enabler, &status, 0));
	err = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	if (err == 0) {
		seal_trace_note();
		fail("premise: the enable succeeded: its commit ended before the shutdown");
	}
	if (err != EIO)
		fail("enable with the log shut down during its commit: %s, expected EIO",
		     err < 0 ? "killed" : errno_name(err));

	CHECK_OK(ioctl(fd, FS_IOC_FSGETXATTR, &fsx));
	CHECK_OK(ioctl(fd, FS_IOC_GETFLAGS, &flags));
	err = measure_verity(fd, d, &alg, &size);
	if ((fsx.fsx_xflags & FS_XFLAG_VERITY) || (flags & FS_VERITY_FL) ||
	    err != ENODATA)
		fail("after the failed enable, in core: FS_XFLAG_VERITY %s, FS_VERITY_FL %s, FS_IOC_MEASURE_VERITY %s",
		     fsx.fsx_xflags & FS_XFLAG_VERITY ? "set" : "clear",
		     flags & FS_VERITY_FL ? "set" : "clear",
		     err ? errno_name(err) : "a digest");
	close(fd);

	/* what the disk says after log recovery */
	umount_if_mounted(SPARE_MNT);
	run_cmd(NULL, 0, SEAL_DMSETUP " remove " SEAL_DM);
	if (mount(SPARE_DEV, SPARE_MNT, "xfs", 0, NULL))
		fail("mount " SPARE_DEV " after the shutdown: %s", strerror(errno));
	if (path_has_statx_verity(p)) {
		note("the flag reached the log: verity after recovery");
	} else {
		note("the flag did not reach the log: plain after recovery, sealed again");
		must_enable(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	}
	kernel_digest_hex(p, k, &alg);
	user_digest_hex(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0, u);
	CHECK(!strcmp(k, u));
	check_contents(p, data, SEAL_DATA);
	free(data);
	spare_umount_and_repair();
}

static void seal_cleanup(void)
{
	put_str_errno(TRACEFS "/events/xfs/xfs_log_force/enable", "0");
	for (int i = 0; i < 50 && umount(SPARE_MNT) && errno == EBUSY; i++)
		usleep(200000);
	run_cmd(NULL, 0, SEAL_DMSETUP " remove " SEAL_DM " 2>/dev/null");
}

/* A failed commit of the verity flag leaves nothing in core claiming verity */
TEST_TIMEOUT(a_failed_commit_of_the_verity_flag_leaves_nothing_claiming_verity, 300)
{
	need_xfs();
	if (access(TRACEFS "/events/xfs/xfs_log_force", F_OK))
		fail("no xfs_log_force trace event");
	spare_umount();
	with_cleanup(seal_body, seal_cleanup, 240);
}

/* ---- a file in another layout: refused at open ---- */

#define OLD_IMAGE	"/tests/data/xfs-old-layout.img.xz"

/* mount the spare disk read-only: the image's three files are verity
 * inodes that fail to open with ERANGE (@when: for the messages) */
static void old_files_are_refused(const char *when)
{
	char path[64];

	mkdir(SPARE_MNT, 0755);
	if (mount(SPARE_DEV, SPARE_MNT, "xfs", MS_RDONLY, NULL))
		fail("mount " SPARE_DEV " %s: %s", when, strerror(errno));
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), SPARE_MNT "/f%d", i);
		if (!path_has_statx_verity(path))
			fail("%s: not a verity inode %s", path, when);
		CHECK_ERRNO(open(path, O_RDONLY), ERANGE);
	}
}

static void old_layout_body(void)
{
	char out[4096];

	if (run_cmd(out, sizeof(out), "xzcat " OLD_IMAGE " >" SPARE_DEV))
		fail("xzcat " OLD_IMAGE ": %s", out);
	old_files_are_refused("as made");
	spare_umount_and_repair();
	/* a real repair changes none of it */
	if (run_cmd(out, sizeof(out), "xfs_repair " SPARE_DEV))
		fail("xfs_repair " SPARE_DEV ": %s", out);
	old_files_are_refused("after xfs_repair");
	spare_umount();
}

/*
 * Files sealed when this series put the tree at 1 << 53 (the layout of the
 * posting's v2 and v3; tests/data/README): their descriptor is valid but
 * not after their tree, so open() fails with ERANGE -- never an open that
 * succeeds and reads that fail -- xfs_repair -n finds nothing wrong, and
 * a real xfs_repair leaves them as they were.
 */
TEST_TIMEOUT(files_in_the_old_2_pow_53_layout_fail_to_open_with_erange, 300)
{
	on_spare_xfs(old_layout_body);
}

/* ---- a stored descriptor size the layout cannot have made ---- */

/* write @v as a be32 at byte @off of the (unmounted) spare disk */
static void dev_put_be32(uint64_t off, uint32_t v)
{
	const size_t bs = 4096;
	uint64_t base = off & ~(uint64_t)(bs - 1);
	unsigned char *buf;
	int fd = open(SPARE_DEV, O_RDWR | O_DIRECT);

	CHECK_OK(fd);
	CHECK(posix_memalign((void **)&buf, bs, bs) == 0);
	if (pread(fd, buf, bs, base) != (ssize_t)bs)
		fail("pread " SPARE_DEV ": %s", strerror(errno));
	buf[off - base] = v >> 24;
	buf[off - base + 1] = v >> 16;
	buf[off - base + 2] = v >> 8;
	buf[off - base + 3] = v;
	if (pwrite(fd, buf, bs, base) != (ssize_t)bs)
		fail("pwrite " SPARE_DEV ": %s", strerror(errno));
	CHECK_OK(fsync(fd));
	close(fd);
	free(buf);
}

/* what is done to a sealed file on the unmounted device */
enum damage {
	STORED_SIZE,	/* the be32 at the data fork's end := @value */
	FILE_SIZE,	/* di_size := @value, so M moves past the metadata */
	RESERVED_BYTE,	/* a reserved byte of the descriptor := @value */
	DESC_HEAD,	/* version, hash algorithm, log_blocksize, salt size */
};

struct bad_metadata {
	const char *what;
	uint64_t data_size;	/* of the file sealed first */
	enum damage damage;
	uint64_t value;
	int err;		/* what open() gives */
	bool valid;		/* a descriptor another kernel could use */
};

/* offset of __reserved in struct fsverity_descriptor */
#define DESC_RESERVED	112

static void damage(const struct bad_metadata *c, uint64_t trailer, ino_t ino)
{
	char out[4096];

	switch (c->damage) {
	case STORED_SIZE:
		dev_put_be32(trailer, c->value);
		break;
	case FILE_SIZE:
		if (run_cmd(out, sizeof(out), "xfs_db -x -c 'inode %llu' "
			    "-c 'write core.size %llu' " SPARE_DEV,
			    (unsigned long long)ino,
			    (unsigned long long)c->value))
			fail("xfs_db write core.size: %s", out);
		break;
	case RESERVED_BYTE:
		/* unsigned, the descriptor starts its block: fsbs - 4 back */
		dev_put_be32(trailer - (fs_block_size() - 4) + DESC_RESERVED,
			     c->value);
		break;
	case DESC_HEAD:
		dev_put_be32(trailer - (fs_block_size() - 4), c->value);
		break;
	}
}

static void bad_metadata_body(void)
{
	uint32_t fsbs = fs_block_size();
	/* the descriptor's first four bytes, as enable wrote them: v1, no salt */
	uint32_t head = 0x01000000 | FS_VERITY_HASH_ALG_SHA256 << 16 |
			__builtin_ctz(merkle_bs()) << 8;
	const struct bad_metadata cases[] = {
		/* a descriptor is at least 256 bytes */
		{ "size zero", 300000, STORED_SIZE, 0, ERANGE, false },
		{ "size below 256", 300000, STORED_SIZE, 255, ERANGE, false },
		{ "size above FS_VERITY_MAX_DESCRIPTOR_SIZE", 300000,
		  STORED_SIZE, 16385, ERANGE, false },
		/* an empty file: M = 0, the size's own position is fsbs - 4 */
		{ "size above its own position", 0, STORED_SIZE, fsbs, ERANGE, false },
		/* no tree: the descriptor is at M, its size at M + fsbs - 4 */
		{ "size reaching below M", 100, STORED_SIZE, fsbs, ERANGE, false },
		/* the descriptor then starts a block early, in the gap after
		 * the tree: zeroes, which fs-verity refuses as a descriptor */
		{ "size placing the descriptor a block early", 300000,
		  STORED_SIZE, 256 + fsbs, EINVAL, false },
		/* M = 1 MiB, past everything stored */
		{ "last extent ending below M", 100, FILE_SIZE, 1 << 20,
		  ENODATA, false },
		{ "a reserved byte of the descriptor set", 300000,
		  RESERVED_BYTE, 0x01010101, EINVAL, false },
		/* round_up() to M would overflow: refused before it */
		{ "a file size past 2^53", 300000, FILE_SIZE,
		  0x7ffffffffffff000ULL, ERANGE, false },
		/* Merkle blocks larger than the filesystem's: no kernel's */
		{ "Merkle blocks larger than a filesystem block", 300000,
		  DESC_HEAD, (head & ~0xff00U) | 16 << 8, EINVAL, false },
		/* valid, from a kernel that knows a third algorithm: EINVAL
		 * as on ext4, not damage */
		{ "a hash algorithm this kernel does not know", 300000,
		  DESC_HEAD, (head & ~0xff0000U) | 3 << 16, EINVAL, true },
	};
	const size_t n = sizeof(cases) / sizeof(cases[0]);
	uint64_t trailer[sizeof(cases) / sizeof(cases[0])];
	ino_t ino[sizeof(cases) / sizeof(cases[0])];
	char path[64];

	spare_mkfs_and_mount(NULL);
	for (size_t i = 0; i < n; i++) {
		struct fiemap_extent fe;
		struct stat st;
		uint64_t end = 0;

		snprintf(path, sizeof(path), SPARE_MNT "/bad-%zu", i);
		make_file(path, cases[i].data_size, 0x512e + i);
		must_enable(path, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
		extents_from(path, 0, &end);
		fiemap_extent_at(path, end - 1, &fe);
		trailer[i] = fe.fe_physical + (end - 4 - fe.fe_logical);
		CHECK_OK(stat(path, &st));
		ino[i] = st.st_ino;
	}
	spare_umount();
	for (size_t i = 0; i < n; i++)
		damage(&cases[i], trailer[i], ino[i]);
	if (mount(SPARE_DEV, SPARE_MNT, "xfs", 0, NULL))
		fail("mount " SPARE_DEV ": %s", strerror(errno));
	for (size_t i = 0; i < n; i++) {
		char out[4096];
		bool sick;
		int fd;

		snprintf(path, sizeof(path), SPARE_MNT "/bad-%zu", i);
		fd = open(path, O_RDONLY);
		if (fd >= 0 || errno != cases[i].err)
			fail("%s: open gave %s, want %s", cases[i].what,
			     fd >= 0 ? "success" : errno_name(errno),
			     errno_name(cases[i].err));
		run_cmd(out, sizeof(out), "xfs_spaceman -c 'health -i %llu' "
			SPARE_MNT, (unsigned long long)ino[i]);
		sick = strstr(out, "fs-verity metadata: unhealthy");
		if (sick == cases[i].valid)
			fail("%s: the inode is %smarked sick: %s",
			     cases[i].what, sick ? "" : "not ", out);
		note("%s: open fails with %s, inode %s", cases[i].what,
		     errno_name(cases[i].err), sick ? "sick" : "not sick");
	}
	spare_umount_and_repair();
}

/*
 * Verity metadata damaged on the unmounted device into what the layout
 * cannot have written -- the descriptor's stored size, the file size that
 * places the tree (also one past 2^53, where finding the tree would
 * overflow), the descriptor's body: every open fails with the errno
 * Documentation gives, the inode is marked sick (xfs_spaceman's health
 * report, from bulkstat), and the kernel stays quiet but for rate-limited
 * lines (the runner fails on any splat).  A valid descriptor this kernel
 * cannot use (a hash algorithm it does not know) is refused with EINVAL,
 * as on ext4, and the inode is not marked: it is not damaged.  xfs_repair
 * -n finds nothing: it does not read fs-verity metadata.
 */
TEST_TIMEOUT(damaged_verity_metadata_marks_the_inode_sick_and_a_valid_unusable_one_does_not, 300)
{
	on_spare_xfs(bad_metadata_body);
}

/* ---- descriptors with a built-in signature: where they spill ---- */

/*
 * A detached PKCS#7 signature of @path's fs-verity digest by the trusted
 * key, of exactly @want bytes: the signer's certificate goes in, and so
 * does a padding certificate (same key) whose subjectAltName is sized
 * until the DER comes out at @want.  Returns its size in @sig.
 */
static size_t sig_of_size(const char *path, size_t want, unsigned char *sig)
{
	char out[4096];
	size_t got = 0, pad = 64;

	if (run_cmd(out, sizeof(out), "fsverity digest --compact --for-builtin-sig "
		    "--block-size=%d '%s' | xxd -r -p > " SIGDIR "/msg",
		    sig_block_size(), path))
		fail("fsverity digest --for-builtin-sig: %s", out);
	for (int tries = 0; tries < 8; tries++) {
		if (run_cmd(out, sizeof(out), "cd " SIGDIR " && "
			    "openssl req -x509 -key trusted.key -days 3650 "
			    "-subj '/CN=padding' -addext "
			    "\"subjectAltName=DNS:$(head -c %zu /dev/zero | tr '\\0' a)\" "
			    "-out pad.crt && openssl smime -sign -binary -noattr "
			    "-md sha256 -in msg -signer trusted.crt -inkey trusted.key "
			    "-certfile pad.crt -outform DER -out big.sig", pad))
			fail("openssl: %s", out);
		got = slurp(SIGDIR "/big.sig", sig, SIG_MAX);
		if (got == want)
			return got;
		if (got > want + pad - 1)
			fail("a signature of %zu bytes cannot be made: %zu at the least",
			     want, got - pad + 1);
		pad += want - got;
	}
	fail("no signature of exactly %zu bytes (last %zu)", want, got);
}

struct spill {
	const char *what;
	size_t sig_size;
};

static void spill_one(const struct spill *c)
{
	uint32_t fsbs = fs_block_size();
	char *p = test_path("spill-%zu", c->sig_size);
	unsigned char *sig = malloc(SIG_MAX), *got = malloc(SIG_MAX + 256);
	unsigned char d[32], blk[4];
	size_t desc_size = 256 + c->sig_size;
	uint64_t size = 200000, meta = tree_start(size), desc_off, end = 0;
	size_t tree_size;
	unsigned char desc[256], *tree;
	struct fsverity_read_metadata_arg a = { 0 };
	int fd;

	CHECK(sig && got);
	unlink(p);
	make_file(p, size, 0x5b11 + c->sig_size);
	ref_metadata(p, FS_VERITY_HASH_ALG_SHA256, sig_block_size(), 0, &tree,
		     &tree_size, desc);
	CHECK(sig_of_size(p, c->sig_size, sig) == c->sig_size);
	if (sig_enable(p, sig, c->sig_size))
		fail("%s: enable with a %zu-byte signature: %s", c->what,
		     c->sig_size, errno_name(sig_enable(p, sig, c->sig_size)));
	sig_measure(p, d);
	remount();

	/* read back through the ioctl */
	fd = open(p, O_RDONLY);
	CHECK_OK(fd);
	a.metadata_type = FS_VERITY_METADATA_TYPE_SIGNATURE;
	a.length = SIG_MAX;
	a.buf_ptr = (uintptr_t)got;
	if (ioctl(fd, FS_IOC_READ_VERITY_METADATA, &a) != (int)c->sig_size ||
	    memcmp(got, sig, c->sig_size))
		fail("%s: FS_IOC_READ_VERITY_METADATA does not return the signature",
		     c->what);
	close(fd);

	/* and on the device: descriptor + signature at D, size at the end */
	desc_off = round_up_to(meta + tree_size, START_ALIGN);
	read_mapped(p, desc_off + 256, got, c->sig_size);
	if (memcmp(got, sig, c->sig_size))
		fail("%s: the signature is not at D + 256 on the device", c->what);
	extents_from(p, meta, &end);
	if (end != round_up_to(desc_off + desc_size + 4, fsbs))
		fail("%s: the data fork ends at %" PRIu64 ", want %" PRIu64,
		     c->what, end, round_up_to(desc_off + desc_size + 4, fsbs));
	read_mapped(p, end - 4, blk, 4);
	if (be32_at(blk) != desc_size)
		fail("%s: stored size %u, want %zu", c->what, be32_at(blk),
		     desc_size);
	note("%s: %zu-byte descriptor at %" PRIu64 ", size stored at %" PRIu64
	     " (block %" PRIu64 " of the descriptor's %" PRIu64 "-%" PRIu64 ")",
	     c->what, desc_size, desc_off, end - 4, (end - 4) / fsbs,
	     desc_off / fsbs, (desc_off + desc_size - 1) / fsbs);
	unlink(p);
	free(tree);
	free(sig);
	free(got);
}

/*
 * A descriptor with a built-in signature may take more than one block, and
 * may end within the last four bytes of one, so that its stored size goes
 * at the end of the next: enabled, measured, the signature read back with
 * FS_IOC_READ_VERITY_METADATA after a remount, and every byte where the
 * layout says on the device.
 */
TEST_TIMEOUT(signed_descriptors_spilling_over_blocks_are_where_the_layout_says, 300)
{
	uint32_t fsbs;

	need_xfs();
	sig_trust();
	fsbs = fs_block_size();
	{
		/* two certificates make a signature of 2.2 KB at the least */
		uint32_t span = fsbs < 4096 ? 3 * fsbs : fsbs;
		const struct spill cases[] = {
			{ "spilling into the next block", span + 100 },
			/* the descriptor ends 2 bytes before a block's end */
			{ "ending within a block's last four bytes",
			  span - 2 - 256 },
		};

		for (size_t i = 0; i < 2; i++)
			spill_one(&cases[i]);
	}
}

/*
 * Writeback that began before an enable and reaches tree folios dirtied
 * after it must write them, not drop them as leftovers past EOF: else the
 * tree stays delayed allocation in a clean page cache, and is lost at the
 * next unmount.  On a kernel with XFS error injection (the debug kernel)
 * it is made to happen: writepages_delay_ms holds the flusher for 5 s as
 * it starts a pass on the file (one dirty data folio), before it looks at
 * any folio; the enable starts unheld, and once its own flush of the data
 * is done the delay is set to 8 s, which holds the enable's writeback of
 * its metadata.  The flusher resumes with every tree folio dirty ahead of
 * it.  (While a flusher pass holds the inode no other one starts on it.)
 * Without error injection the race is left to chance:
 * many small write-then-enable cycles under a flusher waking every 10 ms
 * and a syncfs() loop.  Either way, after each enable no delayed
 * allocation is left (FIEMAP), and after a remount every file
 * has its digest and its data, and xfs_repair -n is clean.  make soak
 * repeats it for its fsv.soak= seconds.
 */
#define DIRTY_EXPIRE	"/proc/sys/vm/dirty_expire_centisecs"
#define DIRTY_WAKEUP	"/proc/sys/vm/dirty_writeback_centisecs"
#define ENABLE_THREADS	"/proc/sys/fs/verity/enable_threads"
#define WB_ROUNDS_HELD	3
#define WB_ROUNDS_LOOSE	40

static char old_expire[16], old_wakeup[16], old_threads[16];
static char wb_delay[128];	/* XFS's writepages_delay_ms tag, or "" */

static void restore_writeback(void)
{
	put_str(DIRTY_EXPIRE, old_expire);
	put_str(DIRTY_WAKEUP, old_wakeup);
	if (*wb_delay)
		put_str(wb_delay, "0");
	if (*old_threads)
		put_str(ENABLE_THREADS, old_threads);
}

/*
 * The enable wrote back all it wrote: no delayed allocation remains, past
 * EOF either.  FIEMAP without FIEMAP_FLAG_SYNC, which would write back
 * dirty folios (those dropped clean stay delayed allocation all the same);
 * xfs_io's bmap shows nothing past EOF.
 */
static void no_delalloc_left(const char *path)
{
	struct fiemap_extent fe[256];
	unsigned int n = fiemap_extents(path, 0, FIEMAP_MAX_OFFSET, 0, fe, 256);

	for (unsigned int i = 0; i < n; i++)
		if (fe[i].fe_flags & FIEMAP_EXTENT_DELALLOC)
			fail("%s: delayed allocation left after the enable: %llu bytes at %llu",
			     path, (unsigned long long)fe[i].fe_length,
			     (unsigned long long)fe[i].fe_logical);
}

static double timed_enable(const char *path)
{
	double t = mono_now();

	must_enable(path, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	return mono_now() - t;
}

/* the file of @size bytes (its data is a function of @size), on disk */
static unsigned char *written_back(const char *path, size_t size)
{
	unsigned char *data = random_buf(size, 0x3b0 + size);
	int fd;

	unlink(path);
	write_file(path, data, size);
	fd = open(path, O_RDONLY);
	CHECK_OK(fd);
	CHECK_OK(fsync(fd));
	close(fd);
	return data;
}

/*
 * One round: the file on disk, its first folio dirtied again, the flusher
 * let in and held for 5 s as it starts its pass; the enable started unheld
 * in a child, and once its flush of the data is done (0.5 s), its writeback
 * of the metadata held for 8 s.
 */
static void held_round(const char *path, size_t size)
{
	unsigned char *data = written_back(path, size);
	double t0;
	pid_t pid;
	int fd, st;

	put_str(wb_delay, "5000");
	fd = open(path, O_WRONLY);
	CHECK_OK(fd);
	CHECK(pwrite(fd, data, 4096, 0) == 4096);
	close(fd);
	usleep(200000);		/* the flusher wakes every 10 ms */
	put_str(wb_delay, "0");
	t0 = mono_now();
	pid = fork();
	CHECK_OK(pid);
	if (!pid) {
		fd = open(path, O_RDONLY);
		_exit(fd < 0 || enable_verity(fd, FS_VERITY_HASH_ALG_SHA256,
					      ilog2_u32(merkle_bs()), NULL, 0,
					      NULL, 0));
	}
	usleep(500000);
	put_str(wb_delay, "8000");
	CHECK(waitpid(pid, &st, 0) == pid);
	put_str(wb_delay, "0");
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fail("%s: the enable failed", path);
	note("%s: enable took %.1f s with the flusher held", path,
	     mono_now() - t0);
	free(data);
}

static void writeback_race_cycle(void)
{
	const size_t held_size = 16 << 20;
	char *paths[WB_ROUNDS_LOOSE];
	int nr = 0, syncer;
	pid_t pid = 0;

	put_str(DIRTY_EXPIRE, "1");
	put_str(DIRTY_WAKEUP, "1");
	if (*wb_delay) {
		/*
		 * The held flusher busy-waits on a CPU, where a helper of the
		 * enable would wait for it: hash in the enabling task alone
		 */
		if (*old_threads)
			put_str(ENABLE_THREADS, "1");
		for (; nr < WB_ROUNDS_HELD; nr++) {
			paths[nr] = test_path("wb-held-%d", nr);
			held_round(paths[nr], held_size);
			no_delalloc_left(paths[nr]);
		}
	} else {
		syncer = open(env.mnt, O_RDONLY | O_DIRECTORY);
		CHECK_OK(syncer);
		pid = fork();
		CHECK_OK(pid);
		if (!pid)
			for (;;)
				syncfs(syncer);
		for (; nr < WB_ROUNDS_LOOSE; nr++) {
			unsigned char *data = random_buf(1 << 21, 0x3c0 + nr);

			paths[nr] = test_path("wb-loose-%d", nr);
			unlink(paths[nr]);
			write_file(paths[nr], data, 1 << 21);
			free(data);
			timed_enable(paths[nr]);
			no_delalloc_left(paths[nr]);
		}
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(syncer);
	}
	restore_writeback();
	remount();
	for (int i = 0; i < nr; i++) {
		char want[160], have[160];
		size_t size = *wb_delay ? held_size : 1 << 21;
		unsigned char *data = random_buf(size, *wb_delay ?
						 0x3b0 + size : (size_t)0x3c0 + i);
		int alg;

		kernel_digest_hex(paths[i], have, &alg);
		user_digest_hex(paths[i], FS_VERITY_HASH_ALG_SHA256,
				merkle_bs(), 0, want);
		if (strcmp(have, want))
			fail("%s: digest %s after a remount, fsverity digest says %s",
			     paths[i], have, want);
		check_contents(paths[i], data, size);
		free(data);
	}
	{
		char out[4096];

		if (fs_check(out, sizeof(out)))
			fail("xfs_repair -n after the enables: %s", out);
	}
	for (int i = 0; i < nr; i++) {
		unlink(paths[i]);
		free(paths[i]);
	}
}

/* make soak (fsv.soak=N): cycles for N seconds */
static void writeback_race_body(void)
{
	double end = mono_now() + cmdline_int("fsv.soak=", 0);
	int cycles = 0;

	do
		writeback_race_cycle();
	while (++cycles && mono_now() < end);
	note("%d cycles", cycles);
}

TEST_TIMEOUT(writeback_begun_before_an_enable_writes_the_tree_it_finds, 900)
{
	char dev[64];

	need_xfs();
	snprintf(dev, sizeof(dev), "%s", strrchr(env.dev, '/') + 1);
	snprintf(wb_delay, sizeof(wb_delay),
		 "/sys/fs/xfs/%s/errortag/writepages_delay_ms", dev);
	if (access(wb_delay, W_OK))
		*wb_delay = '\0';
	get_str(DIRTY_EXPIRE, old_expire, sizeof(old_expire));
	get_str(DIRTY_WAKEUP, old_wakeup, sizeof(old_wakeup));
	if (!access(ENABLE_THREADS, W_OK))
		get_str(ENABLE_THREADS, old_threads, sizeof(old_threads));
	with_cleanup(writeback_race_body, restore_writeback,
		     850 + cmdline_int("fsv.soak=", 0));
}
