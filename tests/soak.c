// SPDX-License-Identifier: GPL-2.0
/*
 * Concurrency soak: for a while (fsv.soak=<seconds> on the kernel command
 * line, else 30 s per filesystem), at the same time:
 *  - readers check verity files with read(), pread() and mmap() against the
 *    bytes they must hold, evicting pages now and then so they are verified
 *    again, including the file an enable race is working on;
 *  - a race master creates a file per round and lets three processes enable
 *    it at once while another keeps opening it for writing: at most one
 *    enable wins, the others get EEXIST/EBUSY/ETXTBSY; an open for write
 *    gets ETXTBSY while the enable runs and EPERM once verity is on, and a
 *    write fd that did open never sees a verity file; afterwards the file
 *    holds its bytes and has the digest fsverity-utils computes;
 *  - two enablers enable different files in parallel (parallel tree builds);
 *  - a cache dropper writes drop_caches in a loop.
 * Any wrong byte, unexpected errno or worker stuck past the end fails the
 * test; the host runner fails it on any kernel splat as well.
 */
#include "vutil.h"	/* first: defines _GNU_SOURCE */

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#define NTMPL 6
#define NREADERS 3
#define NOWN 2
#define RACERS 3

struct tmpl {
	size_t size;
	uint64_t seed;
	int alg, bs, salt_len;
	char ref[2 * MAX_DIGEST + 1];	/* fsverity digest of these bytes */
	unsigned char *data;
	char *stable;			/* a verity file with these bytes */
};

static struct tmpl T[NTMPL];

struct shared {
	volatile int stop;
	volatile int failed;
	char failmsg[1024];
	/* the file the race master works on (seqcount-like: gen odd = busy) */
	volatile unsigned int race_gen;
	char race_path[256];
	volatile int race_tmpl;
	volatile int race_round_done;
	long reads, preads, mmaps, bytes, evicts;
	long rounds, race_wins, race_lost_eexist, race_lost_ebusy, race_etxtbsy;
	long nobody_won, wopen_ok, wopen_etxtbsy, wopen_eperm;
	long own_enables, drops, race_file_reads;
};

static struct shared *sh;
static pid_t test_pid;

#define ADD(field, n) __atomic_fetch_add(&sh->field, (n), __ATOMIC_RELAXED)

static void __attribute__((noreturn, format(printf, 1, 2)))
wfail(const char *fmt, ...)
{
	va_list ap;

	if (!__atomic_exchange_n(&sh->failed, 1, __ATOMIC_SEQ_CST)) {
		va_start(ap, fmt);
		vsnprintf(sh->failmsg, sizeof(sh->failmsg), fmt, ap);
		va_end(ap);
	}
	sh->stop = 1;
	if (getpid() == test_pid)
		fail("%s", sh->failmsg);
	_exit(1);
}

static int soak_seconds(void)
{
	if (getenv("SOAK_SECONDS"))
		return atoi(getenv("SOAK_SECONDS"));
	return cmdline_int("fsv.soak=", 30);
}

static uint64_t rnd_state;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return rnd_state * 0x2545f4914f6cdd1dULL;
}

static void rnd_seed(uint64_t s)
{
	rnd_state = s * 0x9e3779b97f4a7c15ULL + 1;
}

static void evict(int fd)
{
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	ADD(evicts, 1);
}

static int wenable(int fd, const struct tmpl *t)
{
	unsigned char salt[32];

	make_salt(salt, t->salt_len);
	return enable_verity(fd, t->alg, ilog2_u32(t->bs),
			     t->salt_len ? salt : NULL, t->salt_len, NULL, 0);
}

static void wcheck_digest(int fd, const struct tmpl *t, const char *path)
{
	unsigned char d[MAX_DIGEST];
	char h[2 * MAX_DIGEST + 1];
	int alg, size, err = measure_verity(fd, d, &alg, &size);

	if (err)
		wfail("measure %s: %s", path, errno_name(err));
	to_hex(d, size, h);
	if (alg != t->alg || strcmp(h, t->ref))
		wfail("%s: digest %d:%s, expected %d:%s", path, alg, h, t->alg,
		      t->ref);
}

static void cmp_or_fail(const unsigned char *got, const struct tmpl *t,
			size_t off, size_t n, const char *how, const char *path)
{
	if (memcmp(got, t->data + off, n)) {
		size_t i = 0;

		while (got[i] == t->data[off + i])
			i++;
		wfail("%s %s: wrong byte at %zu: %#x, expected %#x", how, path,
		      off + i, got[i], t->data[off + i]);
	}
}

/* Whole file with read() in random chunk sizes.  0, or errno of open. */
static int check_read(const char *path, const struct tmpl *t)
{
	static unsigned char buf[1 << 18];
	size_t off = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return errno;
	for (;;) {
		size_t want = 1 + rnd() % sizeof(buf);
		ssize_t n = read(fd, buf, want);

		if (n < 0)
			wfail("read %s at %zu: %s", path, off, strerror(errno));
		if (n == 0)
			break;
		if (off + n > t->size)
			wfail("read %s: %zu bytes past the size %zu", path,
			      off + n - t->size, t->size);
		cmp_or_fail(buf, t, off, n, "read", path);
		off += n;
		ADD(bytes, n);
	}
	if (off != t->size)
		wfail("read %s: EOF at %zu of %zu", path, off, t->size);
	if (rnd() % 3 == 0)
		evict(fd);
	close(fd);
	ADD(reads, 1);
	return 0;
}

static int check_pread(const char *path, const struct tmpl *t)
{
	static unsigned char buf[1 << 17];
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return errno;
	for (int i = 0; i < 16; i++) {
		size_t off = t->size ? rnd() % (t->size + 64) : 0;
		size_t len = 1 + rnd() % sizeof(buf);
		size_t exp = off >= t->size ? 0 :
			(len < t->size - off ? len : t->size - off);
		ssize_t n = pread(fd, buf, len, off);

		if (n < 0)
			wfail("pread %s %zu@%zu: %s", path, len, off,
			      strerror(errno));
		if ((size_t)n != exp)
			wfail("pread %s %zu@%zu: got %zd bytes, expected %zu",
			      path, len, off, n, exp);
		cmp_or_fail(buf, t, off, n, "pread", path);
		ADD(bytes, n);
		if (rnd() % 8 == 0)
			evict(fd);
	}
	close(fd);
	ADD(preads, 1);
	return 0;
}

static sigjmp_buf bus_jmp;
static volatile size_t bus_off;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

static int check_mmap(const char *path, const struct tmpl *t)
{
	unsigned char *m;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return errno;
	if (!t->size) {
		close(fd);
		return 0;
	}
	m = mmap(NULL, t->size, PROT_READ, rnd() & 1 ? MAP_SHARED : MAP_PRIVATE,
		 fd, 0);
	if (m == MAP_FAILED)
		wfail("mmap %s: %s", path, strerror(errno));
	if (sigsetjmp(bus_jmp, 1))
		wfail("mmap %s: SIGBUS near byte %zu", path, (size_t)bus_off);
	for (int i = 0; i < 24; i++) {
		size_t off = rnd() % t->size;
		size_t len = 1 + rnd() % 65536;

		if (len > t->size - off)
			len = t->size - off;
		bus_off = off;
		cmp_or_fail(m + off, t, off, len, "mmap", path);
		ADD(bytes, len);
		if (rnd() % 6 == 0) {
			madvise(m, t->size, MADV_DONTNEED);
			evict(fd);
		}
	}
	munmap(m, t->size);
	close(fd);
	ADD(mmaps, 1);
	return 0;
}

static void reader(int id)
{
	signal(SIGBUS, on_sigbus);
	rnd_seed(1000 + id);
	while (!sh->stop) {
		int k = rnd() % NTMPL, mode = rnd() % 3, err;
		char path[256];
		const char *p = T[k].stable;

		if (rnd() % 4 == 0) {
			/* the file being raced on: its bytes never change */
			unsigned int g = __atomic_load_n(&sh->race_gen, __ATOMIC_ACQUIRE);

			if (g & 1)
				continue;
			k = sh->race_tmpl;
			memcpy(path, sh->race_path, sizeof(path));
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (g != sh->race_gen || !path[0])
				continue;
			p = path;
			ADD(race_file_reads, 1);
		}
		err = mode == 0 ? check_read(p, &T[k]) :
		      mode == 1 ? check_pread(p, &T[k]) : check_mmap(p, &T[k]);
		if (err && !(err == ENOENT && p == path))
			wfail("open %s: %s", p, strerror(err));
	}
	_exit(0);
}

static void dropper(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);

	/* 4 (on its own: 1..4 only) silences the console line of each drop */
	if (fd < 0 || write(fd, "4", 1) != 1)
		wfail("drop_caches: %s", strerror(errno));
	close(fd);
	rnd_seed(77);
	while (!sh->stop) {
		const char *what = rnd() % 3 == 0 ? "1" : "3";

		fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
		if (fd < 0 || write(fd, what, 1) != 1)
			wfail("drop_caches: %s", strerror(errno));
		close(fd);
		ADD(drops, 1);
		usleep(20000 + rnd() % 200000);
	}
	_exit(0);
}

static void wmake(const char *path, const struct tmpl *t)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	size_t off = 0;

	if (fd < 0)
		wfail("create %s: %s", path, strerror(errno));
	while (off < t->size) {
		ssize_t n = write(fd, t->data + off, t->size - off);

		if (n <= 0)
			wfail("write %s: %s", path, strerror(errno));
		off += n;
	}
	if (close(fd))
		wfail("close %s: %s", path, strerror(errno));
}

/* one verity file, checked whole: digest, bytes, no writer allowed */
static void check_verity_file(const char *path, const struct tmpl *t)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		wfail("open %s: %s", path, strerror(errno));
	if (!fd_has_verity_flag(fd))
		wfail("%s: no FS_VERITY_FL after a successful enable", path);
	wcheck_digest(fd, t, path);
	close(fd);
	if (check_read(path, t))
		wfail("open %s: %s", path, strerror(errno));
	fd = open(path, O_WRONLY);
	if (fd >= 0 || errno != EPERM)
		wfail("open %s for writing: %s, expected EPERM", path,
		      fd >= 0 ? "success" : errno_name(errno));
}

/* different files in parallel: each enable must simply work */
static void own_enabler(int id)
{
	char path[256];

	rnd_seed(500 + id);
	for (long n = 0; !sh->stop; n++) {
		const struct tmpl *t = &T[rnd() % NTMPL];
		int fd, err;

		snprintf(path, sizeof(path), "%s/soak-own%d-%ld", env.mnt, id, n);
		wmake(path, t);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			wfail("open %s: %s", path, strerror(errno));
		if (rnd() & 1) {
			fsync(fd);
			evict(fd);	/* the tree build reads the disk */
		}
		err = wenable(fd, t);
		if (err)
			wfail("enable %s (%zu bytes): %s", path, t->size,
			      errno_name(err));
		close(fd);
		check_verity_file(path, t);
		ADD(own_enables, 1);
		if (unlink(path))
			wfail("unlink %s: %s", path, strerror(errno));
	}
	_exit(0);
}

static void racer_enable(const char *path, const struct tmpl *t, int gate)
{
	char c;
	int fd = open(path, O_RDONLY), err;

	if (fd < 0)
		_exit(200);
	if (read(gate, &c, 1) < 0)
		_exit(201);
	usleep(rnd() % 3000);
	err = wenable(fd, t);
	_exit(err > 199 ? 199 : err);
}

/* opens for write until told to stop; exit 0, or wfail()s */
static void racer_writer(const char *path, const struct tmpl *t, int gate)
{
	char c;

	if (read(gate, &c, 1) < 0)
		_exit(201);
	while (!sh->race_round_done && !sh->stop) {
		int fd = open(path, O_WRONLY);

		if (fd >= 0) {
			size_t off = t->size ? rnd() % t->size : 0;
			size_t n = t->size - off < 4096 ? t->size - off : 4096;

			/* while this fd is open, nobody can enable verity */
			if (fd_has_verity_flag(fd))
				wfail("%s: opened for writing while verity is on",
				      path);
			/* the same bytes again: the contents never change */
			if (n && pwrite(fd, t->data + off, n, off) != (ssize_t)n)
				wfail("pwrite %s: %s", path, strerror(errno));
			usleep(rnd() % 2000);
			if (fd_has_verity_flag(fd))
				wfail("%s: verity got enabled under a writer", path);
			close(fd);
			ADD(wopen_ok, 1);
		} else if (errno == ETXTBSY) {
			ADD(wopen_etxtbsy, 1);
		} else if (errno == EPERM) {
			struct stat st;

			ADD(wopen_eperm, 1);
			fd = open(path, O_RDONLY);
			if (fd < 0 || fstat(fd, &st) || !fd_has_verity_flag(fd))
				wfail("%s: open for writing gave EPERM but the file is not verity",
				      path);
			close(fd);
			break;
		} else {
			wfail("open %s for writing during enable: %s", path,
			      errno_name(errno));
		}
		usleep(rnd() % 3000);
	}
	_exit(0);
}

static void race_master(void)
{
	char path[256], prev[256] = "";

	rnd_seed(4242);
	for (long n = 0; !sh->stop; n++) {
		/* prefer the bigger templates: the enable takes a while */
		int k = NTMPL / 2 + rnd() % (NTMPL - NTMPL / 2);
		const struct tmpl *t = &T[k];
		pid_t pids[RACERS + 1];
		int gate[2], wins = 0, writer = rnd() % 4 != 0;

		snprintf(path, sizeof(path), "%s/soak-race-%ld", env.mnt, n);
		wmake(path, t);
		/* publish it to the readers */
		__atomic_fetch_add(&sh->race_gen, 1, __ATOMIC_ACQ_REL);
		strcpy(sh->race_path, path);
		sh->race_tmpl = k;
		__atomic_fetch_add(&sh->race_gen, 1, __ATOMIC_ACQ_REL);
		if (prev[0] && unlink(prev))
			wfail("unlink %s: %s", prev, strerror(errno));
		strcpy(prev, path);

		sh->race_round_done = 0;
		if (pipe(gate))
			wfail("pipe: %s", strerror(errno));
		for (int i = 0; i < RACERS + writer; i++) {
			pids[i] = fork();
			if (pids[i] < 0)
				wfail("fork: %s", strerror(errno));
			if (pids[i] == 0) {
				close(gate[1]);
				rnd_seed(n * 10 + i + 1);
				if (i < RACERS)
					racer_enable(path, t, gate[0]);
				racer_writer(path, t, gate[0]);
			}
		}
		close(gate[0]);
		usleep(1000);
		close(gate[1]);	/* go */
		for (int i = 0; i < RACERS; i++) {
			int st, e;

			if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st))
				wfail("enable racer died (status %#x)", st);
			e = WEXITSTATUS(st);
			if (e == 0) {
				wins++;
				ADD(race_wins, 1);
			} else if (e == EEXIST) {
				ADD(race_lost_eexist, 1);
			} else if (e == EBUSY) {
				ADD(race_lost_ebusy, 1);
			} else if (e == ETXTBSY) {
				ADD(race_etxtbsy, 1);
			} else {
				wfail("racing enable of %s: %s", path,
				      e >= 200 ? "open/pipe failed" : errno_name(e));
			}
		}
		sh->race_round_done = 1;
		if (writer) {
			int st;

			if (waitpid(pids[RACERS], &st, 0) != pids[RACERS] ||
			    !WIFEXITED(st) || WEXITSTATUS(st))
				_exit(1);	/* it wfail()ed */
		}
		if (wins > 1)
			wfail("%s: %d racing enables all succeeded", path, wins);
		if (!wins) {
			/* the writer kept every enable out: nothing changed */
			int fd = open(path, O_RDWR);

			ADD(nobody_won, 1);
			if (fd < 0)
				wfail("%s: no enable won, yet not writable: %s",
				      path, strerror(errno));
			if (fd_has_verity_flag(fd))
				wfail("%s: every enable failed, yet verity is on",
				      path);
			close(fd);
			if (check_read(path, t))
				wfail("open %s: %s", path, strerror(errno));
			fd = open(path, O_RDONLY);
			if (fd < 0 || wenable(fd, t))
				wfail("%s: enable after the race failed", path);
			close(fd);
		}
		check_verity_file(path, t);
		ADD(rounds, 1);
	}
	_exit(0);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void setup_templates(void)
{
	static const size_t sizes[NTMPL] = {
		1, 4097, 65536 + 123, 300000, (1 << 20) + 4097, 3 << 20 };
	int small_bs = block_size_unsupported(4096) ? 1024 : 4096;

	for (int k = 0; k < NTMPL; k++) {
		struct tmpl *t = &T[k];
		char khex[2 * MAX_DIGEST + 1];
		int alg;

		t->size = sizes[k];
		t->seed = 0x50a6 + k;
		t->alg = k & 1 ? FS_VERITY_HASH_ALG_SHA512 : FS_VERITY_HASH_ALG_SHA256;
		t->bs = (k % 3 == 1 || small_bs == 1024) ? 1024 : 4096;
		t->salt_len = (int[]){ 0, 7, 32 }[k % 3];
		t->data = random_buf(t->size, t->seed);
		t->stable = test_path("stable%d", k);
		unlink(t->stable);
		write_file(t->stable, t->data, t->size);
		user_digest_hex(t->stable, t->alg, t->bs, t->salt_len, t->ref);
		must_enable(t->stable, t->alg, t->bs, t->salt_len);
		kernel_digest_hex(t->stable, khex, &alg);
		if (strcmp(khex, t->ref))
			fail("%s: kernel digest %s != fsverity digest %s",
			     t->stable, khex, t->ref);
	}
}

static void cleanup_files(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -f %s/soak-own* %s/soak-race-*",
		 env.mnt, env.mnt);
	run_cmd(NULL, 0, "%s", cmd);
	for (int k = 0; k < NTMPL; k++)
		unlink(T[k].stable);
}

TEST_TIMEOUT(readers_enablers_writers_and_drop_caches_race, -1)
{
	int secs = soak_seconds();
	pid_t pids[NREADERS + NOWN + 2];
	int np = 0, failed_exit = 0;
	double end;

	alarm(secs + 900);	/* the harness timeout is off: ours */
	test_pid = getpid();
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED);
	cleanup_files();
	setup_templates();

	for (int i = 0; i < NREADERS + NOWN + 2; i++) {
		pid_t pid;

		fflush(stdout);
		pid = fork();
		CHECK_OK(pid);
		if (pid == 0) {
			if (i < NREADERS)
				reader(i);
			else if (i < NREADERS + NOWN)
				own_enabler(i);
			else if (i == NREADERS + NOWN)
				dropper();
			else
				race_master();
			_exit(0);
		}
		pids[np++] = pid;
	}
	end = now() + secs;
	while (now() < end && !sh->stop)
		usleep(200000);
	sh->stop = 1;
	/* every worker finishes its step and exits; one that does not hangs */
	end = now() + 300;
	for (int i = 0; i < np; i++) {
		int st;

		while (waitpid(pids[i], &st, WNOHANG) != pids[i]) {
			if (now() > end) {
				char out[4096];

				run_cmd(out, sizeof(out), "cat /proc/%d/stack /proc/%d/wchan",
					pids[i], pids[i]);
				fail("worker %d (pid %d) still running 300 s after the end: %s",
				     i, pids[i], out);
			}
			usleep(100000);
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			failed_exit = 1;
	}
	note("%d s: %ld read, %ld pread, %ld mmap passes (%ld MiB checked, %ld on the raced file), %ld evictions, %ld drop_caches",
	     secs, sh->reads, sh->preads, sh->mmaps, sh->bytes >> 20,
	     sh->race_file_reads, sh->evicts, sh->drops);
	note("%ld race rounds: %ld won, lost %ld EEXIST + %ld EBUSY + %ld ETXTBSY, %ld rounds kept out by a writer; opens for write: %ld ok, %ld ETXTBSY, %ld EPERM; %ld parallel enables of own files",
	     sh->rounds, sh->race_wins, sh->race_lost_eexist,
	     sh->race_lost_ebusy, sh->race_etxtbsy, sh->nobody_won,
	     sh->wopen_ok, sh->wopen_etxtbsy, sh->wopen_eperm, sh->own_enables);
	if (sh->failed)
		fail("%s", sh->failmsg);
	if (failed_exit)
		fail("a worker died without saying why");
	if (!sh->rounds || !sh->own_enables || !sh->reads)
		fail("the soak did too little: %ld race rounds, %ld enables, %ld reads",
		     sh->rounds, sh->own_enables, sh->reads);
	/* the stable files are still intact after all that */
	for (int k = 0; k < NTMPL; k++)
		check_verity_file(T[k].stable, &T[k]);
	cleanup_files();
}
