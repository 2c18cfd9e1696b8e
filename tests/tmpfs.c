// SPDX-License-Identifier: GPL-2.0
/*
 * fs-verity on tmpfs and memfds: FS_IOC_ENABLE_VERITY, MEASURE and
 * READ_VERITY_METADATA with ext4's semantics and errnos, on any tmpfs
 * mount (no mount option) and on memfd_create() files.
 *
 * tmpfs has no disk: the descriptor and the Merkle tree live in the file's
 * own page cache past EOF (the descriptor at round_up(i_size, 2 MiB), the
 * tree 16 KiB after it), where read(), splice(), lseek() and mmap() never
 * show them, not even through a huge folio holding EOF.  Like any other
 * page of the file they count in st_blocks, are charged to the mount's
 * size= limit, to the owner's quota and to the enabling task's memory
 * cgroup, are swapped out under memory pressure and are freed with the
 * file.  A limit that the tree does not fit in fails the enable (ENOSPC,
 * EDQUOT, ENOMEM without an OOM kill) and leaves the file as it was.
 *
 * memfds: the memfd_create() fd is open for writing, so the enable is
 * ETXTBSY until every writer is gone (the fd, a writable shared mapping);
 * the enable goes through a read-only reopen (/proc/self/fd/N).  Seals are
 * kept.  The composefs shape: an erofs image in /run, enabled, measured
 * and mounted through a loop device configured from the measured fd.
 *
 * tmpfs does not depend on the filesystem under test: the area runs in the
 * ext4 pass only (boot 1), each test on its own tmpfs under /mnt, mounted
 * and unmounted whatever happens to the test (with_cleanup()).  The swap
 * test puts its swap file on env.mnt (ext4).
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */
#include "sig.h"

#include <setjmp.h>
#include <sys/mman.h>
#include <sys/swap.h>
#include <sys/wait.h>
#include <linux/loop.h>
#include <linux/magic.h>

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE	0x0010
#endif

#define SHA256		FS_VERITY_HASH_ALG_SHA256
#define SHA512		FS_VERITY_HASH_ALG_SHA512
#define MIB		(1ULL << 20)
#define META_ALIGN	(2 * MIB)	/* the descriptor at round_up(i_size, this) */
#define DESC_ROOM	16384		/* the tree after the descriptor's room */
#define CG		CGROOT "/fsverity-tmpfs"
#define REF_COPY	"/tmp/fsv-tmpfs-ref"	/* plain copies for fsverity digest */

/* the tmpfs of the running test */
static char dir[128];
/* what the test needs undone besides the unmount (NULL: nothing) */
static void (*extra_cleanup)(void);

/* "<dir>/<name>", malloc'd */
static char *tp(const char *name)
{
	return path_join(dir, name);
}

static unsigned long long round_up(unsigned long long v, unsigned long long a)
{
	return (v + a - 1) / a * a;
}

/*
 * The area runs in the ext4 pass, on a kernel with fs-verity on tmpfs:
 * probed with a file in the guest's /tmp (a tmpfs), so that the skip on
 * mainline comes before anything is mounted.  On our kernel a missing
 * ioctl is a failure.
 */
static void tmpfs_area_ready(void)
{
	const char *probe = "/tmp/fsv-tmpfs-probe";
	struct statfs sfs;
	int err;

	if (strcmp(env.fs, "ext4"))
		skip("filesystem independent: runs in the ext4 pass only");
	if (statfs("/tmp", &sfs) || sfs.f_type != TMPFS_MAGIC)
		fail("/tmp is not a tmpfs in the guest (tests/guest/init mounts one)");
	unlink(probe);
	make_file(probe, 4096, 1);
	err = enable_verity_path(probe, SHA256, 12, NULL, 0);
	unlink(probe);
	if ((err == ENOTTY || err == EOPNOTSUPP) && !kernel_is_ours())
		skip("mainline 6.12 has no fs-verity on tmpfs (%s)",
		     errno_name(err));
	if (err)
		fail("FS_IOC_ENABLE_VERITY on a file in /tmp (tmpfs): %s",
		     errno_name(err));
}

static void tmpfs_cleanup(void)
{
	if (extra_cleanup)
		extra_cleanup();
	if (chdir("/"))
		note("chdir /: %s", strerror(errno));
	/* a busy mount (a leftover process) goes lazily, freeing its pages
	 * when the last user is gone */
	if (umount(dir) && errno == EBUSY) {
		note("umount %s: busy: detached", dir);
		umount2(dir, MNT_DETACH);
	}
	rmdir(dir);
}

/*
 * A fresh tmpfs on /mnt/tmpfs-@tag mounted with @opts, body() run in a
 * child, then the extra cleanup and the unmount whatever happened; the
 * body gets @secs before its alarm.
 */
static void in_tmpfs(const char *tag, const char *opts, void (*body)(void),
		     void (*cleanup)(void), int secs)
{
	tmpfs_area_ready();
	snprintf(dir, sizeof(dir), "/mnt/tmpfs-%s", tag);
	extra_cleanup = cleanup;
	mkdir(dir, 0755);
	umount_if_mounted(dir);		/* an earlier run failed midway */
	if (mount("tmpfs", dir, "tmpfs", 0, opts))
		fail("mount -t tmpfs -o %s tmpfs %s: %s", opts, dir,
		     strerror(errno));
	with_cleanup(body, tmpfs_cleanup, secs);
}

static struct stat stat_of(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		fail("stat %s: %s", path, strerror(errno));
	return st;
}

static unsigned long long bfree(void)
{
	struct statfs sfs;

	if (statfs(dir, &sfs))
		fail("statfs %s: %s", dir, strerror(errno));
	return sfs.f_bfree;
}

/* "Used" of `df -kP` for the tmpfs, in KiB */
static unsigned long long df_used_kib(void)
{
	unsigned long long blocks, used;
	char out[1024], *line;

	if (run_cmd(out, sizeof(out), "df -kP '%s'", dir))
		fail("df -kP %s: %s", dir, out);
	line = strchr(out, '\n');
	if (!line || sscanf(line + 1, "%*s %llu %llu", &blocks, &used) != 2)
		fail("df -kP %s: cannot parse: %s", dir, out);
	return used;
}

/* The kernel's digest of @path against fsverity digest of the same file */
static void check_digest(const char *path, int alg, int bs, int salt_len,
			 const char *want)
{
	char got[2 * MAX_DIGEST + 1];
	int got_alg;

	kernel_digest_hex(path, got, &got_alg);
	if (got_alg != alg || strcmp(got, want))
		fail("%s (%s, bs %d, salt %d): kernel %s:%s, fsverity digest %s",
		     path, alg_name(alg), bs, salt_len, alg_name(got_alg), got,
		     want);
}

/* A whole metadata item of @path, read in @chunk-byte pieces (malloc'd) */
static unsigned char *read_item(const char *path, uint64_t type, size_t chunk,
				size_t *len)
{
	size_t cap = 1 << 16, off = 0;
	unsigned char *buf = malloc(cap);
	int fd = CHECK_OK(open(path, O_RDONLY));
	long n;

	for (;;) {
		if (off + chunk > cap) {
			cap = 2 * (off + chunk);
			buf = realloc(buf, cap);
		}
		if (!buf)
			fail("out of memory");
		n = read_md(fd, type, off, chunk, buf + off);
		if (n < 0)
			fail("%s: READ_VERITY_METADATA(%llu) at %zu: %s", path,
			     (unsigned long long)type, off, errno_name(-n));
		if (n == 0)
			break;
		off += n;
	}
	close(fd);
	*len = off;
	return buf;
}

/* the metadata item of @path is @want, byte for byte */
static void compare_item_with(const char *path, uint64_t type,
			      const unsigned char *want, size_t want_len)
{
	size_t len;
	unsigned char *got = read_item(path, type, 4096, &len);

	if (len != want_len || memcmp(got, want, len))
		fail("%s: READ_VERITY_METADATA(%llu): %zu bytes, want fsverity digest's %zu%s",
		     path, (unsigned long long)type, len, want_len,
		     len == want_len ? ", contents differ" : "");
	free(got);
}

/* ---- the ioctls, with ext4's semantics ---- */

static void digest_body(void)
{
	static const int algs[] = { SHA256, SHA512 };
	static const int bss[] = { 1024, 2048, 4096 };
	static const int salts[] = { 0, 1, 32 };
	/* empty, one byte, a block and a byte, 2 MiB (the descriptor right
	 * at EOF) and 2 MiB + 1 (the descriptor at 4 MiB) */
	static const uint64_t sizes[] = { 0, 1, 4097, 2 * MIB, 2 * MIB + 1 };
	char want[2 * MAX_DIGEST + 1], name[64];
	int n = 0;

	for (int i = 0; i < 2 * 3 * 3 * 5; i++, n++) {
		int alg = algs[i / 45], bs = bss[i / 15 % 3];
		int salt = salts[i / 5 % 3];
		uint64_t size = sizes[i % 5];
		char *p;

		snprintf(name, sizeof(name), "%s-%d-%d-%" PRIu64, alg_name(alg),
			 bs, salt, size);
		p = tp(name);
		make_file(p, size, 100 + i % 5);
		user_digest_hex(p, alg, bs, salt, want);
		must_enable(p, alg, bs, salt);
		check_digest(p, alg, bs, salt, want);
		unlink(p);
		free(p);
	}
	note("%d files: every hash, block size and salt equals fsverity digest", n);
}

/*
 * FS_IOC_MEASURE_VERITY of a tmpfs file equals fsverity-utils' digest for
 * SHA-256 and SHA-512, no salt, a 1-byte and a 32-byte salt, Merkle blocks
 * of 1024, 2048 and 4096 bytes, sizes around the block and the 2 MiB
 * alignment of the metadata.
 */
TEST_TIMEOUT(digest_matches_fsverity_utils_for_every_hash_salt_and_block_size, 400)
{
	in_tmpfs("digest", "size=64m", digest_body, NULL, 380);
}

/* the tree and descriptor of @path as fsverity digest computes them, the
 * ioctl in whole and in 4096- and 1000-byte reads, pread() at the end */
static void compare_metadata(const char *path, uint64_t size, int alg, int bs,
			     int salt_len)
{
	/* the trees here are under 1 MiB: the first is one read */
	static const size_t chunks[] = { 1 << 20, 4096, 1000 };
	unsigned char *tree, desc[256], *got, buf[64];
	size_t tree_size, len;
	int fd;

	make_file(path, size, size);
	ref_metadata(path, alg, bs, salt_len, &tree, &tree_size, desc);
	must_enable(path, alg, bs, salt_len);
	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		got = read_item(path, FS_VERITY_METADATA_TYPE_MERKLE_TREE,
				chunks[i], &len);
		if (len != tree_size || memcmp(got, tree, len))
			fail("%s (%s, bs %d): Merkle tree in %zu-byte reads: %zu bytes, want fsverity digest's %zu%s",
			     path, alg_name(alg), bs, chunks[i], len, tree_size,
			     len == tree_size ? ", contents differ" : "");
		free(got);
		got = read_item(path, FS_VERITY_METADATA_TYPE_DESCRIPTOR,
				chunks[i], &len);
		if (len != 256 || memcmp(got, desc, 256))
			fail("%s: descriptor in %zu-byte reads: %zu bytes%s",
			     path, chunks[i], len,
			     len == 256 ? ", contents differ" : "");
		free(got);
	}
	fd = CHECK_OK(open(path, O_RDONLY));
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_MERKLE_TREE, tree_size,
		      sizeof(buf), buf) == 0);
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_DESCRIPTOR, 256, sizeof(buf),
		      buf) == 0);
	/* an unsigned file has no signature */
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_SIGNATURE, 0, sizeof(buf),
		      buf) == -ENODATA);
	close(fd);
	note("%s: %s, bs %d: %zu-byte tree and the descriptor as fsverity digest's",
	     path, alg_name(alg), bs, tree_size);
	free(tree);
}

static void read_metadata_body(void)
{
	compare_metadata(tp("one-level"), 100000, SHA256, 4096, 0);
	compare_metadata(tp("three-levels"), 3 * MIB + 100, SHA512, 1024, 16);
	compare_metadata(tp("two-levels"), 3 * MIB + 100, SHA256, 4096, 32);
}

/*
 * FS_IOC_READ_VERITY_METADATA returns fsverity digest's Merkle tree and
 * descriptor byte for byte (one to three levels, both hashes), reads at
 * their ends return 0, and an unsigned file's signature is ENODATA.
 */
TEST_TIMEOUT(read_metadata_returns_the_tree_and_descriptor, 200)
{
	in_tmpfs("metadata", "size=64m", read_metadata_body, NULL, 180);
}

static void etxtbsy_body(void)
{
	char *p = tp("f"), self[64];
	int rw, wo, ro, ro2;

	make_file(p, 100000, 3);
	rw = CHECK_OK(open(p, O_RDWR));
	CHECK(enable_verity(rw, SHA256, 12, NULL, 0, NULL, 0) == ETXTBSY);
	ro = CHECK_OK(open(p, O_RDONLY));
	CHECK(enable_verity(ro, SHA256, 12, NULL, 0, NULL, 0) == ETXTBSY);
	close(rw);
	wo = CHECK_OK(open(p, O_WRONLY));
	CHECK(enable_verity(ro, SHA256, 12, NULL, 0, NULL, 0) == ETXTBSY);
	close(wo);
	CHECK(!is_verity(p));
	CHECK(enable_verity(ro, SHA256, 12, NULL, 0, NULL, 0) == 0);
	/* a second enable, through the same fd and a new one */
	CHECK(enable_verity(ro, SHA256, 12, NULL, 0, NULL, 0) == EEXIST);
	snprintf(self, sizeof(self), "/proc/self/fd/%d", ro);
	ro2 = CHECK_OK(open(self, O_RDONLY));
	CHECK(enable_verity(ro2, SHA512, 10, NULL, 0, NULL, 0) == EEXIST);
	close(ro2);
	close(ro);
	CHECK(is_verity(p));
	free(p);
}

/*
 * An enable while the file is open for writing, by the caller's own O_RDWR
 * fd or by another O_RDWR or O_WRONLY fd, is ETXTBSY and changes nothing;
 * with the writers gone it succeeds, and a second enable is EEXIST.
 */
TEST(enable_with_a_writer_is_etxtbsy_and_a_second_enable_is_eexist)
{
	in_tmpfs("etxtbsy", "size=64m", etxtbsy_body, NULL, 100);
}

static void write_refused_body(void)
{
	char *p = tp("f"), self[64];
	int ro, fd;

	make_file(p, 100000, 4);
	must_enable(p, SHA256, 4096, 0);
	CHECK_ERRNO(open(p, O_WRONLY), EPERM);
	CHECK_ERRNO(open(p, O_RDWR), EPERM);
	CHECK_ERRNO(open(p, O_WRONLY | O_APPEND), EPERM);
	ro = CHECK_OK(open(p, O_RDONLY));
	snprintf(self, sizeof(self), "/proc/self/fd/%d", ro);
	CHECK_ERRNO(open(self, O_WRONLY), EPERM);
	CHECK_ERRNO(open(self, O_RDWR), EPERM);
	CHECK_ERRNO(truncate(p, 0), EPERM);
	CHECK_ERRNO(truncate(p, 200000), EPERM);
	/* ftruncate() needs a writable fd, which a verity file has none of:
	 * on the read-only one the VFS refuses it before tmpfs sees it */
	CHECK_ERRNO(ftruncate(ro, 0), EINVAL);
	fd = CHECK_OK(open(self, O_RDONLY));
	close(fd);
	close(ro);
	CHECK(stat_of(p).st_size == 100000);
	expect_made_file(p, 100000, 4);
	free(p);
}

/*
 * A verity tmpfs file cannot be opened for writing, by path or through
 * /proc/self/fd/N, nor truncated: EPERM; it still reads back as written.
 */
TEST(write_opens_and_truncation_are_refused)
{
	in_tmpfs("readonly", "size=64m", write_refused_body, NULL, 100);
}

static int getflags(const char *path)
{
	int fd = CHECK_OK(open(path, O_RDONLY)), flags;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags))
		fail("FS_IOC_GETFLAGS %s: %s", path, strerror(errno));
	close(fd);
	return flags;
}

static int setflags(const char *path, int flags)
{
	int fd = CHECK_OK(open(path, O_RDONLY));
	int err = ioctl(fd, FS_IOC_SETFLAGS, &flags) ? errno : 0;

	close(fd);
	return err;
}

/* verity by every flag, the same digest, and still not writable */
static void check_same_verity(const char *path, const char *digest,
			      const char *after)
{
	char now[2 * MAX_DIGEST + 1];
	int alg;

	if (!(getflags(path) & FS_VERITY_FL) || !is_verity(path))
		fail("after %s: FS_VERITY_FL %d, STATX_ATTR_VERITY %d", after,
		     !!(getflags(path) & FS_VERITY_FL), is_verity(path));
	kernel_digest_hex(path, now, &alg);
	if (strcmp(now, digest))
		fail("after %s: digest %s, was %s", after, now, digest);
	CHECK_ERRNO(open(path, O_WRONLY), EPERM);
}

static void flags_body(void)
{
	char *p = tp("f"), digest[2 * MAX_DIGEST + 1], out[1024];
	int flags, err, alg;

	make_file(p, 50000, 5);
	/* statx says whether, before and after (is_verity() fails unless
	 * STATX_ATTR_VERITY is in stx_attributes_mask) */
	CHECK(!is_verity(p));
	CHECK(!(getflags(p) & FS_VERITY_FL));
	must_enable(p, SHA256, 4096, 0);
	CHECK(is_verity(p));
	flags = getflags(p);
	CHECK(flags & FS_VERITY_FL);
	kernel_digest_hex(p, digest, &alg);

	err = setflags(p, flags);
	if (err)
		fail("FS_IOC_SETFLAGS with the flags read back (%#x): %s", flags,
		     errno_name(err));
	check_same_verity(p, digest, "SETFLAGS of the flags read back");
	err = setflags(p, flags | FS_NODUMP_FL);
	if (err)
		fail("FS_IOC_SETFLAGS %#x (+nodump): %s", flags | FS_NODUMP_FL,
		     errno_name(err));
	CHECK(getflags(p) == (flags | FS_NODUMP_FL));
	check_same_verity(p, digest, "SETFLAGS +nodump");
	/* chattr: GETFLAGS, one flag changed, SETFLAGS of them all */
	if (run_cmd(out, sizeof(out), "chattr -d '%s'", p))
		fail("chattr -d %s: %s", p, out);
	CHECK(getflags(p) == flags);
	check_same_verity(p, digest, "chattr -d");
	free(p);
}

/*
 * statx reports STATX_ATTR_VERITY (and has it in stx_attributes_mask),
 * FS_IOC_GETFLAGS has FS_VERITY_FL; FS_IOC_SETFLAGS of the flags as read
 * back (verity included), another flag set and chattr's round trip all
 * succeed and leave the same verity file.
 */
TEST(statx_and_getflags_report_verity_and_setflags_keeps_it)
{
	in_tmpfs("flags", "size=64m", flags_body, NULL, 100);
}

static void efbig_body(void)
{
	const off_t size = 128LL << 30;
	char *p = tp("efbig");
	struct fsverity_enable_arg arg;
	int fd;

	fd = CHECK_OK(open(p, O_CREAT | O_RDWR, 0644));
	CHECK_OK(ftruncate(fd, size));
	close(fd);
	fd = CHECK_OK(open(p, O_RDONLY));
	enable_arg_init(&arg, SHA512, 1024);
	CHECK(raw_enable(fd, &arg) == EFBIG);
	CHECK(!fd_has_verity_flag(fd));
	close(fd);
	CHECK(!is_verity(p));
	CHECK(stat_of(p).st_size == size);
	CHECK_OK(truncate(p, 0));	/* still writable */
	free(p);
}

/*
 * A sparse 128 GiB tmpfs file (SHA-512, 1 KiB blocks: more blocks than the
 * core tracks per file) is EFBIG before any work, as on ext4 (errors.c),
 * and stays an ordinary file.
 */
TEST(enable_on_too_large_file_is_efbig)
{
	if (sysconf(_SC_PAGESIZE) == 1024)
		skip("page size is 1024: no bitmap limit");
	in_tmpfs("efbig", "size=64m", efbig_body, NULL, 100);
}

/* ---- where the tree lives: past EOF, invisible, counted ---- */

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

/* Does reading the byte at @p raise SIGBUS?  Else its value in *@val. */
static bool read_faults(const volatile unsigned char *p, unsigned char *val)
{
	struct sigaction sa, old;
	bool faulted;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(bus_jmp, 1)) {
		faulted = true;
	} else {
		*val = *p;
		faulted = false;
	}
	sigaction(SIGBUS, &old, NULL);
	return faulted;
}

/*
 * @size bytes of @path (a verity file, @tree_size bytes of tree) through
 * read(), pread(), splice(), lseek() and a shared mapping: the data, then
 * nothing.  The bytes of the mapping past EOF read 0 or raise SIGBUS
 * (always SIGBUS past the EOF page, unless a huge folio holding EOF is
 * mapped whole, when @huge), and the descriptor and the tree always do.
 */
static void check_invisible(const char *path, uint64_t size, size_t tree_size,
			    uint64_t seed, bool huge)
{
	const uint64_t desc_at = round_up(size, META_ALIGN);
	const uint64_t tree_at = desc_at + DESC_ROOM;
	const long ps = sysconf(_SC_PAGESIZE);
	const uint64_t eof_page_end = round_up(size, ps);
	const size_t map_len = tree_at + round_up(tree_size, ps) + ps;
	unsigned char buf[4096], v;
	uint64_t zeros = 0, faults = 0;
	volatile unsigned char *m;
	loff_t off;
	int fd, pfd[2];

	fd = CHECK_OK(open(path, O_RDONLY));
	/* read(), pread(), splice(): the data, then EOF; nothing at the
	 * descriptor or the tree either */
	expect_made_file(path, size, seed);
	CHECK(pread(fd, buf, sizeof(buf), size) == 0);
	CHECK(pread(fd, buf, sizeof(buf), desc_at) == 0);
	CHECK(pread(fd, buf, sizeof(buf), tree_at) == 0);
	CHECK(lseek(fd, size, SEEK_SET) == (off_t)size);
	CHECK(read(fd, buf, sizeof(buf)) == 0);
	CHECK_OK(pipe(pfd));
	off = size;
	CHECK(splice(fd, &off, pfd[1], NULL, sizeof(buf), 0) == 0);
	off = desc_at;
	CHECK(splice(fd, &off, pfd[1], NULL, sizeof(buf), 0) == 0);
	close(pfd[0]);
	close(pfd[1]);

	/* lseek(): one data extent ending at EOF, then nothing */
	CHECK(lseek(fd, 0, SEEK_DATA) == 0);
	CHECK(lseek(fd, 0, SEEK_HOLE) == (off_t)size);
	CHECK_ERRNO(lseek(fd, size, SEEK_DATA), ENXIO);
	CHECK_ERRNO(lseek(fd, size, SEEK_HOLE), ENXIO);
	CHECK_ERRNO(lseek(fd, desc_at, SEEK_DATA), ENXIO);
	CHECK_ERRNO(lseek(fd, tree_at, SEEK_DATA), ENXIO);
	CHECK_ERRNO(lseek(fd, tree_at, SEEK_HOLE), ENXIO);

	/* mmap() */
	m = mmap(NULL, map_len, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		fail("mmap %zu bytes of %s: %s", map_len, path, strerror(errno));
	if (read_faults(m + size - 1, &v))
		fail("%s: SIGBUS on the last byte of the file", path);
	for (uint64_t o = size; o < eof_page_end; o++) {
		if (read_faults(m + o, &v))
			fail("%s: SIGBUS at %" PRIu64 ", inside the last page",
			     path, o);
		if (v)
			fail("%s: byte %" PRIu64 " past EOF in the last page is %#x",
			     path, o, v);
	}
	/* page by page up to the descriptor: zeros of a huge folio, or
	 * SIGBUS */
	for (uint64_t o = eof_page_end; o < desc_at; o += ps) {
		if (read_faults(m + o, &v)) {
			faults++;
			continue;
		}
		if (!huge)
			fail("%s: the page at %" PRIu64 ", past the EOF page, is mapped",
			     path, o);
		for (long i = 0; i < ps; i++)
			if (m[o + i])
				fail("%s: byte %" PRIu64 " past EOF, mapped, is %#x",
				     path, o + i, m[o + i]);
		zeros++;
	}
	if (huge)
		note("%s: past the EOF page, %" PRIu64 " pages read zeros (a huge folio mapped whole), %" PRIu64 " SIGBUS",
		     path, zeros, faults);
	if (!read_faults(m + desc_at, &v))
		fail("%s: the descriptor (offset %" PRIu64 ") is mapped: reads %#x",
		     path, desc_at, v);
	if (!read_faults(m + tree_at, &v))
		fail("%s: the tree (offset %" PRIu64 ") is mapped: reads %#x",
		     path, tree_at, v);
	if (!read_faults(m + tree_at + tree_size - 1, &v))
		fail("%s: the tree's last byte (offset %" PRIu64 ") is mapped: reads %#x",
		     path, tree_at + tree_size - 1, v);
	munmap((void *)m, map_len);
	close(fd);
}

/* make, enable and check one file; st_blocks must grow by the tree */
static void past_eof_file(const char *name, uint64_t size, bool huge)
{
	char *p = tp(name), want[2 * MAX_DIGEST + 1];
	unsigned char *tree, desc[256];
	unsigned long long blocks0, blocks1;
	size_t tree_size;

	make_file(p, size, size);
	ref_metadata(p, SHA256, 4096, 0, &tree, &tree_size, desc);
	user_digest_hex(p, SHA256, 4096, 0, want);
	blocks0 = stat_of(p).st_blocks;
	must_enable(p, SHA256, 4096, 0);
	blocks1 = stat_of(p).st_blocks;
	note("%s: %" PRIu64 " bytes: st_blocks %llu before the enable, %llu after; the tree is %zu bytes",
	     name, size, blocks0, blocks1, tree_size);
	if (blocks1 < blocks0 + tree_size / 512)
		fail("%s: st_blocks grew by %llu sectors, less than the %zu-byte tree",
		     p, blocks1 - blocks0, tree_size);
	CHECK(stat_of(p).st_size == (off_t)size);
	check_digest(p, SHA256, 4096, 0, want);
	check_invisible(p, size, tree_size, size, huge);
	free(tree);
	free(p);
}

static void past_eof_body(void)
{
	/* the descriptor at 4 MiB; at 2 MiB, the page right after EOF */
	past_eof_file("f", 3 * MIB + 123, false);
	past_eof_file("g", 2 * MIB, false);
}

/*
 * The descriptor and the tree stored past EOF are invisible: read(),
 * pread() and splice() at and past EOF return 0, SEEK_DATA/SEEK_HOLE see
 * one data extent ending at EOF (ENXIO from there), a mapping reads zeros
 * after EOF in the last page and SIGBUS after it, on the metadata too;
 * st_blocks grows by at least the tree.
 */
TEST(metadata_is_invisible_past_eof_and_counted_in_st_blocks)
{
	in_tmpfs("pasteof", "size=64m", past_eof_body, NULL, 100);
}

static void huge_body(void)
{
	/* EOF inside the second huge folio, and at the end of the first */
	past_eof_file("f", 3 * MIB + 123, true);
	past_eof_file("g", 2 * MIB, true);
	past_eof_file("h", 100000, true);
}

/*
 * With huge=always, a huge folio of data that holds EOF may be mapped
 * whole: what it holds past EOF reads zeros, and no mapping ever reaches
 * the descriptor or the tree (they start at the next 2 MiB boundary).
 */
TEST(huge_folios_past_eof_never_show_the_metadata)
{
	in_tmpfs("huge", "size=64m,huge=always", huge_body, NULL, 100);
}

static void fallocate_body(void)
{
	char *p = tp("f"), want[2 * MAX_DIGEST + 1];
	unsigned char *tree, desc[256];
	unsigned long long blocks0, blocks1, blocks2;
	size_t tree_size;

	make_file(p, 100000, 17);
	ref_metadata(p, SHA256, 4096, 0, &tree, &tree_size, desc);
	user_digest_hex(p, SHA256, 4096, 0, want);
	blocks0 = stat_of(p).st_blocks;
	{
		int fd = CHECK_OK(open(p, O_RDWR));

		/* 8 MiB reserved past EOF, over where the metadata goes */
		CHECK_OK(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 8 * MIB));
		close(fd);
	}
	blocks1 = stat_of(p).st_blocks;
	CHECK(blocks1 >= 8 * MIB / 512);
	must_enable(p, SHA256, 4096, 0);
	blocks2 = stat_of(p).st_blocks;
	note("st_blocks %llu written, %llu fallocated to 8 MiB, %llu after the enable; tree %zu bytes",
	     blocks0, blocks1, blocks2, tree_size);
	/* the data, the tree, the descriptor's room, and no more */
	if (blocks2 > blocks0 + (tree_size + 16384 + 4096) / 512)
		fail("st_blocks %llu after the enable: the fallocated pages past EOF were kept (%llu before it, %llu written)",
		     blocks2, blocks1, blocks0);
	CHECK(stat_of(p).st_size == 100000);
	check_digest(p, SHA256, 4096, 0, want);
	compare_item_with(p, FS_VERITY_METADATA_TYPE_MERKLE_TREE, tree, tree_size);
	compare_item_with(p, FS_VERITY_METADATA_TYPE_DESCRIPTOR, desc, 256);
	check_invisible(p, 100000, tree_size, 17, false);
	free(tree);
	free(p);
}

/*
 * Pages fallocate(FALLOC_FL_KEEP_SIZE) reserved past EOF, where the
 * metadata goes, are freed by the enable (as ext4 frees its blocks past
 * EOF): st_blocks is the data and the metadata, the digest and metadata
 * are fsverity digest's, nothing shows past EOF.
 */
TEST(fallocated_pages_past_eof_are_freed_by_the_enable)
{
	in_tmpfs("fallocate", "size=64m", fallocate_body, NULL, 100);
}

static void holes_body(void)
{
	char *p = tp("f"), want[2 * MAX_DIGEST + 1];
	unsigned char *data = random_buf(64 * 1024, 23);
	unsigned long long blocks0, blocks1;
	unsigned char *tree, desc[256];
	size_t tree_size;
	int fd;

	/* data, a hole, pages fallocated and never written, data at EOF */
	fd = CHECK_OK(open(p, O_RDWR | O_CREAT | O_TRUNC, 0644));
	CHECK(pwrite(fd, data, 64 * 1024, 0) == 64 * 1024);
	CHECK_OK(fallocate(fd, 0, 512 * 1024, 256 * 1024));
	CHECK(pwrite(fd, data, 4096, MIB - 4096) == 4096);
	close(fd);
	ref_metadata(p, SHA256, 4096, 0, &tree, &tree_size, desc);
	user_digest_hex(p, SHA256, 4096, 0, want);
	blocks0 = stat_of(p).st_blocks;
	must_enable(p, SHA256, 4096, 0);
	blocks1 = stat_of(p).st_blocks;
	note("st_blocks %llu before the enable (68 KiB written, 256 KiB fallocated), %llu after; tree %zu bytes",
	     blocks0, blocks1, tree_size);
	/* the tree, the descriptor's room, and nothing for the hole */
	if (blocks1 > blocks0 + (tree_size + 16384 + 4096) / 512)
		fail("st_blocks %llu after the enable, %llu before: the hole was filled",
		     blocks1, blocks0);
	check_digest(p, SHA256, 4096, 0, want);
	compare_item_with(p, FS_VERITY_METADATA_TYPE_MERKLE_TREE, tree, tree_size);
	free(tree);
	free(data);
	free(p);
}

/*
 * A file with a hole and pages fallocated but never written inside its
 * size enables to fsverity-utils' digest: they hash as zeroes, and the
 * enable allocates nothing for the hole.
 */
TEST(holes_and_unwritten_fallocated_pages_hash_as_zeroes)
{
	in_tmpfs("holes", "size=64m", holes_body, NULL, 100);
}

static void unlink_body(void)
{
	unsigned long long free0 = bfree(), used0 = df_used_kib(), free1;
	char *p = tp("f"), *q = tp("g");
	int fd;

	make_file(p, 4 * MIB, 7);
	must_enable(p, SHA256, 4096, 0);
	free1 = bfree();
	note("f_bfree %llu before, %llu with the 4 MiB verity file; df used %llu KiB before",
	     free0, free1, used0);
	/* at least the data and the tree's 9 blocks */
	CHECK(free0 - free1 >= 4 * MIB / 4096 + 9);
	CHECK_OK(unlink(p));
	CHECK(bfree() == free0);
	CHECK(df_used_kib() == used0);

	/* the same with the file open at the unlink: freed at the close */
	make_file(q, 4 * MIB, 8);
	must_enable(q, SHA512, 1024, 0);
	fd = CHECK_OK(open(q, O_RDONLY));
	CHECK_OK(unlink(q));
	CHECK(bfree() < free0);
	close(fd);
	if (bfree() != free0 || df_used_kib() != used0)
		fail("after the last close of an unlinked verity file: f_bfree %llu (was %llu), df used %llu KiB (was %llu)",
		     bfree(), free0, df_used_kib(), used0);
	free(p);
	free(q);
}

/*
 * Unlinking a verity file gives all of its space back, the tree's too:
 * statfs's f_bfree and df's used are what they were before the file was
 * made, at the unlink or, if it was open, at its last close.
 */
TEST(unlink_frees_the_tree)
{
	in_tmpfs("unlink", "size=64m", unlink_body, NULL, 100);
}

/* ---- limits: size=, quota, memory cgroup ---- */

#define LIMIT_DATA	(4 * MIB)
#define LIMIT_SEED	9

/* tree size of LIMIT_DATA bytes, SHA-256, 4 KiB: fsverity digest's */
static size_t limit_tree_size(const char *path)
{
	unsigned char *tree, desc[256];
	size_t tree_size;

	ref_metadata(path, SHA256, 4096, 0, &tree, &tree_size, desc);
	free(tree);
	return tree_size;
}

/* the failed enable left @path as make_file() wrote it, in st_blocks too */
static void check_left_alone(const char *path, unsigned long long blocks,
			     uint64_t size, uint64_t seed)
{
	unsigned long long now = stat_of(path).st_blocks;

	if (now != blocks)
		fail("%s: st_blocks %llu after the failed enable, %llu before",
		     path, now, blocks);
	check_unchanged(path, size, seed);
}

static void enospc_body(void)
{
	char *p = tp("f"), opts[64], want[2 * MAX_DIGEST + 1];
	unsigned long long blocks, free0;
	int err;

	make_file(p, LIMIT_DATA, LIMIT_SEED);
	user_digest_hex(p, SHA256, 4096, 0, want);
	blocks = stat_of(p).st_blocks;
	free0 = bfree();
	note("%llu blocks free for a %zu-byte tree", free0,
	     limit_tree_size(p));
	err = enable_verity_path(p, SHA256, 12, NULL, 0);
	if (err != ENOSPC)
		fail("enable with %llu blocks free for the tree: %s, want ENOSPC",
		     free0, err ? errno_name(err) : "success");
	check_left_alone(p, blocks, LIMIT_DATA, LIMIT_SEED);
	CHECK(bfree() == free0);

	snprintf(opts, sizeof(opts), "size=%llu", LIMIT_DATA + 2 * MIB);
	if (mount(NULL, dir, NULL, MS_REMOUNT, opts))
		fail("mount -o remount,%s %s: %s", opts, dir, strerror(errno));
	err = enable_verity_path(p, SHA256, 12, NULL, 0);
	if (err)
		fail("enable after remount,%s: %s", opts, errno_name(err));
	check_digest(p, SHA256, 4096, 0, want);
	free(p);
}

/*
 * On a tmpfs whose size= leaves room for the data and half the tree, the
 * enable is ENOSPC and leaves the file as it was (not verity, same
 * st_blocks and f_bfree, same bytes, writable); after remount,size= with
 * room, it succeeds with fsverity digest's digest.
 */
TEST(enable_over_the_size_limit_is_enospc_and_leaves_the_file)
{
	char opts[64];

	/* the 4 MiB of data and 4 blocks: the tree has 9, and a descriptor */
	snprintf(opts, sizeof(opts), "size=%llu", LIMIT_DATA + 4 * 4096);
	in_tmpfs("enospc", opts, enospc_body, NULL, 100);
}

#define QUOTA_UID	4242

/*
 * FS_IOC_ENABLE_VERITY by uid QUOTA_UID on @path: its errno (100: the open
 * failed, -1: the child did not exit).  Root would not do: CAP_SYS_RESOURCE
 * ignores quota hard limits.
 */
static int enable_as_user(const char *path)
{
	int status;
	pid_t pid = CHECK_OK(fork());

	if (pid == 0) {
		int fd;

		if (setgid(QUOTA_UID) || setuid(QUOTA_UID))
			_exit(101);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			_exit(100);
		_exit(enable_verity(fd, SHA256, 12, NULL, 0, NULL, 0));
	}
	CHECK_OK(waitpid(pid, &status, 0));
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void edquot_body(void)
{
	char *p = tp("f"), want[2 * MAX_DIGEST + 1];
	unsigned long long blocks;
	int err;

	make_file(p, LIMIT_DATA, LIMIT_SEED);
	user_digest_hex(p, SHA256, 4096, 0, want);
	note("a %zu-byte tree over a quota 4 blocks above the data",
	     limit_tree_size(p));
	/* charged to QUOTA_UID, which gets the mount's default limit; the
	 * mode lets it enable after the file is given back to root */
	CHECK_OK(chown(p, QUOTA_UID, QUOTA_UID));
	CHECK_OK(chmod(p, 0666));
	blocks = stat_of(p).st_blocks;
	err = enable_as_user(p);
	if (err != EDQUOT)
		fail("enable by the owner over its quota: %s, want EDQUOT",
		     err == 100 ? "open failed" : err == 101 ? "setuid failed" :
		     err < 0 ? "child died" : err ? errno_name(err) : "success");
	check_left_alone(p, blocks, LIMIT_DATA, LIMIT_SEED);

	/* the quota limits cannot change on remount: root takes the file
	 * (and its charge) over and enables it itself, its CAP_SYS_RESOURCE
	 * passing the mount's default hard limit, which is root's too */
	CHECK_OK(chown(p, 0, 0));
	must_enable(p, SHA256, 4096, 0);
	check_digest(p, SHA256, 4096, 0, want);
	free(p);
}

/*
 * With usrquota and a block hard limit 4 blocks above the data, the owner's
 * enable is EDQUOT and leaves the file as it was; charged to an owner
 * without a limit, the same enable succeeds.
 */
TEST(enable_over_the_quota_is_edquot_and_leaves_the_file)
{
	char opts[128];

	snprintf(opts, sizeof(opts),
		 "size=64m,usrquota,usrquota_block_hardlimit=%llu",
		 LIMIT_DATA + 4 * 4096);
	in_tmpfs("edquot", opts, edquot_body, NULL, 100);
}

/* "<key> N" of a cgroup file of such lines (memory.events, memory.stat) */
static long long cg_key(const char *file, const char *key)
{
	char path[256], line[256];
	size_t kl = strlen(key);
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), CG "/%s", file);
	f = fopen(path, "r");
	if (!f)
		fail("open %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ' ')
			v = atoll(line + kl + 1);
	fclose(f);
	if (v < 0)
		fail("%s: no \"%s\"", path, key);
	return v;
}

/* a single-number cgroup file ("max" is -1) */
static long long cg_num(const char *file)
{
	char path[256], buf[64];

	snprintf(path, sizeof(path), CG "/%s", file);
	get_str(path, buf, sizeof(buf));
	return strcmp(buf, "max") ? atoll(buf) : -1;
}

/*
 * Run @fn(@arg) in a child moved into CG: the child's exit code (@fn's
 * return value, 101 if the move failed, -1 if it was killed: *@sig the
 * signal)
 */
static int in_cg(int (*fn)(const char *), const char *arg, int *sig)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = CHECK_OK(fork());
	if (pid == 0) {
		char buf[32];

		snprintf(buf, sizeof(buf), "%d", getpid());
		if (put_str_errno(CG "/cgroup.procs", buf))
			_exit(101);
		_exit(fn(arg));
	}
	CHECK_OK(waitpid(pid, &status, 0));
	*sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* /proc/vmstat's oom_kill: OOM kills anywhere since boot */
static long long oom_kills(void)
{
	char line[128];
	long long v = -1;
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		fail("open /proc/vmstat: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "oom_kill ", 9))
			v = atoll(line + 9);
	fclose(f);
	return v;
}

static int enable_fn(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return 100;
	return enable_verity(fd, SHA256, 12, NULL, 0, NULL, 0);
}

#define MEMCG_DATA	(256 * MIB)	/* a 2 MiB tree with SHA-256, 4K */
#define MEMCG_MAX	"1M"

static void memcg_cleanup(void)
{
	rmdir(CG);
}

static void enomem_body(void)
{
	char *p = tp("f");
	unsigned long long blocks0, blocks1;
	uint64_t fp0, fp1, len;
	long long kills0, kills1, ooms, sys0, sys1;
	int err, sig;

	/* the data, in its own pages charged outside the cgroup: only the
	 * tree's pages are charged to the enable's */
	make_file(p, MEMCG_DATA, 10);
	fp0 = file_fingerprint(p, &len);
	blocks0 = stat_of(p).st_blocks;
	cg_make(CG, "memory");
	put_str(CG "/memory.max", MEMCG_MAX);
	/* the tree pages cannot be swapped out instead (no file: no swap
	 * accounting, and no swap on either) */
	err = put_str_errno(CG "/memory.swap.max", "0");
	if (err && err != ENOENT)
		fail("memory.swap.max = 0: %s", strerror(err));
	kills0 = cg_key("memory.events", "oom_kill");
	sys0 = oom_kills();
	err = in_cg(enable_fn, p, &sig);
	kills1 = cg_key("memory.events", "oom_kill");
	sys1 = oom_kills();
	ooms = cg_key("memory.events", "oom");
	note("memory.max " MEMCG_MAX ": enable %s; memory.events oom %lld, oom_kill %lld -> %lld; peak %lld",
	     err < 0 ? strsignal(sig) : err ? errno_name(err) : "succeeded",
	     ooms, kills0, kills1, cg_num("memory.peak"));
	if (err < 0)
		fail("the enabling task was killed by %s (oom_kill %lld -> %lld)",
		     strsignal(sig), kills0, kills1);
	if (kills1 != kills0 || sys1 != sys0)
		fail("the OOM killer ran: oom_kill %lld -> %lld in the cgroup, %lld -> %lld in /proc/vmstat",
		     kills0, kills1, sys0, sys1);
	if (err != ENOMEM)
		fail("enable in a memory cgroup of " MEMCG_MAX " for a 2 MiB tree: %s, want ENOMEM",
		     err == 100 ? "open failed" : err == 101 ?
		     "could not join the cgroup" : err ? errno_name(err) : "success");
	CHECK(!is_verity(p));
	blocks1 = stat_of(p).st_blocks;
	if (blocks1 != blocks0)
		fail("st_blocks %llu after the failed enable, %llu before",
		     blocks1, blocks0);
	fp1 = file_fingerprint(p, &len);
	CHECK(fp1 == fp0 && len == MEMCG_DATA);
	close(CHECK_OK(open(p, O_WRONLY)));

	/* outside the cgroup the same enable succeeds */
	err = enable_verity_path(p, SHA256, 12, NULL, 0);
	if (err)
		fail("enable outside the cgroup: %s", errno_name(err));
	CHECK(is_verity(p));
	free(p);
}

/*
 * An enable whose tree (2 MiB) does not fit in its memory cgroup (1 MiB,
 * no swap) fails with ENOMEM, without an OOM kill (memory.events), leaving
 * the file as it was; the same enable outside the cgroup succeeds.
 */
TEST_TIMEOUT(enable_past_the_memcg_limit_is_enomem_and_leaves_the_file, 400)
{
	in_tmpfs("enomem", "size=300m", enomem_body, memcg_cleanup, 380);
}

/* ---- swap ---- */

#define NFILES		100
#define SWAP_FILE_SIZE	(256 << 10)
#define SWAP_SIZE	(128 * MIB)

static char *swapfile;

struct swapped {
	char path[160];
	char digest[2 * MAX_DIGEST + 1];	/* measured, == fsverity digest */
	unsigned char data[32];			/* sha256 of the contents */
	unsigned char desc[256];
	unsigned char *tree;
	size_t tree_size;
};

static struct swapped files[NFILES];

/* in the cgroup: the files, made and enabled, charged to it */
static int make_files_fn(const char *unused)
{
	(void)unused;
	for (int i = 0; i < NFILES; i++) {
		make_file(files[i].path, SWAP_FILE_SIZE, 1000 + i);
		if (enable_verity_path(files[i].path, SHA256, 12, NULL, 0))
			return 1;
	}
	return 0;
}

static void sha256_of(const char *path, unsigned char out[32])
{
	size_t len;
	unsigned char *b = read_whole(path, &len);

	if (len != SWAP_FILE_SIZE)
		fail("%s: %zu bytes, want %d", path, len, SWAP_FILE_SIZE);
	sha256(b, len, out);
	free(b);
}

/* memory.reclaim everything it can, swap-backed pages first */
static void push_out(const char *when)
{
	long long shmem0 = cg_key("memory.stat", "shmem"), shmem1, swapped;
	int err = put_str_errno(CG "/memory.reclaim", "512M swappiness=200");

	/* EAGAIN: less than asked for was reclaimed, which is all of it */
	if (err && err != EAGAIN)
		fail("memory.reclaim: %s", strerror(err));
	shmem1 = cg_key("memory.stat", "shmem");
	swapped = cg_num("memory.swap.current");
	note("%s: memory.reclaim: shmem %lld KiB -> %lld KiB, memory.swap.current %lld KiB",
	     when, shmem0 >> 10, shmem1 >> 10, swapped >> 10);
	/* shmem counts the pages in the page cache: a page swapped out
	 * leaves it (swap.current alone would count slots of pages already
	 * read back from the last round) */
	if (swapped <= 0 || shmem1 >= shmem0)
		fail("%s: nothing of the files was swapped out", when);
}

static void swap_cleanup(void)
{
	/* the tmpfs goes first: its swapped pages then need no swapoff */
	if (chdir("/"))
		note("chdir /: %s", strerror(errno));
	if (umount(dir))
		umount2(dir, MNT_DETACH);
	if (swapfile) {
		if (swapoff(swapfile) && errno != EINVAL)
			note("swapoff %s: %s", swapfile, strerror(errno));
		unlink(swapfile);
	}
	rmdir(CG);
}

static void make_swap(void)
{
	static unsigned char zero[1 << 20];
	char out[1024];
	int fd;

	swapoff(swapfile);	/* an earlier run failed midway */
	unlink(swapfile);
	/* written, not sparse or fallocated: swap files may have no holes */
	fd = CHECK_OK(open(swapfile, O_WRONLY | O_CREAT | O_TRUNC, 0600));
	for (uint64_t i = 0; i < SWAP_SIZE; i += sizeof(zero))
		if (write(fd, zero, sizeof(zero)) != sizeof(zero))
			fail("write %s: %s", swapfile, strerror(errno));
	CHECK_OK(fsync(fd));
	close(fd);
	if (run_cmd(out, sizeof(out), "mkswap '%s'", swapfile))
		fail("mkswap %s: %s", swapfile, out);
	if (swapon(swapfile, 0))
		fail("swapon %s: %s", swapfile, strerror(errno));
}

static void swap_body(void)
{
	char got[2 * MAX_DIGEST + 1];
	unsigned char sum[32], *b;
	size_t len;
	int err, sig, alg;

	make_swap();
	cg_make(CG, "memory");
	for (int i = 0; i < NFILES; i++)
		snprintf(files[i].path, sizeof(files[i].path), "%s/f%03d", dir, i);
	err = in_cg(make_files_fn, NULL, &sig);
	if (err)
		fail("making the files in the cgroup: %s",
		     err < 0 ? strsignal(sig) : err == 101 ?
		     "could not join the cgroup" : "an enable failed");
	note("the files are in memory: memory.current %lld KiB, shmem %lld KiB",
	     cg_num("memory.current") >> 10,
	     cg_key("memory.stat", "shmem") >> 10);

	/* what they measure and hold before being swapped out */
	for (int i = 0; i < NFILES; i++) {
		struct swapped *f = &files[i];
		char want[2 * MAX_DIGEST + 1];

		user_digest_hex(f->path, SHA256, 4096, 0, want);
		check_digest(f->path, SHA256, 4096, 0, want);
		strcpy(f->digest, want);
		sha256_of(f->path, f->data);
		b = read_item(f->path, FS_VERITY_METADATA_TYPE_DESCRIPTOR, 4096,
			      &len);
		CHECK(len == 256);
		memcpy(f->desc, b, 256);
		free(b);
		f->tree = read_item(f->path, FS_VERITY_METADATA_TYPE_MERKLE_TREE,
				    4096, &f->tree_size);
	}

	/* the data, swapped out: read back from swap, and verified on its
	 * way back (tests/swapin.c shows that it is) */
	push_out("before reading the data");
	for (int i = 0; i < NFILES; i++) {
		sha256_of(files[i].path, sum);
		if (memcmp(sum, files[i].data, 32))
			fail("%s: the data differs after a swap-out", files[i].path);
	}
	/* then the metadata, swapped out again: read back from swap */
	push_out("before reading the metadata");
	for (int i = 0; i < NFILES; i++) {
		struct swapped *f = &files[i];

		kernel_digest_hex(f->path, got, &alg);
		if (strcmp(got, f->digest))
			fail("%s: measures %s after a swap-out, %s before",
			     f->path, got, f->digest);
		b = read_item(f->path, FS_VERITY_METADATA_TYPE_DESCRIPTOR, 4096,
			      &len);
		if (len != 256 || memcmp(b, f->desc, 256))
			fail("%s: the descriptor differs after a swap-out", f->path);
		free(b);
		b = read_item(f->path, FS_VERITY_METADATA_TYPE_MERKLE_TREE, 4096,
			      &len);
		if (len != f->tree_size || memcmp(b, f->tree, len))
			fail("%s: the Merkle tree differs after a swap-out", f->path);
		free(b);
	}
}

/*
 * 100 verity files of 256 KiB, made in a memory cgroup, pushed out to a
 * swap file with memory.reclaim: their data reads back and hashes the same,
 * and after a second swap-out they measure the same and
 * FS_IOC_READ_VERITY_METADATA returns the same descriptor and tree.
 */
TEST_TIMEOUT(swapped_out_verity_files_measure_and_read_the_same, 400)
{
	tmpfs_area_ready();
	snprintf(dir, sizeof(dir), "/mnt/tmpfs-swap");
	swapfile = test_path("swap");	/* on env.mnt: the ext4 under test */
	mkdir(dir, 0755);
	umount_if_mounted(dir);
	CHECK_OK(mount("tmpfs", dir, "tmpfs", 0, "size=128m"));
	with_cleanup(swap_body, swap_cleanup, 380);
	rmdir(dir);
}

/* ---- memfd ---- */

/* a memfd with @size bytes from @seed; a plain copy at REF_COPY */
static int memfd_of(unsigned int flags, size_t size, uint64_t seed)
{
	unsigned char *b = random_buf(size, seed);
	int fd = memfd_create("fsverity-test", MFD_CLOEXEC | flags);

	if (fd < 0)
		fail("memfd_create: %s", strerror(errno));
	if (write(fd, b, size) != (ssize_t)size)
		fail("write the memfd: %s", strerror(errno));
	write_file(REF_COPY, b, size);
	free(b);
	return fd;
}

static int reopen(int fd, int flags)
{
	char self[64];

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	return open(self, flags | O_CLOEXEC);
}

static int memfd_enable(int fd)
{
	return enable_verity(fd, SHA256, 12, NULL, 0, NULL, 0);
}

/* measures fsverity digest of REF_COPY, is verity, refuses write opens */
static void check_verity_memfd(int fd, size_t size, uint64_t seed)
{
	char want[2 * MAX_DIGEST + 1], self[64];
	unsigned char d[MAX_DIGEST], *b = malloc(size + 1), *w;
	struct statx stx;
	int alg, dsize, err;

	user_digest_hex(REF_COPY, SHA256, 4096, 0, want);
	unlink(REF_COPY);
	err = measure_verity(fd, d, &alg, &dsize);
	if (err)
		fail("FS_IOC_MEASURE_VERITY of the memfd: %s", errno_name(err));
	if (alg != SHA256 || strcmp(hex(d, dsize), want))
		fail("the memfd measures %s:%s, fsverity digest of its bytes %s",
		     alg_name(alg), hex(d, dsize), want);
	CHECK_OK(statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx));
	CHECK(stx.stx_attributes_mask & STATX_ATTR_VERITY);
	CHECK(stx.stx_attributes & STATX_ATTR_VERITY);
	CHECK(fd_has_verity_flag(fd));
	CHECK(enable_verity(fd, SHA256, 12, NULL, 0, NULL, 0) == EEXIST);
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	CHECK_ERRNO(open(self, O_RDWR), EPERM);
	CHECK_ERRNO(open(self, O_WRONLY), EPERM);
	/* and reads back what was written */
	w = random_buf(size, seed);
	CHECK(b && pread(fd, b, size + 1, 0) == (ssize_t)size);
	CHECK(!memcmp(b, w, size));
	free(b);
	free(w);
}

/*
 * A memfd's own fd is open for writing: enabling through it is ETXTBSY, and
 * so through a read-only reopen (/proc/self/fd/N) while it is open; once
 * it is closed, the read-only fd enables, the digest is fsverity digest's
 * of the same bytes, and the memfd cannot be reopened for writing.
 */
TEST(memfd_enables_after_its_writable_fd_is_closed)
{
	int rw, ro;

	tmpfs_area_ready();
	rw = memfd_of(0, 100000, 11);
	CHECK(memfd_enable(rw) == ETXTBSY);
	ro = CHECK_OK(reopen(rw, O_RDONLY));
	CHECK(memfd_enable(ro) == ETXTBSY);
	CHECK(!fd_has_verity_flag(ro));
	close(rw);
	CHECK(memfd_enable(ro) == 0);
	check_verity_memfd(ro, 100000, 11);
	close(ro);
}

/*
 * A writable shared mapping of the memfd, made before its fd is closed,
 * keeps it open for writing: the enable is ETXTBSY until the munmap.
 */
TEST(memfd_writable_shared_mapping_keeps_the_enable_etxtbsy_until_munmap)
{
	const size_t size = 64 * 4096;
	unsigned char *m;
	int rw, ro;

	tmpfs_area_ready();
	rw = memfd_of(0, size, 12);
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
	if (m == MAP_FAILED)
		fail("mmap the memfd: %s", strerror(errno));
	ro = CHECK_OK(reopen(rw, O_RDONLY));
	close(rw);
	CHECK(memfd_enable(ro) == ETXTBSY);
	CHECK(!fd_has_verity_flag(ro));
	CHECK_OK(munmap(m, size));
	CHECK(memfd_enable(ro) == 0);
	check_verity_memfd(ro, size, 12);
	close(ro);
}

static void sealed_memfd(unsigned int seal, const char *name)
{
	int rw, ro, ro_plain, plain, seals, err;

	rw = memfd_of(MFD_ALLOW_SEALING, 70000, 13);
	if (fcntl(rw, F_ADD_SEALS, seal))
		fail("F_ADD_SEALS %s: %s", name, strerror(errno));
	seals = CHECK_OK(fcntl(rw, F_GET_SEALS));
	ro = CHECK_OK(reopen(rw, O_RDONLY));
	CHECK(memfd_enable(rw) == ETXTBSY);
	CHECK(memfd_enable(ro) == ETXTBSY);
	close(rw);
	err = memfd_enable(ro);
	if (err)
		fail("%s: enable after the writable fd was closed: %s", name,
		     errno_name(err));
	check_verity_memfd(ro, 70000, 13);
	if (fcntl(ro, F_GET_SEALS) != seals)
		fail("%s: F_GET_SEALS %#x after the enable, %#x before", name,
		     fcntl(ro, F_GET_SEALS), seals);
	/*
	 * F_ADD_SEALS needs a writable fd, which a verity memfd cannot have:
	 * on the read-only one it is EPERM, as on any memfd's (the control)
	 */
	plain = CHECK_OK(memfd_create("fsverity-control",
				      MFD_CLOEXEC | MFD_ALLOW_SEALING));
	ro_plain = CHECK_OK(reopen(plain, O_RDONLY));
	CHECK_ERRNO(fcntl(ro_plain, F_ADD_SEALS, F_SEAL_SEAL), EPERM);
	CHECK_ERRNO(fcntl(ro, F_ADD_SEALS, F_SEAL_SEAL), EPERM);
	CHECK(fcntl(ro, F_GET_SEALS) == seals);
	close(ro_plain);
	close(plain);
	close(ro);
}

/*
 * What the memfd's own fd is left out of i_writecount for: a memfd is
 * executed while that fd is open (runc runs itself so), and fexecve()
 * must not fail with ETXTBSY.  Control for the count tmpfs keeps instead.
 */
TEST(memfd_fexecve_with_its_writable_fd_open_still_works)
{
	static char *const argv[] = { "true", NULL };
	static char *const envp[] = { NULL };
	size_t len;
	unsigned char *exe = read_whole("/bin/busybox", &len);
	int fd, status;
	pid_t pid;

	tmpfs_area_ready();
	fd = memfd_create("fsverity-exec", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECK_OK(fd);
	if (write(fd, exe, len) != (ssize_t)len)
		fail("write the memfd: %s", strerror(errno));
	CHECK_OK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
		       F_SEAL_WRITE | F_SEAL_SEAL));
	fflush(stdout);
	pid = CHECK_OK(fork());
	if (pid == 0) {
		fexecve(fd, argv, envp);
		_exit(errno == ETXTBSY ? 99 : 98);
	}
	CHECK_OK(waitpid(pid, &status, 0));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("fexecve of a sealed memfd, its fd open: %s",
		     WIFEXITED(status) && WEXITSTATUS(status) == 99 ?
		     "ETXTBSY" : "failed");
	close(fd);
	free(exe);
}

/*
 * A memfd sealed with F_SEAL_WRITE, or with F_SEAL_FUTURE_WRITE, enables
 * the same way (ETXTBSY while its fd is open, then through a read-only
 * reopen), and its seals are what they were.
 */
TEST(memfd_seals_are_kept_and_sealed_memfds_enable_the_same_way)
{
	tmpfs_area_ready();
	sealed_memfd(F_SEAL_WRITE, "F_SEAL_WRITE");
	sealed_memfd(F_SEAL_FUTURE_WRITE, "F_SEAL_FUTURE_WRITE");
	sealed_memfd(F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW,
		     "F_SEAL_WRITE|F_SEAL_SHRINK|F_SEAL_GROW");
}

/* ---- users: signatures, composefs ---- */

static unsigned char sig[SIG_MAX], stored[SIG_MAX];

static void restore_req_sigs(void)
{
	int err;

	if (access(REQ_SIGS, F_OK))
		return;		/* no built-in signatures: sig_trust() skipped */
	err = req_sigs_write("0");

	if (err)
		note("could not restore " REQ_SIGS " to 0: %s", errno_name(err));
}

static void signed_body(void)
{
	char *s = tp("signed"), *u = tp("unsigned"), *s2 = tp("signed-required");
	char want[2 * MAX_DIGEST + 1];
	size_t len;
	long n;
	int fd, err;

	sig_trust();
	make_file(s, 100000, 14);
	make_file(u, 100000, 15);
	make_file(s2, 100000, 16);
	len = sig_sign(s, "trusted", sig);
	err = sig_enable(s, sig, len);
	if (err)
		fail("signed enable: %s", errno_name(err));
	user_digest_hex(s, SHA256, sig_block_size(), 0, want);
	check_digest(s, SHA256, sig_block_size(), 0, want);
	fd = CHECK_OK(open(s, O_RDONLY));
	n = read_md(fd, FS_VERITY_METADATA_TYPE_SIGNATURE, 0, sizeof(stored),
		    stored);
	close(fd);
	if (n != (long)len || memcmp(stored, sig, len))
		fail("the stored signature (%ld) differs from the one given (%zu)",
		     n, len);

	err = req_sigs_write("1");
	if (err)
		fail("require_signatures=1: %s", errno_name(err));
	err = sig_enable(u, NULL, 0);
	if (err != EPERM)
		fail("unsigned enable with require_signatures=1: %s, want EPERM",
		     err ? errno_name(err) : "success");
	check_unchanged(u, 100000, 15);
	len = sig_sign(s2, "trusted", sig);
	err = sig_enable(s2, sig, len);
	if (err)
		fail("signed enable with require_signatures=1: %s",
		     errno_name(err));
	free(s);
	free(u);
	free(s2);
}

/*
 * Built-in signatures on tmpfs: a signed enable succeeds and stores the
 * signature; with require_signatures=1 an unsigned enable is EPERM and
 * leaves the file alone, a signed one succeeds.  The sysctl is set back.
 */
TEST(signed_enable_and_require_signatures)
{
	in_tmpfs("signed", "size=64m", signed_body, restore_req_sigs, 100);
}

static char *run_dir, *img_mnt;
static bool own_run_tmpfs;	/* /run is no tmpfs: we mounted one on run_dir */
static int image_fd = -1, loop_fd = -1;
static char loop_dev[32];

static const struct {
	const char *name;
	size_t size;
	uint64_t seed;
} image_files[] = {
	{ "one-byte", 1, 21 },
	{ "odd", 70001, 22 },
	{ "dir/large", MIB + 5, 23 },
};

#define N_IMAGE_FILES (sizeof(image_files) / sizeof(image_files[0]))

static void erofs_cleanup(void)
{
	umount2(img_mnt, MNT_DETACH);
	rmdir(img_mnt);
	if (loop_fd >= 0)
		ioctl(loop_fd, LOOP_CLR_FD, 0);
	run_cmd(NULL, 0, "rm -rf '%s'", run_dir);
	if (own_run_tmpfs)
		umount2(run_dir, MNT_DETACH);
	rmdir(run_dir);
}

/* A free loop device, read-only, on @fd (LOOP_CONFIGURE): loop_dev, loop_fd */
static void loop_attach(int fd)
{
	struct loop_config cfg;
	int ctl, n;

	ctl = CHECK_OK(open("/dev/loop-control", O_RDWR | O_CLOEXEC));
	n = CHECK_OK(ioctl(ctl, LOOP_CTL_GET_FREE));
	close(ctl);
	snprintf(loop_dev, sizeof(loop_dev), "/dev/loop%d", n);
	loop_fd = CHECK_OK(open(loop_dev, O_RDONLY | O_CLOEXEC));
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = fd;
	cfg.info.lo_flags = LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR;
	if (ioctl(loop_fd, LOOP_CONFIGURE, &cfg))
		fail("LOOP_CONFIGURE %s: %s", loop_dev, strerror(errno));
}

static void erofs_body(void)
{
	char *src = path_join(run_dir, "src"), *image = path_join(run_dir, "image.erofs");
	char want[2 * MAX_DIGEST + 1], out[1024];
	unsigned char d[MAX_DIGEST];
	int alg, size, err;

	CHECK_OK(mkdir(src, 0755));
	for (size_t i = 0; i < N_IMAGE_FILES; i++) {
		char *p = path_join(src, image_files[i].name);

		if (run_cmd(out, sizeof(out), "mkdir -p \"$(dirname '%s')\"", p))
			fail("mkdir for %s: %s", p, out);
		make_file(p, image_files[i].size, image_files[i].seed);
		free(p);
	}
	if (run_cmd(out, sizeof(out), "mkfs.erofs --quiet '%s' '%s'", image, src))
		fail("mkfs.erofs %s %s: %s", image, src, out);
	user_digest_hex(image, SHA256, 4096, 0, want);
	must_enable(image, SHA256, 4096, 0);
	image_fd = CHECK_OK(open(image, O_RDONLY | O_CLOEXEC));
	err = measure_verity(image_fd, d, &alg, &size);
	if (err)
		fail("FS_IOC_MEASURE_VERITY %s: %s", image, errno_name(err));
	if (alg != SHA256 || strcmp(hex(d, size), want))
		fail("image %s measures %s, fsverity digest %s", image,
		     hex(d, size), want);
	/*
	 * 6.12's erofs mounts only files whose page cache has ->read_folio(),
	 * which tmpfs's has not ("Block device required"): as composefs does
	 * without file-backed mounts, a read-only loop device is configured
	 * from the measured fd itself.
	 */
	loop_attach(image_fd);
	if (mount(loop_dev, img_mnt, "erofs", MS_RDONLY, NULL))
		fail("mount -t erofs %s (%s) %s: %s", loop_dev, image, img_mnt,
		     strerror(errno));
	for (size_t i = 0; i < N_IMAGE_FILES; i++)
		expect_made_file(path_join(img_mnt, image_files[i].name),
				 image_files[i].size, image_files[i].seed);
	CHECK_OK(umount(img_mnt));
	close(loop_fd);		/* LO_FLAGS_AUTOCLEAR: detached on this close */
	loop_fd = -1;
	close(image_fd);
	note("%s: measured %s, mounted through %s from the measured fd, %zu files read back",
	     image, want, loop_dev, N_IMAGE_FILES);
}

/*
 * composefs's shape on tmpfs: an erofs image made with mkfs.erofs in /run
 * (the guest's tmpfs, no mount option), enabled, measured (fsverity
 * digest's), mounted through a loop device configured from the measured
 * fd, its files read back byte for byte.
 */
TEST(erofs_image_in_run_is_enabled_measured_and_mounted)
{
	struct statfs sfs;

	tmpfs_area_ready();
	img_mnt = "/mnt/tmpfs-erofs";
	mkdir(img_mnt, 0755);
	umount_if_mounted(img_mnt);
	run_dir = "/run/fsverity-tmpfs";
	umount_if_mounted(run_dir);	/* an earlier run failed midway */
	run_cmd(NULL, 0, "rm -rf '%s'", run_dir);
	CHECK_OK(mkdir(run_dir, 0755));
	CHECK_OK(statfs("/run", &sfs));
	own_run_tmpfs = sfs.f_type != TMPFS_MAGIC;
	if (own_run_tmpfs) {
		/* no tmpfs on /run: one of our own there */
		CHECK_OK(mount("tmpfs", run_dir, "tmpfs", 0, "size=64m"));
		note("/run is not a tmpfs: using a tmpfs on %s", run_dir);
	}
	with_cleanup(erofs_body, erofs_cleanup, 100);
}
