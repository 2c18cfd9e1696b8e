// SPDX-License-Identifier: GPL-2.0
/*
 * fs-verity: building a file's Merkle tree
 *
 * The tree is built in one pass over the data, in batches.  Hashing the
 * data blocks is nearly all the work, so within a batch it is split over
 * the online CPUs; each part writes its hashes straight into the lowest
 * tree level's blocks.  The batch's lowest-level blocks are then written and
 * hashed into the upper levels by the calling task alone, in order, because
 * filesystems expect ->write_merkle_tree_block() to be called by one task.
 *
 * Every level has one block in progress.  Level positions are known in
 * advance from the data size, so nothing is read back.
 *
 * Blocks go to the filesystem a whole page at a time, never in part.  While
 * verity is being enabled, filesystems still treat what is past EOF as a
 * hole: a read() crossing EOF that finds a tree page being created there
 * fills it with zeroes and marks it uptodate.  A write of less than the page
 * (or of less than a filesystem block) would then keep those zeroes next to
 * the block it writes, and on a filesystem with blocks larger than the
 * Merkle tree's they even reach the disk.  So each tree page is assembled
 * here and written once, whole (the tree's last page up to the tree's end).
 * Levels are produced lowest first but stored highest first, so a page
 * where two levels meet waits for the higher one: at most one page per
 * level is in progress plus one per boundary.  Memory is one batch, one
 * block per level and those pages, whatever the file's size.
 */

#include "internal.h"

#include <linux/pagemap.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

/* Bytes of lowest-level tree blocks hashed per batch */
#define FSV_BATCH_BYTES		SZ_256K

/* Fewer data blocks than this are not worth a work item */
#define FSV_MIN_JOB_BLOCKS	512

/*
 * Parts per online CPU in a batch.  The batch ends when its slowest part
 * does; with one part per CPU, a part that gets preempted (or the caller's,
 * which also watches for signals) leaves the other CPUs idle meanwhile.
 * Smaller parts even that out.
 */
#define FSV_JOBS_PER_CPU	4

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

/* One CPU's share of a batch: hash data blocks [first, end) */
struct fsv_job {
	struct work_struct work;
	struct fsv_builder *b;
	u64 first, end;
	u8 *out;				/* where the first hash goes */
	int err;
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
static int fsv_hash_range(struct fsv_job *job, bool killable)
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

static void fsv_job_work(struct work_struct *work)
{
	struct fsv_job *job = container_of(work, struct fsv_job, work);

	job->err = fsv_hash_range(job, false);
}

/*
 * Hash data blocks [first, end) into b->batch, spread over the CPUs.  The
 * calling task takes the first part itself, so that it keeps noticing
 * fatal signals, and waits for the others.
 */
static int fsv_hash_batch(struct fsv_builder *b, u64 first, u64 end)
{
	unsigned int n = clamp_t(u64, (end - first) / FSV_MIN_JOB_BLOCKS, 1,
				 FSV_JOBS_PER_CPU * num_online_cpus());
	struct fsv_job *jobs;
	u64 per_job = DIV_ROUND_UP_ULL(end - first, n);
	unsigned int i;
	int err = 0;

	jobs = kcalloc(n, sizeof(*jobs), GFP_KERNEL);
	if (!jobs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		jobs[i].b = b;
		jobs[i].first = first + i * per_job;
		jobs[i].end = min(jobs[i].first + per_job, end);
		jobs[i].out = b->batch +
			(jobs[i].first - first) * b->tree->digest_size;
		if (i > 0) {
			INIT_WORK(&jobs[i].work, fsv_job_work);
			queue_work(system_unbound_wq, &jobs[i].work);
		}
	}
	jobs[0].err = fsv_hash_range(&jobs[0], true);
	for (i = 0; i < n; i++) {
		if (i > 0)
			flush_work(&jobs[i].work);
		/* Report a real error rather than another part's -EINTR */
		if (jobs[i].err && (!err || err == -EINTR))
			err = jobs[i].err;
	}
	kfree(jobs);
	return err;
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
	u64 first;
	int err = 0;

	/* An empty file has no blocks at all; its root hash is all zeroes */
	if (!data_blocks)
		return 0;

	b.batch = kvmalloc(FSV_BATCH_BYTES, GFP_KERNEL);
	if (tree->num_levels > 1)
		b.blocks = kmalloc_array(tree->num_levels, tree->block_size,
					 GFP_KERNEL);
	if (!b.batch || (tree->num_levels > 1 && !b.blocks)) {
		err = -ENOMEM;
		goto out;
	}

	for (first = 0; first < data_blocks && !err; first += per_batch) {
		u64 end = min(first + per_batch, data_blocks);

		err = fsv_hash_batch(&b, first, end);
		if (!err)
			err = fsv_commit_batch(&b, end - first);
	}
	if (!err)
		err = fsv_finish_levels(&b);
out:
	fsv_free_tree_pages(&b);
	kvfree(b.batch);
	kfree(b.blocks);
	return err;
}
