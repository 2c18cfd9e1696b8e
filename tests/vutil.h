/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the fs-verity conformance tests (tests/<area>.c).
 *
 * Everything here is static inline so that each area binary only keeps what
 * it uses.  The tests compare the kernel against userspace references
 * (fsverity-utils' "fsverity digest", our own reads of the data) and never
 * against another kernel, so they hold for any conforming implementation.
 */
#ifndef VUTIL_H
#define VUTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <linux/fs.h>
#include <linux/fsverity.h>

#include "lib.h"

#ifndef FS_VERITY_FL
#define FS_VERITY_FL 0x00100000
#endif
#ifndef STATX_ATTR_VERITY
#define STATX_ATTR_VERITY 0x00100000
#endif

#define MAX_DIGEST 64

static inline const char *alg_name(int alg)
{
	return alg == FS_VERITY_HASH_ALG_SHA512 ? "sha512" : "sha256";
}

static inline int alg_digest_size(int alg)
{
	return alg == FS_VERITY_HASH_ALG_SHA512 ? 64 : 32;
}

static inline int ilog2_u32(uint32_t v)
{
	int l = -1;

	while (v) {
		v >>= 1;
		l++;
	}
	return l;
}

static inline void to_hex(const unsigned char *b, size_t n, char *out)
{
	static const char x[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = x[b[i] >> 4];
		out[2 * i + 1] = x[b[i] & 15];
	}
	out[2 * n] = '\0';
}

/* Deterministic salt bytes, so a salt can be rebuilt from its length. */
static inline void make_salt(unsigned char *salt, int len)
{
	for (int i = 0; i < len; i++)
		salt[i] = (unsigned char)(0xa5 ^ (i * 37));
}

/*
 * Merkle tree block sizes this fs can use: fs-verity requires
 * 1024 <= block size <= min(PAGE_SIZE, fs block size) (fs/verity/open.c).
 * Returns NULL when @bs is usable, else a reason for skip().
 */
static inline const char *block_size_unsupported(int bs)
{
	static char why[128];
	struct statfs st;
	long page = sysconf(_SC_PAGESIZE);

	if (statfs(env.mnt, &st) != 0)
		fail("statfs %s: %s", env.mnt, strerror(errno));
	if (bs > page) {
		snprintf(why, sizeof(why), "Merkle block %d > page size %ld",
			 bs, page);
		return why;
	}
	if (bs > (long)st.f_bsize) {
		snprintf(why, sizeof(why), "Merkle block %d > %s block size %ld",
			 bs, env.fs, (long)st.f_bsize);
		return why;
	}
	return NULL;
}

/*
 * Is the kernel running ours rather than mainline's fs-verity?  Only ours
 * has the statistics under /sys/fs/verity.  For the few tests of races that
 * mainline 6.12 is known to lose: they skip there instead of failing.
 */
static inline bool kernel_is_ours(void)
{
	return access("/sys/fs/verity", F_OK) == 0;
}

/*
 * Counter @name of our statistics for env.dev's mount: 0 before the mount
 * has used verity, -1 on a kernel without the statistics (mainline).
 */
static inline long long verity_counter(const char *name)
{
	const char *dev = strrchr(env.dev, '/') ? strrchr(env.dev, '/') + 1 :
						  env.dev;
	char path[256];
	long long v;
	FILE *f;

	if (!kernel_is_ours())
		return -1;
	snprintf(path, sizeof(path), "/sys/fs/verity/%s/%s", dev, name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lld", &v) != 1)
		fail("%s: not a number", path);
	fclose(f);
	return v;
}

/* The first line of @path (a sysfs or procfs file), without its newline */
static inline void get_str(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	if (!f || !fgets(buf, len, f))
		fail("read %s: %s", path, strerror(errno));
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* The integer after @key (e.g. "fsv.soak=") on the kernel command line */
static inline int cmdline_int(const char *key, int def)
{
	char buf[4096], *p;
	int fd = open("/proc/cmdline", O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return def;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	p = strstr(buf, key);
	return p ? atoi(p + strlen(key)) : def;
}

/* write(2) @s to @path (a sysfs, procfs or cgroup file); fails the test on error */
static inline void put_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_TRUNC);

	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		fail("write \"%s\" to %s: %s", s, path, strerror(errno));
	close(fd);
}

/* write(2) @s to @path: 0 or the errno */
static inline int put_str_errno(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_TRUNC), err = 0;

	if (fd < 0)
		return errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		err = errno;
	close(fd);
	return err;
}

#define CGROOT	"/sys/fs/cgroup"

/*
 * A fresh, empty cgroup @cg (a child of CGROOT) with @controller on, or
 * skip() without cgroup v2
 */
static inline void cg_make(const char *cg, const char *controller)
{
	char ctl[32];

	if (access(CGROOT "/cgroup.controllers", F_OK) &&
	    mount("none", CGROOT, "cgroup2", 0, NULL))
		skip("no cgroup v2 (%s)", strerror(errno));
	snprintf(ctl, sizeof(ctl), "+%s", controller);
	if (put_str_errno(CGROOT "/cgroup.subtree_control", ctl))
		fail("no %s controller in the guest kernel", controller);
	rmdir(cg);
	if (mkdir(cg, 0755))
		fail("mkdir %s: %s", cg, strerror(errno));
}

#define TRACEFS	"/sys/kernel/tracing"

/*
 * Lines of the trace buffer naming @event ("fsverity_enable_end:"), and,
 * if @bytes is not NULL, the sum of their "bytes N" fields into it
 */
static inline unsigned long long trace_count(const char *event,
					     unsigned long long *bytes)
{
	FILE *f = fopen(TRACEFS "/trace", "r");
	unsigned long long n = 0;
	char line[512], *b;

	if (!f)
		fail("open trace: %s", strerror(errno));
	if (bytes)
		*bytes = 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, event))
			continue;
		n++;
		if (bytes && (b = strstr(line, " bytes ")))
			*bytes += strtoull(b + 7, NULL, 10);
	}
	fclose(f);
	return n;
}

/* "maj:min" of block device @dev, as cgroup files name it */
static inline void dev_numbers(const char *dev, char *buf, size_t len)
{
	struct stat st;

	if (stat(dev, &st))
		fail("stat %s: %s", dev, strerror(errno));
	snprintf(buf, len, "%u:%u", major(st.st_rdev), minor(st.st_rdev));
}

/* The rbytes of device @devno ("maj:min") in cgroup @cg's io.stat, 0 if none */
static inline long long cgroup_rbytes(const char *cg, const char *devno)
{
	char path[256], line[512], *rb;
	size_t dl = strlen(devno);
	long long n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/io.stat", cg);
	f = fopen(path, "r");
	if (!f)
		fail("open %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, devno, dl) && line[dl] == ' ' &&
		    (rb = strstr(line, " rbytes=")))
			n = atoll(rb + 8);
	fclose(f);
	return n;
}

/* /bin/sh -c @cmd, which must succeed; @what names it in the failure */
static inline void must_run(const char *what, const char *cmd)
{
	char out[1024];
	int st = run_cmd(out, sizeof(out), "%s", cmd);

	if (st)
		fail("%s: \"%s\" exited %d: %s", what, cmd, st, out);
}

/* Raw FS_IOC_ENABLE_VERITY: 0 or errno.  For tests that build odd args. */
static inline int raw_enable(int fd, const struct fsverity_enable_arg *arg)
{
	return ioctl(fd, FS_IOC_ENABLE_VERITY, arg) == 0 ? 0 : errno;
}

static inline void enable_arg_init(struct fsverity_enable_arg *arg, int alg,
				   int bs)
{
	memset(arg, 0, sizeof(*arg));
	arg->version = 1;
	arg->hash_algorithm = alg;
	arg->block_size = bs;
}

/* Enable on @path with the given parameters; fails the test on error. */
static inline void must_enable(const char *path, int alg, int bs,
			       int salt_len)
{
	unsigned char salt[32];
	int fd, err;

	make_salt(salt, salt_len);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		fail("open %s: %s", path, strerror(errno));
	err = enable_verity(fd, alg, ilog2_u32(bs), salt_len ? salt : NULL,
			    salt_len, NULL, 0);
	if (err)
		fail("enable %s (%s, bs %d, salt %d): %s", path, alg_name(alg),
		     bs, salt_len, strerror(err));
	close(fd);
}

/* Kernel's digest of @path as hex; fails the test unless it is a verity file. */
static inline void kernel_digest_hex(const char *path, char *hex, int *alg)
{
	unsigned char d[MAX_DIGEST];
	int fd, size, err;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		fail("open %s: %s", path, strerror(errno));
	err = measure_verity(fd, d, alg, &size);
	if (err)
		fail("FS_IOC_MEASURE_VERITY %s: %s", path, strerror(err));
	if (size != alg_digest_size(*alg))
		fail("%s: digest_size %d for algorithm %d", path, size, *alg);
	to_hex(d, size, hex);
	close(fd);
}

/* "fsverity digest" of @path with the given parameters, as hex. */
static inline void user_digest_hex(const char *path, int alg, int bs,
				   int salt_len, char *hex)
{
	unsigned char salt[32];
	char salthex[80] = "", opt[100] = "", out[512];
	int rc;

	if (salt_len) {
		make_salt(salt, salt_len);
		to_hex(salt, salt_len, salthex);
		snprintf(opt, sizeof(opt), "--salt=%s", salthex);
	}
	rc = run_cmd(out, sizeof(out),
		     "fsverity digest --compact --hash-alg=%s --block-size=%d %s '%s'",
		     alg_name(alg), bs, opt, path);
	if (rc != 0)
		fail("fsverity digest %s: rc %d: %s", path, rc, out);
	out[strcspn(out, " \r\n")] = '\0';
	if ((int)strlen(out) != 2 * alg_digest_size(alg))
		fail("fsverity digest %s: unexpected output '%s'", path, out);
	strcpy(hex, out);
}

/* FS_IOC_READ_VERITY_METADATA: bytes read, or -errno */
static inline long read_md(int fd, uint64_t type, uint64_t off, uint64_t len,
			   void *buf)
{
	struct fsverity_read_metadata_arg arg = {
		.metadata_type = type,
		.offset = off,
		.length = len,
		.buf_ptr = (uintptr_t)buf,
	};
	long r = ioctl(fd, FS_IOC_READ_VERITY_METADATA, &arg);

	return r < 0 ? -errno : r;
}

static inline bool fd_has_verity_flag(int fd)
{
	int flags = 0;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0)
		fail("FS_IOC_GETFLAGS: %s", strerror(errno));
	return flags & FS_VERITY_FL;
}

static inline bool path_has_statx_verity(const char *path)
{
	struct statx stx;

	if (statx(AT_FDCWD, path, 0, STATX_BASIC_STATS, &stx) != 0)
		fail("statx %s: %s", path, strerror(errno));
	if (!(stx.stx_attributes_mask & STATX_ATTR_VERITY))
		fail("statx %s: STATX_ATTR_VERITY missing from attributes_mask",
		     path);
	return stx.stx_attributes & STATX_ATTR_VERITY;
}

/* Whole contents of @path (malloc'd, plus a NUL), size in *len. */
static inline unsigned char *read_whole(const char *path, size_t *len)
{
	struct stat st;
	unsigned char *buf;
	size_t done = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		fail("open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0)
		fail("fstat %s: %s", path, strerror(errno));
	buf = malloc(st.st_size + 1);
	if (!buf)
		fail("out of memory");
	while (done < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + done, st.st_size - done);

		if (n < 0)
			fail("read %s at %zu: %s", path, done, strerror(errno));
		if (n == 0)
			fail("read %s: early EOF at %zu", path, done);
		done += n;
	}
	buf[done] = 0;
	close(fd);
	*len = done;
	return buf;
}

/* Fail unless @path holds exactly @len bytes equal to @want. */
static inline void check_contents(const char *path, const void *want,
				  size_t len)
{
	size_t got_len;
	unsigned char *got = read_whole(path, &got_len);

	if (got_len != len)
		fail("%s: size %zu, expected %zu", path, got_len, len);
	for (size_t i = 0; i < len; i++)
		if (got[i] != ((const unsigned char *)want)[i])
			fail("%s: byte %zu is %#x, expected %#x", path, i,
			     got[i], ((const unsigned char *)want)[i]);
	free(got);
}

/* "fsverity digest" outputs: the tree and the descriptor (malloc'd) */
static inline void ref_metadata(const char *path, int alg, int bs,
				int salt_len, unsigned char **tree,
				size_t *tree_size, unsigned char desc[256])
{
	unsigned char salt[32], *d;
	char salthex[80] = "", out[512];
	size_t dlen;

	make_salt(salt, salt_len);
	to_hex(salt, salt_len, salthex);
	if (run_cmd(out, sizeof(out),
		    "fsverity digest --hash-alg=%s --block-size=%d %s%s "
		    "--out-merkle-tree=/tmp/ref-tree --out-descriptor=/tmp/ref-desc '%s'",
		    alg_name(alg), bs, salt_len ? "--salt=" : "", salthex, path))
		fail("fsverity digest: %s", out);
	*tree = read_whole("/tmp/ref-tree", tree_size);
	d = read_whole("/tmp/ref-desc", &dlen);
	CHECK(dlen == 256);
	memcpy(desc, d, 256);
	free(d);
	unlink("/tmp/ref-tree");
	unlink("/tmp/ref-desc");
}

/* Random buffer of @len bytes from @seed (malloc'd). */
static inline unsigned char *random_buf(size_t len, uint64_t seed)
{
	unsigned char *b = malloc(len ? len : 1);

	if (!b)
		fail("out of memory");
	fill_random(b, len, seed);
	return b;
}

/* 64-bit FNV-1a over a whole file: cheap fingerprint for big files. */
static inline uint64_t file_fingerprint(const char *path, uint64_t *size)
{
	static unsigned char buf[1 << 20];
	uint64_t h = 0xcbf29ce484222325ULL, total = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		fail("open %s: %s", path, strerror(errno));
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			h = (h ^ buf[i]) * 0x100000001b3ULL;
		total += n;
	}
	if (n < 0)
		fail("read %s: %s", path, strerror(errno));
	close(fd);
	*size = total;
	return h;
}

/*
 * Find @pat on the raw block device @dev.  With @align > 1 only offsets that
 * are multiples of @align are tried (fast path for data blocks, which every
 * filesystem here places block-aligned); with @align == 1 every byte offset
 * is (verity metadata may sit unaligned inside btrfs tree items).  Stores up
 * to @max offsets in @offs and returns how many matches there were.
 * Only use this with the filesystem unmounted.
 *
 * The device is read with O_DIRECT, in 4 MiB chunks: a scan of the whole
 * disk through the page cache costs the guest several times more (it fills
 * and reclaims a gigabyte of cache under TCG), and every corruption test
 * scans once.  The last @patlen - 1 bytes of a chunk are carried in front
 * of the next, so a match across two chunks is seen, and exactly once.
 */
static inline int dev_find(const char *dev, const void *pat, size_t patlen,
			   size_t align, uint64_t *offs, int max)
{
	const size_t chunk = 4 << 20, lead = 4096;	/* lead >= patlen - 1 */
	unsigned char *buf, *data;
	size_t keep = 0;
	uint64_t base;
	int found = 0;
	int fd = open(dev, O_RDONLY | O_DIRECT);

	if (fd < 0 || patlen < 1 || patlen - 1 > lead ||
	    posix_memalign((void **)&buf, 4096, lead + chunk))
		fail("open %s: %s", dev, strerror(errno));
	data = buf + lead;
	for (base = 0;; base += chunk) {
		ssize_t n = pread(fd, data, chunk, base);
		/* the window: [start, start + len) on the device */
		unsigned char *w = data - keep;
		uint64_t start = base - keep;
		size_t len;

		if (n < 0)
			fail("read %s at %" PRIu64 ": %s", dev, base,
			     strerror(errno));
		len = keep + n;
		if (align > 1) {
			size_t o = (align - start % align) % align;

			for (; o + patlen <= len; o += align)
				if (!memcmp(w + o, pat, patlen)) {
					if (found < max)
						offs[found] = start + o;
					found++;
				}
		} else {
			unsigned char *p = w;

			while ((p = memmem(p, len - (p - w), pat, patlen))) {
				if (found < max)
					offs[found] = start + (p - w);
				found++;
				p++;
			}
		}
		if ((size_t)n < chunk)
			break;
		/* a match starting in the last patlen - 1 bytes is not whole yet */
		keep = patlen - 1 < len ? patlen - 1 : len;
		memmove(data - keep, w + len - keep, keep);
	}
	close(fd);
	free(buf);
	return found;
}

/* posix_fadvise() returns the error number instead of setting errno. */
static inline void fadvise_or_fail(int fd, off_t off, off_t len, int advice)
{
	int err = posix_fadvise(fd, off, len, advice);

	if (err)
		fail("posix_fadvise(%d): %s", advice, strerror(err));
}

/*
 * Flip every bit of the byte at @off of @dev (so it surely changes) and make
 * it durable; only with the filesystem unmounted.
 */
static inline void flip_byte(const char *dev, uint64_t off)
{
	unsigned char c;
	int fd = open(dev, O_RDWR);

	if (fd < 0)
		fail("open %s: %s", dev, strerror(errno));
	if (pread(fd, &c, 1, off) != 1)
		fail("pread %s at %" PRIu64 ": %s", dev, off, strerror(errno));
	c ^= 0xff;
	if (pwrite(fd, &c, 1, off) != 1 || fsync(fd) != 0)
		fail("pwrite %s at %" PRIu64 ": %s", dev, off, strerror(errno));
	close(fd);
}

/*
 * Unmount @mnt if something is mounted there; a busy mount (a child being
 * reaped) gets 5 s.  Fails the test on any other error.
 */
static inline void umount_if_mounted(const char *mnt)
{
	for (int tries = 0; umount(mnt); tries++) {
		if (errno == EINVAL || errno == ENOENT)
			return;		/* not mounted */
		if (errno != EBUSY || tries == 50)
			fail("umount %s: %s", mnt, strerror(errno));
		usleep(100000);
	}
}

/*
 * Runs body() in a child and then cleanup() whatever happened to it, and
 * passes the child's verdict on (fail()/skip() of the child already sent it).
 * The child's alarm fires before the harness's own timeout.
 */
static inline void with_cleanup(void (*body)(void), void (*cleanup)(void), int secs)
{
	int status;
	pid_t pid;

	/* our cwd (the mount point) would keep the body from unmounting it */
	if (chdir("/"))
		fail("chdir /: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (pid == 0) {
		alarm(secs);
		body();
		fflush(stdout);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			break;
	cleanup();
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	if (WIFEXITED(status)) {
		fflush(stdout);
		_exit(WEXITSTATUS(status));
	}
	fail("the test body was killed by signal %d (%s)", WTERMSIG(status),
	     strsignal(WTERMSIG(status)));
}

#endif /* VUTIL_H */
