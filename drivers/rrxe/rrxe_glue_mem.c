// SPDX-License-Identifier: GPL-2.0
/*
 * C glue of rrxe.ko, memory: queue memory mapped to user space, pinned user memory
 * (ib_umem) and its pages, dma-buf mappings. See rrxe_glue.h.
 */
#include <linux/crc32.h>
#include <linux/moduleparam.h>
#include <linux/unaligned.h>
#include "rrxe_glue_int.h"

/* --- queue memory shared with userspace --- */

struct rrxe_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	void *vaddr;
	size_t size;
};

/*
 * Zeroed, user-mappable queue memory, charged to the caller's memory cgroup: what
 * vmalloc_user() gives, but with GFP_KERNEL_ACCOUNT pages, so a process that creates many
 * large queues pays for them (vmalloc_user() charges nobody). VM_MAP_PUT_PAGES hands the
 * pages and the array to the area: vfree() releases everything.
 *
 * __GFP_RETRY_MAYFAIL: the size is the caller's choice, so a ring that does not fit under the
 * group's memory.max (or in memory at all) fails with ENOMEM; without it the memcg charge
 * path invokes the OOM killer on the group and kills the caller instead of answering
 * (tests/user/accounting.c: exit 137 and oom_kill 1 before, ENOMEM after).
 */
void *rrxe_glue_vmalloc_user(size_t size)
{
	const gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN;
	unsigned long i, n = PAGE_ALIGN(size) >> PAGE_SHIFT;
	struct page **pages;
	void *va;

	if (!n)
		return NULL;
	pages = kvcalloc(n, sizeof(*pages), gfp);
	if (!pages)
		return NULL;
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(gfp | __GFP_ZERO);
		if (!pages[i])
			goto err;
	}
	va = vmap(pages, n, VM_MAP | VM_USERMAP | VM_MAP_PUT_PAGES, PAGE_KERNEL);
	if (va)
		return va;
err:
	while (i--)
		__free_page(pages[i]);
	kvfree(pages);
	return NULL;
}

void rrxe_glue_vfree(void *addr)
{
	vfree(addr);
}

/*
 * Makes [vaddr, vaddr + size) mappable through the ucontext. On success the entry owns the
 * memory: it is freed by rrxe_glue_mmap_free once the entry is removed and unmapped.
 */
struct rrxe_mmap_entry *rrxe_glue_mmap_entry_insert(struct ib_ucontext *uctx, void *vaddr,
						    size_t size, u64 *offset, int *err)
{
	struct rrxe_mmap_entry *e = kzalloc(sizeof(*e), GFP_KERNEL);

	if (!e) {
		*err = -ENOMEM;
		return NULL;
	}
	e->vaddr = vaddr;
	e->size = size;
	*err = rdma_user_mmap_entry_insert(uctx, &e->rdma, size);
	if (*err) {
		kfree(e);
		return NULL;
	}
	*offset = rdma_user_mmap_get_offset(&e->rdma);
	return e;
}

void rrxe_glue_mmap_entry_remove(struct rrxe_mmap_entry *e)
{
	rdma_user_mmap_entry_remove(&e->rdma);
}

int rrxe_glue_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *r = rdma_user_mmap_entry_get(uctx, vma);
	struct rrxe_mmap_entry *e;
	int err;

	if (!r)
		return -EINVAL;
	e = container_of(r, struct rrxe_mmap_entry, rdma);
	if (vma->vm_end - vma->vm_start > e->size)
		err = -EINVAL;
	else
		err = remap_vmalloc_range(vma, e->vaddr, 0);
	rdma_user_mmap_entry_put(r);
	return err;
}

void rrxe_glue_mmap_free(struct rdma_user_mmap_entry *r)
{
	struct rrxe_mmap_entry *e = container_of(r, struct rrxe_mmap_entry, rdma);

	vfree(e->vaddr);
	kfree(e);
}

/* --- memory regions --- */

struct ib_umem *rrxe_glue_umem_get(struct ib_device *dev, u64 start, u64 length, int access,
				   int *err)
{
	struct ib_umem *umem = rrxe_ib_umem_get(dev, start, length, access);

	if (IS_ERR(umem)) {
		*err = PTR_ERR(umem);
		return NULL;
	}
	return umem;
}

void rrxe_glue_umem_release(struct ib_umem *umem)
{
	ib_umem_release(umem);
}

u64 rrxe_glue_umem_address(struct ib_umem *umem)
{
	return umem->address;
}

u32 rrxe_glue_umem_offset(struct ib_umem *umem)
{
	return ib_umem_offset(umem);
}

/* Fills pages[0..max) with the umem's pages in order; returns how many it has. */
size_t rrxe_glue_umem_pages(struct ib_umem *umem, struct page **pages, size_t max)
{
	struct sg_page_iter it;
	size_t n = 0;

	for_each_sgtable_page(&umem->sgt_append.sgt, &it, 0) {
		if (n < max)
			pages[n] = sg_page_iter_page(&it);
		n++;
	}
	return n;
}

/* Copies len bytes between buf and page at off (off + len <= PAGE_SIZE). */
void rrxe_glue_page_copy(struct page *page, u32 off, void *buf, u32 len, bool to_page)
{
	void *va;

	if (off >= PAGE_SIZE || len > PAGE_SIZE - off)
		return;
	va = kmap_local_page(page);
	if (to_page)
		memcpy(va + off, buf, len);
	else
		memcpy(buf, va + off, len);
	kunmap_local(va);
}

/*
 * One slicing-by-8 step: the register crc continued over the 8 bytes of w (loaded in CPU
 * order). tab is the table of 8 x 256 entries (entry i of table s is byte i's change of the
 * register followed by s zero bytes; proto::crc::slice8_tables).
 */
static inline u32 rrxe_crc_step8(u32 crc, u64 w, const u32 *tab)
{
	u32 lo, hi;

	w = le64_to_cpu((__force __le64)w);
	lo = (u32)w ^ crc;
	hi = w >> 32;
	return tab[7 * 256 + (lo & 0xff)] ^ tab[6 * 256 + ((lo >> 8) & 0xff)] ^
	       tab[5 * 256 + ((lo >> 16) & 0xff)] ^ tab[4 * 256 + (lo >> 24)] ^
	       tab[3 * 256 + (hi & 0xff)] ^ tab[2 * 256 + ((hi >> 8) & 0xff)] ^
	       tab[1 * 256 + ((hi >> 16) & 0xff)] ^ tab[hi >> 24];
}

/*
 * Copies len bytes from src to dst and returns the CRC-32 register crc continued over them
 * (crc32_le's contract), reading each byte once: a packet's payload is copied in and its
 * ICRC computed in one loop instead of a copy and a second pass over the copy. The CRC
 * covers exactly the bytes stored in dst, also if src changes meanwhile (a user page the
 * process writes to).
 */
u32 rrxe_glue_copy_crc(void *dst, const void *src, size_t len, u32 crc, const u32 *tab)
{
	const u8 *s = src;
	u8 *d = dst;

	for (; len >= 8; len -= 8, s += 8, d += 8) {
		u64 w = get_unaligned((const u64 *)s);

		put_unaligned(w, (u64 *)d);
		crc = rrxe_crc_step8(crc, w, tab);
	}
	for (; len; len--) {
		u8 b = *s++;

		*d++ = b;
		crc = (crc >> 8) ^ tab[(crc ^ b) & 0xff];
	}
	return crc;
}

/* The register crc continued over len bytes at p, by the same table loop (no copy). */
u32 rrxe_glue_table_crc(const void *p, size_t len, u32 crc, const u32 *tab)
{
	const u8 *s = p;

	for (; len >= 8; len -= 8, s += 8)
		crc = rrxe_crc_step8(crc, get_unaligned((const u64 *)s), tab);
	for (; len; len--)
		crc = (crc >> 8) ^ tab[(crc ^ *s++) & 0xff];
	return crc;
}

/*
 * rrxe_glue_page_copy from the page with rrxe_glue_copy_crc, *crc continued; false (nothing
 * copied) unless off + len <= PAGE_SIZE.
 */
bool rrxe_glue_page_copy_crc(struct page *page, u32 off, void *buf, u32 len, u32 *crc,
			     const u32 *tab)
{
	void *va;

	if (off >= PAGE_SIZE || len > PAGE_SIZE - off)
		return false;
	va = kmap_local_page(page);
	*crc = rrxe_glue_copy_crc(buf, va + off, len, *crc, tab);
	kunmap_local(va);
	return true;
}

/*
 * The time of ICRC_TIMED_PACKETS packets' CRCs over buf (ICRC_TIMED_BYTES), each as the ICRC
 * is computed for a 1024-byte payload: its headers (a 64-byte call), then its payload (a
 * 1024-byte call continuing the register), by crc32_le or, with tab, the table loop.
 * Preemption is off so that the run is not timed with another task's turn inside it; the
 * register is stored (rrxe_icrc_sink, never read) before the clock is read again, so that
 * the loop is neither optimised away nor moved past the second reading.
 */
#define ICRC_TIMED_PACKETS 8
#define ICRC_TIMED_BYTES 1088
static u32 rrxe_icrc_sink;
static u64 rrxe_icrc_time(const u8 *buf, const u32 *tab)
{
	u32 crc = ~0U;
	u64 t0, t1;
	int i;

	preempt_disable();
	t0 = ktime_get_ns();
	for (i = 0; i < ICRC_TIMED_PACKETS; i++) {
		if (tab) {
			crc = rrxe_glue_table_crc(buf, 64, crc, tab);
			crc = rrxe_glue_table_crc(buf + 64, 1024, crc, tab);
		} else {
			crc = crc32_le(crc, buf, 64);
			crc = crc32_le(crc, buf + 64, 1024);
		}
	}
	WRITE_ONCE(rrxe_icrc_sink, crc);
	t1 = ktime_get_ns();
	preempt_enable();
	return t1 - t0;
}

/*
 * How the ICRC is computed (rrxe_glue_icrc_choose): "auto" (the default), or one routine
 * forced, "crc32_le" or "table", for tests of the routine auto would not take on a kernel
 * and CPU, and for comparisons. Read at module init only.
 */
static char *icrc = "auto";
module_param(icrc, charp, 0444);
MODULE_PARM_DESC(icrc,
		 "The ICRC's CRC-32 routine: auto (the default: the table loop where crc32_le is generic code, else the faster of crc32_le and the table loop, timed at load), crc32_le or table; the choice is in the kernel log");

/*
 * Whether the ICRC uses the table loops above (rrxe_glue_copy_crc, rrxe_glue_table_crc)
 * instead of crc32_le: 1 yes, 0 no, -EINVAL for an icrc parameter that names no routine.
 * Where crc32_le is the kernel's generic code (slicing-by-8 on 6.12, byte at a time in
 * 7.x's CRC library without CONFIG_CRC_OPTIMIZATIONS) the loops outrun it
 * (docs/performance.md, the ICRC section): yes, without a measurement. Where an
 * architecture computes crc32_le with its own instructions (x86's PCLMULQDQ, arm64's
 * CRC32) it is the faster on a real CPU, but not always in a guest that emulates them
 * (QEMU's TCG: PCLMULQDQ crc32_le at 2 to 3 times the table loop's cost per byte): the
 * two are timed on a packet's pattern, best of five runs each taken in turn, and the
 * faster is kept, as the kernel's RAID6 and XOR code choose their routines by timing them
 * at boot. Either computes the same CRC; the choice, with its two times, goes to the
 * kernel log. Kernels whose CRC library does not say (no crc32_optimizations) have the
 * generic crc32_le on x86; on other architectures the two are timed there too. Called
 * once, from module init (process context, may sleep).
 */
int rrxe_glue_icrc_choose(const u32 *tab)
{
	u64 arch = U64_MAX, table = U64_MAX;
	u8 *buf;
	bool yes;
	int i;

	if (!strcmp(icrc, "crc32_le") || !strcmp(icrc, "table")) {
		yes = icrc[0] == 't';
		pr_info("rrxe: ICRC by %s (icrc=%s)\n", yes ? "the table loop" : "crc32_le", icrc);
		return yes;
	}
	if (strcmp(icrc, "auto")) {
		pr_err("rrxe: icrc=%s names no ICRC routine (auto, crc32_le or table)\n", icrc);
		return -EINVAL;
	}
#ifdef RRXE_HAVE_CRC32_OPTIMIZATIONS
	yes = !(crc32_optimizations() & CRC32_LE_OPTIMIZATION);
#else
	yes = IS_ENABLED(CONFIG_X86);
#endif
	if (yes) {
		pr_info("rrxe: ICRC by the table loop (crc32_le is the generic code)\n");
		return 1;
	}
	buf = kmalloc(ICRC_TIMED_BYTES, GFP_KERNEL);
	if (!buf) {
		pr_info("rrxe: ICRC by crc32_le (no memory to time it against the table loop)\n");
		return 0;
	}
	for (i = 0; i < ICRC_TIMED_BYTES; i++)
		buf[i] = i * 7 + 1;
	for (i = 0; i < 5; i++) {
		arch = min(arch, rrxe_icrc_time(buf, NULL));
		table = min(table, rrxe_icrc_time(buf, tab));
	}
	kfree(buf);
	yes = table < arch;
	pr_info("rrxe: ICRC by %s (%d packets of 1024 bytes: crc32_le %llu ns, table loop %llu ns)\n",
		yes ? "the table loop" : "crc32_le", ICRC_TIMED_PACKETS, arch, table);
	return yes;
}

/*
 * Whether [addr, addr + len) is memory of the kernel's linear map, page by page: what a
 * kernel consumer's DMA address is on a virtual-DMA device (ib_dma_map_* hand out
 * page_address()). Checked before a DMA MR is accessed, so a wrong address (from a peer
 * using an unsafe global rkey, or a buggy consumer) fails the access instead of faulting.
 */
bool rrxe_glue_kva_valid(u64 addr, u64 len)
{
	u64 last, p;

	if (!len)
		return true;
	if (check_add_overflow(addr, len - 1, &last))
		return false;
	for (p = addr & PAGE_MASK; ; p += PAGE_SIZE) {
		if (!virt_addr_valid((void *)(uintptr_t)p))
			return false;
		if (p >= (last & PAGE_MASK))
			return true;
	}
}

/* The kernel address of page + off for an 8-byte atomic, mapped until unmap. */
u64 *rrxe_glue_page_map_u64(struct page *page, u32 off)
{
	if (off > PAGE_SIZE - 8 || (off & 7))
		return NULL;
	return kmap_local_page(page) + off;
}

void rrxe_glue_page_unmap(void *addr)
{
	kunmap_local(addr);
}

/* FRMR: records each page address of a mapped scatterlist through set_page. */
int rrxe_glue_sg_to_pages(struct ib_mr *mr, struct scatterlist *sg, int nents,
			  unsigned int *sg_offset, int (*set_page)(struct ib_mr *, u64))
{
	return ib_sg_to_pages(mr, sg, nents, sg_offset, set_page);
}

/* --- dma-buf memory regions (reg_user_mr_dmabuf) --- */
#include <linux/dma-buf.h>
#include <linux/iosys-map.h>
#include <linux/dma-resv.h>

RRXE_MODULE_IMPORT_NS_DMA_BUF;

/*
 * A dma-buf an MR is registered over (one reference), rrxe's pinned attachment to it and the
 * kernel mapping of the whole buffer its accesses go through, once rrxe_glue_dmabuf_map
 * succeeded.
 *
 * Why an attachment at all: rrxe touches the buffer only through the CPU mapping, but
 * dma_buf_vmap() alone does not keep the backing store in place. A dynamic exporter (one
 * with pin/unpin: TTM-based GPU drivers) may move or free the pages behind a vmap of an
 * unpinned buffer (it then only tells its dynamic attachments, through move_notify /
 * invalidate_mappings), and an MR would write into freed memory. Only a pin on an
 * attachment (dma_buf_pin, which takes a dynamic attachment) holds the store where it is,
 * as the core's ib_umem_dmabuf_get_pinned() does for hardware drivers. A static exporter
 * (no pin op) does not move its store while a buffer lives; dma_buf_pin() is a no-op there.
 *
 * The attachment's device: dma_buf_dynamic_attach() needs a struct device (it WARNs and
 * fails on NULL), and the core's ib_umem_dmabuf_get() passes the ib_device's dma_device,
 * which is NULL for rrxe (no DMA device: the core uses virtual DMA, as for rdma_rxe and
 * siw). rrxe passes the ib_device's own struct device. On trees where a dynamic importer's
 * attachment to a static exporter is mapped at attach time (6.12: dma_buf_dynamic_attach
 * caches an sg mapping; later trees map only on dma_buf_map_attachment, which rrxe never
 * calls) the exporter DMA-maps its pages for that device, which needs a DMA mask (a device
 * without one WARNs in dma_map_sg): rrxe_glue_alloc_device gives it a 64-bit one, as
 * udmabuf does for its misc device. The device has no IOMMU and no DMA ops, so that mapping
 * is dma-direct's identity mapping, made and undone by the exporter and never used.
 */
struct rrxe_dmabuf {
	struct dma_buf *buf;
	/* rrxe's attachment (pinned), or NULL before rrxe_glue_dmabuf_map succeeded */
	struct dma_buf_attachment *attach;
	struct iosys_map map;
};

/* Takes a reference on the dma-buf of fd: returns it and its size, or NULL with *err set. */
struct rrxe_dmabuf *rrxe_glue_dmabuf_get(int fd, u64 *size, int *err)
{
	struct rrxe_dmabuf *d = kzalloc(sizeof(*d), GFP_KERNEL);
	struct dma_buf *buf;

	if (!d) {
		*err = -ENOMEM;
		return NULL;
	}
	buf = dma_buf_get(fd);
	if (IS_ERR(buf)) {
		kfree(d);
		*err = PTR_ERR(buf);
		return NULL;
	}
	d->buf = buf;
	*size = buf->size;
	return d;
}

/*
 * Never called: the attachment is pinned from before its first use to its detach (see
 * RRXE_DMA_BUF_PINNED_MOVE_NOTIFY). An exporter that calls it anyway broke the pin.
 */
static void __maybe_unused rrxe_dmabuf_move_notify(struct dma_buf_attachment *attach)
{
	pr_warn_ratelimited("rrxe: dma-buf exporter %s moves a pinned buffer\n",
			    attach->dmabuf->exp_name);
}

static const struct dma_buf_attach_ops rrxe_dmabuf_attach_ops = {
	/* The mapping must be system memory with struct pages behind it (see below). */
	.allow_peer2peer = false,
	RRXE_DMA_BUF_PINNED_MOVE_NOTIFY(rrxe_dmabuf_move_notify)
};

/*
 * dma_buf_vmap() of a buffer whose reservation lock the caller holds, without its
 * WARN_ON_ONCE on an exporter's failure: registration is a user call, and an exporter's
 * vmap may fail for reasons a user controls (vmalloc space or memory for a large buffer,
 * an exporter's own limits), which must be an errno, not a kernel warning (that a
 * panic_on_warn machine dies of). The first mapping is made here with the exporter's op and
 * recorded in the dma_buf exactly as dma_buf_vmap() records it (vmap_ptr and
 * vmapping_counter, under the same lock), so dma_buf_vunmap() undoes it and later
 * dma_buf_vmap() calls share it; any later mapping is dma_buf_vmap()'s count, which cannot
 * fail.
 */
static int rrxe_dmabuf_vmap_locked(struct dma_buf *buf, struct iosys_map *map)
{
	struct iosys_map ptr;
	int ret;

	dma_resv_assert_held(buf->resv);
	if (buf->vmapping_counter)
		return dma_buf_vmap(buf, map);
	iosys_map_clear(&ptr);
	ret = buf->ops->vmap(buf, &ptr);
	if (ret)
		return ret;
	if (iosys_map_is_null(&ptr)) {
		/* Not a mapping: nothing to undo (the exporter returned success without one). */
		return -ENOMEM;
	}
	buf->vmap_ptr = ptr;
	buf->vmapping_counter = 1;
	*map = ptr;
	return 0;
}

/*
 * Attaches to the buffer (on the ib_device's struct device, see struct rrxe_dmabuf), pins
 * it and maps the whole of it into the kernel for CPU access. Returns the address, or NULL
 * with *err set: the attach's or the pin's error (an exporter that cannot pin the buffer,
 * e.g. -EBUSY or its own errno, refuses the registration, as ib_umem_dmabuf_get_pinned()
 * does); -EOPNOTSUPP for an exporter without vmap or one whose mapping is I/O memory (which
 * plain loads and stores may not touch); the exporter's vmap error. Process context; at
 * most one mapping per rrxe_dmabuf.
 */
void *rrxe_glue_dmabuf_map(struct rrxe_dmabuf *d, struct ib_device *ibdev, int *err)
{
	struct dma_buf_attachment *attach;
	struct dma_buf *buf = d->buf;
	int ret;

	if (d->attach) {
		*err = -EINVAL;
		return NULL;
	}
	if (!buf->ops->vmap) {
		pr_warn_once("rrxe: dma-buf exporter %s has no vmap: its buffers cannot back an MR\n",
			     buf->exp_name);
		*err = -EOPNOTSUPP;
		return NULL;
	}
	attach = dma_buf_dynamic_attach(buf, &ibdev->dev, &rrxe_dmabuf_attach_ops, d);
	if (IS_ERR(attach)) {
		*err = PTR_ERR(attach);
		return NULL;
	}
	dma_resv_lock(buf->resv, NULL);
	ret = dma_buf_pin(attach);
	if (ret)
		goto err_detach;
	ret = rrxe_dmabuf_vmap_locked(buf, &d->map);
	if (ret)
		goto err_unpin;
	if (d->map.is_iomem) {
		pr_warn_once("rrxe: dma-buf exporter %s maps I/O memory: its buffers cannot back an MR\n",
			     buf->exp_name);
		ret = -EOPNOTSUPP;
		goto err_vunmap;
	}
	dma_resv_unlock(buf->resv);
	d->attach = attach;
	return d->map.vaddr;

err_vunmap:
	dma_buf_vunmap(buf, &d->map);
err_unpin:
	iosys_map_clear(&d->map);
	dma_buf_unpin(attach);
err_detach:
	dma_resv_unlock(buf->resv);
	dma_buf_detach(buf, attach);
	*err = ret;
	return NULL;
}

/* Unmaps, unpins and detaches (if mapped) and drops the reference. Process context. */
void rrxe_glue_dmabuf_release(struct rrxe_dmabuf *d)
{
	if (d->attach) {
		dma_resv_lock(d->buf->resv, NULL);
		dma_buf_vunmap(d->buf, &d->map);
		dma_buf_unpin(d->attach);
		dma_resv_unlock(d->buf->resv);
		dma_buf_detach(d->buf, d->attach);
	}
	dma_buf_put(d->buf);
	kfree(d);
}
