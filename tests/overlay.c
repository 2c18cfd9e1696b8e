// SPDX-License-Identifier: GPL-2.0
/*
 * overlayfs "fs-verity support" (Documentation/filesystems/overlayfs.rst):
 * a metadata-only copy-up (metacopy=on,verity=on) of a lower verity file
 * records the lower file's fs-verity digest in the upper's
 * trusted.overlay.metacopy xattr; with verity=require the file opens while the
 * lower file matches, and gives EIO once the lower file is swapped for another
 * verity file; a metacopy without a digest also gives EIO under
 * verity=require.  Lower, upper and work dirs live on the test filesystem
 * (ext4 and XFS: the fsverity_get_digest()/fsverity_active() calls overlayfs
 * makes; composefs.c has the data-only lower layer setup).
 */
#define _GNU_SOURCE
#include <sys/mount.h>
#include <sys/xattr.h>

#include "sig.h"

#define FSIZE 70000

static char *base, *lower, *upper, *work, *merged;

static void ovl_mount(const char *verity)
{
	char opts[1024];

	snprintf(opts, sizeof(opts),
		 "lowerdir=%s,upperdir=%s,workdir=%s,metacopy=on,verity=%s",
		 lower, upper, work, verity);
	if (mount("overlay", merged, "overlay", 0, opts))
		fail("mount -t overlay -o %s: %s", opts, strerror(errno));
}

static void ovl_umount(void)
{
	if (umount(merged))
		fail("umount %s: %s", merged, strerror(errno));
}

static void ovl_body(void)
{
	char *lf = path_join(lower, "f"), *uf = path_join(upper, "f"), *mf = path_join(merged, "f");
	char *ln = path_join(lower, "n"), *mn = path_join(merged, "n");
	unsigned char d[32], x[256];
	char out[256];
	ssize_t n;
	int fd, err;

	if (run_cmd(out, sizeof(out), "rm -rf '%s' && mkdir -p '%s' '%s' '%s' '%s'",
		    base, lower, upper, work, merged))
		fail("mkdir: %s", out);
	make_file(lf, FSIZE, 81);
	err = sig_enable(lf, NULL, 0);
	if (err)
		fail("enable %s: %s", lf, errno_name(err));
	sig_measure(lf, d);
	make_file(ln, FSIZE, 82);	/* no verity */

	/* metadata-only copy-up: chown of the merged file */
	ovl_mount("on");
	CHECK_OK(chown(mf, 1234, 1234));
	CHECK_OK(chown(mn, 1234, 1234));
	expect_made_file(mf, FSIZE, 81);
	ovl_umount();

	n = getxattr(uf, "trusted.overlay.metacopy", x, sizeof(x));
	if (n < 0)
		fail("%s: no trusted.overlay.metacopy (%s): not a metacopy upper",
		     uf, strerror(errno));
	/* struct ovl_metacopy: version, len, flags, digest_algo, digest */
	if (n != 4 + 32 || x[0] != 0 || x[1] != 4 + 32 ||
	    x[3] != FS_VERITY_HASH_ALG_SHA256 || memcmp(x + 4, d, 32))
		fail("trusted.overlay.metacopy (%zd bytes, alg %d) does not carry the lower file's digest %s",
		     n, n >= 4 ? x[3] : -1, hex(d, 32));

	ovl_mount("require");
	expect_made_file(mf, FSIZE, 81);
	/* a metacopy file without a digest (its lower file has no verity) */
	errno = 0;
	fd = open(mn, O_RDONLY);
	if (fd >= 0 || errno != EIO)
		fail("verity=require, metacopy without a digest: open got %s, want EIO",
		     fd >= 0 ? "success" : errno_name(errno));
	ovl_umount();

	/* swap the lower file for another verity file */
	CHECK_OK(unlink(lf));
	make_file(lf, FSIZE, 83);
	err = sig_enable(lf, NULL, 0);
	if (err)
		fail("enable the replacement %s: %s", lf, errno_name(err));
	for (int i = 0; i < 2; i++) {
		const char *mode = i ? "on" : "require";

		ovl_mount(mode);
		errno = 0;
		fd = open(mf, O_RDONLY);
		if (fd >= 0 || errno != EIO)
			fail("verity=%s, lower file swapped: open got %s, want EIO",
			     mode, fd >= 0 ? "success" : errno_name(errno));
		ovl_umount();
	}
	/* verity=off does not look at the digest: the new lower data shows */
	ovl_mount("off");
	expect_made_file(mf, FSIZE, 83);
	ovl_umount();
}

static void ovl_cleanup(void)
{
	umount2(merged, MNT_DETACH);
	run_cmd(NULL, 0, "rm -rf '%s'", base);
}

TEST(metacopy_verity_require)
{
	users_run_on_ext4_and_xfs("overlayfs");
	base = test_path("ovl");
	lower = path_join(base, "lower");
	upper = path_join(base, "upper");
	work = path_join(base, "work");
	merged = path_join(base, "merged");
	with_cleanup(ovl_body, ovl_cleanup, 100);
}
