/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tiny guest-side test harness.  Each tests/<area>.c is linked with lib.c
 * into /tests/bin/<area>; the guest runner starts it once per filesystem
 * with FS, DEV, MNT, MKFS, MOUNT_OPTS and BOOT in the environment (and
 * FS_SKIP, the reason every test SKIPs, when the filesystem cannot take
 * them: a verity XFS mounted read-only by a kernel without XFS fs-verity).
 *
 *	TEST(name) { ... }        runs in boot 1 (fresh filesystems)
 *	TEST_BOOT2(name) { ... }  runs in boot 2 (same disks, after a reboot)
 *
 * A test passes by returning, fails with fail()/CHECK*(), and skips with
 * skip().  Output lines: RUN/PASS/FAIL/SKIP <area>/<fs>/<test>.
 */
#ifndef FSV_TEST_LIB_H
#define FSV_TEST_LIB_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct test_env {
	const char *fs, *dev, *mnt, *mkfs, *mount_opts;
	int boot;
};
extern struct test_env env;

struct test_case {
	const char *name;
	void (*fn)(void);
	int boot;
	int timeout;		/* seconds; 0 = default (120), -1 = none */
	int line;		/* tests run in source order */
};
void test_register(struct test_case *tc);

#define TEST_TIMEOUT_DEFAULT 120

#define TEST__(name, bootno, secs)					\
	static void test_fn_##name(void);				\
	static struct test_case test_case_##name = {			\
		#name, test_fn_##name, bootno, secs, __LINE__ };			\
	__attribute__((constructor)) static void test_reg_##name(void)	\
	{ test_register(&test_case_##name); }				\
	static void test_fn_##name(void)

#define TEST(name)		TEST__(name, 1, 0)
#define TEST_BOOT2(name)	TEST__(name, 2, 0)
/* same, with a timeout in seconds (0 = default, -1 = none) */
#define TEST_TIMEOUT(name, secs)	TEST__(name, 1, secs)
#define TEST_BOOT2_TIMEOUT(name, secs)	TEST__(name, 2, secs)

void fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void skip(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* informational line "# <area>/<fs>/<test>: ..." (does not change the verdict) */
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define CHECK(cond)							\
	do {								\
		if (!(cond))						\
			fail("%s:%d: CHECK(%s) failed", __FILE__,	\
			     __LINE__, #cond);				\
	} while (0)

#define CHECK_ERRNO(expr, err)						\
	do {								\
		errno = 0;						\
		long long r__ = (long long)(expr);			\
		int e__ = errno;					\
		if (r__ != -1 || e__ != (err))				\
			fail("%s:%d: %s: expected -1/%s, got %lld/%s",	\
			     __FILE__, __LINE__, #expr, errno_name(err),\
			     r__, r__ == -1 ? errno_name(e__) : "-");	\
	} while (0)

#define CHECK_OK(expr)							\
	({								\
		errno = 0;						\
		long long r__ = (long long)(expr);			\
		if (r__ < 0)						\
			fail("%s:%d: %s: %s", __FILE__, __LINE__,	\
			     #expr, strerror(errno));			\
		r__;							\
	})

/* "EINVAL" etc. for an errno value (or "errno N") */
const char *errno_name(int err);

/* helpers */
/* "<MNT>/<area>-<fmt...>": the same in boot 1 and boot 2; malloc'd */
char *test_path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fill_random(void *buf, size_t len, uint64_t seed);
void write_file(const char *path, const void *buf, size_t len);
void make_file(const char *path, uint64_t size, uint64_t seed);
/*
 * FS_IOC_ENABLE_VERITY; returns 0 or the errno.  hash_alg is passed as is
 * (FS_VERITY_HASH_ALG_SHA256 = 1, SHA512 = 2).  log_bs: log2 of the Merkle
 * tree block size; 0 means 4096; a negative value is passed as the raw
 * block_size -log_bs (for invalid sizes).  For anything else (reserved
 * fields, version, bad pointers) use enable_verity_arg().
 */
struct fsverity_enable_arg;
int enable_verity(int fd, int hash_alg, int log_bs, const void *salt,
		  int salt_len, const void *sig, int sig_len);
int enable_verity_arg(int fd, struct fsverity_enable_arg *arg);
int enable_verity_path(const char *path, int hash_alg, int log_bs,
		       const void *salt, int salt_len);
/*
 * FS_IOC_MEASURE_VERITY; returns 0 or the errno.  digest must have room for
 * 64 bytes (FS_VERITY_MAX_DIGEST_SIZE); *alg and *size are outputs.
 */
int measure_verity(int fd, unsigned char *digest, int *alg, int *size);
/* lowercase hex of len bytes, in a static buffer (max 64 bytes) */
const char *hex(const unsigned char *buf, int len);
/*
 * Runs /bin/sh -c "<fmt...>" with stdout+stderr captured into out (may be
 * NULL; always NUL-terminated, truncated to outlen-1); returns the exit
 * status, or 128+signal.
 */
int run_cmd(char *out, size_t outlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* umount/mount env.dev on env.mnt (cwd moves to / and back to MNT) */
void fs_unmount(void);
void fs_mount(void);
/*
 * Unmount, run the filesystem's own read-only checker (e2fsck -fn,
 * fsck.f2fs --dry-run, btrfs check --readonly,
 * xfs_repair -n) on env.dev, mount again.
 * Returns 0 if it found nothing, else its exit status (-1 for problems
 * reported with status 0, as fsck.f2fs does); its output is in out.
 */
int fs_check(char *out, size_t outlen);
/* SHA-256, for digests computed independently of the kernel */
struct sha256 {
	uint32_t h[8];
	unsigned char buf[64];
	uint64_t len;
};
void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, unsigned char out[32]);
void sha256(const void *data, size_t len, unsigned char out[32]);
/* CRC-32C (Castagnoli), as btrfs checksums its metadata */
uint32_t crc32c(uint32_t crc, const unsigned char *p, size_t len);
/*
 * Byte offset on env.dev of byte `logical` of the file (FIEMAP; on btrfs
 * mapped through btrfs-map-logical).  fail()s if unmapped/unknown/encoded.
 */
uint64_t phys_offset(const char *path, uint64_t logical);
struct fiemap_extent;
/*
 * FIEMAP of [start, start + len) of the file with `flags`
 * (FIEMAP_FLAG_SYNC writes dirty data back first): up to `max` extents
 * into `fe`, their number returned; fail()s on error
 */
unsigned int fiemap_extents(const char *path, uint64_t start, uint64_t len,
			    uint32_t flags, struct fiemap_extent *fe,
			    unsigned int max);
/* FIEMAP's extent holding byte `logical` of the file; fail()s if unmapped */
void fiemap_extent_at(const char *path, uint64_t logical,
		      struct fiemap_extent *extent);
/* xor one byte (with 0xff) at off on the block device, bypassing caches */
void corrupt_byte(const char *dev, uint64_t off);
void drop_caches(void);
/* CLOCK_MONOTONIC, in seconds */
double mono_now(void);

/* name of the running test: "<area>/<fs>/<test>" */
extern const char *test_name;

#endif
