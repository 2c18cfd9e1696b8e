/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fs-verity: declarations shared by the files of fs/verity/ only
 */

#ifndef _FS_VERITY_INTERNAL_H
#define _FS_VERITY_INTERNAL_H

#define pr_fmt(fmt) "fs-verity: " fmt

#include <linux/fsverity.h>

/*
 * The deepest Merkle tree accepted.  Every level divides the block count by
 * at least 16 (1024-byte blocks of 64-byte digests), so eight levels cover
 * any file a filesystem can hold with the supported block sizes.
 */
#define FSV_MAX_LEVELS		8

/*
 * Tree blocks smaller than a page need the "verified" bitmap, one bit per
 * tree block.  Bound it to 1 MiB, as mainline does: a file that either
 * kernel enables must open under the other, so the limits must agree.
 * With page-sized blocks the page's PG_checked serves and there is no bound.
 */
#define FSV_MAX_BITMAP_BLOCKS	BIT_ULL(23)

/* Largest signature: whatever the descriptor leaves of the size bound */
#define FSV_MAX_SIG_SIZE	(FS_VERITY_MAX_DESCRIPTOR_SIZE - \
				 sizeof(struct fsverity_descriptor))

/**
 * struct fsv_hash_alg - a hash algorithm fs-verity can build trees with
 * @name: its crypto API name, also used in messages
 * @digest_size: bytes of output
 * @block_size: bytes of the algorithm's input block; a salt is zero padded
 *	to a multiple of it so that its hash state can be computed once
 * @algo_id: the HASH_ALGO_* number that IMA and others know it by
 * @tfm: the transform, allocated at first use (see hash.c)
 */
struct fsv_hash_alg {
	const char *name;
	unsigned int digest_size;
	unsigned int block_size;
	enum hash_algo algo_id;
	struct crypto_shash *tfm;
};

/**
 * struct fsv_tree - the shape of one file's Merkle tree
 * @alg: hash algorithm
 * @salted_state: exported hash state after the padded salt, or NULL
 * @digest_size: bytes per hash, a power of two
 * @block_size: bytes per data block and per tree block
 * @log_block_size: log2(@block_size)
 * @log_digest_size: log2(@digest_size)
 * @log_arity: log2 of the number of hashes in one tree block
 * @num_levels: levels of the tree; 0 when the data fits in one block
 * @level_start: index of the first block of each level in the tree, level
 *	0 being the one that hashes the data; the root level is stored first
 * @num_blocks: blocks in the whole tree
 * @size: bytes in the whole tree
 */
struct fsv_tree {
	const struct fsv_hash_alg *alg;
	u8 *salted_state;
	unsigned int digest_size;
	unsigned int block_size;
	u8 log_block_size;
	u8 log_digest_size;
	u8 log_arity;
	u8 num_levels;
	u64 level_start[FSV_MAX_LEVELS];
	u64 num_blocks;
	u64 size;
};

/**
 * struct fsverity_info - the verity state of one open inode
 * @tree: shape of its Merkle tree
 * @inode: the inode it belongs to
 * @verified: for tree blocks smaller than a page, one bit per tree block,
 *	set once the block was checked against its parent (or the root hash);
 *	NULL with page-sized blocks, where PG_checked says it.  Either is only
 *	trusted while the page stays in the page cache; see verify.c.
 * @root_hash: hash of the tree's root block (of the data when it is one
 *	block, all zeroes when it is empty)
 * @file_digest: the digest FS_IOC_MEASURE_VERITY reports
 *
 * Set up once, when the file is opened or enabled, and read-only afterwards
 * except for @verified.
 */
struct fsverity_info {
	struct fsv_tree tree;
	const struct inode *inode;
	unsigned long *verified;
	u8 root_hash[FS_VERITY_MAX_DIGEST_SIZE];
	u8 file_digest[FS_VERITY_MAX_DIGEST_SIZE];
};

/* build.c */
int fsv_build_tree(struct file *filp, const struct fsv_tree *tree,
		   u8 *root_hash);

/* hash.c */
const struct fsv_hash_alg *fsv_hash_alg_get(const struct inode *inode,
					    unsigned int num);
unsigned int fsv_hash_alg_num(const struct fsv_hash_alg *alg);
u8 *fsv_salted_state(const struct fsv_hash_alg *alg, const u8 *salt,
		     unsigned int salt_size);
int fsv_hash_block(const struct fsv_tree *tree, const void *data, u8 *out);
int fsv_hash_buffer(const struct fsv_hash_alg *alg, const void *data,
		    size_t len, u8 *out);

/* init.c */
void __printf(3, 4) __cold
fsv_msg(const struct inode *inode, bool error, const char *fmt, ...);

#define fsv_warn(inode, fmt, ...) \
	fsv_msg((inode), false, fmt, ##__VA_ARGS__)
#define fsv_err(inode, fmt, ...) \
	fsv_msg((inode), true, fmt, ##__VA_ARGS__)

/* measure.c */
#ifdef CONFIG_BPF_SYSCALL
void __init fsv_init_bpf(void);
#else
static inline void fsv_init_bpf(void)
{
}
#endif

/* open.c */
int fsv_tree_init(struct fsv_tree *tree, const struct inode *inode,
		  unsigned int alg_num, unsigned int log_block_size,
		  const u8 *salt, unsigned int salt_size, u64 data_size);
void fsv_tree_destroy(struct fsv_tree *tree);
struct fsverity_info *fsv_info_create(const struct inode *inode,
				      struct fsverity_descriptor *desc);
void fsv_info_free(struct fsverity_info *vi);
void fsv_info_publish(struct inode *inode, struct fsverity_info *vi);
int fsv_read_descriptor(struct inode *inode,
			struct fsverity_descriptor **desc_ret);
void __init fsv_init_info_cache(void);

/* signature.c */
#ifdef CONFIG_FS_VERITY_BUILTIN_SIGNATURES
extern int fsv_require_signatures;
int fsv_check_signature(const struct fsverity_info *vi, const u8 *sig,
			size_t sig_size);
void fsv_report_signature(const struct inode *inode, const u8 *sig,
			  size_t sig_size);
void __init fsv_init_signature(void);
#else
#define fsv_require_signatures 0
static inline int fsv_check_signature(const struct fsverity_info *vi,
				      const u8 *sig, size_t sig_size)
{
	return 0;
}

static inline void fsv_report_signature(const struct inode *inode,
					const u8 *sig, size_t sig_size)
{
}

static inline void fsv_init_signature(void)
{
}
#endif

/* verify.c */
void __init fsv_init_workqueue(void);

#endif /* _FS_VERITY_INTERNAL_H */
