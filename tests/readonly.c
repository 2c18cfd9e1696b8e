// SPDX-License-Identifier: GPL-2.0
/*
 * A verity file's contents are read-only (no open for write, no truncation)
 * while its metadata is not (mode, owner, timestamps, xattrs, names); direct
 * I/O falls back to buffered reads of verified data, also a direct read that
 * waited for the enable's commit; and the file is reported as verity by
 * statx (STATX_ATTR_VERITY) and FS_IOC_GETFLAGS (FS_VERITY_FL), a flag
 * FS_IOC_SETFLAGS can neither set nor clear.
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#include <sys/mman.h>
#include <sys/prctl.h>
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

/*
 * A direct read that waits for an enable to finish must not read the
 * sealed file directly.  The filesystems test "is it verity?" twice: once
 * before i_rwsem (xfs_file_read_iter()), and, on ext4 and now XFS, again
 * under it; the enable holds i_rwsem while the filesystem commits verity.
 * A reader that asked before the commit and got the lock after it must see
 * the file as verity and read through the page cache.
 *
 * The commit is made slow on a filesystem of its own on the spare disk
 * behind dm-delay (writes delayed, reads not): the tree's writeback and
 * the journal's commit keep i_rwsem held for seconds.  A reader drops page
 * 0 from the cache and reads it with O_DIRECT in a loop meanwhile; a read
 * that waited for the lock and left page 0 uncached was a direct one.
 */
#define DIO_DEV		"/dev/vde"
#define DIO_MNT		"/mnt/readonly-spare"
#define DIO_DM		"fsv-readonly-delay"
#define DIO_DMSETUP	"DM_DISABLE_UDEV=1 dmsetup"
#define DIO_SECTORS	"1048576"	/* 512 MiB: mkfs.xfs wants 300 MB */
#define DIO_WRITE_MS	1500		/* per write bio */
#define DIO_FILE_SIZE	(8 << 20)
#define DIO_BODY_SECS	150

static void dio_make_the_filesystem(const char *file)
{
	char table[256];

	if (!strcmp(env.fs, "xfs"))
		must_run("mkfs.xfs", "mkfs.xfs -f -q -i verity=1 -d size=512m " DIO_DEV);
	else
		must_run("mkfs.ext4", "mkfs.ext4 -q -F -O verity -E nodiscard "
			 DIO_DEV " 512M");
	mkdir(DIO_MNT, 0755);
	CHECK_OK(mount(DIO_DEV, DIO_MNT, env.fs, 0, NULL));
	make_file(file, DIO_FILE_SIZE, 31);
	CHECK_OK(umount(DIO_MNT));
	snprintf(table, sizeof(table),
		 DIO_DMSETUP " create " DIO_DM " --table '0 " DIO_SECTORS
		 " delay " DIO_DEV " 0 0 " DIO_DEV " 0 %d'", DIO_WRITE_MS);
	must_run("dm-delay", table);
	CHECK_OK(mount("/dev/mapper/" DIO_DM, DIO_MNT, env.fs, 0, NULL));
}

/* is the file's page 0 in the page cache? */
static bool dio_page0_cached(int fd)
{
	unsigned char vec = 0;
	void *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	CHECK_OK(mincore(p, 4096, &vec));
	munmap(p, 4096);
	return vec & 1;
}

static void dio_body(void)
{
	const char *file = DIO_MNT "/verity";
	unsigned char want[4096], *buf;
	double waited = 0;
	int fd_direct, fd, status, reads = 0, waits = 0;
	pid_t enabler;

	dio_make_the_filesystem(file);
	fd = CHECK_OK(open(file, O_RDONLY));
	CHECK_OK(pread(fd, want, 4096, 0));
	fd_direct = CHECK_OK(open(file, O_RDONLY | O_DIRECT));
	CHECK(!posix_memalign((void **)&buf, 4096, 4096));

	enabler = CHECK_OK(fork());
	if (enabler == 0) {
		/* a failing reader takes the enable with it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(enable_verity_path(file, FS_VERITY_HASH_ALG_SHA256, 12,
					 NULL, 0));
	}
	while (waitpid(enabler, &status, WNOHANG) == 0) {
		double t;
		ssize_t n;

		if (posix_fadvise(fd, 0, 4096, POSIX_FADV_DONTNEED))
			fail("posix_fadvise DONTNEED failed");
		t = mono_now();
		n = pread(fd_direct, buf, 4096, 0);
		t = mono_now() - t;
		if (n != 4096 || memcmp(buf, want, 4096))
			fail("O_DIRECT read during the enable: %zd bytes (%s)%s",
			     n, n < 0 ? strerror(errno) : "-",
			     n == 4096 ? ", not the file's" : "");
		reads++;
		/*
		 * A read that waited and finds the file verity waited for the
		 * commit: S_VERITY is set at its end, at least one delayed
		 * write after it began, and it excludes readers throughout.
		 * (A wait for ->begin_enable_verity() ends before the build.)
		 */
		if (t >= DIO_WRITE_MS / 2000.0 && path_has_statx_verity(file)) {
			waits++;
			waited = t;
			if (!dio_page0_cached(fd))
				fail("an O_DIRECT read that waited %.1f s for the enable's commit read the file directly (page 0 not cached): unverified",
				     t);
		}
		usleep(20000);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("FS_IOC_ENABLE_VERITY: %s", WIFEXITED(status) ?
		     errno_name(WEXITSTATUS(status)) : "killed");
	if (!waits)
		fail("none of %d O_DIRECT reads waited for the enable's commit: nothing proved",
		     reads);
	note("%d O_DIRECT reads during the enable, %d waited for its commit (the last %.1f s), each then read through the page cache",
	     reads, waits, waited);
	free(buf);
	close(fd_direct);
	close(fd);
}

static void dio_cleanup(void)
{
	/* a killed enable may hold the mount for a moment */
	for (int i = 0; i < 50 && umount(DIO_MNT) && errno == EBUSY; i++)
		usleep(200000);
	run_cmd(NULL, 0, DIO_DMSETUP " remove " DIO_DM " 2>/dev/null");
}

TEST_TIMEOUT(a_direct_read_that_waits_for_an_enable_reads_through_the_page_cache,
	     DIO_BODY_SECS + 30)
{
	if (strcmp(env.fs, "ext4") && strcmp(env.fs, "xfs"))
		skip("makes its own filesystem on %s: run in the ext4 and xfs passes",
		     DIO_DEV);
	with_cleanup(dio_body, dio_cleanup, DIO_BODY_SECS);
}
