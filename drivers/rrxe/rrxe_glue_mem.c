// SPDX-License-Identifier: GPL-2.0
/*
 * C glue of rrxe.ko, memory: queue memory mapped to user space, pinned user memory
 * (ib_umem) and its pages, dma-buf mappings. See rrxe_glue.h.
 */
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

RRXE_MODULE_IMPORT_NS_DMA_BUF;

/*
 * A dma-buf an MR is registered over (one reference), and the kernel mapping of the whole
 * buffer its accesses go through once rrxe_glue_dmabuf_vmap succeeded.
 */
struct rrxe_dmabuf {
	struct dma_buf *buf;
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
 * Maps the whole buffer into the kernel for CPU access (the exporter keeps its backing in
 * place while the mapping exists). Returns the address, or NULL with *err set:
 * -EOPNOTSUPP for an exporter without vmap or one whose mapping is I/O memory (which plain
 * loads and stores may not touch). At most one mapping per rrxe_dmabuf.
 */
void *rrxe_glue_dmabuf_vmap(struct rrxe_dmabuf *d, int *err)
{
	int ret;

	if (!iosys_map_is_null(&d->map)) {
		*err = -EINVAL;
		return NULL;
	}
	if (!d->buf->ops->vmap) {
		pr_warn_once("rrxe: dma-buf exporter %s has no vmap: its buffers cannot back an MR\n",
			     d->buf->exp_name);
		*err = -EOPNOTSUPP;
		return NULL;
	}
	ret = dma_buf_vmap_unlocked(d->buf, &d->map);
	if (ret) {
		iosys_map_clear(&d->map);
		*err = ret;
		return NULL;
	}
	if (d->map.is_iomem) {
		dma_buf_vunmap_unlocked(d->buf, &d->map);
		iosys_map_clear(&d->map);
		pr_warn_once("rrxe: dma-buf exporter %s maps I/O memory: its buffers cannot back an MR\n",
			     d->buf->exp_name);
		*err = -EOPNOTSUPP;
		return NULL;
	}
	return d->map.vaddr;
}

/* Unmaps (if mapped) and drops the reference. Process context. */
void rrxe_glue_dmabuf_release(struct rrxe_dmabuf *d)
{
	if (!iosys_map_is_null(&d->map))
		dma_buf_vunmap_unlocked(d->buf, &d->map);
	dma_buf_put(d->buf);
	kfree(d);
}
