// SPDX-License-Identifier: GPL-2.0
/*
 * Fault injection (debug kernel only: SKIPs without /sys/kernel/debug/failslab).
 * Slab allocations (failslab), page allocations (fail_page_alloc) and bios
 * of the test disk (fail_make_request) fail in the test's own task only:
 *
 *  - sweep: /proc/thread-self/fail-nth = n makes the n-th injectable call
 *    of the task fail; for n = 1, 2, ... until an operation completes
 *    without reaching its n-th call, for each of FS_IOC_ENABLE_VERITY, open
 *    of a verity inode that is not in memory (caches dropped first),
 *    FS_IOC_MEASURE_VERITY, FS_IOC_READ_VERITY_METADATA and verified reads
 *    (page cache dropped first);
 *  - random: task-filter=Y, /proc/self/make-it-fail=1, probability 10 %,
 *    the same operations in a loop; injections counted by "times".
 *
 * Each call must succeed with correct results or fail with a clean errno
 * (ENOMEM, EIO, ...); a failed enable leaves the file as it was and
 * writable; everything works again once injection stops; the filesystem's
 * fsck is clean; kmemleak finds nothing new.  Workqueue jobs (tree-build
 * shares, verification shares) run in kworkers and are not injected.
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#include <libgen.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#define DBG "/sys/kernel/debug/"
#define SWEEP_MAX 3000

static const char *const facilities[] = {
	"failslab", "fail_page_alloc", "fail_make_request" };

static long injected_sweep, injected_random, calls_ok, calls_err;
static long fs_shutdowns;	/* the filesystem went read-only or shut down */
static bool saw_erofs, random_phase;
static long errs[160];
static int nth_fd = -1, mif_fd = -1;
static char make_it_fail_dev[128];

static void put(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0 || write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		fail("write %s to %s: %s", val, path, strerror(errno));
	close(fd);
}

static long get_long(const char *path)
{
	char buf[64] = "";
	int fd = open(path, O_RDONLY);

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) < 0)
		fail("read %s: %s", path, strerror(errno));
	close(fd);
	return atol(buf);
}

static void fac_set(const char *knob, const char *val)
{
	char p[256];

	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), DBG "%s/%s", facilities[i], knob);
		if (access(p, F_OK) == 0)
			put(p, val);
	}
}

static void faults_setup(void)
{
	char *d = strdup(env.dev);

	if (access(DBG "failslab", F_OK))
		skip("no " DBG "failslab (not a DEBUG=1 kernel)");
	if (access(DBG "fail_page_alloc", F_OK) ||
	    access(DBG "fail_make_request", F_OK) ||
	    access("/proc/thread-self/fail-nth", F_OK))
		skip("fail_page_alloc, fail_make_request or fail-nth missing");
	/* nothing random by default; nothing on the console per failure */
	fac_set("probability", "0");
	fac_set("interval", "1");
	fac_set("times", "-1");
	fac_set("space", "0");
	fac_set("verbose", "0");
	fac_set("task-filter", "Y");
	/* GFP_KERNEL allocations and order-0 pages can fail too */
	put(DBG "failslab/ignore-gfp-wait", "N");
	put(DBG "fail_page_alloc/ignore-gfp-wait", "N");
	put(DBG "fail_page_alloc/ignore-gfp-highmem", "N");
	put(DBG "fail_page_alloc/min-order", "0");
	snprintf(make_it_fail_dev, sizeof(make_it_fail_dev),
		 "/sys/block/%s/make-it-fail", basename(d));
	put(make_it_fail_dev, "1");
	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	CHECK_OK(nth_fd);
	mif_fd = open("/proc/self/make-it-fail", O_RDWR);
	CHECK_OK(mif_fd);
}

/* through an fd opened beforehand: opening it could fail while injecting */
static void make_it_fail(bool on)
{
	if (mif_fd >= 0 && pwrite(mif_fd, on ? "1" : "0", 1, 0) != 1)
		fail("write make-it-fail: %s", strerror(errno));
}

static void make_it_fail_on_dev(void)
{
	put(make_it_fail_dev, "1");
}

static void faults_off(void)
{
	if (nth_fd >= 0 && pwrite(nth_fd, "0", 1, 0) < 0)
		fail("reset fail-nth: %s", strerror(errno));
	make_it_fail(false);
	fac_set("probability", "0");
	if (make_it_fail_dev[0])
		put(make_it_fail_dev, "0");
}

static void nth_arm(int n)
{
	char b[16];
	int l = snprintf(b, sizeof(b), "%d", n);

	if (pwrite(nth_fd, b, l, 0) != l)
		fail("write fail-nth: %s", strerror(errno));
}

/* true if the armed failure happened (and disarms) */
static bool nth_fired(void)
{
	char b[16] = "";
	bool fired;

	if (pread(nth_fd, b, sizeof(b) - 1, 0) < 0)
		fail("read fail-nth: %s", strerror(errno));
	fired = atoi(b) == 0;
	if (pwrite(nth_fd, "0", 1, 0) != 1)
		fail("reset fail-nth: %s", strerror(errno));
	return fired;
}

/* the errnos an injected failure may turn into */
static void clean_errno(int e, const char *op, int n)
{
	if (e > 0 && e < 160)
		errs[e]++;
	calls_err++;
	switch (e) {
	case ENOMEM: case EIO: case ENOSPC: case EAGAIN: case EINTR:
		return;
	case EROFS:	/* checked by recover_if_ro() once the call is over */
		saw_erofs = true;
		return;
	}
	faults_off();
	fail("%s with failure #%d injected: %s, not a clean error", op, n,
	     errno_name(e));
}

/*
 * XFS shuts itself down when a write to its log fails: with
 * fail_make_request on the task, that is the synchronous commit that sets
 * XFS_DIFLAG2_VERITY, or the one of the post-EOF clean-up after a failed
 * enable ("log I/O error -5", "shut down due to log error (0x2)").  Every
 * later call then gives EIO, opening the mount's root included, which
 * nothing else on a healthy XFS does.
 */
static bool xfs_shut_down(void)
{
	int fd;

	if (strncmp(env.fs, "xfs", 3))
		return false;
	fd = open(env.mnt, O_RDONLY | O_DIRECTORY);
	if (fd >= 0) {
		close(fd);
		return false;
	}
	return errno == EIO;
}

/*
 * A filesystem may give up on a failure inside its own transaction and go
 * read-only or shut down (btrfs aborts the transaction when
 * btrfs_orphan_add() fails in ->begin_enable_verity(); f2fs may stop
 * checkpointing; XFS shuts down on a log write error, above).  That is the
 * filesystem's policy, not fs-verity's: count it, mount again (back to the
 * last commit) and go on.  EROFS is only accepted when the filesystem
 * really did go read-only.
 */
static void recover_if_ro(const char *op, int n)
{
	struct statvfs sv;
	bool ro = !statvfs(env.mnt, &sv) && (sv.f_flag & ST_RDONLY);

	if (!ro && xfs_shut_down()) {
		note("%s with failure #%d: %s shut down", op, n, env.mnt);
		ro = true;
	}
	if (saw_erofs && !ro)
		fail("%s with failure #%d: EROFS, yet %s is not read-only", op,
		     n, env.mnt);
	saw_erofs = false;
	if (!ro)
		return;
	fs_shutdowns++;
	faults_off();
	fs_unmount();
	fs_mount();
	make_it_fail_on_dev();
	if (random_phase)
		fac_set("probability", "10");
}

/*
 * btrfs aborts its transaction when an allocation fails inside it (in
 * btrfs_orphan_add() from ->begin_enable_verity(), btrfs_force_cow_block()
 * while the Merkle items go in, ...), and the unmount after such an abort
 * WARNs in btrfs_space_info_update_bytes_may_use() (fs/btrfs/space-info.h,
 * close_ctree() -> btrfs_free_block_groups()): a btrfs splat, not ours.  So
 * enables are only injected on btrfs with fsv.faults_btrfs_enable=1.
 */
static bool enable_injected(void)
{
	char buf[4096];
	int fd;
	ssize_t n;

	if (strcmp(env.fs, "btrfs"))
		return true;
	fd = open("/proc/cmdline", O_RDONLY);
	n = fd < 0 ? 0 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return strstr(buf, "fsv.faults_btrfs_enable=1") != NULL;
}

struct ref {
	char *path;
	size_t size;
	int bs;
	unsigned char *data;
	char digest[2 * MAX_DIGEST + 1];
	unsigned char *tree, desc[256];
	size_t tree_size;
};

static void ref_outputs(struct ref *r)
{
	char out[512];
	size_t dlen;
	unsigned char *d;

	if (run_cmd(out, sizeof(out),
		    "fsverity digest --compact --hash-alg=sha256 --block-size=%d "
		    "--out-merkle-tree=/tmp/faults-tree --out-descriptor=/tmp/faults-desc '%s'",
		    r->bs, r->path))
		fail("fsverity digest: %s", out);
	out[strcspn(out, " \r\n")] = '\0';
	strcpy(r->digest, out);
	r->tree = read_whole("/tmp/faults-tree", &r->tree_size);
	d = read_whole("/tmp/faults-desc", &dlen);
	CHECK(dlen == 256);
	memcpy(r->desc, d, 256);
	free(d);
}

static void make_ref(struct ref *r, const char *name, size_t size, uint64_t seed)
{
	r->path = test_path("%s", name);
	r->size = size;
	r->bs = block_size_unsupported(4096) ? 1024 : 4096;
	r->data = random_buf(size, seed);
	unlink(r->path);
	write_file(r->path, r->data, size);
	ref_outputs(r);
}

static void check_digest(const struct ref *r)
{
	char k[2 * MAX_DIGEST + 1];
	int alg;

	kernel_digest_hex(r->path, k, &alg);
	if (strcmp(k, r->digest))
		fail("%s: digest %s, expected %s", r->path, k, r->digest);
}

/* drop_caches, with 4 written first: no console line each time */
static void quiet_drop(void)
{
	static bool quiet;

	if (!quiet)
		put("/proc/sys/vm/drop_caches", "4");
	quiet = true;
	sync();
	put("/proc/sys/vm/drop_caches", "3");
}

/* ---- the operations, each run once with injection armed ---- */

/* enable on a plain copy; returns whether the failure fired */
static bool op_enable(struct ref *r, int n, bool *enabled)
{
	int fd = open(r->path, O_RDONLY), err;
	bool fired;

	CHECK_OK(fd);
	/* committed: a filesystem that gives up goes back to this */
	sync();
	fadvise_or_fail(fd, 0, 0, POSIX_FADV_DONTNEED);
	nth_arm(n);
	err = enable_verity(fd, FS_VERITY_HASH_ALG_SHA256, ilog2_u32(r->bs),
			    NULL, 0, NULL, 0);
	fired = nth_fired();
	close(fd);
	if (err)
		clean_errno(err, "FS_IOC_ENABLE_VERITY", n);
	recover_if_ro("FS_IOC_ENABLE_VERITY", n);
	*enabled = !err;
	if (!err) {
		calls_ok++;
		check_digest(r);
		check_contents(r->path, r->data, r->size);
		return fired;
	}
	if (!fired)
		fail("enable failed (%s) with no failure injected", errno_name(err));
	/* unchanged: no verity, same bytes, writable */
	fd = open(r->path, O_RDWR);
	if (fd < 0)
		fail("%s: not writable after enable failed with failure #%d: %s",
		     r->path, n, strerror(errno));
	if (fd_has_verity_flag(fd))
		fail("%s: verity flag set after a failed enable", r->path);
	close(fd);
	check_contents(r->path, r->data, r->size);
	return fired;
}

static bool op_open(struct ref *r, int n)
{
	int fd, e;
	bool fired;

	/* nothing of the inode in memory: not its dentry, inode or verity info */
	fs_unmount();
	fs_mount();
	nth_arm(n);
	fd = open(r->path, O_RDONLY);
	e = errno;
	fired = nth_fired();
	if (fd < 0) {
		clean_errno(e, "open", n);
		if (!fired)
			fail("open failed (%s) with no failure injected", errno_name(e));
	} else {
		calls_ok++;
		close(fd);
	}
	/* a half-made verity state must not stay behind */
	check_digest(r);
	check_contents(r->path, r->data, r->size);
	return fired;
}

static bool op_measure(struct ref *r, int n)
{
	unsigned char d[MAX_DIGEST];
	int fd = open(r->path, O_RDONLY), alg, size, err;
	bool fired;

	CHECK_OK(fd);
	nth_arm(n);
	err = measure_verity(fd, d, &alg, &size);
	fired = nth_fired();
	close(fd);
	if (err)
		clean_errno(err, "FS_IOC_MEASURE_VERITY", n);
	else if (strcmp(hex(d, size), r->digest))
		fail("measure with failure #%d injected: %s", n, hex(d, size));
	else
		calls_ok++;
	return fired;
}

static bool op_read_metadata(struct ref *r, int n, int type)
{
	struct fsverity_read_metadata_arg a;
	size_t len = type == FS_VERITY_METADATA_TYPE_MERKLE_TREE ? r->tree_size : 256;
	unsigned char *buf = malloc(len + 4096);
	int fd = open(r->path, O_RDONLY);
	long got;
	bool fired;

	CHECK(buf);
	CHECK_OK(fd);
	fadvise_or_fail(fd, 0, 0, POSIX_FADV_DONTNEED);
	memset(&a, 0, sizeof(a));
	a.metadata_type = type;
	a.length = len + 4096;
	a.buf_ptr = (uintptr_t)buf;
	nth_arm(n);
	got = ioctl(fd, FS_IOC_READ_VERITY_METADATA, &a);
	fired = nth_fired();
	if (got < 0) {
		clean_errno(errno, "FS_IOC_READ_VERITY_METADATA", n);
	} else {
		const unsigned char *want = type == FS_VERITY_METADATA_TYPE_MERKLE_TREE ?
					    r->tree : r->desc;

		/* a short read is fine (an error after some bytes) */
		if ((size_t)got > len || memcmp(buf, want, got))
			fail("read metadata type %d with failure #%d: %ld wrong bytes",
			     type, n, got);
		calls_ok++;
	}
	close(fd);
	free(buf);
	return fired;
}

static bool op_read(struct ref *r, int n, size_t off, size_t len)
{
	unsigned char *buf = malloc(len);
	int fd = open(r->path, O_RDONLY);
	ssize_t got;
	bool fired;

	CHECK(buf);
	CHECK_OK(fd);
	fadvise_or_fail(fd, 0, 0, POSIX_FADV_DONTNEED);
	nth_arm(n);
	got = pread(fd, buf, len, off);
	fired = nth_fired();
	if (got < 0) {
		clean_errno(errno, "pread", n);
	} else {
		if ((size_t)got > len || memcmp(buf, r->data + off, got))
			fail("pread %zu@%zu with failure #%d: wrong bytes", len,
			     off, n);
		calls_ok++;
	}
	/* nothing bad stays cached: the same range reads right now */
	got = pread(fd, buf, len, off);
	if (got != (ssize_t)len || memcmp(buf, r->data + off, len))
		fail("pread %zu@%zu after failure #%d: %s", len, off, n,
		     got < 0 ? strerror(errno) : "wrong bytes");
	close(fd);
	free(buf);
	return fired;
}

/* ---- sweeps ---- */

static int sweep_count;

#define SWEEP(label, call)						\
	do {								\
		int n__;						\
		for (n__ = 1; n__ <= SWEEP_MAX; n__++) {		\
			bool f__ = (call);				\
			recover_if_ro(label, n__);			\
			if (!f__)					\
				break;					\
			injected_sweep++;				\
		}							\
		sweep_count += n__ - 1;					\
		if (n__ > SWEEP_MAX)					\
			fail("%s: still failing at call %d", label, n__);	\
		note("%s: %d injected failures", label, n__ - 1);	\
	} while (0)

static void fsck_clean(void)
{
	static char out[65536];
	int rc = fs_check(out, sizeof(out));

	if (rc)
		fail("fsck of %s after fault injection (rc %d): %s", env.dev,
		     rc, out);
}

static void kmemleak_check(void)
{
	char out[8192];

	if (access(DBG "kmemleak", F_OK))
		return;
	sleep(6);	/* kmemleak ignores objects younger than 5 s */
	put(DBG "kmemleak", "scan");
	put(DBG "kmemleak", "scan");
	run_cmd(out, sizeof(out), "cat " DBG "kmemleak");
	if (out[0]) {
		put(DBG "kmemleak", "clear");
		fail("kmemleak after fault injection: %s", out);
	}
}

TEST_TIMEOUT(injected_failures_give_clean_errors, 3000)
{
	struct ref a, b;
	bool enabled = false;
	long t0[3], t1[3];
	char p[256], e[1024] = "";

	faults_setup();
	/* a: enabled by the sweep; b: verity from the start */
	make_ref(&a, "enable", 200000, 11);
	make_ref(&b, "verity", 300000, 12);
	must_enable(b.path, FS_VERITY_HASH_ALG_SHA256, b.bs, 0);
	check_digest(&b);

	/* enable: the file stays plain until an enable gets through */
	if (!enable_injected()) {
		note("FS_IOC_ENABLE_VERITY: not injected on btrfs (see enable_injected())");
	} else {
		int n;

		for (n = 1; n <= SWEEP_MAX; n++) {
			bool fired = op_enable(&a, n, &enabled);

			if (fired)
				injected_sweep++;
			if (enabled) {
				if (!fired)
					break;
				/* it survived the failure: start over on a copy */
				unlink(a.path);
				write_file(a.path, a.data, a.size);
			}
		}
		if (n > SWEEP_MAX)
			fail("enable: still failing at call %d", n);
		sweep_count += n - 1;
		note("FS_IOC_ENABLE_VERITY: %d injected failures", n - 1);
	}
	/* the failed enables left nothing behind that fsck would see */
	fsck_clean();
	SWEEP("open of an uncached verity inode", op_open(&b, n__));
	SWEEP("FS_IOC_MEASURE_VERITY", op_measure(&b, n__));
	if (strcmp(env.fs, "btrfs")) {
		SWEEP("read Merkle tree", op_read_metadata(&b, n__,
				FS_VERITY_METADATA_TYPE_MERKLE_TREE));
		SWEEP("read descriptor", op_read_metadata(&b, n__,
				FS_VERITY_METADATA_TYPE_DESCRIPTOR));
	}
	SWEEP("pread 64 KiB", op_read(&b, n__, 4096 * 7, 65536));
	SWEEP("pread last block", op_read(&b, n__, b.size - 100, 100));

	/* random phase: 10 % of the task's calls fail, counted by "times" */
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), DBG "%s/times", facilities[i]);
		put(p, "100000");
		t0[i] = get_long(p);
	}
	fac_set("probability", "10");
	random_phase = true;
	for (int it = 0; it < 60; it++) {
		unsigned char d[MAX_DIGEST];
		unsigned char *buf = malloc(65536);
		int fd, alg, size, err;
		ssize_t got;

		CHECK(buf);
		quiet_drop();
		make_it_fail(true);
		fd = open(b.path, O_RDONLY);
		if (fd < 0) {
			make_it_fail(false);
			clean_errno(errno, "open (random)", it);
			recover_if_ro("open (random)", it);
			free(buf);
			continue;
		}
		calls_ok++;
		err = measure_verity(fd, d, &alg, &size);
		if (err)
			clean_errno(err, "measure (random)", it);
		else if (strcmp(hex(d, size), b.digest))
			fail("measure (random): %s", hex(d, size));
		for (size_t off = 0; off < b.size; off += 65536) {
			got = pread(fd, buf, 65536, off);
			if (got < 0)
				clean_errno(errno, "pread (random)", it);
			else if (memcmp(buf, b.data + off, got))
				fail("pread (random) %zu: wrong bytes", off);
		}
		make_it_fail(false);
		close(fd);
		free(buf);
		recover_if_ro("random reads", it);
		if (!enable_injected())
			continue;
		/* and an enable that may fail */
		unlink(a.path);
		write_file(a.path, a.data, a.size);
		sync();
		fd = open(a.path, O_RDONLY);
		CHECK_OK(fd);
		fadvise_or_fail(fd, 0, 0, POSIX_FADV_DONTNEED);
		make_it_fail(true);
		err = enable_verity(fd, FS_VERITY_HASH_ALG_SHA256,
				    ilog2_u32(a.bs), NULL, 0, NULL, 0);
		make_it_fail(false);
		close(fd);
		if (err)
			clean_errno(err, "enable (random)", it);
		recover_if_ro("enable (random)", it);
		if (err) {
			fd = open(a.path, O_RDWR);
			if (fd < 0 || fd_has_verity_flag(fd))
				fail("after a failed enable (random): not writable or verity");
			close(fd);
			check_contents(a.path, a.data, a.size);
		} else {
			calls_ok++;
			check_digest(&a);
		}
	}
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), DBG "%s/times", facilities[i]);
		t1[i] = get_long(p);
		injected_random += t0[i] - t1[i];
	}
	random_phase = false;
	faults_off();
	fac_set("times", "1");

	/* everything works again */
	check_digest(&b);
	check_contents(b.path, b.data, b.size);
	unlink(a.path);
	write_file(a.path, a.data, a.size);
	must_enable(a.path, FS_VERITY_HASH_ALG_SHA256, a.bs, 0);
	check_digest(&a);
	drop_caches();
	check_contents(a.path, a.data, a.size);
	fsck_clean();
	check_digest(&a);
	check_digest(&b);
	for (int i = 0; i < 160; i++)
		if (errs[i])
			snprintf(e + strlen(e), sizeof(e) - strlen(e), " %s:%ld",
				 errno_name(i), errs[i]);
	note("%ld failures injected (%ld by fail-nth sweeps, %ld random: failslab %ld, fail_page_alloc %ld, fail_make_request %ld); calls: %ld ok, %ld failed cleanly:%s; the filesystem went read-only or shut down %ld times",
	     injected_sweep + injected_random, injected_sweep, injected_random,
	     t0[0] - t1[0], t0[1] - t1[1], t0[2] - t1[2], calls_ok, calls_err, e,
	     fs_shutdowns);
	unlink(a.path);
	unlink(b.path);
	kmemleak_check();
}
