// SPDX-License-Identifier: GPL-2.0
/*
 * Differential compatibility suite (issue 5): ours against the pristine
 * ("upstream") 6.12 fs-verity and against the host's fsverity-utils.
 *
 * The corpus is fixed: "compat-host corpus" (this file built for the host
 * with -DCOMPAT_HOST) lists it, scripts/compat.sh writes every file on the
 * host with the same generator, computes "fsverity digest" (digest, Merkle
 * tree, descriptor) and signs some of them, and hands the manifest to the
 * guest on /dev/vde (a tar).  Three boots share the same disks:
 *
 *   fsv.compat=1  upstream  enable set A                     (enable_upstream)
 *   fsv.compat=2  ours      read set A                       (upstream_files_under_ours)
 *                           enable set B while others read
 *                           and mmap set A                   (concurrent_enable_ours)
 *                           remount, read B and A again      (corpus_under_ours)
 *   fsv.compat=3  upstream  read set B                       (ours_files_under_upstream)
 *
 * That is on ext4, ext4-1k, f2fs and btrfs ("three-way").  XFS (xfs,
 * xfs-1k) is two-way, ours against the host only: mainline 6.12 has no XFS
 * fs-verity and mounts a verity XFS read-only, so there is no set A and
 * the tests that need upstream do not run there (not even as SKIPs).  Ours
 * enables set B while others read its files already enabled
 * (concurrent_enable_ours) and reads it after a remount
 * (corpus_under_ours).  Its corpus is its own: the same kinds of sizes,
 * block sizes (1K only on xfs-1k), algorithms, salts and signatures, with
 * tree level boundaries up to 16 MiB + 1.
 *
 * "read" = open, STATX_ATTR_VERITY and FS_VERITY_FL, every byte equal to the
 * generator's, FS_IOC_MEASURE_VERITY equal to the host's digest, and
 * FS_IOC_READ_VERITY_METADATA (tree, descriptor, signature) equal to the
 * host's.  Mainline 6.12's btrfs does not wire that ioctl (our series does,
 * kernel/patches/btrfs-verity-read-metadata.patch): a btrfs file whose
 * metadata reads all answer ENOTTY has metadata "not comparable", counted
 * apart and not a disagreement; any other answer is compared as elsewhere.
 * Every measurement also goes to /tmp/compat/out.txt, copied to /dev/vde at
 * OUT_OFFSET, so that the host compares the kernels with each other as well.
 *
 * Without fsv.compat= on the kernel command line the program does nothing
 * (the normal per-filesystem loop runs it too).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* ---------------- shared by host and guest: the corpus ---------------- */

#define MIB (1ULL << 20)
#define MAX_SIZE (64 * MIB)	/* (the boundaries there go to +1 byte) */
#define TWO_WAY_MAX_SIZE (16 * MIB + 1)
#define SPARSE_EXT 16384	/* sparse files: data or hole per 16 KiB */
#define CORPUS_SEED 0x5eedc0de2025ULL

static uint64_t sm64(uint64_t x)	/* splitmix64 finalizer */
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* the data word at word index i of a random stream with this seed */
static uint64_t word(uint64_t seed, uint64_t i)
{
	return sm64(sm64(seed) ^ i);
}

/*
 * Patterns: r = random bytes, z = zeros (written), h = one big hole,
 * s = sparse: SPARSE_EXT-sized extents, each data (random) or hole.
 */
static int sparse_is_data(uint64_t seed, uint64_t ext)
{
	return sm64(seed ^ 0x5a5a5a5aULL ^ (ext * 0x100000001b3ULL)) % 3 == 0;
}

/* the bytes [off, off+len) of a corpus file; any offset, any length */
static void gen(char pat, uint64_t seed, uint64_t off, unsigned char *buf,
		size_t len)
{
	while (len) {
		uint64_t i = off / 8, w;
		size_t k = off % 8, n = 8 - k;

		if (n > len)
			n = len;
		if (pat == 'z' || pat == 'h' ||
		    (pat == 's' && !sparse_is_data(seed, off / SPARSE_EXT)))
			w = 0;
		else
			w = word(seed, i);
		for (size_t j = 0; j < n; j++)
			buf[j] = (unsigned char)(w >> (8 * (k + j)));
		buf += n;
		off += n;
		len -= n;
	}
}

/*
 * The guest runner's filesystems.  The first THREE_WAY have fs-verity in
 * both kernels: ours against upstream against the host.  The others are
 * two-way: mainline 6.12 has no XFS fs-verity (it mounts a verity XFS
 * read-only), so their corpus is enabled and read by ours alone and
 * compared with the host's fsverity-utils.  scripts/compat.sh has the same
 * split (two_way_fs).
 */
static const char *const all_fs[] = {
	"ext4", "ext4-1k", "f2fs", "btrfs", "xfs", "xfs-1k"
};
#define NFS (int)(sizeof(all_fs) / sizeof(all_fs[0]))
#define THREE_WAY 4

static inline int two_way(const char *fs)
{
	for (int f = THREE_WAY; f < NFS; f++)
		if (!strcmp(fs, all_fs[f]))
			return 1;
	return 0;
}

struct ent {
	char name[16];
	char fs[8];
	uint64_t size;
	char pat;
	uint64_t seed;
	int alg;		/* 256 or 512 */
	int bs;
	int salt_len;
	unsigned char salt[32];
	int sig;
	/* from the host (guest only) */
	char digest[129], tree_sha[65], desc_sha[65], content_sha[65];
};

#ifdef COMPAT_HOST
/* ---------------- host: list the corpus, write its files ---------------- */

static uint64_t crng;

static uint64_t rnd(void)
{
	crng = sm64(crng);
	return crng;
}

static int nents;

static void emit(const char *fs, uint64_t size, char pat, int alg, int bs)
{
	static const int salts[] = { 0, 0, 0, 1, 7, 16, 31, 32 };
	int salt_len = salts[rnd() % 8], sig = rnd() % 8 == 0;

	printf("c%03d %s %" PRIu64 " %c %" PRIu64 " %d %d ", nents++, fs, size,
	       pat, (uint64_t)(rnd() & 0xffffffffffffULL), alg, bs);
	if (!salt_len)
		printf("-");
	for (int i = 0; i < salt_len; i++)
		printf("%02x", (unsigned)(rnd() & 0xff));
	printf(" %d\n", sig);
}

static int fs_allows(const char *fs, int bs)
{
	size_t n = strlen(fs);

	/* Merkle block <= fs block (and page): ext4-1k and xfs-1k only 1K */
	return bs == 1024 || n < 3 || strcmp(fs + n - 3, "-1k");
}

static char small_pat(void)
{
	static const char p[] = "rrrrrrzs";

	return p[rnd() % 8];
}

/*
 * One part of the corpus, on the filesystems fss[0..nfs): for both hash
 * algorithms and the three block sizes, the sizes around a block and
 * around every Merkle tree level (up to max_size), then nrandom
 * unremarkable sizes.
 */
static void corpus_part(const char *const *fss, int nfs, uint64_t max_size,
			int nrandom)
{
	static const int bss[] = { 1024, 2048, 4096 };
	int bigfs = 0;

	for (int a = 0; a < 2; a++) {
		int alg = a ? 512 : 256, ds = a ? 64 : 32;

		for (int b = 0; b < 3; b++) {
			int bs = bss[b];
			uint64_t arity = bs / ds, sizes[64];
			int n = 0;

			sizes[n++] = 0;
			sizes[n++] = 1;
			sizes[n++] = bs - 1;
			sizes[n++] = bs;
			sizes[n++] = bs + 1;
			for (uint64_t lv = arity * bs; lv <= MAX_SIZE; lv *= arity) {
				/* the last size with k levels, the first with k+1 */
				sizes[n++] = lv - 1;
				sizes[n++] = lv;
				sizes[n++] = lv + 1;
			}
			for (int i = 0; i < n; i++) {
				uint64_t sz = sizes[i];

				if (sz > max_size)
					continue;
				if (sz <= MIB) {
					/* small: on every fs that takes bs */
					for (int f = 0; f < nfs; f++)
						if (fs_allows(fss[f], bs))
							emit(fss[f], sz, small_pat(), alg, bs);
					continue;
				}
				/*
				 * Big: once, on the next fs that takes bs.  The
				 * 32-64 MiB ones are holes or sparse (cheap to
				 * write; the kernels still hash every block), but
				 * one 64 MiB file is random; the others sparse or
				 * random.
				 */
				const char *fs;
				char pat;

				do {
					fs = fss[bigfs++ % nfs];
				} while (!fs_allows(fs, bs));
				if (sz >= 32 * MIB)
					pat = (alg == 256 && bs == 4096 && sz == 64 * MIB) ? 'r' :
					      (sz & 1) ? 's' : 'h';
				else
					pat = (sz & 1) ? 's' : 'r';
				emit(fs, sz, pat, alg, bs);
			}
		}
	}
	/* and some unremarkable sizes up to 2 MiB, on every fs */
	for (int i = 0; i < nrandom; i++) {
		const char *fs = fss[i % nfs];
		int bs = fs_allows(fs, 4096) ? bss[rnd() % 3] : 1024;
		uint64_t sz = rnd() % (1ULL << (10 + rnd() % 12));

		emit(fs, sz, small_pat(), rnd() % 3 ? 256 : 512, bs);
	}
}

static void corpus(void)
{
	crng = CORPUS_SEED;
	/* three-way: the boundaries up to 64 MiB + 1 (the big files spread) */
	corpus_part(all_fs, THREE_WAY, MAX_SIZE + 1, 40);
	/*
	 * two-way, after it (the three-way part stays as it was): ours alone
	 * enables and reads these, in one boot, so the Merkle tree level
	 * boundaries only up to 16 MiB + 1 (still 4 levels: SHA-512, 1K)
	 */
	corpus_part(all_fs + THREE_WAY, NFS - THREE_WAY, TWO_WAY_MAX_SIZE, 20);
}

static int write_corpus_file(const char *path, uint64_t size, char pat,
			     uint64_t seed)
{
	static unsigned char buf[1 << 20];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || ftruncate(fd, size))
		return perror(path), 1;
	for (uint64_t off = 0; off < size; off += sizeof(buf)) {
		size_t n = size - off < sizeof(buf) ? size - off : sizeof(buf);

		if (pat == 'h')
			break;
		gen(pat, seed, off, buf, n);
		if (pwrite(fd, buf, n, off) != (ssize_t)n)
			return perror(path), 1;
	}
	return close(fd) ? perror(path), 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "corpus")) {
		corpus();
		return 0;
	}
	if (argc == 6 && !strcmp(argv[1], "write"))
		return write_corpus_file(argv[2], strtoull(argv[3], NULL, 10),
					 argv[4][0], strtoull(argv[5], NULL, 10));
	fprintf(stderr, "usage: compat-host corpus | write PATH SIZE PATTERN SEED\n");
	return 2;
}

#else
/* ------------------------------- guest ------------------------------- */

#include <linux/fs.h>
#include <linux/fsverity.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "lib.h"

#ifndef STATX_ATTR_VERITY
#define STATX_ATTR_VERITY 0x00100000
#endif

#define DIR_TMP "/tmp/compat"
#define OUT_OFFSET (768 * MIB)	/* on /dev/vde: guest -> host results */
#define MAX_NOTES 25

/* fsv.compat=<phase> from /proc/cmdline; 0 if absent */
static int phase;

__attribute__((constructor(101))) static void compat_phase(void)
{
	char buf[4096], *p;
	int fd = open("/proc/cmdline", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	p = strstr(buf, "fsv.compat=");
	if (p)
		phase = atoi(p + strlen("fsv.compat="));
	if (!phase)
		exit(0);	/* not a compat boot: not our business */
}

/* ---- the manifest ---- */
static struct ent *ents;
static int nents;

static int unhex(const char *s, unsigned char *out, int max)
{
	int n = 0;

	if (!strcmp(s, "-"))
		return 0;
	while (s[0] && s[1] && n < max) {
		unsigned int v;

		if (sscanf(s, "%2x", &v) != 1)
			break;
		out[n++] = v;
		s += 2;
	}
	return n;
}

static void load_manifest(void)
{
	char line[1024], salthex[80], out[1024];
	FILE *f;

	if (access(DIR_TMP "/manifest.txt", F_OK)) {
		/* once per boot: unpack what the host put on /dev/vde */
		if (run_cmd(out, sizeof(out), "mkdir -p " DIR_TMP " && "
			    "tar -xf /dev/vde -C " DIR_TMP))
			fail("tar -xf /dev/vde: %s", out);
	}
	f = fopen(DIR_TMP "/manifest.txt", "r");
	if (!f)
		fail(DIR_TMP "/manifest.txt: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		struct ent e;

		memset(&e, 0, sizeof(e));
		if (line[0] == '#')
			continue;
		if (sscanf(line, "%15s %7s %" SCNu64 " %c %" SCNu64 " %d %d %79s %d "
			   "%128s %64s %64s %64s", e.name, e.fs, &e.size, &e.pat,
			   &e.seed, &e.alg, &e.bs, salthex, &e.sig, e.digest,
			   e.tree_sha, e.desc_sha, e.content_sha) != 13)
			fail("manifest: bad line: %s", line);
		if (strcmp(e.fs, env.fs))
			continue;
		e.salt_len = unhex(salthex, e.salt, 32);
		ents = realloc(ents, (nents + 1) * sizeof(e));
		if (!ents)
			fail("out of memory");
		ents[nents++] = e;
	}
	fclose(f);
	if (!nents)
		skip("no corpus files for %s in the manifest", env.fs);
}

/* ---- results: lines for the host, copied to /dev/vde ---- */
static void out_rec(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out_rec(const char *fmt, ...)
{
	FILE *f = fopen(DIR_TMP "/out.txt", "a");
	va_list ap;

	if (!f)
		fail(DIR_TMP "/out.txt: %s", strerror(errno));
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

/* the whole of out.txt (it only grows) to /dev/vde at OUT_OFFSET */
static void out_flush(void)
{
	static char buf[4 << 20];
	int in = open(DIR_TMP "/out.txt", O_RDONLY), dev;
	ssize_t n;

	if (in < 0)
		return;
	n = read(in, buf, sizeof(buf));
	close(in);
	dev = open("/dev/vde", O_WRONLY);
	if (n <= 0 || dev < 0)
		fail("/dev/vde: cannot write the results: %s", strerror(errno));
	if (pwrite(dev, buf, n, OUT_OFFSET) != n || fsync(dev))
		fail("/dev/vde: write: %s", strerror(errno));
	close(dev);
}

/* ---- per-file operations ---- */
static const char *set_dir(char set)
{
	static char d[2][256];
	char *p = d[set == 'B'];

	snprintf(p, 256, "%s/compat-%c", env.mnt, set);
	return p;
}

static char *ent_path(const struct ent *e, char set)
{
	char *p;

	if (asprintf(&p, "%s/%s", set_dir(set), e->name) < 0)
		fail("out of memory");
	return p;
}

static void write_all_at(int fd, const unsigned char *buf, size_t len,
			 uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fail("pwrite: %s", strerror(errno));
		buf += n;
		off += n;
		len -= n;
	}
}

/* the file with the corpus bytes (holes where the pattern has them) */
static void create_file(const struct ent *e, const char *path)
{
	static unsigned char buf[1 << 20];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		fail("create %s: %s", path, strerror(errno));
	if (ftruncate(fd, e->size))
		fail("ftruncate %s: %s", path, strerror(errno));
	if (e->pat == 'r' || e->pat == 'z') {
		for (uint64_t off = 0; off < e->size; off += sizeof(buf)) {
			size_t n = e->size - off < sizeof(buf) ? e->size - off : sizeof(buf);

			gen(e->pat, e->seed, off, buf, n);
			write_all_at(fd, buf, n, off);
		}
	} else if (e->pat == 's') {
		for (uint64_t off = 0; off < e->size; off += SPARSE_EXT) {
			size_t n = e->size - off < SPARSE_EXT ? e->size - off : SPARSE_EXT;

			if (!sparse_is_data(e->seed, off / SPARSE_EXT))
				continue;
			gen(e->pat, e->seed, off, buf, n);
			write_all_at(fd, buf, n, off);
		}
	}
	if (close(fd))
		fail("close %s: %s", path, strerror(errno));
}

/* signature bytes from the host (sig/<name>), or 0 */
static size_t load_sig(const struct ent *e, unsigned char *sig, size_t max)
{
	char p[256];
	ssize_t n;
	int fd;

	if (!e->sig)
		return 0;
	snprintf(p, sizeof(p), DIR_TMP "/sig/%s", e->name);
	fd = open(p, O_RDONLY);
	if (fd < 0)
		fail("%s: %s", p, strerror(errno));
	n = read(fd, sig, max);
	close(fd);
	if (n <= 0)
		fail("%s: empty", p);
	return n;
}

/* the host's certificate in .fs-verity, once per boot */
static void trust_cert(void)
{
	char out[1024];

	if (!access(DIR_TMP "/cert-added", F_OK))
		return;
	if (run_cmd(out, sizeof(out),
		    "keyctl padd asymmetric '' %%keyring:.fs-verity < " DIR_TMP
		    "/cert.der && touch " DIR_TMP "/cert-added"))
		fail("keyctl padd asymmetric '' %%keyring:.fs-verity: %s", out);
}

/* what one kernel says about one file */
struct meas {
	char err[96];		/* "" = every step worked */
	char digest[129], tree_sha[65], desc_sha[65];
	int sig_ok;		/* signature read back == host's (or none) */
	unsigned long long ino;
};

static void seterr(struct meas *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void seterr(struct meas *m, const char *fmt, ...)
{
	va_list ap;

	if (m->err[0])
		return;		/* keep the first */
	va_start(ap, fmt);
	vsnprintf(m->err, sizeof(m->err), fmt, ap);
	va_end(ap);
	for (char *p = m->err; *p; p++)
		if (*p == ' ')
			*p = '_';
}

/* sha256 of one kind of verity metadata; "ENOTTY" etc. on error */
static void md_hash(int fd, int type, char *out, unsigned char *whole, size_t *wlen)
{
	static unsigned char buf[1 << 16];
	unsigned char digest[32];
	struct sha256 s;
	uint64_t off = 0;

	sha256_init(&s);
	if (wlen)
		*wlen = 0;
	for (;;) {
		struct fsverity_read_metadata_arg arg = {
			.metadata_type = type,
			.offset = off,
			.length = sizeof(buf),
			.buf_ptr = (uintptr_t)buf,
		};
		long r = ioctl(fd, FS_IOC_READ_VERITY_METADATA, &arg);

		if (r < 0) {
			strcpy(out, errno_name(errno));
			return;
		}
		if (r == 0)
			break;
		sha256_update(&s, buf, r);
		if (whole && *wlen + r <= 16384) {
			memcpy(whole + *wlen, buf, r);
			*wlen += r;
		}
		off += r;
	}
	sha256_final(&s, digest);
	strcpy(out, hex(digest, sizeof(digest)));
}

/*
 * Metadata that cannot be compared: a kernel without
 * FS_IOC_READ_VERITY_METADATA on btrfs (mainline 6.12) answers ENOTTY to
 * every read.  One ENOTTY next to an answer is no such kernel: compared.
 */
static int md_not_comparable(const struct meas *m)
{
	return !strcmp(env.fs, "btrfs") && !strcmp(m->tree_sha, "ENOTTY") &&
	       !strcmp(m->desc_sha, "ENOTTY");
}

/* measure + metadata (+ content when check_data) of an open verity file */
static void examine(const struct ent *e, const char *path, int check_data,
		    struct meas *m)
{
	static unsigned char have[1 << 20], want[1 << 20];
	unsigned char d[64], sig[16384], hsig[16384];
	size_t slen = 0, hlen;
	int fd, alg = 0, size = 0, err, flags = 0;
	struct statx stx;

	memset(m, 0, sizeof(*m));
	memset(&stx, 0, sizeof(stx));
	strcpy(m->digest, "-");
	strcpy(m->tree_sha, "-");
	strcpy(m->desc_sha, "-");
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		seterr(m, "open:%s", errno_name(errno));
		return;
	}
	if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx))
		seterr(m, "statx:%s", errno_name(errno));
	else if (!(stx.stx_attributes & STATX_ATTR_VERITY))
		seterr(m, "no_STATX_ATTR_VERITY");
	else if (stx.stx_size != e->size)
		seterr(m, "size_%llu", (unsigned long long)stx.stx_size);
	m->ino = stx.stx_ino;
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags))
		seterr(m, "GETFLAGS:%s", errno_name(errno));
	else if (!(flags & FS_VERITY_FL))
		seterr(m, "no_FS_VERITY_FL");
	err = measure_verity(fd, d, &alg, &size);
	if (err)
		seterr(m, "MEASURE:%s", errno_name(err));
	else if (alg != (e->alg == 256 ? FS_VERITY_HASH_ALG_SHA256 : FS_VERITY_HASH_ALG_SHA512) ||
		 size != e->alg / 8)
		seterr(m, "MEASURE:alg_%d_size_%d", alg, size);
	else
		strcpy(m->digest, hex(d, size));
	md_hash(fd, FS_VERITY_METADATA_TYPE_MERKLE_TREE, m->tree_sha, NULL, NULL);
	md_hash(fd, FS_VERITY_METADATA_TYPE_DESCRIPTOR, m->desc_sha, NULL, NULL);
	{
		char sha[65];

		md_hash(fd, FS_VERITY_METADATA_TYPE_SIGNATURE, sha, sig, &slen);
		hlen = load_sig(e, hsig, sizeof(hsig));
		if (!strcmp(sha, "ENOTTY"))	/* the whole ioctl missing only */
			m->sig_ok = md_not_comparable(m);
		else if (!e->sig)
			m->sig_ok = !strcmp(sha, "ENODATA");
		else
			m->sig_ok = slen == hlen && !memcmp(sig, hsig, hlen);
	}
	if (check_data) {
		uint64_t off = 0;

		for (;;) {
			ssize_t n = read(fd, have, sizeof(have));

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				seterr(m, "read@%llu:%s", (unsigned long long)off,
				       errno_name(errno));
				break;
			}
			if (n == 0)
				break;
			if (off + n > e->size) {
				seterr(m, "read_past_EOF");
				break;
			}
			gen(e->pat, e->seed, off, want, n);
			if (memcmp(have, want, n)) {
				seterr(m, "data_differs_in_[%llu,+%zd)",
				       (unsigned long long)off, n);
				break;
			}
			off += n;
		}
		if (off != e->size)
			seterr(m, "short_read_%llu", (unsigned long long)off);
	}
	close(fd);
}

/* does this measurement agree with the host's? ("" if it does) */
static const char *disagreement(const struct ent *e, const struct meas *m)
{
	static char why[512];

	if (m->err[0])
		return m->err;
	why[0] = '\0';
	if (strcmp(m->digest, e->digest))
		snprintf(why, sizeof(why), "digest %s, host %s", m->digest, e->digest);
	else if (!md_not_comparable(m)) {
		if (strcmp(m->tree_sha, e->tree_sha))
			snprintf(why, sizeof(why), "Merkle tree sha256 %s, host %s",
				 m->tree_sha, e->tree_sha);
		else if (strcmp(m->desc_sha, e->desc_sha))
			snprintf(why, sizeof(why), "descriptor sha256 %s, host %s",
				 m->desc_sha, e->desc_sha);
	}
	if (!why[0] && !m->sig_ok)
		snprintf(why, sizeof(why), "signature read back differs from the host's");
	return why;
}

static const char *ent_desc(const struct ent *e)
{
	static char s[128];

	snprintf(s, sizeof(s), "%s(size %" PRIu64 " %c sha%d bs %d salt %d%s)",
		 e->name, e->size, e->pat, e->alg, e->bs, e->salt_len,
		 e->sig ? " signed" : "");
	return s;
}

struct tally {
	int files, agree, disagree, notes;
	int not_comparable;	/* agreeing files whose metadata said ENOTTY */
};

static void record(const char *tag, const struct ent *e, const struct meas *m,
		   struct tally *t)
{
	const char *why = disagreement(e, m);

	out_rec("%s %s %s %llu %s %s %s %s %d\n", tag, env.fs, e->name, m->ino,
		m->err[0] ? m->err : "ok", m->digest, m->tree_sha, m->desc_sha,
		m->sig_ok);
	t->files++;
	if (!why[0]) {
		t->agree++;
		if (md_not_comparable(m))
			t->not_comparable++;
		return;
	}
	t->disagree++;
	if (t->notes++ < MAX_NOTES)
		note("%s: %s: %s", tag, ent_desc(e), why);
}

static void verdict(const char *what, struct tally *t)
{
	note("%s: %s: %d files, %d agreeing, %d disagreeing", env.fs, what,
	     t->files, t->agree, t->disagree);
	if (t->not_comparable)
		note("%s: %s: metadata not comparable in %d of the agreeing files "
		     "(ENOTTY: this kernel's btrfs has no FS_IOC_READ_VERITY_METADATA)",
		     env.fs, what, t->not_comparable);
	out_flush();
	if (t->disagree)
		fail("%d of %d files disagree with the host's fsverity digest "
		     "(details above)", t->disagree, t->files);
}

/* write + FS_IOC_ENABLE_VERITY one file; "" or the error */
static const char *enable_one(const struct ent *e, char set)
{
	static char err[128];
	unsigned char sig[16384];
	size_t slen = load_sig(e, sig, sizeof(sig));
	char *path = ent_path(e, set);
	int fd, r, lbs = 0;

	while ((1 << lbs) < e->bs)
		lbs++;
	unlink(path);
	create_file(e, path);
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		snprintf(err, sizeof(err), "open:%s", errno_name(errno));
		free(path);
		return err;
	}
	r = enable_verity(fd, e->alg == 256 ? FS_VERITY_HASH_ALG_SHA256 :
			  FS_VERITY_HASH_ALG_SHA512, lbs, e->salt, e->salt_len,
			  slen ? sig : NULL, slen);
	close(fd);
	free(path);
	if (r) {
		snprintf(err, sizeof(err), "ENABLE:%s", errno_name(r));
		return err;
	}
	return "";
}

static void make_set_dir(char set)
{
	const char *d = set_dir(set);

	if (mkdir(d, 0755) && errno != EEXIST)
		fail("mkdir %s: %s", d, strerror(errno));
}

/* examine every file of a set; tag names the kernel and the set */
static void examine_set(const char *tag, char set, int check_data, struct tally *t)
{
	for (int i = 0; i < nents; i++) {
		char *path = ent_path(&ents[i], set);
		struct meas m;

		examine(&ents[i], path, check_data, &m);
		record(tag, &ents[i], &m, t);
		free(path);
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t corpus_bytes(void)
{
	uint64_t b = 0;

	for (int i = 0; i < nents; i++)
		b += ents[i].size;
	return b;
}

/* ---- phase 1: upstream enables set A ---- */
TEST__(enable_upstream, 1, 900)
{
	struct tally t = { 0 };
	double t0 = now_s();

	load_manifest();
	trust_cert();
	make_set_dir('A');
	for (int i = 0; i < nents; i++) {
		const char *err = enable_one(&ents[i], 'A');
		struct meas m;
		char *path = ent_path(&ents[i], 'A');

		examine(&ents[i], path, 0, &m);
		if (err[0]) {
			memset(m.err, 0, sizeof(m.err));
			seterr(&m, "%s", err);
		}
		record("up-enable-A", &ents[i], &m, &t);
		free(path);
	}
	note("%d files, %.1f MiB in %.0f s", nents, corpus_bytes() / 1048576.0,
	     now_s() - t0);
	verdict("enabled under upstream", &t);
}

/* ---- phase 2: ours reads A, enables B concurrently, reads both ---- */
TEST__(upstream_files_under_ours, 2, 900)
{
	struct tally t = { 0 };
	double t0 = now_s();

	load_manifest();
	trust_cert();
	examine_set("ours-read-A", 'A', 1, &t);
	note("%.0f s", now_s() - t0);
	verdict("enabled under upstream, read under ours", &t);
}

#define ENABLERS 3
#define READERS 2

/*
 * Reader r: read() (even r) or mmap (odd r) set A until told to stop.  On
 * a two-way filesystem there is no set A (upstream cannot enable there):
 * the files of set B that are verity files already, while the enablers
 * make the others.
 */
static void reader(int r, volatile int *stop)
{
	static unsigned char buf[1 << 20], want[1 << 20];
	char set = two_way(env.fs) ? 'B' : 'A';
	int passes = 0, files = 0;

	while (!*stop) {
		for (int i = 0; i < nents && !*stop; i++) {
			const struct ent *e = &ents[(i * 7 + r) % nents];
			char *path = ent_path(e, set);
			int fd = open(path, O_RDONLY), flags = 0;

			if (set == 'B' && fd < 0 && errno == ENOENT) {
				free(path);	/* not made yet */
				continue;
			}
			if (fd < 0)
				fail("reader: open %s: %s", path, strerror(errno));
			if (set == 'B') {
				if (ioctl(fd, FS_IOC_GETFLAGS, &flags))
					fail("reader: FS_IOC_GETFLAGS %s: %s", path,
					     strerror(errno));
				if (!(flags & FS_VERITY_FL)) {
					close(fd);	/* not enabled yet */
					free(path);
					continue;
				}
			}
			files++;
			if (r % 2 && e->size) {
				unsigned char *p = mmap(NULL, e->size, PROT_READ,
							MAP_SHARED, fd, 0);

				if (p == MAP_FAILED)
					fail("reader: mmap %s: %s", path, strerror(errno));
				for (uint64_t off = 0; off < e->size && !*stop; off += sizeof(want)) {
					size_t n = e->size - off < sizeof(want) ? e->size - off : sizeof(want);

					gen(e->pat, e->seed, off, want, n);
					if (memcmp(p + off, want, n))
						fail("reader: mmap of %s differs in [%llu,+%zu)",
						     ent_desc(e), (unsigned long long)off, n);
				}
				munmap(p, e->size);
			} else {
				uint64_t off = 0;
				ssize_t n;

				while (!*stop && (n = read(fd, buf, sizeof(buf))) > 0) {
					gen(e->pat, e->seed, off, want, n);
					if (memcmp(buf, want, n))
						fail("reader: read of %s differs in [%llu,+%zd)",
						     ent_desc(e), (unsigned long long)off, n);
					off += n;
				}
				if (n < 0)
					fail("reader: read %s: %s", path, strerror(errno));
			}
			close(fd);
			free(path);
		}
		passes++;
	}
	printf("# %s: reader %d (%s): %d passes over set %c, %d files read\n",
	       test_name, r, r % 2 ? "mmap" : "read", passes, set, files);
	fflush(stdout);
}

TEST__(concurrent_enable_ours, 2, 900)
{
	volatile int *stop = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t rd[READERS], en[ENABLERS];
	int bad = 0, status;
	char failmsg[512] = "";
	struct tally t = { 0 };
	double t0 = now_s();

	if (stop == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	*stop = 0;
	load_manifest();
	trust_cert();
	make_set_dir('B');
	fflush(stdout);
	for (int r = 0; r < READERS; r++) {
		rd[r] = fork();
		if (rd[r] < 0)
			fail("fork: %s", strerror(errno));
		if (rd[r] == 0) {
			reader(r, stop);
			_exit(0);
		}
	}
	/* enabler w takes every ENABLERS-th file; results in enabled-<w> */
	for (int w = 0; w < ENABLERS; w++) {
		en[w] = fork();
		if (en[w] < 0)
			fail("fork: %s", strerror(errno));
		if (en[w] == 0) {
			char p[64];
			FILE *f;

			snprintf(p, sizeof(p), DIR_TMP "/enabled-%s-%d", env.fs, w);
			f = fopen(p, "w");
			if (!f)
				fail("%s: %s", p, strerror(errno));
			for (int i = w; i < nents; i += ENABLERS) {
				const char *err = enable_one(&ents[i], 'B');

				fprintf(f, "%d %s\n", i, err[0] ? err : "ok");
				fflush(f);
			}
			fclose(f);
			_exit(0);
		}
	}
	for (int w = 0; w < ENABLERS; w++) {
		while (waitpid(en[w], &status, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			bad++;
			snprintf(failmsg, sizeof(failmsg), "enabler %d died (status 0x%x)",
				 w, status);
		}
	}
	*stop = 1;
	for (int r = 0; r < READERS; r++) {
		while (waitpid(rd[r], &status, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			bad++;
			snprintf(failmsg, sizeof(failmsg),
				 "reader %d failed (status 0x%x; its reason is above)",
				 r, status);
		}
	}
	/* what each enable said, then the measurements right after it */
	for (int w = 0; w < ENABLERS; w++) {
		char p[64], line[256];
		FILE *f;

		snprintf(p, sizeof(p), DIR_TMP "/enabled-%s-%d", env.fs, w);
		f = fopen(p, "r");
		if (!f)
			fail("%s: %s", p, strerror(errno));
		while (fgets(line, sizeof(line), f)) {
			char err[128];
			int i;
			struct meas m;
			char *path;

			if (sscanf(line, "%d %127s", &i, err) != 2 || i < 0 || i >= nents)
				continue;
			path = ent_path(&ents[i], 'B');
			examine(&ents[i], path, 0, &m);
			if (strcmp(err, "ok")) {
				memset(m.err, 0, sizeof(m.err));
				seterr(&m, "%s", err);
			}
			record("ours-enable-B", &ents[i], &m, &t);
			free(path);
		}
		fclose(f);
	}
	if (t.files != nents) {
		bad++;
		snprintf(failmsg, sizeof(failmsg), "only %d of %d files were enabled",
			 t.files, nents);
	}
	note("%d enablers, %d readers: %.0f s", ENABLERS, READERS, now_s() - t0);
	if (bad) {
		out_flush();
		fail("%s", failmsg);
	}
	verdict("enabled under ours (concurrently)", &t);
}

TEST__(corpus_under_ours, 2, 900)
{
	struct tally t = { 0 };
	double t0 = now_s();

	load_manifest();
	/* a fresh mount: nothing of the files is cached any more */
	fs_unmount();
	drop_caches();
	fs_mount();
	examine_set("ours-read-B", 'B', 1, &t);
	if (!two_way(env.fs))	/* no set A there */
		examine_set("ours-reread-A", 'A', 0, &t);
	note("%.0f s", now_s() - t0);
	verdict(two_way(env.fs) ? "set B read under ours after remount" :
		"whole corpus (B read, A measured) under ours after remount", &t);
}

/* ---- phase 3: upstream reads B ---- */
TEST__(ours_files_under_upstream, 3, 900)
{
	struct tally t = { 0 };
	double t0 = now_s();

	load_manifest();
	trust_cert();
	examine_set("up-read-B", 'B', 1, &t);
	note("%.0f s", now_s() - t0);
	verdict("enabled under ours, read under upstream", &t);
}

/*
 * On a two-way filesystem (mainline 6.12 has no XFS fs-verity) the tests
 * that need upstream's fs-verity are no tests of any boot: no RUN, no
 * verdict, rather than a SKIP, as nothing of ours is missing there.  Ours
 * still enables, reads and measures the corpus (concurrent_enable_ours,
 * corpus_under_ours), and the host compares it with its own digests.
 */
__attribute__((constructor)) static void no_upstream_tests_on_two_way_fs(void)
{
	const char *fs = getenv("FS");

	if (!fs || !two_way(fs))
		return;
	/* (test_case_<name>: the struct TEST__() defines, lib.h) */
	test_case_enable_upstream.boot = 0;
	test_case_upstream_files_under_ours.boot = 0;
	test_case_ours_files_under_upstream.boot = 0;
}
#endif
