// SPDX-License-Identifier: GPL-2.0
/*
 * How a verity file says so without being opened for its digest: the
 * FS_VERITY_FL inode flag (FS_IOC_GETFLAGS), STATX_ATTR_VERITY, and
 * FS_XFLAG_VERITY in FS_IOC_FSGETXATTR, which mainline gained after 6.12
 * and our series adds ("fs: add FS_XFLAG_VERITY for fs-verity files").
 * The extended flag is read-only: FS_IOC_FSSETXATTR ignores it, as the
 * upstream posting does, so it neither makes a file verity nor unmakes one,
 * and the get-modify-set of xfs_io's chattr, or chattr's FS_IOC_GETFLAGS /
 * FS_IOC_SETFLAGS with FS_VERITY_FL in them, work on a verity file and
 * leave it the same verity file (flags, digest, read-only).
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#ifndef FS_XFLAG_VERITY
#define FS_XFLAG_VERITY		0x00020000
#endif
#ifndef STATX_ATTR_VERITY
#define STATX_ATTR_VERITY	0x00100000
#endif

struct attrs {
	bool fl, statx, xflag;
};

static struct attrs attrs_of(const char *path)
{
	struct attrs a;
	struct fsxattr fsx;
	struct statx stx;
	int fd = CHECK_OK(open(path, O_RDONLY));
	int flags;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags))
		fail("FS_IOC_GETFLAGS %s: %s", path, strerror(errno));
	if (ioctl(fd, FS_IOC_FSGETXATTR, &fsx))
		fail("FS_IOC_FSGETXATTR %s: %s", path, strerror(errno));
	CHECK_OK(statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx));
	close(fd);
	a.fl = flags & FS_VERITY_FL;
	a.statx = stx.stx_attributes & STATX_ATTR_VERITY;
	a.xflag = fsx.fsx_xflags & FS_XFLAG_VERITY;
	return a;
}

/* FS_IOC_FSGETXATTR of @path; fails the test on error */
static struct fsxattr getxattr_of(const char *path)
{
	int fd = CHECK_OK(open(path, O_RDONLY));
	struct fsxattr fsx;

	if (ioctl(fd, FS_IOC_FSGETXATTR, &fsx))
		fail("FS_IOC_FSGETXATTR %s: %s", path, strerror(errno));
	close(fd);
	return fsx;
}

/* FS_IOC_FSSETXATTR of @path with @fsx: 0 or the errno */
static int setxattr_of(const char *path, struct fsxattr *fsx)
{
	int fd = CHECK_OK(open(path, O_RDONLY));
	int err = ioctl(fd, FS_IOC_FSSETXATTR, fsx) ? errno : 0;

	close(fd);
	return err;
}

/* FS_IOC_GETFLAGS of @path; fails the test on error */
static int getflags_of(const char *path)
{
	int fd = CHECK_OK(open(path, O_RDONLY));
	int flags;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags))
		fail("FS_IOC_GETFLAGS %s: %s", path, strerror(errno));
	close(fd);
	return flags;
}

/* FS_IOC_SETFLAGS of @path, as chattr does it: 0 or the errno */
static int setflags_of(const char *path, int flags)
{
	int fd = CHECK_OK(open(path, O_RDONLY));
	int err = ioctl(fd, FS_IOC_SETFLAGS, &flags) ? errno : 0;

	close(fd);
	return err;
}

/* the file digest of a verity file, as hex (fails the test if it is not one) */
static void digest_of(const char *path, char *hex)
{
	int alg;

	kernel_digest_hex(path, hex, &alg);
}

/*
 * Still a verity file, and the same one: every flag says so (FS_XFLAG_VERITY
 * where the kernel has it), the digest is @digest, and it cannot be opened
 * for writing.
 */
static void check_still_verity(const char *path, const char *digest,
			       const char *after)
{
	char now[2 * MAX_DIGEST + 1];
	struct attrs a = attrs_of(path);

	if (!a.fl || !a.statx || (!a.xflag && kernel_is_ours()))
		fail("after %s: FS_VERITY_FL %d, STATX_ATTR_VERITY %d, "
		     "FS_XFLAG_VERITY %d: want all three", after, a.fl,
		     a.statx, a.xflag);
	digest_of(path, now);
	if (strcmp(now, digest))
		fail("after %s: digest %s, was %s", after, now, digest);
	CHECK_ERRNO(open(path, O_WRONLY), EPERM);
}

/* the largest Merkle block size this filesystem takes */
static int merkle_bs(void)
{
	return block_size_unsupported(4096) ? 1024 : 4096;
}

static void need_xflag(void)
{
	if (!kernel_is_ours())
		skip("mainline 6.12 has no FS_XFLAG_VERITY (later mainline does)");
}

TEST(verity_files_report_fs_xflag_verity_and_the_others)
{
	char *p = test_path("flags-verity");
	struct attrs a;

	need_xflag();
	make_file(p, 10000, 91);
	a = attrs_of(p);
	CHECK(!a.fl && !a.statx && !a.xflag);
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	a = attrs_of(p);
	CHECK(a.fl && a.statx && a.xflag);
	unlink(p);
	free(p);
}

/*
 * Asking FS_IOC_FSSETXATTR for FS_XFLAG_VERITY on an ordinary file succeeds
 * with the flag ignored: the file stays writable, has no digest, and can
 * still be made a verity file the one real way.
 */
TEST(fssetxattr_asking_for_fs_xflag_verity_does_not_make_a_file_verity)
{
	char *p = test_path("flags-ask");
	unsigned char d[MAX_DIGEST];
	struct fsxattr fsx;
	struct attrs a;
	int fd, err, alg, size;

	need_xflag();
	make_file(p, 10000, 92);
	fsx = getxattr_of(p);
	CHECK(!(fsx.fsx_xflags & FS_XFLAG_VERITY));
	fsx.fsx_xflags |= FS_XFLAG_VERITY;
	err = setxattr_of(p, &fsx);
	if (err)
		fail("FS_IOC_FSSETXATTR asking for verity: %s, expected success "
		     "with the flag ignored", errno_name(err));
	a = attrs_of(p);
	if (a.fl || a.statx || a.xflag)
		fail("FS_IOC_FSSETXATTR made it look verity: FS_VERITY_FL %d, "
		     "STATX_ATTR_VERITY %d, FS_XFLAG_VERITY %d", a.fl, a.statx,
		     a.xflag);
	fd = CHECK_OK(open(p, O_RDONLY));
	err = measure_verity(fd, d, &alg, &size);
	close(fd);
	if (err != ENODATA)
		fail("FS_IOC_MEASURE_VERITY: %s, want ENODATA (no verity)",
		     errno_name(err));
	fd = CHECK_OK(open(p, O_WRONLY | O_APPEND));
	CHECK(write(fd, "x", 1) == 1);
	close(fd);
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	a = attrs_of(p);
	CHECK(a.fl && a.statx && a.xflag);
	unlink(p);
	free(p);
}

/*
 * What xfs_io's chattr does: FS_IOC_FSGETXATTR, change another flag, set it
 * all back, FS_XFLAG_VERITY included.  Accepted, the other flag changes,
 * the verity file stays the same verity file.
 */
TEST(fssetxattr_get_modify_set_keeps_a_verity_file_verity)
{
	char *p = test_path("flags-gms");
	char digest[2 * MAX_DIGEST + 1];
	struct fsxattr fsx;
	int err;

	need_xflag();
	make_file(p, 10000, 93);
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	digest_of(p, digest);

	fsx = getxattr_of(p);
	CHECK(fsx.fsx_xflags & FS_XFLAG_VERITY);
	CHECK(!(fsx.fsx_xflags & FS_XFLAG_NODUMP));
	fsx.fsx_xflags |= FS_XFLAG_NODUMP;
	err = setxattr_of(p, &fsx);
	if (err)
		fail("FS_IOC_FSSETXATTR +nodump on a verity file: %s",
		     errno_name(err));
	CHECK(getxattr_of(p).fsx_xflags & FS_XFLAG_NODUMP);
	CHECK(getflags_of(p) & FS_NODUMP_FL);
	check_still_verity(p, digest, "FS_IOC_FSSETXATTR +nodump");

	fsx = getxattr_of(p);
	fsx.fsx_xflags &= ~FS_XFLAG_NODUMP;
	err = setxattr_of(p, &fsx);
	if (err)
		fail("FS_IOC_FSSETXATTR -nodump on a verity file: %s",
		     errno_name(err));
	CHECK(!(getxattr_of(p).fsx_xflags & FS_XFLAG_NODUMP));
	check_still_verity(p, digest, "FS_IOC_FSSETXATTR -nodump");

	/* over a remount too: nothing in memory only */
	fs_unmount();
	fs_mount();
	check_still_verity(p, digest, "a remount");
	unlink(p);
	free(p);
}

/* Leaving FS_XFLAG_VERITY out of FS_IOC_FSSETXATTR does not unmake verity. */
TEST(fssetxattr_without_fs_xflag_verity_keeps_a_verity_file_verity)
{
	char *p = test_path("flags-drop");
	char digest[2 * MAX_DIGEST + 1];
	struct fsxattr fsx;
	int err;

	need_xflag();
	make_file(p, 10000, 94);
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	digest_of(p, digest);
	fsx = getxattr_of(p);
	fsx.fsx_xflags &= ~FS_XFLAG_VERITY;
	err = setxattr_of(p, &fsx);
	if (err)
		fail("FS_IOC_FSSETXATTR dropping verity: %s, expected success "
		     "with the flag ignored", errno_name(err));
	check_still_verity(p, digest, "FS_IOC_FSSETXATTR without FS_XFLAG_VERITY");
	fs_unmount();
	fs_mount();
	check_still_verity(p, digest, "a remount");
	unlink(p);
	free(p);
}

/*
 * What chattr does: FS_IOC_GETFLAGS, change a flag, FS_IOC_SETFLAGS with
 * the rest as they were, FS_VERITY_FL included.  Setting them back
 * unchanged and setting +d (nodump) both succeed and leave the verity
 * file as it was.  No FS_XFLAG_VERITY involved: this runs on mainline too,
 * whose btrfs refuses FS_VERITY_FL here (tests/expected-failures).
 */
TEST(setflags_round_trip_keeps_a_verity_file_verity)
{
	char *p = test_path("flags-chattr");
	char digest[2 * MAX_DIGEST + 1];
	int flags, err;

	make_file(p, 10000, 95);
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	digest_of(p, digest);
	flags = getflags_of(p);
	CHECK(flags & FS_VERITY_FL);

	err = setflags_of(p, flags);
	if (err)
		fail("FS_IOC_SETFLAGS with the flags it got (0x%x): %s", flags,
		     errno_name(err));
	if (getflags_of(p) != flags)
		fail("FS_IOC_SETFLAGS of the same flags: 0x%x, was 0x%x",
		     getflags_of(p), flags);
	check_still_verity(p, digest, "FS_IOC_SETFLAGS unchanged");

	err = setflags_of(p, flags | FS_NODUMP_FL);
	if (err)
		fail("FS_IOC_SETFLAGS +d (0x%x): %s", flags | FS_NODUMP_FL,
		     errno_name(err));
	CHECK(getflags_of(p) == (flags | FS_NODUMP_FL));
	check_still_verity(p, digest, "FS_IOC_SETFLAGS +d");
	err = setflags_of(p, flags);
	if (err)
		fail("FS_IOC_SETFLAGS -d (0x%x): %s", flags, errno_name(err));
	CHECK(getflags_of(p) == flags);
	check_still_verity(p, digest, "FS_IOC_SETFLAGS -d");
	unlink(p);
	free(p);
}
