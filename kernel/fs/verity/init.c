// SPDX-License-Identifier: GPL-2.0
/*
 * fs-verity: start-up, the sysctl, and messages
 */

#include "internal.h"

#include <linux/ratelimit.h>

#if defined(CONFIG_SYSCTL) && defined(CONFIG_FS_VERITY_BUILTIN_SIGNATURES)
static struct ctl_table fsv_sysctls[] = {
	{
		.procname	= "require_signatures",
		.mode		= 0644,
		.data		= &fsv_require_signatures,
		.maxlen		= sizeof(fsv_require_signatures),
		/* only 0 or 1 */
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
};

static void __init fsv_init_sysctl(void)
{
	register_sysctl_init("fs/verity", fsv_sysctls);
}
#else
static inline void fsv_init_sysctl(void)
{
}
#endif

/**
 * fsv_msg() - log a rate-limited message, naming the inode if there is one
 * @inode: the inode concerned, or NULL
 * @error: an error rather than a warning
 * @fmt: printf format
 * @...: its arguments
 *
 * Hostile files can trigger these at will, hence the rate limit.
 */
void fsv_msg(const struct inode *inode, bool error, const char *fmt, ...)
{
	static DEFINE_RATELIMIT_STATE(limit, DEFAULT_RATELIMIT_INTERVAL,
				      DEFAULT_RATELIMIT_BURST);
	struct va_format vaf;
	va_list args;

	if (!__ratelimit(&limit))
		return;
	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	if (inode && error)
		pr_err("%s: inode %lu: %pV\n", inode->i_sb->s_id,
		       inode->i_ino, &vaf);
	else if (inode)
		pr_warn("%s: inode %lu: %pV\n", inode->i_sb->s_id,
			inode->i_ino, &vaf);
	else if (error)
		pr_err("%pV\n", &vaf);
	else
		pr_warn("%pV\n", &vaf);
	va_end(args);
}

static int __init fsv_init(void)
{
	/* Digests live in fixed arrays sized for the largest algorithm */
	BUILD_BUG_ON(FS_VERITY_MAX_DIGEST_SIZE < SHA256_DIGEST_SIZE);
	BUILD_BUG_ON(sizeof_field(struct fsverity_descriptor, root_hash) <
		     FS_VERITY_MAX_DIGEST_SIZE);
	BUILD_BUG_ON(sizeof(struct fsverity_descriptor) != 256);

	fsv_init_info_cache();
	fsv_init_workqueue();
	fsv_init_sysctl();
	fsv_init_signature();
	fsv_init_bpf();
	return 0;
}
late_initcall(fsv_init);
