// SPDX-License-Identifier: GPL-2.0
/*
 * fs-verity: FS_IOC_ENABLE_VERITY, building a file's Merkle tree
 */

#include "internal.h"

#include <linux/mount.h>
#include <linux/pagemap.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

/*
 * A Merkle tree being built in one pass over the data.  Each level has one
 * block in progress; when it fills up it is written out and its hash goes
 * into the level above.  Level positions are known in advance from the data
 * size, so nothing is ever read back and memory is one block per level.
 */
struct fsv_builder {
	struct inode *inode;
	const struct fsv_tree *tree;
	u8 *blocks;				/* num_levels blocks in progress */
	unsigned int used[FSV_MAX_LEVELS];	/* bytes used in each */
	u64 written[FSV_MAX_LEVELS];		/* blocks written per level */
	u8 *root_hash;
};

static u8 *fsv_level_block(struct fsv_builder *b, unsigned int level)
{
	return b->blocks + ((size_t)level << b->tree->log_block_size);
}

/* Zero pad, write and hash the block in progress at @level */
static int fsv_flush_level(struct fsv_builder *b, unsigned int level,
			   u8 *digest)
{
	const struct fsv_tree *tree = b->tree;
	u8 *block = fsv_level_block(b, level);
	u64 pos;
	int err;

	memset(block + b->used[level], 0, tree->block_size - b->used[level]);
	pos = (tree->level_start[level] + b->written[level]) <<
	      tree->log_block_size;
	err = b->inode->i_sb->s_vop->write_merkle_tree_block(b->inode, block,
							      pos,
							      tree->block_size);
	if (err) {
		fsv_err(b->inode, "error %d writing Merkle tree block %llu",
			err, pos >> tree->log_block_size);
		return err;
	}
	b->written[level]++;
	b->used[level] = 0;
	return fsv_hash_block(tree, block, digest);
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

/*
 * Get a data folio, uptodate, reading ahead as a sequential reader would:
 * the whole file is going to be read.
 */
static struct folio *fsv_data_folio(struct file *filp, pgoff_t index,
				    pgoff_t end)
{
	struct address_space *mapping = filp->f_mapping;
	struct folio *folio;

	folio = __filemap_get_folio(mapping, index, FGP_ACCESSED, 0);
	if (IS_ERR(folio) || !folio_test_uptodate(folio)) {
		DEFINE_READAHEAD(ractl, filp, &filp->f_ra, mapping, index);

		page_cache_sync_ra(&ractl, end - index);
	} else if (folio_test_readahead(folio)) {
		DEFINE_READAHEAD(ractl, filp, &filp->f_ra, mapping, index);

		page_cache_async_ra(&ractl, folio, end - index);
	}
	if (!IS_ERR(folio))
		folio_put(folio);
	return read_mapping_folio(mapping, index, filp);
}

/* Hash every data block of the file into the level 0 of the tree */
static int fsv_hash_data(struct file *filp, struct fsv_builder *b)
{
	const struct fsv_tree *tree = b->tree;
	const u64 size = i_size_read(b->inode);
	const pgoff_t end = DIV_ROUND_UP_ULL(size, PAGE_SIZE);
	u8 digest[FS_VERITY_MAX_DIGEST_SIZE];
	u8 *tail = NULL;
	u64 pos = 0;
	int err = 0;

	while (pos < size && !err) {
		struct folio *folio;
		size_t off;

		folio = fsv_data_folio(filp, pos >> PAGE_SHIFT, end);
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

		/* A huge file must not hold up a kill, or hog the CPU */
		if (!err && fatal_signal_pending(current))
			err = -EINTR;
		cond_resched();
	}
	kfree(tail);
	return err;
}

/* Build and write the Merkle tree of @filp, and compute its root hash */
static int fsv_build_tree(struct file *filp, const struct fsv_tree *tree,
			  u8 *root_hash)
{
	struct fsv_builder b = {
		.inode = file_inode(filp),
		.tree = tree,
		.root_hash = root_hash,
	};
	int err;

	/* An empty file has no blocks at all; its root hash is all zeroes */
	if (i_size_read(b.inode) == 0)
		return 0;

	if (tree->num_levels) {
		b.blocks = kmalloc_array(tree->num_levels, tree->block_size,
					 GFP_KERNEL);
		if (!b.blocks)
			return -ENOMEM;
	}
	err = fsv_hash_data(filp, &b);
	if (!err)
		err = fsv_finish_levels(&b);
	kfree(b.blocks);
	return err;
}

/* Everything enable does once the arguments are known to be sane */
static int fsv_enable(struct file *filp, const struct fsverity_enable_arg *arg)
{
	struct inode *inode = file_inode(filp);
	const struct fsverity_operations *vops = inode->i_sb->s_vop;
	struct fsverity_descriptor *desc;
	size_t desc_size = sizeof(*desc) + arg->sig_size;
	struct fsverity_info *vi;
	struct fsv_tree tree;
	int err;

	desc = kzalloc(desc_size, GFP_KERNEL);
	if (!desc)
		return -ENOMEM;
	desc->version = 1;
	desc->hash_algorithm = arg->hash_algorithm;
	desc->log_blocksize = ilog2(arg->block_size);
	desc->salt_size = arg->salt_size;
	desc->sig_size = cpu_to_le32(arg->sig_size);
	desc->data_size = cpu_to_le64(i_size_read(inode));
	if (copy_from_user(desc->salt, u64_to_user_ptr(arg->salt_ptr),
			   arg->salt_size) ||
	    copy_from_user(desc->signature, u64_to_user_ptr(arg->sig_ptr),
			   arg->sig_size)) {
		err = -EFAULT;
		goto out_free_desc;
	}

	err = fsv_tree_init(&tree, inode, desc->hash_algorithm,
			    desc->log_blocksize, desc->salt, desc->salt_size,
			    le64_to_cpu(desc->data_size));
	if (err)
		goto out_free_desc;

	/* Turn away what the signature check would refuse after all the work */
	if (IS_ENABLED(CONFIG_FS_VERITY_BUILTIN_SIGNATURES) &&
	    !arg->sig_size && fsv_require_signatures) {
		fsv_err(inode, "signatures are required, and none was given");
		err = -EPERM;
		goto out_destroy_tree;
	}

	/* i_rwsem orders us against other enables and verity being set */
	inode_lock(inode);
	err = IS_VERITY(inode) ? -EEXIST : vops->begin_enable_verity(filp);
	inode_unlock(inode);
	if (err)
		goto out_destroy_tree;

	/*
	 * Build the tree without i_rwsem, which a huge file would hold for
	 * long.  The data cannot change meanwhile: deny_write_access() keeps
	 * writers out, and ->begin_enable_verity() keeps other enables out.
	 */
	err = fsv_build_tree(filp, &tree, desc->root_hash);
	if (err) {
		if (err != -EINTR)
			fsv_err(inode, "error %d building the Merkle tree", err);
		goto rollback;
	}

	/*
	 * Set up the state exactly as an open of the finished file would:
	 * this checks the descriptor and signature before they are committed.
	 */
	vi = fsv_info_create(inode, desc);
	if (IS_ERR(vi)) {
		err = PTR_ERR(vi);
		goto rollback;
	}

	inode_lock(inode);
	err = vops->end_enable_verity(filp, desc, desc_size, tree.size);
	inode_unlock(inode);
	if (err) {
		fsv_err(inode, "%ps() failed with error %d",
			vops->end_enable_verity, err);
		fsv_info_free(vi);
	} else if (WARN_ON_ONCE(!IS_VERITY(inode))) {
		fsv_info_free(vi);
		err = -EINVAL;
	} else {
		/* As at open: LSMs hear of the signature before readers */
		fsv_report_signature(inode, desc->signature, arg->sig_size);
		fsv_info_publish(inode, vi);
	}
	goto out_destroy_tree;

rollback:
	inode_lock(inode);
	vops->end_enable_verity(filp, NULL, 0, tree.size);
	inode_unlock(inode);
out_destroy_tree:
	fsv_tree_destroy(&tree);
out_free_desc:
	kfree(desc);
	return err;
}

/* Checks that need nothing but the argument, in the documented order */
static int fsv_check_enable_arg(const struct fsverity_enable_arg *arg)
{
	if (arg->version != 1 || arg->__reserved1 ||
	    memchr_inv(arg->__reserved2, 0, sizeof(arg->__reserved2)) ||
	    !is_power_of_2(arg->block_size))
		return -EINVAL;
	if (arg->salt_size > sizeof_field(struct fsverity_descriptor, salt) ||
	    arg->sig_size > FSV_MAX_SIG_SIZE)
		return -EMSGSIZE;
	/* Without the support a signature could be stored but never checked */
	if (arg->sig_size && !IS_ENABLED(CONFIG_FS_VERITY_BUILTIN_SIGNATURES))
		return -EOPNOTSUPP;
	return 0;
}

/**
 * fsverity_ioctl_enable() - enable verity on a file
 * @filp: the file, which must be open read-only
 * @uarg: user pointer to a struct fsverity_enable_arg
 *
 * Builds the file's Merkle tree, has the filesystem store it with the
 * descriptor, and makes the file a read-only verity file.  On any failure,
 * including a fatal signal, the file is left as it was.  See the
 * FS_IOC_ENABLE_VERITY section of Documentation/filesystems/fsverity.rst.
 *
 * Return: 0 on success, -errno on failure
 */
int fsverity_ioctl_enable(struct file *filp, const void __user *uarg)
{
	struct inode *inode = file_inode(filp);
	struct fsverity_enable_arg arg;
	int err;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	err = fsv_check_enable_arg(&arg);
	if (err)
		return err;

	/*
	 * The caller must be allowed to write the file, since verity makes it
	 * read-only for good; yet the fd itself must be read-only (and really
	 * open for reading, not ioctl-only) so that no writer is left once
	 * verity is on.
	 */
	err = file_permission(filp, MAY_WRITE);
	if (err)
		return err;
	if (!(filp->f_mode & FMODE_READ))
		return -EBADF;
	if (IS_APPEND(inode))
		return -EPERM;
	if (S_ISDIR(inode->i_mode))
		return -EISDIR;
	if (!S_ISREG(inode->i_mode))
		return -EINVAL;

	err = mnt_want_write_file(filp);	/* -EROFS */
	if (err)
		return err;
	/* Keeps out writers (and writable mappings) until we are done */
	err = deny_write_access(filp);		/* -ETXTBSY */
	if (!err) {
		err = fsv_enable(filp, &arg);
		allow_write_access(filp);
	}
	mnt_drop_write_file(filp);
	return err;
}
EXPORT_SYMBOL_GPL(fsverity_ioctl_enable);
