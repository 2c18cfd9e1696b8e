// SPDX-License-Identifier: GPL-2.0
/*
 * Built-in signature verification (Documentation/filesystems/fsverity.rst):
 * the ".fs-verity" keyring, FS_IOC_ENABLE_VERITY with a PKCS#7 signature made
 * by "fsverity sign", the signature's errnos (ENOKEY, EBADMSG, EKEYREJECTED)
 * each leaving the file untouched, the signature being checked again on every
 * open (remount, reboot), and the sysctl fs.verity.require_signatures.
 *
 * The keyring keeps its certs for the whole boot and this binary runs once
 * per filesystem: the empty-keyring checks run in boot 2, on the first
 * filesystem only.  Tests that need the trusted cert add it themselves
 * (sig_trust() is idempotent), so they do not depend on order.
 * require_signatures is set back to 0 whatever happens to a test.
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */
#include "sig.h"

#define FSIZE 100000

static unsigned char sig[SIG_MAX];

TEST(keyring_exists)
{
	char out[4096];
	int n = -1;
	long id = fsv_keyring(&n);

	if (id < 0 && !builtin_sigs())
		skip("kernel without CONFIG_FS_VERITY_BUILTIN_SIGNATURES");
	if (id < 0)
		fail("no \".fs-verity\" keyring in /proc/keys");
	if (run_cmd(out, sizeof(out), "keyctl show %%keyring:.fs-verity"))
		fail("keyctl show %%keyring:.fs-verity: %s", out);
	if (!strstr(out, ".fs-verity"))
		fail("keyctl show %%keyring:.fs-verity: unexpected output: %s", out);
	note("keyring %ld holds %d key(s)", id, n);
}

TEST(add_cert)
{
	int before = -1, after = -1;

	fsv_keyring(&before);
	sig_trust();
	fsv_keyring(&after);
	note(".fs-verity: %d key(s) before, %d after", before, after);
	if (after < 1)
		fail(".fs-verity holds %d keys after keyctl padd", after);
}

/*
 * FS_IOC_READ_VERITY_METADATA(SIGNATURE) of @path into @buf: its length,
 * or -ENOTTY on mainline 6.12's btrfs, which lacks the ioctl (noted).  Our
 * series wires it (kernel/patches/btrfs-verity-read-metadata.patch): there
 * ENOTTY fails like any other error.
 */
static ssize_t read_stored_sig(const char *path, unsigned char *buf,
			       size_t size)
{
	struct fsverity_read_metadata_arg arg;
	ssize_t n;
	int fd = CHECK_OK(open(path, O_RDONLY)), err;

	memset(&arg, 0, sizeof(arg));
	arg.metadata_type = FS_VERITY_METADATA_TYPE_SIGNATURE;
	arg.length = size;
	arg.buf_ptr = (uintptr_t)buf;
	n = ioctl(fd, FS_IOC_READ_VERITY_METADATA, &arg);
	err = errno;
	close(fd);
	if (n < 0 && err == ENOTTY && !strcmp(env.fs, "btrfs") &&
	    !kernel_is_ours()) {
		note("mainline btrfs has no FS_IOC_READ_VERITY_METADATA: stored signature not compared");
		return -ENOTTY;
	}
	if (n < 0)
		fail("FS_IOC_READ_VERITY_METADATA(SIGNATURE) %s: %s", path,
		     strerror(err));
	return n;
}

/* FS_IOC_READ_VERITY_METADATA(SIGNATURE) == want */
static void check_sig_metadata(const char *path, const unsigned char *want,
			       size_t len)
{
	static unsigned char got[SIG_MAX];
	char out[1024];
	ssize_t n;
	size_t dlen;

	n = read_stored_sig(path, got, sizeof(got));
	if (n == -ENOTTY)
		return;
	if ((size_t)n != len || memcmp(got, want, len))
		fail("%s: the stored signature (%zd bytes) differs from the one given (%zu)",
		     path, n, len);
	if (run_cmd(out, sizeof(out), "fsverity dump_metadata signature '%s' > "
		    SIGDIR "/dump", path))
		fail("fsverity dump_metadata signature %s: %s", path, out);
	dlen = slurp(SIGDIR "/dump", got, sizeof(got));
	if (dlen != len || memcmp(got, want, len))
		fail("fsverity dump_metadata signature: %zu bytes differing from the %zu given",
		     dlen, len);
}

/*
 * A kernel built with CONFIG_FS_VERITY_BUILTIN_SIGNATURES=n has neither the
 * keyring nor the sysctl, and (as mainline) stores a signature given to
 * FS_IOC_ENABLE_VERITY without checking it: userspace can read it back and
 * check it itself.  The other tests skip there.  (make check runs this
 * file on such a kernel too: its lines nosig/...)
 */
TEST(no_builtin_signatures_stores_the_signature_unchecked)
{
	static unsigned char got[SIG_MAX];
	char *a = test_path("nobuiltin");
	ssize_t n;
	int err;

	if (builtin_sigs())
		skip("kernel has CONFIG_FS_VERITY_BUILTIN_SIGNATURES=y");
	make_file(a, FSIZE, 1);
	fill_random(sig, 300, 2);	/* not a PKCS#7 message at all */
	err = sig_enable(a, sig, 300);
	if (err)
		fail("enable with a signature, no built-in signature support: got %s, want success",
		     errno_name(err));
	n = read_stored_sig(a, got, sizeof(got));
	if (n == -ENOTTY)
		return;
	if (n != 300 || memcmp(got, sig, 300))
		fail("the stored signature: %zd bytes, want the 300 given", n);
}

static void check_digest_is_fsverity_digest(const char *path,
					    const unsigned char d[32])
{
	char out[1024], want[80];

	if (run_cmd(out, sizeof(out), "fsverity digest --block-size=%d '%s'",
		    sig_block_size(), path))
		fail("fsverity digest %s: %s", path, out);
	snprintf(want, sizeof(want), "sha256:%s ", hex(d, 32));
	if (strncmp(out, want, strlen(want)))
		fail("kernel digest %s, fsverity digest says %s", want, out);
}

TEST(signed_enable_and_reopen)
{
	char *a = test_path("signed"), *cert = test_path("signed-cert.der");
	unsigned char d1[32], d2[32];
	unsigned char *want = malloc(FSIZE), *have = malloc(FSIZE + 1);
	char out[512];
	size_t len;
	int err;

	sig_trust();
	make_file(a, FSIZE, 21);
	len = sig_sign(a, "trusted", sig);
	err = sig_enable(a, sig, len);
	if (err)
		fail("enable with a good signature: %s", errno_name(err));
	/* for boot 2: the cert that signed it (the keys in /tmp are gone then) */
	if (run_cmd(out, sizeof(out), "cp " SIGDIR "/trusted.der '%s'", cert))
		fail("cp cert: %s", out);
	CHECK(is_verity(a));
	sig_measure(a, d1);
	check_digest_is_fsverity_digest(a, d1);
	check_sig_metadata(a, sig, len);

	/* evict: the signature is verified again when the inode is set up */
	fs_unmount();
	fs_mount();
	sig_measure(a, d2);
	if (memcmp(d1, d2, 32))
		fail("digest changed across a remount: %s", hex(d1, 32));
	fill_random(want, FSIZE, 21);
	if (slurp(a, have, FSIZE + 1) != FSIZE || memcmp(want, have, FSIZE))
		fail("%s: contents differ after the remount", a);
	check_sig_metadata(a, sig, len);
	free(want);
	free(have);
}

TEST(malformed_signature_ebadmsg)
{
	char *a = test_path("malformed");
	size_t len;
	int err;

	sig_trust();
	make_file(a, FSIZE, 31);
	/* not DER at all */
	fill_random(sig, 300, 32);
	err = sig_enable(a, sig, 300);
	if (err != EBADMSG)
		fail("enable with 300 random bytes as signature: got %s, want EBADMSG",
		     errno_name(err));
	check_unchanged(a, FSIZE, 31);
	/* a good signature, truncated */
	len = sig_sign(a, "trusted", sig);
	err = sig_enable(a, sig, len / 2);
	if (err != EBADMSG)
		fail("enable with a truncated signature: got %s, want EBADMSG",
		     errno_name(err));
	check_unchanged(a, FSIZE, 31);
}

TEST(untrusted_signer_enokey)
{
	char *a = test_path("untrusted");
	size_t len;
	int err;

	sig_trust();	/* the keyring is not empty: only the signer is unknown */
	make_file(a, FSIZE, 41);
	len = sig_sign(a, "other", sig);
	err = sig_enable(a, sig, len);
	if (err != ENOKEY)
		fail("enable with a signature by a key not in .fs-verity: got %s, want ENOKEY",
		     errno_name(err));
	check_unchanged(a, FSIZE, 41);
}

TEST(wrong_digest_ekeyrejected)
{
	char *a = test_path("wrongdigest"), *b = test_path("wrongdigest-other");
	size_t len;
	int err;

	sig_trust();
	make_file(a, FSIZE, 51);
	make_file(b, FSIZE, 52);
	len = sig_sign(b, "trusted", sig);	/* a good signature of b */
	err = sig_enable(a, sig, len);
	if (err != EKEYREJECTED)
		fail("enable with a signature of another file's digest: got %s, want EKEYREJECTED",
		     errno_name(err));
	check_unchanged(a, FSIZE, 51);
	/* and it still is a good signature for b */
	err = sig_enable(b, sig, len);
	if (err)
		fail("enable of the file the signature was made for: %s",
		     errno_name(err));
}

/* ---- fs.verity.require_signatures ---- */

static void restore_req_sigs(void)
{
	int err = req_sigs_write("0");

	if (err)
		note("could not restore " REQ_SIGS " to 0: %s", errno_name(err));
}

static void req_sigs_values_body(void)
{
	static const char *const bad[] = { "2", "-1", "abc", "" };
	int err;

	CHECK(req_sigs_read() == 0);
	for (int v = 0; v < 2; v++) {
		const char *cur = v ? "1" : "0";

		err = req_sigs_write(cur);
		if (err)
			fail("writing %s: %s", cur, errno_name(err));
		CHECK(req_sigs_read() == v);
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			if (!*bad[i])
				continue;	/* an empty write is a no-op */
			err = req_sigs_write(bad[i]);
			if (err != EINVAL)
				fail("writing \"%s\": got %s, want EINVAL", bad[i],
				     errno_name(err));
			if (req_sigs_read() != v)
				fail("writing \"%s\" changed the value from %d to %d",
				     bad[i], v, req_sigs_read());
		}
	}
}

TEST(require_signatures_values)
{
	struct stat st;

	if (!builtin_sigs())
		skip("kernel without CONFIG_FS_VERITY_BUILTIN_SIGNATURES");
	if (stat(REQ_SIGS, &st))
		fail(REQ_SIGS ": %s", strerror(errno));
	if ((st.st_mode & 0777) != 0644)
		fail(REQ_SIGS ": mode %o, want 644", st.st_mode & 0777);
	with_cleanup(req_sigs_values_body, restore_req_sigs, 100);
	CHECK(req_sigs_read() == 0);
}

static void req_sigs_body(void)
{
	char *u = test_path("req-unsigned"), *s = test_path("req-signed");
	char *n = test_path("req-new");
	size_t len;
	int fd, err;

	sig_trust();
	make_file(u, FSIZE, 61);
	make_file(s, FSIZE, 62);
	make_file(n, FSIZE, 63);
	err = sig_enable(u, NULL, 0);
	if (err)
		fail("enable without a signature (require_signatures=0): %s",
		     errno_name(err));
	len = sig_sign(s, "trusted", sig);
	err = sig_enable(s, sig, len);
	if (err)
		fail("enable with a signature: %s", errno_name(err));

	err = req_sigs_write("1");
	if (err)
		fail("require_signatures=1: %s", errno_name(err));
	/* the verity state is cached per in-memory inode: evict them */
	fs_unmount();
	fs_mount();
	errno = 0;
	fd = open(u, O_RDONLY);
	if (fd >= 0 || errno != EPERM)
		fail("open of an unsigned verity file with require_signatures=1: got %s, want EPERM",
		     fd >= 0 ? "success" : errno_name(errno));
	fd = open(s, O_RDONLY);
	if (fd < 0)
		fail("open of a signed verity file with require_signatures=1: %s",
		     errno_name(errno));
	close(fd);
	err = sig_enable(n, NULL, 0);
	if (err != EPERM)
		fail("enable without a signature, require_signatures=1: got %s, want EPERM",
		     errno_name(err));
	check_unchanged(n, FSIZE, 63);
	/* a signed enable still works */
	len = sig_sign(n, "trusted", sig);
	err = sig_enable(n, sig, len);
	if (err)
		fail("enable with a signature, require_signatures=1: %s",
		     errno_name(err));

	err = req_sigs_write("0");
	if (err)
		fail("require_signatures=0: %s", errno_name(err));
	fd = open(u, O_RDONLY);
	if (fd < 0)
		fail("open of the unsigned verity file with require_signatures=0: %s",
		     errno_name(errno));
	close(fd);
}

TEST(require_signatures)
{
	if (!builtin_sigs())
		skip("kernel without CONFIG_FS_VERITY_BUILTIN_SIGNATURES");
	with_cleanup(req_sigs_body, restore_req_sigs, 100);
	CHECK(req_sigs_read() == 0);
}

/* ---- boot 2: the signature is checked again, against a fresh keyring ---- */

/*
 * A fresh boot has an empty .fs-verity keyring (in boot 1 ipe.c has already
 * added a cert by the time this area runs), so these run in boot 2, where
 * the first filesystem's run sees the empty keyring and the others skip.
 */
TEST_BOOT2(empty_keyring_enokey)
{
	char *a = test_path("empty");
	size_t len;
	int n = -1, err;

	if (fsv_keyring(&n) < 0)
		skip("no .fs-verity keyring (kernel without CONFIG_FS_VERITY_BUILTIN_SIGNATURES?)");
	if (n != 0)
		skip("the .fs-verity keyring already holds %d key(s) (added by an earlier test in this boot)",
		     n);
	make_file(a, FSIZE, 11);
	len = sig_sign(a, "trusted", sig);
	err = sig_enable(a, sig, len);
	if (err != ENOKEY)
		fail("enable with a signature, empty keyring: got %s, want ENOKEY",
		     errno_name(err));
	check_unchanged(a, FSIZE, 11);
}

TEST_BOOT2(signed_after_reboot)
{
	char *a = test_path("signed"), *cert = test_path("signed-cert.der");
	unsigned char want[FSIZE], *have = malloc(FSIZE + 1), d[32];
	int n = -1, fd;

	if (!builtin_sigs())
		skip("kernel without CONFIG_FS_VERITY_BUILTIN_SIGNATURES");
	if (access(a, F_OK))
		fail("%s is gone after the reboot", a);
	fsv_keyring(&n);
	if (n == 0) {
		/* a new boot, an empty keyring: the signed file does not open */
		errno = 0;
		fd = open(a, O_RDONLY);
		if (fd >= 0 || errno != ENOKEY)
			fail("open of a signed file, signer's cert not in the keyring: got %s, want ENOKEY",
			     fd >= 0 ? "success" : errno_name(errno));
	} else {
		note("the keyring holds %d key(s) already: the ENOKEY open is checked on the first filesystem only",
		     n);
	}
	sig_add_cert(cert);
	sig_measure(a, d);
	check_digest_is_fsverity_digest(a, d);
	fill_random(want, FSIZE, 21);
	if (slurp(a, have, FSIZE + 1) != FSIZE || memcmp(want, have, FSIZE))
		fail("%s: contents differ after the reboot", a);
	free(have);
}
