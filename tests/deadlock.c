// SPDX-License-Identifier: GPL-2.0
/*
 * Verification never waits for a lock that a reader of the same file may
 * hold while it waits for the data being verified.
 *
 * A page fault on a folio still being read holds the mapping's
 * invalidate_lock shared while it waits for the folio lock
 * (filemap_fault()).  A task that wants the lock exclusive queues behind
 * it: on XFS a FICLONERANGE with the verity file as its source
 * (xfs_ilock2_io_mmap()), on ext4 setting the journal-data flag
 * (ext4_change_inode_journal_flag()).  If the completion of the folio's
 * read then asks for invalidate_lock shared -- page_cache_ra_unbounded()
 * does, when the verification of a bio reads the tree ahead -- it queues
 * behind the writer, and the folio is never unlocked: all three wait
 * forever, and lockdep cannot see it (folio locks are not tracked).
 *
 * The stress: a small filesystem of its own on a dm-delay device over the
 * spare disk (reads delayed, to hold folios locked long enough; a hang
 * there cannot take the suite's filesystems with it), a cold verity file,
 * and three threads per round: one faults in every page of a mapping of
 * it, one reads it sequentially, one takes invalidate_lock exclusive in a
 * loop; the caches are dropped between rounds.  A watchdog process, not
 * the runner's timeout, decides: a thread without a heartbeat for
 * HANG_SECS is stuck, and the test fails naming it, with the kernel's
 * list of blocked tasks (sysrq w) on the console.
 *
 * Runs in the ext4 and xfs passes (tests/expected-skips says why not the
 * others).
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

#define SPARE_DEV	"/dev/vde"
#define SPARE_MNT	"/mnt/deadlock-spare"
#define SPARE_SECTORS	"1048576"	/* 512 MiB: mkfs.xfs wants 300 MB */
#define DELAY		"fsv-deadlock-delay"
#define DELAY_MS	"50"		/* per read bio */
#define DMSETUP		"DM_DISABLE_UDEV=1 dmsetup"
#define HUNG_TASK	"/proc/sys/kernel/hung_task_timeout_secs"

#define FILE_SIZE	(16 << 20)
#define MAX_STRESS_SECS	60	/* rounds start until then (stress_secs()) */
#define HANG_SECS	30	/* no heartbeat for this long: stuck */
#define BODY_SECS	(MAX_STRESS_SECS + HANG_SECS + 30)

enum { T_FAULT, T_READ, T_EXCL, T_ROUNDS, NR_BEATS };
static const char *const beat_name[NR_BEATS] = {
	[T_FAULT] = "the faulting thread",
	[T_READ] = "the reading thread",
	[T_EXCL] = "the invalidate_lock writer",
	[T_ROUNDS] = "the round loop (in drop_caches)",
};

/* shared between the stress process and the watchdog */
struct beats {
	volatile unsigned long n[NR_BEATS];	/* progress made */
	volatile int busy[NR_BEATS];		/* expected to make some */
	volatile unsigned long rounds, excl_ops;
	volatile int stop_excl;			/* end of a round */
};
static struct beats *beats;
static char file[64], clone_dst[64];
static bool is_xfs;
static char old_hung[32];	/* hung_task_timeout_secs to restore */

static void beat(int t)
{
	__atomic_add_fetch(&beats->n[t], 1, __ATOMIC_RELAXED);
}

static void only_on_ext4_and_xfs(void)
{
	if (strcmp(env.fs, "ext4") && strcmp(env.fs, "xfs"))
		skip("makes its own filesystem on %s: run in the ext4 and xfs passes",
		     SPARE_DEV);
	is_xfs = !strcmp(env.fs, "xfs");
}

/* the fault: every page of a fresh mapping, in order */
static void *fault_thread(void *arg)
{
	int fd = open(file, O_RDONLY);
	volatile unsigned char *p;
	unsigned long sum = 0;

	(void)arg;
	if (fd < 0)
		fail("open %s: %s", file, strerror(errno));
	p = mmap(NULL, FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		fail("mmap %s: %s", file, strerror(errno));
	for (size_t off = 0; off < FILE_SIZE; off += 4096) {
		sum += p[off];
		beat(T_FAULT);
	}
	munmap((void *)p, FILE_SIZE);
	close(fd);
	return (void *)sum;
}

static void *read_thread(void *arg)
{
	static char buf[64 << 10];
	int fd = open(file, O_RDONLY);
	ssize_t n;

	(void)arg;
	if (fd < 0)
		fail("open %s: %s", file, strerror(errno));
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		beat(T_READ);
	if (n < 0)
		fail("read %s: %s", file, strerror(errno));
	close(fd);
	return NULL;
}

/* one FICLONERANGE from the verity file, or one flip of its journal flag */
static void take_invalidate_lock(int src, int dst)
{
	if (is_xfs) {
		struct file_clone_range r = {
			.src_fd = src, .src_offset = 0, .src_length = 65536,
			.dest_offset = 0,
		};

		if (ioctl(dst, FICLONERANGE, &r))
			fail("FICLONERANGE from the verity file: %s",
			     strerror(errno));
	} else {
		int flags;

		if (ioctl(src, FS_IOC_GETFLAGS, &flags))
			fail("FS_IOC_GETFLAGS: %s", strerror(errno));
		/* only setting the flag takes invalidate_lock */
		flags ^= FS_JOURNAL_DATA_FL;
		if (ioctl(src, FS_IOC_SETFLAGS, &flags))
			fail("FS_IOC_SETFLAGS %s journal data: %s",
			     flags & FS_JOURNAL_DATA_FL ? "+" : "-",
			     strerror(errno));
	}
}

static void *excl_thread(void *arg)
{
	int src = open(file, O_RDONLY), dst = -1;

	(void)arg;
	if (src < 0)
		fail("open %s: %s", file, strerror(errno));
	if (is_xfs && (dst = open(clone_dst, O_RDWR)) < 0)
		fail("open %s: %s", clone_dst, strerror(errno));
	while (!beats->stop_excl) {
		take_invalidate_lock(src, dst);
		beats->excl_ops++;
		beat(T_EXCL);
	}
	close(src);
	if (dst >= 0)
		close(dst);
	return NULL;
}

/* fsv.deadlock=<seconds> on the kernel command line: make check's 20 */
static int stress_secs(void)
{
	int secs = cmdline_int("fsv.deadlock=", MAX_STRESS_SECS);

	return secs > 0 && secs < MAX_STRESS_SECS ? secs : MAX_STRESS_SECS;
}

static void stress(void)
{
	double end = mono_now() + stress_secs();
	pthread_t th[3];

	while (mono_now() < end) {
		beats->busy[T_ROUNDS] = 1;
		drop_caches();
		beat(T_ROUNDS);
		beats->busy[T_ROUNDS] = 0;
		beats->stop_excl = 0;
		beats->busy[T_FAULT] = beats->busy[T_READ] = 1;
		beats->busy[T_EXCL] = 1;
		if (pthread_create(&th[0], NULL, fault_thread, NULL) ||
		    pthread_create(&th[1], NULL, read_thread, NULL) ||
		    pthread_create(&th[2], NULL, excl_thread, NULL))
			fail("pthread_create failed");
		pthread_join(th[0], NULL);
		beats->busy[T_FAULT] = 0;
		pthread_join(th[1], NULL);
		beats->busy[T_READ] = 0;
		beats->stop_excl = 1;
		pthread_join(th[2], NULL);
		beats->busy[T_EXCL] = 0;
		beats->rounds++;
	}
}

static void make_the_filesystem(void)
{
	int err;

	if (is_xfs)
		must_run("mkfs.xfs", "mkfs.xfs -f -q -i verity=1 -m reflink=1 -d size=512m "
			 SPARE_DEV);
	else
		must_run("mkfs.ext4", "mkfs.ext4 -q -F -O verity -E nodiscard " SPARE_DEV
			 " 512M");
	mkdir(SPARE_MNT, 0755);
	CHECK_OK(mount(SPARE_DEV, SPARE_MNT, env.fs, 0, NULL));
	make_file(file, FILE_SIZE, 24);
	err = enable_verity_path(file, FS_VERITY_HASH_ALG_SHA256, 12, NULL, 0);
	if (err)
		fail("FS_IOC_ENABLE_VERITY on %s: %s", file, errno_name(err));
	if (is_xfs)
		make_file(clone_dst, 65536, 25);
	CHECK_OK(umount(SPARE_MNT));
	/* reads delayed, writes not */
	must_run("dm-delay", DMSETUP " create " DELAY " --table '0 " SPARE_SECTORS " delay "
		 SPARE_DEV " 0 " DELAY_MS " " SPARE_DEV " 0 0'");
	CHECK_OK(mount("/dev/mapper/" DELAY, SPARE_MNT, env.fs, 0, NULL));
}

static void remove_the_filesystem(void)
{
	umount(SPARE_MNT);
	run_cmd(NULL, 0, DMSETUP " remove " DELAY " 2>/dev/null");
}

static void restore_hung_task(void)
{
	if (*old_hung)
		put_str(HUNG_TASK, old_hung);
}

/* the stuck threads, and the kernel's blocked tasks on the console */
static void report_hang(const double *last, double t)
{
	char stuck[512] = "";

	/* every thread at work, with how long it has been silent */
	for (int i = 0; i < NR_BEATS; i++)
		if (beats->busy[i])
			snprintf(stuck + strlen(stuck), sizeof(stuck) - strlen(stuck),
				 "%s%s silent for %.0f s after %lu beats",
				 *stuck ? ", " : "", beat_name[i], t - last[i],
				 beats->n[i]);
	put_str("/proc/sysrq-trigger", "w");
	fail("a hang (no progress for %d s) in round %lu: %s; blocked tasks above (sysrq w); %s stays stuck",
	     HANG_SECS, beats->rounds + 1, stuck, SPARE_MNT);
}

/*
 * Watch the stress process: its exit status is the verdict, unless a
 * thread that should be making progress makes none for HANG_SECS.
 */
static void watch(pid_t pid)
{
	unsigned long seen[NR_BEATS] = { 0 };
	double last[NR_BEATS], t = mono_now();
	int status;

	for (int i = 0; i < NR_BEATS; i++)
		last[i] = t;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (r < 0)
			fail("waitpid: %s", strerror(errno));
		sleep(1);
		t = mono_now();
		for (int i = 0; i < NR_BEATS; i++) {
			if (beats->n[i] != seen[i] || !beats->busy[i]) {
				seen[i] = beats->n[i];
				last[i] = t;
			} else if (t - last[i] >= HANG_SECS) {
				report_hang(last, t);
			}
		}
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
	note("%lu rounds in %d s, %lu exclusive invalidate_lock takers (%s)",
	     beats->rounds, stress_secs(), beats->excl_ops,
	     is_xfs ? "FICLONERANGE" : "journal-data flag flips");
	if (beats->rounds < 2 || !beats->excl_ops)
		fail("too little ran to prove anything: %lu rounds, %lu exclusive takers",
		     beats->rounds, beats->excl_ops);
}

static void body(void)
{
	pid_t pid;

	beats = mmap(NULL, sizeof(*beats), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (beats == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	make_the_filesystem();
	fflush(stdout);
	pid = CHECK_OK(fork());
	if (pid == 0) {
		stress();
		_exit(0);
	}
	watch(pid);
}

/* the kernel's own hung-task report comes before the watchdog gives up */
static void lower_hung_task_timeout(void)
{
	get_str(HUNG_TASK, old_hung, sizeof(old_hung));
	put_str(HUNG_TASK, "20");
}

static void cleanup(void)
{
	remove_the_filesystem();
	restore_hung_task();
}

/*
 * Faults, reads and an exclusive invalidate_lock taker on one cold verity
 * file all keep making progress: verification takes no lock a waiting
 * reader holds.
 */
TEST_TIMEOUT(faults_reads_and_invalidate_lock_writers_never_deadlock,
	     BODY_SECS + 30)
{
	only_on_ext4_and_xfs();
	snprintf(file, sizeof(file), SPARE_MNT "/verity");
	snprintf(clone_dst, sizeof(clone_dst), SPARE_MNT "/clone");
	lower_hung_task_timeout();
	with_cleanup(body, cleanup, BODY_SECS);
}
