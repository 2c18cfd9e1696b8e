/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * fs-verity: the interface between userspace and the kernel
 *
 * Three ioctls make up the API: one turns verity on for a file, one reports
 * the file's digest, and one returns the metadata that protects it.  All
 * structures here are part of the ABI, and the descriptor is also part of the
 * on-disk format of every filesystem that supports fs-verity.  Their layout
 * must never change.  See Documentation/filesystems/fsverity.rst.
 */
#ifndef _UAPI_LINUX_FSVERITY_H
#define _UAPI_LINUX_FSVERITY_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* Hash algorithm numbers, as stored in the descriptor */
#define FS_VERITY_HASH_ALG_SHA256	1
#define FS_VERITY_HASH_ALG_SHA512	2

/* Argument of FS_IOC_ENABLE_VERITY */
struct fsverity_enable_arg {
	__u32 version;		/* 1 */
	__u32 hash_algorithm;	/* FS_VERITY_HASH_ALG_* */
	__u32 block_size;	/* Merkle tree block size in bytes */
	__u32 salt_size;	/* bytes at salt_ptr, at most 32 */
	__u64 salt_ptr;
	__u32 sig_size;		/* bytes at sig_ptr, 0 for no signature */
	__u32 __reserved1;	/* must be 0 */
	__u64 sig_ptr;		/* PKCS#7 built-in signature */
	__u64 __reserved2[11];	/* must be 0 */
};

/* Argument of FS_IOC_MEASURE_VERITY */
struct fsverity_digest {
	__u16 digest_algorithm;	/* output: FS_VERITY_HASH_ALG_* */
	__u16 digest_size;	/* input: room in digest[]; output: used */
	__u8 digest[];
};

/*
 * The fs-verity descriptor.  Its hash, taken with sig_size (the field named
 * __reserved_0x04 in userspace) set to 0 and without the signature, is the
 * file digest.  Filesystems store it, followed by the built-in signature if
 * there is one, next to the Merkle tree.
 */
struct fsverity_descriptor {
	__u8 version;		/* 1 */
	__u8 hash_algorithm;	/* FS_VERITY_HASH_ALG_* of the Merkle tree */
	__u8 log_blocksize;	/* log2 of the data and tree block size */
	__u8 salt_size;		/* bytes of salt[] in use */
#ifdef __KERNEL__
	__le32 sig_size;	/* bytes of signature[] that follow */
#else
	__le32 __reserved_0x04;	/* 0 when computing the digest */
#endif
	__le64 data_size;	/* i_size of the file that was protected */
	__u8 root_hash[64];	/* hash of the root tree block, zero padded */
	__u8 salt[32];		/* hashed before every block, zero padded */
	__u8 __reserved[144];	/* must be 0 */
#ifdef __KERNEL__
	__u8 signature[];
#endif
};

/*
 * What a built-in signature signs: the file digest with a magic prefix, so
 * that a key also used for other purposes cannot be tricked into vouching
 * for a file.  Fields are little endian.
 */
struct fsverity_formatted_digest {
	char magic[8];		/* "FSVerity" */
	__le16 digest_algorithm;
	__le16 digest_size;
	__u8 digest[];
};

/* What FS_IOC_READ_VERITY_METADATA can read */
#define FS_VERITY_METADATA_TYPE_MERKLE_TREE	1
#define FS_VERITY_METADATA_TYPE_DESCRIPTOR	2
#define FS_VERITY_METADATA_TYPE_SIGNATURE	3

/* Argument of FS_IOC_READ_VERITY_METADATA, which works like pread() */
struct fsverity_read_metadata_arg {
	__u64 metadata_type;	/* FS_VERITY_METADATA_TYPE_* */
	__u64 offset;		/* byte offset within the metadata */
	__u64 length;		/* most bytes to read */
	__u64 buf_ptr;		/* user buffer */
	__u64 __reserved;	/* must be 0 */
};

#define FS_IOC_ENABLE_VERITY	_IOW('f', 133, struct fsverity_enable_arg)
#define FS_IOC_MEASURE_VERITY	_IOWR('f', 134, struct fsverity_digest)
#define FS_IOC_READ_VERITY_METADATA \
	_IOWR('f', 135, struct fsverity_read_metadata_arg)

#endif /* _UAPI_LINUX_FSVERITY_H */
