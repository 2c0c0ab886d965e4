// SPDX-License-Identifier: GPL-2.0
//! On-demand-paging user memory (`ib_umem_odp`): nothing is pinned at registration; pages
//! are mapped when a fault asks for them and unmapped when the process's mappings change
//! (the MMU notifier in `rrxe_glue.c`).
//!
//! The access path ([`OdpUmem::copy`], [`OdpUmem::atomic`]) runs in any context under
//! spinlocks, so it never faults: it copies only when every page of the range is mapped
//! (under the umem's own bottom-half lock, which the invalidation takes before unmapping)
//! and otherwise fails with [`NOT_PRESENT`], touching nothing. [`OdpUmem::map`], in process
//! context with no lock held, maps pages (faulting them in).

use super::bindings;
use super::mem::{Dir, Xfer};
use super::IbDev;
use core::ptr::NonNull;
use core::sync::atomic::AtomicU64;
use kernel::prelude::*;

/// The error of an access to memory that is not mapped yet (distinct from every other
/// error of the access path, which is EINVAL).
pub(crate) const NOT_PRESENT: Error = EAGAIN;

/// Most bytes one fault maps: a larger range is mapped by the faults its later accesses
/// ask for (as mlx5 bounds a fault), so one request cannot keep a work item busy for long.
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
    // INVARIANT: from rrxe_glue_odp_get, released only by Drop.
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
        let raw =
            NonNull::new(raw).ok_or_else(|| Error::from_errno(if err < 0 { err } else { -14 }))?;
        // SAFETY: live (INVARIANT above).
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
        // SAFETY: live umem; process context with no spinlock held (the caller's contract,
        // the driver calls it from work items and verbs only).
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
