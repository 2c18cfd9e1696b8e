// SPDX-License-Identifier: GPL-2.0
/*
 * fs-verity: FS_IOC_ENABLE_VERITY, building a file's Merkle tree
 */

#include "internal.h"

#include <linux/mount.h>
#include <linux/slab.h>

/*
 * Have the filesystem commit verity with @desc, or with @desc NULL undo
 * ->begin_enable_verity().  i_rwsem serialises the two callbacks.
 */
static int fsv_end_enable(struct file *filp,
			  const struct fsverity_descriptor *desc,
			  size_t desc_size, u64 tree_size)
{
	struct inode *inode = file_inode(filp);
	const struct fsverity_operations *vops = inode->i_sb->s_vop;
	int err;

	inode_lock(inode);
	err = vops->end_enable_verity(filp, desc, desc_size, tree_size);
	inode_unlock(inode);
	if (err && desc)
		fsv_err(inode, "%ps() failed with error %d",
			vops->end_enable_verity, err);
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
	desc->data_size = cpu_to_le64(i_size_read(inode));
	desc->log_blocksize = ilog2(arg->block_size);
	desc->hash_algorithm = arg->hash_algorithm;
	desc->salt_size = arg->salt_size;
	desc->sig_size = cpu_to_le32(arg->sig_size);
	desc->version = 1;
	if (copy_from_user(desc->salt, u64_to_user_ptr(arg->salt_ptr),
			   arg->salt_size) ||
	    copy_from_user(desc->signature, u64_to_user_ptr(arg->sig_ptr),
			   arg->sig_size)) {
		err = -EFAULT;
		goto out_free_desc;
	}

	/* The argument's number, not the descriptor's u8 that may wrap */
	err = fsv_tree_init(&tree, inode, arg->hash_algorithm,
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
	if (!err) {
		/*
		 * Set up the state exactly as an open of the finished file
		 * would: this checks the descriptor and signature before the
		 * filesystem commits them.
		 */
		vi = fsv_info_create(inode, desc);
		err = PTR_ERR_OR_ZERO(vi);
	}
	if (err) {
		if (err != -EINTR)
			fsv_err(inode, "error %d enabling verity", err);
		fsv_end_enable(filp, NULL, 0, tree.size);
		goto out_destroy_tree;
	}

	err = fsv_end_enable(filp, desc, desc_size, tree.size);
	if (!err && WARN_ON_ONCE(!IS_VERITY(inode)))
		err = -EINVAL;
	if (err) {
		fsv_info_free(vi);
		goto out_destroy_tree;
	}
	/* As at open: LSMs hear of the signature before readers see it */
	fsv_report_signature(inode, desc->signature, arg->sig_size);
	fsv_info_publish(inode, vi);
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
	/*
	 * Without CONFIG_FS_VERITY_BUILTIN_SIGNATURES a signature is stored
	 * unchecked, as mainline does: userspace may check it itself, after
	 * reading it back with FS_IOC_READ_VERITY_METADATA.
	 */
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
	struct fsverity_enable_arg arg;
	struct inode *inode = file_inode(filp);
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
	if (!err && !(filp->f_mode & FMODE_READ))
		err = -EBADF;
	else if (!err && IS_APPEND(inode))
		err = -EPERM;
	else if (!err && !S_ISREG(inode->i_mode))
		err = S_ISDIR(inode->i_mode) ? -EISDIR : -EINVAL;
	if (err)
		return err;

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
