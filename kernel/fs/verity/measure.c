// SPDX-License-Identifier: GPL-2.0
/*
 * fs-verity: reporting a file's digest, to userspace, the kernel and BPF
 */

#include "internal.h"

#include <linux/bpf.h>
#include <linux/btf.h>
#include <linux/uaccess.h>

/**
 * fsverity_ioctl_measure() - FS_IOC_MEASURE_VERITY: report the file digest
 * @filp: a file open for reading
 * @_uarg: user pointer to a struct fsverity_digest, whose digest_size says
 *	how much room follows it
 *
 * The digest was computed when the file was opened, so this takes constant
 * time whatever the file's size.
 *
 * Return: 0 on success; -EBADF if @filp is not open for reading; -ENODATA
 * if it is not a verity file; -EOVERFLOW if the digest does not fit;
 * -EFAULT for inaccessible memory
 */
int fsverity_ioctl_measure(struct file *filp, void __user *_uarg)
{
	struct fsverity_digest __user *uarg = _uarg;
	const struct fsverity_info *vi;
	struct fsverity_digest head;
	u16 room;

	/*
	 * The digest tells about the contents, so ask for read access: not
	 * write-only nor ioctl-only fds (the latter may skip LSM checks).
	 */
	if (!(filp->f_mode & FMODE_READ))
		return -EBADF;

	vi = fsverity_get_info(file_inode(filp));
	if (!vi)
		return -ENODATA;

	if (get_user(room, &uarg->digest_size))
		return -EFAULT;
	if (room < vi->tree.digest_size)
		return -EOVERFLOW;

	head.digest_algorithm = fsv_hash_alg_num(vi->tree.alg);
	head.digest_size = vi->tree.digest_size;
	if (copy_to_user(uarg, &head, sizeof(head)) ||
	    copy_to_user(uarg->digest, vi->file_digest, head.digest_size))
		return -EFAULT;
	return 0;
}
EXPORT_SYMBOL_GPL(fsverity_ioctl_measure);

/**
 * fsverity_get_digest() - the file digest of an inode, for kernel users
 * @inode: the inode; its verity state must already be loaded (it is once
 *	the file has been opened)
 * @digest: where the digest goes
 * @alg_num: if not NULL, set to its FS_VERITY_HASH_ALG_* number
 * @hash_algo: if not NULL, set to its HASH_ALGO_* number
 *
 * Used by IMA, IPE and overlayfs.
 *
 * Return: the digest's size in bytes, or 0 if @inode is not a verity file
 */
int fsverity_get_digest(struct inode *inode,
			u8 digest[FS_VERITY_MAX_DIGEST_SIZE],
			u8 *alg_num, enum hash_algo *hash_algo)
{
	const struct fsverity_info *vi = fsverity_get_info(inode);
	const struct fsv_tree *tree;

	if (!vi)
		return 0;
	tree = &vi->tree;
	if (alg_num)
		*alg_num = fsv_hash_alg_num(tree->alg);
	if (hash_algo)
		*hash_algo = tree->alg->algo_id;
	memcpy(digest, vi->file_digest, tree->digest_size);
	return tree->digest_size;
}
EXPORT_SYMBOL_GPL(fsverity_get_digest);

#ifdef CONFIG_BPF_SYSCALL

__bpf_kfunc_start_defs();

/**
 * bpf_get_fsverity_digest() - the file digest of a file, for BPF LSM programs
 * @file: the file
 * @digest_p: a dynptr to a struct fsverity_digest followed by room for the
 *	digest; the room left over is zeroed
 *
 * Return: 0 on success; -EINVAL for an unusable buffer; -ENODATA if @file is
 * not a verity file; -EOVERFLOW if the digest does not fit
 */
__bpf_kfunc int bpf_get_fsverity_digest(struct file *file,
					struct bpf_dynptr *digest_p)
{
	struct bpf_dynptr_kern *dynptr = (struct bpf_dynptr_kern *)digest_p;
	const struct fsverity_info *vi;
	struct fsverity_digest *out;
	u64 size = __bpf_dynptr_size(dynptr);
	u64 room;

	if (size < sizeof(*out))
		return -EINVAL;
	out = __bpf_dynptr_data_rw(dynptr, size);
	if (!out || !IS_ALIGNED((uintptr_t)out, __alignof__(*out)))
		return -EINVAL;

	vi = fsverity_get_info(file_inode(file));
	if (!vi)
		return -ENODATA;
	room = size - sizeof(*out);
	if (room < vi->tree.digest_size)
		return -EOVERFLOW;

	out->digest_algorithm = fsv_hash_alg_num(vi->tree.alg);
	out->digest_size = vi->tree.digest_size;
	memcpy(out->digest, vi->file_digest, vi->tree.digest_size);
	memset(out->digest + vi->tree.digest_size, 0,
	       room - vi->tree.digest_size);
	return 0;
}

__bpf_kfunc_end_defs();

BTF_KFUNCS_START(fsv_kfunc_ids)
BTF_ID_FLAGS(func, bpf_get_fsverity_digest, KF_TRUSTED_ARGS)
BTF_KFUNCS_END(fsv_kfunc_ids)

/* Only LSM programs may call it: elsewhere it could recurse into a hook */
static int fsv_kfunc_filter(const struct bpf_prog *prog, u32 kfunc_id)
{
	if (btf_id_set8_contains(&fsv_kfunc_ids, kfunc_id) &&
	    prog->type != BPF_PROG_TYPE_LSM)
		return -EACCES;
	return 0;
}

static const struct btf_kfunc_id_set fsv_kfunc_set = {
	.owner = THIS_MODULE,
	.set = &fsv_kfunc_ids,
	.filter = fsv_kfunc_filter,
};

void __init fsv_init_bpf(void)
{
	register_btf_kfunc_id_set(BPF_PROG_TYPE_LSM, &fsv_kfunc_set);
}

#endif /* CONFIG_BPF_SYSCALL */
