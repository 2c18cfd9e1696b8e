// SPDX-License-Identifier: GPL-2.0
/*
 * fs-verity: loading a verity file's descriptor and setting up its state
 */

#include "internal.h"

#include <linux/slab.h>

static struct kmem_cache *fsv_info_cache;

/* ceil(n / 2^shift) without overflowing when n is near U64_MAX */
static u64 fsv_div_round_up(u64 n, unsigned int shift)
{
	return (n >> shift) + ((n & ((1ULL << shift) - 1)) != 0);
}

/**
 * fsv_tree_init() - work out the shape of a Merkle tree
 * @tree: the tree to fill in; fsv_tree_destroy() it when done
 * @inode: the file the tree protects, named in messages
 * @alg_num: FS_VERITY_HASH_ALG_*
 * @log_block_size: log2 of the block size
 * @salt: the salt, if any
 * @salt_size: its size in bytes, at most 32
 * @data_size: bytes of data the tree covers
 *
 * Merkle tree blocks must fit in a page, because the tree is read through
 * the page cache; and in a filesystem block, because filesystems verify one
 * of their blocks at a time.  Below 1024 bytes the trees only get deeper,
 * so that is the least accepted.
 *
 * Return: 0 on success; -EINVAL for an unsupported algorithm or block size;
 * -EFBIG if the file needs too big a tree; -ENOPKG or -ENOMEM.
 */
int fsv_tree_init(struct fsv_tree *tree, const struct inode *inode,
		  unsigned int alg_num, unsigned int log_block_size,
		  const u8 *salt, unsigned int salt_size, u64 data_size)
{
	u64 level_blocks[FSV_MAX_LEVELS];
	u64 blocks, start;
	int level;

	memset(tree, 0, sizeof(*tree));

	tree->alg = fsv_hash_alg_get(inode, alg_num);
	if (IS_ERR(tree->alg))
		return PTR_ERR(tree->alg);

	if (log_block_size < 10 || log_block_size > PAGE_SHIFT ||
	    log_block_size > inode->i_blkbits) {
		fsv_warn(inode, "unsupported Merkle tree block size 2^%u",
			 log_block_size);
		return -EINVAL;
	}
	tree->digest_size = tree->alg->digest_size;
	tree->block_size = 1U << log_block_size;
	tree->log_block_size = log_block_size;
	tree->log_digest_size = ilog2(tree->digest_size);
	/* A block must hold at least two hashes, or the tree never narrows */
	if (tree->log_digest_size + 1 > log_block_size) {
		fsv_warn(inode, "%u-byte blocks are too small for %s",
			 tree->block_size, tree->alg->name);
		return -EINVAL;
	}
	tree->log_arity = log_block_size - tree->log_digest_size;

	/* Count the blocks of each level, from the data upwards */
	blocks = fsv_div_round_up(data_size, log_block_size);
	while (blocks > 1) {
		if (tree->num_levels == FSV_MAX_LEVELS) {
			fsv_err(inode, "Merkle tree would be too deep");
			return -EFBIG;
		}
		blocks = fsv_div_round_up(blocks, tree->log_arity);
		level_blocks[tree->num_levels++] = blocks;
	}

	/* The root level comes first in the tree, the lowest level last */
	start = 0;
	for (level = tree->num_levels - 1; level >= 0; level--) {
		tree->level_start[level] = start;
		start += level_blocks[level];
	}
	if (log_block_size != PAGE_SHIFT && start > FSV_MAX_BITMAP_BLOCKS) {
		fsv_err(inode, "Merkle tree would have too many blocks");
		return -EFBIG;
	}
	tree->num_blocks = start;
	tree->size = start << log_block_size;

	tree->salted_state = fsv_salted_state(tree->alg, salt, salt_size);
	if (IS_ERR(tree->salted_state)) {
		int err = PTR_ERR(tree->salted_state);

		tree->salted_state = NULL;
		fsv_err(inode, "error %d hashing the salt", err);
		return err;
	}
	return 0;
}

/* Free what fsv_tree_init() allocated */
void fsv_tree_destroy(struct fsv_tree *tree)
{
	kfree(tree->salted_state);
	tree->salted_state = NULL;
}

/*
 * The file digest is the hash of the descriptor as it is without a
 * signature: sig_size 0 and nothing after the fixed part.
 */
static int fsv_file_digest(const struct fsv_hash_alg *alg,
			   const struct fsverity_descriptor *desc, u8 *out)
{
	struct fsverity_descriptor unsigned_desc = *desc;

	unsigned_desc.sig_size = 0;
	return fsv_hash_buffer(alg, &unsigned_desc, sizeof(unsigned_desc), out);
}

/**
 * fsv_info_create() - set up the verity state described by a descriptor
 * @inode: the inode
 * @desc: its descriptor, already checked by fsv_check_descriptor() or built
 *	by enable; any signature follows it
 *
 * This is also where a built-in signature is checked, so it runs both when
 * a verity file is opened and when verity is being enabled.
 *
 * Return: the new state, or an ERR_PTR()
 */
struct fsverity_info *fsv_info_create(const struct inode *inode,
				      struct fsverity_descriptor *desc)
{
	struct fsverity_info *vi;
	int err;

	vi = kmem_cache_zalloc(fsv_info_cache, GFP_KERNEL);
	if (!vi)
		return ERR_PTR(-ENOMEM);
	vi->inode = inode;

	err = fsv_tree_init(&vi->tree, inode, desc->hash_algorithm,
			    desc->log_blocksize, desc->salt, desc->salt_size,
			    le64_to_cpu(desc->data_size));
	if (err)
		goto fail;

	memcpy(vi->root_hash, desc->root_hash, vi->tree.digest_size);

	err = fsv_file_digest(vi->tree.alg, desc, vi->file_digest);
	if (err) {
		fsv_err(inode, "error %d computing the file digest", err);
		goto fail;
	}

	err = fsv_check_signature(vi, desc->signature,
				  le32_to_cpu(desc->sig_size));
	if (err)
		goto fail;

	if (vi->tree.num_blocks && vi->tree.log_block_size != PAGE_SHIFT) {
		vi->verified = kvcalloc(BITS_TO_LONGS(vi->tree.num_blocks),
					sizeof(unsigned long), GFP_KERNEL);
		if (!vi->verified) {
			err = -ENOMEM;
			goto fail;
		}
	}
	return vi;

fail:
	fsv_info_free(vi);
	return ERR_PTR(err);
}

/* Free a verity state; NULL is fine */
void fsv_info_free(struct fsverity_info *vi)
{
	if (!vi)
		return;
	fsv_tree_destroy(&vi->tree);
	kvfree(vi->verified);
	kmem_cache_free(fsv_info_cache, vi);
}

/**
 * fsv_info_publish() - attach a verity state to its inode
 * @inode: the inode
 * @vi: its new state, which is consumed
 *
 * Several opens may have raced to load the state; the first to get here
 * wins and the others free theirs.  The release pairs with the acquire in
 * fsverity_get_info(), so that a reader who sees the pointer also sees the
 * fully initialised structure behind it.
 */
void fsv_info_publish(struct inode *inode, struct fsverity_info *vi)
{
	if (cmpxchg_release(&inode->i_verity_info, NULL, vi)) {
		fsv_info_free(vi);
		/* Our caller may use ->i_verity_info: acquire the winner's */
		(void)fsverity_get_info(inode);
	}
}

/* Is a descriptor read from disk one that this code can trust to parse? */
static bool fsv_check_descriptor(struct inode *inode,
				 const struct fsverity_descriptor *desc,
				 size_t size)
{
	const char *what;

	if (desc->version != 1)
		what = "unknown version";
	else if (memchr_inv(desc->__reserved, 0, sizeof(desc->__reserved)))
		what = "reserved bytes set";
	else if (desc->salt_size > sizeof(desc->salt))
		what = "salt too long";
	else if (le64_to_cpu(desc->data_size) != inode->i_size)
		what = "data size differs from the file size";
	else if (le32_to_cpu(desc->sig_size) > size - sizeof(*desc))
		what = "signature runs past its end";
	else
		return true;
	fsv_err(inode, "invalid verity descriptor: %s", what);
	return false;
}

/**
 * fsv_read_descriptor() - read an inode's descriptor and check it
 * @inode: a verity inode
 * @desc_ret: set to the descriptor with its signature; kfree() it
 *
 * The filesystem's storage is not trusted: every field is checked before
 * use, and a descriptor that changes size between the two calls is refused.
 *
 * Return: 0 on success; -EMSGSIZE for an impossible size; -EINVAL for an
 * invalid descriptor; or the filesystem's error
 */
int fsv_read_descriptor(struct inode *inode,
			struct fsverity_descriptor **desc_ret)
{
	const struct fsverity_operations *vops = inode->i_sb->s_vop;
	struct fsverity_descriptor *desc;
	int size, got;

	size = vops->get_verity_descriptor(inode, NULL, 0);
	if (size < 0) {
		fsv_err(inode, "error %d getting the descriptor size", size);
		return size;
	}
	if ((size_t)size < sizeof(*desc) ||
	    size > FS_VERITY_MAX_DESCRIPTOR_SIZE) {
		fsv_err(inode, "descriptor has impossible size %d", size);
		return -EMSGSIZE;
	}

	desc = kmalloc(size, GFP_KERNEL);
	if (!desc)
		return -ENOMEM;
	got = vops->get_verity_descriptor(inode, desc, size);
	if (got != size) {
		if (got >= 0) {
			fsv_err(inode, "descriptor size changed from %d to %d",
				size, got);
			got = -EINVAL;
		} else {
			fsv_err(inode, "error %d reading the descriptor", got);
		}
		kfree(desc);
		return got;
	}
	if (!fsv_check_descriptor(inode, desc, size)) {
		kfree(desc);
		return -EINVAL;
	}
	*desc_ret = desc;
	return 0;
}

/* Load the verity state of a verity inode, unless it already is */
static int fsv_load_info(struct inode *inode)
{
	struct fsverity_descriptor *desc;
	struct fsverity_info *vi;
	int err;

	if (fsverity_get_info(inode))
		return 0;

	err = fsv_read_descriptor(inode, &desc);
	if (err)
		return err;

	vi = fsv_info_create(inode, desc);
	if (IS_ERR(vi)) {
		err = PTR_ERR(vi);
	} else {
		/*
		 * Tell LSMs about the checked signature before anybody can
		 * see the state, so no one finds it without the LSM's view.
		 */
		fsv_report_signature(inode, desc->signature,
				     le32_to_cpu(desc->sig_size));
		fsv_info_publish(inode, vi);
	}
	kfree(desc);
	return err;
}

/**
 * __fsverity_file_open() - the part of fsverity_file_open() for verity inodes
 * @inode: a verity inode
 * @file: the file being opened
 *
 * Return: 0 on success, -EPERM if @file is opened for writing, or the error
 * that loading the verity state gave
 */
int __fsverity_file_open(struct inode *inode, struct file *file)
{
	return (file->f_mode & FMODE_WRITE) ? -EPERM : fsv_load_info(inode);
}
EXPORT_SYMBOL_GPL(__fsverity_file_open);

/**
 * __fsverity_cleanup_inode() - free an evicted inode's verity state
 * @inode: the inode, which has a verity state
 */
void __fsverity_cleanup_inode(struct inode *inode)
{
	fsv_info_free(inode->i_verity_info);
	inode->i_verity_info = NULL;
}
EXPORT_SYMBOL_GPL(__fsverity_cleanup_inode);

void __init fsv_init_info_cache(void)
{
	/* Only the file digest is ever copied to userspace from here */
	fsv_info_cache = KMEM_CACHE_USERCOPY(fsverity_info,
					     SLAB_RECLAIM_ACCOUNT | SLAB_PANIC,
					     file_digest);
}
