// SPDX-License-Identifier: GPL-2.0
/*
 * fs-verity: verifying data as filesystems read it
 *
 * A data block is good if its hash matches the entry for it in the lowest
 * tree level, that tree block matches its entry one level up, and so on to
 * the root hash.  Walking the whole path for every block would rehash the
 * upper levels over and over, so each tree block that has been checked is
 * remembered in fsverity_info::verified and the walk stops at the first
 * such block.
 *
 * That memory is only as good as the page holding the tree block: once the
 * page is evicted, the next read may bring different bytes from the disk.
 * A page newly handed out by the filesystem has PG_checked clear.  With
 * page-sized tree blocks, PG_checked is the memory itself.  With smaller
 * blocks, the first user of a new page clears the page's bits in the
 * bitmap and then sets PG_checked, so a bit is only ever trusted for the
 * page instance it was set on.
 */

#include "internal.h"

#include <linux/bio.h>
#include <linux/highmem.h>
#include <linux/pagemap.h>
#include <trace/events/fsverity.h>

static struct workqueue_struct *fsv_read_wq;

/*
 * Has tree block @block, held in @page (page @tpage of the tree), been
 * checked against its parent while this page instance was cached?
 */
static bool fsv_block_verified(struct fsverity_info *vi, struct page *page,
			       pgoff_t tpage, u64 block)
{
	const unsigned int shift = PAGE_SHIFT - vi->tree.log_block_size;
	u64 first, last;

	/* A page-sized block is verified iff this instance of it was */
	if (!vi->verified)
		return PageChecked(page);

	if (PageChecked(page)) {
		/* Pairs with smp_wmb() below: see the bits it cleared */
		smp_rmb();
		return test_bit(block, vi->verified);
	}

	/*
	 * A new instance of the page: whatever was verified in an older one
	 * is void.  Racing threads may both get here; clearing twice merely
	 * costs a rehash.  The bits are cleared one by one, atomically,
	 * because neighbouring pages share bitmap words.
	 */
	first = (u64)tpage << shift;
	last = min_t(u64, first + (1U << shift), vi->tree.num_blocks);
	for (; first < last; first++)
		clear_bit(first, vi->verified);
	/* Order the clearing before PG_checked; pairs with smp_rmb() above */
	smp_wmb();
	SetPageChecked(page);
	return false;
}

static void fsv_set_verified(struct fsverity_info *vi, struct page *page,
			     u64 block)
{
	if (vi->verified)
		set_bit(block, vi->verified);
	else
		SetPageChecked(page);
}

/* One unverified tree block on the way from a data block to the root */
struct fsv_path_step {
	struct page *page;
	u64 block;
	unsigned int hash_offset;	/* of the child's hash in the block */
};

/* @level is the tree level whose block failed, or -1 for the data block */
static void fsv_report_mismatch(const struct fsverity_info *vi, u64 pos,
				int level, const u8 *want, const u8 *got)
{
	const struct fsv_tree *tree = &vi->tree;

	fsv_err(vi->inode,
		"FILE CORRUPTED! reading offset %llu, %s %llu has %s:%*phN instead of %s:%*phN",
		pos, level < 0 ? "data block" : "tree level",
		level < 0 ? pos >> tree->log_block_size : (u64)level,
		tree->alg->name, tree->digest_size, got,
		tree->alg->name, tree->digest_size, want);
	fsv_count(vi, FSV_STAT_FAILURES, 1);
	trace_fsverity_verify_failed(vi->inode, pos >> tree->log_block_size,
				     level);
}

/*
 * State carried from one data block to the next while verifying a folio
 * range or a bio: the lowest-level tree block last found good, with its
 * page held (so the block's bit stays valid).  Consecutive data blocks
 * mostly hash into the same tree block, and are checked against it
 * directly, without looking its page up, mapping it or testing its bit.
 */
struct fsv_verifier {
	struct inode *inode;
	struct fsverity_info *vi;
	pgoff_t ra_end;		/* on a miss, read tree pages up to here */
	struct page *leaf_page;	/* held, or NULL */
	u64 leaf_block;
};

static void fsv_verifier_init(struct fsv_verifier *v, struct inode *inode,
			      pgoff_t ra_end)
{
	v->inode = inode;
	v->vi = fsverity_get_info(inode);
	v->ra_end = ra_end;
	v->leaf_page = NULL;
}

static void fsv_keep_leaf(struct fsv_verifier *v, struct page *page,
			  u64 block)
{
	if (v->leaf_page)
		put_page(v->leaf_page);
	v->leaf_page = page;
	v->leaf_block = block;
}

static void fsv_verifier_done(struct fsv_verifier *v)
{
	fsv_keep_leaf(v, NULL, 0);
}

/* The page of the tree holding the lowest-level hash of data at @pos */
static pgoff_t fsv_leaf_page(const struct fsv_tree *tree, u64 pos)
{
	u64 block = tree->level_start[0] +
		    (pos >> (tree->log_block_size + tree->log_arity));

	return (block << tree->log_block_size) >> PAGE_SHIFT;
}

/* Copy out the hash at @hash_offset of tree block @block, held in @page */
static void fsv_copy_hash(const struct fsv_tree *tree, struct page *page,
			  u64 block, unsigned int hash_offset, u8 *out)
{
	const u8 *addr = kmap_local_page(page);

	memcpy(out, addr + offset_in_page(block << tree->log_block_size) +
	       hash_offset, tree->digest_size);
	kunmap_local(addr);
}

/*
 * Get tree page @tpage for a block of @level.  If it is not cached, the
 * filesystem may read with it the following lowest-level pages the reader
 * will need, up to v->ra_end.
 */
static struct page *fsv_tree_page(struct fsv_verifier *v, pgoff_t tpage,
				  int level)
{
	unsigned long ra = 0;
	struct page *page;

	if (level == 0 && v->ra_end > tpage + 1)
		ra = v->ra_end - tpage;
	page = v->inode->i_sb->s_vop->read_merkle_tree_page(v->inode, tpage,
							    ra);
	/*
	 * Count the requests made for a page instance not used before: the
	 * only ones that can have found it uncached, and so read ahead.
	 */
	if (ra && !IS_ERR(page) && !PageChecked(page))
		fsv_count(v->vi, FSV_STAT_TREE_READAHEAD, 1);
	return page;
}

/* Verify the data block at byte @pos of the file, mapped at @data */
static bool fsv_verify_block(struct fsv_verifier *v, const void *data,
			     u64 pos)
{
	struct inode *inode = v->inode;
	struct fsverity_info *vi = v->vi;
	const struct fsv_tree *tree = &vi->tree;
	const unsigned int arity_mask = (1U << tree->log_arity) - 1;
	struct fsv_path_step path[FSV_MAX_LEVELS];
	u8 want[FS_VERITY_MAX_DIGEST_SIZE];
	u8 got[FS_VERITY_MAX_DIGEST_SIZE];
	const u8 *want_hash = vi->root_hash;
	u64 index = pos >> tree->log_block_size;
	int depth = 0;
	int level;
	int err;
	bool ok = false;

	/*
	 * Blocks wholly past EOF (in the last folio) have no hash.  They must
	 * read as zeroes, which is what filesystems fill them with.
	 */
	if (pos >= inode->i_size) {
		if (!memchr_inv(data, 0, tree->block_size))
			return true;
		fsv_err(inode, "FILE CORRUPTED! data past EOF at offset %llu is not zeroed",
			pos);
		fsv_count(vi, FSV_STAT_FAILURES, 1);
		trace_fsverity_verify_failed(inode, index, -1);
		return false;
	}

	/* The common case: the same lowest-level block as the last one */
	if (v->leaf_page && tree->num_levels &&
	    v->leaf_block == tree->level_start[0] + (index >> tree->log_arity)) {
		fsv_copy_hash(tree, v->leaf_page, v->leaf_block,
			      (index & arity_mask) << tree->log_digest_size,
			      want);
		want_hash = want;
		fsv_count(vi, FSV_STAT_CACHE_HITS, 1);
		trace_fsverity_cache_hit(inode, v->leaf_block, 0);
		goto check_data;
	}

	/* Climb until a tree block already known good, or the root */
	for (level = 0; level < tree->num_levels; level++) {
		u64 block = tree->level_start[level] +
			    (index >> tree->log_arity);
		unsigned int hash_offset = (index & arity_mask) <<
					   tree->log_digest_size;
		pgoff_t tpage = (block << tree->log_block_size) >> PAGE_SHIFT;
		struct page *page;

		page = fsv_tree_page(v, tpage, level);
		if (IS_ERR(page)) {
			fsv_err(inode, "error %ld reading Merkle tree page %lu",
				PTR_ERR(page), tpage);
			goto out;
		}
		if (fsv_block_verified(vi, page, tpage, block)) {
			fsv_copy_hash(tree, page, block, hash_offset, want);
			want_hash = want;
			fsv_count(vi, FSV_STAT_CACHE_HITS, 1);
			trace_fsverity_cache_hit(inode, block, level);
			if (level == 0)
				fsv_keep_leaf(v, page, block);
			else
				put_page(page);
			break;
		}
		trace_fsverity_cache_miss(inode, block, level);
		path[depth].page = page;
		path[depth].block = block;
		path[depth].hash_offset = hash_offset;
		depth++;
		index >>= tree->log_arity;
	}

	/* Come down again, checking each block against the hash above it */
	while (depth > 0) {
		struct fsv_path_step *step = &path[depth - 1];
		const u8 *addr = kmap_local_page(step->page);
		const u8 *block = addr +
			offset_in_page(step->block << tree->log_block_size);
		bool match;

		err = fsv_hash_block(tree, block, got);
		match = !err && !memcmp(got, want_hash, tree->digest_size);
		if (match)
			memcpy(want, block + step->hash_offset,
			       tree->digest_size);
		kunmap_local(addr);
		if (err)
			goto hash_error;
		if (!match) {
			fsv_report_mismatch(vi, pos, depth - 1, want_hash, got);
			goto out;
		}
		want_hash = want;
		fsv_count(vi, FSV_STAT_TREE_HASHED, 1);
		trace_fsverity_tree_block_hashed(inode, step->block, depth - 1);
		/* Set while the page is held, so it is for this instance */
		fsv_set_verified(vi, step->page, step->block);
		depth--;
		if (depth == 0)
			fsv_keep_leaf(v, step->page, step->block);
		else
			put_page(step->page);
	}

check_data:
	err = fsv_hash_block(tree, data, got);
	if (err)
		goto hash_error;
	if (memcmp(got, want_hash, tree->digest_size)) {
		fsv_report_mismatch(vi, pos, -1, want_hash, got);
		goto out;
	}
	trace_fsverity_data_verified(inode, pos >> tree->log_block_size, -1);
	ok = true;
	goto out;

hash_error:
	/* Not a mismatch: nothing is known about the data */
	fsv_err(inode, "error %d hashing to verify offset %llu", err, pos);
out:
	while (depth > 0)
		put_page(path[--depth].page);
	return ok;
}

static bool fsv_verify_range(struct fsv_verifier *v, struct folio *folio,
			     size_t len, size_t offset)
{
	const unsigned int block_size = v->vi->tree.block_size;
	const u64 pos = folio_pos(folio);
	unsigned int nr = 0;

	if (WARN_ON_ONCE(!len || !IS_ALIGNED(len | offset, block_size) ||
			 !folio_test_locked(folio) ||
			 folio_test_uptodate(folio)))
		return false;

	for (; len; offset += block_size, len -= block_size) {
		const void *data = kmap_local_folio(folio, offset);
		bool ok = fsv_verify_block(v, data, pos + offset);

		kunmap_local(data);
		if (!ok)
			return false;
		nr++;
	}
	fsv_count(v->vi, FSV_STAT_DATA_VERIFIED, nr);
	return true;
}

/**
 * fsverity_verify_blocks() - verify data just read into a folio
 * @folio: the folio, locked and not yet uptodate
 * @len: bytes to verify, a multiple of the Merkle tree block size
 * @offset: where they start in @folio, likewise aligned
 *
 * Return: true if all the data matches the Merkle tree
 */
bool fsverity_verify_blocks(struct folio *folio, size_t len, size_t offset)
{
	struct fsv_verifier v;
	bool ok;

	fsv_verifier_init(&v, folio->mapping->host, 0);
	ok = fsv_verify_range(&v, folio, len, offset);
	fsv_verifier_done(&v);
	return ok;
}
EXPORT_SYMBOL_GPL(fsverity_verify_blocks);

#ifdef CONFIG_BLOCK

/*
 * A bio's folios are verified by up to this many CPUs at once, each taking
 * a contiguous share of at least FSV_MIN_SHARE bytes: below that, handing
 * work to another CPU costs more than it saves.
 */
#define FSV_MAX_SHARES	8
#define FSV_MIN_SHARE	SZ_64K

static struct workqueue_struct *fsv_share_wq;

/* Folios [first, end) of a bio, verified by one CPU */
struct fsv_bio_share {
	struct work_struct work;
	struct bio *bio;
	unsigned int first, end;
	pgoff_t ra_end;
	bool ok;
};

static void fsv_verify_share(struct fsv_bio_share *share)
{
	struct fsv_verifier v;
	struct folio_iter fi;
	unsigned int i = 0;

	fsv_verifier_init(&v, bio_first_folio_all(share->bio)->mapping->host,
			  share->ra_end);
	share->ok = true;
	bio_for_each_folio_all(fi, share->bio) {
		if (i >= share->end)
			break;
		if (i++ < share->first)
			continue;
		if (!fsv_verify_range(&v, fi.folio, fi.length, fi.offset)) {
			share->ok = false;
			break;
		}
	}
	fsv_verifier_done(&v);
}

static void fsv_share_work(struct work_struct *work)
{
	fsv_verify_share(container_of(work, struct fsv_bio_share, work));
}

/*
 * The tree page after the last one to read on a miss in the lowest level,
 * for a bio of @bytes of data at @pos: the pages that data needs, and for
 * a bio marked REQ_RAHEAD (the reader is streaming) at least one tree page
 * per 16 KiB of the bio, as much as mainline aims for, so that the next
 * bios find their tree pages cached.  Clamped to the tree's end, which is
 * where the lowest level is stored.
 */
static pgoff_t fsv_bio_ra_end(const struct fsv_tree *tree, struct bio *bio,
			      u64 pos, u64 bytes)
{
	pgoff_t end;

	if (!tree->num_levels || !bytes)
		return 0;
	end = fsv_leaf_page(tree, pos + bytes - 1) + 1;
	if (bio->bi_opf & REQ_RAHEAD)
		end = max_t(pgoff_t, end, fsv_leaf_page(tree, pos) +
			    (bytes >> (PAGE_SHIFT + 2)));
	return min_t(u64, end, DIV_ROUND_UP_ULL(tree->size, PAGE_SIZE));
}

/**
 * fsverity_verify_bio() - verify the data of a read bio that has completed
 * @bio: the bio; its segments are aligned to the Merkle tree block size
 *
 * On a mismatch, sets @bio->bi_status to an error.  For filesystems that
 * read into the page cache with bios; holes, which no bio reads, they verify
 * with fsverity_verify_folio().
 *
 * Verification is CPU bound and all of a bio's folios complete together, so
 * a large bio is split into shares verified on several CPUs at once, rather
 * than on the one CPU its completion happened to land on.
 *
 * The bio's size is taken from its folios: by the time a bio completes, the
 * block layer has advanced ->bi_iter to its end, so ->bi_iter.bi_size is 0.
 */
void fsverity_verify_bio(struct bio *bio)
{
	struct folio *first = bio_first_folio_all(bio);
	struct inode *inode = first->mapping->host;
	struct fsverity_info *vi = fsverity_get_info(inode);
	struct fsv_bio_share shares[FSV_MAX_SHARES];
	unsigned int nr_folios = 0, nr_shares, per_share, i;
	u64 pos = U64_MAX, bytes = 0;
	struct folio_iter fi;
	pgoff_t ra_end;
	bool ok;

	bio_for_each_folio_all(fi, bio) {
		pos = min(pos, folio_pos(fi.folio) + fi.offset);
		bytes += fi.length;
		nr_folios++;
	}
	ra_end = fsv_bio_ra_end(&vi->tree, bio, pos, bytes);

	nr_shares = min_t(u64, bytes / FSV_MIN_SHARE,
			  min(num_online_cpus(), FSV_MAX_SHARES));
	nr_shares = clamp(nr_shares, 1U, nr_folios);
	per_share = DIV_ROUND_UP(nr_folios, nr_shares);
	nr_shares = DIV_ROUND_UP(nr_folios, per_share);
	trace_fsverity_verify_bio(inode, pos, bytes, nr_shares,
				  ra_end ? ra_end - fsv_leaf_page(&vi->tree, pos) :
				  0);

	for (i = 0; i < nr_shares; i++) {
		shares[i].bio = bio;
		shares[i].first = i * per_share;
		shares[i].end = min(shares[i].first + per_share, nr_folios);
		shares[i].ra_end = ra_end;
		if (i > 0) {
			INIT_WORK_ONSTACK(&shares[i].work, fsv_share_work);
			queue_work(fsv_share_wq, &shares[i].work);
		}
	}
	if (nr_shares > 1)
		fsv_count(vi, FSV_STAT_BIO_SHARES, nr_shares - 1);
	/* This task takes the first share, then waits for the others */
	fsv_verify_share(&shares[0]);
	ok = shares[0].ok;
	for (i = 1; i < nr_shares; i++) {
		flush_work(&shares[i].work);
		destroy_work_on_stack(&shares[i].work);
		ok &= shares[i].ok;
	}
	if (!ok)
		bio->bi_status = BLK_STS_IOERR;
}
EXPORT_SYMBOL_GPL(fsverity_verify_bio);
#endif /* CONFIG_BLOCK */

/**
 * fsverity_enqueue_verify_work() - defer verification to process context
 * @work: the filesystem's work item that will verify a completed read
 *
 * Verification may sleep to read tree pages, so filesystems do it from
 * this workqueue rather than in bio completion.
 */
void fsverity_enqueue_verify_work(struct work_struct *work)
{
	queue_work(fsv_read_wq, work);
}
EXPORT_SYMBOL_GPL(fsverity_enqueue_verify_work);

void __init fsv_init_workqueue(void)
{
	/*
	 * High priority: a reader is blocked until this work completes.
	 * Bound, as mainline's: the work runs on the CPU that completed the
	 * read, which keeps a small read's latency low, and unbound queues
	 * cost crypto work too much scheduler latency on some systems.  The
	 * spare CPUs take part through the shares of large bios instead, on
	 * a queue of their own (unbound: spreading is their purpose), since
	 * the work splitting a bio waits for them.  Tree pages read while
	 * verifying may need work on other queues (decryption), never on
	 * these, so they cannot deadlock on themselves.
	 */
	fsv_read_wq = alloc_workqueue("fsverity_read_queue", WQ_HIGHPRI,
				      num_online_cpus());
#ifdef CONFIG_BLOCK
	fsv_share_wq = alloc_workqueue("fsverity_share_queue",
				       WQ_UNBOUND | WQ_HIGHPRI, 0);
	if (!fsv_share_wq)
		panic("fs-verity: cannot allocate its workqueues");
#endif
	if (!fsv_read_wq)
		panic("fs-verity: cannot allocate its workqueues");
}
