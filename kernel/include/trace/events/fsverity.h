/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fs-verity tracepoints, under events/fsverity/ in tracefs
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM fsverity

#if !defined(_TRACE_FSVERITY_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_FSVERITY_H

#include <linux/tracepoint.h>

struct inode;

/* FS_IOC_ENABLE_VERITY has started building a tree */
TRACE_EVENT(fsverity_enable_start,
	TP_PROTO(const struct inode *inode, u64 data_size,
		 unsigned int block_size, unsigned int alg,
		 unsigned int num_levels, u64 tree_size),
	TP_ARGS(inode, data_size, block_size, alg, num_levels, tree_size),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(ino_t, ino)
		__field(u64, data_size)
		__field(unsigned int, block_size)
		__field(unsigned int, alg)
		__field(unsigned int, num_levels)
		__field(u64, tree_size)
	),
	TP_fast_assign(
		__entry->dev = inode->i_sb->s_dev;
		__entry->ino = inode->i_ino;
		__entry->data_size = data_size;
		__entry->block_size = block_size;
		__entry->alg = alg;
		__entry->num_levels = num_levels;
		__entry->tree_size = tree_size;
	),
	TP_printk("dev %d:%d ino %lu data_size %llu block_size %u alg %u levels %u tree_size %llu",
		  MAJOR(__entry->dev), MINOR(__entry->dev),
		  (unsigned long)__entry->ino, __entry->data_size,
		  __entry->block_size, __entry->alg, __entry->num_levels,
		  __entry->tree_size)
);

/* FS_IOC_ENABLE_VERITY has finished, with @err (0 on success) */
TRACE_EVENT(fsverity_enable_end,
	TP_PROTO(const struct inode *inode, int err),
	TP_ARGS(inode, err),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(ino_t, ino)
		__field(int, err)
	),
	TP_fast_assign(
		__entry->dev = inode->i_sb->s_dev;
		__entry->ino = inode->i_ino;
		__entry->err = err;
	),
	TP_printk("dev %d:%d ino %lu err %d",
		  MAJOR(__entry->dev), MINOR(__entry->dev),
		  (unsigned long)__entry->ino, __entry->err)
);

/*
 * Part @part of @nr_parts of a batch of an enable's data hashing starts,
 * on the CPU and in the task that the trace line shows
 */
TRACE_EVENT(fsverity_enable_part,
	TP_PROTO(const struct inode *inode, unsigned int part,
		 unsigned int nr_parts),
	TP_ARGS(inode, part, nr_parts),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(ino_t, ino)
		__field(unsigned int, part)
		__field(unsigned int, nr_parts)
	),
	TP_fast_assign(
		__entry->dev = inode->i_sb->s_dev;
		__entry->ino = inode->i_ino;
		__entry->part = part;
		__entry->nr_parts = nr_parts;
	),
	TP_printk("dev %d:%d ino %lu part %u of %u",
		  MAJOR(__entry->dev), MINOR(__entry->dev),
		  (unsigned long)__entry->ino, __entry->part, __entry->nr_parts)
);

/* The tree blocks and data blocks that verification deals with */
DECLARE_EVENT_CLASS(fsverity_block_class,
	TP_PROTO(const struct inode *inode, u64 block, int level),
	TP_ARGS(inode, block, level),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(ino_t, ino)
		__field(u64, block)
		__field(int, level)
	),
	TP_fast_assign(
		__entry->dev = inode->i_sb->s_dev;
		__entry->ino = inode->i_ino;
		__entry->block = block;
		__entry->level = level;
	),
	TP_printk("dev %d:%d ino %lu block %llu level %d",
		  MAJOR(__entry->dev), MINOR(__entry->dev),
		  (unsigned long)__entry->ino, __entry->block, __entry->level)
);

/* A tree block (index in the tree) was hashed and matched its parent */
DEFINE_EVENT(fsverity_block_class, fsverity_tree_block_hashed,
	TP_PROTO(const struct inode *inode, u64 block, int level),
	TP_ARGS(inode, block, level));

/* A tree block was found already verified: no hashing needed */
DEFINE_EVENT(fsverity_block_class, fsverity_cache_hit,
	TP_PROTO(const struct inode *inode, u64 block, int level),
	TP_ARGS(inode, block, level));

/* A tree block was not known to be good and has to be checked */
DEFINE_EVENT(fsverity_block_class, fsverity_cache_miss,
	TP_PROTO(const struct inode *inode, u64 block, int level),
	TP_ARGS(inode, block, level));

/* A data block (index in the file) matched the tree; level is -1 */
DEFINE_EVENT(fsverity_block_class, fsverity_data_verified,
	TP_PROTO(const struct inode *inode, u64 block, int level),
	TP_ARGS(inode, block, level));

/*
 * Verification failed reading data block @block: the mismatch was at tree
 * @level, or -1 for the data block itself
 */
DEFINE_EVENT(fsverity_block_class, fsverity_verify_failed,
	TP_PROTO(const struct inode *inode, u64 block, int level),
	TP_ARGS(inode, block, level));

/*
 * A completed read bio of @bytes bytes of data is verified in @nr_shares
 * shares (one per CPU taking part), reading up to @ra_pages tree pages
 * ahead on a miss in the lowest level
 */
TRACE_EVENT(fsverity_verify_bio,
	TP_PROTO(const struct inode *inode, u64 pos, unsigned int bytes,
		 unsigned int nr_shares, unsigned long ra_pages),
	TP_ARGS(inode, pos, bytes, nr_shares, ra_pages),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(ino_t, ino)
		__field(u64, pos)
		__field(unsigned int, bytes)
		__field(unsigned int, nr_shares)
		__field(unsigned long, ra_pages)
	),
	TP_fast_assign(
		__entry->dev = inode->i_sb->s_dev;
		__entry->ino = inode->i_ino;
		__entry->pos = pos;
		__entry->bytes = bytes;
		__entry->nr_shares = nr_shares;
		__entry->ra_pages = ra_pages;
	),
	TP_printk("dev %d:%d ino %lu pos %llu bytes %u shares %u ra_pages %lu",
		  MAJOR(__entry->dev), MINOR(__entry->dev),
		  (unsigned long)__entry->ino, __entry->pos, __entry->bytes,
		  __entry->nr_shares, __entry->ra_pages)
);

#endif /* _TRACE_FSVERITY_H */

/* This part must be outside protection */
#include <trace/define_trace.h>
