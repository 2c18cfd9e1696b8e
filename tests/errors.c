// SPDX-License-Identifier: GPL-2.0
/*
 * Every documented errno of FS_IOC_ENABLE_VERITY and FS_IOC_MEASURE_VERITY
 * (Documentation/filesystems/fsverity.rst), and after each failed enable the
 * file must be exactly as before: same bytes and size, not verity, writable.
 *
 * Not covered here, with reasons:
 *  - EINVAL for "neither a regular file nor a directory": the ioctl only
 *    reaches fs-verity through the filesystem's own file operations, i.e. on
 *    regular files and directories; FIFOs and device nodes have other f_ops
 *    (ENOTTY or the driver's ioctl) and O_PATH fds fail with EBADF in the VFS.
 *  - EINVAL for DAX inodes (ext4): QEMU guests here have no DAX device.
 *  - EFBIG from more than 8 tree levels: needs files larger than any fs here
 *    allows; the other EFBIG limit (hash-block bitmap) is tested.
 *  - EINTR: see tests/interrupt.c.
 *  - EBADMSG, EKEYREJECTED, ENOKEY, EPERM for require_signatures, ENOPKG:
 *    builtin signatures and crypto configuration, not part of this area.
 *
 * This is the only area that uses the scratch disk (/dev/vde), for a
 * filesystem made without the verity feature.
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>

#define SCRATCH_DEV "/dev/vde"	/* the runner's SCRATCH_DEV */
#define SCRATCH_MNT "/mnt/scratch"

struct victim {
	char *path;
	unsigned char *data;
	size_t len;
};

static struct victim make_victim(const char *name, size_t len, uint64_t seed)
{
	struct victim v;

	v.path = test_path("%s", name);
	v.len = len;
	v.data = random_buf(len, seed);
	unlink(v.path);
	write_file(v.path, v.data, len);
	return v;
}

/*
 * A failed FS_IOC_ENABLE_VERITY must leave no trace: same contents and size,
 * no verity flag in GETFLAGS or statx, MEASURE says ENODATA, and the file can
 * still be opened for writing and written.
 */
static void check_untouched_measure(const struct victim *v, int measure_err)
{
	unsigned char d[MAX_DIGEST];
	int fd, alg, size;

	check_contents(v->path, v->data, v->len);
	if (path_has_statx_verity(v->path))
		fail("%s: statx reports verity after a failed enable", v->path);
	fd = open(v->path, O_RDONLY);
	CHECK_OK(fd);
	if (fd_has_verity_flag(fd))
		fail("%s: FS_VERITY_FL set after a failed enable", v->path);
	if (measure_verity(fd, d, &alg, &size) != measure_err)
		fail("%s: MEASURE is not %s after a failed enable",
		     v->path, errno_name(measure_err));
	close(fd);

	fd = open(v->path, O_RDWR);
	if (fd < 0)
		fail("%s: not writable after a failed enable: %s", v->path,
		     strerror(errno));
	if (v->len && pwrite(fd, v->data, 1, 0) != 1)
		fail("%s: write after a failed enable: %s", v->path,
		     strerror(errno));
	close(fd);
}

static void check_untouched(const struct victim *v)
{
	check_untouched_measure(v, ENODATA);
}

/* Try @arg on a fresh victim, expect @err, and check it was left alone. */
static void expect_enable_error(const char *name,
				const struct fsverity_enable_arg *arg, int err)
{
	struct victim v = make_victim(name, 10000, 7);
	int fd = open(v.path, O_RDONLY);
	int got;

	CHECK_OK(fd);
	got = raw_enable(fd, arg);
	close(fd);
	if (got != err)
		fail("%s: version %u alg %u bs %u salt %u sig %u: got %s, expected %s",
		     name, arg->version, arg->hash_algorithm, arg->block_size,
		     arg->salt_size, arg->sig_size,
		     got ? errno_name(got) : "success", errno_name(err));
	check_untouched(&v);
	unlink(v.path);
	free(v.path);
	free(v.data);
}

/* A page the process cannot touch, for EFAULT. */
static void *inaccessible_page(void)
{
	void *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (p == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	return p;
}

static int default_bs(void)
{
	return block_size_unsupported(4096) ? 1024 : 4096;
}

TEST(enable_twice_is_eexist)
{
	struct victim v = make_victim("twice", 9000, 1);
	char before[2 * MAX_DIGEST + 1], after[2 * MAX_DIGEST + 1];
	struct fsverity_enable_arg arg;
	int fd, alg;

	must_enable(v.path, FS_VERITY_HASH_ALG_SHA256, default_bs(), 0);
	kernel_digest_hex(v.path, before, &alg);
	fd = open(v.path, O_RDONLY);
	CHECK_OK(fd);
	/* same and different parameters: both refused */
	enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, default_bs());
	CHECK(raw_enable(fd, &arg) == EEXIST);
	enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA512, 1024);
	CHECK(raw_enable(fd, &arg) == EEXIST);
	close(fd);
	kernel_digest_hex(v.path, after, &alg);
	CHECK(alg == FS_VERITY_HASH_ALG_SHA256);
	CHECK(!strcmp(before, after));
	check_contents(v.path, v.data, v.len);
}

TEST(enable_with_version_other_than_1_is_einval)
{
	const uint32_t versions[] = { 0, 2, 0xffffffff };
	struct fsverity_enable_arg arg;

	for (int i = 0; i < 3; i++) {
		enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, default_bs());
		arg.version = versions[i];
		expect_enable_error("version", &arg, EINVAL);
	}
}

TEST(enable_with_unknown_hash_algorithm_is_einval)
{
	const uint32_t algs[] = { 0, 3, 255, 256 + FS_VERITY_HASH_ALG_SHA256,
				  0xffffffff };

	for (int i = 0; i < 5; i++) {
		struct fsverity_enable_arg arg;

		enable_arg_init(&arg, algs[i], default_bs());
		expect_enable_error("hashalg", &arg, EINVAL);
	}
}

/*
 * Block sizes must be powers of two in [1024, min(PAGE_SIZE, fs block)].
 * Also those above the filesystem block size (ext4 with 1k blocks).
 */
TEST(enable_with_unsupported_block_size_is_einval)
{
	const uint32_t sizes[] = { 0, 1, 3000, 4095, 4097, 512, 256,
				   2 * 65536, 1u << 31, 0xffffffff };
	long page = sysconf(_SC_PAGESIZE);
	struct fsverity_enable_arg arg;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, sizes[i]);
		expect_enable_error("blocksize", &arg, EINVAL);
	}
	enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, 2 * page);
	expect_enable_error("blocksize", &arg, EINVAL);
	for (int bs = 2048; bs <= page; bs *= 2) {
		if (!block_size_unsupported(bs))
			continue;
		enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA512, bs);
		expect_enable_error("blocksize", &arg, EINVAL);
	}
}

TEST(enable_with_reserved_fields_set_is_einval)
{
	struct fsverity_enable_arg arg;

	enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, default_bs());
	arg.__reserved1 = 1;
	expect_enable_error("reserved1", &arg, EINVAL);
	for (int i = 0; i < 11; i++) {
		enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, default_bs());
		arg.__reserved2[i] = 1ULL << (i * 5);
		expect_enable_error("reserved2", &arg, EINVAL);
	}
}

TEST(enable_with_salt_over_32_bytes_is_emsgsize)
{
	static unsigned char salt[256];
	const uint32_t sizes[] = { 33, 64, 255, 0xffffffff };
	struct fsverity_enable_arg arg;

	for (int i = 0; i < 4; i++) {
		enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, default_bs());
		arg.salt_size = sizes[i];
		arg.salt_ptr = (uintptr_t)salt;
		expect_enable_error("longsalt", &arg, EMSGSIZE);
	}
}

/*
 * The descriptor plus signature may not exceed 16384 bytes (the largest any
 * kernel reads back), so 16384 - 256 + 1 bytes of signature is too long.
 */
TEST(enable_with_oversized_signature_is_emsgsize)
{
	static unsigned char sig[1 << 20];
	const uint32_t sizes[] = { 16384 - 256 + 1, 1 << 20, 0xffffffff };
	struct fsverity_enable_arg arg;

	for (int i = 0; i < 3; i++) {
		enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, default_bs());
		arg.sig_size = sizes[i];
		arg.sig_ptr = (uintptr_t)sig;
		expect_enable_error("longsig", &arg, EMSGSIZE);
	}
}

TEST(enable_with_inaccessible_memory_is_efault)
{
	struct victim v = make_victim("efault", 10000, 2);
	void *bad = inaccessible_page();
	struct fsverity_enable_arg arg, *argp;
	int fd = open(v.path, O_RDONLY);
	int err;

	CHECK_OK(fd);
	/* the argument itself */
	CHECK_ERRNO(ioctl(fd, FS_IOC_ENABLE_VERITY, NULL), EFAULT);
	CHECK_ERRNO(ioctl(fd, FS_IOC_ENABLE_VERITY, bad), EFAULT);
	/* the argument straddling into an unmapped page */
	argp = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(argp != MAP_FAILED);
	CHECK_OK(munmap((char *)argp + 4096, 4096));
	argp = (void *)((char *)argp + 4096 - sizeof(arg) / 2);
	enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, default_bs());
	memcpy(argp, &arg, sizeof(arg) / 2);
	CHECK_ERRNO(ioctl(fd, FS_IOC_ENABLE_VERITY, argp), EFAULT);
	/* the salt */
	enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, default_bs());
	arg.salt_size = 16;
	arg.salt_ptr = (uintptr_t)bad;
	CHECK_ERRNO(ioctl(fd, FS_IOC_ENABLE_VERITY, &arg), EFAULT);
	/* The builtin signature, copied in with or without the support */
	enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, default_bs());
	arg.sig_size = 100;
	arg.sig_ptr = (uintptr_t)bad;
	err = raw_enable(fd, &arg);
	if (err != EFAULT)
		fail("enable with an inaccessible signature: got %s, want EFAULT",
		     errno_name(err));
	close(fd);
	check_untouched(&v);
}

TEST(enable_on_directory_is_eisdir)
{
	char *dir = test_path("dir");
	struct fsverity_enable_arg arg;
	int fd;

	rmdir(dir);
	CHECK_OK(mkdir(dir, 0755));
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK_OK(fd);
	enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, default_bs());
	CHECK(raw_enable(fd, &arg) == EISDIR);
	CHECK(!fd_has_verity_flag(fd));
	close(fd);
	CHECK_OK(rmdir(dir));
}

/*
 * The fd must be readable: O_WRONLY and the ioctl-only access mode 3 are
 * refused with EBADF (even though the caller may write the file).
 */
TEST(enable_on_fd_not_open_for_reading_is_ebadf)
{
	struct victim v = make_victim("ebadf", 10000, 3);
	struct fsverity_enable_arg arg;
	int fd;

	enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, default_bs());
	fd = open(v.path, O_WRONLY);
	CHECK_OK(fd);
	CHECK(raw_enable(fd, &arg) == EBADF);
	close(fd);
	fd = open(v.path, O_ACCMODE);	/* 3: ioctl-only */
	CHECK_OK(fd);
	CHECK(raw_enable(fd, &arg) == EBADF);
	close(fd);
	check_untouched(&v);
}

/* In a child that dropped root: enable on @fd, return the errno. */
static int enable_as_nobody(int fd)
{
	int status;
	pid_t pid = fork();

	CHECK_OK(pid);
	if (pid == 0) {
		struct fsverity_enable_arg arg;

		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(255);
		enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, default_bs());
		_exit(raw_enable(fd, &arg));
	}
	CHECK_OK(waitpid(pid, &status, 0));
	CHECK(WIFEXITED(status));
	if (WEXITSTATUS(status) == 255)
		fail("could not drop privileges");
	return WEXITSTATUS(status);
}

/*
 * Enabling needs write access to the inode, even though the fd is O_RDONLY:
 * an unprivileged user on someone else's 0644 file, and the owner of a 0444
 * file, both get EACCES.
 */
TEST(enable_without_write_access_is_eacces)
{
	struct victim v = make_victim("eacces", 10000, 4);
	int fd, err;

	CHECK_OK(chmod(env.mnt, 0755));
	CHECK_OK(chmod(v.path, 0644));
	fd = open(v.path, O_RDONLY);
	CHECK_OK(fd);
	err = enable_as_nobody(fd);
	if (err != EACCES)
		fail("other user, mode 0644: got %s, expected EACCES",
		     err ? errno_name(err) : "success");
	close(fd);

	CHECK_OK(chown(v.path, 65534, 65534));
	CHECK_OK(chmod(v.path, 0444));
	fd = open(v.path, O_RDONLY);
	CHECK_OK(fd);
	err = enable_as_nobody(fd);
	if (err != EACCES)
		fail("owner, mode 0444: got %s, expected EACCES",
		     err ? errno_name(err) : "success");
	close(fd);
	CHECK_OK(chown(v.path, 0, 0));
	CHECK_OK(chmod(v.path, 0644));
	check_untouched(&v);
}

static void set_inode_flags(const char *path, int set, int clear)
{
	int fd = open(path, O_RDONLY), flags;

	CHECK_OK(fd);
	CHECK_OK(ioctl(fd, FS_IOC_GETFLAGS, &flags));
	flags = (flags | set) & ~clear;
	if (ioctl(fd, FS_IOC_SETFLAGS, &flags) != 0)
		fail("FS_IOC_SETFLAGS %#x on %s: %s", flags, path,
		     strerror(errno));
	close(fd);
}

TEST(enable_on_append_only_file_is_eperm)
{
	struct victim v = make_victim("append", 10000, 5);
	struct fsverity_enable_arg arg;
	int fd, err;

	set_inode_flags(v.path, FS_APPEND_FL, 0);
	fd = open(v.path, O_RDONLY);
	CHECK_OK(fd);
	enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, default_bs());
	err = raw_enable(fd, &arg);
	close(fd);
	set_inode_flags(v.path, 0, FS_APPEND_FL);
	if (err != EPERM)
		fail("append-only: got %s, expected EPERM",
		     err ? errno_name(err) : "success");
	check_untouched(&v);
}

/* Read-only mount of the same filesystem via a read-only bind mount. */
TEST(enable_on_read_only_bind_mount_is_erofs)
{
	struct victim v = make_victim("erofs-bind", 10000, 6);
	const char *ro = "/mnt/ro-bind";
	struct fsverity_enable_arg arg;
	char path[4096];
	int fd, err;

	mkdir(ro, 0755);
	CHECK_OK(mount(env.mnt, ro, NULL, MS_BIND, NULL));
	if (mount(NULL, ro, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL)) {
		umount(ro);
		fail("remount bind read-only: %s", strerror(errno));
	}
	snprintf(path, sizeof(path), "%s/%s", ro, strrchr(v.path, '/') + 1);
	fd = open(path, O_RDONLY);
	CHECK_OK(fd);
	enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, default_bs());
	err = raw_enable(fd, &arg);
	close(fd);
	CHECK_OK(umount(ro));
	if (err != EROFS)
		fail("read-only bind mount: got %s, expected EROFS",
		     err ? errno_name(err) : "success");
	check_untouched(&v);
}

static const char *kernel_fs_type(void)
{
	if (!strncmp(env.fs, "xfs", 3))
		return "xfs";
	return strncmp(env.fs, "ext4", 4) ? env.fs : "ext4";
}

/* The whole filesystem mounted read-only (superblock read-only). */
TEST(enable_on_read_only_filesystem_is_erofs)
{
	struct victim v = make_victim("erofs-sb", 10000, 8);
	struct fsverity_enable_arg arg;
	int fd, err;

	fs_unmount();
	if (mount(env.dev, env.mnt, kernel_fs_type(), MS_RDONLY,
		  env.mount_opts && *env.mount_opts ? env.mount_opts : NULL)) {
		err = errno;
		fs_mount();
		fail("mount -o ro %s: %s", env.dev, strerror(err));
	}
	fd = open(v.path, O_RDONLY);
	if (fd < 0) {
		err = errno;
		umount(env.mnt);
		fs_mount();
		fail("open %s: %s", v.path, strerror(err));
	}
	enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, default_bs());
	err = raw_enable(fd, &arg);
	close(fd);
	CHECK_OK(umount(env.mnt));
	fs_mount();
	if (err != EROFS)
		fail("read-only filesystem: got %s, expected EROFS",
		     err ? errno_name(err) : "success");
	check_untouched(&v);
}

/*
 * Any writer blocks enabling: the caller's own O_RDWR fd, another O_WRONLY
 * fd, or a writable shared mapping whose fd was already closed.
 */
TEST(enable_while_file_open_for_writing_is_etxtbsy)
{
	struct victim v = make_victim("etxtbsy", 10000, 9);
	struct fsverity_enable_arg arg;
	int fd, wfd;
	void *map;

	enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, default_bs());

	fd = open(v.path, O_RDWR);
	CHECK_OK(fd);
	CHECK(raw_enable(fd, &arg) == ETXTBSY);
	close(fd);
	check_untouched(&v);

	wfd = open(v.path, O_WRONLY);
	CHECK_OK(wfd);
	fd = open(v.path, O_RDONLY);
	CHECK_OK(fd);
	CHECK(raw_enable(fd, &arg) == ETXTBSY);
	close(fd);
	close(wfd);
	check_untouched(&v);

	wfd = open(v.path, O_RDWR);
	CHECK_OK(wfd);
	map = mmap(NULL, v.len, PROT_READ | PROT_WRITE, MAP_SHARED, wfd, 0);
	CHECK(map != MAP_FAILED);
	close(wfd);
	fd = open(v.path, O_RDONLY);
	CHECK_OK(fd);
	CHECK(raw_enable(fd, &arg) == ETXTBSY);
	close(fd);
	CHECK_OK(munmap(map, v.len));
	check_untouched(&v);

	/* with every writer gone it works */
	must_enable(v.path, FS_VERITY_HASH_ALG_SHA256, default_bs(), 0);
}

/* A file big enough that building its tree takes a noticeable while. */
#define RACE_SIZE (24 << 20)

/* Child: wait for the go byte on @go, enable, exit with the errno. */
static pid_t spawn_enabler(const char *path, int go)
{
	pid_t pid = fork();

	CHECK_OK(pid);
	if (pid == 0) {
		struct fsverity_enable_arg arg;
		char c;
		int fd = open(path, O_RDONLY);

		if (fd < 0 || read(go, &c, 1) != 1)
			_exit(254);
		enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, default_bs());
		_exit(raw_enable(fd, &arg));
	}
	return pid;
}

static int child_errno(pid_t pid)
{
	int status;

	CHECK_OK(waitpid(pid, &status, 0));
	if (!WIFEXITED(status) || WEXITSTATUS(status) == 254)
		fail("enabler child failed (status %#x)", status);
	return WEXITSTATUS(status);
}

/*
 * Two enables on one file at once: one wins and the other gets EBUSY (or
 * EEXIST if the winner already finished, in which case we retry on a new
 * file).
 */
TEST_TIMEOUT(enable_while_enable_in_progress_is_ebusy, 600)
{
	for (int attempt = 0; attempt < 4; attempt++) {
		char *p = test_path("ebusy%d", attempt);
		int go[2], e1, e2;
		pid_t a, b;

		unlink(p);
		make_file(p, RACE_SIZE, 11 + attempt);
		drop_caches();	/* reading from disk makes the build slower */
		CHECK_OK(pipe(go));
		a = spawn_enabler(p, go[0]);
		b = spawn_enabler(p, go[0]);
		CHECK(write(go[1], "xx", 2) == 2);
		e1 = child_errno(a);
		e2 = child_errno(b);
		close(go[0]);
		close(go[1]);
		if (e1 > e2) {
			int t = e1;

			e1 = e2;
			e2 = t;
		}
		if (e1 != 0 || (e2 != EBUSY && e2 != EEXIST))
			fail("concurrent enables returned %s and %s",
			     e1 ? errno_name(e1) : "success",
			     e2 ? errno_name(e2) : "success");
		unlink(p);
		free(p);
		if (e2 == EBUSY)
			return;
		note("attempt %d: second enable came too late (EEXIST)",
		     attempt);
	}
	fail("never saw EBUSY: every second enable started after the first finished");
}

/*
 * While the tree is being built, opening the file for writing fails with
 * ETXTBSY; afterwards with EPERM (verity files are read-only).  Never does
 * it succeed.
 */
TEST_TIMEOUT(open_for_write_during_enable_is_etxtbsy, 600)
{
	for (int attempt = 0; attempt < 4; attempt++) {
		char *p = test_path("busywrite%d", attempt);
		int go[2], seen_busy = 0, err;
		pid_t pid;

		unlink(p);
		make_file(p, RACE_SIZE, 21 + attempt);
		drop_caches();
		CHECK_OK(pipe(go));
		pid = spawn_enabler(p, go[0]);
		CHECK(write(go[1], "x", 1) == 1);
		usleep(20000);	/* let the child get into the ioctl */
		for (;;) {
			int fd = open(p, O_WRONLY), status;

			if (fd >= 0) {
				/*
				 * Not (or no longer) being enabled and not
				 * verity: the child has not started yet, or
				 * it failed because of this very writer.
				 */
				close(fd);
				if (waitpid(pid, &status, WNOHANG) == pid) {
					if (!WIFEXITED(status) ||
					    WEXITSTATUS(status) != ETXTBSY)
						fail("enable failed with status %#x",
						     status);
					break;	/* inconclusive, retry */
				}
				usleep(1000);
				continue;
			}
			if (errno == ETXTBSY) {
				seen_busy++;
				usleep(1000);
				continue;
			}
			if (errno != EPERM)
				fail("open for write during enable: %s",
				     strerror(errno));
			/* EPERM: enabling finished */
			err = child_errno(pid);
			if (err)
				fail("enable: %s", errno_name(err));
			break;
		}
		close(go[0]);
		close(go[1]);
		unlink(p);
		free(p);
		if (seen_busy)
			return;
		note("attempt %d: never caught the enable in progress", attempt);
	}
	fail("never observed the enable in progress");
}

/*
 * Too many Merkle tree blocks: with 1024-byte blocks (below PAGE_SIZE) and
 * SHA-512, a 128 GiB (sparse) file needs 8947849 tree blocks, more than the
 * 2^23 fs-verity tracks per file, so the ioctl fails with EFBIG before doing
 * any work.
 */
TEST(enable_on_too_large_file_is_efbig)
{
	const off_t size = 128LL << 30;
	char *p = test_path("efbig");
	struct fsverity_enable_arg arg;
	struct stat st;
	int fd;

	if (sysconf(_SC_PAGESIZE) == 1024)
		skip("page size is 1024: no bitmap limit");
	unlink(p);
	fd = open(p, O_CREAT | O_RDWR, 0644);
	CHECK_OK(fd);
	if (ftruncate(fd, size) != 0) {
		int err = errno;

		close(fd);
		unlink(p);
		if (err == EFBIG || err == EINVAL)
			skip("%s cannot hold a 128 GiB file", env.fs);
		fail("ftruncate: %s", strerror(err));
	}
	close(fd);
	fd = open(p, O_RDONLY);
	CHECK_OK(fd);
	enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA512, 1024);
	CHECK(raw_enable(fd, &arg) == EFBIG);
	CHECK(!fd_has_verity_flag(fd));
	close(fd);
	CHECK_OK(stat(p, &st));
	CHECK(st.st_size == size);
	CHECK_OK(truncate(p, 0));	/* still writable */
	unlink(p);
}

/*
 * A filesystem made without the verity feature: enable, measure and
 * read-metadata all fail with EOPNOTSUPP.  btrfs has no such feature bit
 * (verity is always available there), so this does not apply to it.
 */
TEST_TIMEOUT(enable_on_filesystem_without_verity_feature_is_eopnotsupp, 300)
{
	struct fsverity_read_metadata_arg rarg = { 0 };
	struct fsverity_enable_arg arg;
	unsigned char buf[4096], d[MAX_DIGEST];
	char out[4096], path[256];
	struct victim v;
	int fd, err, alg, size, rc;

	if (!strcmp(env.fs, "btrfs"))
		skip("btrfs has no verity feature flag to leave out");
	if (access(SCRATCH_DEV, F_OK))
		skip("no scratch disk %s", SCRATCH_DEV);
	umount(SCRATCH_MNT);	/* in case an earlier run failed midway */
	if (!strncmp(env.fs, "ext4", 4))
		rc = run_cmd(out, sizeof(out),
			     "mkfs.ext4 -q -F -O ^verity %s %s 2>&1",
			     strcmp(env.fs, "ext4-1k") ? "" : "-b 1024",
			     SCRATCH_DEV);
	else if (!strcmp(env.fs, "f2fs"))
		rc = run_cmd(out, sizeof(out), "mkfs.f2fs -q -f %s 2>&1",
			     SCRATCH_DEV);
	else if (!strncmp(env.fs, "xfs", 3))
		rc = run_cmd(out, sizeof(out),
			     "mkfs.xfs -q -f -i verity=0 %s %s 2>&1",
			     strcmp(env.fs, "xfs-1k") ? "" : "-b size=1024",
			     SCRATCH_DEV);
	else
		skip("no recipe for %s without verity", env.fs);
	if (rc)
		fail("mkfs on %s: %s", SCRATCH_DEV, out);
	mkdir(SCRATCH_MNT, 0755);
	CHECK_OK(mount(SCRATCH_DEV, SCRATCH_MNT, kernel_fs_type(), 0, NULL));

	snprintf(path, sizeof(path), SCRATCH_MNT "/noverity");
	v.path = path;
	v.len = 10000;
	v.data = random_buf(v.len, 12);
	write_file(v.path, v.data, v.len);
	fd = open(v.path, O_RDONLY);
	CHECK_OK(fd);
	enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, 1024);
	err = raw_enable(fd, &arg);
	rarg.metadata_type = FS_VERITY_METADATA_TYPE_DESCRIPTOR;
	rarg.length = sizeof(buf);
	rarg.buf_ptr = (uintptr_t)buf;
	if (err == EOPNOTSUPP) {
		if (measure_verity(fd, d, &alg, &size) != EOPNOTSUPP)
			err = -1;
		else if (ioctl(fd, FS_IOC_READ_VERITY_METADATA, &rarg) != -1 ||
			 errno != EOPNOTSUPP)
			err = -2;
	}
	close(fd);
	if (err == EOPNOTSUPP)	/* measure there is EOPNOTSUPP, not ENODATA */
		check_untouched_measure(&v, EOPNOTSUPP);
	CHECK_OK(umount(SCRATCH_MNT));
	if (err == -1)
		fail("MEASURE on a no-verity filesystem is not EOPNOTSUPP");
	if (err == -2)
		fail("READ_VERITY_METADATA on a no-verity filesystem is not EOPNOTSUPP");
	if (err != EOPNOTSUPP)
		fail("enable on a no-verity filesystem: got %s, expected EOPNOTSUPP",
		     err ? errno_name(err) : "success");
}

/*
 * A filesystem type that does not implement fs-verity at all answers the
 * verity ioctls with ENOTTY: ramfs (the guest's root is a tmpfs, which
 * has fs-verity with our series).
 */
TEST(enable_on_filesystem_without_verity_support_is_enotty)
{
	const char *mnt = "/mnt/errors-ramfs", *p = "/mnt/errors-ramfs/probe";
	struct fsverity_enable_arg arg;
	unsigned char d[MAX_DIGEST];
	int fd, alg, size, enable_err, measure_err;

	mkdir(mnt, 0755);
	umount_if_mounted(mnt);
	CHECK_OK(mount("ramfs", mnt, "ramfs", 0, NULL));
	write_file(p, "x", 1);
	fd = open(p, O_RDONLY);
	CHECK_OK(fd);
	enable_arg_init(&arg, FS_VERITY_HASH_ALG_SHA256, 4096);
	enable_err = raw_enable(fd, &arg);
	measure_err = measure_verity(fd, d, &alg, &size);
	close(fd);
	CHECK_OK(umount(mnt));
	rmdir(mnt);
	CHECK(enable_err == ENOTTY);
	CHECK(measure_err == ENOTTY);
}

/* ---- FS_IOC_MEASURE_VERITY ---- */

TEST(measure_on_non_verity_file_is_enodata)
{
	struct victim v = make_victim("measure-plain", 5000, 13);
	unsigned char d[MAX_DIGEST];
	int fd, alg, size;

	fd = open(v.path, O_RDONLY);
	CHECK_OK(fd);
	CHECK(measure_verity(fd, d, &alg, &size) == ENODATA);
	close(fd);
	free(v.path);
	free(v.data);
	/* also on an empty file and on a directory */
	v = make_victim("measure-empty", 0, 0);
	fd = open(v.path, O_RDONLY);
	CHECK_OK(fd);
	CHECK(measure_verity(fd, d, &alg, &size) == ENODATA);
	close(fd);
	fd = open(env.mnt, O_RDONLY | O_DIRECTORY);
	CHECK_OK(fd);
	CHECK(measure_verity(fd, d, &alg, &size) == ENODATA);
	close(fd);
}

static int measure_raw(int fd, struct fsverity_digest *d)
{
	return ioctl(fd, FS_IOC_MEASURE_VERITY, d) == 0 ? 0 : errno;
}

/*
 * digest_size is the buffer size on input: too small is EOVERFLOW, larger
 * is fine and gets the real digest size back.
 */
TEST(measure_digest_size_is_checked_and_returned)
{
	const int algs[] = { FS_VERITY_HASH_ALG_SHA256,
			     FS_VERITY_HASH_ALG_SHA512 };
	struct {
		struct fsverity_digest d;
		unsigned char buf[256];
	} u;

	for (int a = 0; a < 2; a++) {
		char *p = test_path("measure-size-%s", alg_name(algs[a]));
		int dsz = alg_digest_size(algs[a]), fd;
		const int sizes[] = { dsz, dsz + 1, 256, 65535 };

		unlink(p);
		make_file(p, 5000, 14 + a);
		must_enable(p, algs[a], 1024, 0);
		fd = open(p, O_RDONLY);
		CHECK_OK(fd);
		for (int s = 0; s <= 1; s++) {
			u.d.digest_size = s ? dsz - 1 : 0;
			if (measure_raw(fd, &u.d) != EOVERFLOW)
				fail("%s: digest_size %d: expected EOVERFLOW",
				     alg_name(algs[a]), s ? dsz - 1 : 0);
		}
		for (int s = 0; s < 4; s++) {
			unsigned char *big = calloc(1, sizeof(u.d) + sizes[s]);
			struct fsverity_digest *d = (void *)big;

			d->digest_size = sizes[s];
			if (measure_raw(fd, d))
				fail("%s: digest_size %d: %s", alg_name(algs[a]),
				     sizes[s], strerror(errno));
			CHECK(d->digest_algorithm == algs[a]);
			CHECK(d->digest_size == dsz);
			free(big);
		}
		close(fd);
		free(p);
	}
}

TEST(measure_with_inaccessible_memory_is_efault)
{
	char *p = test_path("measure-efault");
	struct fsverity_digest *d;
	char *two;
	int fd;

	unlink(p);
	make_file(p, 5000, 16);
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, 1024, 0);
	fd = open(p, O_RDONLY);
	CHECK_OK(fd);
	CHECK_ERRNO(ioctl(fd, FS_IOC_MEASURE_VERITY, NULL), EFAULT);
	CHECK_ERRNO(ioctl(fd, FS_IOC_MEASURE_VERITY, inaccessible_page()),
		    EFAULT);
	/* header readable, digest bytes run into an unmapped page */
	two = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(two != MAP_FAILED);
	CHECK_OK(munmap(two + 4096, 4096));
	d = (void *)(two + 4096 - sizeof(*d) - 8);
	d->digest_size = 32;
	CHECK_ERRNO(ioctl(fd, FS_IOC_MEASURE_VERITY, d), EFAULT);
	close(fd);
}

/* The ioctl-only access mode (3) may open a verity file but not measure it. */
TEST(measure_on_fd_not_open_for_reading_is_ebadf)
{
	char *p = test_path("measure-ebadf");
	unsigned char d[MAX_DIGEST];
	int fd, alg, size;

	unlink(p);
	make_file(p, 5000, 17);
	must_enable(p, FS_VERITY_HASH_ALG_SHA256, 1024, 0);
	fd = open(p, O_ACCMODE);
	if (fd < 0)
		fail("open with access mode 3: %s", strerror(errno));
	CHECK(measure_verity(fd, d, &alg, &size) == EBADF);
	close(fd);
}
