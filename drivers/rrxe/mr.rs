// SPDX-License-Identifier: GPL-2.0
//! Memory regions: the key table and access checks.
//!
//! Each device has one table of registered regions, indexed by `key >> 8`; the low 8 bits
//! are a per-registration tag so a stale key does not reach a newer region in the same slot.
//! The datapath resolves a key and accesses the memory under the table lock, so a region
//! that was deregistered (removed from the table) can no longer be reached, and its memory
//! (pinned pages) is released afterwards by the deregistering thread, in process context.

// Lookups and accesses are used by the QP datapath (issue #4).
#![allow(dead_code)]

use crate::glue::mem::{Backing, Umem, Xfer};
use crate::glue::sync::{new_irq_spinlock, IrqSpinLock};
use core::sync::atomic::Ordering;
use kernel::prelude::*;

/// IB_ACCESS_* flags.
pub(crate) mod access {
    /// Local write (receive into, READ response into, atomic result into).
    pub(crate) const LOCAL_WRITE: u32 = 1;
    /// Remote RDMA WRITE.
    pub(crate) const REMOTE_WRITE: u32 = 2;
    /// Remote RDMA READ.
    pub(crate) const REMOTE_READ: u32 = 4;
    /// Remote atomics.
    pub(crate) const REMOTE_ATOMIC: u32 = 8;
    /// Memory window binding.
    pub(crate) const MW_BIND: u32 = 16;
    /// Zero-based virtual addresses.
    pub(crate) const ZERO_BASED: u32 = 32;
    /// Relaxed ordering (a hint; accepted).
    pub(crate) const RELAXED_ORDERING: u32 = 1 << 20;
    /// FLUSH to global visibility.
    pub(crate) const FLUSH_GLOBAL: u32 = 1 << 8;
    /// FLUSH to persistence.
    pub(crate) const FLUSH_PERSISTENT: u32 = 1 << 9;
    /// Every flag rrxe supports.
    pub(crate) const SUPPORTED: u32 = LOCAL_WRITE
        | REMOTE_WRITE
        | REMOTE_READ
        | REMOTE_ATOMIC
        | MW_BIND
        | ZERO_BASED
        | RELAXED_ORDERING
        | FLUSH_GLOBAL
        | FLUSH_PERSISTENT;
}

/// Why an access was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AccessError {
    /// No region has this key (or it is in another PD, or not valid).
    BadKey,
    /// Outside the region.
    OutOfBounds,
    /// The region does not grant the access.
    NoPermission,
}

/// A registered region.
pub(crate) struct Region {
    /// The PD (its address, as an identity).
    pub(crate) pd: usize,
    /// IB_ACCESS_* flags.
    pub(crate) access: u32,
    /// First virtual address.
    pub(crate) iova: u64,
    /// Length in bytes.
    pub(crate) length: u64,
    /// Local key.
    pub(crate) lkey: u32,
    /// Remote key (same slot; equal to lkey).
    pub(crate) rkey: u32,
    /// False for a fast-registration MR until a REG_MR work request makes it valid, and
    /// after a LOCAL_INV.
    pub(crate) valid: bool,
    /// The memory.
    pub(crate) backing: Backing,
}

impl Region {
    /// Checks `[va, va + len)` for `need` (IB_ACCESS_* bits; 0 for a local read) and
    /// returns the byte offset of `va` in the region.
    pub(crate) fn check(&self, va: u64, len: u64, need: u32) -> Result<u64, AccessError> {
        if !self.valid {
            return Err(AccessError::BadKey);
        }
        if self.access & need != need {
            return Err(AccessError::NoPermission);
        }
        let base = if self.access & access::ZERO_BASED != 0 {
            0
        } else {
            self.iova
        };
        let off = va.checked_sub(base).ok_or(AccessError::OutOfBounds)?;
        let end = off.checked_add(len).ok_or(AccessError::OutOfBounds)?;
        if end > self.length {
            return Err(AccessError::OutOfBounds);
        }
        Ok(match self.backing {
            // A DMA MR's offsets are kernel virtual addresses.
            Backing::KernelVa => va,
            _ => off,
        })
    }

    /// Copies between `buf` and `va` after checking access.
    pub(crate) fn copy(&self, va: u64, buf: &mut Xfer<'_>, need: u32) -> Result<(), AccessError> {
        let off = self.check(va, buf.len() as u64, need)?;
        self.backing
            .copy(off, buf)
            .map_err(|_| AccessError::OutOfBounds)
    }

    /// An 8-byte atomic at `va` (8-aligned); returns the original value.
    pub(crate) fn atomic(&self, va: u64, op: crate::proto::AtomicOp) -> Result<u64, AccessError> {
        if va % 8 != 0 {
            return Err(AccessError::OutOfBounds);
        }
        let off = self.check(va, 8, access::REMOTE_ATOMIC)?;
        self.backing
            .atomic(off, |a| match op {
                crate::proto::AtomicOp::CompareSwap { compare, swap } => {
                    match a.compare_exchange(compare, swap, Ordering::SeqCst, Ordering::SeqCst) {
                        Ok(v) | Err(v) => v,
                    }
                }
                crate::proto::AtomicOp::FetchAdd { add } => a.fetch_add(add, Ordering::SeqCst),
            })
            .map_err(|_| AccessError::OutOfBounds)
    }

    /// ATOMIC WRITE: stores the 8 payload bytes (`value` is their big-endian reading).
    pub(crate) fn atomic_write(&self, va: u64, value: u64) -> Result<(), AccessError> {
        if va % 8 != 0 {
            return Err(AccessError::OutOfBounds);
        }
        let off = self.check(va, 8, access::REMOTE_WRITE)?;
        let v = u64::from_ne_bytes(value.to_be_bytes());
        self.backing
            .atomic(off, |a| a.store(v, Ordering::SeqCst))
            .map_err(|_| AccessError::OutOfBounds)
    }
}

/// Slots of the table; index 0 is never used (key 0 is invalid).
struct Slots {
    slots: KVec<Option<Region>>,
    tag: u8,
}

/// A device's memory regions.
#[pin_data]
pub(crate) struct MrTable {
    #[pin]
    inner: IrqSpinLock<Slots>,
}

/// Most regions per device.
pub(crate) const MAX_MR: usize = 1 << 16;

impl MrTable {
    /// An empty table.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(MrTable {
            inner <- new_irq_spinlock!(
                Slots {
                    slots: KVec::new(),
                    tag: 0,
                },
                "rrxe_mr_table"
            ),
        })
    }

    /// Adds a region and returns its key (used as both lkey and rkey).
    ///
    /// The slot vector grows outside the lock (allocation may sleep).
    pub(crate) fn insert(&self, mut region: Region) -> Result<u32> {
        loop {
            let need_grow = {
                let mut s = self.inner.lock();
                let tag = s.tag;
                if let Some((i, slot)) = s
                    .slots
                    .iter_mut()
                    .enumerate()
                    .skip(1)
                    .find(|(_, r)| r.is_none())
                {
                    let key = ((i as u32) << 8) | u32::from(tag);
                    region.lkey = key;
                    region.rkey = key;
                    *slot = Some(region);
                    s.tag = tag.wrapping_add(1);
                    return Ok(key);
                }
                s.slots.len()
            };
            if need_grow >= MAX_MR {
                return Err(ENOMEM);
            }
            // Grow by doubling into a new vector, then swap it in if nobody else did.
            let want = core::cmp::max(16, need_grow * 2).min(MAX_MR);
            let mut bigger: KVec<Option<Region>> = KVec::with_capacity(want, GFP_KERNEL)?;
            for _ in 0..want {
                bigger.push(None, GFP_KERNEL)?;
            }
            let mut s = self.inner.lock();
            if s.slots.len() == need_grow {
                for (dst, src) in bigger.iter_mut().zip(s.slots.iter_mut()) {
                    *dst = src.take();
                }
                core::mem::swap(&mut s.slots, &mut bigger);
            }
            drop(s);
            // `bigger` (the old, now empty vector, or the unused new one) is freed here,
            // outside the lock.
        }
    }

    /// Removes the region in the slot of `key` (whatever its current tag: a consumer may
    /// have changed the key with ib_update_fast_reg_key), returning it so the caller
    /// releases its memory in process context.
    pub(crate) fn remove(&self, key: u32) -> Option<Region> {
        let mut s = self.inner.lock();
        s.slots.get_mut((key >> 8) as usize)?.take()
    }

    /// Runs `f` on the region in the slot of `key` in PD `pd`, whatever its tag (fast
    /// registration: the consumer picks the new tag before posting REG_MR).
    fn with_slot<R>(
        &self,
        key: u32,
        pd: usize,
        f: impl FnOnce(&mut Region) -> R,
    ) -> Result<R, AccessError> {
        let mut s = self.inner.lock();
        match s.slots.get_mut((key >> 8) as usize) {
            Some(Some(r)) if r.pd == pd => Ok(f(r)),
            _ => Err(AccessError::BadKey),
        }
    }

    /// Moves the region of `key` from PD `pd` to PD `new_pd` (re-registration).
    pub(crate) fn set_pd(&self, key: u32, pd: usize, new_pd: usize) -> Result<(), AccessError> {
        self.with(key, pd, |r| r.pd = new_pd)
    }

    /// Runs `f` on the region of `key` in PD `pd`, under the table lock.
    pub(crate) fn with<R>(
        &self,
        key: u32,
        pd: usize,
        f: impl FnOnce(&mut Region) -> R,
    ) -> Result<R, AccessError> {
        let mut s = self.inner.lock();
        match s.slots.get_mut((key >> 8) as usize) {
            Some(Some(r)) if r.lkey == key && r.pd == pd => Ok(f(r)),
            _ => Err(AccessError::BadKey),
        }
    }
}

/// Refuses IB_ACCESS_* flags rrxe does not implement (e.g. on-demand paging).
pub(crate) fn check_access_flags(flags: u32) -> Result {
    if flags & !access::SUPPORTED != 0 {
        return Err(crate::glue::eopnotsupp());
    }
    // Remote write and atomic need local write (IBA o10-35.2.1).
    if flags & (access::REMOTE_WRITE | access::REMOTE_ATOMIC) != 0
        && flags & access::LOCAL_WRITE == 0
    {
        return Err(EINVAL);
    }
    Ok(())
}

/// A DMA MR of a kernel consumer: all of kernel memory.
pub(crate) fn dma_region(pd: usize, flags: u32) -> Result<Region> {
    check_access_flags(flags)?;
    Ok(Region {
        pd,
        access: flags,
        iova: 0,
        length: u64::MAX,
        lkey: 0,
        rkey: 0,
        valid: true,
        backing: Backing::KernelVa,
    })
}

/// A user MR over pinned pages.
pub(crate) fn user_region(
    pd: usize,
    flags: u32,
    iova: u64,
    length: u64,
    umem: Umem,
) -> Result<Region> {
    if length == 0 || iova.checked_add(length).is_none() {
        return Err(EINVAL);
    }
    Ok(Region {
        pd,
        access: flags,
        iova,
        length,
        lkey: 0,
        rkey: 0,
        valid: true,
        backing: Backing::User(umem),
    })
}

/// What a re-registration needs of a user region: its access flags, iova, length and the
/// user address it was registered at. `None` for other regions.
pub(crate) fn user_extent(r: &Region) -> Option<(u32, u64, u64, u64)> {
    match &r.backing {
        Backing::User(u) => Some((r.access, r.iova, r.length, u.address())),
        _ => None,
    }
}

/// A fast-registration MR: invalid until a REG_MR work request; room for `max_pages`.
pub(crate) fn fast_region(pd: usize, max_pages: usize) -> Result<Region> {
    Ok(Region {
        pd,
        access: 0,
        iova: 0,
        length: 0,
        lkey: 0,
        rkey: 0,
        valid: false,
        backing: Backing::KernelPages {
            pages: {
                let mut v = KVec::with_capacity(max_pages, GFP_KERNEL)?;
                v.extend_with(max_pages, 0u64, GFP_KERNEL)?;
                v
            },
            npages: 0,
            page_size: 4096,
            first_off: 0,
        },
    })
}

/// A fast registration, as a REG_MR work request carries it.
#[derive(Clone, Copy)]
pub(crate) struct FastReg {
    /// The MR's key when the WR was posted.
    pub(crate) cur_key: u32,
    /// The key it gets (same slot, new tag).
    pub(crate) new_key: u32,
    /// IB_ACCESS_* flags.
    pub(crate) access: u32,
    /// First address.
    pub(crate) iova: u64,
    /// Length.
    pub(crate) length: u64,
    /// Page size.
    pub(crate) page_size: u32,
}

impl MrTable {
    /// At post time: loads the page list of the next registration into the (invalid)
    /// fast-registration region `key` (no allocation: capacity was reserved at alloc_mr).
    pub(crate) fn fast_reg_load(
        &self,
        key: u32,
        pd: usize,
        pages: &[u64],
    ) -> Result<(), AccessError> {
        self.with_slot(key, pd, |r| {
            if r.valid {
                return Err(AccessError::NoPermission);
            }
            match &mut r.backing {
                Backing::KernelPages {
                    pages: p, npages, ..
                } => {
                    let dst = p.get_mut(..pages.len()).ok_or(AccessError::OutOfBounds)?;
                    if !crate::proto::copy_exact(dst, pages) {
                        return Err(AccessError::OutOfBounds);
                    }
                    *npages = pages.len();
                    Ok(())
                }
                _ => Err(AccessError::BadKey),
            }
        })?
    }

    /// Executes a REG_MR work request: the region becomes valid under its new key.
    pub(crate) fn fast_reg(&self, fr: &FastReg, pd: usize) -> Result<(), AccessError> {
        if fr.new_key >> 8 != fr.cur_key >> 8 || fr.page_size == 0 {
            return Err(AccessError::BadKey);
        }
        check_access_flags(fr.access).map_err(|_| AccessError::NoPermission)?;
        self.with_slot(fr.cur_key, pd, |r| {
            if r.valid {
                return Err(AccessError::NoPermission);
            }
            let Backing::KernelPages {
                npages,
                page_size,
                first_off,
                ..
            } = &mut r.backing
            else {
                return Err(AccessError::BadKey);
            };
            let ps = u64::from(fr.page_size);
            let off = fr.iova % ps;
            let need = (off + fr.length).div_ceil(ps);
            if need > *npages as u64 {
                return Err(AccessError::OutOfBounds);
            }
            *page_size = fr.page_size;
            *first_off = off as u32;
            r.iova = fr.iova;
            r.length = fr.length;
            r.access = fr.access;
            r.lkey = fr.new_key;
            r.rkey = fr.new_key;
            r.valid = true;
            Ok(())
        })?
    }

    /// Invalidates `key` (LOCAL_INV, SEND with invalidate).
    pub(crate) fn invalidate(&self, key: u32, pd: usize) -> Result<(), AccessError> {
        self.with(key, pd, |r| {
            if matches!(r.backing, Backing::KernelPages { .. }) {
                r.valid = false;
                Ok(())
            } else {
                Err(AccessError::NoPermission)
            }
        })?
    }
}
