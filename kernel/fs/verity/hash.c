// SPDX-License-Identifier: GPL-2.0
/*
 * fs-verity: the hash algorithms, and hashing of tree blocks
 */

#include "internal.h"

#include <crypto/hash.h>
#include <linux/slab.h>

/* SHA-2 with an output of @bits bits */
#define FSV_SHA2(bits) {					\
	.name = "sha" #bits,					\
	.algo_id = HASH_ALGO_SHA##bits,				\
	.digest_size = SHA##bits##_DIGEST_SIZE,			\
	.block_size = SHA##bits##_BLOCK_SIZE,			\
}

/* Indexed by FS_VERITY_HASH_ALG_*, the numbers stored on disk */
static struct fsv_hash_alg fsv_hash_algs[] = {
	[FS_VERITY_HASH_ALG_SHA256] = FSV_SHA2(256),
	[FS_VERITY_HASH_ALG_SHA512] = FSV_SHA2(512),
};

/* Serialises the one-time allocation of each algorithm's transform */
static DEFINE_MUTEX(fsv_tfm_mutex);

static int fsv_alloc_tfm(const struct inode *inode, struct fsv_hash_alg *alg)
{
	struct crypto_shash *tfm;
	int err = 0;

	mutex_lock(&fsv_tfm_mutex);
	if (alg->tfm)
		goto out;	/* somebody else was first */

	tfm = crypto_alloc_shash(alg->name, 0, 0);
	if (IS_ERR(tfm)) {
		err = PTR_ERR(tfm);
		if (err == -ENOENT) {
			fsv_warn(inode, "%s is not available in the crypto API",
				 alg->name);
			err = -ENOPKG;
		} else {
			fsv_err(inode, "error %d allocating %s", err,
				alg->name);
		}
		goto out;
	}
	if (WARN_ON_ONCE(crypto_shash_digestsize(tfm) != alg->digest_size ||
			 crypto_shash_blocksize(tfm) != alg->block_size)) {
		crypto_free_shash(tfm);
		err = -EINVAL;
		goto out;
	}
	pr_info("%s using implementation \"%s\"\n", alg->name,
		crypto_shash_driver_name(tfm));
	/* Readers test ->tfm without the mutex; see fsv_hash_alg_get() */
	smp_store_release(&alg->tfm, tfm);
out:
	mutex_unlock(&fsv_tfm_mutex);
	return err;
}

/**
 * fsv_hash_alg_get() - look up a hash algorithm by its on-disk number
 * @inode: the inode it is wanted for, named in messages
 * @num: FS_VERITY_HASH_ALG_*
 *
 * The transform is allocated the first time an algorithm is used, and then
 * kept for good: that avoids loading crypto modules nobody needs, and lets
 * every later lookup be a single load.
 *
 * Return: the algorithm, ready to hash with; ERR_PTR(-EINVAL) for an unknown
 * number, ERR_PTR(-ENOPKG) if the crypto API lacks it, or another error.
 */
const struct fsv_hash_alg *fsv_hash_alg_get(const struct inode *inode,
					    unsigned int num)
{
	struct fsv_hash_alg *alg;
	int err;

	if (num >= ARRAY_SIZE(fsv_hash_algs) || !fsv_hash_algs[num].name) {
		fsv_warn(inode, "unknown hash algorithm %u", num);
		return ERR_PTR(-EINVAL);
	}
	alg = &fsv_hash_algs[num];

	/* Pairs with smp_store_release() in fsv_alloc_tfm() */
	if (likely(smp_load_acquire(&alg->tfm)))
		return alg;
	err = fsv_alloc_tfm(inode, alg);
	return err ? ERR_PTR(err) : alg;
}

/* The FS_VERITY_HASH_ALG_* number of @alg */
unsigned int fsv_hash_alg_num(const struct fsv_hash_alg *alg)
{
	return alg - fsv_hash_algs;
}

/**
 * fsv_salted_state() - hash a salt once, to start every block's hash from
 * @alg: the hash algorithm
 * @salt: the salt
 * @salt_size: its size; 0 for none
 *
 * fs-verity hashes each block as hash(salt padded to the algorithm's block
 * size || block).  Because the padded salt fills whole hash blocks, the
 * state after it can be exported once and imported for every block.
 *
 * Return: a kmalloc()ed state to give back with kfree(), NULL if there is no
 * salt, or an ERR_PTR() on failure.
 */
u8 *fsv_salted_state(const struct fsv_hash_alg *alg, const u8 *salt,
		     unsigned int salt_size)
{
	SHASH_DESC_ON_STACK(desc, alg->tfm);
	unsigned int padded_size;
	u8 *padded, *state;
	int err;

	if (!salt_size)
		return NULL;

	padded_size = round_up(salt_size, alg->block_size);
	padded = kzalloc(padded_size, GFP_KERNEL);
	state = kmalloc(crypto_shash_statesize(alg->tfm), GFP_KERNEL);
	if (!padded || !state) {
		err = -ENOMEM;
		goto fail;
	}
	memcpy(padded, salt, salt_size);

	desc->tfm = alg->tfm;
	err = crypto_shash_init(desc);
	if (!err)
		err = crypto_shash_update(desc, padded, padded_size);
	if (!err)
		err = crypto_shash_export(desc, state);
	shash_desc_zero(desc);
	if (err)
		goto fail;
	kfree(padded);
	return state;

fail:
	kfree(padded);
	kfree(state);
	return ERR_PTR(err);
}

/**
 * fsv_hash_block() - hash one data or tree block, salted as the tree says
 * @tree: the Merkle tree the block belongs to
 * @data: the block, @tree->block_size bytes
 * @out: where the digest goes, @tree->digest_size bytes
 *
 * Return: 0 on success, -errno from the crypto API on failure
 */
int fsv_hash_block(const struct fsv_tree *tree, const void *data, u8 *out)
{
	SHASH_DESC_ON_STACK(desc, tree->alg->tfm);
	int err;

	desc->tfm = tree->alg->tfm;
	if (tree->salted_state) {
		err = crypto_shash_import(desc, tree->salted_state);
		if (!err)
			err = crypto_shash_finup(desc, data, tree->block_size,
						 out);
	} else {
		err = crypto_shash_digest(desc, data, tree->block_size, out);
	}
	shash_desc_zero(desc);
	return err;
}

/**
 * fsv_hash_buffer() - hash a buffer without salt
 * @alg: the hash algorithm
 * @data: the bytes
 * @len: how many
 * @out: where the digest goes
 *
 * Return: 0 on success, -errno from the crypto API on failure
 */
int fsv_hash_buffer(const struct fsv_hash_alg *alg, const void *data,
		    size_t len, u8 *out)
{
	return crypto_shash_tfm_digest(alg->tfm, data, len, out);
}
