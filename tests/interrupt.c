// SPDX-License-Identifier: GPL-2.0
/*
 * FS_IOC_ENABLE_VERITY is interruptible by fatal signals, and "on failure
 * (including the case of interruption by a fatal signal), no changes are
 * made to the file" (Documentation/filesystems/fsverity.rst).  SIGKILL a
 * process while it builds the tree of a 256 MiB file: it must die promptly,
 * the file must be unchanged and writable, the filesystem must pass its own
 * fsck, and verity must then be enable-able normally.  Promptly also in a
 * block cgroup whose io.max read limit makes the enable's reads (its
 * helpers' included) drain slowly: the process is gone within 2 s.
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#include <poll.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#define BIG_SIZE (256ULL << 20)
#define PROMPT_SECONDS 5.0	/* "promptly", with TCG's slowness in mind */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Unmount, run the filesystem's own read-only fsck, mount again. */
static void fsck_clean(void)
{
	static char out[65536];
	int rc = fs_check(out, sizeof(out));

	if (rc)
		fail("fsck of %s after the interrupted enable (rc %d): %s",
		     env.dev, rc, out);
}

/* skip() unless the filesystem has room for a big file and its tree */
static void need_room(void)
{
	struct statvfs sv;

	CHECK_OK(statvfs(env.mnt, &sv));
	if ((uint64_t)sv.f_bavail * sv.f_frsize < BIG_SIZE + (BIG_SIZE >> 3))
		skip("%s has less than 288 MiB free", env.mnt);
}

/*
 * Enable verity on @p in a child, SIGKILL it 0.5 s in, and return how
 * long the kill took to end it; skip() if the enable was already over.
 */
static double kill_enable(const char *p, int alg, int bs)
{
	int ready[2], done[2], status;
	struct pollfd pfd;
	double t0, waited;
	pid_t pid;

	CHECK_OK(pipe(ready));
	CHECK_OK(pipe(done));
	pid = fork();
	CHECK_OK(pid);
	if (pid == 0) {
		struct fsverity_enable_arg arg;
		int rfd = open(p, O_RDONLY);
		unsigned char err;

		if (rfd < 0)
			_exit(1);
		enable_arg_init(&arg, alg, bs);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		err = raw_enable(rfd, &arg);
		if (write(done[1], &err, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	close(done[1]);
	CHECK(read(ready[0], &status, 1) == 1);
	usleep(500000);
	pfd.fd = done[0];
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 0) == 1) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		skip("enabling verity on 256 MiB finished within 0.5 s; nothing to interrupt");
	}
	t0 = now();
	CHECK_OK(kill(pid, SIGKILL));
	CHECK_OK(waitpid(pid, &status, 0));
	waited = now() - t0;
	if (poll(&pfd, 1, 0) == 1 && read(done[0], &status, 1) == 1)
		fail("the enable completed before SIGKILL took effect");
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		fail("child was not killed by SIGKILL (status %#x)", status);
	close(ready[0]);
	close(done[0]);
	return waited;
}

/*
 * Fail unless @p is no verity file (statx, GETFLAGS, MEASURE) and still
 * holds its BIG_SIZE bytes of fingerprint @fp: the interrupted enable
 * changed nothing.
 */
static void check_unchanged(const char *p, uint64_t fp)
{
	unsigned char d[MAX_DIGEST];
	uint64_t fp2, size;
	int fd, alg, dsz;

	CHECK(!path_has_statx_verity(p));
	fd = open(p, O_RDONLY);
	CHECK_OK(fd);
	CHECK(!fd_has_verity_flag(fd));
	CHECK(measure_verity(fd, d, &alg, &dsz) == ENODATA);
	close(fd);
	fp2 = file_fingerprint(p, &size);
	if (size != BIG_SIZE)
		fail("size changed from %llu to %" PRIu64 " by the interrupted enable",
		     BIG_SIZE, size);
	if (fp2 != fp)
		fail("contents changed by the interrupted enable");
}

TEST_TIMEOUT(sigkill_during_enable_returns_promptly_and_changes_nothing, 1200)
{
	char *p = test_path("big");
	uint64_t fp, fp2, size;
	double waited;
	int fd;

	need_room();
	unlink(p);
	make_file(p, BIG_SIZE, 42);
	fp = file_fingerprint(p, &size);
	CHECK(size == BIG_SIZE);
	drop_caches();	/* so the tree build has to read the disk */

	waited = kill_enable(p, FS_VERITY_HASH_ALG_SHA512, 1024);
	if (waited > PROMPT_SECONDS)
		fail("SIGKILL took %.1f s to end the enable", waited);
	note("SIGKILL ended the enable in %.2f s", waited);

	check_unchanged(p, fp);

	/* the same on disk, as the filesystem's own fsck sees it */
	fsck_clean();
	fp2 = file_fingerprint(p, &size);
	CHECK(size == BIG_SIZE && fp2 == fp);

	/* writable, and verity can be enabled normally afterwards */
	fd = open(p, O_RDWR);
	if (fd < 0)
		fail("not writable after the interrupted enable: %s",
		     strerror(errno));
	CHECK_OK(ftruncate(fd, (1 << 20) + 7));
	close(fd);
	{
		char khex[2 * MAX_DIGEST + 1], uhex[2 * MAX_DIGEST + 1];
		int alg;

		user_digest_hex(p, FS_VERITY_HASH_ALG_SHA512, 1024, 0, uhex);
		must_enable(p, FS_VERITY_HASH_ALG_SHA512, 1024, 0);
		kernel_digest_hex(p, khex, &alg);
		if (strcmp(khex, uhex))
			fail("digest after re-enable %s != fsverity digest %s",
			     khex, uhex);
	}
	CHECK_OK(unlink(p));
	fsck_clean();
}

/*
 * The largest batches (SHA-256 with 4 KiB blocks: 32 MiB of data each)
 * with the data cached, so that the enable hashes on every CPU at full
 * speed: a fatal signal still ends it, helpers and all, within 0.5 s.
 */
TEST_TIMEOUT(sigkill_ends_a_sha256_4k_enable_within_half_a_second, 1200)
{
	char *p = test_path("big256");
	int bs = block_size_unsupported(4096) ? 1024 : 4096;
	double waited;

	need_room();
	unlink(p);
	make_file(p, BIG_SIZE, 43);
	waited = kill_enable(p, FS_VERITY_HASH_ALG_SHA256, bs);
	note("%d-byte blocks: SIGKILL ended the enable in %.3f s", bs, waited);
	if (waited > 0.5)
		fail("SIGKILL took %.3f s to end the enable (limit 0.5 s)",
		     waited);
	CHECK(!path_has_statx_verity(p));
	CHECK_OK(unlink(p));
}

/*
 * An enable in a block cgroup whose io.max lets it read 256 KiB/s: it
 * would take over a quarter of an hour, and every read it has asked for,
 * its own readahead and its helpers', drains at that rate.  SIGKILL 2 s
 * in must still end the process within 2 s: a killed enable waits
 * neither for those reads nor for helpers waiting on them.  Mainline,
 * which hashes in the caller and waits for its folios killably, dies in
 * some 40 ms; a caller that waited for its helpers stayed in D state for
 * 57 s (ext4, 128 MiB, rbps=64 KiB/s: some 3.5 MiB of readahead in
 * flight, the windows of the caller's part and of a helper's).  At
 * 256 KiB/s the same few MiB take 10 s or so, five times the bound; at
 * 1 MiB/s, with most of the first windows read in the first 2 s, such a
 * wait could slip under it.  Nothing here needs our statistics: it runs
 * on mainline too.
 */
#define SLOW_CG		CGROOT "/fsverity-test-kill"
#define SLOW_RBPS	(256 << 10)	/* io.max rbps, bytes/s */
#define KILL_AFTER	2.0	/* s from the start of the enable to SIGKILL */
#define GONE_WITHIN	2.0	/* s from SIGKILL until the process is gone */
#define GIVE_UP		300	/* s after SIGKILL: the kill did not work */
#define AFTER_LIFT	30	/* s more for it, with the limit lifted */

/*
 * Lift SLOW_CG's read limit, so that reads it still holds back go at the
 * disk's speed: 0 or the errno
 */
static int slow_cg_lift(void)
{
	char devno[32], buf[64];

	dev_numbers(env.dev, devno, sizeof(devno));
	snprintf(buf, sizeof(buf), "%s rbps=max", devno);
	return put_str_errno(SLOW_CG "/io.max", buf);
}

/* rmdir SLOW_CG, waiting up to @secs for its last task to go: 0 or errno */
static int slow_cg_remove(int secs)
{
	for (int tries = 0; rmdir(SLOW_CG); tries++) {
		if (errno == ENOENT)
			return 0;
		if (errno != EBUSY || tries >= secs * 10)
			return errno;
		usleep(100000);
	}
	return 0;
}

/* Wait up to @secs for the process of @pidfd to end: whether it did */
static bool wait_gone(int pidfd, double secs)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
	double end = mono_now() + secs, left;
	int r;

	while ((left = end - mono_now()) > 0) {
		r = poll(&pfd, 1, (int)(left * 1000) + 1);
		if (r > 0)
			return true;
		if (r < 0 && errno != EINTR)
			fail("poll on a pidfd: %s", strerror(errno));
	}
	return poll(&pfd, 1, 0) > 0;
}

static void slow_kill_body(void)
{
	const int bs = block_size_unsupported(4096) ? 1024 : 4096;
	char *p = test_path("throttled"), buf[64];
	int ready[2], done[2], pidfd, status, fd;
	struct pollfd pfd;
	double t0, waited, left;
	uint64_t fp, size;
	unsigned char err;
	pid_t pid;

	need_room();
	unlink(p);
	make_file(p, BIG_SIZE, 44);
	fd = CHECK_OK(open(p, O_RDONLY));
	CHECK_OK(fsync(fd));
	close(fd);
	fp = file_fingerprint(p, &size);
	CHECK(size == BIG_SIZE);
	drop_caches();	/* cold: the enable reads it all through the limit */

	cg_make(SLOW_CG, "io");
	dev_numbers(env.dev, buf, sizeof(buf));
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), " rbps=%d",
		 SLOW_RBPS);
	put_str(SLOW_CG "/io.max", buf);

	CHECK_OK(pipe(ready));
	CHECK_OK(pipe(done));
	fflush(stdout);
	fflush(stderr);
	pid = CHECK_OK(fork());
	if (pid == 0) {
		/* no fail() here: the parent gives the verdict */
		struct fsverity_enable_arg arg;

		snprintf(buf, sizeof(buf), "%d", getpid());
		if (put_str_errno(SLOW_CG "/cgroup.procs", buf))
			_exit(10);
		fd = open(p, O_RDONLY);
		if (fd < 0)
			_exit(11);
		enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, bs);
		if (write(ready[1], "r", 1) != 1)
			_exit(12);
		err = raw_enable(fd, &arg);
		if (write(done[1], &err, 1) != 1)
			_exit(13);
		pause();
		_exit(0);
	}
	close(ready[1]);
	close(done[1]);
	pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail("pidfd_open: %s", strerror(errno));
	}
	if (read(ready[0], &err, 1) != 1) {
		CHECK_OK(waitpid(pid, &status, 0));
		fail("the child ended before its enable (status %#x: 10 cgroup.procs, 11 open)",
		     status);
	}

	/* KILL_AFTER s into the enable, it must still be running */
	t0 = mono_now();
	while ((left = t0 + KILL_AFTER - mono_now()) > 0)
		usleep(left * 1e6);
	pfd.fd = done[0];
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 0) == 1 && read(done[0], &err, 1) == 1) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		if (err)
			fail("the enable under io.max failed before the kill: %s",
			     errno_name(err));
		fail("set-up: the enable of %llu MiB under io.max rbps=%d KiB/s finished within %.0f s, before the kill: the limit did not hold it",
		     BIG_SIZE >> 20, SLOW_RBPS >> 10, KILL_AFTER);
	}
	if (poll(&(struct pollfd){ .fd = pidfd, .events = POLLIN }, 1, 0) == 1) {
		waitpid(pid, &status, 0);
		fail("set-up: the enabling child was gone before the kill (status %#x)",
		     status);
	}

	t0 = mono_now();
	CHECK_OK(kill(pid, SIGKILL));
	if (!wait_gone(pidfd, GIVE_UP)) {
		bool gone;

		/* let what it waits for through, to end it and clean up */
		slow_cg_lift();
		gone = wait_gone(pidfd, AFTER_LIFT);
		waited = mono_now() - t0;
		note("io.max rbps=%d KiB/s, SIGKILL %.0f s into the enable: not gone after %d s; %s %.1f s after SIGKILL, the limit lifted at %d s",
		     SLOW_RBPS >> 10, KILL_AFTER, GIVE_UP,
		     gone ? "gone" : "still there", waited, GIVE_UP);
		if (gone)
			waitpid(pid, &status, 0);
		fail("SIGKILL %.0f s into an enable under io.max rbps=%d KiB/s had not ended the process after %d s",
		     KILL_AFTER, SLOW_RBPS >> 10, GIVE_UP);
	}
	waited = mono_now() - t0;
	CHECK_OK(waitpid(pid, &status, 0));
	note("io.max rbps=%d KiB/s, SIGKILL %.0f s into the enable: the process was gone %.3f s later",
	     SLOW_RBPS >> 10, KILL_AFTER, waited);
	/* what the helpers may still have asked for, at the disk's speed */
	if ((errno = slow_cg_lift()))
		fail("lift io.max of %s: %s", SLOW_CG, strerror(errno));
	if (poll(&pfd, 1, 0) == 1 && read(done[0], &err, 1) == 1)
		fail("the enable returned (%s) before SIGKILL took effect",
		     errno_name(err));
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		fail("the enabling child was not killed by SIGKILL (status %#x)",
		     status);
	if (waited > GONE_WITHIN)
		fail("SIGKILL %.0f s into an enable under io.max rbps=%d KiB/s took %.2f s to end the process (limit %.0f s)",
		     KILL_AFTER, SLOW_RBPS >> 10, waited, GONE_WITHIN);
	close(pidfd);
	close(ready[0]);
	close(done[0]);

	/* nothing changed, nothing was left behind, the cgroup goes */
	check_unchanged(p, fp);
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, bs, 0);
	if (!path_has_statx_verity(p))
		fail("the enable after the interrupted one left no verity file");
	if ((errno = slow_cg_remove(5)))
		fail("rmdir %s: %s", SLOW_CG, strerror(errno));
	CHECK_OK(unlink(p));
}

/* Whatever the body did: lift the limit, remove the cgroup and the file */
static void slow_kill_cleanup(void)
{
	if (access(SLOW_CG, F_OK) == 0) {
		slow_cg_lift();
		slow_cg_remove(15);
	}
	unlink(test_path("throttled"));
}

/* the body's alarm (360 s) and the cleanup (15 s) end within the 400 s */
TEST_TIMEOUT(sigkill_ends_an_enable_throttled_by_io_max_within_two_seconds, 400)
{
	/* ext4 and XFS: the filesystems the review measured (expected-skips) */
	if (strcmp(env.fs, "ext4") && strcmp(env.fs, "xfs"))
		skip("runs in the ext4 and xfs passes");
	with_cleanup(slow_kill_body, slow_kill_cleanup, 360);
}
