// SPDX-License-Identifier: GPL-2.0
/*
 * FS_IOC_ENABLE_VERITY is interruptible by fatal signals, and "on failure
 * (including the case of interruption by a fatal signal), no changes are
 * made to the file" (Documentation/filesystems/fsverity.rst).  SIGKILL a
 * process while it builds the tree of a 256 MiB file: it must die promptly,
 * the file must be unchanged and writable, the filesystem must pass its own
 * fsck, and verity must then be enable-able normally.
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#include <poll.h>
#include <signal.h>
#include <sys/statvfs.h>
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

	/* nothing changed */
	CHECK(!path_has_statx_verity(p));
	fd = open(p, O_RDONLY);
	CHECK_OK(fd);
	CHECK(!fd_has_verity_flag(fd));
	{
		unsigned char d[MAX_DIGEST];
		int alg, dsz;

		CHECK(measure_verity(fd, d, &alg, &dsz) == ENODATA);
	}
	close(fd);
	fp2 = file_fingerprint(p, &size);
	if (size != BIG_SIZE)
		fail("size changed from %llu to %" PRIu64 " by the interrupted enable",
		     BIG_SIZE, size);
	if (fp2 != fp)
		fail("contents changed by the interrupted enable");

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
