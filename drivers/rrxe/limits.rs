// SPDX-License-Identifier: GPL-2.0
//! How many objects of each kind a device holds, against the maxima it advertises.
//!
//! `ibv_query_device` promises `max_pd`, `max_cq`, `max_qp`, ... ; every creation takes a
//! unit of its kind here first and every destruction gives it back, so the promise is
//! enforced, not just printed. Per-tenant limits are the RDMA cgroup's (`rdma.max`
//! `hca_object`), which the RDMA core charges for every user object of any device.

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::prelude::*;

/// The kinds of verbs objects that are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub(crate) enum Obj {
    /// Protection domains.
    Pd,
    /// Completion queues.
    Cq,
    /// Queue pairs (the GSI QP included).
    Qp,
    /// Shared receive queues.
    Srq,
    /// Memory regions (DMA, user and fast-registration).
    Mr,
    /// Memory windows.
    Mw,
    /// Address handles (kernel and user).
    Ah,
}

const KINDS: usize = 7;

impl Obj {
    /// The most a device holds, as `query_device` reports it.
    pub(crate) const fn max(self) -> u32 {
        match self {
            Obj::Pd => 0x7fff,
            Obj::Cq => 0x4000,
            // QPN 0 and 2..15 are never handed out; 1 is the GSI QP.
            Obj::Qp => (crate::qp::MAX_QP - 16) as u32,
            Obj::Srq => 1024,
            Obj::Mr => crate::mr::MAX_REGIONS,
            Obj::Mw => crate::mr::MAX_WINDOWS,
            Obj::Ah => (crate::ah::MAX_AH - 1) as u32,
        }
    }
}

/// Live objects per kind.
pub(crate) struct Limits([AtomicU32; KINDS]);

impl Limits {
    /// None live.
    pub(crate) const fn new() -> Self {
        Self([const { AtomicU32::new(0) }; KINDS])
    }

    /// Takes one unit of `o`, or fails with EINVAL when the device already holds its
    /// maximum (the errno rdma_rxe's object pools give, rxe_pool.c).
    pub(crate) fn take(&self, o: Obj) -> Result {
        let c = &self.0[o as usize];
        c.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < o.max()).then_some(n + 1)
        })
        .map(|_| ())
        .map_err(|_| EINVAL)
    }

    /// Gives back a unit taken by [`Limits::take`].
    pub(crate) fn put(&self, o: Obj) {
        let c = &self.0[o as usize];
        // Never below zero, whatever a caller got wrong.
        let _ = c.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// Runs a creation under one unit of `o`: taken first (EINVAL past the maximum), given
    /// back if the creation fails. The matching destroy gives it back with [`Limits::put`].
    pub(crate) fn counted<T>(&self, o: Obj, create: impl FnOnce() -> Result<T>) -> Result<T> {
        self.take(o)?;
        create().inspect_err(|_| self.put(o))
    }
}
