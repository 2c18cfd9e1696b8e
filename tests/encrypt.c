// SPDX-License-Identifier: GPL-2.0
/*
 * fs-verity on files whose bytes on the disk are not the file's bytes:
 * fscrypt-encrypted files (ext4, f2fs) and f2fs compressed files.
 *
 * The file digest is over the plaintext, uncompressed contents, so the
 * kernel must measure what "fsverity digest" computes over an ordinary copy
 * of them (in /tmp).  Reads decrypt or decompress first and verify after,
 * so a cold read must give back the plaintext, and a byte flipped on the
 * disk in the ciphertext or inside a compressed cluster must fail the read
 * of the block it lands in with EIO, and of that block only.
 *
 * Each test makes a filesystem of its own on the spare disk, with the
 * feature the pass's filesystem was made without: the fscrypt tests run in
 * the ext4 pass (ext4 on /dev/vde) and in the f2fs pass (f2fs on /dev/vde),
 * the compression tests in the f2fs pass; the other passes skip them
 * (tests/expected-skips).  The base config has fscrypt and f2fs
 * compression, so a kernel without them fails here instead of skipping.
 *
 * Each test's body runs in a child process: however it ends, the test
 * unmounts the spare filesystem afterwards, and the fscrypt keys added to
 * it go with it.
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#include <linux/fiemap.h>
#include <linux/fscrypt.h>
#include <sys/mount.h>

#ifndef F2FS_IOC_GET_COMPRESS_BLOCKS
#define F2FS_IOC_GET_COMPRESS_BLOCKS	_IOR(0xf5, 17, __u64)
#endif

#define SPARE_DEV	"/dev/vde"
#define SPARE_MNT	"/mnt/encrypt-spare"
#define ENC_DIR		SPARE_MNT "/enc"
/* plaintext copies for "fsverity digest", off the tested disks */
#define REF_PATH	"/tmp/encrypt-ref"

/* the test body gets this long; its TEST_TIMEOUT adds time to clean up */
#define BODY_SECS	300
#define TEST_SECS	(BODY_SECS + 60)

#define BLOCK		4096	/* page, filesystem block and crypto data unit */
#define KEY_SIZE	64	/* AES-256-XTS takes a 512-bit master key */

/*
 * The spare filesystems, 128 MiB each (262144 sectors for mkfs.f2fs), so
 * that mkfs and fsck stay quick.  f2fs's background GC stays off: it could
 * move a block between the FIEMAP that finds it and the flip on the raw
 * disk.  Compressed clusters are 4 blocks (f2fs's default, spelt out
 * because the tests depend on it).
 */
#define CLUSTER_BLOCKS	4

enum spare_kind { EXT4_ENCRYPT, F2FS_ENCRYPT, F2FS_COMPRESS };

static const struct spare_fs {
	const char *type, *mkfs, *opts;
} spare_fs[] = {
	[EXT4_ENCRYPT] = { "ext4",
		"mkfs.ext4 -q -F -b 4096 -O encrypt,verity -E nodiscard " SPARE_DEV " 128M",
		NULL },
	[F2FS_ENCRYPT] = { "f2fs",
		"mkfs.f2fs -f -q -t 0 -O extra_attr,encrypt,verity " SPARE_DEV " 262144",
		"background_gc=off" },
	[F2FS_COMPRESS] = { "f2fs",
		"mkfs.f2fs -f -q -t 0 -O extra_attr,compression,verity " SPARE_DEV " 262144",
		"background_gc=off,compress_algorithm=lz4,compress_log_size=2" },
};

static const struct spare_fs *spare;	/* the one this test works on */

/* ---- the spare filesystem ---- */

static void spare_mount(void)
{
	mkdir(SPARE_MNT, 0755);
	if (mount(SPARE_DEV, SPARE_MNT, spare->type, 0, spare->opts))
		fail("mount -t %s -o '%s' %s: %s (kernel log has the reason)",
		     spare->type, spare->opts ? spare->opts : "", SPARE_DEV,
		     strerror(errno));
}

/* Unmount if mounted: also drops every fscrypt key added to it. */
static void spare_umount(void)
{
	umount_if_mounted(SPARE_MNT);
}

static void spare_mkfs(void)
{
	char out[4096];

	if (run_cmd(out, sizeof(out), "%s", spare->mkfs))
		fail("%s: %s", spare->mkfs, out);
}

/* The filesystem's own checker finds nothing wrong (unmounted). */
static void spare_fsck(void)
{
	char out[8192];
	int rc;

	if (!strcmp(spare->type, "ext4"))
		rc = run_cmd(out, sizeof(out), "e2fsck -fn " SPARE_DEV);
	else
		rc = run_cmd(out, sizeof(out), "fsck.f2fs --dry-run -f " SPARE_DEV);
	if (rc || strstr(out, "[Fail]") || strstr(out, "[FAIL]"))
		fail("fsck of the spare %s (rc %d): %s", spare->type, rc, out);
}

static void (*spare_body)(void);

/* in the child: a fresh filesystem, mounted, then the test's body */
static void spare_run(void)
{
	spare_mkfs();
	spare_mount();
	spare_body();
}

/*
 * Run @body on a fresh, mounted @kind filesystem in a child (with_cleanup),
 * then unmount whatever the child left, however it ended.
 */
static void run_on_spare(enum spare_kind kind, void (*body)(void))
{
	if (access(SPARE_DEV, F_OK))
		fail("no spare disk %s", SPARE_DEV);
	spare = &spare_fs[kind];
	spare_body = body;
	spare_umount();		/* left by a test that timed out */
	with_cleanup(spare_run, spare_umount, BODY_SECS);
}

/* " (...)" for the errnos of a kernel built without @config */
static const char *missing(int err, const char *config)
{
	static char why[128];

	if (err != ENOTTY && err != EOPNOTSUPP)
		return "";
	snprintf(why, sizeof(why), " (kernel without %s?)", config);
	return why;
}

/* Our per-mount counter @name for the spare disk; -1 on mainline. */
static long long spare_counter(const char *name)
{
	char path[128];
	long long v;
	FILE *f;

	if (!kernel_is_ours())
		return -1;
	snprintf(path, sizeof(path), "/sys/fs/verity/vde/%s", name);
	f = fopen(path, "r");
	if (!f)
		return 0;	/* the mount has not used verity yet */
	if (fscanf(f, "%lld", &v) != 1)
		fail("%s: not a number", path);
	fclose(f);
	return v;
}

/*
 * Where byte @off of @path starts on the spare disk, by FIEMAP, and the
 * extent's flags.  lib's phys_offset() refuses encrypted and encoded
 * (compressed) extents, which are the point here.  For an encoded extent
 * only its start means anything: where its compressed data begins.
 */
static uint64_t spare_phys(const char *path, uint64_t off, uint32_t *flags)
{
	const uint32_t unusable = FIEMAP_EXTENT_UNKNOWN |
		FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_NOT_ALIGNED |
		FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_DATA_TAIL |
		FIEMAP_EXTENT_UNWRITTEN;
	struct fiemap_extent fe;

	fiemap_extent_at(path, off, &fe);
	if (fe.fe_flags & unusable)
		fail("FIEMAP %s: byte %" PRIu64 " in an extent with flags %#x",
		     path, off, fe.fe_flags);
	*flags = fe.fe_flags;
	return fe.fe_physical + (off - fe.fe_logical);
}

/* @len bytes of the (unmounted) spare disk at @off, not from a stale cache */
static void read_spare(uint64_t off, void *buf, size_t len)
{
	int fd = CHECK_OK(open(SPARE_DEV, O_RDONLY));

	ioctl(fd, BLKFLSBUF, 0);
	if (pread(fd, buf, len, off) != (ssize_t)len)
		fail("read %s at %" PRIu64 ": %s", SPARE_DEV, off,
		     strerror(errno));
	close(fd);
}

/* ---- fscrypt ---- */

/* the key added last; its identifier is derived from the key itself */
static struct fscrypt_key_specifier key_spec;

/* Add the test's master key to the spare filesystem's keyring. */
static void add_key(void)
{
	struct fscrypt_add_key_arg *arg = calloc(1, sizeof(*arg) + KEY_SIZE);
	int fd = CHECK_OK(open(SPARE_MNT, O_RDONLY | O_DIRECTORY));

	CHECK(arg);
	arg->key_spec.type = FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER;
	arg->raw_size = KEY_SIZE;
	fill_random(arg->raw, KEY_SIZE, 0x6b6579);
	if (ioctl(fd, FS_IOC_ADD_ENCRYPTION_KEY, arg))
		fail("FS_IOC_ADD_ENCRYPTION_KEY: %s%s", strerror(errno),
		     missing(errno, "CONFIG_FS_ENCRYPTION"));
	if (key_spec.type && memcmp(&key_spec, &arg->key_spec, sizeof(key_spec)))
		fail("the same key got another identifier when added again");
	key_spec = arg->key_spec;
	close(fd);
	free(arg);
}

/*
 * Remove the key: with every file closed nothing may keep it busy, and
 * nothing of it may stay behind.
 */
static void remove_key(void)
{
	struct fscrypt_remove_key_arg rm = { .key_spec = key_spec };
	struct fscrypt_get_key_status_arg st = { .key_spec = key_spec };
	int fd = CHECK_OK(open(SPARE_MNT, O_RDONLY | O_DIRECTORY));

	if (ioctl(fd, FS_IOC_REMOVE_ENCRYPTION_KEY, &rm))
		fail("FS_IOC_REMOVE_ENCRYPTION_KEY: %s", strerror(errno));
	if (rm.removal_status_flags)
		fail("key removal: status flags %#x: files still in use",
		     rm.removal_status_flags);
	if (ioctl(fd, FS_IOC_GET_ENCRYPTION_KEY_STATUS, &st))
		fail("FS_IOC_GET_ENCRYPTION_KEY_STATUS: %s", strerror(errno));
	if (st.status != FSCRYPT_KEY_STATUS_ABSENT)
		fail("key status %u after removal, expected ABSENT", st.status);
	close(fd);
}

/* An empty directory whose files are encrypted with the key (v2 policy). */
static void make_encrypted_dir(const char *path)
{
	struct fscrypt_policy_v2 pol = {
		.version = FSCRYPT_POLICY_V2,
		.contents_encryption_mode = FSCRYPT_MODE_AES_256_XTS,
		.filenames_encryption_mode = FSCRYPT_MODE_AES_256_CTS,
		.flags = FSCRYPT_POLICY_FLAGS_PAD_32,
	};
	int fd;

	memcpy(pol.master_key_identifier, key_spec.u.identifier,
	       FSCRYPT_KEY_IDENTIFIER_SIZE);
	CHECK_OK(mkdir(path, 0755));
	fd = CHECK_OK(open(path, O_RDONLY | O_DIRECTORY));
	if (ioctl(fd, FS_IOC_SET_ENCRYPTION_POLICY, &pol))
		fail("FS_IOC_SET_ENCRYPTION_POLICY %s: %s%s", path,
		     strerror(errno), missing(errno, "CONFIG_FS_ENCRYPTION"));
	close(fd);
}

/* ---- verity ---- */

static int file_flags(const char *path)
{
	int fd = CHECK_OK(open(path, O_RDONLY));
	int flags;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags))
		fail("FS_IOC_GETFLAGS %s: %s", path, strerror(errno));
	close(fd);
	return flags;
}

/*
 * What the kernel must measure: "fsverity digest" of the same plaintext in
 * an ordinary file on tmpfs.
 */
static void expected_digest(const unsigned char *data, size_t len, int alg,
			    int bs, int salt, char *hex)
{
	write_file(REF_PATH, data, len);
	user_digest_hex(REF_PATH, alg, bs, salt, hex);
	unlink(REF_PATH);
}

static void check_measure(const char *path, int alg, const char *want)
{
	char got[2 * MAX_DIGEST + 1];
	int kalg;

	kernel_digest_hex(path, got, &kalg);
	if (kalg != alg || strcmp(got, want))
		fail("%s: kernel measures %s:%s, fsverity digest of the plaintext is %s:%s",
		     path, alg_name(kalg), got, alg_name(alg), want);
}

/*
 * Read @path block by block: block @bad fails with EIO, also when read
 * again (a block that failed is not cached as good), and every other
 * block reads back as @data.
 */
static void expect_eio_only_at(const char *path, const unsigned char *data,
			       size_t size, size_t bad)
{
	static unsigned char buf[BLOCK];
	int fd = CHECK_OK(open(path, O_RDONLY));

	for (int pass = 0; pass < 2; pass++) {
		for (size_t blk = 0; blk * BLOCK < size; blk++) {
			size_t off = blk * BLOCK;
			size_t len = size - off < BLOCK ? size - off : BLOCK;
			ssize_t n = pread(fd, buf, len, off);

			if (blk == bad) {
				if (n >= 0 || errno != EIO)
					fail("pass %d: read of the damaged block %zu: got %s, expected EIO",
					     pass, blk,
					     n >= 0 ? "success" : errno_name(errno));
				continue;
			}
			if (n != (ssize_t)len)
				fail("pass %d: read of block %zu (damage in %zu): %s",
				     pass, blk, bad,
				     n < 0 ? strerror(errno) : "short read");
			if (memcmp(buf, data + off, len))
				fail("pass %d: block %zu reads back wrong", pass, blk);
		}
	}
	close(fd);
}

/* ---- encrypted files ---- */

struct vcase {
	size_t size;
	int alg, bs, salt;
};

#define SHA256	FS_VERITY_HASH_ALG_SHA256
#define SHA512	FS_VERITY_HASH_ALG_SHA512

static const struct vcase enc_cases[] = {
	{ 0,			SHA256, 4096, 0 },
	{ 1,			SHA512, 4096, 16 },
	{ 4096,			SHA256, 1024, 32 },
	{ 100000,		SHA512, 1024, 1 },
	/* multi-level trees: 3 levels, 2 levels, 4 levels */
	{ (1 << 20) + 123,	SHA256, 1024, 0 },
	{ (4 << 20) + 7,	SHA512, 4096, 16 },
	{ 5 << 20,		SHA512, 1024, 0 },
};
#define NR_ENC_CASES	(sizeof(enc_cases) / sizeof(enc_cases[0]))

static char *enc_path(int i)
{
	static char p[128];

	snprintf(p, sizeof(p), ENC_DIR "/file%d", i);
	return p;
}

/* data blocks a full read of the cases verifies, in Merkle tree blocks */
static long long case_blocks(const struct vcase *c, size_t n)
{
	long long blocks = 0;

	for (size_t i = 0; i < n; i++)
		blocks += (c[i].size + c[i].bs - 1) / c[i].bs;
	return blocks;
}

static void encrypted_files_body(void)
{
	static char want[NR_ENC_CASES][2 * MAX_DIGEST + 1];
	long long before;

	add_key();
	make_encrypted_dir(ENC_DIR);
	for (size_t i = 0; i < NR_ENC_CASES; i++) {
		const struct vcase *c = &enc_cases[i];
		unsigned char *data = random_buf(c->size, i + 1);
		char *path = enc_path(i);

		expected_digest(data, c->size, c->alg, c->bs, c->salt, want[i]);
		write_file(path, data, c->size);
		if (!(file_flags(path) & FS_ENCRYPT_FL))
			fail("%s: not encrypted", path);
		must_enable(path, c->alg, c->bs, c->salt);
		check_measure(path, c->alg, want[i]);
		free(data);
	}

	/*
	 * With the key still there, drop the page cache and the inodes: the
	 * reads below come from the disk, decrypted and then verified.
	 */
	drop_caches();
	before = spare_counter("data_blocks_verified");
	for (size_t i = 0; i < NR_ENC_CASES; i++) {
		const struct vcase *c = &enc_cases[i];
		unsigned char *data = random_buf(c->size, i + 1);

		check_contents(enc_path(i), data, c->size);
		check_measure(enc_path(i), c->alg, want[i]);
		if (!(file_flags(enc_path(i)) & FS_VERITY_FL))
			fail("%s: no verity flag", enc_path(i));
		free(data);
	}
	if (before >= 0 && spare_counter("data_blocks_verified") - before <
	    case_blocks(enc_cases, NR_ENC_CASES))
		fail("%lld data blocks verified, expected %lld: reads came from the cache?",
		     spare_counter("data_blocks_verified") - before,
		     case_blocks(enc_cases, NR_ENC_CASES));
	remove_key();
	spare_umount();
	spare_fsck();
}

static enum spare_kind encrypt_kind(void)
{
	if (!strcmp(env.fs, "ext4"))
		return EXT4_ENCRYPT;
	if (!strcmp(env.fs, "f2fs"))
		return F2FS_ENCRYPT;
	skip("fscrypt is tested in the ext4 and f2fs passes, on a filesystem of its own on "
	     SPARE_DEV);
}

TEST_TIMEOUT(encrypted_files_verify_after_decryption, TEST_SECS)
{
	run_on_spare(encrypt_kind(), encrypted_files_body);
}

#define DAMAGED_SIZE	(64 * BLOCK)
#define DAMAGED_BLOCK	5

static void encrypted_corruption_body(void)
{
	unsigned char *data = random_buf(DAMAGED_SIZE, 77);
	static unsigned char raw[BLOCK];
	char want[2 * MAX_DIGEST + 1];
	const char *path = ENC_DIR "/damaged";
	uint64_t phys;
	uint32_t flags;

	add_key();
	make_encrypted_dir(ENC_DIR);
	expected_digest(data, DAMAGED_SIZE, SHA256, BLOCK, 0, want);
	write_file(path, data, DAMAGED_SIZE);
	must_enable(path, SHA256, BLOCK, 0);
	check_measure(path, SHA256, want);
	phys = spare_phys(path, DAMAGED_BLOCK * BLOCK, &flags);
	remove_key();
	spare_umount();

	/* what the disk holds there is ciphertext, not our bytes */
	read_spare(phys, raw, BLOCK);
	if (!memcmp(raw, data + DAMAGED_BLOCK * BLOCK, BLOCK))
		fail("block %d is stored in the clear at %" PRIu64,
		     DAMAGED_BLOCK, phys);
	flip_byte(SPARE_DEV, phys + 100);

	spare_mount();
	add_key();
	check_measure(path, SHA256, want);
	expect_eio_only_at(path, data, DAMAGED_SIZE, DAMAGED_BLOCK);
	if (spare_counter("verify_failures") == 0)
		fail("EIO, but fs-verity counted no verification failure");
	remove_key();
	free(data);
}

TEST_TIMEOUT(encrypted_file_corruption_gives_eio, TEST_SECS)
{
	run_on_spare(encrypt_kind(), encrypted_corruption_body);
}

/* ---- f2fs compressed files ---- */

/*
 * Data that compresses, but not to nothing: every block starts with
 * RANDOM_HEAD bytes of its own random data, which LZ4 can only store as
 * they are (literals), followed by a repeated line of text.
 */
#define RANDOM_HEAD	64

static unsigned char *compressible_buf(size_t len, uint64_t seed)
{
	static const char line[] = "fs-verity on an f2fs compressed file\n";
	unsigned char *b = malloc(len ? len : 1);

	CHECK(b);
	for (size_t off = 0; off < len; off += BLOCK) {
		size_t n = len - off < BLOCK ? len - off : BLOCK;
		size_t r = n < RANDOM_HEAD ? n : RANDOM_HEAD;

		fill_random(b + off, r, seed + off / BLOCK);
		for (size_t i = r; i < n; i++)
			b[off + i] = line[(i - r) % (sizeof(line) - 1)];
	}
	return b;
}

/* A new file with FS_COMPR_FL (set while it is empty) holding @data. */
static void make_compressed_file(const char *path, const unsigned char *data,
				 size_t len)
{
	int fd = CHECK_OK(open(path, O_WRONLY | O_CREAT | O_EXCL, 0644));
	size_t done = 0;
	int flags;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags))
		fail("FS_IOC_GETFLAGS %s: %s", path, strerror(errno));
	flags |= FS_COMPR_FL;
	if (ioctl(fd, FS_IOC_SETFLAGS, &flags))
		fail("FS_IOC_SETFLAGS(FS_COMPR_FL) %s: %s%s", path,
		     strerror(errno),
		     missing(errno, "CONFIG_F2FS_FS_COMPRESSION"));
	while (done < len) {
		ssize_t n = write(fd, data + done, len - done);

		if (n < 0)
			fail("write %s: %s", path, strerror(errno));
		done += n;
	}
	/* f2fs compresses clusters at writeback */
	if (fsync(fd) || close(fd))
		fail("fsync %s: %s", path, strerror(errno));
}

/* Blocks compression saved in @path; fails unless it saved some. */
static uint64_t compressed_blocks(const char *path)
{
	int fd = CHECK_OK(open(path, O_RDONLY));
	uint64_t blocks = 0;

	if (ioctl(fd, F2FS_IOC_GET_COMPRESS_BLOCKS, &blocks))
		fail("F2FS_IOC_GET_COMPRESS_BLOCKS %s: %s%s", path,
		     strerror(errno),
		     missing(errno, "CONFIG_F2FS_FS_COMPRESSION"));
	close(fd);
	if (!blocks)
		fail("%s: not compressed (F2FS_IOC_GET_COMPRESS_BLOCKS = 0)",
		     path);
	return blocks;
}

static const struct vcase compr_cases[] = {
	{ (4 << 20) + 5000,	SHA256, 4096, 0 },
	{ (1 << 20) + 1,	SHA512, 1024, 16 },
};
#define NR_COMPR_CASES	(sizeof(compr_cases) / sizeof(compr_cases[0]))

static char *compr_path(int i)
{
	static char p[128];

	snprintf(p, sizeof(p), SPARE_MNT "/compressed%d", i);
	return p;
}

static void compressed_files_body(void)
{
	static char want[NR_COMPR_CASES][2 * MAX_DIGEST + 1];
	long long verified;

	for (size_t i = 0; i < NR_COMPR_CASES; i++) {
		const struct vcase *c = &compr_cases[i];
		unsigned char *data = compressible_buf(c->size, 100 * i);
		char *path = compr_path(i);
		uint64_t saved;

		expected_digest(data, c->size, c->alg, c->bs, c->salt, want[i]);
		make_compressed_file(path, data, c->size);
		saved = compressed_blocks(path);
		must_enable(path, c->alg, c->bs, c->salt);
		check_measure(path, c->alg, want[i]);
		if ((file_flags(path) & (FS_COMPR_FL | FS_VERITY_FL)) !=
		    (FS_COMPR_FL | FS_VERITY_FL))
			fail("%s: flags %#x, expected compressed and verity",
			     path, file_flags(path));
		note("%s: %zu bytes, compression saved %" PRIu64 " blocks",
		     path, c->size, saved);
		free(data);
	}

	/* from the disk again: each cluster decompressed, then verified */
	spare_umount();
	spare_mount();
	for (size_t i = 0; i < NR_COMPR_CASES; i++) {
		const struct vcase *c = &compr_cases[i];
		unsigned char *data = compressible_buf(c->size, 100 * i);

		check_contents(compr_path(i), data, c->size);
		check_measure(compr_path(i), c->alg, want[i]);
		free(data);
	}
	verified = spare_counter("data_blocks_verified");
	if (verified >= 0 && verified < case_blocks(compr_cases, NR_COMPR_CASES))
		fail("%lld data blocks verified, expected %lld", verified,
		     case_blocks(compr_cases, NR_COMPR_CASES));
	spare_umount();
	spare_fsck();
}

static enum spare_kind compress_kind(void)
{
	if (strcmp(env.fs, "f2fs"))
		skip("f2fs compression is tested in the f2fs pass, on a filesystem of its own on "
		     SPARE_DEV);
	return F2FS_COMPRESS;
}

TEST_TIMEOUT(f2fs_compressed_files_verify_after_decompression, TEST_SECS)
{
	run_on_spare(compress_kind(), compressed_files_body);
}

#define CLUSTERS	64
#define DAMAGED_CLUSTER	10

/*
 * Flip a byte of one block's random head inside its cluster's compressed
 * data: a literal, so LZ4 still decompresses the cluster, and only
 * fs-verity can tell that one block came out wrong.
 */
static void compressed_corruption_body(void)
{
	const size_t size = CLUSTERS * CLUSTER_BLOCKS * BLOCK;
	const size_t bad = DAMAGED_CLUSTER * CLUSTER_BLOCKS + 2;
	const char *path = SPARE_MNT "/damaged";
	unsigned char *data = compressible_buf(size, 500);
	const unsigned char *head = data + bad * BLOCK + 24;
	static unsigned char raw[BLOCK];
	char want[2 * MAX_DIGEST + 1];
	unsigned char *hit;
	uint64_t phys;
	uint32_t flags;

	expected_digest(data, size, SHA256, BLOCK, 0, want);
	make_compressed_file(path, data, size);
	compressed_blocks(path);
	must_enable(path, SHA256, BLOCK, 0);
	check_measure(path, SHA256, want);
	phys = spare_phys(path, DAMAGED_CLUSTER * CLUSTER_BLOCKS * BLOCK, &flags);
	if (!(flags & FIEMAP_EXTENT_ENCODED))
		fail("cluster %d: FIEMAP flags %#x, expected ENCODED (compressed)",
		     DAMAGED_CLUSTER, flags);
	spare_umount();

	/* the cluster compresses into one block; 16 bytes of the head in it */
	read_spare(phys, raw, BLOCK);
	hit = memmem(raw, BLOCK, head, 16);
	if (!hit)
		fail("block %zu's random bytes are not in its cluster's compressed block at %" PRIu64,
		     bad, phys);
	flip_byte(SPARE_DEV, phys + (hit - raw) + 8);

	spare_mount();
	check_measure(path, SHA256, want);
	expect_eio_only_at(path, data, size, bad);
	if (spare_counter("verify_failures") == 0)
		fail("EIO, but fs-verity counted no verification failure");
	free(data);
}

TEST_TIMEOUT(f2fs_compressed_file_corruption_gives_eio, TEST_SECS)
{
	run_on_spare(compress_kind(), compressed_corruption_body);
}
