// SPDX-License-Identifier: GPL-2.0
/*
 * IMA measuring fs-verity digests (Documentation/ABI/testing/ima_policy,
 * digest_type=verity; Documentation/security/IMA-templates.rst, ima-ngv2):
 * with the rule
 *	measure func=FILE_CHECK fowner=<uid> digest_type=verity template=ima-ngv2
 * opening a verity file owned by <uid> adds a measurement whose digest field
 * is "verity:sha256:<the digest FS_IOC_MEASURE_VERITY reports>"; a file of
 * that owner without verity is not measured (IMA has no verity digest for it).
 *
 * The rule is appended to IMA's policy (CONFIG_IMA_WRITE_POLICY) and cannot
 * be removed; it is scoped to an owner no other test uses, one per
 * filesystem pass (ext4, xfs, xfs-1k), so that each pass starts with no
 * rule of its own loaded.
 */
#include "sig.h"

#define IMA "/sys/kernel/security/ima"
#define OWNER_BASE 4242

/* ext4 4242, xfs 4243, xfs-1k 4244 */
static int owner(void)
{
	return OWNER_BASE + (!strcmp(env.fs, "xfs") ? 1 :
			     !strcmp(env.fs, "xfs-1k") ? 2 : 0);
}

/* the measurement list line for path (last one), or NULL */
static char *find_measurement(const char *path)
{
	static char line[8192];
	char *found = NULL, tail[1024];
	FILE *f = fopen(IMA "/ascii_runtime_measurements", "r");

	if (!f)
		fail(IMA "/ascii_runtime_measurements: %s", strerror(errno));
	snprintf(tail, sizeof(tail), " %s\n", path);
	while (fgets(line, sizeof(line), f)) {
		size_t l = strlen(line), t = strlen(tail);

		if (l >= t && !strcmp(line + l - t, tail)) {
			free(found);
			found = strdup(line);
		}
	}
	fclose(f);
	return found;
}

static void read_some(const char *path)
{
	char buf[4096];
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		fail("open %s: %s", path, strerror(errno));
	if (read(fd, buf, sizeof(buf)) < 0)
		fail("read %s: %s", path, strerror(errno));
	close(fd);
}

TEST(measure_verity_digest_ngv2)
{
	char *v = test_path("verity-%d", getpid());
	char *p = test_path("plain-%d", getpid());
	char rule[256], want[160], *m;
	unsigned char d[32];
	int fd, err;

	users_run_on_ext4_and_xfs("IMA");
	if (access(IMA "/policy", F_OK))
		fail(IMA "/policy: %s (CONFIG_IMA?)", strerror(errno));

	make_file(v, 50000, 71);
	make_file(p, 50000, 72);
	CHECK_OK(chown(v, owner(), 0));
	CHECK_OK(chown(p, owner(), 0));
	err = sig_enable(v, NULL, 0);
	if (err)
		fail("enable %s: %s", v, errno_name(err));
	sig_measure(v, d);
	if (find_measurement(v) || find_measurement(p))
		fail("measured before the policy rule was loaded");

	snprintf(rule, sizeof(rule),
		 "measure func=FILE_CHECK fowner=%d digest_type=verity template=ima-ngv2\n",
		 owner());
	fd = open(IMA "/policy", O_WRONLY);
	if (fd < 0)
		fail("open " IMA "/policy: %s (CONFIG_IMA_WRITE_POLICY?)",
		     strerror(errno));
	if (write(fd, rule, strlen(rule)) != (ssize_t)strlen(rule))
		fail("writing the rule \"%.*s\" to " IMA "/policy: %s",
		     (int)strlen(rule) - 1, rule, strerror(errno));
	close(fd);

	read_some(v);
	read_some(p);
	m = find_measurement(v);
	if (!m)
		fail("no measurement of %s in " IMA "/ascii_runtime_measurements", v);
	note("%s", m);
	snprintf(want, sizeof(want), " ima-ngv2 verity:sha256:%s ", hex(d, 32));
	if (!strstr(m, want))
		fail("measurement \"%s\": want \"%s\" (FS_IOC_MEASURE_VERITY)", m, want);
	if ((m = find_measurement(p)))
		fail("a file without verity was measured under digest_type=verity: %s", m);
}
