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
 * A page newly handed out by the filesystem has PG_checked clear; the first
 * user clears the page's bits in the bitmap and then sets PG_checked, so a
 * bit is only ever trusted for the page instance it was set on.
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
	smp_wmb();
	SetPageChecked(page);
	return false;
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

/*
 * Verify the data block at byte @pos of the file, mapped at @data.
 * @ra_pages: how many tree pages to read ahead if the lowest level's page
 * is not cached.
 */
static bool fsv_verify_block(struct inode *inode, struct fsverity_info *vi,
			     const void *data, u64 pos, unsigned long ra_pages)
{
	const struct fsv_tree *tree = &vi->tree;
	struct fsv_path_step path[FSV_MAX_LEVELS];
	u8 want[FS_VERITY_MAX_DIGEST_SIZE];
	u8 got[FS_VERITY_MAX_DIGEST_SIZE];
	const u8 *want_hash = vi->root_hash;
	u64 index = pos >> tree->log_block_size;
	int depth = 0;
	int level;
	bool ok = false;

	/*
	 * Blocks wholly past EOF (in the last folio) have no hash.  They must
	 * read as zeroes, which is what filesystems fill them with.
	 */
	if (pos >= inode->i_size)
		return !memchr_inv(data, 0, tree->block_size);

	/* Climb until a tree block already known good, or the root */
	for (level = 0; level < tree->num_levels; level++) {
		u64 block = tree->level_start[level] +
			    (index >> tree->log_arity);
		unsigned int hash_offset = (index & ((1U << tree->log_arity) - 1))
					   << tree->log_digest_size;
		pgoff_t tpage = (block << tree->log_block_size) >> PAGE_SHIFT;
		struct page *page;

		page = inode->i_sb->s_vop->read_merkle_tree_page(inode, tpage,
						level == 0 ? ra_pages : 0);
		if (IS_ERR(page)) {
			fsv_err(inode, "error %ld reading Merkle tree page %lu",
				PTR_ERR(page), tpage);
			goto out;
		}
		if (fsv_block_verified(vi, page, tpage, block)) {
			const u8 *addr = kmap_local_page(page);

			memcpy(want, addr +
			       offset_in_page(block << tree->log_block_size) +
			       hash_offset, tree->digest_size);
			kunmap_local(addr);
			put_page(page);
			want_hash = want;
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

		match = !fsv_hash_block(tree, block, got) &&
			!memcmp(got, want_hash, tree->digest_size);
		if (match)
			memcpy(want, block + step->hash_offset,
			       tree->digest_size);
		kunmap_local(addr);
		if (!match) {
			fsv_report_mismatch(vi, pos, depth - 1, want_hash, got);
			goto out;
		}
		want_hash = want;
		/* Set while the page is held, so the bit is for this instance */
		set_bit(step->block, vi->verified);
		put_page(step->page);
		depth--;
	}

	if (fsv_hash_block(tree, data, got) ||
	    memcmp(got, want_hash, tree->digest_size)) {
		fsv_report_mismatch(vi, pos, -1, want_hash, got);
		goto out;
	}
	ok = true;
out:
	while (depth > 0)
		put_page(path[--depth].page);
	return ok;
}

static bool fsv_verify_range(struct folio *folio, size_t len, size_t offset,
			     unsigned long ra_pages)
{
	struct inode *inode = folio->mapping->host;
	struct fsverity_info *vi = fsverity_get_info(inode);
	const unsigned int block_size = vi->tree.block_size;
	const u64 pos = folio_pos(folio);

	if (WARN_ON_ONCE(!len || !IS_ALIGNED(len | offset, block_size) ||
			 !folio_test_locked(folio) ||
			 folio_test_uptodate(folio)))
		return false;

	for (; len; offset += block_size, len -= block_size) {
		const void *data = kmap_local_folio(folio, offset);
		bool ok = fsv_verify_block(inode, vi, data, pos + offset,
					   ra_pages);

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
	return fsv_verify_range(folio, len, offset, 0);
}
EXPORT_SYMBOL_GPL(fsverity_verify_blocks);

#ifdef CONFIG_BLOCK
/**
 * fsverity_verify_bio() - verify the data of a read bio that has completed
 * @bio: the bio; its segments are aligned to the Merkle tree block size
 *
 * On a mismatch, sets @bio->bi_status to an error and stops.  For
 * filesystems that read into the page cache with bios; holes, which no bio
 * reads, they verify with fsverity_verify_folio().
 */
void fsverity_verify_bio(struct bio *bio)
{
	struct inode *inode = bio_first_folio_all(bio)->mapping->host;
	const struct fsv_tree *tree = &fsverity_get_info(inode)->tree;
	unsigned long ra_pages;
	struct folio_iter fi;

	/*
	 * If the lowest-level tree page is not cached, read with it the rest
	 * of that level this bio's data needs, rather than one page per miss.
	 */
	ra_pages = DIV_ROUND_UP(bio->bi_iter.bi_size >> tree->log_arity,
				PAGE_SIZE) + 1;

	bio_for_each_folio_all(fi, bio) {
		if (!fsv_verify_range(fi.folio, fi.length, fi.offset,
				      ra_pages)) {
			bio->bi_status = BLK_STS_IOERR;
			return;
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
	 * High priority: a reader is blocked until this work completes.  Tree
	 * pages it reads may need work on other workqueues (decryption), but
	 * never on this one, so it cannot deadlock on itself.
	 */
	fsv_read_wq = alloc_workqueue("fsverity_read_queue", WQ_HIGHPRI,
				      num_online_cpus());
	if (!fsv_read_wq)
		panic("fs-verity: cannot allocate its read workqueue");
}
