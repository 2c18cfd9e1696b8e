// SPDX-License-Identifier: GPL-2.0
/*
 * composefs, as its mount helper sets it up (containers/composefs; the
 * kernel side in Documentation/filesystems/overlayfs.rst, "Metadata only
 * copy up", "Data-only lower layers" and "fs-verity support"):
 *
 *  - data files with fs-verity, stored by digest: OBJECTS/ab/cdef... (the
 *    hex SHA-256 fs-verity digest, its first byte as the directory);
 *  - a metadata-only erofs image made with mkfs.erofs from a tree in which
 *    every regular file has its size but no data, a
 *    trusted.overlay.metacopy xattr carrying its data file's fs-verity
 *    digest and a trusted.overlay.redirect naming that data file;
 *  - the image itself a verity file, measured with FS_IOC_MEASURE_VERITY
 *    and compared with the digest expected for it before it is mounted
 *    (file-backed erofs, from the measured fd);
 *  - overlayfs "lowerdir=IMAGE::OBJECTS,metacopy=on,redirect_dir=on,
 *    verity=require" over both.
 *
 * Debian 12 packages no mkcomposefs: the tree is built here, the image with
 * Debian's mkfs.erofs, which keeps trusted.* xattrs.  Runs on ext4 and on
 * XFS (4 KiB and 1 KiB blocks), where container image stores live.
 * Every refusal is checked against a control that passes without it:
 * verity=off opens what verity=require refuses, a plain file shows the
 * flipped byte that a verity data file refuses to return.
 */
#define _GNU_SOURCE
#include <sys/mount.h>
#include <sys/xattr.h>

#include "sig.h"

#define SHA256_HEX 64

static char *base, *objects, *meta, *image, *img_mnt, *merged;
static int image_fd = -1;

struct entry {
	const char *name;	/* path in the image */
	size_t size;
	uint64_t seed;		/* of the data file's contents */
	char digest[SHA256_HEX + 1];
};

/* the files of the image: their data files are verity, digests match */
static struct entry entries[] = {
	{ .name = "one-byte", .size = 1, .seed = 301 },
	{ .name = "a-page", .size = 4096, .seed = 302 },
	{ .name = "odd", .size = 70001, .seed = 303 },
	{ .name = "dir/sub/deep", .size = 10000, .seed = 304 },
	{ .name = "dir/large", .size = (1 << 20) + 123, .seed = 305 },
};

#define N_ENTRIES (sizeof(entries) / sizeof(entries[0]))
#define WRONG_SEED	306	/* the data of "wrong-digest" */
#define NOVERITY_SEED	307	/* the data of "no-verity" */

static void digest_from_hex(const char *hexd, unsigned char d[32])
{
	for (int i = 0; i < 32; i++)
		if (sscanf(hexd + 2 * i, "%2hhx", &d[i]) != 1)
			fail("bad hex digest %s", hexd);
}

/* OBJECTS/ab/cdef...: malloc'd */
static char *object_path(const char *hexd)
{
	char *p;

	if (asprintf(&p, "%s/%.2s/%s", objects, hexd, hexd + 2) < 0)
		fail("out of memory");
	return p;
}

/*
 * A data file of @size bytes from @seed, fs-verity enabled when @verity,
 * stored under OBJECTS by its digest (computed by fsverity-utils, which
 * also covers a file without verity); the digest in @hexd.
 */
static void add_object(size_t size, uint64_t seed, bool verity, char *hexd)
{
	char *tmp = path_join(objects, "staging"), *obj, dir[1024];
	unsigned char d[32];
	int err;

	make_file(tmp, size, seed);
	user_digest_hex(tmp, FS_VERITY_HASH_ALG_SHA256, sig_block_size(), 0,
			hexd);
	if (verity) {
		err = sig_enable(tmp, NULL, 0);
		if (err)
			fail("enable %s: %s", tmp, errno_name(err));
		sig_measure(tmp, d);
		if (strcmp(hex(d, 32), hexd))
			fail("%s: FS_IOC_MEASURE_VERITY %s, fsverity digest %s",
			     tmp, hex(d, 32), hexd);
	}
	obj = object_path(hexd);
	snprintf(dir, sizeof(dir), "%s/%.2s", objects, hexd);
	if (mkdir(dir, 0755) && errno != EEXIST)
		fail("mkdir %s: %s", dir, strerror(errno));
	CHECK_OK(rename(tmp, obj));
	free(obj);
	free(tmp);
}

/*
 * A metadata-only file of the image: its size, no data, and the two
 * overlayfs xattrs.  struct ovl_metacopy: version 0, its length, flags,
 * the fs-verity hash algorithm, the digest.
 */
static void add_meta(const char *name, size_t size, const char *digest_hex,
		     const char *object_hex)
{
	char *path = path_join(meta, name), redirect[80], out[512];
	unsigned char mc[4 + 32] = { 0, sizeof(mc), 0,
				     FS_VERITY_HASH_ALG_SHA256 };
	int fd;


	if (run_cmd(out, sizeof(out), "mkdir -p \"$(dirname '%s')\"", path))
		fail("mkdir for %s: %s", path, out);
	fd = CHECK_OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
	CHECK_OK(ftruncate(fd, size));
	close(fd);
	digest_from_hex(digest_hex, mc + 4);
	snprintf(redirect, sizeof(redirect), "/%.2s/%s", object_hex,
		 object_hex + 2);
	CHECK_OK(setxattr(path, "trusted.overlay.metacopy", mc, sizeof(mc), 0));
	CHECK_OK(setxattr(path, "trusted.overlay.redirect", redirect,
			  strlen(redirect), 0));
	free(path);
}

/*
 * The image: mkfs.erofs, fs-verity enabled; its digest computed before the
 * enable is what FS_IOC_MEASURE_VERITY must report before the mount, which
 * uses that same open file (/proc/self/fd/N), as composefs's helper does.
 */
static void mount_image(void)
{
	char want[SHA256_HEX + 1], src[64], out[1024];
	unsigned char d[32];
	int alg, size, err;

	if (run_cmd(out, sizeof(out), "mkfs.erofs --quiet '%s' '%s'", image, meta))
		fail("mkfs.erofs %s %s: %s", image, meta, out);
	user_digest_hex(image, FS_VERITY_HASH_ALG_SHA256, sig_block_size(), 0,
			want);
	err = sig_enable(image, NULL, 0);
	if (err)
		fail("enable %s: %s", image, errno_name(err));
	image_fd = CHECK_OK(open(image, O_RDONLY | O_CLOEXEC));
	err = measure_verity(image_fd, d, &alg, &size);
	if (err)
		fail("FS_IOC_MEASURE_VERITY %s: %s", image, errno_name(err));
	if (alg != FS_VERITY_HASH_ALG_SHA256 || strcmp(hex(d, 32), want))
		fail("image %s measures %s, expected %s", image, hex(d, 32), want);
	snprintf(src, sizeof(src), "/proc/self/fd/%d", image_fd);
	if (mount(src, img_mnt, "erofs", MS_RDONLY, NULL))
		fail("mount -t erofs %s (%s) %s: %s (CONFIG_EROFS_FS_BACKED_BY_FILE?)",
		     src, image, img_mnt, strerror(errno));
}

static void ovl_mount(const char *verity)
{
	char opts[2048];

	snprintf(opts, sizeof(opts),
		 "lowerdir=%s::%s,metacopy=on,redirect_dir=on,verity=%s",
		 img_mnt, objects, verity);
	if (mount("overlay", merged, "overlay", MS_RDONLY, opts))
		fail("mount -t overlay -o %s: %s", opts, strerror(errno));
}

static void ovl_umount(void)
{
	if (umount(merged))
		fail("umount %s: %s", merged, strerror(errno));
}

static void expect_open_eio(const char *path, const char *why)
{
	int fd;

	errno = 0;
	fd = open(path, O_RDONLY);
	if (fd >= 0 || errno != EIO)
		fail("%s (%s): open got %s, want EIO", path, why,
		     fd >= 0 ? "success" : errno_name(errno));
}

/* errno of a pread of @len bytes at @off of @path, 0 if it read them all */
static int pread_errno(const char *path, off_t off, size_t len, void *buf)
{
	int fd = CHECK_OK(open(path, O_RDONLY)), err = 0;
	ssize_t n = pread(fd, buf, len, off);

	if (n < 0)
		err = errno;
	else if ((size_t)n != len)
		fail("%s: short read %zd of %zu at %lld", path, n, len,
		     (long long)off);
	close(fd);
	return err;
}

/* the layers: objects, the metadata tree, the image; none mounted yet */
static void build_layers(void)
{
	char wrong_obj[SHA256_HEX + 1], plain_obj[SHA256_HEX + 1], out[512];

	if (run_cmd(out, sizeof(out), "rm -rf '%s' && mkdir -p '%s'", base, base))
		fail("mkdir %s: %s", base, out);
	CHECK_OK(mkdir(objects, 0755));
	CHECK_OK(mkdir(meta, 0755));
	CHECK_OK(mkdir(img_mnt, 0755));
	CHECK_OK(mkdir(merged, 0755));
	for (size_t i = 0; i < N_ENTRIES; i++) {
		struct entry *e = &entries[i];

		add_object(e->size, e->seed, true, e->digest);
		add_meta(e->name, e->size, e->digest, e->digest);
	}
	/* a verity data file, named by the digest of another one */
	add_object(70001, WRONG_SEED, true, wrong_obj);
	add_meta("wrong-digest", 70001, entries[2].digest, wrong_obj);
	/* a data file without verity, named by the digest it would have */
	add_object(70001, NOVERITY_SEED, false, plain_obj);
	add_meta("no-verity", 70001, plain_obj, plain_obj);
	mount_image();
}

static void composefs_body(void)
{
	build_layers();

	ovl_mount("require");
	for (size_t i = 0; i < N_ENTRIES; i++)
		expect_made_file(path_join(merged, entries[i].name), entries[i].size,
				entries[i].seed);
	expect_open_eio(path_join(merged, "wrong-digest"),
			"verity=require, the data file's digest is another one");
	expect_open_eio(path_join(merged, "no-verity"),
			"verity=require, the data file has no fs-verity");
	ovl_umount();

	/* the controls: without verity checks both open and read their data */
	ovl_mount("off");
	expect_made_file(path_join(merged, "wrong-digest"), 70001, WRONG_SEED);
	expect_made_file(path_join(merged, "no-verity"), 70001, NOVERITY_SEED);
	ovl_umount();
	note("verity=require: wrong-digest and no-verity EIO at open; verity=off (control): both open and read their data files' 70001 bytes");
}

/*
 * One byte of a data file flipped on the device: its block reads EIO
 * through the overlay, the rest of the file reads fine; the same flip in a
 * plain file comes back flipped (the control: the corruption is real).
 */
static void composefs_flip_body(void)
{
	const struct entry *e = &entries[4];	/* dir/large */
	char *obj, *plain = path_join(base, "plain-control"), *mf;
	size_t off = 300000, bs = 4096;
	unsigned char *buf = malloc(bs), *want = malloc(e->size);
	int fd, err;

	build_layers();
	obj = object_path(e->digest);
	mf = path_join(merged, e->name);
	make_file(plain, e->size, e->seed);
	fd = CHECK_OK(open(plain, O_RDONLY));
	CHECK_OK(fsync(fd));
	close(fd);

	corrupt_byte(env.dev, phys_offset(obj, off));
	corrupt_byte(env.dev, phys_offset(plain, off));
	drop_caches();

	fill_random(want, e->size, e->seed);
	err = pread_errno(plain, off & ~(bs - 1), bs, buf);
	if (err)
		fail("%s (plain control): %s", plain, errno_name(err));
	if (buf[off % bs] != (want[off] ^ 0xff))
		fail("%s (plain control): byte %zu reads %#x, want the flipped %#x: the corruption did not reach the device",
		     plain, off, buf[off % bs], want[off] ^ 0xff);
	note("plain control: byte %zu reads %#x (written %#x)", off,
	     buf[off % bs], want[off]);

	ovl_mount("require");
	err = pread_errno(mf, off & ~(bs - 1), bs, buf);
	if (err != EIO)
		fail("%s through the overlay: the block with the flipped byte: %s, want EIO",
		     mf, err ? errno_name(err) : "read fine");
	err = pread_errno(mf, 0, bs, buf);
	if (err || memcmp(buf, want, bs))
		fail("%s through the overlay: the first block: %s",
		     mf, err ? errno_name(err) : "wrong data");
	note("through the overlay: the block with byte %zu EIO, the first block reads fine",
	     off);
	ovl_umount();
	free(buf);
	free(want);
}

static void composefs_cleanup(void)
{
	umount2(merged, MNT_DETACH);
	umount2(img_mnt, MNT_DETACH);
	run_cmd(NULL, 0, "rm -rf '%s'", base);
}

static void setup(void)
{
	users_run_on_ext4_and_xfs("composefs");
	base = test_path("cfs");
	objects = path_join(base, "objects");
	meta = path_join(base, "meta");
	image = path_join(base, "image.erofs");
	img_mnt = path_join(base, "image");
	merged = path_join(base, "merged");
}

TEST(verity_require_reads_every_file_and_refuses_wrong_or_missing_digests)
{
	setup();
	with_cleanup(composefs_body, composefs_cleanup, 100);
}

TEST(a_flipped_data_byte_is_eio_through_the_overlay)
{
	setup();
	with_cleanup(composefs_flip_body, composefs_cleanup, 100);
}
