// SPDX-License-Identifier: GPL-2.0
/*
 * fs-verity: per-filesystem statistics in /sys/fs/verity/<device>/
 *
 * Each mounted filesystem on which fs-verity was used gets a directory
 * named after it (its super_block's s_id, the device name, as ext4 and
 * f2fs name theirs under /sys/fs), holding one read-only counter per file.
 * The directory belongs to the super_block: created when the first verity
 * inode of the filesystem is set up, removed by fsverity_cleanup_sb() when
 * the filesystem is shut down, so every mount starts from zero and nothing
 * outlives it.  Counting is per CPU, so the verification hot path never
 * shares a cache line; reading sums the CPUs.
 */

#include "internal.h"

#include <linux/kobject.h>
#include <linux/percpu.h>
#include <linux/slab.h>

struct fsv_stats {
	struct kobject kobj;
	struct list_head node;
	const struct super_block *sb;
	u64 __percpu *counts;		/* FSV_NR_STATS per CPU */
};

static struct kobject *fsv_sysfs_root;
static LIST_HEAD(fsv_stats_list);
static DEFINE_MUTEX(fsv_stats_mutex);

/**
 * fsv_count() - add to one of the counters of the filesystem of @vi
 * @vi: a verity inode's state
 * @stat: which counter
 * @n: how much
 */
void fsv_count(const struct fsverity_info *vi, enum fsv_stat stat,
	       unsigned int n)
{
	if (vi->stats)
		this_cpu_add(vi->stats->counts[stat], n);
}

static u64 fsv_stat_sum(const struct fsv_stats *st, enum fsv_stat stat)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += per_cpu_ptr(st->counts, cpu)[stat];
	return sum;
}

struct fsv_stat_attr {
	struct attribute attr;
	enum fsv_stat stat;
};

static ssize_t fsv_stat_show(struct kobject *kobj, struct attribute *attr,
			     char *buf)
{
	struct fsv_stats *st = container_of(kobj, struct fsv_stats, kobj);
	struct fsv_stat_attr *a = container_of(attr, struct fsv_stat_attr,
					       attr);

	return sysfs_emit(buf, "%llu\n", fsv_stat_sum(st, a->stat));
}

/* In enum fsv_stat order */
#define FSV_STAT_ATTR(_stat, _name) \
	{ .attr = { .name = _name, .mode = 0444 }, .stat = _stat }

static struct fsv_stat_attr fsv_stat_attrs[FSV_NR_STATS] = {
	FSV_STAT_ATTR(FSV_STAT_DATA_VERIFIED, "data_blocks_verified"),
	FSV_STAT_ATTR(FSV_STAT_TREE_HASHED, "tree_blocks_hashed"),
	FSV_STAT_ATTR(FSV_STAT_CACHE_HITS, "hash_cache_hits"),
	FSV_STAT_ATTR(FSV_STAT_FAILURES, "verify_failures"),
	FSV_STAT_ATTR(FSV_STAT_ENABLES, "enables"),
	FSV_STAT_ATTR(FSV_STAT_BIO_SHARES, "bio_shares_queued"),
	FSV_STAT_ATTR(FSV_STAT_TREE_READAHEAD, "tree_readahead_requests"),
};

static struct attribute *fsv_stat_attr_list[] = {
	&fsv_stat_attrs[FSV_STAT_DATA_VERIFIED].attr,
	&fsv_stat_attrs[FSV_STAT_TREE_HASHED].attr,
	&fsv_stat_attrs[FSV_STAT_CACHE_HITS].attr,
	&fsv_stat_attrs[FSV_STAT_FAILURES].attr,
	&fsv_stat_attrs[FSV_STAT_ENABLES].attr,
	&fsv_stat_attrs[FSV_STAT_BIO_SHARES].attr,
	&fsv_stat_attrs[FSV_STAT_TREE_READAHEAD].attr,
	NULL
};

static const struct attribute_group fsv_stat_group = {
	.attrs = fsv_stat_attr_list,
};
__ATTRIBUTE_GROUPS(fsv_stat);

static const struct sysfs_ops fsv_stat_ops = {
	.show = fsv_stat_show,
};

static void fsv_stats_release(struct kobject *kobj)
{
	struct fsv_stats *st = container_of(kobj, struct fsv_stats, kobj);

	free_percpu(st->counts);
	kfree(st);
}

static const struct kobj_type fsv_stats_ktype = {
	.sysfs_ops = &fsv_stat_ops,
	.default_groups = fsv_stat_groups,
	.release = fsv_stats_release,
};

static bool fsv_stats_name_taken(const char *name)
{
	struct fsv_stats *st;

	list_for_each_entry(st, &fsv_stats_list, node)
		if (kobject_name(&st->kobj) &&
		    !strcmp(kobject_name(&st->kobj), name))
			return true;
	return false;
}

static struct fsv_stats *fsv_stats_create(struct super_block *sb)
{
	struct fsv_stats *st;

	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return NULL;
	st->sb = sb;
	st->counts = __alloc_percpu(sizeof(u64) * FSV_NR_STATS,
				    __alignof__(u64));
	if (!st->counts) {
		kfree(st);
		return NULL;
	}
	kobject_init(&st->kobj, &fsv_stats_ktype);
	/*
	 * Two live filesystems with one s_id (it is only a device name) would
	 * make sysfs complain loudly; the second then counts without a
	 * directory rather than take another's name.
	 */
	if (fsv_stats_name_taken(sb->s_id) ||
	    kobject_add(&st->kobj, fsv_sysfs_root, "%s", sb->s_id))
		pr_warn_ratelimited("no /sys/fs/verity/%s for this mount: the name is taken or sysfs failed\n",
				    sb->s_id);
	list_add(&st->node, &fsv_stats_list);
	return st;
}

/**
 * fsv_stats_get() - the counters of the filesystem @sb
 * @sb: a filesystem with fs-verity support
 *
 * Called when a verity inode's state is set up, not on the hot path.  The
 * counters live until fsverity_cleanup_sb(), which runs after every inode of
 * @sb, and so every user of the counters, is gone.
 *
 * Return: the counters, created on first use; NULL if memory ran out, in
 * which case nothing is counted for this inode
 */
struct fsv_stats *fsv_stats_get(struct super_block *sb)
{
	struct fsv_stats *st;

	if (!fsv_sysfs_root)
		return NULL;
	mutex_lock(&fsv_stats_mutex);
	list_for_each_entry(st, &fsv_stats_list, node) {
		if (st->sb == sb)
			goto out;
	}
	st = fsv_stats_create(sb);
out:
	mutex_unlock(&fsv_stats_mutex);
	return st;
}

/**
 * fsverity_cleanup_sb() - forget a filesystem being shut down
 * @sb: the super_block, whose inodes have all been evicted
 *
 * Removes the filesystem's /sys/fs/verity/ directory and frees its
 * counters.  Called by generic_shutdown_super() for every filesystem; does
 * nothing for one that never set up a verity inode.
 */
void fsverity_cleanup_sb(struct super_block *sb)
{
	struct fsv_stats *st, *found = NULL;

	if (!sb->s_vop)
		return;
	mutex_lock(&fsv_stats_mutex);
	list_for_each_entry(st, &fsv_stats_list, node) {
		if (st->sb == sb) {
			list_del(&st->node);
			found = st;
			break;
		}
	}
	mutex_unlock(&fsv_stats_mutex);
	/* Waits for readers of its files; the release frees the counters */
	if (found)
		kobject_put(&found->kobj);
}
EXPORT_SYMBOL_GPL(fsverity_cleanup_sb);

void __init fsv_init_stats(void)
{
	fsv_sysfs_root = kobject_create_and_add("verity", fs_kobj);
	if (!fsv_sysfs_root)
		pr_warn("cannot create /sys/fs/verity; no statistics\n");
}
