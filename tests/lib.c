// SPDX-License-Identifier: GPL-2.0
/*
 * Guest test harness: see lib.h.  main() runs the tests of the current boot
 * (or those named on the command line), each in its own forked child.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/fsverity.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib.h"

struct test_env env;
const char *test_name = "";
static const char *area = "";

#define MAX_TESTS 512
static struct test_case *tests[MAX_TESTS];
static int ntests;
static int result_fd = -1;	/* child -> parent: "F<reason>" or "S<reason>" */
/*
 * With FSV_KMSG=1 (set by the guest runner) RUN/PASS/FAIL/SKIP lines go
 * through /dev/kmsg: printk serialises them with the kernel's own messages,
 * so on the serial console they are never torn by a concurrent printk and
 * a splat lands between the RUN and the verdict of the test that caused it.
 */
static int kmsg_fd = -1;

void test_register(struct test_case *tc)
{
	if (ntests == MAX_TESTS) {
		fprintf(stderr, "too many tests\n");
		exit(2);
	}
	tests[ntests++] = tc;
}

/*
 * Format into buf as one line (newlines inside become spaces), leaving room
 * for a final '\n'; returns its length without that, or -1.
 */
static int one_line(char *buf, int size, const char *fmt, va_list ap)
{
	int n = vsnprintf(buf, size - 1, fmt, ap);

	if (n < 0)
		return -1;
	if (n > size - 2)
		n = size - 2;
	for (int i = 0; i < n; i++)
		if (buf[i] == '\n' || buf[i] == '\r')
			buf[i] = ' ';
	return n;
}

/* one write(2) per line so lines reach the console whole and in order */
static void out_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out_line(const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int n;

	fflush(stdout);
	fflush(stderr);
	va_start(ap, fmt);
	n = one_line(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	buf[n++] = '\n';
	if (write(1, buf, n) < 0)
		_exit(3);
}

/* a RUN/PASS/FAIL/SKIP line: one kmsg record, or one line on stdout */
static void verdict_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void verdict_line(const char *fmt, ...)
{
	char buf[1000];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = one_line(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	fflush(stdout);
	fflush(stderr);
	/* the newline ends the record: without it printk keeps it open for a
	 * continuation and the console shows it only with the next message */
	buf[n] = '\n';
	if (kmsg_fd >= 0 && write(kmsg_fd, buf, n + 1) == n + 1)
		return;
	buf[n] = '\0';
	out_line("%s", buf);
}

static void __attribute__((noreturn)) finish(char kind, const char *fmt, va_list ap)
{
	char buf[2048];
	int n;

	buf[0] = kind;
	n = vsnprintf(buf + 1, sizeof(buf) - 1, fmt, ap);
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	fflush(stdout);
	fflush(stderr);
	if (result_fd >= 0) {
		if (write(result_fd, buf, n + 1) < 0)
			_exit(4);
		_exit(kind == 'S' ? 2 : 1);
	}
	/* not under main(): print and exit */
	verdict_line("%s %s: %s", kind == 'S' ? "SKIP" : "FAIL", test_name, buf + 1);
	exit(kind == 'S' ? 0 : 1);
}

void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	finish('F', fmt, ap);
}

void skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	finish('S', fmt, ap);
}

void note(const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	out_line("# %s: %s", test_name, buf);
}

const char *errno_name(int err)
{
	static char buf[32];

	switch (err) {
#define E(x) case x: return #x
	E(0); E(EPERM); E(ENOENT); E(EINTR); E(EIO); E(ENXIO); E(E2BIG);
	E(EBADF); E(EAGAIN); E(ENOMEM); E(EACCES); E(EFAULT); E(EBUSY);
	E(EEXIST); E(EXDEV); E(ENODEV); E(ENOTDIR); E(EISDIR); E(EINVAL);
	E(ENFILE); E(EMFILE); E(ENOTTY); E(ETXTBSY); E(EFBIG); E(ENOSPC);
	E(ESPIPE); E(EROFS); E(EMLINK); E(ERANGE); E(ENAMETOOLONG);
	E(ENOSYS); E(ENOTEMPTY); E(ELOOP); E(ENODATA); E(EOVERFLOW);
	E(EBADMSG); E(EOPNOTSUPP); E(ENOKEY); E(EKEYREJECTED); E(EMSGSIZE);
	E(EDQUOT); E(EUCLEAN); E(ESTALE); E(ECANCELED); E(EKEYEXPIRED);
	E(EKEYREVOKED); E(ENOPKG); E(ETIMEDOUT);
#undef E
	}
	snprintf(buf, sizeof(buf), "errno %d", err);
	return buf;
}

char *test_path(const char *fmt, ...)
{
	char tail[1024], *p;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tail, sizeof(tail), fmt, ap);
	va_end(ap);
	if (asprintf(&p, "%s/%s-%s", env.mnt ? env.mnt : ".", area, tail) < 0)
		fail("asprintf: out of memory");
	return p;
}

/* xorshift64*; the stream depends only on the seed, in 8-byte steps */
struct rng { uint64_t s; };

static void rng_init(struct rng *r, uint64_t seed)
{
	r->s = seed ^ 0x9e3779b97f4a7c15ULL;
	if (!r->s)
		r->s = 1;
}

static uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dULL;
}

/* len is a multiple of 8 except possibly at the very end of a stream */
static void rng_fill(struct rng *r, unsigned char *p, size_t len)
{
	while (len) {
		uint64_t v = rng_next(r);
		size_t n = len < 8 ? len : 8;

		memcpy(p, &v, n);
		p += n;
		len -= n;
	}
}

void fill_random(void *buf, size_t len, uint64_t seed)
{
	struct rng r;

	rng_init(&r, seed);
	rng_fill(&r, buf, len);
}

static void write_all(int fd, const void *buf, size_t len, const char *path)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail("write %s: %s", path, strerror(errno));
		}
		p += n;
		len -= n;
	}
}

void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		fail("open %s: %s", path, strerror(errno));
	write_all(fd, buf, len, path);
	if (close(fd))
		fail("close %s: %s", path, strerror(errno));
}

/* same bytes as fill_random(buf, size, seed) */
void make_file(const char *path, uint64_t size, uint64_t seed)
{
	const size_t chunk = 1 << 20;
	unsigned char *buf = malloc(chunk);
	struct rng r;
	int fd;

	if (!buf)
		fail("make_file: out of memory");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		fail("open %s: %s", path, strerror(errno));
	rng_init(&r, seed);
	while (size) {
		size_t n = size < chunk ? size : chunk;

		rng_fill(&r, buf, n);
		write_all(fd, buf, n, path);
		size -= n;
	}
	if (close(fd))
		fail("close %s: %s", path, strerror(errno));
	free(buf);
}

int enable_verity_arg(int fd, struct fsverity_enable_arg *arg)
{
	return ioctl(fd, FS_IOC_ENABLE_VERITY, arg) ? errno : 0;
}

int enable_verity(int fd, int hash_alg, int log_bs, const void *salt,
		  int salt_len, const void *sig, int sig_len)
{
	struct fsverity_enable_arg arg;

	memset(&arg, 0, sizeof(arg));
	arg.version = 1;
	arg.hash_algorithm = hash_alg;
	if (log_bs == 0)
		arg.block_size = 4096;
	else if (log_bs < 0)
		arg.block_size = -log_bs;
	else
		arg.block_size = log_bs < 32 ? 1U << log_bs : 0;
	arg.salt_size = salt_len;
	arg.salt_ptr = (uintptr_t)salt;
	arg.sig_size = sig_len;
	arg.sig_ptr = (uintptr_t)sig;
	return enable_verity_arg(fd, &arg);
}

int enable_verity_path(const char *path, int hash_alg, int log_bs,
		       const void *salt, int salt_len)
{
	int fd = open(path, O_RDONLY);
	int err;

	if (fd < 0)
		return errno;
	err = enable_verity(fd, hash_alg, log_bs, salt, salt_len, NULL, 0);
	close(fd);
	return err;
}

int measure_verity(int fd, unsigned char *digest, int *alg, int *size)
{
	struct {
		struct fsverity_digest d;
		unsigned char buf[64];
	} m;

	memset(&m, 0, sizeof(m));
	m.d.digest_size = sizeof(m.buf);
	if (ioctl(fd, FS_IOC_MEASURE_VERITY, &m))
		return errno;
	if (alg)
		*alg = m.d.digest_algorithm;
	if (size)
		*size = m.d.digest_size;
	if (digest)
		memcpy(digest, m.d.digest, m.d.digest_size <= 64 ? m.d.digest_size : 64);
	return 0;
}

const char *hex(const unsigned char *buf, int len)
{
	static char s[129];

	if (len > 64)
		len = 64;
	for (int i = 0; i < len; i++)
		sprintf(s + 2 * i, "%02x", buf[i]);
	s[2 * (len > 0 ? len : 0)] = '\0';
	return s;
}

int run_cmd(char *out, size_t outlen, const char *fmt, ...)
{
	char *cmd;
	int pfd[2], status;
	size_t used = 0;
	pid_t pid;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		fail("vasprintf: out of memory");
	va_end(ap);
	fflush(stdout);
	fflush(stderr);
	if (pipe2(pfd, O_CLOEXEC))
		fail("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		char tmp[4096];
		ssize_t n = read(pfd[0], tmp, sizeof(tmp));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (out && outlen > 1 && used < outlen - 1) {
			size_t k = (size_t)n < outlen - 1 - used ? (size_t)n : outlen - 1 - used;

			memcpy(out + used, tmp, k);
			used += k;
		}
	}
	close(pfd[0]);
	if (out && outlen)
		out[used] = '\0';
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			fail("waitpid: %s", strerror(errno));
	free(cmd);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

static const char *fstype(void)
{
	if (!env.fs || !strncmp(env.fs, "ext4", 4))
		return "ext4";
	if (!strncmp(env.fs, "xfs", 3))
		return "xfs";
	return env.fs;
}

void fs_unmount(void)
{
	int tries;

	if (chdir("/"))
		fail("chdir /: %s", strerror(errno));
	sync();
	for (tries = 0; umount(env.mnt); tries++) {
		if (errno != EBUSY || tries == 50)
			fail("umount %s: %s", env.mnt, strerror(errno));
		usleep(100000);
	}
}

void fs_mount(void)
{
	char out[1024];
	int st;

	if (env.mount_opts && *env.mount_opts)
		st = run_cmd(out, sizeof(out), "mount -t %s -o '%s' %s %s", fstype(),
			     env.mount_opts, env.dev, env.mnt);
	else
		st = run_cmd(out, sizeof(out), "mount -t %s %s %s", fstype(),
			     env.dev, env.mnt);
	if (st)
		fail("mount %s on %s failed (%d): %s", env.dev, env.mnt, st, out);
	if (chdir(env.mnt))
		fail("chdir %s: %s", env.mnt, strerror(errno));
}

/* SHA-256 (FIPS 180-4) */
static const uint32_t K256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(struct sha256 *s, const unsigned char *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = s->h[0]; b = s->h[1]; c = s->h[2]; d = s->h[3];
	e = s->h[4]; f = s->h[5]; g = s->h[6]; h = s->h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) +
			      ((e & f) ^ (~e & g)) + K256[i] + w[i];
		uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) +
			      ((a & b) ^ (a & c) ^ (b & c));

		h = g; g = f; f = e; e = d + t1;
		d = c; c = b; b = a; a = t1 + t2;
	}
	s->h[0] += a; s->h[1] += b; s->h[2] += c; s->h[3] += d;
	s->h[4] += e; s->h[5] += f; s->h[6] += g; s->h[7] += h;
}

void sha256_init(struct sha256 *s)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(s->h, iv, sizeof(iv));
	s->len = 0;
}

void sha256_update(struct sha256 *s, const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t used = s->len % 64;

	s->len += len;
	if (used) {
		size_t n = 64 - used < len ? 64 - used : len;

		memcpy(s->buf + used, p, n);
		p += n;
		len -= n;
		if (used + n < 64)
			return;
		sha256_block(s, s->buf);
	}
	for (; len >= 64; p += 64, len -= 64)
		sha256_block(s, p);
	memcpy(s->buf, p, len);
}

void sha256_final(struct sha256 *s, unsigned char out[32])
{
	uint64_t bits = s->len * 8;
	unsigned char pad[72] = { 0x80 };
	size_t padlen = 64 - (s->len + 8) % 64;

	if (padlen == 0)
		padlen = 64;
	for (int i = 0; i < 8; i++)
		pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
	sha256_update(s, pad, padlen + 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = s->h[i] >> 24;
		out[4 * i + 1] = s->h[i] >> 16;
		out[4 * i + 2] = s->h[i] >> 8;
		out[4 * i + 3] = s->h[i];
	}
}

void sha256(const void *data, size_t len, unsigned char out[32])
{
	struct sha256 s;

	sha256_init(&s);
	sha256_update(&s, data, len);
	sha256_final(&s, out);
}

int fs_check(char *out, size_t outlen)
{
	int rc;

	fs_unmount();
	if (!strncmp(env.fs, "ext4", 4))
		rc = run_cmd(out, outlen, "e2fsck -fn %s 2>&1", env.dev);
	else if (!strcmp(env.fs, "f2fs"))
		rc = run_cmd(out, outlen, "fsck.f2fs --dry-run -f %s 2>&1",
			     env.dev);
	else if (!strcmp(env.fs, "btrfs"))
		rc = run_cmd(out, outlen, "btrfs check --readonly %s 2>&1",
			     env.dev);
	else if (!strncmp(env.fs, "xfs", 3))
		rc = run_cmd(out, outlen, "xfs_repair -n %s 2>&1", env.dev);
	else
		fail("no fsck known for %s", env.fs);
	fs_mount();
	if (!rc && (strstr(out, "[Fail]") || strstr(out, "[FAIL]")))
		rc = -1;
	return rc;
}

uint32_t crc32c(uint32_t crc, const unsigned char *p, size_t len)
{
	static uint32_t table[256];

	if (!table[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;

			for (int k = 0; k < 8; k++)
				c = c & 1 ? (c >> 1) ^ 0x82f63b78 : c >> 1;
			table[i] = c;
		}
	crc = ~crc;
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static uint64_t btrfs_physical(uint64_t logical)
{
	char out[4096], *p;
	unsigned long long phys;

	sync();
	if (run_cmd(out, sizeof(out), "btrfs-map-logical -l %llu %s",
		    (unsigned long long)logical, env.dev))
		fail("btrfs-map-logical %llu %s: %s", (unsigned long long)logical,
		     env.dev, out);
	p = strstr(out, "physical ");
	if (!p || sscanf(p, "physical %llu", &phys) != 1)
		fail("btrfs-map-logical: unexpected output: %s", out);
	return phys;
}

unsigned int fiemap_extents(const char *path, uint64_t start, uint64_t len,
			    uint32_t flags, struct fiemap_extent *fe,
			    unsigned int max)
{
	struct fiemap *fm = calloc(1, sizeof(*fm) + max * sizeof(*fe));
	unsigned int n;
	int fd;

	if (!fm)
		fail("out of memory");
	fd = open(path, O_RDONLY);
	if (fd < 0)
		fail("open %s: %s", path, strerror(errno));
	fm->fm_start = start;
	fm->fm_length = len;
	fm->fm_flags = flags;
	fm->fm_extent_count = max;
	if (ioctl(fd, FS_IOC_FIEMAP, fm))
		fail("FIEMAP %s: %s", path, strerror(errno));
	close(fd);
	n = fm->fm_mapped_extents;
	memcpy(fe, fm->fm_extents, n * sizeof(*fe));
	free(fm);
	return n;
}

void fiemap_extent_at(const char *path, uint64_t logical,
		      struct fiemap_extent *extent)
{
	struct fiemap_extent fe;

	if (fiemap_extents(path, logical, 1, FIEMAP_FLAG_SYNC, &fe, 1) != 1 ||
	    fe.fe_logical > logical || logical - fe.fe_logical >= fe.fe_length)
		fail("FIEMAP %s: byte %llu is not mapped", path,
		     (unsigned long long)logical);
	*extent = fe;
}

uint64_t phys_offset(const char *path, uint64_t logical)
{
	const unsigned int bad = FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC |
		FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_DATA_ENCRYPTED |
		FIEMAP_EXTENT_NOT_ALIGNED | FIEMAP_EXTENT_DATA_INLINE |
		FIEMAP_EXTENT_DATA_TAIL | FIEMAP_EXTENT_UNWRITTEN;
	struct fiemap_extent fe;
	uint64_t off;

	fiemap_extent_at(path, logical, &fe);
	if (fe.fe_flags & bad)
		fail("FIEMAP %s: byte %llu has unusable extent flags 0x%x", path,
		     (unsigned long long)logical, fe.fe_flags);
	off = fe.fe_physical + (logical - fe.fe_logical);
	if (env.fs && !strcmp(env.fs, "btrfs"))
		off = btrfs_physical(off);
	return off;
}

void corrupt_byte(const char *dev, uint64_t off)
{
	const size_t bs = 4096;
	uint64_t base = off & ~(uint64_t)(bs - 1);
	unsigned char *buf;
	int fd;

	sync();
	if (posix_memalign((void **)&buf, bs, bs))
		fail("posix_memalign: out of memory");
	fd = open(dev, O_RDWR | O_DIRECT);
	if (fd < 0)
		fd = open(dev, O_RDWR);
	if (fd < 0)
		fail("open %s: %s", dev, strerror(errno));
	if (pread(fd, buf, bs, base) != (ssize_t)bs)
		fail("pread %s @%llu: %s", dev, (unsigned long long)base, strerror(errno));
	buf[off - base] ^= 0xff;
	if (pwrite(fd, buf, bs, base) != (ssize_t)bs)
		fail("pwrite %s @%llu: %s", dev, (unsigned long long)base, strerror(errno));
	if (fsync(fd))
		fail("fsync %s: %s", dev, strerror(errno));
	ioctl(fd, BLKFLSBUF, 0);	/* drop the bdev's page cache */
	close(fd);
	free(buf);
}

void drop_caches(void)
{
	int fd;

	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd < 0)
		fail("open drop_caches: %s", strerror(errno));
	if (write(fd, "3", 1) != 1)
		fail("drop_caches: %s", strerror(errno));
	close(fd);
}

static int cmp_line(const void *a, const void *b)
{
	const struct test_case *x = *(struct test_case *const *)a;
	const struct test_case *y = *(struct test_case *const *)b;

	return x->line - y->line;
}

/*
 * fsv.only=area/test,... on the kernel command line: in an area named
 * there, only the tests named; other areas run whole.
 */
static int only_wanted(const char *only, const char *name)
{
	size_t a = strlen(area), n = strlen(name);
	int named = 0;

	for (const char *p = only; p; p = strchr(p, ','), p = p ? p + 1 : p) {
		if (strncmp(p, area, a) || p[a] != '/')
			continue;
		named = 1;
		if (!strncmp(p + a + 1, name, n) &&
		    (p[a + 1 + n] == ',' || !p[a + 1 + n]))
			return 1;
	}
	return !named;
}

static int wanted(const struct test_case *tc, int argc, char **argv)
{
	const char *only = getenv("FSV_ONLY");

	if (argc < 2)
		return tc->boot == env.boot &&
		       (!only || only_wanted(only, tc->name));
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], tc->name))
			return 1;
	return 0;
}

double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* runs one test; returns 0 pass, 1 fail, 2 skip */
static const char *fs_skip;

static int run_one(struct test_case *tc)
{
	int timeout = tc->timeout ? tc->timeout : TEST_TIMEOUT_DEFAULT;
	char name[512], msg[2048];
	int pfd[2], status = 0;
	double deadline;
	ssize_t n;
	pid_t pid;

	snprintf(name, sizeof(name), "%s/%s/%s", area, env.fs, tc->name);
	test_name = name;
	verdict_line("RUN %s", name);
	/* the runner says the filesystem cannot take the tests (guest/init) */
	if (fs_skip && *fs_skip) {
		verdict_line("SKIP %s: %s", name, fs_skip);
		return 2;
	}
	if (pipe2(pfd, O_CLOEXEC))
		exit(2);
	pid = fork();
	if (pid < 0) {
		verdict_line("FAIL %s: fork: %s", name, strerror(errno));
		return 1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		close(pfd[0]);
		result_fd = pfd[1];
		if (env.mnt && chdir(env.mnt))
			fail("chdir %s: %s", env.mnt, strerror(errno));
		if (timeout > 0)
			alarm(timeout);
		tc->fn();
		fflush(stdout);
		fflush(stderr);
		_exit(0);
	}
	close(pfd[1]);
	setpgid(pid, pid);
	/* our own deadline too: a child stuck in D state ignores SIGALRM */
	deadline = timeout > 0 ? mono_now() + timeout + 15 : 0;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			status = -1;
			break;
		}
		if (deadline && mono_now() > deadline) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			usleep(2000000);
			if (waitpid(pid, &status, WNOHANG) != pid)
				out_line("# %s: child %d does not die (stuck in the kernel?)",
					 name, pid);
			verdict_line("FAIL %s: timeout after %d s (SIGALRM had no effect)",
				 name, timeout);
			close(pfd[0]);
			return 1;
		}
		usleep(20000);
	}
	kill(-pid, SIGKILL);	/* leftovers of the test */
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	n = read(pfd[0], msg, sizeof(msg) - 1);
	close(pfd[0]);
	if (n < 0)
		n = 0;
	msg[n] = '\0';
	if (status == -1) {
		verdict_line("FAIL %s: waitpid: %s", name, strerror(errno));
		return 1;
	}
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);

		if (sig == SIGALRM)
			verdict_line("FAIL %s: timeout after %d s", name, timeout);
		else
			verdict_line("FAIL %s: killed by signal %d (%s)", name, sig,
				 strsignal(sig));
		return 1;
	}
	if (WEXITSTATUS(status) == 0 && !n) {
		verdict_line("PASS %s", name);
		return 0;
	}
	if (WEXITSTATUS(status) == 2 && msg[0] == 'S') {
		verdict_line("SKIP %s: %s", name, msg + 1);
		return 2;
	}
	if (msg[0] == 'F') {
		verdict_line("FAIL %s: %s", name, msg + 1);
		return 1;
	}
	verdict_line("FAIL %s: exited with status %d", name, WEXITSTATUS(status));
	return 1;
}

int main(int argc, char **argv)
{
	const char *b;
	int failed = 0, ran = 0;
	char *a0 = strdup(argv[0]);

	setvbuf(stdout, NULL, _IOLBF, 0);
	area = basename(a0);
	env.fs = getenv("FS") ? getenv("FS") : "none";
	env.dev = getenv("DEV");
	env.mnt = getenv("MNT");
	env.mkfs = getenv("MKFS") ? getenv("MKFS") : "";
	env.mount_opts = getenv("MOUNT_OPTS") ? getenv("MOUNT_OPTS") : "";
	fs_skip = getenv("FS_SKIP");
	b = getenv("FSV_KMSG");
	if (b && *b == '1')
		kmsg_fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	b = getenv("BOOT");
	env.boot = b ? atoi(b) : 1;

	qsort(tests, ntests, sizeof(tests[0]), cmp_line);
	for (int i = 0; i < ntests; i++) {
		if (!wanted(tests[i], argc, argv))
			continue;
		ran++;
		if (run_one(tests[i]) == 1)
			failed++;
	}
	for (int i = 1; i < argc; i++) {
		int found = 0;

		for (int j = 0; j < ntests; j++)
			found |= !strcmp(argv[i], tests[j]->name);
		if (!found) {
			verdict_line("FAIL %s/%s/%s: no such test", area, env.fs, argv[i]);
			failed++;
		}
	}
	(void)ran;
	return failed ? 1 : 0;
}
