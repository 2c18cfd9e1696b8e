// SPDX-License-Identifier: GPL-2.0
/*
 * A verity file's contents are read-only (no open for write, no truncation)
 * while its metadata is not (mode, owner, timestamps, xattrs, names); direct
 * I/O falls back to buffered reads of verified data; and the file is reported
 * as verity by statx (STATX_ATTR_VERITY) and FS_IOC_GETFLAGS (FS_VERITY_FL),
 * a flag FS_IOC_SETFLAGS can neither set nor clear.
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#include <sys/mman.h>
#include <sys/time.h>
#include <sys/xattr.h>

#define FILE_SIZE (64 * 1024 + 123)

struct vf {
	char *path;
	unsigned char *data;
	char hex[2 * MAX_DIGEST + 1];
};

/* A verity file with known contents and digest. */
static struct vf make_verity(const char *name, uint64_t seed)
{
	struct vf v;
	int alg;

	v.path = test_path("%s", name);
	v.data = random_buf(FILE_SIZE, seed);
	unlink(v.path);
	write_file(v.path, v.data, FILE_SIZE);
	must_enable(v.path, FS_VERITY_HASH_ALG_SHA256, 1024, 0);
	kernel_digest_hex(v.path, v.hex, &alg);
	return v;
}

/* Still verity, same digest, same bytes. */
static void check_intact(const struct vf *v, const char *path)
{
	char hex[2 * MAX_DIGEST + 1];
	int alg;

	kernel_digest_hex(path, hex, &alg);
	if (strcmp(hex, v->hex))
		fail("%s: digest changed from %s to %s", path, v->hex, hex);
	check_contents(path, v->data, FILE_SIZE);
}

TEST(verity_file_cannot_be_opened_for_writing)
{
	struct vf v = make_verity("nowrite", 1);
	const int modes[] = { O_WRONLY, O_RDWR, O_WRONLY | O_APPEND,
			      O_RDWR | O_APPEND, O_WRONLY | O_CREAT };

	for (size_t i = 0; i < sizeof(modes) / sizeof(*modes); i++) {
		int fd = open(v.path, modes[i], 0644);

		if (fd >= 0 || errno != EPERM)
			fail("open flags %#x: got %s, expected EPERM", modes[i],
			     fd >= 0 ? "success" : errno_name(errno));
	}
	/* also not through a writable shared mapping of a read-only fd */
	{
		int fd = open(v.path, O_RDONLY);
		void *m;

		CHECK_OK(fd);
		m = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, 0);
		CHECK(m == MAP_FAILED && errno == EACCES);
		close(fd);
	}
	check_intact(&v, v.path);
}

TEST(verity_file_cannot_be_truncated)
{
	struct vf v = make_verity("notrunc", 2);
	int fd;

	CHECK_ERRNO(truncate(v.path, 0), EPERM);
	CHECK_ERRNO(truncate(v.path, FILE_SIZE), EPERM);	/* same size */
	CHECK_ERRNO(truncate(v.path, 2 * FILE_SIZE), EPERM);
	/* O_TRUNC on a read-only open truncates on Linux: must be refused */
	fd = open(v.path, O_RDONLY | O_TRUNC);
	if (fd >= 0)
		close(fd);
	CHECK(fd < 0 && errno == EPERM);
	check_intact(&v, v.path);
}

TEST(verity_file_metadata_can_change)
{
	struct vf v = make_verity("meta", 3);
	struct timeval tv[2] = { { 1000000000, 0 }, { 1200000000, 0 } };
	char val[64] = "";
	struct stat st;

	CHECK_OK(chmod(v.path, 0600));
	CHECK_OK(chown(v.path, 1234, 5678));
	CHECK_OK(utimes(v.path, tv));
	CHECK_OK(stat(v.path, &st));
	CHECK((st.st_mode & 07777) == 0600);
	CHECK(st.st_uid == 1234 && st.st_gid == 5678);
	CHECK(st.st_mtime == 1200000000 && st.st_atime == 1000000000);

	if (setxattr(v.path, "user.conformance", "hello", 5, 0) != 0)
		fail("setxattr user.* on a verity file: %s", strerror(errno));
	CHECK(getxattr(v.path, "user.conformance", val, sizeof(val)) == 5);
	CHECK(!memcmp(val, "hello", 5));
	CHECK_OK(removexattr(v.path, "user.conformance"));
	CHECK_OK(chmod(v.path, 0644));
	CHECK_OK(chown(v.path, 0, 0));
	check_intact(&v, v.path);
	CHECK(path_has_statx_verity(v.path));
}

TEST(verity_file_can_be_renamed_linked_and_deleted)
{
	struct vf v = make_verity("names", 4);
	char *moved = test_path("names-moved");
	char *link2 = test_path("names-link");

	unlink(moved);
	unlink(link2);
	CHECK_OK(rename(v.path, moved));
	check_intact(&v, moved);
	CHECK_OK(link(moved, link2));
	check_intact(&v, link2);
	CHECK_OK(unlink(moved));
	check_intact(&v, link2);
	CHECK_OK(unlink(link2));
	CHECK(access(link2, F_OK) != 0 && errno == ENOENT);
}

/* Direct I/O on a verity file falls back to (verified) buffered I/O. */
TEST(verity_file_direct_io_reads_correct_data)
{
	struct vf v = make_verity("odirect", 5);
	const size_t len = FILE_SIZE & ~4095UL;
	unsigned char *buf;
	ssize_t n;
	int fd;

	drop_caches();
	fd = open(v.path, O_RDONLY | O_DIRECT);
	if (fd < 0)
		fail("open O_DIRECT: %s", strerror(errno));
	CHECK(!posix_memalign((void **)&buf, 4096, len + 4096));
	n = pread(fd, buf, len, 0);
	if (n != (ssize_t)len)
		fail("O_DIRECT pread: %zd (%s)", n, strerror(errno));
	CHECK(!memcmp(buf, v.data, len));
	n = pread(fd, buf, 8192, 16384);
	CHECK(n == 8192 && !memcmp(buf, v.data + 16384, 8192));
	/* the unaligned tail up to EOF */
	n = pread(fd, buf, 8192, len);
	CHECK(n == FILE_SIZE - (ssize_t)len);
	CHECK(!memcmp(buf, v.data + len, n));
	close(fd);
	check_intact(&v, v.path);
}

TEST(verity_file_reported_by_statx)
{
	struct vf v = make_verity("statx", 6);
	char *plain = test_path("statx-plain");

	unlink(plain);
	make_file(plain, 1000, 7);
	CHECK(path_has_statx_verity(v.path));
	CHECK(!path_has_statx_verity(plain));
	/* and after the inode is read back from disk */
	fs_unmount();
	fs_mount();
	CHECK(path_has_statx_verity(v.path));
	CHECK(!path_has_statx_verity(plain));
}

TEST(verity_file_reported_by_getflags)
{
	struct vf v = make_verity("getflags", 8);
	char *plain = test_path("getflags-plain");
	int fd;

	unlink(plain);
	make_file(plain, 1000, 9);
	fs_unmount();
	fs_mount();
	fd = open(v.path, O_RDONLY);
	CHECK_OK(fd);
	CHECK(fd_has_verity_flag(fd));
	close(fd);
	fd = open(plain, O_RDONLY);
	CHECK_OK(fd);
	CHECK(!fd_has_verity_flag(fd));
	close(fd);
}

/*
 * FS_VERITY_FL is not settable (nor clearable) with FS_IOC_SETFLAGS; whatever
 * the ioctl returns, the file's verity state must not change.
 */
TEST(setflags_cannot_change_verity_flag)
{
	struct vf v = make_verity("setflags", 10);
	char *plain = test_path("setflags-plain");
	unsigned char *data = random_buf(1000, 11);
	int fd, flags;

	unlink(plain);
	write_file(plain, data, 1000);
	fd = open(plain, O_RDONLY);
	CHECK_OK(fd);
	CHECK_OK(ioctl(fd, FS_IOC_GETFLAGS, &flags));
	flags |= FS_VERITY_FL;
	(void)ioctl(fd, FS_IOC_SETFLAGS, &flags);
	CHECK(!fd_has_verity_flag(fd));
	close(fd);
	CHECK(!path_has_statx_verity(plain));
	fd = open(plain, O_RDWR);
	CHECK_OK(fd);	/* still writable */
	close(fd);

	fd = open(v.path, O_RDONLY);
	CHECK_OK(fd);
	CHECK_OK(ioctl(fd, FS_IOC_GETFLAGS, &flags));
	flags &= ~FS_VERITY_FL;
	(void)ioctl(fd, FS_IOC_SETFLAGS, &flags);
	CHECK(fd_has_verity_flag(fd));
	close(fd);
	CHECK_ERRNO(open(v.path, O_WRONLY), EPERM);
	fs_unmount();
	fs_mount();
	CHECK(path_has_statx_verity(v.path));
	CHECK(!path_has_statx_verity(plain));
	check_intact(&v, v.path);
}
