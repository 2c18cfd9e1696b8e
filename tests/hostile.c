// SPDX-License-Identifier: GPL-2.0
/*
 * Hostile metadata: with the filesystem unmounted, change bytes of the
 * verity metadata of a set of verity files on the raw device, mount, and
 * use every file: open, FS_IOC_MEASURE_VERITY, FS_IOC_READ_VERITY_METADATA,
 * read() and mmap().  Every call must fail cleanly or give correct results:
 * data reads either fail or return the file's exact bytes, a measured digest
 * is the hash of the descriptor now on disk, read metadata is what is on
 * disk, and damage to a Merkle tree block never goes unnoticed.  Then the
 * original bytes go back and the next round mutates again.  The host runner
 * fails the test on any kernel splat.
 *
 * What gets mutated, one case per file per round:
 *  - random bytes of the 256-byte descriptor;
 *  - its fields set to impossible or edge values (version, hash algorithm,
 *    log_blocksize, salt_size, sig_size, data_size, reserved bytes);
 *  - random bytes and whole blocks of the Merkle tree;
 *  - the filesystem's record of where the descriptor is and how big:
 *    ext4's le32 descriptor size in the last metadata block, XFS's be32 one
 *    in the last block of the data fork, f2fs's verity
 *    xattr (version, size, position), btrfs's verity descriptor item (size,
 *    encryption, reserved) - so descriptors appear truncated or oversized.
 * Bytes are found by searching the device for the descriptor and tree that
 * "fsverity digest" computes (ext4/f2fs: block-aligned; btrfs: inside its
 * metadata nodes, whose crc32c we recompute so btrfs itself accepts them).
 *
 * Rounds: fsv.hostile=<n> on the kernel command line; default 13, i.e. 130
 * cases per filesystem in make check (make soak: 100 rounds).
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>

#define NFILES 10
#define MAXCOPY 16	/* btrfs: DUP, and stale CoW copies of a leaf */
#define REF_DIR "/tmp"

/* ---- the files and where their metadata lives ---- */

/* one piece of metadata, possibly stored several times (btrfs DUP) */
struct loc {
	uint64_t off[MAXCOPY];	/* device offsets of its first byte */
	uint64_t unit[MAXCOPY];	/* start of the node holding it (btrfs) */
	int n;
	size_t len;
	size_t meta_off;	/* offset in the tree (tree windows) */
};

struct hfile {
	char *path;
	size_t size;
	int bs;
	unsigned char *data;
	unsigned char desc[256];
	unsigned char *tree;
	size_t tree_size;
	struct loc d;		/* the descriptor */
	struct loc rec;		/* the filesystem's location/size record */
	struct loc *win;	/* pieces of the tree that were found */
	int nwin;
	/* this round */
	unsigned char cur_desc[256];
	unsigned char *cur_tree;
	int desc_changed, tree_changed, rec_changed;
	char what[160];
};

static struct hfile F[NFILES];
static uint32_t fs_bs;		/* filesystem block size */
static uint32_t nodesize;	/* btrfs */
static unsigned char btrfs_fsid[16];
static uint64_t rs;

static uint64_t rnd(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return rs * 0x2545f4914f6cdd1dULL;
}

static bool is_btrfs(void) { return !strcmp(env.fs, "btrfs"); }
static bool is_f2fs(void) { return !strcmp(env.fs, "f2fs"); }
static bool is_ext4(void) { return !strncmp(env.fs, "ext4", 4); }
static bool is_xfs(void) { return !strncmp(env.fs, "xfs", 3); }

static int hostile_rounds(void)
{
	char buf[4096], *p;
	int fd = open("/proc/cmdline", O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return 13;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	p = strstr(buf, "fsv.hostile=");
	return p ? atoi(p + 12) : 13;
}

static uint32_t le32(const unsigned char *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static void put_be32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (24 - 8 * i);
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (8 * i);
}

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = v >> (8 * i);
}

/* is the node at @start (whole, in @node) a btrfs tree block of ours? */
static bool btrfs_node_ok(const unsigned char *node)
{
	return !memcmp(node + 32, btrfs_fsid, 16) &&
	       le32(node) == crc32c(0, node + 32, nodesize - 32);
}

static void add_copy(struct loc *l, uint64_t off, uint64_t unit)
{
	if (l->n < MAXCOPY) {
		l->off[l->n] = off;
		l->unit[l->n] = unit;
	}
	l->n++;
}

/*
 * What to look for: the descriptors and the tree pieces, by the 8 bytes at
 * offset 16 of each (the start of a descriptor is the same for every file).
 */
struct pat {
	uint64_t key;
	const unsigned char *bytes;
	size_t len;
	struct hfile *f;
	struct loc *l;		/* NULL: the descriptor */
	struct pat *next;
};
static struct pat *pat_tab[4096];

static void pat_add(struct hfile *f, struct loc *l, const unsigned char *b,
		    size_t len)
{
	struct pat *p = calloc(1, sizeof(*p));
	int nz = 0;

	for (size_t i = 0; i < len; i++)
		nz += b[i] != 0;
	if (len < 24 || nz < 16)
		return;		/* zero padding would match everywhere */
	CHECK(p);
	memcpy(&p->key, b + 16, 8);
	p->bytes = b;
	p->len = len;
	p->f = f;
	p->l = l;
	p->next = pat_tab[p->key % 4096];
	pat_tab[p->key % 4096] = p;
}

static void match_at(const unsigned char *b, size_t avail, uint64_t devoff,
		     uint64_t node)
{
	uint64_t key;

	if (avail < 24)
		return;
	memcpy(&key, b + 16, 8);
	for (struct pat *p = pat_tab[key % 4096]; p; p = p->next) {
		if (p->key != key || p->len > avail || memcmp(b, p->bytes, p->len))
			continue;
		if (p->l) {
			add_copy(p->l, devoff, node);
			continue;
		}
		add_copy(&p->f->d, devoff, node);
		if (is_btrfs())		/* the descriptor item follows */
			add_copy(&p->f->rec, devoff + 256, node);
		else if (is_ext4() && avail >= fs_bs && le32(b + fs_bs - 4) == 256)
			add_copy(&p->f->rec, devoff + fs_bs - 4, 0);
		/* XFS: be32 size in the last bytes of the data fork's last block */
		else if (is_xfs() && avail >= fs_bs && be32(b + fs_bs - 4) == 256)
			add_copy(&p->f->rec, devoff + fs_bs - 4, 0);
	}
}

/*
 * One pass over the device.  ext4/f2fs: descriptors and tree blocks start on
 * 1 KiB boundaries; the f2fs xattr can be anywhere in a node block.  btrfs:
 * everything is inside metadata nodes, at any byte.
 */
static void locate_all(void)
{
	const size_t chunk = 4 << 20;
	unsigned char *buf = malloc(chunk);
	uint64_t devsize;
	int fd = open(env.dev, O_RDONLY);

	CHECK(buf && fd >= 0);
	CHECK_OK(ioctl(fd, BLKGETSIZE64, &devsize));
	for (int i = 0; i < NFILES; i++) {
		pat_add(&F[i], NULL, F[i].desc, 256);
		for (int w = 0; w < F[i].nwin; w++)
			pat_add(&F[i], &F[i].win[w], F[i].tree + F[i].win[w].meta_off,
				F[i].win[w].len);
	}
	for (uint64_t base = 0; base < devsize; base += chunk) {
		ssize_t n = pread(fd, buf, chunk, base);

		if (n <= 0)
			break;
		if (is_btrfs()) {
			for (size_t o = 0; o + nodesize <= (size_t)n; o += 4096) {
				if (!btrfs_node_ok(buf + o))
					continue;
				for (size_t k = 0; k < nodesize; k++)
					match_at(buf + o + k, nodesize - k,
						 base + o + k, base + o);
				o += nodesize - 4096;
			}
			continue;
		}
		for (size_t o = 0; o < (size_t)n; o += 1024)
			match_at(buf + o, n - o, base + o, 0);
		if (is_f2fs()) {
			/* entry: index 11, name_len 1, value_size 16, "v", value */
			static const unsigned char x[] = {
				11, 1, 16, 0, 'v', 1, 0, 0, 0, 0, 1, 0, 0 };
			unsigned char *p = buf;

			while ((p = memmem(p, n - (p - buf), x, sizeof(x)))) {
				uint64_t pos;

				if ((size_t)(p - buf) + 21 > (size_t)n)
					break;
				pos = le64(p + 13);
				for (int i = 0; i < NFILES; i++) {
					struct hfile *f = &F[i];
					uint64_t want = ((f->size + 65535) & ~65535ULL) +
							f->tree_size;

					if (pos == want)
						add_copy(&f->rec, base + (p - buf) + 5, 0);
				}
				p++;
			}
		}
	}
	close(fd);
	free(buf);
}

static void ref_outputs(struct hfile *f)
{
	char out[512], tpath[64], dpath[64];
	size_t dlen;
	unsigned char *d;
	int rc;

	snprintf(tpath, sizeof(tpath), REF_DIR "/hostile-tree");
	snprintf(dpath, sizeof(dpath), REF_DIR "/hostile-desc");
	rc = run_cmd(out, sizeof(out),
		     "fsverity digest --hash-alg=sha256 --block-size=%d "
		     "--out-merkle-tree=%s --out-descriptor=%s '%s'",
		     f->bs, tpath, dpath, f->path);
	if (rc)
		fail("fsverity digest: %s", out);
	f->tree = read_whole(tpath, &f->tree_size);
	d = read_whole(dpath, &dlen);
	CHECK(dlen == 256);
	memcpy(f->desc, d, 256);
	free(d);
	unlink(tpath);
	unlink(dpath);
}

static void setup_files(void)
{
	/* distinct 64 KiB multiples, so f2fs's xattrs tell the files apart */
	static const size_t sizes[NFILES] = {
		1000, 70000, 150000, 300000, 600000, 1100000, 1600000,
		2300000, 3100000, 4200000 };
	struct statfs st;

	CHECK_OK(statfs(env.mnt, &st));
	fs_bs = st.f_bsize;
	for (int i = 0; i < NFILES; i++) {
		struct hfile *f = &F[i];

		f->size = sizes[i];
		f->bs = fs_bs < 4096 ? 1024 : 4096;
		f->path = test_path("f%d", i);
		f->data = random_buf(f->size, 0x4057 + i);
		unlink(f->path);
		write_file(f->path, f->data, f->size);
		ref_outputs(f);
		must_enable(f->path, FS_VERITY_HASH_ALG_SHA256, f->bs, 0);
		/* the tree pieces to look for: whole blocks, or 32-byte windows */
		f->nwin = 0;
		f->win = calloc(f->tree_size / 256 + 1, sizeof(*f->win));
		CHECK(f->win);
		for (size_t o = 0; o < f->tree_size; o += is_btrfs() ? 1024 : f->bs) {
			struct loc *l = &f->win[f->nwin++];

			l->meta_off = o;
			l->len = is_btrfs() ? 32 : (size_t)f->bs;
		}
		f->cur_tree = malloc(f->tree_size + 1);
		CHECK(f->cur_tree);
	}
	sync();
}

/* ---- device writes: whole units (4 KiB blocks, or btrfs nodes) ---- */

struct unit {
	uint64_t off;
	size_t len;
	unsigned char *orig, *work;
	bool btrfs;
};
static struct unit units[512];
static int nunits;

static unsigned char *unit_byte(uint64_t off, uint64_t node)
{
	uint64_t start = node ? node : off & ~4095ULL;
	size_t len = node ? nodesize : 4096;
	struct unit *u;

	for (int i = 0; i < nunits; i++)
		if (units[i].off == start)
			return units[i].work + (off - start);
	if (nunits == (int)(sizeof(units) / sizeof(units[0])))
		fail("too many device blocks changed in one round");
	u = &units[nunits++];
	u->off = start;
	u->len = len;
	u->btrfs = node != 0;
	if (posix_memalign((void **)&u->orig, 4096, len) ||
	    posix_memalign((void **)&u->work, 4096, len))
		fail("out of memory");
	{
		int fd = open(env.dev, O_RDONLY | O_DIRECT);

		CHECK_OK(fd);
		if (pread(fd, u->orig, len, start) != (ssize_t)len)
			fail("pread %s @%" PRIu64 ": %s", env.dev, start, strerror(errno));
		close(fd);
	}
	memcpy(u->work, u->orig, len);
	return u->work + (off - start);
}

static void units_write(bool original)
{
	int fd = open(env.dev, O_RDWR | O_DIRECT);

	CHECK_OK(fd);
	for (int i = 0; i < nunits; i++) {
		struct unit *u = &units[i];
		unsigned char *b = original ? u->orig : u->work;

		if (u->btrfs && !original) {
			uint32_t c = crc32c(0, b + 32, u->len - 32);

			memset(b, 0, 32);
			put_le32(b, c);
		}
		if (pwrite(fd, b, u->len, u->off) != (ssize_t)u->len)
			fail("pwrite %s @%" PRIu64 ": %s", env.dev, u->off,
			     strerror(errno));
	}
	CHECK_OK(fsync(fd));
	ioctl(fd, BLKFLSBUF, 0);
	close(fd);
	if (original) {
		for (int i = 0; i < nunits; i++) {
			free(units[i].orig);
			free(units[i].work);
		}
		nunits = 0;
	}
}

/* set @len bytes at offset @o of the piece @l, in every copy */
static void loc_set(const struct loc *l, size_t o, const void *val, size_t len)
{
	for (int c = 0; c < l->n && c < MAXCOPY; c++)
		memcpy(unit_byte(l->off[c] + o, l->unit[c]), val, len);
	/* (a piece never crosses a unit: checked when it was found) */
}

/* ---- mutations ---- */

static void desc_set(struct hfile *f, size_t o, const void *v, size_t len)
{
	memcpy(f->cur_desc + o, v, len);
	loc_set(&f->d, o, v, len);
	f->desc_changed = 1;
}

static void desc_u8(struct hfile *f, size_t o, unsigned char v)
{
	if (f->cur_desc[o] == v)
		v ^= 0x80;
	desc_set(f, o, &v, 1);
}

static void mutate(struct hfile *f, int kind, int variant)
{
	unsigned char b[8];
	int n;

	switch (kind) {
	case 0:		/* random bytes of the descriptor */
		n = 1 + rnd() % 4;
		snprintf(f->what, sizeof(f->what), "desc: %d random bytes", n);
		for (int i = 0; i < n; i++) {
			size_t o = rnd() % 256;

			desc_u8(f, o, f->cur_desc[o] ^ (1 + rnd() % 255));
		}
		break;
	case 1: {	/* one field, impossible or edge value */
		static const unsigned char vers[] = { 0, 2, 255 };
		static const unsigned char algs[] = { 0, 2, 3, 255 };
		static const unsigned char logs[] = { 0, 9, 10, 11, 13, 16, 31, 64, 255 };
		static const unsigned char salts[] = { 1, 31, 32, 33, 128, 255 };
		static const uint32_t sigs[] = { 1, 64, 256, 16128, 0x7fffffff, 0xffffffff };
		const uint64_t sizes[] = { 0, 1, f->size - 1, f->size + 1,
					   f->size + 4096, 1ULL << 40, 1ULL << 63,
					   ~0ULL };
		int fld = variant % 7;

		switch (fld) {
		case 0:
			desc_u8(f, 0, vers[rnd() % sizeof(vers)]);
			break;
		case 1:
			desc_u8(f, 1, algs[rnd() % sizeof(algs)]);
			break;
		case 2:
			desc_u8(f, 2, logs[rnd() % sizeof(logs)]);
			break;
		case 3:
			desc_u8(f, 3, salts[rnd() % sizeof(salts)]);
			break;
		case 4:
			put_le32(b, sigs[rnd() % 6]);
			desc_set(f, 4, b, 4);
			break;
		case 5:
			put_le64(b, sizes[rnd() % 8]);
			desc_set(f, 8, b, 8);
			break;
		case 6:
			desc_u8(f, 112 + rnd() % 144, 1 + rnd() % 255);
			break;
		}
		snprintf(f->what, sizeof(f->what), "desc field %d: %s", fld,
			 hex(f->cur_desc, 16));
		break;
	}
	case 2:		/* tree: random bytes in one found piece */
	case 3: {	/* tree: a whole piece zeroed or filled */
		struct loc *l;
		int tries = 0;

		do
			l = f->nwin ? &f->win[rnd() % f->nwin] : NULL;
		while (l && l->n < 1 && ++tries < 20);
		if (!l || l->n < 1) {
			mutate(f, 0, variant);
			return;
		}
		if (kind == 2) {
			n = 1 + rnd() % 3;
			for (int i = 0; i < n; i++) {
				size_t o = rnd() % l->len;
				unsigned char v = f->cur_tree[l->meta_off + o] ^
						  (1 + rnd() % 255);

				f->cur_tree[l->meta_off + o] = v;
				loc_set(l, o, &v, 1);
			}
			snprintf(f->what, sizeof(f->what),
				 "tree: %d random bytes at tree offset %zu+%zu",
				 n, l->meta_off, l->len);
		} else {
			unsigned char v = rnd() & 1 ? 0xff : 0;

			for (size_t o = 0; o < l->len; o++)
				if (f->cur_tree[l->meta_off + o] != v) {
					f->cur_tree[l->meta_off + o] = v;
					loc_set(l, o, &v, 1);
				}
			snprintf(f->what, sizeof(f->what),
				 "tree: %zu bytes at %zu set to %#x", l->len,
				 l->meta_off, v);
		}
		f->tree_changed = 1;
		break;
	}
	case 4:		/* the filesystem's descriptor location record */
		if (f->rec.n < 1) {
			mutate(f, 1, variant);
			return;
		}
		f->rec_changed = 1;
		if (is_ext4() || is_xfs()) {
			static const uint32_t v[] = { 0, 1, 4, 128, 255, 257, 1024,
				4096, 65536, 0x7fffffff, 0x80000000, 0xffffffff };
			uint32_t s = variant % 13 == 12 ? (uint32_t)rnd() : v[variant % 13];

			if (is_xfs())
				put_be32(b, s);
			else
				put_le32(b, s);
			loc_set(&f->rec, 0, b, 4);
			snprintf(f->what, sizeof(f->what), "%s desc_size %u",
				 is_xfs() ? "xfs" : "ext4", s);
		} else if (is_f2fs()) {
			/* struct { le32 version, size; le64 pos; } */
			uint64_t pos;
			const uint32_t sz[] = { 0, 1, 128, 255, 257, 4096, 0x7fffffff,
						0xffffffff };
			int w = variant % 4;

			pos = ((f->size + 65535) & ~65535ULL) + f->tree_size;
			if (w == 0) {
				put_le32(b, (uint32_t[]){ 0, 2, 0xffffffff }[rnd() % 3]);
				loc_set(&f->rec, 0, b, 4);
			} else if (w == 1) {
				put_le32(b, sz[rnd() % 8]);
				loc_set(&f->rec, 4, b, 4);
			} else {
				const uint64_t ps[] = { 0, 1, pos - 1, pos + 1,
					pos - f->tree_size - 1, pos + 4096,
					pos - 4096, 1ULL << 40, ~0ULL,
					(uint64_t)f->size };

				put_le64(b, ps[rnd() % 10]);
				loc_set(&f->rec, 8, b, 8);
			}
			snprintf(f->what, sizeof(f->what), "f2fs xattr field %d: %s",
				 w, hex(b, 8));
		} else {
			/* struct { le64 size; le64 reserved[2]; u8 encryption; } */
			const uint64_t sz[] = { 0, 1, 128, 255, 257, 4096, 1ULL << 32,
						~0ULL };
			int w = variant % 3;

			if (w == 0) {
				put_le64(b, sz[rnd() % 8]);
				loc_set(&f->rec, 0, b, 8);
			} else if (w == 1) {
				b[0] = 1 + rnd() % 255;
				loc_set(&f->rec, 24, b, 1);
			} else {
				b[0] = 1 + rnd() % 255;
				loc_set(&f->rec, 8 + rnd() % 16, b, 1);
			}
			snprintf(f->what, sizeof(f->what),
				 "btrfs descriptor item field %d: %s", w, hex(b, 8));
		}
		break;
	}
}

/* ---- using a mutated file ---- */

struct tally {
	long cases, open_err, measure_ok, measure_err, read_ok, read_err;
	long md_ok, md_err, mmap_bus, tree_caught;
	long errs[160];
};
static struct tally tl;

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

static void count_err(int e)
{
	if (e > 0 && e < 160)
		tl.errs[e]++;
}

static void __attribute__((noinline))
mmap_page(const struct hfile *f, const unsigned char *m, size_t pg)
{
	size_t len = f->size - pg < 4096 ? f->size - pg : 4096;

	if (memcmp(m + pg, f->data + pg, len))
		fail("%s: mmap page at %zu is not the file's (%s)", f->path, pg,
		     f->what);
}

static void use_file(struct hfile *f)
{
	unsigned char *buf = malloc(65536), d[MAX_DIGEST];
	size_t bad_reads = 0;
	int fd, alg, size, err;

	CHECK(buf);
	tl.cases++;
	fd = open(f->path, O_RDONLY);
	if (fd < 0) {
		tl.open_err++;
		count_err(errno);
		if (!f->desc_changed && !f->rec_changed)
			fail("%s: open failed (%s) with only the tree changed (%s)",
			     f->path, strerror(errno), f->what);
		free(buf);
		return;
	}
	/* measure: the hash of what is on disk now */
	err = measure_verity(fd, d, &alg, &size);
	if (err) {
		tl.measure_err++;
		count_err(err);
	} else {
		unsigned char want[32], dd[256];

		tl.measure_ok++;
		memcpy(dd, f->cur_desc, 256);
		memset(dd + 4, 0, 4);	/* sig_size */
		if (alg == FS_VERITY_HASH_ALG_SHA256) {
			sha256(dd, 256, want);
			if (size != 32 || memcmp(d, want, 32))
				fail("%s: measured %s, but the descriptor on disk hashes to %s... (%s)",
				     f->path, hex(d, size), hex(want, 8), f->what);
		} else if (alg != FS_VERITY_HASH_ALG_SHA512 || size != 64 ||
			   f->cur_desc[1] != FS_VERITY_HASH_ALG_SHA512) {
			fail("%s: measured algorithm %d size %d (%s)", f->path,
			     alg, size, f->what);
		}
	}
	/* read metadata: what is on disk (btrfs has no such ioctl in 6.12) */
	if (!is_btrfs()) {
		struct fsverity_read_metadata_arg a;
		unsigned char *m = malloc(f->tree_size + 4096);
		long n;

		CHECK(m);
		memset(&a, 0, sizeof(a));
		a.metadata_type = FS_VERITY_METADATA_TYPE_DESCRIPTOR;
		a.length = 4096;
		a.buf_ptr = (uintptr_t)m;
		n = ioctl(fd, FS_IOC_READ_VERITY_METADATA, &a);
		if (n < 0) {
			tl.md_err++;
			count_err(errno);
		} else {
			unsigned char dd[256];

			tl.md_ok++;
			memcpy(dd, f->cur_desc, 256);
			memset(dd + 4, 0, 4);
			if (n != 256 || memcmp(m, dd, 256))
				fail("%s: read descriptor (%ld bytes) is not the one on disk (%s)",
				     f->path, n, f->what);
		}
		memset(&a, 0, sizeof(a));
		a.metadata_type = FS_VERITY_METADATA_TYPE_MERKLE_TREE;
		a.length = f->tree_size + 4096;
		a.buf_ptr = (uintptr_t)m;
		n = ioctl(fd, FS_IOC_READ_VERITY_METADATA, &a);
		if (n < 0) {
			tl.md_err++;
			count_err(errno);
		} else {
			tl.md_ok++;
			if (!f->desc_changed && !f->rec_changed &&
			    ((size_t)n != f->tree_size ||
			     memcmp(m, f->cur_tree, f->tree_size)))
				fail("%s: read Merkle tree (%ld bytes) is not the one on disk (%s)",
				     f->path, n, f->what);
		}
		memset(&a, 0, sizeof(a));
		a.metadata_type = FS_VERITY_METADATA_TYPE_SIGNATURE;
		a.length = 4096;
		a.buf_ptr = (uintptr_t)m;
		if (ioctl(fd, FS_IOC_READ_VERITY_METADATA, &a) < 0)
			count_err(errno);
		free(m);
	}
	/* reads: the exact bytes, or an error */
	for (size_t off = 0; off < f->size; off += f->bs) {
		size_t want = f->size - off < (size_t)f->bs ? f->size - off : (size_t)f->bs;
		ssize_t n = pread(fd, buf, want, off);

		if (n < 0) {
			tl.read_err++;
			bad_reads++;
			count_err(errno);
			continue;
		}
		tl.read_ok++;
		if ((size_t)n != want || memcmp(buf, f->data + off, n))
			fail("%s: pread %zu@%zu gave %zd bytes that are not the file's (%s)",
			     f->path, want, off, n, f->what);
	}
	if (f->tree_changed && !f->desc_changed && !bad_reads)
		fail("%s: Merkle tree damage went unnoticed: every read succeeded (%s)",
		     f->path, f->what);
	if (f->tree_changed && bad_reads)
		tl.tree_caught++;
	/* mmap: a page is right or SIGBUS */
	{
		unsigned char *m = mmap(NULL, f->size, PROT_READ, MAP_SHARED, fd, 0);
		volatile size_t pg = 0;

		if (m != MAP_FAILED) {
			signal(SIGBUS, on_sigbus);
			for (pg = 0; pg < f->size; pg += 4096 * (1 + rnd() % 8)) {
				if (sigsetjmp(bus_jmp, 1)) {
					tl.mmap_bus++;
					continue;
				}
				mmap_page(f, m, pg);
			}
			munmap(m, f->size);
		}
	}
	close(fd);
	free(buf);
}

static void reset_cur(struct hfile *f)
{
	memcpy(f->cur_desc, f->desc, 256);
	memcpy(f->cur_tree, f->tree, f->tree_size);
	f->desc_changed = f->tree_changed = f->rec_changed = 0;
	f->what[0] = '\0';
}

TEST_TIMEOUT(mutated_verity_metadata_fails_cleanly, -1)
{
	int rounds = hostile_rounds();
	int found_tree = 0, total_win = 0, found_rec = 0;
	char khex[2 * MAX_DIGEST + 1], orig[NFILES][2 * MAX_DIGEST + 1];
	int alg;

	alarm(600 + rounds * 60);
	rs = 0x405711e ^ (uint64_t)env.fs[0] << 32 ^ strlen(env.fs);
	setup_files();
	for (int i = 0; i < NFILES; i++)
		kernel_digest_hex(F[i].path, orig[i], &alg);
	if (is_btrfs()) {
		unsigned char sb[4096];
		int fd = open(env.dev, O_RDONLY);

		CHECK_OK(fd);
		CHECK(pread(fd, sb, sizeof(sb), 65536) == sizeof(sb));
		close(fd);
		if (memcmp(sb + 64, "_BHRfS_M", 8))
			fail("no btrfs superblock on %s", env.dev);
		if (sb[196] | sb[197])
			skip("btrfs checksum type %d is not crc32c", sb[196] | sb[197] << 8);
		nodesize = le32(sb + 148);
		memcpy(btrfs_fsid, sb + 32, 16);
	}
	fs_unmount();
	locate_all();
	for (int i = 0; i < NFILES; i++) {
		struct hfile *f = &F[i];

		if (f->d.n < 1 || f->d.n > MAXCOPY) {
			fs_mount();
			fail("%s: descriptor found %d times on %s", f->path, f->d.n,
			     env.dev);
		}
		if (f->rec.n > MAXCOPY)
			f->rec.n = 0;
		/* a btrfs descriptor item must look like one: size 256, zeroes */
		if (is_btrfs() && f->rec.n) {
			int fd = open(env.dev, O_RDONLY), k = 0;
			unsigned char it[25], want[25] = { 0, 1 };

			for (int c = 0; c < f->rec.n; c++) {
				CHECK(pread(fd, it, 25, f->rec.off[c]) == 25);
				if (memcmp(it, want, 25) ||
				    f->rec.off[c] + 25 > f->rec.unit[c] + nodesize)
					continue;
				f->rec.off[k] = f->rec.off[c];
				f->rec.unit[k++] = f->rec.unit[c];
			}
			close(fd);
			f->rec.n = k;
		}
		found_rec += f->rec.n > 0;
		for (int w = 0; w < f->nwin; w++) {
			total_win++;
			if (f->win[w].n > MAXCOPY)
				f->win[w].n = 0;
			/* on btrfs a piece must not cross out of its node */
			for (int c = 0; c < f->win[w].n && is_btrfs(); c++)
				if (f->win[w].off[c] + f->win[w].len >
				    f->win[w].unit[c] + nodesize)
					f->win[w].n = 0;
			found_tree += f->win[w].n > 0;
		}
	}
	note("found %d/%d descriptors' location records, %d/%d tree pieces; %d copies of a descriptor (btrfs: DUP and stale CoW copies too)",
	     found_rec, NFILES, found_tree, total_win, F[0].d.n);
	if (!found_rec)
		fail("no descriptor location record found for any file on %s", env.fs);
	if (total_win && !found_tree)
		fail("no piece of any Merkle tree found on %s", env.dev);

	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < NFILES; i++) {
			reset_cur(&F[i]);
			mutate(&F[i], (r + i) % 5, r);
		}
		units_write(false);
		fs_mount();
		for (int i = 0; i < NFILES; i++)
			use_file(&F[i]);
		fs_unmount();
		units_write(true);
	}
	fs_mount();
	/* all back: every file as it was */
	for (int i = 0; i < NFILES; i++) {
		reset_cur(&F[i]);
		kernel_digest_hex(F[i].path, khex, &alg);
		if (strcmp(khex, orig[i]))
			fail("%s: digest %s after the rounds, was %s", F[i].path,
			     khex, orig[i]);
		check_contents(F[i].path, F[i].data, F[i].size);
	}
	{
		char e[1024] = "";

		for (int i = 0; i < 160; i++)
			if (tl.errs[i])
				snprintf(e + strlen(e), sizeof(e) - strlen(e), " %s:%ld",
					 errno_name(i), tl.errs[i]);
		note("%ld mutated cases: open failed %ld; measure ok %ld / failed %ld; read-metadata ok %ld / failed %ld; block reads ok %ld / failed %ld; mmap SIGBUS %ld; tree damage caught %ld; errnos:%s",
		     tl.cases, tl.open_err, tl.measure_ok, tl.measure_err,
		     tl.md_ok, tl.md_err, tl.read_ok, tl.read_err, tl.mmap_bus,
		     tl.tree_caught, e);
	}
	for (int i = 0; i < NFILES; i++)
		unlink(F[i].path);
}
