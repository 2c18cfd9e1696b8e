// SPDX-License-Identifier: GPL-2.0
/*
 * fs-verity: building a file's Merkle tree
 *
 * The tree is built in one pass over the data, in batches.  Hashing the
 * data blocks is nearly all the work, so within a batch it is split into
 * parts, which the calling task and up to one helper per other CPU the
 * caller may run on take one after another; each part writes its hashes
 * straight into the lowest tree level's blocks.  The batch's lowest-level
 * blocks are then written and hashed into the upper levels by the calling
 * task alone, in order, because filesystems expect
 * ->write_merkle_tree_block() to be called by one task.
 *
 * The helpers work for the caller, and are held to what the caller may
 * use: they run only on CPUs in its allowed mask (bound work items, queued
 * on those CPUs), their page cache is charged to its memory cgroup, their
 * number is capped by /proc/sys/fs/verity/enable_threads, and a fatal
 * signal to the caller stops them all within a folio.  (Their CPU time is
 * a kworker's, as for any work the kernel does on a task's behalf.)
 *
 * Every level has one block in progress.  Level positions are known in
 * advance from the data size, so nothing is read back.
 *
 * Blocks go to the filesystem a whole page at a time, never in part: one
 * ->write_merkle_tree_block() call per page, not per block, and no tree
 * page is ever left partly written.  That also keeps the tree safe on a
 * filesystem that, while verity is being enabled, zero-fills a tree page
 * that a read() crossing EOF finds not uptodate (ext4 in 6.12 did; the
 * series fixes it there): a partial write would keep those zeroes next to
 * the block it writes.  So each tree page is assembled here and written
 * once, whole (the tree's last page up to the tree's end).
 * Levels are produced lowest first but stored highest first, so a page
 * where two levels meet waits for the higher one: at most one page per
 * level is in progress plus one per boundary.  Memory is one batch, one
 * block per level and those pages, whatever the file's size.
 */

#include "internal.h"

#include <linux/memcontrol.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <trace/events/fsverity.h>

/* Bytes of lowest-level tree blocks hashed per batch */
#define FSV_BATCH_BYTES		SZ_256K

/* Fewer data blocks than this are not worth a work item */
#define FSV_MIN_JOB_BLOCKS	512

/*
 * Parts per CPU taking part in a batch.  The batch ends when its slowest
 * part does; smaller parts, taken by whichever CPU is free next, even out a
 * CPU that gets preempted (or the caller, which also watches for signals).
 */
#define FSV_JOBS_PER_CPU	4

/*
 * /proc/sys/fs/verity/enable_threads: the most CPUs (the caller's included)
 * that hash one enable's data; 0 for all the caller may run on, 1 to hash
 * in the calling task alone.
 */
int fsv_enable_threads;

static struct workqueue_struct *fsv_enable_wq;

/*
 * Tree pages in progress: one per level, and one where each two levels
 * meet.
 */
#define FSV_MAX_PAGES		(2 * FSV_MAX_LEVELS)

/* A page of the tree being assembled; @buf NULL when the slot is free */
struct fsv_tree_page {
	u8 *buf;
	pgoff_t index;				/* in the tree */
	unsigned int filled;			/* blocks copied in */
};

struct fsv_builder {
	struct file *filp;
	struct inode *inode;
	const struct fsv_tree *tree;
	u8 *blocks;				/* upper levels in progress */
	unsigned int used[FSV_MAX_LEVELS];	/* bytes used in each */
	u64 written[FSV_MAX_LEVELS];		/* blocks written per level */
	u8 *root_hash;
	u8 *batch;				/* lowest level, one batch */
	bool abort;				/* a part failed or was killed */
	struct fsv_tree_page pages[FSV_MAX_PAGES];	/* being assembled */
};

/* One part of a batch: hash data blocks [first, end) */
struct fsv_job {
	struct fsv_builder *b;
	u64 first, end;
	u8 *out;				/* where the first hash goes */
};

/* A batch: its parts, taken in turn by the caller and the helpers */
struct fsv_batch {
	struct fsv_builder *b;
	struct fsv_job *jobs;
	unsigned int nr_jobs;
	atomic_t next_job;			/* the next part to take */
	atomic_t helpers_running;
	struct completion helpers_done;
	struct mem_cgroup *memcg;		/* the caller's, for helpers */
	int err;				/* first error, under ->lock */
	spinlock_t lock;
};

/* A helper: a work item that takes parts of the batch on one CPU */
struct fsv_helper {
	struct work_struct work;
	struct fsv_batch *batch;
};

static u8 *fsv_level_block(struct fsv_builder *b, unsigned int level)
{
	return b->blocks + ((size_t)level << b->tree->log_block_size);
}

/* Blocks of the tree in its page @index: all but maybe in the last page */
static unsigned int fsv_blocks_in_page(const struct fsv_tree *tree,
				       pgoff_t index)
{
	const unsigned int per_page = PAGE_SIZE >> tree->log_block_size;
	const u64 first = (u64)index * per_page;

	return min_t(u64, per_page, tree->num_blocks - first);
}

/* The slot assembling tree page @index, a new one if none is */
static struct fsv_tree_page *fsv_tree_page(struct fsv_builder *b,
					   pgoff_t index)
{
	struct fsv_tree_page *free = NULL;
	unsigned int i;

	for (i = 0; i < FSV_MAX_PAGES; i++) {
		if (b->pages[i].buf && b->pages[i].index == index)
			return &b->pages[i];
		if (!b->pages[i].buf && !free)
			free = &b->pages[i];
	}
	if (WARN_ON_ONCE(!free))
		return ERR_PTR(-EINVAL);
	free->buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!free->buf)
		return ERR_PTR(-ENOMEM);
	free->index = index;
	free->filled = 0;
	return free;
}

/*
 * Put the next block of @level in its page, and hand the page to the
 * filesystem once it holds all of its blocks.
 */
static int fsv_write_block(struct fsv_builder *b, unsigned int level,
			   const u8 *block)
{
	const struct fsv_tree *tree = b->tree;
	const struct fsverity_operations *vops = b->inode->i_sb->s_vop;
	u64 pos = (tree->level_start[level] + b->written[level]) <<
		  tree->log_block_size;
	struct fsv_tree_page *tp = fsv_tree_page(b, pos >> PAGE_SHIFT);
	unsigned int n;
	int err;

	if (IS_ERR(tp))
		return PTR_ERR(tp);
	memcpy(tp->buf + offset_in_page(pos), block, tree->block_size);
	b->written[level]++;
	n = fsv_blocks_in_page(tree, tp->index);
	if (++tp->filled < n)
		return 0;

	pos = (u64)tp->index << PAGE_SHIFT;
	err = vops->write_merkle_tree_block(b->inode, tp->buf, pos,
					    n << tree->log_block_size);
	if (err)
		fsv_err(b->inode, "error %d writing Merkle tree page %lu",
			err, tp->index);
	kfree(tp->buf);
	tp->buf = NULL;
	return err;
}

/* Free the pages still being assembled (after an error) */
static void fsv_free_tree_pages(struct fsv_builder *b)
{
	unsigned int i;

	for (i = 0; i < FSV_MAX_PAGES; i++) {
		kfree(b->pages[i].buf);
		b->pages[i].buf = NULL;
	}
}

/* Zero pad, write and hash the block in progress at @level */
static int fsv_flush_level(struct fsv_builder *b, unsigned int level,
			   u8 *digest)
{
	const struct fsv_tree *tree = b->tree;
	u8 *block = fsv_level_block(b, level);
	int err;

	memset(block + b->used[level], 0, tree->block_size - b->used[level]);
	err = fsv_write_block(b, level, block);
	b->used[level] = 0;
	return err ?: fsv_hash_block(tree, block, digest);
}

/*
 * Append @digest to @level, carrying full blocks upwards.  A digest that
 * arrives above the top level is the root hash.
 */
static int fsv_add_hash(struct fsv_builder *b, unsigned int level, u8 *digest)
{
	const struct fsv_tree *tree = b->tree;
	int err;

	for (; level < tree->num_levels; level++) {
		memcpy(fsv_level_block(b, level) + b->used[level], digest,
		       tree->digest_size);
		b->used[level] += tree->digest_size;
		if (b->used[level] < tree->block_size)
			return 0;
		err = fsv_flush_level(b, level, digest);
		if (err)
			return err;
	}
	memcpy(b->root_hash, digest, tree->digest_size);
	return 0;
}

/*
 * Get a data folio, uptodate, reading ahead as a sequential reader would:
 * each job reads its whole range.
 */
static struct folio *fsv_data_folio(struct fsv_builder *b,
				    struct file_ra_state *ra, pgoff_t index,
				    pgoff_t end)
{
	struct address_space *mapping = b->filp->f_mapping;
	struct folio *folio;

	folio = __filemap_get_folio(mapping, index, FGP_ACCESSED, 0);
	if (IS_ERR(folio) || !folio_test_uptodate(folio)) {
		DEFINE_READAHEAD(ractl, b->filp, ra, mapping, index);

		page_cache_sync_ra(&ractl, end - index);
	} else if (folio_test_readahead(folio)) {
		DEFINE_READAHEAD(ractl, b->filp, ra, mapping, index);

		page_cache_async_ra(&ractl, folio, end - index);
	}
	if (!IS_ERR(folio))
		folio_put(folio);
	return read_mapping_folio(mapping, index, b->filp);
}

/* Hash data blocks [job->first, job->end) into job->out */
static int fsv_hash_range(const struct fsv_job *job, bool killable)
{
	struct fsv_builder *b = job->b;
	const struct fsv_tree *tree = b->tree;
	const u64 size = i_size_read(b->inode);
	u64 pos = job->first << tree->log_block_size;
	const u64 end = min(job->end << tree->log_block_size, size);
	const pgoff_t last_page = DIV_ROUND_UP_ULL(end, PAGE_SIZE);
	struct file_ra_state ra;
	u8 *out = job->out;
	u8 *tail = NULL;
	int err = 0;

	file_ra_state_init(&ra, b->filp->f_mapping);

	while (pos < end && !err) {
		struct folio *folio;
		size_t off;

		folio = fsv_data_folio(b, &ra, pos >> PAGE_SHIFT, last_page);
		if (IS_ERR(folio))
			return PTR_ERR(folio);

		for (off = pos - folio_pos(folio);
		     off < folio_size(folio) && pos < end && !err;
		     off += tree->block_size, pos += tree->block_size) {
			const u8 *data = kmap_local_folio(folio, off);

			/*
			 * The last block is hashed zero padded.  Copy it:
			 * the page cache past EOF may hold bytes written
			 * through a shared mapping.
			 */
			if (size - pos < tree->block_size) {
				tail = kzalloc(tree->block_size, GFP_KERNEL);
				if (tail)
					memcpy(tail, data, size - pos);
				else
					err = -ENOMEM;
			}
			if (!err)
				err = fsv_hash_block(tree, tail ?: data, out);
			kunmap_local(data);
			out += tree->digest_size;
		}
		folio_put(folio);

		/*
		 * A huge file must not hold up a kill.  Only the ioctl's own
		 * task can see its fatal signal; the others see ->abort.
		 */
		if (!err && killable && fatal_signal_pending(current))
			err = -EINTR;
		if (err)
			WRITE_ONCE(b->abort, true);
		else if (READ_ONCE(b->abort))
			err = -EINTR;
		cond_resched();
	}
	kfree(tail);
	return err;
}

static void fsv_batch_error(struct fsv_batch *batch, int err)
{
	spin_lock(&batch->lock);
	/* A real error rather than another part's -EINTR */
	if (!batch->err || batch->err == -EINTR)
		batch->err = err;
	spin_unlock(&batch->lock);
}

/* Take parts of @batch until none is left or the build is aborted */
static void fsv_take_jobs(struct fsv_batch *batch, bool killable)
{
	unsigned int i;
	int err;

	while ((i = atomic_inc_return(&batch->next_job) - 1) <
	       batch->nr_jobs) {
		if (READ_ONCE(batch->b->abort)) {
			fsv_batch_error(batch, -EINTR);
			return;
		}
		trace_fsverity_enable_part(batch->b->inode, i, batch->nr_jobs);
		err = fsv_hash_range(&batch->jobs[i], killable);
		if (err) {
			WRITE_ONCE(batch->b->abort, true);
			fsv_batch_error(batch, err);
			return;
		}
	}
}

static void fsv_helper_work(struct work_struct *work)
{
	struct fsv_batch *batch = container_of(work, struct fsv_helper,
					       work)->batch;
	struct mem_cgroup *old_memcg = set_active_memcg(batch->memcg);

	fsv_take_jobs(batch, false);
	set_active_memcg(old_memcg);
	if (atomic_dec_and_test(&batch->helpers_running))
		complete(&batch->helpers_done);
}

/*
 * Queue up to @max helpers on CPUs the caller may run on, other than the
 * one it runs on now.  A CPU going offline meanwhile only moves its helper
 * elsewhere, which is harmless.
 */
static unsigned int fsv_start_helpers(struct fsv_batch *batch,
				      struct fsv_helper *helpers,
				      unsigned int max)
{
	const int self = raw_smp_processor_id();
	unsigned int n = 0;
	int cpu;

	atomic_set(&batch->helpers_running, 1);	/* ours, until all queued */
	for_each_cpu_and(cpu, current->cpus_ptr, cpu_online_mask) {
		if (n >= max)
			break;
		if (cpu == self)
			continue;
		helpers[n].batch = batch;
		INIT_WORK(&helpers[n].work, fsv_helper_work);
		atomic_inc(&batch->helpers_running);
		queue_work_on(cpu, fsv_enable_wq, &helpers[n].work);
		n++;
	}
	return n;
}

/* How many CPUs, the caller's included, may hash this enable's data */
static unsigned int fsv_nr_cpus(void)
{
	unsigned int allowed = cpumask_weight_and(current->cpus_ptr,
						  cpu_online_mask);
	unsigned int cap = READ_ONCE(fsv_enable_threads);

	allowed = max(allowed, 1U);
	return cap ? min(cap, allowed) : allowed;
}

/*
 * Hash data blocks [first, end) into b->batch, in parts taken by the
 * calling task and its helpers.  The caller keeps taking parts while the
 * helpers do (it notices fatal signals between folios), then waits for
 * the helpers' last parts; a fatal signal meanwhile stops them too.
 */
static int fsv_hash_batch(struct fsv_builder *b, struct fsv_helper *helpers,
			  unsigned int nr_cpus, u64 first, u64 end)
{
	unsigned int n = clamp_t(u64, (end - first) / FSV_MIN_JOB_BLOCKS, 1,
				 FSV_JOBS_PER_CPU * nr_cpus);
	u64 per_job = DIV_ROUND_UP_ULL(end - first, n);
	struct fsv_batch batch = {
		.b = b,
		.nr_jobs = DIV_ROUND_UP_ULL(end - first, per_job),
		.next_job = ATOMIC_INIT(0),
	};
	unsigned int i;

	batch.jobs = kcalloc(batch.nr_jobs, sizeof(*batch.jobs), GFP_KERNEL);
	if (!batch.jobs)
		return -ENOMEM;
	for (i = 0; i < batch.nr_jobs; i++) {
		batch.jobs[i].b = b;
		batch.jobs[i].first = first + i * per_job;
		batch.jobs[i].end = min(batch.jobs[i].first + per_job, end);
		batch.jobs[i].out = b->batch +
			(batch.jobs[i].first - first) * b->tree->digest_size;
	}
	spin_lock_init(&batch.lock);
	init_completion(&batch.helpers_done);
	batch.memcg = get_mem_cgroup_from_mm(current->mm);

	fsv_start_helpers(&batch, helpers,
			  min(nr_cpus, batch.nr_jobs) - 1);
	fsv_take_jobs(&batch, true);
	if (!atomic_dec_and_test(&batch.helpers_running) &&
	    wait_for_completion_killable(&batch.helpers_done)) {
		/* Stop the helpers at their next folio, then wait for that */
		WRITE_ONCE(b->abort, true);
		fsv_batch_error(&batch, -EINTR);
		wait_for_completion(&batch.helpers_done);
	}
	mem_cgroup_put(batch.memcg);
	kfree(batch.jobs);
	return batch.err;
}

/*
 * Write the lowest-level blocks of a batch holding @count hashes, and carry
 * their hashes up.  Without upper levels the single hash is the root.
 */
static int fsv_commit_batch(struct fsv_builder *b, u64 count)
{
	const struct fsv_tree *tree = b->tree;
	size_t len = count << tree->log_digest_size;
	u8 digest[FS_VERITY_MAX_DIGEST_SIZE];
	size_t off;
	int err;

	if (!tree->num_levels) {
		memcpy(b->root_hash, b->batch, tree->digest_size);
		return 0;
	}
	memset(b->batch + len, 0, round_up(len, tree->block_size) - len);
	for (off = 0; off < len; off += tree->block_size) {
		err = fsv_write_block(b, 0, b->batch + off);
		if (!err)
			err = fsv_hash_block(tree, b->batch + off, digest);
		if (!err)
			err = fsv_add_hash(b, 1, digest);
		if (err)
			return err;
	}
	return 0;
}

/* Write out the partial blocks left at the end, lowest level first */
static int fsv_finish_levels(struct fsv_builder *b)
{
	const struct fsv_tree *tree = b->tree;
	u8 digest[FS_VERITY_MAX_DIGEST_SIZE];
	unsigned int level, i;
	u64 end;
	int err;

	for (level = 1; level < tree->num_levels; level++) {
		if (!b->used[level])
			continue;
		err = fsv_flush_level(b, level, digest);
		if (!err)
			err = fsv_add_hash(b, level + 1, digest);
		if (err)
			return err;
	}

	/* Each level must have come out exactly as long as planned */
	end = tree->num_blocks;
	for (level = 0; level < tree->num_levels; level++) {
		if (WARN_ON_ONCE(tree->level_start[level] + b->written[level] !=
				 end))
			return -EINVAL;
		end = tree->level_start[level];
	}
	/* ... and so every page must have been completed and written */
	for (i = 0; i < FSV_MAX_PAGES; i++)
		if (WARN_ON_ONCE(b->pages[i].buf))
			return -EINVAL;
	return 0;
}

/**
 * fsv_build_tree() - build and write the Merkle tree of a file
 * @filp: the file, open for reading, with writers locked out
 * @tree: the shape of its tree
 * @root_hash: where the root hash goes
 *
 * Return: 0 on success; -EINTR if a fatal signal arrived; another -errno
 */
int fsv_build_tree(struct file *filp, const struct fsv_tree *tree,
		   u8 *root_hash)
{
	struct fsv_builder b = {
		.filp = filp,
		.inode = file_inode(filp),
		.tree = tree,
		.root_hash = root_hash,
	};
	const u64 data_blocks = DIV_ROUND_UP_ULL(i_size_read(b.inode),
						 tree->block_size);
	const u64 per_batch = (u64)FSV_BATCH_BYTES >> tree->log_digest_size;
	const unsigned int nr_cpus = fsv_nr_cpus();
	struct fsv_helper *helpers = NULL;
	u64 first;
	int err = 0;

	/* An empty file has no blocks at all; its root hash is all zeroes */
	if (!data_blocks)
		return 0;

	b.batch = kvmalloc(FSV_BATCH_BYTES, GFP_KERNEL);
	if (tree->num_levels > 1)
		b.blocks = kmalloc_array(tree->num_levels, tree->block_size,
					 GFP_KERNEL);
	if (nr_cpus > 1)
		helpers = kcalloc(nr_cpus - 1, sizeof(*helpers), GFP_KERNEL);
	if (!b.batch || (tree->num_levels > 1 && !b.blocks) ||
	    (nr_cpus > 1 && !helpers)) {
		err = -ENOMEM;
		goto out;
	}

	for (first = 0; first < data_blocks && !err; first += per_batch) {
		u64 end = min(first + per_batch, data_blocks);

		err = fsv_hash_batch(&b, helpers, nr_cpus, first, end);
		if (!err)
			err = fsv_commit_batch(&b, end - first);
	}
	if (!err)
		err = fsv_finish_levels(&b);
out:
	fsv_free_tree_pages(&b);
	kfree(helpers);
	kvfree(b.batch);
	kfree(b.blocks);
	return err;
}

void __init fsv_init_enable_workqueue(void)
{
	/*
	 * Bound, so that a helper runs on the CPU it was queued on; CPU
	 * intensive, so that hashing does not hold up the CPU's other work.
	 */
	fsv_enable_wq = alloc_workqueue("fsverity_enable",
					WQ_CPU_INTENSIVE, 0);
	if (!fsv_enable_wq)
		panic("fs-verity: cannot allocate its workqueues");
}
