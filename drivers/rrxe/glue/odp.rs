// SPDX-License-Identifier: GPL-2.0
//! On-demand-paging user memory (`ib_umem_odp`): nothing is pinned at registration; pages
//! are mapped when a fault asks for them and unmapped when the process's mappings change
//! (the MMU notifier in `rrxe_glue_odp.c`).
//!
//! The access path ([`OdpUmem::copy`], [`OdpUmem::atomic`]) runs in any context under
//! spinlocks, so it never faults: it copies only when every page of the range is mapped
//! (under the umem's own bottom-half lock, which the invalidation takes before unmapping)
//! and otherwise fails with [`NOT_PRESENT`], touching nothing. [`OdpUmem::map`], in process
//! context with no lock held, maps pages (faulting them in).
//!
//! Implicit on-demand paging ([`OdpImplicit`]) covers the whole address space of the
//! process: a child umem for each aligned [`CHILD`]-byte chunk where a fault succeeded,
//! kept from that fault until an invalidation of its whole range empties it (released by
//! the region's next fault) or the region goes.
//!
//! What the ODP memory of one user context covers is bounded ([`OdpBudget`], the
//! `odp_max_bytes` module parameter): the core's page lists of an ODP umem are allocated
//! with GFP_KERNEL, charged to no memory cgroup, so the bound is what limits them. rrxe's
//! own allocations here are charged (GFP_KERNEL_ACCOUNT).

use super::bindings;
use super::mem::{Dir, Xfer};
use super::sync::{new_bh_spinlock, BhSpinLock};
use super::IbDev;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::prelude::*;
use kernel::rbtree::{RBTree, RBTreeNode};
use kernel::sync::{Arc, Mutex};

/// The error of an access to memory that is not mapped yet (distinct from every other
/// error of the access path, which is EINVAL).
pub(crate) const NOT_PRESENT: Error = EAGAIN;

/// Most bytes one call of the core's fault path maps (a larger range is mapped in steps
/// of this size, each bounded by the core's HMM timeout).
pub(crate) const MAX_FAULT: u64 = 4 << 20;

/// Converts a C return value (0 or a negative errno) to a `Result`.
fn to_result(ret: i32) -> Result {
    if ret == 0 {
        Ok(())
    } else {
        Err(Error::from_errno(ret))
    }
}

/// The bytes of address space the on-demand-paging memory of one user context covers,
/// against the `odp_max_bytes` module parameter (read at each [`OdpBudget::take`], so a
/// change applies to later registrations and children).
pub(crate) struct OdpBudget {
    used: AtomicU64,
}

impl OdpBudget {
    /// Nothing covered yet.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(
            OdpBudget {
                used: AtomicU64::new(0),
            },
            GFP_KERNEL_ACCOUNT,
        )?)
    }

    /// Takes `bytes` of `budget`, given back when the charge drops; `None` if that would
    /// pass `odp_max_bytes`.
    pub(crate) fn take(budget: &Arc<Self>, bytes: u64) -> Option<OdpCharge> {
        // SAFETY: reads a module parameter (READ_ONCE); any context.
        let max = unsafe { bindings::rrxe_glue_odp_max_bytes() };
        budget
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                u.checked_add(bytes).filter(|&n| n <= max)
            })
            .ok()?;
        Some(OdpCharge {
            budget: budget.clone(),
            bytes,
        })
    }

    /// The bytes an explicit ODP umem over `[start, start + len)` covers: its pages, as
    /// the core rounds them out (`None` if the range overflows).
    pub(crate) fn span(start: u64, len: u64) -> Option<u64> {
        let page = kernel::page::PAGE_SIZE as u64;
        let end = start.checked_add(len)?.checked_next_multiple_of(page)?;
        end.checked_sub(start - start % page)
    }
}

/// Bytes taken from an [`OdpBudget`], given back on drop.
pub(crate) struct OdpCharge {
    budget: Arc<OdpBudget>,
    bytes: u64,
}

impl Drop for OdpCharge {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// What the faults of an implicit region did to its children, for the device's counters.
#[derive(Default)]
pub(crate) struct OdpTally {
    /// Children made (kept: their first fault succeeded).
    pub(crate) made: u64,
    /// Children released because an invalidation had emptied them.
    pub(crate) reaped: u64,
    /// Children refused because the context's [`OdpBudget`] was spent.
    pub(crate) refused: u64,
}

/// An on-demand-paging umem over `len` bytes of a process from user address `address`.
pub(crate) struct OdpUmem {
    // INVARIANT: from rrxe_glue_odp_get or rrxe_glue_odp_child, released only by Drop.
    raw: NonNull<bindings::rrxe_odp>,
    address: u64,
    len: u64,
    /// The bytes of its context's budget it covers (given back after the release).
    _charge: OdpCharge,
}

// SAFETY: the C object is used through functions that take its own locks (or need process
// context, documented on each method), from any thread.
unsafe impl Send for OdpUmem {}
// SAFETY: as above; concurrent copies to the same page are the RDMA semantics (no Rust
// references to the page contents are created).
unsafe impl Sync for OdpUmem {}

impl OdpUmem {
    /// `[start, start + len)` of the calling process (process context), on demand, for
    /// `access` (IB_ACCESS_*, with IB_ACCESS_ON_DEMAND), under `charge` (its
    /// [`OdpBudget::span`]).
    pub(crate) fn get(
        dev: &IbDev,
        start: u64,
        len: u64,
        access: i32,
        charge: OdpCharge,
    ) -> Result<Self> {
        let mut err = 0;
        // SAFETY: dev is live; the core validates the range, takes a reference on the
        // caller's mm and registers the notifier.
        let raw =
            unsafe { bindings::rrxe_glue_odp_get(dev.as_ptr(), start, len, access, &mut err) };
        Self::wrap(raw, err, len, charge)
    }

    /// The umem `raw` from one of the C constructors (NULL: it failed with `err`), of
    /// `len` bytes, under `charge`.
    fn wrap(raw: *mut bindings::rrxe_odp, err: i32, len: u64, charge: OdpCharge) -> Result<Self> {
        let raw =
            NonNull::new(raw).ok_or_else(|| Error::from_errno(if err < 0 { err } else { -14 }))?;
        // INVARIANT: a live umem from a C constructor, released only by Drop.
        // SAFETY: live.
        let address = unsafe { bindings::rrxe_glue_odp_address(raw.as_ptr()) };
        Ok(OdpUmem {
            raw,
            address,
            len,
            _charge: charge,
        })
    }

    /// Whether an invalidation of the whole umem emptied it and nothing was mapped since
    /// (a child of an implicit umem; false for others).
    fn emptied(&self) -> bool {
        // SAFETY: live umem (INVARIANT); the helper takes its lock (BH off).
        unsafe { bindings::rrxe_glue_odp_emptied(self.raw.as_ptr()) }
    }

    /// The user address of the first byte.
    pub(crate) fn address(&self) -> u64 {
        self.address
    }

    /// The user address of byte `off`, for `n` bytes inside the umem.
    fn user_addr(&self, off: u64, n: u64) -> Result<u64> {
        if off.checked_add(n).ok_or(EINVAL)? > self.len {
            return Err(EINVAL);
        }
        self.address.checked_add(off).ok_or(EINVAL)
    }

    /// Whether bytes `[off, off + n)` are mapped now (for writing if `write`). Only
    /// advisory: they may be unmapped right after; the copy checks again under the lock.
    pub(crate) fn present(&self, off: u64, n: u64, write: bool) -> bool {
        let Ok(addr) = self.user_addr(off, n) else {
            return false;
        };
        // SAFETY: live umem (INVARIANT); the helper takes its lock (BH off), any context.
        unsafe { bindings::rrxe_glue_odp_present(self.raw.as_ptr(), addr, n, write) == 0 }
    }

    /// Copies between `buf` and byte `off` (0 = the registered start) if every page is
    /// mapped: [`NOT_PRESENT`] (nothing copied) if one is not. Any context.
    pub(crate) fn copy(&self, off: u64, buf: &mut Xfer<'_>) -> Result {
        let n = buf.len() as u64;
        let addr = self.user_addr(off, n)?;
        let to_mem = buf.dir() == Dir::ToMem;
        // SAFETY: live umem; buf is valid for n bytes and written to only for a `From`
        // buffer (to_mem false); the helper checks the range and copies under its lock.
        let ret = unsafe {
            bindings::rrxe_glue_odp_copy(self.raw.as_ptr(), addr, buf.raw().cast(), n, to_mem)
        };
        to_result(ret)
    }

    /// Runs `f` on the 8-byte aligned word at byte `off`, mapped for writing, or fails with
    /// [`NOT_PRESENT`]. Any context; `f` runs under a spinlock and must not sleep.
    pub(crate) fn atomic<R>(&self, off: u64, f: impl FnOnce(&AtomicU64) -> R) -> Result<R> {
        let addr = self.user_addr(off, 8)?;
        let mut err = 0;
        // SAFETY: live umem; on success the word is mapped and the lock is held.
        let p = unsafe { bindings::rrxe_glue_odp_lock_u64(self.raw.as_ptr(), addr, &mut err) };
        let Some(p) = NonNull::new(p) else {
            return Err(Error::from_errno(if err < 0 { err } else { -22 }));
        };
        // SAFETY: an aligned word of a page mapped into the kernel, which stays mapped
        // while the lock is held (the invalidation takes it before unmapping); all kernel
        // accesses to the word are atomic.
        let r = f(unsafe { &*p.as_ptr().cast::<AtomicU64>() });
        // SAFETY: locked by rrxe_glue_odp_lock_u64 above.
        unsafe { bindings::rrxe_glue_odp_unlock(self.raw.as_ptr()) };
        Ok(r)
    }

    /// Maps bytes `[off, off + n)` (for writing if `write`), faulting the pages in if
    /// `fault`, else mapping only those the process has present. Process context, no
    /// spinlock held: it may sleep.
    pub(crate) fn map(&self, off: u64, n: u64, write: bool, fault: bool) -> Result {
        let addr = self.user_addr(off, n)?;
        // SAFETY: live umem (INVARIANT). The helper may sleep: calling it from atomic
        // context would be a bug the kernel reports (might_sleep), not a memory error; the
        // driver calls it from work items and verbs only.
        to_result(unsafe { bindings::rrxe_glue_odp_map(self.raw.as_ptr(), addr, n, write, fault) })
    }
}

impl Drop for OdpUmem {
    fn drop(&mut self) {
        // SAFETY: obtained from rrxe_glue_odp_get, released once. Process context: the
        // driver drops an OdpUmem only from verbs calls and work items, after its region
        // left the MR table (so no access is running in it).
        unsafe { bindings::rrxe_glue_odp_release(self.raw.as_ptr()) };
    }
}

/// log2 of [`CHILD`].
const CHILD_SHIFT: u32 = 21;
/// Bytes of address space each child of an implicit umem covers (aligned chunks; 2 MiB
/// costs 8 KiB of page lists a child, so sparse use stays cheap).
pub(crate) const CHILD: u64 = 1 << CHILD_SHIFT;

/// Implicit on-demand paging: all of a process's address space (region offsets are its
/// user addresses).
///
/// # Locking
/// `faults` (a mutex, process context) is taken first by each fault and held while it
/// makes, maps and releases children; `children` (bottom halves off) nests inside a
/// region's lock (the access path, any context) and inside `faults`; a child's own lock
/// nests inside it. Nothing that sleeps runs under `children`: a child is made and
/// released outside it.
#[pin_data(PinnedDrop)]
pub(crate) struct OdpImplicit {
    // INVARIANT: from rrxe_glue_odp_implicit, released by the drop after every child.
    root: NonNull<bindings::rrxe_odp>,
    /// The user context's budget, which each child takes [`CHILD`] bytes of.
    budget: Arc<OdpBudget>,
    /// Serialises the faults (process context): only a fault adds or removes children, so
    /// none releases a child another is mapping.
    #[pin]
    faults: Mutex<()>,
    /// The children, by chunk number (address >> [`CHILD_SHIFT`]).
    #[pin]
    children: BhSpinLock<RBTree<u64, Arc<OdpUmem>>>,
}

// SAFETY: the root is only used to create children and take the emptied ones (process
// context, any thread, under `faults`) and released once; the children are behind a lock.
unsafe impl Send for OdpImplicit {}
// SAFETY: as above.
unsafe impl Sync for OdpImplicit {}

impl OdpImplicit {
    /// The calling process's address space on demand (process context), its children
    /// taken from `budget`.
    pub(crate) fn new(dev: &IbDev, access: i32, budget: Arc<OdpBudget>) -> Result<Arc<Self>> {
        let mut err = 0;
        // SAFETY: dev is live; the core records the caller's mm (the helper holds it).
        let raw = unsafe { bindings::rrxe_glue_odp_implicit(dev.as_ptr(), access, &mut err) };
        let root =
            NonNull::new(raw).ok_or_else(|| Error::from_errno(if err < 0 { err } else { -14 }))?;
        let r = Arc::pin_init(
            pin_init!(OdpImplicit {
                root,
                budget,
                faults <- kernel::new_mutex!((), "rrxe_odp_faults"),
                children <- new_bh_spinlock!(RBTree::new(), "rrxe_odp_children"),
            }),
            GFP_KERNEL_ACCOUNT,
        );
        if r.is_err() {
            // SAFETY: from rrxe_glue_odp_implicit just above, with no child, never used
            // again (the Arc was not made, so no drop will release it).
            unsafe { bindings::rrxe_glue_odp_release(root.as_ptr()) };
        }
        r
    }

    /// The pieces of `[addr, addr + len)` in each chunk: (chunk number, offset in it,
    /// bytes, offset in the range).
    fn pieces(addr: u64, len: u64) -> impl Iterator<Item = (u64, u64, u64, u64)> {
        let mut done = 0u64;
        core::iter::from_fn(move || {
            if done >= len {
                return None;
            }
            let a = addr.checked_add(done)?;
            let in_chunk = a & (CHILD - 1);
            let n = (CHILD - in_chunk).min(len - done);
            let at = done;
            done += n;
            Some((a >> CHILD_SHIFT, in_chunk, n, at))
        })
    }

    /// Whether `[addr, addr + len)` is mapped now (advisory, see [`OdpUmem::present`]).
    pub(crate) fn present(&self, addr: u64, len: u64, write: bool) -> bool {
        let kids = self.children.lock();
        if addr.checked_add(len).is_none() {
            return false;
        }
        Self::pieces(addr, len)
            .all(|(idx, off, n, _)| kids.get(&idx).is_some_and(|c| c.present(off, n, write)))
    }

    /// As [`OdpUmem::copy`], at user address `addr`. A copy over several chunks may have
    /// moved the bytes of the first ones when a later one is not present.
    pub(crate) fn copy(&self, addr: u64, buf: &mut Xfer<'_>) -> Result {
        let len = buf.len() as u64;
        addr.checked_add(len).ok_or(EINVAL)?;
        let kids = self.children.lock();
        for (idx, off, n, at) in Self::pieces(addr, len) {
            let child = kids.get(&idx).ok_or(NOT_PRESENT)?;
            let mut part = buf.sub(at as usize, n as usize).ok_or(EINVAL)?;
            child.copy(off, &mut part)?;
        }
        Ok(())
    }

    /// As [`OdpUmem::atomic`], at user address `addr` (8-aligned: inside one chunk).
    pub(crate) fn atomic<R>(&self, addr: u64, f: impl FnOnce(&AtomicU64) -> R) -> Result<R> {
        if addr % 8 != 0 {
            return Err(EINVAL);
        }
        let kids = self.children.lock();
        let child = kids.get(&(addr >> CHILD_SHIFT)).ok_or(NOT_PRESENT)?;
        child.atomic(addr & (CHILD - 1), f)
    }

    /// Releases the children that an invalidation of their whole range emptied (and that
    /// were not mapped again since). Under `faults`: no fault holds one.
    fn reap(&self, tally: &mut OdpTally) {
        loop {
            // SAFETY: the root is live (INVARIANT); process context, no lock held.
            let addr = unsafe { bindings::rrxe_glue_odp_reap(self.root.as_ptr()) };
            if addr == u64::MAX {
                return;
            }
            let idx = addr >> CHILD_SHIFT;
            let gone = {
                let mut kids = self.children.lock();
                match kids.get(&idx) {
                    Some(c) if c.emptied() => kids.remove_node(&idx),
                    _ => None,
                }
            };
            // Released here, after the lock (that sleeps).
            if gone.is_some() {
                tally.reaped += 1;
            }
        }
    }

    /// Maps `[off, off + n)` of chunk `idx`: in its child, or in a new one, kept only if
    /// this first map succeeds (a range the process cannot access, PROT_NONE say, leaves no
    /// child behind). Under `faults`.
    fn map_chunk(
        &self,
        idx: u64,
        (off, n): (u64, u64),
        (write, fault): (bool, bool),
        tally: &mut OdpTally,
    ) -> Result {
        let cur = self.children.lock().get(&idx).cloned();
        if let Some(c) = cur {
            return c.map(off, n, write, fault);
        }
        let start = idx.checked_mul(CHILD).ok_or(EINVAL)?;
        let Some(charge) = OdpBudget::take(&self.budget, CHILD) else {
            tally.refused += 1;
            return Err(ENOMEM);
        };
        let mut err = 0;
        // SAFETY: the root is live (INVARIANT); process context, no lock held.
        let raw =
            unsafe { bindings::rrxe_glue_odp_child(self.root.as_ptr(), start, CHILD, &mut err) };
        let new = Arc::new(OdpUmem::wrap(raw, err, CHILD, charge)?, GFP_KERNEL_ACCOUNT)?;
        new.map(off, n, write, fault)?;
        let node = RBTreeNode::new(idx, new, GFP_KERNEL_ACCOUNT)?;
        // Only faults (serialised by `faults`) add children: none was added meanwhile.
        drop(self.children.lock().insert(node));
        tally.made += 1;
        Ok(())
    }

    /// As [`OdpUmem::map`], at user address `addr`, making the children it reaches and
    /// first releasing those invalidations emptied. Process context, no spinlock held.
    pub(crate) fn map(
        &self,
        addr: u64,
        len: u64,
        write: bool,
        fault: bool,
        tally: &mut OdpTally,
    ) -> Result {
        addr.checked_add(len).ok_or(EINVAL)?;
        let _faults = self.faults.lock();
        self.reap(tally);
        for (idx, off, n, _) in Self::pieces(addr, len) {
            self.map_chunk(idx, (off, n), (write, fault), tally)?;
        }
        Ok(())
    }
}

#[pinned_drop]
impl PinnedDrop for OdpImplicit {
    fn drop(self: Pin<&mut Self>) {
        // The children go first (released after the lock: that sleeps), then the root.
        let kids = core::mem::take(&mut *self.children.lock());
        drop(kids);
        // SAFETY: from rrxe_glue_odp_implicit, released once, after its children.
        // Process context, as for OdpUmem.
        unsafe { bindings::rrxe_glue_odp_release(self.root.as_ptr()) };
    }
}

/// The on-demand-paging memory of a region, for the faults (a reference: the fault runs
/// without the region's lock).
#[derive(Clone)]
pub(crate) enum OdpRef {
    /// An explicit ODP region: offsets from its start.
    Explicit(Arc<OdpUmem>),
    /// An implicit ODP region: offsets are user addresses.
    Implicit(Arc<OdpImplicit>),
}

impl OdpRef {
    /// Maps `[off, off + n)` (see [`OdpUmem::map`]), what it did to an implicit region's
    /// children added to `tally`. Process context, no spinlock held.
    pub(crate) fn map(
        &self,
        off: u64,
        n: u64,
        (write, fault): (bool, bool),
        tally: &mut OdpTally,
    ) -> Result {
        match self {
            OdpRef::Explicit(u) => u.map(off, n, write, fault),
            OdpRef::Implicit(i) => i.map(off, n, write, fault, tally),
        }
    }
}
