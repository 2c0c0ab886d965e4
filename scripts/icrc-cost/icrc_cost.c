// SPDX-License-Identifier: GPL-2.0
/*
 * Measures what the kernel's crc32_le (the function rrxe computes the RoCEv2 ICRC with)
 * costs per byte on the running kernel, over the chunk sizes of RoCE packets: 1024 bytes
 * (the path MTU of a 1500-byte link) and 4096 bytes (of a 9000-byte link). Loaded by
 * scripts/icrc-cost.sh in a guest of each cached kernel; prints one line per size and fails
 * the load (-EAGAIN) so that nothing stays behind. A measurement, not a test.
 */
#include <linux/module.h>
#include <linux/crc32.h>
#include <linux/ktime.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/utsname.h>

static unsigned int mib = 64;
module_param(mib, uint, 0444);
MODULE_PARM_DESC(mib, "MiB checksummed per chunk size (default 64)");

static int __init icrc_cost_init(void)
{
	static const size_t sizes[] = { 64, 1024, 4096 };
	const size_t buflen = 64 * 1024;
	u8 *buf = kmalloc(buflen, GFP_KERNEL);
	u32 crc = ~0u;
	int i;

	if (!buf)
		return -ENOMEM;
	get_random_bytes(buf, buflen);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t n = sizes[i], done = 0, total = (size_t)mib << 20, off = 0;
		ktime_t t0 = ktime_get();
		s64 ns;

		while (done < total) {
			crc = crc32_le(crc, buf + off, n);
			off = (off + n) % buflen;
			done += n;
		}
		ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
		pr_info("icrc_cost: %s crc32_le %zu-byte chunks: %llu bytes in %lld ns, %lld ps/byte, %lld MB/s (crc %08x)\n",
			init_utsname()->release, n, (unsigned long long)total, ns,
			ns * 1000 / (s64)total, ns ? (s64)total * 1000 / ns : 0, crc);
	}
	kfree(buf);
	return -EAGAIN;
}
module_init(icrc_cost_init);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("crc32_le cost per byte, for rrxe's ICRC");
