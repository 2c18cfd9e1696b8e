// SPDX-License-Identifier: GPL-2.0
/*
 * FS_IOC_READ_VERITY_METADATA: the Merkle tree and descriptor it returns are
 * byte for byte what "fsverity digest --out-merkle-tree/--out-descriptor"
 * computes for the same file and parameters; reads behave like pread() at and
 * past the end; and every documented errno.  fsverity-utils' dump_metadata,
 * which uses this ioctl, must agree too.
 *
 * Mainline 6.12's btrfs does not wire this ioctl (ENOTTY, as documented
 * for "this ioctl is not yet implemented on it"); our series adds it
 * (kernel/patches/btrfs-verity-read-metadata.patch), so on our kernels
 * btrfs runs every test here, and on the pristine one only the ENOTTY.
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#include <sys/mman.h>

#define REF_DIR "/tmp"

struct ref {
	char *path;
	unsigned char *tree;
	size_t tree_size;
	unsigned char *desc;
	size_t desc_size;
};

static bool btrfs_without_ioctl(void)
{
	return !strcmp(env.fs, "btrfs") && !kernel_is_ours();
}

static void need_ioctl(void)
{
	if (btrfs_without_ioctl())
		skip("mainline 6.12 btrfs does not wire FS_IOC_READ_VERITY_METADATA (ENOTTY)");
}

/*
 * Make a verity file and compute the reference tree and descriptor in
 * userspace (written off the tested filesystem).
 */
static struct ref make_ref(const char *name, uint64_t size, int alg, int bs,
			   int salt_len, uint64_t seed)
{
	unsigned char salt[32];
	char salthex[80] = "", out[512];
	struct ref r;

	r.path = test_path("%s", name);
	unlink(r.path);
	make_file(r.path, size, seed);
	make_salt(salt, salt_len);
	to_hex(salt, salt_len, salthex);
	mkdir(REF_DIR, 0755);
	if (run_cmd(out, sizeof(out),
		    "fsverity digest --hash-alg=%s --block-size=%d %s%s "
		    "--out-merkle-tree=" REF_DIR "/md-tree "
		    "--out-descriptor=" REF_DIR "/md-desc '%s'",
		    alg_name(alg), bs, salt_len ? "--salt=" : "", salthex,
		    r.path))
		fail("fsverity digest %s: %s", r.path, out);
	r.tree = read_whole(REF_DIR "/md-tree", &r.tree_size);
	r.desc = read_whole(REF_DIR "/md-desc", &r.desc_size);
	CHECK(r.desc_size == 256);
	must_enable(r.path, alg, bs, salt_len);
	return r;
}

static int open_ro(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		fail("open %s: %s", path, strerror(errno));
	return fd;
}

/* Read a whole metadata item in @chunk-byte pieces and compare. */
static void compare_item(int fd, uint64_t type, const unsigned char *want,
			 size_t want_len, size_t chunk, const char *what)
{
	unsigned char *got = malloc(want_len + chunk + 1);
	size_t off = 0;
	long n;

	CHECK(got);
	while ((n = read_md(fd, type, off, chunk, got + off)) > 0) {
		off += n;
		if (off > want_len)
			fail("%s: more than the expected %zu bytes", what,
			     want_len);
	}
	if (n < 0)
		fail("%s: read at %zu: %s", what, off, errno_name(-n));
	if (off != want_len)
		fail("%s: %zu bytes, expected %zu", what, off, want_len);
	if (memcmp(got, want, want_len))
		fail("%s: contents differ from fsverity digest's output", what);
	free(got);
}

static void compare_all(const struct ref *r, const char *label)
{
	char what[256];
	int fd = open_ro(r->path);
	const size_t chunks[] = { 1 << 30, 4096, 1000, 1 };

	for (size_t i = 0; i < sizeof(chunks) / sizeof(*chunks); i++) {
		/* byte-at-a-time only on small trees */
		if (chunks[i] == 1 && r->tree_size > 8192)
			continue;
		snprintf(what, sizeof(what), "%s: Merkle tree in %zu-byte reads",
			 label, chunks[i]);
		compare_item(fd, FS_VERITY_METADATA_TYPE_MERKLE_TREE, r->tree,
			     r->tree_size, chunks[i] > r->tree_size + 1 ?
			     r->tree_size + 1 : chunks[i], what);
		snprintf(what, sizeof(what), "%s: descriptor in %zu-byte reads",
			 label, chunks[i]);
		compare_item(fd, FS_VERITY_METADATA_TYPE_DESCRIPTOR, r->desc,
			     256, chunks[i] > 257 ? 257 : chunks[i], what);
	}
	close(fd);
}

TEST(merkle_tree_and_descriptor_match_fsverity_digest)
{
	const int algs[] = { FS_VERITY_HASH_ALG_SHA256,
			     FS_VERITY_HASH_ALG_SHA512 };
	const int bss[] = { 1024, 2048, 4096 };
	int n = 0;

	need_ioctl();
	for (int b = 0; b < 3; b++) {
		int bs = bss[b];
		const uint64_t sizes[] = { 0, 1, bs, bs + 1, 200 * 1024 + 3 };

		if (block_size_unsupported(bs))
			continue;
		for (int a = 0; a < 2; a++)
			for (int s = 0; s < 5; s++) {
				char label[128];
				struct ref r;

				snprintf(label, sizeof(label), "%s-bs%d-size%" PRIu64,
					 alg_name(algs[a]), bs, sizes[s]);
				n++;
				r = make_ref(label, sizes[s], algs[a], bs,
					     (n % 3) * 16, 50 + n);
				compare_all(&r, label);
			}
	}
	/* one file remeasured after a remount: read back from disk */
	{
		struct ref r = make_ref("remount", 100000,
					FS_VERITY_HASH_ALG_SHA256, 1024, 7, 99);

		fs_unmount();
		fs_mount();
		compare_all(&r, "after remount");
	}
}

/* 3 MiB with 1 KiB blocks and SHA-512: 3 tree levels of 192, 12 and 1 blocks. */
TEST(multi_level_merkle_tree_matches_fsverity_digest)
{
	struct ref r;

	need_ioctl();
	r = make_ref("3level", 3 << 20, FS_VERITY_HASH_ALG_SHA512, 1024, 32, 77);
	CHECK(r.tree_size == (192 + 12 + 1) * 1024);
	fs_unmount();
	fs_mount();
	compare_all(&r, "3-level tree");
}

/* fsverity-utils' dump_metadata (which uses this ioctl) agrees. */
TEST(fsverity_dump_metadata_matches_fsverity_digest)
{
	struct ref r;
	size_t len;
	unsigned char *got;
	char out[512];

	need_ioctl();
	r = make_ref("dump", 300000, FS_VERITY_HASH_ALG_SHA256, 1024, 16, 78);
	if (run_cmd(out, sizeof(out),
		    "fsverity dump_metadata merkle_tree '%s' > " REF_DIR "/md-dump",
		    r.path))
		fail("fsverity dump_metadata merkle_tree: %s", out);
	got = read_whole(REF_DIR "/md-dump", &len);
	CHECK(len == r.tree_size && !memcmp(got, r.tree, len));
	free(got);
	if (run_cmd(out, sizeof(out),
		    "fsverity dump_metadata descriptor '%s' > " REF_DIR "/md-dump",
		    r.path))
		fail("fsverity dump_metadata descriptor: %s", out);
	got = read_whole(REF_DIR "/md-dump", &len);
	CHECK(len == 256 && !memcmp(got, r.desc, 256));
	free(got);
}

/* pread()-like: short read at the end, 0 at and past the end. */
TEST(read_metadata_at_and_past_end)
{
	static unsigned char buf[65536];
	struct ref r;
	int fd;
	uint64_t ts;

	need_ioctl();
	r = make_ref("ends", 100000, FS_VERITY_HASH_ALG_SHA256, 1024, 0, 79);
	ts = r.tree_size;
	fd = open_ro(r.path);

	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_MERKLE_TREE, ts - 10, 100,
		      buf) == 10);
	CHECK(!memcmp(buf, r.tree + ts - 10, 10));
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_MERKLE_TREE, ts, 100, buf) == 0);
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_MERKLE_TREE, ts + 1, 100,
		      buf) == 0);
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_MERKLE_TREE, 1ULL << 62, 100,
		      buf) == 0);
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_MERKLE_TREE, 0, 0, buf) == 0);
	/* an odd unaligned window in the middle */
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_MERKLE_TREE, 1000, 3000,
		      buf) == 3000);
	CHECK(!memcmp(buf, r.tree + 1000, 3000));
	/* a huge length that does not overflow reads what there is */
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_MERKLE_TREE, 0, UINT64_MAX,
		      buf) == (long)ts);
	CHECK(!memcmp(buf, r.tree, ts));

	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_DESCRIPTOR, 250, 100, buf) == 6);
	CHECK(!memcmp(buf, r.desc + 250, 6));
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_DESCRIPTOR, 256, 100, buf) == 0);
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_DESCRIPTOR, 1ULL << 40, 1,
		      buf) == 0);
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_DESCRIPTOR, 0, 0, buf) == 0);
	close(fd);
}

/* A file that fits in one block has an empty tree. */
TEST(single_block_file_has_empty_merkle_tree)
{
	unsigned char buf[4096];
	struct ref r;
	int fd;

	need_ioctl();
	r = make_ref("oneblock", 1000, FS_VERITY_HASH_ALG_SHA256, 1024, 0, 80);
	CHECK(r.tree_size == 0);
	fd = open_ro(r.path);
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_MERKLE_TREE, 0, sizeof(buf),
		      buf) == 0);
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_DESCRIPTOR, 0, sizeof(buf),
		      buf) == 256);
	CHECK(!memcmp(buf, r.desc, 256));
	close(fd);
}

TEST(read_signature_of_unsigned_file_is_enodata)
{
	unsigned char buf[4096];
	struct ref r;
	int fd;

	need_ioctl();
	r = make_ref("nosig", 5000, FS_VERITY_HASH_ALG_SHA256, 1024, 0, 81);
	fd = open_ro(r.path);
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_SIGNATURE, 0, sizeof(buf),
		      buf) == -ENODATA);
	close(fd);
}

TEST(read_metadata_of_non_verity_file_is_enodata)
{
	const uint64_t types[] = { FS_VERITY_METADATA_TYPE_MERKLE_TREE,
				   FS_VERITY_METADATA_TYPE_DESCRIPTOR,
				   FS_VERITY_METADATA_TYPE_SIGNATURE };
	unsigned char buf[4096];
	char *p = test_path("plain");
	int fd;

	need_ioctl();
	unlink(p);
	make_file(p, 5000, 82);
	fd = open_ro(p);
	for (int i = 0; i < 3; i++)
		CHECK(read_md(fd, types[i], 0, sizeof(buf), buf) == -ENODATA);
	close(fd);
}

TEST(read_metadata_bad_type_or_reserved_is_einval)
{
	const uint64_t types[] = { 0, 4, 255, 1ULL << 32 | 1, UINT64_MAX };
	struct fsverity_read_metadata_arg arg;
	unsigned char buf[4096];
	struct ref r;
	int fd;

	need_ioctl();
	r = make_ref("einval", 5000, FS_VERITY_HASH_ALG_SHA256, 1024, 0, 83);
	fd = open_ro(r.path);
	for (int i = 0; i < 5; i++)
		if (read_md(fd, types[i], 0, sizeof(buf), buf) != -EINVAL)
			fail("metadata_type %#" PRIx64 ": expected EINVAL",
			     types[i]);
	for (int bit = 0; bit < 64; bit += 9) {
		memset(&arg, 0, sizeof(arg));
		arg.metadata_type = FS_VERITY_METADATA_TYPE_DESCRIPTOR;
		arg.length = sizeof(buf);
		arg.buf_ptr = (uintptr_t)buf;
		arg.__reserved = 1ULL << bit;
		CHECK_ERRNO(ioctl(fd, FS_IOC_READ_VERITY_METADATA, &arg),
			    EINVAL);
	}
	/* offset + length overflowing */
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_MERKLE_TREE, 1, UINT64_MAX,
		      buf) == -EINVAL);
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_DESCRIPTOR, UINT64_MAX, 2,
		      buf) == -EINVAL);
	close(fd);
}

TEST(read_metadata_inaccessible_memory_is_efault)
{
	struct ref r;
	void *bad;
	int fd;

	need_ioctl();
	r = make_ref("efault", 100000, FS_VERITY_HASH_ALG_SHA256, 1024, 0, 84);
	bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(bad != MAP_FAILED);
	fd = open_ro(r.path);
	CHECK_ERRNO(ioctl(fd, FS_IOC_READ_VERITY_METADATA, NULL), EFAULT);
	CHECK_ERRNO(ioctl(fd, FS_IOC_READ_VERITY_METADATA, bad), EFAULT);
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_MERKLE_TREE, 0, 4096, bad) ==
	      -EFAULT);
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_DESCRIPTOR, 0, 256, bad) ==
	      -EFAULT);
	close(fd);
}

/* The ioctl-only access mode (3) may open a verity file but not read it. */
TEST(read_metadata_on_fd_not_open_for_reading_is_ebadf)
{
	unsigned char buf[4096];
	struct ref r;
	int fd;

	need_ioctl();
	r = make_ref("ebadf", 5000, FS_VERITY_HASH_ALG_SHA256, 1024, 0, 85);
	fd = open(r.path, O_ACCMODE);
	CHECK_OK(fd);
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_DESCRIPTOR, 0, sizeof(buf),
		      buf) == -EBADF);
	close(fd);
}

/* btrfs answers where our series wires the ioctl, ENOTTY where not */
TEST(btrfs_read_metadata_answers_only_with_the_series)
{
	unsigned char buf[4096];
	char *p = test_path("btrfs-read-md");
	long n;
	int fd;

	if (strcmp(env.fs, "btrfs"))
		skip("only btrfs lacks FS_IOC_READ_VERITY_METADATA in 6.12");
	unlink(p);
	make_file(p, 5000, 86);
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, 4096, 0);
	fd = open_ro(p);
	n = read_md(fd, FS_VERITY_METADATA_TYPE_DESCRIPTOR, 0, sizeof(buf),
		    buf);
	if (btrfs_without_ioctl())
		CHECK(n == -ENOTTY);
	else
		CHECK(n == (long)sizeof(struct fsverity_descriptor));
	close(fd);
}
