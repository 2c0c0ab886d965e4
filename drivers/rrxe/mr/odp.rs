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
use crate::counters::{Counter, Counters};
use crate::glue::bindings as b;
use crate::glue::odp::{OdpRef, OdpTally, MAX_FAULT};
use crate::glue::{Advice, IbDev};
use kernel::prelude::*;

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
    fn odp_of(&self, f: &Fault) -> Result<(OdpRef, u64), AccessError> {
        match f.remote_qpn {
            Some(qpn) => self.with_remote(f.key, f.pd, qpn, (f.va, f.len, f.need), |r| {
                r.region.odp_at(r.granted, f.va, f.len, f.need)
            })?,
            None => self.with(f.key, f.pd, |r| r.odp_at(r.access, f.va, f.len, f.need))?,
        }
    }

    /// Maps the range of `f`, faulting its pages in, [`MAX_FAULT`] bytes at a time (all
    /// of it: the access checks the whole range again, so mapping only its start would
    /// never let a larger one through). Process context, no lock held. The region may be
    /// deregistered meanwhile: the mapping then goes with it, and `umem`, maybe the last
    /// reference, is released here.
    pub(crate) fn fault(&self, f: &Fault, counters: &Counters) -> Result {
        let (umem, off) = self.odp_of(f).map_err(|_| EINVAL)?;
        map_range(&umem, (off, f.len), (writes(f.need), true), counters)
    }
}

/// Maps `len` bytes of `umem` from byte `off`, [`MAX_FAULT`] bytes at a time, counting
/// what happened to an implicit region's children in `counters`.
fn map_range(
    umem: &OdpRef,
    (off, len): (u64, u64),
    how: (bool, bool),
    counters: &Counters,
) -> Result {
    let mut tally = OdpTally::default();
    let mut done = 0u64;
    let mut r = Ok(());
    while done < len && r.is_ok() {
        let n = (len - done).min(MAX_FAULT);
        r = match off.checked_add(done) {
            Some(at) => umem.map(at, n, how, &mut tally),
            None => Err(EINVAL),
        };
        done += n;
    }
    counters.add(Counter::OdpChildrenMade, tally.made);
    counters.add(Counter::OdpChildrenReaped, tally.reaped);
    counters.add(Counter::OdpBoundRefused, tally.refused);
    r
}

/// `advise_mr` (`ibv_advise_mr`, `ib_advise_mr`) in PD `pd`: maps the ranges of `sges`,
/// each an lkey of an on-demand-paging MR of the PD, for reading (PREFETCH), for writing
/// (PREFETCH_WRITE), or only what the process has present (PREFETCH_NO_FAULT, no fault).
/// Every SGE is checked before anything is mapped: an unknown key or one of another PD
/// is ENOENT, a key that is not an ODP MR, a range outside it or without Local Write for
/// PREFETCH_WRITE is EINVAL. (The two errnos are those reported for rdma_rxe's
/// `rxe_ib_advise_mr` of Linux 6.15, which the kernel tree rrxe builds against predates.)
/// The mapping is done before returning, with or without IB_UVERBS_ADVISE_MR_FLAG_FLUSH
/// (without it the verb may return earlier; it need not). Process context.
pub(crate) fn advise(dev: &IbDev, pd: usize, advice: Advice, sges: &[b::ib_sge]) -> Result {
    let (need, fault) = match advice {
        Advice::Prefetch => (AccessFlags::NONE, true),
        Advice::PrefetchWrite => (AccessFlags::LOCAL_WRITE, true),
        Advice::PrefetchNoFault => (AccessFlags::NONE, false),
    };
    let mrs = &dev.data().mrs;
    let mut ranges = KVec::with_capacity(sges.len(), GFP_KERNEL)?;
    for s in sges {
        let len = u64::from(s.length);
        let (umem, off) = match mrs.with(s.lkey, pd, |r| r.odp_at(r.access, s.addr, len, need)) {
            Err(_) => return Err(ENOENT),
            Ok(Err(_)) => return Err(EINVAL),
            Ok(Ok(x)) => x,
        };
        ranges.push((umem, off, len), GFP_KERNEL)?;
    }
    for (umem, off, len) in ranges.iter() {
        map_range(
            umem,
            (*off, *len),
            (writes(need), fault),
            &dev.data().counters,
        )?;
    }
    Ok(())
}
