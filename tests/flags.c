// SPDX-License-Identifier: GPL-2.0
/*
 * How a verity file says so without being opened for its digest: the
 * FS_VERITY_FL inode flag (FS_IOC_GETFLAGS), STATX_ATTR_VERITY, and
 * FS_XFLAG_VERITY in FS_IOC_FSGETXATTR, which mainline gained after 6.12
 * and our series adds ("fs: add FS_XFLAG_VERITY for fs-verity files").
 * The extended flag is read-only: FS_IOC_FSSETXATTR ignores it, as the
 * upstream posting does, so it neither makes a file verity nor unmakes one.
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

/* FS_IOC_FSSETXATTR with the file's own attributes, FS_XFLAG_VERITY flipped */
static int setxattr_flipping_verity(const char *path)
{
	int fd = CHECK_OK(open(path, O_RDONLY));
	struct fsxattr fsx;
	int err = 0;

	CHECK_OK(ioctl(fd, FS_IOC_FSGETXATTR, &fsx));
	fsx.fsx_xflags ^= FS_XFLAG_VERITY;
	if (ioctl(fd, FS_IOC_FSSETXATTR, &fsx))
		err = errno;
	close(fd);
	return err;
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

TEST(fssetxattr_neither_sets_nor_clears_fs_xflag_verity)
{
	char *p = test_path("flags-set");
	struct attrs a;
	int err;

	need_xflag();
	make_file(p, 10000, 92);
	err = setxattr_flipping_verity(p);
	if (err)
		fail("FS_IOC_FSSETXATTR asking for verity: %s, expected success "
		     "with the flag ignored", errno_name(err));
	a = attrs_of(p);
	CHECK(!a.fl && !a.statx && !a.xflag);

	must_enable(p, FS_VERITY_HASH_ALG_SHA256, merkle_bs(), 0);
	err = setxattr_flipping_verity(p);
	if (err)
		fail("FS_IOC_FSSETXATTR dropping verity: %s, expected success "
		     "with the flag ignored", errno_name(err));
	a = attrs_of(p);
	CHECK(a.fl && a.statx && a.xflag);
	unlink(p);
	free(p);
}
