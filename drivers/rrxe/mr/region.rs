// SPDX-License-Identifier: GPL-2.0
//! Regions: the access checks and copies of one region (directly or through a window),
//! and the constructors of each kind of region.

use super::{check_access_flags, AccessFlags};
use crate::glue::dmabuf::DmabufMap;
use crate::glue::mem::{Backing, Umem, Xfer};
use crate::glue::odp::{OdpImplicit, OdpRef, OdpUmem, NOT_PRESENT};
use core::sync::atomic::Ordering;
use kernel::prelude::*;
use kernel::sync::Arc;

/// Why an access was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AccessError {
    /// No region has this key (or it is in another PD, or not valid).
    BadKey,
    /// Outside the region.
    OutOfBounds,
    /// The region does not grant the access.
    NoPermission,
    /// On-demand paging: some of the range is not mapped now (a page fault is needed;
    /// see [`crate::mr::odp`]).
    NotPresent,
}

/// The error of a backing's access: memory not present, or anything else (outside what
/// the backing covers).
fn backing_err(e: Error) -> AccessError {
    if e == NOT_PRESENT {
        AccessError::NotPresent
    } else {
        AccessError::OutOfBounds
    }
}

/// Whether an access needing `need` writes the memory.
pub(crate) fn writes(need: AccessFlags) -> bool {
    need.intersects(
        AccessFlags::LOCAL_WRITE
            .union(AccessFlags::REMOTE_WRITE)
            .union(AccessFlags::REMOTE_ATOMIC),
    )
}

/// A registered region.
pub(crate) struct Region {
    /// The PD (its address, as an identity).
    pub(crate) pd: usize,
    /// What it grants.
    pub(crate) access: AccessFlags,
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
    /// Identity in the device's table (set at insertion, never reused; 0: not in a table,
    /// or removed from it).
    pub(crate) id: u64,
    /// Windows bound to it.
    pub(crate) windows: u32,
}

impl Region {
    /// A region not yet in a table (no key, no identity, no windows).
    pub(super) fn unkeyed(
        pd: usize,
        access: AccessFlags,
        iova: u64,
        length: u64,
        valid: bool,
        backing: Backing,
    ) -> Self {
        Region {
            pd,
            access,
            iova,
            length,
            lkey: 0,
            rkey: 0,
            valid,
            backing,
            id: 0,
            windows: 0,
        }
    }

    /// What is left in a table cell once its region was removed: invalid, empty, no key.
    pub(super) fn gone() -> Region {
        Region::unkeyed(0, AccessFlags::NONE, 0, 0, false, Backing::KernelVa)
    }

    /// Checks `[va, va + len)` for `need` ([`AccessFlags::NONE`] for a local read) and
    /// returns the byte offset of `va` in the region.
    /// An on-demand-paging region's range must be mapped too ([`AccessError::NotPresent`]
    /// if not; advisory, the copy checks again).
    pub(crate) fn check(&self, va: u64, len: u64, need: AccessFlags) -> Result<u64, AccessError> {
        let off = self.check_as(self.access, va, len, need)?;
        self.check_present(off, len, need)?;
        Ok(off)
    }

    /// For an on-demand-paging region: whether bytes `[off, off + len)` are mapped for
    /// `need` now.
    fn check_present(&self, off: u64, len: u64, need: AccessFlags) -> Result<(), AccessError> {
        let present = match &self.backing {
            Backing::Odp(o) => o.present(off, len, writes(need)),
            Backing::OdpImplicit(o) => o.present(off, len, writes(need)),
            _ => true,
        };
        if present {
            Ok(())
        } else {
            Err(AccessError::NotPresent)
        }
    }

    /// For a page fault: the on-demand-paging memory of `[va, va + len)` with the rights
    /// `granted` for `need`, and the byte offset of `va` in it. `NoPermission` for a region
    /// that is not on demand.
    pub(super) fn odp_at(
        &self,
        granted: AccessFlags,
        va: u64,
        len: u64,
        need: AccessFlags,
    ) -> Result<(OdpRef, u64), AccessError> {
        let off = self.check_as(granted, va, len, need)?;
        match &self.backing {
            Backing::Odp(o) => Ok((OdpRef::Explicit(o.clone()), off)),
            Backing::OdpImplicit(o) => Ok((OdpRef::Implicit(o.clone()), off)),
            _ => Err(AccessError::NoPermission),
        }
    }

    /// [`Region::check`] with the rights `granted` (the region's own, or those of a window
    /// bound to it) in place of the region's access flags.
    pub(super) fn check_as(
        &self,
        granted: AccessFlags,
        va: u64,
        len: u64,
        need: AccessFlags,
    ) -> Result<u64, AccessError> {
        if !self.valid {
            return Err(AccessError::BadKey);
        }
        if !granted.contains(need) {
            return Err(AccessError::NoPermission);
        }
        let base = if self.access.contains(AccessFlags::ZERO_BASED) {
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

    pub(super) fn check_whole_as(
        &self,
        granted: AccessFlags,
        need: AccessFlags,
    ) -> Result<(), AccessError> {
        if !self.valid {
            return Err(AccessError::BadKey);
        }
        if !granted.contains(need) {
            return Err(AccessError::NoPermission);
        }
        Ok(())
    }

    /// Copies between `buf` and `va` after checking access.
    pub(crate) fn copy(
        &self,
        va: u64,
        buf: &mut Xfer<'_>,
        need: AccessFlags,
    ) -> Result<(), AccessError> {
        self.copy_as(self.access, va, buf, need)
    }

    pub(super) fn copy_as(
        &self,
        granted: AccessFlags,
        va: u64,
        buf: &mut Xfer<'_>,
        need: AccessFlags,
    ) -> Result<(), AccessError> {
        let off = self.check_as(granted, va, buf.len() as u64, need)?;
        self.backing.copy(off, buf).map_err(backing_err)
    }

    pub(super) fn atomic_as(
        &self,
        granted: AccessFlags,
        va: u64,
        op: crate::proto::AtomicOp,
    ) -> Result<u64, AccessError> {
        if va % 8 != 0 {
            return Err(AccessError::OutOfBounds);
        }
        let off = self.check_as(granted, va, 8, AccessFlags::REMOTE_ATOMIC)?;
        self.backing
            .atomic(off, |a| match op {
                crate::proto::AtomicOp::CompareSwap { compare, swap } => {
                    match a.compare_exchange(compare, swap, Ordering::SeqCst, Ordering::SeqCst) {
                        Ok(v) | Err(v) => v,
                    }
                }
                crate::proto::AtomicOp::FetchAdd { add } => a.fetch_add(add, Ordering::SeqCst),
            })
            .map_err(backing_err)
    }

    pub(super) fn atomic_write_as(
        &self,
        granted: AccessFlags,
        va: u64,
        value: u64,
    ) -> Result<(), AccessError> {
        if va % 8 != 0 {
            return Err(AccessError::OutOfBounds);
        }
        let off = self.check_as(granted, va, 8, AccessFlags::REMOTE_WRITE)?;
        let v = u64::from_ne_bytes(value.to_be_bytes());
        self.backing
            .atomic(off, |a| a.store(v, Ordering::SeqCst))
            .map_err(backing_err)
    }
}

/// A region as one remote access reaches it: through its own rkey, with the region's
/// access flags, or through a bound memory window, with the window's. IBTA: a window grants
/// remote rights of its own; the region under it needs only Local Write (for remote write
/// and atomics) and the MW Bind right, checked when the window was bound.
pub(crate) struct Remote<'a> {
    pub(super) region: &'a Region,
    pub(super) granted: AccessFlags,
}

impl Remote<'_> {
    /// As [`Region::check`], with the rights of this access path.
    pub(crate) fn check(&self, va: u64, len: u64, need: AccessFlags) -> Result<u64, AccessError> {
        let off = self.region.check_as(self.granted, va, len, need)?;
        self.region.check_present(off, len, need)?;
        Ok(off)
    }

    /// As [`Remote::check`], whether the memory is mapped or not (FLUSH: memory not
    /// mapped has nothing to flush).
    pub(crate) fn check_range(
        &self,
        va: u64,
        len: u64,
        need: AccessFlags,
    ) -> Result<u64, AccessError> {
        self.region.check_as(self.granted, va, len, need)
    }

    /// As [`Region::check_whole`], with the rights of this access path.
    pub(crate) fn check_whole(&self, need: AccessFlags) -> Result<(), AccessError> {
        self.region.check_whole_as(self.granted, need)
    }

    /// As [`Region::copy`], with the rights of this access path.
    pub(crate) fn copy(
        &self,
        va: u64,
        buf: &mut Xfer<'_>,
        need: AccessFlags,
    ) -> Result<(), AccessError> {
        self.region.copy_as(self.granted, va, buf, need)
    }

    /// As [`Region::atomic`], with the rights of this access path.
    pub(crate) fn atomic(&self, va: u64, op: crate::proto::AtomicOp) -> Result<u64, AccessError> {
        self.region.atomic_as(self.granted, va, op)
    }

    /// As [`Region::atomic_write`], with the rights of this access path.
    pub(crate) fn atomic_write(&self, va: u64, value: u64) -> Result<(), AccessError> {
        self.region.atomic_write_as(self.granted, va, value)
    }
}

/// Refuses a user registration's range before anything is pinned: empty, or wrapping
/// around the address space at its user address or at its IOVA (as ib_umem_get and
/// rdma_rxe refuse them).
pub(crate) fn check_user_range(start: u64, length: u64, iova: u64) -> Result {
    if length == 0 || start.checked_add(length).is_none() || iova.checked_add(length).is_none() {
        return Err(EINVAL);
    }
    Ok(())
}

/// A DMA MR of a kernel consumer: all of kernel memory.
pub(crate) fn dma_region(pd: usize, flags: AccessFlags) -> Result<Region> {
    check_access_flags(flags)?;
    Ok(Region::unkeyed(
        pd,
        flags,
        0,
        u64::MAX,
        true,
        Backing::KernelVa,
    ))
}

/// A user MR over pinned pages.
pub(crate) fn user_region(
    pd: usize,
    flags: AccessFlags,
    iova: u64,
    length: u64,
    umem: Umem,
) -> Result<Region> {
    registered_region(pd, flags, iova, length, Backing::User(umem))
}

/// A valid region of `length` bytes of `backing` at `iova` (neither empty nor wrapping).
fn registered_region(
    pd: usize,
    flags: AccessFlags,
    iova: u64,
    length: u64,
    backing: Backing,
) -> Result<Region> {
    if length == 0 || iova.checked_add(length).is_none() {
        return Err(EINVAL);
    }
    Ok(Region::unkeyed(pd, flags, iova, length, true, backing))
}

/// A user MR over bytes of a dma-buf (mapped for CPU access), at `iova`.
pub(crate) fn dmabuf_region(
    pd: usize,
    flags: AccessFlags,
    iova: u64,
    length: u64,
    map: DmabufMap,
) -> Result<Region> {
    registered_region(pd, flags, iova, length, Backing::Mapped(map))
}

/// A user MR on demand (nothing pinned).
pub(crate) fn odp_region(
    pd: usize,
    flags: AccessFlags,
    iova: u64,
    length: u64,
    umem: OdpUmem,
) -> Result<Region> {
    let umem = Arc::new(umem, GFP_KERNEL)?;
    registered_region(pd, flags, iova, length, Backing::Odp(umem))
}

/// A user MR over all of the process's address space on demand (implicit ODP: IOVA 0,
/// length `u64::MAX`, offsets are user addresses).
pub(crate) fn odp_implicit_region(
    pd: usize,
    flags: AccessFlags,
    mem: Arc<OdpImplicit>,
) -> Result<Region> {
    registered_region(pd, flags, 0, u64::MAX, Backing::OdpImplicit(mem))
}

/// What a re-registration needs of a user region (pinned or on demand): its access flags,
/// iova, length and the user address it was registered at. `None` for other regions.
pub(crate) fn user_extent(r: &Region) -> Option<(AccessFlags, u64, u64, u64)> {
    match &r.backing {
        Backing::User(u) => Some((r.access, r.iova, r.length, u.address())),
        Backing::Odp(o) => Some((r.access, r.iova, r.length, o.address())),
        Backing::OdpImplicit(_) => Some((r.access, r.iova, r.length, 0)),
        _ => None,
    }
}

/// A fast-registration MR: invalid until a REG_MR work request; room for `max_pages`.
pub(crate) fn fast_region(pd: usize, max_pages: usize) -> Result<Region> {
    Ok(Region::unkeyed(
        pd,
        AccessFlags::NONE,
        0,
        0,
        false,
        Backing::KernelPages {
            pages: {
                let mut v = KVec::with_capacity(max_pages, GFP_KERNEL)?;
                v.extend_with(max_pages, 0u64, GFP_KERNEL)?;
                v
            },
            npages: 0,
            page_size: kernel::page::PAGE_SIZE as u32,
            first_off: 0,
        },
    ))
}
