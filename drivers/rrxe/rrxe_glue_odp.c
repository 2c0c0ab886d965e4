// SPDX-License-Identifier: GPL-2.0
/*
 * C glue of rrxe.ko, on-demand paging: an ib_umem_odp with rrxe's MMU notifier, the
 * access path's locked copies and the page faults. See rrxe_glue.h and glue/odp.rs.
 */
#include "rrxe_glue_int.h"
#include <rdma/ib_umem_odp.h>
#include <linux/moduleparam.h>
#include <linux/sched/mm.h>

/*
 * The most bytes of address space the on-demand-paging memory of one user context may
 * cover: its explicit ODP MRs (rounded out to pages) and its implicit MRs' children (2 MiB
 * each). The core allocates 8 (6.16 and later) or 16 (before) bytes of page lists per
 * covered page with GFP_KERNEL, charged to no memory cgroup (ib_init_umem_odp), and
 * nothing is pinned, so RLIMIT_MEMLOCK does not apply: this bound is what limits that
 * memory. At the default, 16 GiB, the core's lists of one context are at most 64 MiB.
 * rrxe's own page table (8 bytes a page) is charged to the caller's memory cgroup and
 * allocated before the core's lists, so a group without room for it is refused before the
 * core allocates anything.
 */
static unsigned long odp_max_bytes = 16UL << 30;
module_param(odp_max_bytes, ulong, 0644);
MODULE_PARM_DESC(odp_max_bytes,
		 "Most bytes of address space the on-demand-paging MRs of one user context may cover (explicit MRs and implicit MRs' 2 MiB children; refusals counted in odp_bound_refused; default 16 GiB)");

u64 rrxe_glue_odp_max_bytes(void)
{
	return READ_ONCE(odp_max_bytes);
}

/*
 * rrxe's own page table of an ODP umem: one word per page, the page's kernel address with
 * RRXE_ODP_PRESENT and RRXE_ODP_WRITE in its low bits (pages are aligned), or 0. Only
 * rrxe writes it, under `lock`: a fault copies what the core mapped into it, holding the
 * umem's umem_mutex after ib_umem_odp_map_dma_and_lock has checked its notifier sequence;
 * the invalidation callback clears it, under umem_mutex too, before the core unmaps. The
 * access path reads it alone. It does not read the core's list: in trees with the HMM
 * rework, map.pfn_list is also hmm_range_fault's output buffer, written without any lock,
 * so a walk racing with an invalidation can store a freed page's pfn there until the
 * fault's sequence check repairs it.
 */
#define RRXE_ODP_PRESENT 1ULL
#define RRXE_ODP_WRITE 2ULL

/*
 * The core's entry idx of u in rrxe's form (0 if not mapped), from the list the tree has:
 * HMM pfns in map.pfn_list, or, in trees before the ODP rework, "DMA addresses" with
 * ODP_READ/WRITE_ALLOWED bits in dma_list, which for a virtual-DMA device are the pages'
 * kernel addresses (ib_dma_map_page). Under umem_mutex, after a successful map.
 */
#ifdef RRXE_HAVE_ODP_HMM_MAP
#include <linux/hmm.h>
static u64 rrxe_odp_core_entry(struct ib_umem_odp *u, u64 idx)
{
	unsigned long e = READ_ONCE(u->map.pfn_list[idx]);

	if (!(e & HMM_PFN_VALID))
		return 0;
	/* INFINIBAND_VIRT_DMA excludes HIGHMEM: every page has a kernel address. */
	return (u64)(uintptr_t)page_address(hmm_pfn_to_page(e)) | RRXE_ODP_PRESENT |
	       (e & HMM_PFN_WRITE ? RRXE_ODP_WRITE : 0);
}

/* The access mask ib_umem_odp_map_dma_and_lock takes (reading is implied). */
static u64 rrxe_odp_fault_mask(bool write)
{
	return write ? HMM_PFN_WRITE : 0;
}
#else
static u64 rrxe_odp_core_entry(struct ib_umem_odp *u, u64 idx)
{
	u64 e = READ_ONCE(u->dma_list[idx]);

	if (!(e & ODP_READ_ALLOWED_BIT))
		return 0;
	return (e & ODP_DMA_ADDR_MASK) | RRXE_ODP_PRESENT |
	       (e & ODP_WRITE_ALLOWED_BIT ? RRXE_ODP_WRITE : 0);
}

static u64 rrxe_odp_fault_mask(bool write)
{
	return ODP_READ_ALLOWED_BIT | (write ? ODP_WRITE_ALLOWED_BIT : 0);
}
#endif

/*
 * An on-demand-paging umem and the lock of rrxe's access path. The access path runs under
 * spinlocks (a region's, a QP's engine), in softirq or process context, so it cannot take
 * umem_mutex: it takes `lock` (bottom halves off) to read `pages` and copy through the
 * pages it names. The invalidation callback takes umem_mutex, then `lock`, clears `pages`
 * and unmaps, so an access that found a page present finishes with it before the page
 * goes. Faults (ib_umem_odp_map_dma_and_lock, which may sleep) run in process context with
 * no spinlock held, one at a time per umem (`fault_mutex`, so that no walk of another
 * fault writes the core's list while one copies from it), and add entries under `lock`.
 *
 * A child of an implicit root that an invalidation of its whole range empties is put on
 * its root's `emptied_list` (under the root's `reap_lock`, taken inside the child's
 * umem_mutex, never with another lock inside it), from which rrxe_glue_odp_reap hands it
 * to the owner of the children to release.
 */
struct rrxe_odp {
	struct ib_umem_odp *umem;
	/* Guards `pages`; BH-off, never with IRQs off. Taken inside umem_mutex. */
	spinlock_t lock;
	/* Serialises this umem's faults (process context); taken outside umem_mutex. */
	struct mutex fault_mutex;
	/* rrxe's page table (above): one word per page of the umem; NULL for an implicit root. */
	u64 *pages;
	u64 npages;
	/*
	 * An implicit root: the process's mm, held (mmgrab) so that children can be created
	 * from it until the root is released (the core's root does not hold it).
	 */
	struct mm_struct *mm;
	/* A child: its root (which outlives it); NULL otherwise. */
	struct rrxe_odp *root;
	/*
	 * A child: on its root's `emptied` list, or empty (list_del_init); guarded by the
	 * root's reap_lock.
	 */
	struct list_head reap_entry;
	/*
	 * A child: set by an invalidation of its whole range, cleared by a successful map;
	 * under `lock`.
	 */
	bool emptied;
	/* An implicit root: guards `emptied_list`; process context only, a leaf lock. */
	spinlock_t reap_lock;
	/* An implicit root: its children that an invalidation emptied (reap_entry). */
	struct list_head emptied_list;
};

static bool rrxe_odp_invalidate(struct mmu_interval_notifier *mni,
				const struct mmu_notifier_range *range, unsigned long cur_seq)
{
	struct ib_umem_odp *umem_odp = container_of(mni, struct ib_umem_odp, notifier);
	struct rrxe_odp *o;
	u64 start, end;
	bool full;

	/* As mlx5 and rdma_rxe: unmapping waits for the access path (it spins on `lock`). */
	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&umem_odp->umem_mutex);
	/* NULL until rrxe_glue_odp_get has set it (under umem_mutex): no access yet. */
	o = umem_odp->private;
	if (o)
		spin_lock_bh(&o->lock);
	mmu_interval_set_seq(mni, cur_seq);
	start = max_t(u64, ib_umem_start(umem_odp), range->start);
	end = min_t(u64, ib_umem_end(umem_odp), range->end);
	if (start < end) {
		u64 first = (start - ib_umem_start(umem_odp)) >> umem_odp->page_shift;
		u64 last = (ALIGN(end, 1ULL << umem_odp->page_shift) -
			    ib_umem_start(umem_odp)) >> umem_odp->page_shift;

		if (o && o->pages)
			memset(&o->pages[first], 0, (min(last, o->npages) - first) * sizeof(u64));
		ib_umem_odp_unmap_dma_pages(umem_odp, start, end);
	}
	/* A child all of whose range goes: nothing is mapped any more, it may be released. */
	full = o && o->root && range->start <= ib_umem_start(umem_odp) &&
	       range->end >= ib_umem_end(umem_odp) && !o->emptied;
	if (full)
		o->emptied = true;
	if (o)
		spin_unlock_bh(&o->lock);
	if (full) {
		spin_lock(&o->root->reap_lock);
		if (list_empty(&o->reap_entry))
			list_add_tail(&o->reap_entry, &o->root->emptied_list);
		spin_unlock(&o->root->reap_lock);
	}
	mutex_unlock(&umem_odp->umem_mutex);
	return true;
}

static const struct mmu_interval_notifier_ops rrxe_odp_ops = {
	.invalidate = rrxe_odp_invalidate,
};

/*
 * A new rrxe_odp with rrxe's page table for npages pages (none for an implicit root). Both
 * are charged to the caller's memory cgroup (GFP_KERNEL_ACCOUNT), and allocated before the
 * core's uncharged page lists: a group without room for its table is refused with
 * -ENOMEM (not by its OOM killer) before the core allocates anything. NULL on failure.
 */
static struct rrxe_odp *rrxe_odp_alloc(u64 npages)
{
	struct rrxe_odp *o = kzalloc(sizeof(*o), GFP_KERNEL_ACCOUNT);

	if (!o)
		return NULL;
	if (npages) {
		o->npages = npages;
		/*
		 * RETRY_MAYFAIL: a group at its memory.max gets -ENOMEM, not its OOM killer;
		 * NOWARN: a table past INT_MAX bytes fails (kvmalloc) rather than warns.
		 */
		o->pages = kvcalloc(npages, sizeof(u64),
				    GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN);
		if (!o->pages) {
			kfree(o);
			return NULL;
		}
	}
	spin_lock_init(&o->lock);
	mutex_init(&o->fault_mutex);
	INIT_LIST_HEAD(&o->reap_entry);
	spin_lock_init(&o->reap_lock);
	INIT_LIST_HEAD(&o->emptied_list);
	return o;
}

static void rrxe_odp_free(struct rrxe_odp *o)
{
	kvfree(o->pages);
	mutex_destroy(&o->fault_mutex);
	kfree(o);
}

/*
 * The PAGE_SIZE pages of [start, start + len), as the core counts them for a umem of
 * PAGE_SIZE pages (ib_umem_odp_num_pages); 0 for an empty or overflowing range (the core
 * refuses those).
 */
static u64 rrxe_odp_npages(u64 start, u64 len)
{
	u64 end;

	if (!len || check_add_overflow(start, len, &end) || end > U64_MAX - PAGE_SIZE)
		return 0;
	return (ALIGN(end, PAGE_SIZE) - ALIGN_DOWN(start, PAGE_SIZE)) >> PAGE_SHIFT;
}

/*
 * o, from rrxe_odp_alloc, over u, a umem with rrxe's notifier just made by the core (or u's
 * error): NULL with *err set on failure, o freed and u released. Until u->private is set
 * (under umem_mutex) the invalidation callback knows no access can have mapped anything.
 */
static struct rrxe_odp *rrxe_odp_wrap(struct rrxe_odp *o, struct ib_umem_odp *u, int *err)
{
	if (IS_ERR(u)) {
		*err = PTR_ERR(u);
		rrxe_odp_free(o);
		return NULL;
	}
	/* The same rounding of the same range: a mismatch would be a bug, refused. */
	if (!u->is_implicit_odp && ib_umem_odp_num_pages(u) != o->npages) {
		ib_umem_odp_release(u);
		rrxe_odp_free(o);
		*err = -EINVAL;
		return NULL;
	}
	o->umem = u;
	mutex_lock(&u->umem_mutex);
	u->private = o;
	mutex_unlock(&u->umem_mutex);
	return o;
}

/* [start, start + len) of the calling process, on demand (access has IB_ACCESS_ON_DEMAND). */
struct rrxe_odp *rrxe_glue_odp_get(struct ib_device *dev, u64 start, u64 len, int access,
				   int *err)
{
	u64 npages = rrxe_odp_npages(start, len);
	struct rrxe_odp *o;

	if (!npages) {
		*err = -EINVAL;
		return NULL;
	}
	o = rrxe_odp_alloc(npages);
	if (!o) {
		*err = -ENOMEM;
		return NULL;
	}
	/* rrxe does not take IB_ACCESS_HUGETLB: pages are PAGE_SIZE (page_shift). */
	return rrxe_odp_wrap(o, ib_umem_odp_get(dev, start, len, access & ~IB_ACCESS_HUGETLB,
						&rrxe_odp_ops),
			     err);
}

/*
 * Implicit ODP: the root of the calling process's whole address space, from which
 * rrxe_glue_odp_child makes the umems of the ranges accesses reach.
 */
struct rrxe_odp *rrxe_glue_odp_implicit(struct ib_device *dev, int access, int *err)
{
	struct rrxe_odp *o = rrxe_odp_alloc(0);

	if (!o) {
		*err = -ENOMEM;
		return NULL;
	}
	/* The root maps nothing (no notifier of its own): its private is only a pointer. */
	o = rrxe_odp_wrap(o, ib_umem_odp_alloc_implicit(dev, access & ~IB_ACCESS_HUGETLB), err);
	if (o) {
		o->mm = current->mm;
		mmgrab(o->mm);
	}
	return o;
}

/* Whether [addr, addr + len) meets a mapping of mm (0, or -EFAULT). Process context. */
static int rrxe_odp_mapped(struct mm_struct *mm, u64 addr, u64 len)
{
	struct vm_area_struct *vma;

	if (addr >= TASK_SIZE_MAX || len > TASK_SIZE_MAX - addr || !mmget_not_zero(mm))
		return -EFAULT;
	mmap_read_lock(mm);
	vma = find_vma_intersection(mm, addr, addr + len);
	mmap_read_unlock(mm);
	mmput(mm);
	return vma ? 0 : -EFAULT;
}

/*
 * Process context: a child of implicit root at [addr, addr + len), on demand. Only over
 * memory the process has mapped (-EFAULT otherwise): the addresses may come from the wire.
 * The caller keeps it only once a fault in it succeeded.
 */
struct rrxe_odp *rrxe_glue_odp_child(struct rrxe_odp *root, u64 addr, u64 len, int *err)
{
	u64 npages = rrxe_odp_npages(addr, len);
	struct rrxe_odp *o;

	*err = rrxe_odp_mapped(root->mm, addr, len);
	if (*err)
		return NULL;
	if (!npages) {
		*err = -EINVAL;
		return NULL;
	}
	o = rrxe_odp_alloc(npages);
	if (!o) {
		*err = -ENOMEM;
		return NULL;
	}
	o->root = root;
	return rrxe_odp_wrap(o, ib_umem_odp_alloc_child(root->umem, addr, len, &rrxe_odp_ops),
			     err);
}

/*
 * Process context: the start address of a child of implicit root that an invalidation of
 * its whole range emptied since the last call, taken off the root's list; U64_MAX if none.
 * Whether it is still empty is rrxe_glue_odp_emptied's answer.
 */
u64 rrxe_glue_odp_reap(struct rrxe_odp *root)
{
	struct rrxe_odp *c;
	u64 addr = U64_MAX;

	spin_lock(&root->reap_lock);
	c = list_first_entry_or_null(&root->emptied_list, struct rrxe_odp, reap_entry);
	if (c) {
		list_del_init(&c->reap_entry);
		/* umem is set before the notifier can find the child (u->private). */
		addr = ib_umem_start(c->umem);
	}
	spin_unlock(&root->reap_lock);
	return addr;
}

/* Whether the child o was emptied by an invalidation and not mapped again since. */
bool rrxe_glue_odp_emptied(struct rrxe_odp *o)
{
	bool e;

	spin_lock_bh(&o->lock);
	e = o->emptied;
	spin_unlock_bh(&o->lock);
	return e;
}

/*
 * Process context: no access may be running (the region is out of the MR table); an
 * implicit root's children are released first.
 */
void rrxe_glue_odp_release(struct rrxe_odp *o)
{
	/* Removes the notifier: no invalidation of o runs after this. */
	ib_umem_odp_release(o->umem);
	if (o->root) {
		spin_lock(&o->root->reap_lock);
		list_del_init(&o->reap_entry);
		spin_unlock(&o->root->reap_lock);
	}
	WARN_ON_ONCE(!list_empty(&o->emptied_list));
	if (o->mm)
		mmdrop(o->mm);
	rrxe_odp_free(o);
}

u64 rrxe_glue_odp_address(struct rrxe_odp *o)
{
	return o->umem->umem.address;
}

/* Under o->lock: 0 if every page of [addr, addr + len) is mapped for the access. */
static int rrxe_odp_check(struct rrxe_odp *o, u64 addr, u64 len, bool write)
{
	struct ib_umem_odp *u = o->umem;
	u64 need = RRXE_ODP_PRESENT | (write ? RRXE_ODP_WRITE : 0);
	u64 start = ib_umem_start(u), end = ib_umem_end(u), a;

	lockdep_assert_held(&o->lock);
	if (!o->pages || addr < start || addr > end || len > end - addr)
		return -EINVAL;
	for (a = ALIGN_DOWN(addr, 1ULL << u->page_shift); a < addr + len;
	     a += 1ULL << u->page_shift) {
		if ((o->pages[(a - start) >> u->page_shift] & need) != need)
			return -EAGAIN;
	}
	return 0;
}

/* 0 if [addr, addr + len) is mapped for the access now (-EAGAIN if not): advisory. */
int rrxe_glue_odp_present(struct rrxe_odp *o, u64 addr, u64 len, bool write)
{
	int ret;

	spin_lock_bh(&o->lock);
	ret = rrxe_odp_check(o, addr, len, write);
	spin_unlock_bh(&o->lock);
	return ret;
}

/* Kernel address of addr's byte in its mapped page (under o->lock, after the check). */
static void *rrxe_odp_kva(struct rrxe_odp *o, u64 addr)
{
	struct ib_umem_odp *u = o->umem;
	u64 e = o->pages[(addr - ib_umem_start(u)) >> u->page_shift];

	return (void *)(uintptr_t)((e & PAGE_MASK) + (addr & ((1ULL << u->page_shift) - 1)));
}

/*
 * Copies len bytes between buf and [addr, addr + len) if every page is mapped (for writing
 * when to_mem): 0, -EAGAIN (not present, nothing copied) or -EINVAL (outside the umem).
 */
int rrxe_glue_odp_copy(struct rrxe_odp *o, u64 addr, void *buf, u64 len, bool to_mem)
{
	u64 psize = 1ULL << o->umem->page_shift, done = 0;
	int ret;

	spin_lock_bh(&o->lock);
	ret = rrxe_odp_check(o, addr, len, to_mem);
	while (!ret && done < len) {
		u64 a = addr + done;
		u64 n = min_t(u64, psize - (a & (psize - 1)), len - done);
		void *p = rrxe_odp_kva(o, a);

		if (to_mem)
			memcpy(p, buf + done, n);
		else
			memcpy(buf + done, p, n);
		done += n;
	}
	spin_unlock_bh(&o->lock);
	return ret;
}

/*
 * The 8-aligned word at addr, mapped for writing, with o->lock held (release it with
 * rrxe_glue_odp_unlock); NULL with *err = -EAGAIN (not present) or -EINVAL, unlocked.
 */
u64 *rrxe_glue_odp_lock_u64(struct rrxe_odp *o, u64 addr, int *err)
{
	if (addr & 7) {
		*err = -EINVAL;
		return NULL;
	}
	spin_lock_bh(&o->lock);
	*err = rrxe_odp_check(o, addr, 8, true);
	if (*err) {
		spin_unlock_bh(&o->lock);
		return NULL;
	}
	return rrxe_odp_kva(o, addr);
}

void rrxe_glue_odp_unlock(struct rrxe_odp *o)
{
	spin_unlock_bh(&o->lock);
}

/*
 * Process context, no spinlock held (may sleep): maps [addr, addr + len) for the access,
 * faulting the pages in when fault is set (else only what is already present). 0 or the
 * core's error (-EFAULT, -EPERM: not mapped for it in the process).
 */
int rrxe_glue_odp_map(struct rrxe_odp *o, u64 addr, u64 len, bool write, bool fault)
{
	struct ib_umem_odp *u = o->umem;
	u64 start = ib_umem_start(u), first, last, i;
	int ret;

	if (!len)
		return 0;
	/* Outside the umem: -EFAULT, as ib_umem_odp_map_dma_and_lock answers it. */
	if (!o->pages || addr < start || addr > ib_umem_end(u) || len > ib_umem_end(u) - addr)
		return -EFAULT;
	mutex_lock(&o->fault_mutex);
	ret = ib_umem_odp_map_dma_and_lock(u, addr, len, rrxe_odp_fault_mask(write), fault);
	if (ret < 0) {
		mutex_unlock(&o->fault_mutex);
		return ret;
	}
	/* umem_mutex held, the sequence checked: the core's entries of the range are current. */
	first = (addr - start) >> u->page_shift;
	last = min((ALIGN(addr + len, 1ULL << u->page_shift) - start) >> u->page_shift, o->npages);
	spin_lock_bh(&o->lock);
	for (i = first; i < last; i++)
		o->pages[i] = rrxe_odp_core_entry(u, i);
	o->emptied = false;
	spin_unlock_bh(&o->lock);
	mutex_unlock(&u->umem_mutex);
	mutex_unlock(&o->fault_mutex);
	return 0;
}
