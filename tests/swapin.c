// SPDX-License-Identifier: GPL-2.0
/*
 * tmpfs fs-verity verifies what comes back from swap.
 *
 * A verity file and a plain control file with the same bytes live on a
 * tmpfs, charged to a memory cgroup whose memory.reclaim pushes them out
 * to a swap device: a device-mapper "flakey" target over a loop device
 * on the filesystem under test.  The swap device stays active; its table
 * is switched to corrupt_bio_byte (the first byte of every read bio set
 * to 0xff) to make what comes back hostile.  The kernel refuses writes to
 * an active swap device from userspace, so the damage is done on the way
 * in, not on the medium.
 *
 *  - clean: both files read back byte for byte, the verity file measures
 *    the same, and the fsverity_data_verified trace event shows the data
 *    was verified as it came back;
 *  - hostile: the control reads back damaged (the test really damaged what
 *    came back), while the verity file gives EIO to read() and sendfile()
 *    and SIGBUS to a touch through a mapping, each on pages not touched
 *    before, and fsverity_verify_failed is traced.
 *  - tree blocks: one checked as data came back is not hashed again for
 *    the next data block, until its page has been out to swap and back
 *    (the fsverity_cache_miss and fsverity_tree_forgotten events count);
 *    a tree page damaged on its way back fails every data block under it,
 *    though it was known good before it went out.
 *
 * Swap and tmpfs do not depend on the filesystem under test: the area runs
 * in the ext4 pass only (boot 1).
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/swap.h>
#include <sys/wait.h>
#include <linux/loop.h>

#define DMSETUP		"DM_DISABLE_UDEV=1 dmsetup"
#define DM_NAME		"fsv-swap"
#define DM_DEV		"/dev/mapper/" DM_NAME
#define SWAP_SECTORS	(64ULL << 11)	/* 64 MiB */
#define CG		CGROOT "/fsverity-swapin"
#define TMPFS		"/mnt/swapin-tmpfs"
#define FILE_PAGES	64
#define FILE_SIZE	(FILE_PAGES * 4096)
#define SEED		4343

static char loop_dev[32];

/* the loop device's backing file, on the filesystem under test */
static const char *backing(void)
{
	static char path[256];

	snprintf(path, sizeof(path), "%s/swapin-backing", env.mnt);
	return path;
}

static void area_ready(void)
{
	if (strcmp(env.fs, "ext4"))
		skip("filesystem independent: runs in the ext4 pass only");
	if (access(TRACEFS "/events/fsverity", F_OK))
		skip("no events/fsverity: kernel without fs-verity tracepoints");
}

/*
 * dm-flakey over the loop device, made (@create) or switched live: always
 * up, or always down with every read bio's first byte set to 0xff
 */
static void flakey_table(bool create, bool corrupt)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd),
		 "%s %s %s --table '0 %llu flakey %s 0 %s'", DMSETUP,
		 create ? "create" : "reload", DM_NAME, SWAP_SECTORS,
		 loop_dev,
		 corrupt ? "0 1 5 corrupt_bio_byte 1 r 255 0" : "1 0");
	must_run("dmsetup table", cmd);
	if (!create) {
		must_run("dmsetup suspend", DMSETUP " suspend " DM_NAME);
		must_run("dmsetup resume", DMSETUP " resume " DM_NAME);
	}
}

static void swap_setup(void)
{
	struct loop_config cfg;
	char out[512];
	int ctl, n, fd, loop_fd;

	fd = CHECK_OK(open(backing(), O_RDWR | O_CREAT | O_TRUNC, 0600));
	CHECK_OK(ftruncate(fd, SWAP_SECTORS << 9));
	ctl = CHECK_OK(open("/dev/loop-control", O_RDWR | O_CLOEXEC));
	n = CHECK_OK(ioctl(ctl, LOOP_CTL_GET_FREE));
	close(ctl);
	snprintf(loop_dev, sizeof(loop_dev), "/dev/loop%d", n);
	loop_fd = CHECK_OK(open(loop_dev, O_RDWR | O_CLOEXEC));
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = fd;
	/* detached once dm-flakey, its last user, lets it go */
	cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
	if (ioctl(loop_fd, LOOP_CONFIGURE, &cfg))
		fail("LOOP_CONFIGURE %s: %s", loop_dev, strerror(errno));
	close(fd);
	flakey_table(true, false);
	close(loop_fd);
	if (run_cmd(out, sizeof(out), "mkswap %s", DM_DEV))
		fail("mkswap %s: %s", DM_DEV, out);
	if (swapon(DM_DEV, 0))
		fail("swapon %s: %s", DM_DEV, strerror(errno));
	cg_make(CG, "memory");
	mkdir(TMPFS, 0755);
	umount_if_mounted(TMPFS);
	CHECK_OK(mount("tmpfs", TMPFS, "tmpfs", 0, "size=64m"));
	put_str(TRACEFS "/trace", "");
	put_str(TRACEFS "/events/fsverity/enable", "1");
}

/* In the parent, after the body: nothing the body set is known here */
static void swap_cleanup(void)
{
	put_str_errno(TRACEFS "/events/fsverity/enable", "0");
	/* the tmpfs first: its swapped pages then need no swapoff */
	umount2(TMPFS, MNT_DETACH);
	rmdir(TMPFS);
	swapoff(DM_DEV);
	/* the loop device under it goes with it (LO_FLAGS_AUTOCLEAR) */
	run_cmd(NULL, 0, DMSETUP " remove " DM_NAME);
	unlink(backing());
	rmdir(CG);
}

/* "<key> N" of the cgroup's memory.stat */
static long long mem_stat(const char *key)
{
	char line[256];
	size_t kl = strlen(key);
	long long v = -1;
	FILE *f = fopen(CG "/memory.stat", "r");

	if (!f)
		fail("open " CG "/memory.stat: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ' ')
			v = atoll(line + kl + 1);
	fclose(f);
	if (v < 0)
		fail("memory.stat: no \"%s\"", key);
	return v;
}

/*
 * In a child moved into CG (so that their pages are charged to it): the
 * verity file V and the control C, the same bytes, V enabled.
 */
static void make_files_in_cgroup(void)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = CHECK_OK(fork());
	if (pid == 0) {
		char buf[32];

		snprintf(buf, sizeof(buf), "%d", getpid());
		put_str(CG "/cgroup.procs", buf);
		make_file(TMPFS "/V", FILE_SIZE, SEED);
		make_file(TMPFS "/C", FILE_SIZE, SEED);
		must_enable(TMPFS "/V", FS_VERITY_HASH_ALG_SHA256, 4096, 0);
		fflush(stdout);
		_exit(0);
	}
	CHECK_OK(waitpid(pid, &status, 0));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("making the files in the cgroup failed");
}

static long long swap_current(void)
{
	char buf[64];

	get_str(CG "/memory.swap.current", buf, sizeof(buf));
	return atoll(buf);
}

/*
 * Push everything of the cgroup out to swap, and out of the swap cache
 * too, so that what is read next comes from the device
 */
static void push_out(void)
{
	long long shmem0 = mem_stat("shmem");
	int i;

	/* swap cache pages read ahead or under writeback take more passes */
	for (i = 0; i < 20; i++) {
		int err = put_str_errno(CG "/memory.reclaim",
					"512M swappiness=200");

		/* EAGAIN: less than asked was reclaimed, which is all */
		if (err && err != EAGAIN)
			fail("memory.reclaim: %s", strerror(err));
		if (!mem_stat("shmem") && !mem_stat("swapcached"))
			break;
		/* swap cache pages under writeback go once it completes */
		usleep(100000);
	}
	note("memory.reclaim: shmem %lld KiB -> %lld KiB, swapcached %lld KiB, memory.swap.current %lld KiB",
	     shmem0 >> 10, mem_stat("shmem") >> 10,
	     mem_stat("swapcached") >> 10, swap_current() >> 10);
	if (mem_stat("shmem") || mem_stat("swapcached"))
		fail("the files are not all out on the swap device");
}

/* pread @len bytes at @off of @path: 0 or the errno */
static int pread_errno(const char *path, void *buf, size_t len, off_t off)
{
	int fd = CHECK_OK(open(path, O_RDONLY));
	ssize_t n = pread(fd, buf, len, off);
	int err = n < 0 ? errno : n == (ssize_t)len ? 0 : EMSGSIZE;

	close(fd);
	return err;
}

static void clean_body(void)
{
	unsigned char *want = random_buf(FILE_SIZE, SEED);
	unsigned char *got = malloc(FILE_SIZE);
	char before[2 * MAX_DIGEST + 1], after[2 * MAX_DIGEST + 1];
	unsigned long long verified;
	int alg;

	swap_setup();
	make_files_in_cgroup();
	kernel_digest_hex(TMPFS "/V", before, &alg);
	push_out();
	put_str(TRACEFS "/trace", "");
	CHECK(pread_errno(TMPFS "/V", got, FILE_SIZE, 0) == 0);
	CHECK(!memcmp(got, want, FILE_SIZE));
	CHECK(pread_errno(TMPFS "/C", got, FILE_SIZE, 0) == 0);
	CHECK(!memcmp(got, want, FILE_SIZE));
	verified = trace_count("fsverity_data_verified:", NULL);
	kernel_digest_hex(TMPFS "/V", after, &alg);
	note("back from swap: both files byte-identical; %llu data blocks verified coming back; digest %s",
	     verified, after);
	if (strcmp(before, after))
		fail("digest %s before the swap, %s after", before, after);
	if (verified < FILE_PAGES)
		fail("%llu data blocks verified coming back from swap, want %d",
		     verified, FILE_PAGES);
	free(want);
	free(got);
}

/*
 * Swapped out and back through a clean device, a verity tmpfs file and its
 * plain copy read back byte for byte, and every data block of the verity
 * file was verified on its way back.
 */
TEST_TIMEOUT(clean_swap_round_trip_reads_back_verified_and_identical, 200)
{
	area_ready();
	with_cleanup(clean_body, swap_cleanup, 180);
}

/*
 * Read all of the verity file back: the fsverity_cache_miss events, and
 * the fsverity_tree_forgotten ones into *@forgotten
 */
static unsigned long long read_back_misses(const unsigned char *want,
					   unsigned char *got,
					   unsigned long long *forgotten)
{
	unsigned long long misses;

	put_str(TRACEFS "/trace", "");
	CHECK(pread_errno(TMPFS "/V", got, FILE_SIZE, 0) == 0);
	CHECK(!memcmp(got, want, FILE_SIZE));
	misses = trace_count("fsverity_cache_miss:", NULL);
	*forgotten = trace_count("fsverity_tree_forgotten:", NULL);
	note("read back from swap: %llu tree block lookups missed, %llu hit, %llu tree ranges forgotten as they came back",
	     misses, trace_count("fsverity_cache_hit:", NULL), *forgotten);
	return misses;
}

static void hashed_once_body(void)
{
	unsigned char *want = random_buf(FILE_SIZE, SEED);
	unsigned char *got = malloc(FILE_SIZE);
	unsigned long long misses, forgotten;
	int round;

	swap_setup();
	make_files_in_cgroup();
	/* the file's one tree block; the second round proves it forgotten */
	for (round = 0; round < 2; round++) {
		push_out();
		misses = read_back_misses(want, got, &forgotten);
		if (!forgotten)
			fail("round %d: the tree came back from swap, and nothing was forgotten",
			     round + 1);
		if (misses != 1)
			fail("round %d: the tree block was hashed %llu times for %d data blocks, want once",
			     round + 1, misses, FILE_PAGES);
	}
	free(want);
	free(got);
}

/*
 * A tree block checked as data comes back from swap is remembered for the
 * next data block, and forgotten when its page goes out and comes back.
 */
TEST_TIMEOUT(tree_blocks_are_hashed_once_per_return_from_swap, 200)
{
	area_ready();
	with_cleanup(hashed_once_body, swap_cleanup, 180);
}

#define PAGE_CLUSTER	"/proc/sys/vm/page-cluster"
static char page_cluster[16];

static void damaged_tree_cleanup(void)
{
	put_str_errno(PAGE_CLUSTER, page_cluster);
	swap_cleanup();
}

static void damaged_tree_body(void)
{
	unsigned char *want = random_buf(FILE_SIZE, SEED);
	unsigned char *got = malloc(FILE_SIZE);
	unsigned char tree[4096], back[4096];
	unsigned long long forgotten;
	int fd, i, eio = 0;

	swap_setup();
	make_files_in_cgroup();
	fd = CHECK_OK(open(TMPFS "/V", O_RDONLY));
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_MERKLE_TREE, 0, 4096,
		      tree) == 4096);
	if (tree[0] == 0xff)
		fail("the tree starts with 0xff, which the damage leaves: pick another SEED");
	/* the tree block is checked, and known good, as the data comes back */
	push_out();
	read_back_misses(want, got, &forgotten);
	push_out();
	/* only the tree page comes back through the damage, without neighbours */
	put_str(PAGE_CLUSTER, "0");
	flakey_table(false, true);
	CHECK(read_md(fd, FS_VERITY_METADATA_TYPE_MERKLE_TREE, 0, 4096,
		      back) == 4096);
	flakey_table(false, false);
	close(fd);
	if (back[0] != 0xff || memcmp(back + 1, tree + 1, 4095))
		fail("the tree page did not come back with only its first byte damaged (0x%02x)",
		     back[0]);
	for (i = 0; i < FILE_PAGES; i++) {
		int err = pread_errno(TMPFS "/V", got, 4096, i * 4096);

		if (err && err != EIO)
			fail("read() of verity page %d: %s, want EIO", i,
			     errno_name(err));
		eio += err == EIO;
	}
	note("tree page back with byte 0 0x%02x -> 0xff, data back clean: read() EIO on %d of %d pages",
	     tree[0], eio, FILE_PAGES);
	if (eio != FILE_PAGES)
		fail("%d of %d pages under a tree page damaged in swap read back, want none",
		     FILE_PAGES - eio, FILE_PAGES);
	free(want);
	free(got);
}

/*
 * A tree page that was known good before it went out to swap, and comes
 * back damaged while the data comes back clean, fails every data block it
 * covers: what was verified of it is not trusted across the swap.
 */
TEST_TIMEOUT(a_tree_page_damaged_in_swap_fails_every_block_under_it, 200)
{
	area_ready();
	get_str(PAGE_CLUSTER, page_cluster, sizeof(page_cluster));
	with_cleanup(damaged_tree_body, damaged_tree_cleanup, 180);
}

#define RACE_SIZE	(4 << 20)
#define RACE_SECS	20

/*
 * Read all of @path, again and again until *@stop (at least once): the
 * reads that failed, or -1 for wrong data
 */
static int read_until(const char *path, const unsigned char *want,
		      volatile int *stop)
{
	unsigned char *got = malloc(1 << 16);
	int fd = CHECK_OK(open(path, O_RDONLY));
	int failed = 0;

	do {
		for (off_t off = 0; off < RACE_SIZE; off += 1 << 16) {
			ssize_t n = pread(fd, got, 1 << 16, off);

			if (n != 1 << 16)
				failed++;
			else if (memcmp(got, want + off, 1 << 16))
				return -1;
		}
	} while (!*stop);
	close(fd);
	free(got);
	return failed;
}

/*
 * In a child moved into CG, whose memory.max keeps most of the file out
 * in swap: enable files while another process reads them, each read
 * bringing data back from swap, some of it while the enable finishes
 */
static void enable_race_child(void)
{
	volatile int *stop = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	/* charged where it is made: before the move, so not to CG */
	unsigned char *want = random_buf(RACE_SIZE, SEED);
	double end = mono_now() + RACE_SECS;
	char path[64], buf[32];
	int i, enomem = 0;

	if (stop == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	snprintf(buf, sizeof(buf), "%d", getpid());
	put_str(CG "/cgroup.procs", buf);
	for (i = 0; mono_now() < end; i++) {
		int status, err, fd;
		pid_t reader;

		snprintf(path, sizeof(path), TMPFS "/race-%d", i);
		write_file(path, want, RACE_SIZE);
		*stop = 0;
		fflush(stdout);
		reader = CHECK_OK(fork());
		if (!reader)
			_exit(read_until(path, want, stop) ? 1 : 0);
		fd = CHECK_OK(open(path, O_RDONLY));
		err = enable_verity(fd, FS_VERITY_HASH_ALG_SHA256, 12, NULL, 0,
				    NULL, 0);
		close(fd);
		usleep(100000);
		*stop = 1;
		CHECK_OK(waitpid(reader, &status, 0));
		if (err == ENOMEM)
			enomem++;
		else if (err)
			fail("enable %d: %s", i, strerror(err));
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fail("enable %d: a read racing it failed or returned wrong data",
			     i);
		/* and nothing was poisoned on the way: one more pass */
		if (read_until(path, want, stop))
			fail("enable %d: the file does not read back whole", i);
		CHECK_OK(unlink(path));
	}
	note("%d enables racing reads from swap (%d ENOMEM under memory.high), every read whole",
	     i, enomem);
	_exit(0);
}

static void enable_race_body(void)
{
	int status;
	pid_t pid;

	swap_setup();
	/* memory.high reclaims and throttles, where memory.max would OOM */
	put_str(CG "/memory.high", "3M");
	fflush(stdout);
	pid = CHECK_OK(fork());
	if (!pid)
		enable_race_child();
	CHECK_OK(waitpid(pid, &status, 0));
	if (!WIFEXITED(status))
		fail("the enabling process was killed by signal %d",
		     WTERMSIG(status));
	if (WEXITSTATUS(status))
		_exit(WEXITSTATUS(status));	/* it said why */
}

/*
 * Enables that finish while the file's data comes back from swap under a
 * reader lose nothing: what comes back before fs-verity's state for the
 * file is published is not failed for want of it.
 */
TEST_TIMEOUT(an_enable_finishing_while_data_comes_back_from_swap_loses_nothing, 200)
{
	area_ready();
	with_cleanup(enable_race_body, swap_cleanup, 180);
}

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

/* Touch page @page of @path through a shared mapping: SIGBUS or not */
static bool touch_sigbus(const char *path, int page)
{
	int fd = CHECK_OK(open(path, O_RDONLY));
	volatile unsigned char *m = mmap(NULL, FILE_SIZE, PROT_READ,
					 MAP_SHARED, fd, 0);
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	bool bus = false;

	if (m == MAP_FAILED)
		fail("mmap %s: %s", path, strerror(errno));
	close(fd);
	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(bus_jmp, 1))
		bus = true;
	else
		(void)m[page * 4096 + 100];
	sigaction(SIGBUS, &old, NULL);
	munmap((void *)m, FILE_SIZE);
	return bus;
}

/* sendfile() @len bytes at @off of @path to /dev/null: 0 or the errno */
static int sendfile_errno(const char *path, off_t off, size_t len)
{
	int in = CHECK_OK(open(path, O_RDONLY));
	int out = CHECK_OK(open("/dev/null", O_WRONLY));
	ssize_t n = sendfile(out, in, &off, len);
	int err = n < 0 ? errno : n == (ssize_t)len ? 0 : EMSGSIZE;

	close(in);
	close(out);
	return err;
}

/*
 * corrupt_bio_byte sets a page's first byte to 0xff as it comes back (each
 * swap read is a bio of its own): pages that start with 0xff come back
 * unchanged
 */
static bool damaged_on_return(const unsigned char *want, int page)
{
	return want[page * 4096] != 0xff;
}

/* The first page from @from that the device damages on its way back */
static int damaged_page(const unsigned char *want, int from)
{
	while (from < FILE_PAGES && !damaged_on_return(want, from))
		from++;
	if (from == FILE_PAGES)
		fail("no page from %d on starts with anything but 0xff", from);
	return from;
}

static void hostile_body(void)
{
	unsigned char *want = random_buf(FILE_SIZE, SEED);
	unsigned char *got = malloc(FILE_SIZE);
	unsigned long long failed;
	int i, damaged = 0, eio = 0, expect = 0, p, err;

	swap_setup();
	make_files_in_cgroup();
	push_out();
	flakey_table(false, true);

	/* the control: what came back is damaged */
	CHECK(pread_errno(TMPFS "/C", got, FILE_SIZE, 0) == 0);
	for (i = 0; i < FILE_PAGES; i++)
		damaged += !!memcmp(got + i * 4096, want + i * 4096, 4096);
	note("control: %d of %d pages read back damaged (page 0 byte 0 reads 0x%02x, written 0x%02x)",
	     damaged, FILE_PAGES, got[0], want[0]);
	if (!damaged)
		fail("the control read back undamaged: nothing was corrupted");

	/* the verity file: read() page by page, EIO or the right bytes */
	for (i = 0; i < 16; i++) {
		err = pread_errno(TMPFS "/V", got, 4096, i * 4096);
		if (!err && memcmp(got, want + i * 4096, 4096))
			fail("read() of verity page %d from damaged swap returned wrong data", i);
		if (err && err != EIO)
			fail("read() of verity page %d: %s, want EIO", i,
			     errno_name(err));
		eio += err == EIO;
		expect += damaged_on_return(want, i);
	}
	if (eio != expect)
		fail("read() of 16 verity pages from damaged swap: %d EIO, want %d",
		     eio, expect);
	p = damaged_page(want, 16);
	if (!touch_sigbus(TMPFS "/V", p))
		fail("a mapped touch of verity page %d from damaged swap did not SIGBUS", p);
	p = damaged_page(want, 32);
	err = sendfile_errno(TMPFS "/V", p * 4096, 4096);
	if (err != EIO)
		fail("sendfile() of verity page %d from damaged swap: %s, want EIO",
		     p, err ? errno_name(err) : "success");
	/* and it stays so: a page that failed is not read again */
	flakey_table(false, false);
	p = damaged_page(want, 0);
	err = pread_errno(TMPFS "/V", got, 4096, p * 4096);
	if (err != EIO)
		fail("a second read() of verity page %d, which failed: %s, want EIO",
		     p, err ? errno_name(err) : "success");
	failed = trace_count("fsverity_verify_failed:", NULL);
	note("verity file: read() EIO on %d of 16 pages (the others start with 0xff, which the damage leaves), mapped touch SIGBUS, sendfile() EIO, a failed page still EIO with the device clean; fsverity_verify_failed traced %llu times",
	     eio, failed);
	if (!failed)
		fail("no fsverity_verify_failed event");
	free(want);
	free(got);
}

/*
 * A swap device that corrupts what it reads back: the control returns the
 * damage, the verity file fails instead (read EIO, mapped SIGBUS,
 * sendfile EIO), and a page that failed keeps failing.
 */
TEST_TIMEOUT(corrupted_swap_reads_are_eio_and_sigbus_while_the_control_reads_the_damage, 200)
{
	area_ready();
	with_cleanup(hostile_body, swap_cleanup, 180);
}
