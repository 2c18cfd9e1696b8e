/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fs-verity: the interface between the fs-verity core and filesystems
 *
 * A filesystem that supports fs-verity stores a file's Merkle tree and
 * descriptor wherever it likes, and provides the callbacks below so that the
 * core can build, find and read them.  In return it calls the hooks at the
 * end of this header from its open, ioctl, read and evict paths.
 *
 * See Documentation/filesystems/fsverity.rst.
 */

#ifndef _LINUX_FSVERITY_H
#define _LINUX_FSVERITY_H

#include <crypto/hash_info.h>
#include <crypto/sha2.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <uapi/linux/fsverity.h>

/* Bound on descriptor plus signature, so that one kmalloc() holds it */
#define FS_VERITY_MAX_DESCRIPTOR_SIZE	(16 * 1024)

/* The largest digest of any supported hash algorithm */
#define FS_VERITY_MAX_DIGEST_SIZE	SHA512_DIGEST_SIZE

/**
 * struct fsverity_operations - what a filesystem provides to fs-verity
 *
 * @begin_enable_verity: prepare @file's inode for having verity enabled
 *	(e.g. move inline data out of the inode).  Return -EBUSY if verity is
 *	already being enabled on it.  Called with i_rwsem held for write.
 * @end_enable_verity: finish, or with @desc == NULL undo, what
 *	->begin_enable_verity() started.  On success the filesystem persists
 *	the @desc_size bytes of @desc, marks the inode as verity on disk and
 *	sets S_VERITY.  @tree_size is the size of the tree written.
 *	Called with i_rwsem held for write, though it was dropped in between.
 * @get_verity_descriptor: copy the inode's stored descriptor into @buf and
 *	return its size, or with @buf_size == 0 only return the size.  Return
 *	-ERANGE if it does not fit.  May run concurrently on one inode.
 * @read_merkle_tree_page: return, referenced and uptodate, the page at
 *	@index of the inode's Merkle tree.  @num_ra_pages is how many pages
 *	from @index are worth reading ahead if the page is not cached; it is
 *	only a hint.  May run at any time and concurrently on an open file.
 * @write_merkle_tree_block: store the @size bytes of @buf at byte @pos of
 *	the Merkle tree being built.  Called only between the two enable
 *	callbacks above, once for each page of the tree, in no particular
 *	order: @pos is page aligned and @size is PAGE_SIZE, or less for the
 *	tree's last page (always whole Merkle tree blocks).
 *
 * All return 0 (or a size, or a page) on success and a negative errno on
 * failure.
 */
struct fsverity_operations {
	int (*begin_enable_verity)(struct file *file);
	int (*end_enable_verity)(struct file *file, const void *desc,
				 size_t desc_size, u64 tree_size);
	int (*get_verity_descriptor)(struct inode *inode, void *buf,
				     size_t buf_size);
	struct page *(*read_merkle_tree_page)(struct inode *inode, pgoff_t index,
					      unsigned long num_ra_pages);
	int (*write_merkle_tree_block)(struct inode *inode, const void *data,
				       u64 pos, unsigned int size);
};

#ifdef CONFIG_FS_VERITY

/**
 * fsverity_get_info() - the verity state of an inode, if it has been loaded
 * @inode: the inode
 *
 * ->i_verity_info is published once, with a release store, after it was
 * fully set up (see fsverity_set_info() in fs/verity/open.c); the acquire
 * here makes its contents visible to whoever sees the pointer.
 *
 * Return: the inode's fsverity_info, or NULL if not loaded or not verity
 */
static inline struct fsverity_info *fsverity_get_info(const struct inode *inode)
{
	/* Pairs with the cmpxchg_release() that published the pointer */
	return smp_load_acquire(&inode->i_verity_info);
}

/* Called by filesystems from their read paths (verify.c) */
bool fsverity_verify_blocks(struct folio *folio, size_t len, size_t offset);
void fsverity_verify_bio(struct bio *bio);
void fsverity_enqueue_verify_work(struct work_struct *work);

/* Called from ->open() and ->evict_inode() (open.c) */
int __fsverity_file_open(struct inode *inode, struct file *file);
void __fsverity_cleanup_inode(struct inode *inode);

/**
 * fsverity_cleanup_inode() - free an inode's verity state on eviction
 * @inode: the inode being evicted
 */
static inline void fsverity_cleanup_inode(struct inode *inode)
{
	if (inode->i_verity_info)
		__fsverity_cleanup_inode(inode);
}

/* The three ioctls (enable.c, measure.c, read_metadata.c) */
int fsverity_ioctl_enable(struct file *file, const void __user *uarg);
int fsverity_ioctl_measure(struct file *file, void __user *uarg);
int fsverity_ioctl_read_metadata(struct file *file, const void __user *uarg);

/* For IMA, IPE and overlayfs (measure.c) */
int fsverity_get_digest(struct inode *inode,
			u8 digest[FS_VERITY_MAX_DIGEST_SIZE],
			u8 *alg_num, enum hash_algo *hash_algo);

#else /* !CONFIG_FS_VERITY */

/*
 * Without fs-verity no inode is ever a verity file: the ioctls say so, and
 * the verification hooks must never be reached.
 */

static inline struct fsverity_info *fsverity_get_info(const struct inode *inode)
{
	return NULL;
}

/* Nothing is verity, so nothing is ever verified: reaching these is a bug */
static inline void fsverity_enqueue_verify_work(struct work_struct *work)
{
	WARN_ON_ONCE(true);
}

static inline void fsverity_cleanup_inode(struct inode *inode)
{
}

static inline void fsverity_verify_bio(struct bio *bio)
{
	WARN_ON_ONCE(true);
}

static inline int __fsverity_file_open(struct inode *inode, struct file *file)
{
	return -EOPNOTSUPP;
}

static inline bool fsverity_verify_blocks(struct folio *folio, size_t len,
					  size_t offset)
{
	WARN_ON_ONCE(true);
	return false;
}

static inline int fsverity_ioctl_enable(struct file *file,
					const void __user *uarg)
{
	return -EOPNOTSUPP;
}

static inline int fsverity_ioctl_measure(struct file *file, void __user *uarg)
{
	return -EOPNOTSUPP;
}

static inline int fsverity_ioctl_read_metadata(struct file *file,
					       const void __user *uarg)
{
	return -EOPNOTSUPP;
}

static inline int fsverity_get_digest(struct inode *inode,
				      u8 digest[FS_VERITY_MAX_DIGEST_SIZE],
				      u8 *alg_num, enum hash_algo *hash_algo)
{
	return 0;	/* digest size 0: not a verity file */
}

#endif /* !CONFIG_FS_VERITY */

/**
 * fsverity_active() - must reads of this inode be verified?
 * @inode: the inode
 *
 * True once the inode's verity state has been loaded, which happens when a
 * verity file is opened or verity is enabled on it.  S_VERITY can be set a
 * moment earlier, so filesystems deciding whether to verify use this, not
 * IS_VERITY().
 *
 * Return: true if reads of @inode's data must be verified
 */
static inline bool fsverity_active(const struct inode *inode)
{
	return fsverity_get_info(inode);
}

/**
 * fsverity_verify_page() - verify a whole page just read from a verity file
 * @page: the page, locked and not yet uptodate
 *
 * Return: true if every block of @page matches the Merkle tree
 */
static inline bool fsverity_verify_page(struct page *page)
{
	return fsverity_verify_blocks(page_folio(page), PAGE_SIZE, 0);
}

/**
 * fsverity_verify_folio() - verify a whole folio just read from a verity file
 * @folio: the folio, locked and not yet uptodate
 *
 * Return: true if every block of @folio matches the Merkle tree
 */
static inline bool fsverity_verify_folio(struct folio *folio)
{
	return fsverity_verify_blocks(folio, folio_size(folio), 0);
}

/**
 * fsverity_file_open() - the ->open() hook for files that may be verity
 * @inode: the inode being opened
 * @file: the file being set up
 *
 * A verity file cannot be opened for writing, and its verity state is
 * loaded (and its signature checked) at the first open.
 *
 * Return: 0 on success, -EPERM for an open for write, or another -errno
 */
static inline int fsverity_file_open(struct inode *inode, struct file *file)
{
	return IS_VERITY(inode) ? __fsverity_file_open(inode, file) : 0;
}

#endif /* _LINUX_FSVERITY_H */
