// SPDX-License-Identifier: GPL-2.0
/*
 * Guest half of scripts/powercut.sh (not part of make check: it is built
 * into its own initramfs).  fsv.powercut= on the kernel command line:
 *   prep    (boot 1) write a big file, remember its bytes and digest, time
 *           an enable of a copy of it ("PC-CALIBRATE <ms>")
 *   cut     (boot 2) check what the last power cut left (fsck clean; the
 *           file either plain with its bytes and writable, or verity with
 *           the right digest and fully readable), make it plain again if
 *           needed, print "PC-ENABLE-START", enable, "PC-ENABLE-RETURNED",
 *           sync(), "PC-SYNCED", then wait for the host to kill the VM
 *   verify  (boot 2) only the check
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#include <sys/wait.h>
#include <time.h>

#define BIG_SIZE (48ULL << 20)
#define SEED 0x9c

static char mode[32];

static void get_mode(void)
{
	char buf[4096], *p;
	int fd = open("/proc/cmdline", O_RDONLY);
	ssize_t n = fd < 0 ? 0 : read(fd, buf, sizeof(buf) - 1);

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	p = strstr(buf, "fsv.powercut=");
	if (!p)
		skip("not a power-cut boot (no fsv.powercut=)");
	sscanf(p + 13, "%31s", mode);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int bs(void)
{
	return block_size_unsupported(4096) ? 1024 : 4096;
}

static void fsck_clean(void)
{
	static char out[65536];
	int rc = fs_check(out, sizeof(out));

	if (rc)
		fail("PC-VERIFY-FAIL fsck after the power cut (rc %d): %s", rc, out);
}

static void read_expected(char *digest, uint64_t *fp)
{
	char *e = test_path("expected");
	size_t len;
	unsigned char *b = read_whole(e, &len);
	unsigned long long f;

	if (sscanf((char *)b, "%129s %llx", digest, &f) != 2)
		fail("PC-VERIFY-FAIL %s: unreadable: %s", e, b);
	*fp = f;
	free(b);
}

/* Returns 1 if the file is verity now, 0 if plain; fail()s otherwise. */
static int check_state(void)
{
	char *p = test_path("big"), digest[2 * MAX_DIGEST + 1];
	char khex[2 * MAX_DIGEST + 1];
	uint64_t fp, fp2, size;
	int alg, fd;

	fsck_clean();
	read_expected(digest, &fp);
	drop_caches();
	if (path_has_statx_verity(p)) {
		kernel_digest_hex(p, khex, &alg);
		if (strcmp(khex, digest))
			fail("PC-VERIFY-FAIL verity with digest %s, expected %s",
			     khex, digest);
		fp2 = file_fingerprint(p, &size);	/* every block verified */
		if (size != BIG_SIZE || fp2 != fp)
			fail("PC-VERIFY-FAIL verity file reads back different bytes");
		return 1;
	}
	fp2 = file_fingerprint(p, &size);
	if (size != BIG_SIZE || fp2 != fp)
		fail("PC-VERIFY-FAIL plain file changed (size %" PRIu64 ")", size);
	fd = open(p, O_RDWR);
	if (fd < 0)
		fail("PC-VERIFY-FAIL plain file not writable: %s", strerror(errno));
	if (fd_has_verity_flag(fd))
		fail("PC-VERIFY-FAIL FS_VERITY_FL without statx verity");
	close(fd);
	return 0;
}

static void do_enable(const char *p)
{
	int fd = open(p, O_RDONLY), err;

	CHECK_OK(fd);
	err = enable_verity(fd, FS_VERITY_HASH_ALG_SHA256, ilog2_u32(bs()),
			    NULL, 0, NULL, 0);
	if (err)
		fail("enable %s: %s", p, strerror(err));
	close(fd);
}

TEST_TIMEOUT(prep, 1200)
{
	char *p = test_path("big"), *c = test_path("calib"), *e = test_path("expected");
	char digest[2 * MAX_DIGEST + 1], line[256];
	uint64_t fp, size;
	double t0;

	get_mode();
	if (strcmp(mode, "prep"))
		skip("mode %s", mode);
	make_file(p, BIG_SIZE, SEED);
	fp = file_fingerprint(p, &size);
	user_digest_hex(p, FS_VERITY_HASH_ALG_SHA256, bs(), 0, digest);
	snprintf(line, sizeof(line), "%s %llx\n", digest, (unsigned long long)fp);
	write_file(e, line, strlen(line));
	make_file(c, BIG_SIZE, SEED);
	sync();
	drop_caches();
	t0 = now();
	do_enable(c);
	note("PC-CALIBRATE %d", (int)((now() - t0) * 1000));
	unlink(c);
	sync();
}

TEST_BOOT2_TIMEOUT(cut, -1)
{
	char *p = test_path("big");
	int state;

	get_mode();
	if (strcmp(mode, "cut") && strcmp(mode, "verify"))
		skip("mode %s", mode);
	state = check_state();
	note("PC-VERIFY-OK %s", state ? "verity" : "plain");
	if (!strcmp(mode, "verify"))
		return;
	if (state) {
		unlink(p);
		make_file(p, BIG_SIZE, SEED);
	}
	sync();
	drop_caches();
	note("PC-ENABLE-START");
	do_enable(p);
	note("PC-ENABLE-RETURNED");
	/* as an application would: cuts after the return land in this */
	sync();
	note("PC-SYNCED");
	for (;;)
		pause();	/* the host pulls the plug */
}
