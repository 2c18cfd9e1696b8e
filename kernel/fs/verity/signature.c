// SPDX-License-Identifier: GPL-2.0
/*
 * fs-verity: built-in signatures, checked against the ".fs-verity" keyring
 *
 * A built-in signature is a PKCS#7 signature of the file digest, stored with
 * the descriptor and checked whenever the file's verity state is set up.  It
 * only proves that someone whose certificate root put in the keyring signed
 * the file: policy (which files must be signed) is left to userspace, to the
 * require_signatures sysctl, or to an LSM such as IPE, which we tell about
 * every signature that checked out.  See "Built-in signature verification"
 * in Documentation/filesystems/fsverity.rst for its limits.
 */

#include "internal.h"

#include <linux/cred.h>
#include <linux/key.h>
#include <linux/security.h>
#include <linux/slab.h>
#include <linux/verification.h>

/* /proc/sys/fs/verity/require_signatures: refuse unsigned verity files */
int fsv_require_signatures;

/* The trusted certificates; only root may add to it */
static struct key *fsv_keyring;

/**
 * fsv_check_signature() - check a file's built-in signature, if it has one
 * @vi: the file's verity state, with the file digest computed
 * @sig: the PKCS#7 signature
 * @sig_size: its size; 0 if the file is unsigned
 *
 * Return: 0 if the signature is good, or absent and not required; -EPERM if
 * absent but required; -ENOKEY if no certificate in the keyring signed it;
 * -EKEYREJECTED if it does not sign this file; -EBADMSG if it is malformed;
 * another -errno on other failures
 */
int fsv_check_signature(const struct fsverity_info *vi, const u8 *sig,
			size_t sig_size)
{
	const struct inode *inode = vi->inode;
	const unsigned int digest_size = vi->tree.digest_size;
	struct fsverity_formatted_digest *signed_data;
	int err;

	if (!sig_size) {
		if (!fsv_require_signatures)
			return 0;
		fsv_err(inode, "file is unsigned, and signatures are required");
		return -EPERM;
	}

	/*
	 * With an empty keyring no signature can be good.  Say so without
	 * handing the bytes to the PKCS#7 parser, which anyone allowed to
	 * enable verity could otherwise feed.
	 */
	if (!fsv_keyring->keys.nr_leaves_on_tree) {
		fsv_err(inode, "file is signed, but the keyring is empty");
		return -ENOKEY;
	}

	signed_data = kzalloc(sizeof(*signed_data) + digest_size, GFP_KERNEL);
	if (!signed_data)
		return -ENOMEM;
	memcpy(signed_data->magic, "FSVerity", sizeof(signed_data->magic));
	signed_data->digest_algorithm =
		cpu_to_le16(fsv_hash_alg_num(vi->tree.alg));
	signed_data->digest_size = cpu_to_le16(digest_size);
	memcpy(signed_data->digest, vi->file_digest, digest_size);

	err = verify_pkcs7_signature(signed_data,
				     sizeof(*signed_data) + digest_size,
				     sig, sig_size, fsv_keyring,
				     VERIFYING_UNSPECIFIED_SIGNATURE,
				     NULL, NULL);
	kfree(signed_data);

	switch (err) {
	case 0:
		break;
	case -ENOKEY:
		fsv_err(inode, "signing certificate is not in the keyring");
		break;
	case -EKEYREJECTED:
		fsv_err(inode, "signature does not match the file");
		break;
	case -EBADMSG:
		fsv_err(inode, "signature is malformed");
		break;
	default:
		fsv_err(inode, "error %d checking the signature", err);
	}
	return err;
}

/**
 * fsv_report_signature() - tell LSMs about a signature that checked out
 * @inode: the verity inode
 * @sig: the signature
 * @sig_size: its size; 0 for none, in which case nothing is reported
 *
 * IPE's fsverity_signature=TRUE rule rests on this.  The hook only records
 * the signature, so a failure is logged and otherwise ignored.
 */
void fsv_report_signature(const struct inode *inode, const u8 *sig,
			  size_t sig_size)
{
	int err;

	if (!sig_size || WARN_ON_ONCE(!IS_VERITY(inode)))
		return;
	err = security_inode_setintegrity(inode,
					  LSM_INT_FSVERITY_BUILTINSIG_VALID,
					  sig, sig_size);
	if (err)
		fsv_err(inode, "error %d reporting the signature to LSMs",
			err);
}

void __init fsv_init_signature(void)
{
	fsv_keyring = keyring_alloc(".fs-verity", KUIDT_INIT(0), KGIDT_INIT(0),
				    current_cred(),
				    KEY_POS_SEARCH | KEY_USR_VIEW |
				    KEY_USR_READ | KEY_USR_WRITE |
				    KEY_USR_SEARCH | KEY_USR_SETATTR,
				    KEY_ALLOC_NOT_IN_QUOTA, NULL, NULL);
	if (IS_ERR(fsv_keyring))
		panic("fs-verity: cannot allocate the \".fs-verity\" keyring");
}
