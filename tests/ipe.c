// SPDX-License-Identifier: GPL-2.0
/*
 * IPE (Documentation/admin-guide/LSM/ipe.rst) on top of fs-verity's built-in
 * signatures: with a policy that denies execution by default, allows it for
 * the initramfs (boot_verified=TRUE, where every program of this guest lives)
 * and for files with a verified fs-verity signature (fsverity_signature=TRUE),
 * a signed verity copy of busybox runs and unsigned copies (verity or not)
 * get EACCES, from execve() and from mmap(PROT_EXEC).  fsverity_digest= is
 * checked the same way.
 *
 * IPE is system-wide: this runs on ext4 and XFS, each pass with policies of
 * its own names and higher versions.  Policies must be signed by
 * a key of the kernel's trusted keyring: tests/ipe_key.h (the test-only key
 * whose cert base.config builds in).  The deny policy is active only inside
 * the test: afterwards an allow-all policy with a higher version replaces it
 * (IPE has no way back to "no policy").
 */
#define _GNU_SOURCE
#include <sys/mman.h>

#include "sig.h"
#include "ipe_key.h"

#define IPE "/sys/kernel/security/ipe"
#define BUSYBOX "/bin/busybox"

static char deny_name[64], allow_name[64];
static unsigned long next_version;

/* the highest policy version loaded so far (major.minor.rev as one number) */
static unsigned long max_version(void)
{
	char out[4096], *p;
	unsigned long max = 0;

	run_cmd(out, sizeof(out), "cat " IPE "/policies/*/version 2>/dev/null");
	for (p = out; *p; ) {
		unsigned int a, b, c;
		int used = 0;

		if (sscanf(p, "%u.%u.%u%n", &a, &b, &c, &used) == 3) {
			unsigned long v = ((unsigned long)a << 32) |
				((unsigned long)b << 16) | c;

			if (v > max)
				max = v;
			p += used;
		} else {
			p++;
		}
	}
	return max;
}

/* sign policy text with the test key and load it; returns 0 or errno */
static int load_policy(const char *text)
{
	static unsigned char p7[65536];
	char out[2048];
	size_t len;
	int fd, err = 0;

	write_file(SIGDIR "/ipe.key", IPE_TEST_KEY, strlen(IPE_TEST_KEY));
	write_file(SIGDIR "/ipe.crt", IPE_TEST_CERT, strlen(IPE_TEST_CERT));
	write_file(SIGDIR "/ipe.pol", text, strlen(text));
	if (run_cmd(out, sizeof(out),
		    "openssl smime -sign -in " SIGDIR "/ipe.pol -signer " SIGDIR
		    "/ipe.crt -inkey " SIGDIR "/ipe.key -noattr -nodetach "
		    "-nosmimecap -binary -outform der -out " SIGDIR "/ipe.p7b"))
		fail("openssl smime -sign: %s", out);
	len = slurp(SIGDIR "/ipe.p7b", p7, sizeof(p7));
	fd = open(IPE "/new_policy", O_WRONLY);
	if (fd < 0)
		fail("open " IPE "/new_policy: %s", strerror(errno));
	if (write(fd, p7, len) != (ssize_t)len)
		err = errno ? errno : EIO;
	close(fd);
	return err;
}

static int activate(const char *name)
{
	char path[256];
	int fd, err = 0;

	snprintf(path, sizeof(path), IPE "/policies/%s/active", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return errno;
	if (write(fd, "1", 1) != 1)
		err = errno;
	close(fd);
	return err;
}

static void version_str(char *buf, size_t len, unsigned long v)
{
	snprintf(buf, len, "%lu.%lu.%lu", (v >> 32) & 0xffff, (v >> 16) & 0xffff,
		 v & 0xffff);
}

/* execve(path) as busybox "true"; returns 0, or the errno of execve */
static int run_true(const char *path)
{
	int pfd[2], status, err = 0;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		fail("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (pid == 0) {
		char *argv[] = { "true", NULL }, *envp[] = { NULL };

		close(pfd[0]);
		execve(path, argv, envp);
		err = errno;
		if (write(pfd[1], &err, sizeof(err)) < 0)
			_exit(126);
		_exit(127);
	}
	close(pfd[1]);
	if (read(pfd[0], &err, sizeof(err)) != sizeof(err))
		err = 0;
	close(pfd[0]);
	waitpid(pid, &status, 0);
	if (!err && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		fail("%s ran but did not exit 0 (status 0x%x)", path, status);
	return err;
}

/* mmap(PROT_EXEC) of path: 0 or errno */
static int mmap_exec(const char *path)
{
	int fd = open(path, O_RDONLY), err = 0;
	void *p;

	if (fd < 0)
		fail("open %s: %s", path, strerror(errno));
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		err = errno;
	else
		munmap(p, 4096);
	close(fd);
	return err;
}

static void copy(const char *from, const char *to)
{
	char out[512];

	unlink(to);
	if (run_cmd(out, sizeof(out), "cp %s '%s' && chmod 755 '%s'", from, to, to))
		fail("cp %s %s: %s", from, to, out);
}

static void expect_exec(const char *what, const char *path, int want)
{
	int err = run_true(path);

	if (err != want)
		fail("execve of %s: got %s, want %s", what, errno_name(err),
		     errno_name(want));
	err = mmap_exec(path);
	if (err != want)
		fail("mmap(PROT_EXEC) of %s: got %s, want %s", what,
		     errno_name(err), errno_name(want));
}

static void ipe_body(void)
{
	char *sgn = test_path("signed"), *uns = test_path("unsigned-verity");
	char *pln = test_path("plain"), *dig = test_path("digest");
	static unsigned char sig[SIG_MAX];
	char policy[2048], ver[32];
	unsigned char d[32];
	size_t len;
	int err;

	sig_trust();
	copy(BUSYBOX, sgn);
	copy(BUSYBOX, uns);
	copy(BUSYBOX, pln);
	copy(BUSYBOX, dig);
	/* make the four copies different files with different digests */
	if (run_cmd(NULL, 0, "for f in '%s' '%s' '%s' '%s'; do echo \"$f\" >>\"$f\"; done",
		    sgn, uns, pln, dig))
		fail("appending to the copies failed");
	len = sig_sign(sgn, "trusted", sig);
	err = sig_enable(sgn, sig, len);
	if (err)
		fail("enable %s with a signature: %s", sgn, errno_name(err));
	err = sig_enable(uns, NULL, 0);
	if (err)
		fail("enable %s: %s", uns, errno_name(err));
	err = sig_enable(dig, NULL, 0);
	if (err)
		fail("enable %s: %s", dig, errno_name(err));
	sig_measure(dig, d);

	/* no policy (or an allow-all one) yet: everything runs */
	expect_exec("the signed copy (no policy)", sgn, 0);
	expect_exec("the unsigned verity copy (no policy)", uns, 0);
	expect_exec("the plain copy (no policy)", pln, 0);

	version_str(ver, sizeof(ver), next_version);
	snprintf(policy, sizeof(policy),
		 "policy_name=%s policy_version=%s\n"
		 "DEFAULT action=ALLOW\n"
		 "DEFAULT op=EXECUTE action=DENY\n"
		 "op=EXECUTE boot_verified=TRUE action=ALLOW\n"
		 "op=EXECUTE fsverity_signature=TRUE action=ALLOW\n"
		 "op=EXECUTE fsverity_digest=sha256:%s action=ALLOW\n",
		 deny_name, ver, hex(d, 32));
	err = load_policy(policy);
	if (err)
		fail("loading the signed policy into " IPE "/new_policy: %s%s",
		     errno_name(err), err == ENOKEY || err == EKEYREJECTED ?
		     " (is kernel/config/ipe-test-cert.pem built in, and the same cert as tests/ipe_key.h?)" : "");
	err = activate(deny_name);
	if (err)
		fail("activating %s: %s", deny_name, errno_name(err));

	expect_exec("the signed verity copy", sgn, 0);
	expect_exec("the unsigned verity copy", uns, EACCES);
	expect_exec("the plain (not verity) copy", pln, EACCES);
	expect_exec("the verity copy named by fsverity_digest=", dig, 0);
	expect_exec(BUSYBOX " (initramfs, boot_verified)", BUSYBOX, 0);
	/* evicting the inodes changes nothing: the signature is checked again */
	fs_unmount();
	fs_mount();
	expect_exec("the signed verity copy, after a remount", sgn, 0);
	expect_exec("the unsigned verity copy, after a remount", uns, EACCES);
}

static void ipe_cleanup(void)
{
	char policy[256], ver[32], path[256];
	int err, fd;

	version_str(ver, sizeof(ver), next_version + 1);
	snprintf(policy, sizeof(policy),
		 "policy_name=%s policy_version=%s\nDEFAULT action=ALLOW\n",
		 allow_name, ver);
	err = load_policy(policy);
	if (!err)
		err = activate(allow_name);
	if (err) {
		note("could not switch to an allow-all IPE policy: %s", errno_name(err));
		return;
	}
	snprintf(path, sizeof(path), IPE "/policies/%s/delete", deny_name);
	fd = open(path, O_WRONLY);
	if (fd >= 0) {
		if (write(fd, "1", 1) != 1)
			note("deleting %s: %s", deny_name, strerror(errno));
		close(fd);
	}
}

TEST(signed_exec_allowed_unsigned_denied)
{
	users_run_on_ext4_and_xfs("IPE");
	if (access(IPE "/new_policy", F_OK))
		fail(IPE "/new_policy: %s (CONFIG_SECURITY_IPE, lsm=ipe?)",
		     strerror(errno));
	sig_keys();
	snprintf(deny_name, sizeof(deny_name), "fsv_test_deny_%d", getpid());
	snprintf(allow_name, sizeof(allow_name), "fsv_test_allow_%d", getpid());
	next_version = max_version() + 1;
	with_cleanup(ipe_body, ipe_cleanup, 100);
	/* the allow-all policy is active again: a plain copy runs */
	expect_exec("a plain copy after the test", test_path("plain"), 0);
}
