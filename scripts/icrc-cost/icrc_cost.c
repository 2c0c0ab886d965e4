// SPDX-License-Identifier: GPL-2.0
/*
 * Measures what the kernel's crc32_le (the function rrxe computes the RoCEv2 ICRC with)
 * costs per byte on the running kernel, over the chunk sizes of RoCE packets: 1024 bytes
 * (the path MTU of a 1500-byte link) and 4096 bytes (of a 9000-byte link). Loaded by
 * scripts/icrc-cost.sh in a guest of each cached kernel; prints one line per size, then
 * rounds of a transmit's copy and CRC and of a receive's check, each two ways (memcpy and
 * crc32_le, or one slicing-by-8 loop as rrxe_glue_copy_crc's), and fails the load (-EAGAIN)
 * so that nothing stays behind. A measurement, not a test.
 */
#include <linux/module.h>
#include <linux/crc32.h>
#include <linux/ktime.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/utsname.h>
#include <linux/unaligned.h>

static unsigned int mib = 64;
module_param(mib, uint, 0444);
MODULE_PARM_DESC(mib, "MiB checksummed per chunk size (default 64)");

/* Slice-by-8 tables for the copy-and-CRC loop below, built at load. */
static u32 tab[8][256];

static void tab_init(void)
{
	int i, k, s;

	for (i = 0; i < 256; i++) {
		u32 c = i;

		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ ((c & 1) ? 0xedb88320 : 0);
		tab[0][i] = c;
	}
	for (s = 1; s < 8; s++)
		for (i = 0; i < 256; i++)
			tab[s][i] = (tab[s - 1][i] >> 8) ^ tab[0][tab[s - 1][i] & 0xff];
}

/* One slicing-by-8 step over the 8 bytes of w (loaded in CPU order), as rrxe's glue. */
static inline u32 step8(u32 crc, u64 w)
{
	u32 lo, hi;

	w = le64_to_cpu((__force __le64)w);
	lo = (u32)w ^ crc;
	hi = w >> 32;
	return tab[7][lo & 0xff] ^ tab[6][(lo >> 8) & 0xff] ^ tab[5][(lo >> 16) & 0xff] ^
	       tab[4][lo >> 24] ^ tab[3][hi & 0xff] ^ tab[2][(hi >> 8) & 0xff] ^
	       tab[1][(hi >> 16) & 0xff] ^ tab[0][hi >> 24];
}

/* Copies len bytes and returns crc32_le(crc, src, len), reading each byte once. */
static u32 copy_crc(u8 *d, const u8 *s, size_t len, u32 crc)
{
	for (; len >= 8; len -= 8, s += 8, d += 8) {
		u64 w = get_unaligned((const u64 *)s);

		put_unaligned(w, (u64 *)d);
		crc = step8(crc, w);
	}
	for (; len; len--) {
		u8 b = *s++;

		*d++ = b;
		crc = (crc >> 8) ^ tab[0][(crc ^ b) & 0xff];
	}
	return crc;
}

/* The same loop without the copy: what a received packet's check uses. */
static u32 table_crc(const u8 *s, size_t len, u32 crc)
{
	for (; len >= 8; len -= 8, s += 8)
		crc = step8(crc, get_unaligned((const u64 *)s));
	for (; len; len--)
		crc = (crc >> 8) ^ tab[0][(crc ^ *s++) & 0xff];
	return crc;
}

static int __init icrc_cost_init(void)
{
	static const size_t sizes[] = { 64, 1024, 4096 };
	const size_t buflen = 64 * 1024;
	u8 *buf = kmalloc(buflen, GFP_KERNEL), *dst;
	u32 crc = ~0u;
	int i, round;

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
	tab_init();
	dst = kmalloc(4096, GFP_KERNEL);
	if (!dst) {
		kfree(buf);
		return -ENOMEM;
	}
	/*
	 * Five rounds of each chunk size, the ways in turn within each: a transmit's copy and
	 * CRC (memcpy + crc32_le, or one loop) and a receive's check alone (crc32_le, or the
	 * one loop's tables without the copy). The host's noise shows as their spread.
	 */
	for (round = 0; round < 5 * 2 * 4; round++) {
		static const char *const ways[] = {
			"memcpy + crc32_le", "copy_crc (one loop)", "crc32_le alone",
			"table loop alone"
		};
		size_t n = sizes[1 + (round / 4) % 2], total = (size_t)mib << 20;
		size_t done = 0, off = 0;
		int way = round % 4;
		ktime_t t0 = ktime_get();
		s64 ns;

		while (done < total) {
			switch (way) {
			case 0:
				memcpy(dst, buf + off, n);
				crc = crc32_le(crc, dst, n);
				break;
			case 1:
				crc = copy_crc(dst, buf + off, n, crc);
				break;
			case 2:
				crc = crc32_le(crc, buf + off, n);
				break;
			default:
				crc = table_crc(buf + off, n, crc);
			}
			off = (off + n) % buflen;
			done += n;
		}
		ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
		pr_info("icrc_cost: %s %s %zu-byte chunks: %lld ps/byte, %lld MB/s (crc %08x)\n",
			init_utsname()->release, ways[way], n,
			ns * 1000 / (s64)total, ns ? (s64)total * 1000 / ns : 0, crc);
	}
	/* Every way gives the same CRC. */
	crc = crc32_le(~0u, buf, 4096);
	pr_info("icrc_cost: check %s\n", copy_crc(dst, buf, 4096, ~0u) == crc &&
		table_crc(buf, 4096, ~0u) == crc && !memcmp(dst, buf, 4096) ? "ok" : "FAILED");
	kfree(dst);
	kfree(buf);
	return -EAGAIN;
}
module_init(icrc_cost_init);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("crc32_le cost per byte, for rrxe's ICRC");
