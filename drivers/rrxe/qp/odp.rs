// SPDX-License-Identifier: GPL-2.0
//! A QP's page faults (on-demand paging): an access of the engine that found memory not
//! present records the range here and queues the QP's work item, which maps it (process
//! context, no lock held) before it runs the QP again (see [`crate::mr::Fault`]).

use super::Qp;
use crate::counters::Counter;
use crate::mr::{AccessError, Fault};
use core::sync::atomic::Ordering;

/// The QP's page faults to take.
#[derive(Default)]
pub(super) struct Faults {
    /// The range to map next. One at a time: an access that finds another range not
    /// present while this one waits fails again after it and records it then.
    pending: Option<Fault>,
    /// The last range whose fault failed (not mapped in the process, or not for the
    /// access): the next access to it fails for good instead of asking again, so a
    /// request to unmapped memory ends in an access error, not in RNR NAKs forever (mlx5
    /// answers a failed responder fault with a remote access error). That access, the
    /// retry of the one that asked (the requester's RNR retry, or the QP's own next run),
    /// consumes it; a reset of the QP forgets it.
    failed: Option<Fault>,
}

impl Qp {
    /// An access of the engine found the memory of `f` not present: asks for the fault
    /// and returns [`AccessError::NotPresent`], or, if the last fault of that range
    /// failed, [`AccessError::OutOfBounds`] (an access error).
    pub(super) fn not_present(&self, f: Fault) -> AccessError {
        {
            let mut s = self.faults.lock();
            if s.failed.as_ref().is_some_and(|x| x.overlaps(&f)) {
                s.failed = None;
                return AccessError::OutOfBounds;
            }
            if s.pending.is_none() {
                s.pending = Some(f);
            }
        }
        self.kick();
        AccessError::NotPresent
    }

    /// Forgets the pending and the failed fault (the QP was reset).
    pub(super) fn reset_faults(&self) {
        let mut s = self.faults.lock();
        s.pending = None;
        s.failed = None;
    }

    /// The work item, before it runs the QP (process context, no lock held): maps the
    /// pending range, if any.
    pub(super) fn run_faults(&self) {
        let Some(f) = self.faults.lock().pending.take() else {
            return;
        };
        let data = self.dev.get().data();
        match data.mrs.fault(&f, &data.counters) {
            Ok(()) => data.counters.inc(Counter::OdpFaults),
            Err(_) => {
                data.counters.inc(Counter::OdpFaultErrors);
                self.faults.lock().failed = Some(f);
            }
        }
        // Either way what waited for it tries again (and fails for good if it failed).
        self.fault_done.store(true, Ordering::Release);
    }
}
