/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the tests of fs-verity's users: built-in signatures and the
 * ".fs-verity" keyring (signature.c), IPE (ipe.c), IMA (ima.c), overlayfs
 * (overlay.c).  Static functions: each binary keeps what it uses.
 *
 * Keys: two RSA-2048 key pairs made with openssl in the guest, once per boot,
 * under /tmp/fsv-sig (tmpfs, shared by every test binary and filesystem of
 * the boot): "trusted" (its cert goes into .fs-verity) and "other" (never
 * added anywhere).  Certificates cannot be taken out of .fs-verity by
 * tests that want a known state, so every test that needs the trusted cert
 * calls sig_trust() (idempotent) and the one test that wants an empty
 * keyring checks that it is.
 */
#ifndef FSV_SIG_H
#define FSV_SIG_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/fs.h>
#include <linux/fsverity.h>

#include "vutil.h"

#define SIGDIR "/tmp/fsv-sig"
#define SIG_MAX 16384
#define REQ_SIGS "/proc/sys/fs/verity/require_signatures"

#ifndef STATX_ATTR_VERITY
#define STATX_ATTR_VERITY 0x00100000
#endif

/* make the key pairs once per boot */
static inline void sig_keys(void)
{
	static const char *const names[] = { "trusted", "other" };
	char out[4096];

	mkdir(SIGDIR, 0700);
	for (int i = 0; i < 2; i++) {
		const char *n = names[i];
		char der[256];

		snprintf(der, sizeof(der), SIGDIR "/%s.der", n);
		if (!access(der, F_OK))
			continue;
		if (run_cmd(out, sizeof(out),
			    "cd " SIGDIR " && "
			    "openssl req -x509 -newkey rsa:2048 -nodes -days 3650 "
			    "-keyout %s.key.tmp -out %s.crt.tmp "
			    "-subj '/O=fs-verity test suite/CN=fs-verity %s test key' && "
			    "openssl x509 -in %s.crt.tmp -outform der -out %s.der.tmp && "
			    "mv %s.key.tmp %s.key && mv %s.crt.tmp %s.crt && "
			    "mv %s.der.tmp %s.der", n, n, n, n, n, n, n, n, n, n, n))
			fail("openssl: making the %s key failed: %s", n, out);
	}
}

/* id of the .fs-verity keyring from /proc/keys; *nkeys = keys in it */
static inline long fsv_keyring(int *nkeys)
{
	char line[1024];
	long id = -1;
	FILE *f = fopen("/proc/keys", "r");

	if (!f)
		fail("/proc/keys: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, " keyring ");
		char *d;

		if (!p || !(d = strstr(p, " .fs-verity: ")))
			continue;
		id = strtol(line, NULL, 16);
		d += strlen(" .fs-verity: ");
		if (nkeys)
			*nkeys = strncmp(d, "empty", 5) ? atoi(d) : 0;
		break;
	}
	fclose(f);
	return id;
}

/* add a DER certificate to .fs-verity the documented way */
static inline void sig_add_cert(const char *der)
{
	char out[1024];

	if (fsv_keyring(NULL) < 0)
		fail("no .fs-verity keyring in /proc/keys");
	if (run_cmd(out, sizeof(out),
		    "keyctl padd asymmetric '' %%keyring:.fs-verity < %s", der))
		fail("keyctl padd asymmetric '' %%keyring:.fs-verity < %s: %s",
		     der, out);
}

/* CONFIG_FS_VERITY_BUILTIN_SIGNATURES=y: the keyring or the sysctl exist */
static inline int builtin_sigs(void)
{
	return fsv_keyring(NULL) >= 0 || !access(REQ_SIGS, F_OK);
}

/* the trusted key's cert is in .fs-verity (adding it again is harmless) */
static inline void sig_trust(void)
{
	int n = 0;

	if (!builtin_sigs())
		skip("no .fs-verity keyring and no " REQ_SIGS
		     ": kernel without CONFIG_FS_VERITY_BUILTIN_SIGNATURES");
	sig_keys();
	sig_add_cert(SIGDIR "/trusted.der");
	fsv_keyring(&n);
	if (n < 1)
		fail(".fs-verity is still empty after adding a cert");
}

/* Merkle tree block size to use on this filesystem: min(4096, fs block) */
static inline int sig_block_size(void)
{
	struct statfs sfs;

	if (statfs(env.mnt, &sfs))
		fail("statfs %s: %s", env.mnt, strerror(errno));
	return sfs.f_bsize < 4096 ? (int)sfs.f_bsize : 4096;
}

static inline size_t slurp(const char *path, unsigned char *buf, size_t max)
{
	int fd = open(path, O_RDONLY);
	size_t len = 0;

	if (fd < 0)
		fail("open %s: %s", path, strerror(errno));
	for (;;) {
		ssize_t n = read(fd, buf + len, max - len);

		if (n < 0)
			fail("read %s: %s", path, strerror(errno));
		if (n == 0)
			break;
		len += n;
		if (len == max)
			fail("%s: larger than %zu bytes", path, max);
	}
	close(fd);
	return len;
}

/* "fsverity sign" path with key "trusted"/"other"; returns the sig's size */
static inline size_t sig_sign(const char *path, const char *key, unsigned char *sig)
{
	char out[2048];

	sig_keys();
	unlink(SIGDIR "/sig");
	if (run_cmd(out, sizeof(out),
		    "fsverity sign '%s' " SIGDIR "/sig --block-size=%d "
		    "--key=" SIGDIR "/%s.key --cert=" SIGDIR "/%s.crt",
		    path, sig_block_size(), key, key))
		fail("fsverity sign %s: %s", path, out);
	return slurp(SIGDIR "/sig", sig, SIG_MAX);
}

/* FS_IOC_ENABLE_VERITY (sha256, our block size) with a signature: errno */
static inline int sig_enable(const char *path, const void *sig, size_t sig_len)
{
	int bs = sig_block_size(), lbs = 0, fd, err;

	while ((1 << lbs) < bs)
		lbs++;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		fail("open %s: %s", path, strerror(errno));
	err = enable_verity(fd, FS_VERITY_HASH_ALG_SHA256, lbs, NULL, 0, sig,
			    sig_len);
	close(fd);
	return err;
}

static inline int is_verity(const char *path)
{
	struct statx stx;

	if (statx(AT_FDCWD, path, 0, STATX_BASIC_STATS, &stx))
		fail("statx %s: %s", path, strerror(errno));
	if (!(stx.stx_attributes_mask & STATX_ATTR_VERITY))
		fail("statx %s: STATX_ATTR_VERITY not supported", path);
	return !!(stx.stx_attributes & STATX_ATTR_VERITY);
}

/* the file is exactly as make_file(path, size, seed) left it */
static inline void check_unchanged(const char *path, size_t size, uint64_t seed)
{
	unsigned char *want = malloc(size), *have = malloc(size + 1);
	unsigned char d[64];
	size_t len;
	int fd;

	if (!want || !have)
		fail("out of memory");
	if (is_verity(path))
		fail("%s: verity after a failed enable", path);
	fd = CHECK_OK(open(path, O_RDONLY));
	if (measure_verity(fd, d, NULL, NULL) != ENODATA)
		fail("%s: FS_IOC_MEASURE_VERITY is not ENODATA after a failed enable",
		     path);
	close(fd);
	fill_random(want, size, seed);
	len = slurp(path, have, size + 1);
	if (len != size || memcmp(want, have, size))
		fail("%s: contents changed by a failed enable (%zu bytes, want %zu)",
		     path, len, size);
	fd = open(path, O_WRONLY | O_APPEND);
	if (fd < 0)
		fail("%s: not writable after a failed enable: %s", path,
		     strerror(errno));
	close(fd);
	free(want);
	free(have);
}

/* sha256 digest of a verity file, via FS_IOC_MEASURE_VERITY */
static inline void sig_measure(const char *path, unsigned char d[32])
{
	int fd = open(path, O_RDONLY), alg, size, err;

	if (fd < 0)
		fail("open %s: %s", path, strerror(errno));
	err = measure_verity(fd, d, &alg, &size);
	if (err)
		fail("FS_IOC_MEASURE_VERITY %s: %s", path, errno_name(err));
	close(fd);
	if (alg != FS_VERITY_HASH_ALG_SHA256 || size != 32)
		fail("FS_IOC_MEASURE_VERITY %s: alg %d size %d", path, alg, size);
}

/* "<dir>/<name>", malloc'd */
static inline char *path_join(const char *dir, const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		fail("out of memory");
	return p;
}

/* @path reads back exactly as make_file(path, size, seed) wrote it */
static inline void expect_made_file(const char *path, size_t size, uint64_t seed)
{
	unsigned char *want = malloc(size), *have = malloc(size + 1);

	if (!want || !have)
		fail("out of memory");
	fill_random(want, size, seed);
	if (slurp(path, have, size + 1) != size || memcmp(want, have, size))
		fail("%s: contents differ from the file it stands for", path);
	free(want);
	free(have);
}

/*
 * fs-verity's users (overlayfs, composefs, IMA, IPE) are tested on ext4 and
 * on XFS with 4 KiB and 1 KiB blocks, where container image stores live;
 * their system-wide state (policies, keys) is set up per filesystem pass.
 * skip() on the other filesystems, naming @what.
 */
static inline void users_run_on_ext4_and_xfs(const char *what)
{
	if (strcmp(env.fs, "ext4") && strcmp(env.fs, "xfs") &&
	    strcmp(env.fs, "xfs-1k"))
		skip("%s is tested on ext4, xfs and xfs-1k", what);
}

/* /proc/sys/fs/verity/require_signatures */
static inline int req_sigs_write(const char *val)
{
	int fd = open(REQ_SIGS, O_WRONLY), err = 0;

	if (fd < 0)
		fail("open " REQ_SIGS ": %s", strerror(errno));
	if (write(fd, val, strlen(val)) < 0)
		err = errno;
	close(fd);
	return err;
}

static inline int req_sigs_read(void)
{
	char buf[32];
	int fd = open(REQ_SIGS, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		fail("open " REQ_SIGS ": %s", strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		fail("read " REQ_SIGS ": %s", n < 0 ? strerror(errno) : "empty");
	buf[n] = '\0';
	return atoi(buf);
}


#endif
