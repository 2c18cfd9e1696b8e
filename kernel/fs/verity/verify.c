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
}

/* What verifying the blocks of a folio range or a bio works with */
struct fsv_verifier {
	struct inode *inode;
	struct fsverity_info *vi;
};

static void fsv_verifier_init(struct fsv_verifier *v, struct inode *inode)
{
	v->inode = inode;
	v->vi = fsverity_get_info(inode);
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
		return false;
	}

	/* Climb until a tree block already known good, or the root */
	for (level = 0; level < tree->num_levels; level++) {
		u64 block = tree->level_start[level] +
			    (index >> tree->log_arity);
		unsigned int hash_offset = (index & arity_mask) <<
					   tree->log_digest_size;
		pgoff_t tpage = (block << tree->log_block_size) >> PAGE_SHIFT;
		struct page *page;

		/*
		 * No readahead: this may run at a bio's completion, with its
		 * folios locked, and a filesystem reading ahead takes
		 * mapping->invalidate_lock, which a page fault waiting for one
		 * of those folios may hold (see "Reads" in fsverity.rst).
		 */
		page = inode->i_sb->s_vop->read_merkle_tree_page(inode, tpage,
								 0);
		if (IS_ERR(page)) {
			fsv_err(inode, "error %ld reading Merkle tree page %lu",
				PTR_ERR(page), tpage);
			goto out;
		}
		if (fsv_block_verified(vi, page, tpage, block)) {
			fsv_copy_hash(tree, page, block, hash_offset, want);
			want_hash = want;
			put_page(page);
			break;
		}
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
		/* Set while the page is held, so it is for this instance */
		fsv_set_verified(vi, step->page, step->block);
		put_page(step->page);
		depth--;
	}

	err = fsv_hash_block(tree, data, got);
	if (err)
		goto hash_error;
	if (memcmp(got, want_hash, tree->digest_size)) {
		fsv_report_mismatch(vi, pos, -1, want_hash, got);
		goto out;
	}
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
	}
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

	fsv_verifier_init(&v, folio->mapping->host);
	return fsv_verify_range(&v, folio, len, offset);
}
EXPORT_SYMBOL_GPL(fsverity_verify_blocks);

#ifdef CONFIG_BLOCK

/**
 * fsverity_verify_bio() - verify the data of a read bio that has completed
 * @bio: the bio; its segments are aligned to the Merkle tree block size
 *
 * On a mismatch, sets @bio->bi_status to an error.  For filesystems that
 * read into the page cache with bios; holes, which no bio reads, they verify
 * with fsverity_verify_folio().
 */
void fsverity_verify_bio(struct bio *bio)
{
	struct fsv_verifier v;
	struct folio_iter fi;

	fsv_verifier_init(&v, bio_first_folio_all(bio)->mapping->host);
	bio_for_each_folio_all(fi, bio) {
		if (!fsv_verify_range(&v, fi.folio, fi.length, fi.offset)) {
			bio->bi_status = BLK_STS_IOERR;
			break;
		}
	}
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
	 * cost crypto work too much scheduler latency on some systems.  Tree
	 * pages read while verifying may need work on other queues
	 * (decryption), never on this one, so it cannot deadlock on itself.
	 */
	fsv_read_wq = alloc_workqueue("fsverity_read_queue", WQ_HIGHPRI,
				      num_online_cpus());
	if (!fsv_read_wq)
		panic("fs-verity: cannot allocate its workqueue");
}
