// SPDX-License-Identifier: GPL-2.0
/*
 * fs-verity: building a file's Merkle tree
 *
 * The tree is built in one pass over the data, by the calling task: each
 * data block's hash is appended to the lowest level's block in progress; a
 * full block is written, and its hash appended one level up, and so on.
 *
 * Every level has one block in progress.  Level positions are known in
 * advance from the data size, so nothing is read back, and each block is
 * written at its place in the tree as soon as it is complete.
 *
 * Memory is one block per level, whatever the file's size.
 */

#include "internal.h"

#include <linux/pagemap.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

struct fsv_builder {
	struct file *filp;
	struct inode *inode;
	const struct fsv_tree *tree;
	u8 *blocks;				/* levels in progress */
	unsigned int used[FSV_MAX_LEVELS];	/* bytes used in each */
	u64 written[FSV_MAX_LEVELS];		/* blocks written per level */
	u8 *root_hash;
};

static u8 *fsv_level_block(struct fsv_builder *b, unsigned int level)
{
	return b->blocks + ((size_t)level << b->tree->log_block_size);
}

/* Write the next block of @level at its place in the tree */
static int fsv_write_block(struct fsv_builder *b, unsigned int level,
			   const u8 *block)
{
	const struct fsv_tree *tree = b->tree;
	const struct fsverity_operations *vops = b->inode->i_sb->s_vop;
	u64 pos = (tree->level_start[level] + b->written[level]) <<
		  tree->log_block_size;
	int err;

	b->written[level]++;
	err = vops->write_merkle_tree_block(b->inode, block, pos,
					    tree->block_size);
	if (err)
		fsv_err(b->inode, "error %d writing Merkle tree block %llu",
			err, pos >> tree->log_block_size);
	return err;
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
 * Get a data folio, uptodate, reading ahead as a sequential reader of the
 * whole file would.
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

/* Hash the data blocks in order, appending each hash to the lowest level */
static int fsv_hash_data(struct fsv_builder *b)
{
	const struct fsv_tree *tree = b->tree;
	const u64 size = i_size_read(b->inode);
	const pgoff_t last_page = DIV_ROUND_UP_ULL(size, PAGE_SIZE);
	u8 digest[FS_VERITY_MAX_DIGEST_SIZE];
	struct file_ra_state ra;
	u64 pos = 0;
	u8 *tail = NULL;
	int err = 0;

	file_ra_state_init(&ra, b->filp->f_mapping);

	while (pos < size && !err) {
		struct folio *folio;
		size_t off;

		folio = fsv_data_folio(b, &ra, pos >> PAGE_SHIFT, last_page);
		if (IS_ERR(folio))
			return PTR_ERR(folio);

		for (off = pos - folio_pos(folio);
		     off < folio_size(folio) && pos < size && !err;
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
				err = fsv_hash_block(tree, tail ?: data, digest);
			kunmap_local(data);
			if (!err)
				err = fsv_add_hash(b, 0, digest);
		}
		folio_put(folio);

		/* A huge file must not hold up a kill */
		if (!err && fatal_signal_pending(current))
			err = -EINTR;
		cond_resched();
	}
	kfree(tail);
	return err;
}

/* Write out the partial blocks left at the end, lowest level first */
static int fsv_finish_levels(struct fsv_builder *b)
{
	const struct fsv_tree *tree = b->tree;
	u8 digest[FS_VERITY_MAX_DIGEST_SIZE];
	unsigned int level;
	u64 end;
	int err;

	for (level = 0; level < tree->num_levels; level++) {
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
	int err;

	/* An empty file has no blocks at all; its root hash is all zeroes */
	if (!i_size_read(b.inode))
		return 0;

	if (tree->num_levels) {
		b.blocks = kmalloc_array(tree->num_levels, tree->block_size,
					 GFP_KERNEL);
		if (!b.blocks)
			return -ENOMEM;
	}
	err = fsv_hash_data(&b);
	if (!err)
		err = fsv_finish_levels(&b);
	kfree(b.blocks);
	return err;
}
