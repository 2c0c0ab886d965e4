// SPDX-License-Identifier: GPL-2.0
//! On-demand paging: the page faults of on-demand-paging regions.
//!
//! An access that finds memory of such a region not mapped fails with
//! [`AccessError::NotPresent`] and touches nothing (it runs under spinlocks, maybe in the
//! receive softirq, where a fault cannot be taken). The QP that made it records a
//! [`Fault`] (`qp/odp.rs`); its work item, in process context with no lock held, maps
//! the range here and runs the QP again. The protocol meanwhile waits (requester) or
//! answers RNR NAK (responder), see `proto`'s `PlaceError::NotPresent`.

use super::{writes, AccessError, AccessFlags, MrTable};
use crate::glue::odp::{OdpUmem, MAX_FAULT};
use kernel::prelude::*;
use kernel::sync::Arc;

/// A range of a region that an access needed and found not mapped.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fault {
    /// The key the access used: an lkey, or for a remote access an rkey (a region's or a
    /// window's).
    pub(crate) key: u32,
    /// A remote access: the QP that made it (a type 2B window is bound to one QP).
    pub(crate) remote_qpn: Option<u32>,
    /// The PD the access was made in.
    pub(crate) pd: usize,
    /// First address (in the key's address space).
    pub(crate) va: u64,
    /// Bytes.
    pub(crate) len: u64,
    /// The rights the access needed.
    pub(crate) need: AccessFlags,
}

impl Fault {
    /// Whether `other` is an access to the same key overlapping this range.
    pub(crate) fn overlaps(&self, other: &Fault) -> bool {
        let end = |f: &Fault| f.va.saturating_add(f.len.max(1));
        self.key == other.key && self.va < end(other) && other.va < end(self)
    }
}

impl MrTable {
    /// The on-demand-paging memory `f` reaches (checked as the access was: key, PD,
    /// window, range, rights) and the offset of `f.va` in it.
    fn odp_of(&self, f: &Fault) -> Result<(Arc<OdpUmem>, u64), AccessError> {
        match f.remote_qpn {
            Some(qpn) => self.with_remote(f.key, f.pd, qpn, (f.va, f.len, f.need), |r| {
                r.region.odp_at(r.granted, f.va, f.len, f.need)
            })?,
            None => self.with(f.key, f.pd, |r| r.odp_at(r.access, f.va, f.len, f.need))?,
        }
    }

    /// Maps the range of `f` (at most [`MAX_FAULT`] bytes from its start; an access to
    /// the rest asks again), faulting its pages in. Process context, no lock held. The
    /// region may be deregistered meanwhile: the mapping then goes with it.
    pub(crate) fn fault(&self, f: &Fault) -> Result {
        let (umem, off) = self.odp_of(f).map_err(|_| EINVAL)?;
        umem.map(off, f.len.min(MAX_FAULT), writes(f.need), true)
        // `umem` may be the last reference (a deregistration since): released here, in
        // process context.
    }
}
