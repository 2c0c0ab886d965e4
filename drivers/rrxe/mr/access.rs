// SPDX-License-Identifier: GPL-2.0
//! Access flags (IB_ACCESS_*): what a region, a window or a QP grants, and the checks of
//! the flags a registration asks for.

use crate::glue::bindings as b;
use kernel::prelude::*;

/// A set of IB_ACCESS_* flags.
///
/// Made from the raw bits the core or a process passes ([`AccessFlags::from_raw`]) once,
/// where they come in; it may then still hold bits rrxe does not implement, which are
/// refused where they were before the flags were typed: [`check_access_flags`] (MRs, REG_MR),
/// [`check_dmabuf_access`], modify_qp ([`AccessFlags::QP_SUPPORTED`]) and BIND_MW.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct AccessFlags(u32);

impl AccessFlags {
    /// No flag: a local read needs nothing.
    pub(crate) const NONE: Self = Self(0);
    /// Local write (receive into, READ response into, atomic result into).
    pub(crate) const LOCAL_WRITE: Self = Self(b::ib_access_flags_IB_ACCESS_LOCAL_WRITE);
    /// Remote RDMA WRITE.
    pub(crate) const REMOTE_WRITE: Self = Self(b::ib_access_flags_IB_ACCESS_REMOTE_WRITE);
    /// Remote RDMA READ.
    pub(crate) const REMOTE_READ: Self = Self(b::ib_access_flags_IB_ACCESS_REMOTE_READ);
    /// Remote atomics.
    pub(crate) const REMOTE_ATOMIC: Self = Self(b::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC);
    /// Memory window binding.
    pub(crate) const MW_BIND: Self = Self(b::ib_access_flags_IB_ACCESS_MW_BIND);
    /// Zero-based virtual addresses.
    pub(crate) const ZERO_BASED: Self = Self(b::ib_access_flags_IB_ZERO_BASED);
    /// Relaxed ordering (a hint; accepted).
    pub(crate) const RELAXED_ORDERING: Self = Self(b::ib_access_flags_IB_ACCESS_RELAXED_ORDERING);
    /// FLUSH to global visibility.
    pub(crate) const FLUSH_GLOBAL: Self = Self(b::ib_access_flags_IB_ACCESS_FLUSH_GLOBAL);
    /// FLUSH to persistence.
    pub(crate) const FLUSH_PERSISTENT: Self = Self(b::ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT);
    /// On-demand paging: the memory is mapped when accessed, not pinned (user MRs only,
    /// see [`check_user_access`]).
    pub(crate) const ON_DEMAND: Self = Self(b::ib_access_flags_IB_ACCESS_ON_DEMAND);
    /// The optional flags (IB_ACCESS_OPTIONAL, bits 20..=29): hints a device may ignore,
    /// accepted as rdma_rxe accepts them.
    pub(crate) const OPTIONAL: Self = Self(b::ib_access_flags_IB_ACCESS_OPTIONAL);
    /// The remote rights that need Local Write on the region too (IBA o10-35.2.1).
    pub(crate) const NEEDS_LOCAL_WRITE: Self = Self::REMOTE_WRITE.union(Self::REMOTE_ATOMIC);
    /// The flags a QP's access may hold, as rdma_rxe's RXE_ACCESS_SUPPORTED_QP (its MR list):
    /// any other bit is refused by modify_qp. On-demand paging is a property of regions, but
    /// programs give their QP the flags of their ODP MR, and rdma_rxe and mlx5 accept it: a
    /// QP's access is only ever tested for its remote rights, so the bit is kept (query_qp
    /// returns it) and means nothing for the QP.
    pub(crate) const QP_SUPPORTED: Self = Self::LOCAL_WRITE
        .union(Self::REMOTE_WRITE)
        .union(Self::REMOTE_READ)
        .union(Self::REMOTE_ATOMIC)
        .union(Self::MW_BIND)
        .union(Self::ON_DEMAND)
        .union(Self::FLUSH_GLOBAL)
        .union(Self::FLUSH_PERSISTENT)
        .union(Self::OPTIONAL);
    /// Every flag rrxe supports on a region (no huge-page hint; on-demand paging only on
    /// user MRs, see [`check_user_access`]).
    pub(crate) const SUPPORTED: Self = Self::OPTIONAL
        .union(Self::LOCAL_WRITE)
        .union(Self::REMOTE_WRITE)
        .union(Self::REMOTE_READ)
        .union(Self::REMOTE_ATOMIC)
        .union(Self::MW_BIND)
        .union(Self::ZERO_BASED)
        .union(Self::RELAXED_ORDERING)
        .union(Self::FLUSH_GLOBAL)
        .union(Self::FLUSH_PERSISTENT);

    /// The flags as passed (an `int` of the core, a field of a work request or WQE), every
    /// bit kept, known or not.
    pub(crate) const fn from_raw(bits: u32) -> Self {
        Self(bits)
    }

    /// The raw bits (for the core: `ib_umem_get`, `query_qp`).
    pub(crate) const fn bits(self) -> u32 {
        self.0
    }

    /// The flags of both.
    pub(crate) const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Whether every flag of `other` is set (true for [`AccessFlags::NONE`]).
    pub(crate) const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any flag of `other` is set.
    pub(crate) const fn intersects(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }

    /// These flags without those of `other`.
    pub(crate) const fn without(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }

    /// Whether no flag is set.
    pub(crate) const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether every flag set is one of `allowed`.
    pub(crate) const fn within(self, allowed: Self) -> bool {
        allowed.contains(self)
    }
}

/// Refuses IB_ACCESS_* flags rrxe does not implement (e.g. huge pages), and on-demand
/// paging (allowed on user MRs only, [`check_user_access`]).
pub(crate) fn check_access_flags(flags: AccessFlags) -> Result {
    if !flags.within(AccessFlags::SUPPORTED) {
        return Err(crate::glue::eopnotsupp());
    }
    // Remote write and atomic need local write (IBA o10-35.2.1).
    if flags.intersects(AccessFlags::NEEDS_LOCAL_WRITE) && !flags.contains(AccessFlags::LOCAL_WRITE)
    {
        return Err(EINVAL);
    }
    Ok(())
}

/// The access flags a dma-buf MR may have: the list the core's UVERBS_METHOD_REG_DMABUF_MR
/// accepts (anything else, e.g. MW_BIND or ON_DEMAND, it refuses with EINVAL before the driver
/// is called; checked again here so the driver does not rely on it), under the rules of
/// [`check_access_flags`].
pub(crate) fn check_dmabuf_access(flags: AccessFlags) -> Result {
    const DMABUF: AccessFlags = AccessFlags::LOCAL_WRITE
        .union(AccessFlags::REMOTE_WRITE)
        .union(AccessFlags::REMOTE_READ)
        .union(AccessFlags::REMOTE_ATOMIC)
        .union(AccessFlags::RELAXED_ORDERING);
    if !flags.within(DMABUF) {
        return Err(EINVAL);
    }
    check_access_flags(flags)
}

/// The access flags of a user MR (reg_user_mr, rereg): those of [`check_access_flags`],
/// plus on-demand paging (the one verb that may ask for it: DMA, fast-registration and
/// dma-buf MRs refuse it, as the core and rdma_rxe do).
pub(crate) fn check_user_access(flags: AccessFlags) -> Result {
    check_access_flags(flags.without(AccessFlags::ON_DEMAND))
}
