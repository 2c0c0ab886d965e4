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
//! process: a child umem for each aligned [`CHILD`]-byte chunk that a fault reached,
//! created by that fault and released with the region.

use super::bindings;
use super::mem::{Dir, Xfer};
use super::sync::{new_bh_spinlock, BhSpinLock};
use super::IbDev;
use core::ptr::NonNull;
use core::sync::atomic::AtomicU64;
use kernel::prelude::*;
use kernel::rbtree::{RBTree, RBTreeNode};
use kernel::sync::Arc;

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

/// An on-demand-paging umem over `len` bytes of a process from user address `address`.
pub(crate) struct OdpUmem {
    // INVARIANT: from rrxe_glue_odp_get or rrxe_glue_odp_child, released only by Drop.
    raw: NonNull<bindings::rrxe_odp>,
    address: u64,
    len: u64,
}

// SAFETY: the C object is used through functions that take its own locks (or need process
// context, documented on each method), from any thread.
unsafe impl Send for OdpUmem {}
// SAFETY: as above; concurrent copies to the same page are the RDMA semantics (no Rust
// references to the page contents are created).
unsafe impl Sync for OdpUmem {}

impl OdpUmem {
    /// `[start, start + len)` of the calling process (process context), on demand, for
    /// `access` (IB_ACCESS_*, with IB_ACCESS_ON_DEMAND).
    pub(crate) fn get(dev: &IbDev, start: u64, len: u64, access: i32) -> Result<Self> {
        let mut err = 0;
        // SAFETY: dev is live; the core validates the range, takes a reference on the
        // caller's mm and registers the notifier.
        let raw =
            unsafe { bindings::rrxe_glue_odp_get(dev.as_ptr(), start, len, access, &mut err) };
        Self::wrap(raw, err, len)
    }

    /// The umem `raw` from one of the C constructors (NULL: it failed with `err`), of
    /// `len` bytes.
    fn wrap(raw: *mut bindings::rrxe_odp, err: i32, len: u64) -> Result<Self> {
        let raw =
            NonNull::new(raw).ok_or_else(|| Error::from_errno(if err < 0 { err } else { -14 }))?;
        // INVARIANT: a live umem from a C constructor, released only by Drop.
        // SAFETY: live.
        let address = unsafe { bindings::rrxe_glue_odp_address(raw.as_ptr()) };
        Ok(OdpUmem { raw, address, len })
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
/// `children` (bottom halves off) nests inside a region's lock (the access path, any
/// context) and is taken alone by the faults (process context); a child's own lock nests
/// inside it. Nothing that sleeps runs under it: a child is created outside it and
/// inserted after.
#[pin_data(PinnedDrop)]
pub(crate) struct OdpImplicit {
    // INVARIANT: from rrxe_glue_odp_implicit, released by the drop after every child.
    root: NonNull<bindings::rrxe_odp>,
    /// The children, by chunk number (address >> [`CHILD_SHIFT`]).
    #[pin]
    children: BhSpinLock<RBTree<u64, Arc<OdpUmem>>>,
}

// SAFETY: the root is only used to create children (process context, any thread) and
// released once; the children are behind a lock.
unsafe impl Send for OdpImplicit {}
// SAFETY: as above.
unsafe impl Sync for OdpImplicit {}

impl OdpImplicit {
    /// The calling process's address space on demand (process context).
    pub(crate) fn new(dev: &IbDev, access: i32) -> Result<Arc<Self>> {
        let mut err = 0;
        // SAFETY: dev is live; the core records the caller's mm (the helper holds it).
        let raw = unsafe { bindings::rrxe_glue_odp_implicit(dev.as_ptr(), access, &mut err) };
        let root =
            NonNull::new(raw).ok_or_else(|| Error::from_errno(if err < 0 { err } else { -14 }))?;
        let r = Arc::pin_init(
            pin_init!(OdpImplicit {
                root,
                children <- new_bh_spinlock!(RBTree::new(), "rrxe_odp_children"),
            }),
            GFP_KERNEL,
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

    /// The child of chunk `idx`, made if there is none yet. Process context.
    fn child(&self, idx: u64) -> Result<Arc<OdpUmem>> {
        if let Some(c) = self.children.lock().get(&idx) {
            return Ok(c.clone());
        }
        let start = idx.checked_mul(CHILD).ok_or(EINVAL)?;
        let mut err = 0;
        // SAFETY: the root is live (INVARIANT); process context, no lock held.
        let raw =
            unsafe { bindings::rrxe_glue_odp_child(self.root.as_ptr(), start, CHILD, &mut err) };
        let new = Arc::new(OdpUmem::wrap(raw, err, CHILD)?, GFP_KERNEL)?;
        let node = RBTreeNode::new(idx, new.clone(), GFP_KERNEL)?;
        let mut kids = self.children.lock();
        if let Some(c) = kids.get(&idx) {
            // Another fault made it meanwhile: ours is released (after the lock).
            let c = c.clone();
            drop(kids);
            drop(node);
            return Ok(c);
        }
        kids.insert(node);
        Ok(new)
    }

    /// As [`OdpUmem::map`], at user address `addr`, making the children it reaches.
    /// Process context, no spinlock held.
    pub(crate) fn map(&self, addr: u64, len: u64, write: bool, fault: bool) -> Result {
        addr.checked_add(len).ok_or(EINVAL)?;
        for (idx, off, n, _) in Self::pieces(addr, len) {
            self.child(idx)?.map(off, n, write, fault)?;
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
    /// Maps `[off, off + n)` (see [`OdpUmem::map`]). Process context, no spinlock held.
    pub(crate) fn map(&self, off: u64, n: u64, write: bool, fault: bool) -> Result {
        match self {
            OdpRef::Explicit(u) => u.map(off, n, write, fault),
            OdpRef::Implicit(i) => i.map(off, n, write, fault),
        }
    }
}
