// SPDX-License-Identifier: GPL-2.0
/*
 * fs-verity: FS_IOC_READ_VERITY_METADATA, reading back the tree, the
 * descriptor and the signature
 */

#include "internal.h"

#include <linux/backing-dev.h>
#include <linux/highmem.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>

/*
 * Copy bytes [@pos, @pos + @len) of the Merkle tree to @buf, a page at a
 * time.  The tree is returned as stored, not verified: the caller wants it
 * to verify the file by itself.
 */
static int fsv_read_tree(struct inode *inode, const struct fsverity_info *vi,
			 void __user *buf, u64 pos, int len)
{
	const struct fsverity_operations *vops = inode->i_sb->s_vop;
	u64 end = min(pos + len, vi->tree.size);
	int copied = 0;
	int err = 0;

	while (pos < end) {
		pgoff_t index = pos >> PAGE_SHIFT;
		pgoff_t last = (end - 1) >> PAGE_SHIFT;
		unsigned int off = offset_in_page(pos);
		unsigned int n = min_t(u64, end - pos, PAGE_SIZE - off);
		struct page *page;
		unsigned long left;
		void *addr;

		page = vops->read_merkle_tree_page(inode, index,
				min_t(unsigned long, last - index + 1,
				      inode->i_sb->s_bdi->io_pages));
		if (IS_ERR(page)) {
			err = PTR_ERR(page);
			fsv_err(inode, "error %d reading Merkle tree page %lu",
				err, index);
			break;
		}
		addr = kmap_local_page(page);
		left = copy_to_user(buf, addr + off, n);
		kunmap_local(addr);
		put_page(page);
		if (left) {
			err = -EFAULT;
			break;
		}
		buf += n;
		pos += n;
		copied += n;

		if (fatal_signal_pending(current)) {
			err = -EINTR;
			break;
		}
		cond_resched();
	}
	/* Like read(): report what was copied before an error */
	return copied ?: err;
}

/* pread() semantics over a kernel buffer */
static int fsv_read_buffer(void __user *buf, u64 pos, int len,
			   const void *src, size_t size)
{
	if (pos >= size)
		return 0;
	len = min_t(u64, len, size - pos);
	if (copy_to_user(buf, src + pos, len))
		return -EFAULT;
	return len;
}

static int fsv_read_desc(struct inode *inode, u64 type, void __user *buf,
			 u64 pos, int len)
{
	struct fsverity_descriptor *desc;
	int ret;

	ret = fsv_read_descriptor(inode, &desc);
	if (ret)
		return ret;

	if (type == FS_VERITY_METADATA_TYPE_DESCRIPTOR) {
		/* The descriptor as it is hashed: without the signature */
		desc->sig_size = 0;
		ret = fsv_read_buffer(buf, pos, len, desc, sizeof(*desc));
	} else if (desc->sig_size) {
		/* fsv_read_descriptor() checked that it is in bounds */
		ret = fsv_read_buffer(buf, pos, len, desc->signature,
				      le32_to_cpu(desc->sig_size));
	} else {
		ret = -ENODATA;
	}
	kfree(desc);
	return ret;
}

/**
 * fsverity_ioctl_read_metadata() - FS_IOC_READ_VERITY_METADATA
 * @filp: a verity file open for reading
 * @uarg: user pointer to a struct fsverity_read_metadata_arg
 *
 * Reads part of the Merkle tree, the descriptor or the built-in signature,
 * like pread() reads a file.  See Documentation/filesystems/fsverity.rst.
 *
 * Return: the number of bytes read (0 at or past the end) on success;
 * -EBADF if @filp is not open for reading; -ENODATA if it is not a verity
 * file or has no signature to read; -EINVAL for reserved fields, an unknown
 * type or an overflowing range; -EFAULT; -EINTR
 */
int fsverity_ioctl_read_metadata(struct file *filp, const void __user *uarg)
{
	struct inode *inode = file_inode(filp);
	struct fsverity_read_metadata_arg arg;
	const struct fsverity_info *vi;
	void __user *buf;
	int len;

	/* Hashes of the contents need read access, as for measure */
	vi = fsverity_get_info(inode);
	if (!(filp->f_mode & FMODE_READ))
		return -EBADF;
	if (!vi)
		return -ENODATA;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.__reserved || arg.offset + arg.length < arg.offset)
		return -EINVAL;
	/* The return value is an int */
	len = min_t(u64, arg.length, INT_MAX);
	buf = u64_to_user_ptr(arg.buf_ptr);

	switch (arg.metadata_type) {
	case FS_VERITY_METADATA_TYPE_MERKLE_TREE:
		return fsv_read_tree(inode, vi, buf, arg.offset, len);
	case FS_VERITY_METADATA_TYPE_DESCRIPTOR:
	case FS_VERITY_METADATA_TYPE_SIGNATURE:
		return fsv_read_desc(inode, arg.metadata_type, buf, arg.offset,
				     len);
	default:
		return -EINVAL;
	}
}
EXPORT_SYMBOL_GPL(fsverity_ioctl_read_metadata);
