// SPDX-License-Identifier: GPL-2.0
/*
 * Smoke test: fsverity-utils can enable and measure a file on each
 * filesystem, the kernel's digest equals the one fsverity computes from the
 * bytes, and the file survives a reboot (boot 2).
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <linux/fsverity.h>

#include "lib.h"

/* first word of a "sha256:<hex> <path>" line */
static void first_word(char *s)
{
	s[strcspn(s, " \n")] = '\0';
}

/*
 * The Merkle tree block size fsverity-utils must use here: its default
 * (4096) unless the filesystem's blocks are smaller (ext4 with 1K blocks).
 */
static unsigned long merkle_bs(const char *path)
{
	struct statvfs st;

	CHECK_OK(statvfs(path, &st));
	return st.f_bsize < 4096 ? st.f_bsize : 4096;
}

static void check_digests(const char *path)
{
	char measured[512], computed[512];
	unsigned char d[64];
	int alg, size, fd, st;

	st = run_cmd(measured, sizeof(measured), "fsverity measure %s", path);
	if (st)
		fail("fsverity measure: exit %d: %s", st, measured);
	st = run_cmd(computed, sizeof(computed), "fsverity digest --block-size=%lu %s",
		     merkle_bs(path), path);
	if (st)
		fail("fsverity digest: exit %d: %s", st, computed);
	first_word(measured);
	first_word(computed);
	if (strcmp(measured, computed))
		fail("measure %s != digest %s", measured, computed);

	fd = CHECK_OK(open(path, O_RDONLY));
	CHECK(measure_verity(fd, d, &alg, &size) == 0);
	close(fd);
	CHECK(alg == FS_VERITY_HASH_ALG_SHA256 && size == 32);
	if (strncmp(measured, "sha256:", 7) || strcmp(measured + 7, hex(d, size)))
		fail("ioctl digest %s != fsverity measure %s", hex(d, size), measured);
}

TEST(enable_measure)
{
	char *path = test_path("file");
	char out[512];
	int st;

	make_file(path, 1000000, 1);	/* not a multiple of the block size */
	st = run_cmd(out, sizeof(out), "fsverity enable --block-size=%lu %s",
		     merkle_bs(path), path);
	if (st)
		fail("fsverity enable: exit %d: %s", st, out);
	check_digests(path);
	drop_caches();
	check_digests(path);
	/* every byte reads back through verification */
	CHECK(run_cmd(NULL, 0, "cat %s >/dev/null", path) == 0);
}

TEST_BOOT2(still_verity_after_reboot)
{
	char *path = test_path("file");

	if (access(path, F_OK))
		fail("%s is gone after the reboot", path);
	check_digests(path);
}
