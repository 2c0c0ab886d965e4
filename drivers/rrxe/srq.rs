// SPDX-License-Identifier: GPL-2.0
//! Shared receive queues: receive WQEs several QPs take from, with the limit event.

use crate::counters::{Counter, Counters};
use crate::glue::sync::{new_irq_spinlock, IrqSpinLock};
use crate::glue::{Queue, SrqPtr};
use crate::qp::{Claim, RecvWr, Sge, WrRing, MAX_QP_WR, MAX_SGE};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;

/// A shared receive queue.
#[pin_data]
pub(crate) struct Srq {
    /// The receive WQEs and the user queue's consumer index. IRQs off: kernel `post_recv`
    /// (any context) and `take_into` (a QP's engine run, process context or softirq,
    /// nested in that QP's `claim` lock). Innermost.
    #[pin]
    ring: IrqSpinLock<WrRing<RecvWr>>,
    max_wr: u32,
    max_sge: u32,
    /// Armed limit (0: disarmed): fire the event when fewer WQEs than this are posted.
    limit: AtomicU32,
    ib: SrqPtr,
    /// User SRQs: the queue shared with the process.
    user: Option<Queue>,
    error: AtomicBool,
}

impl Srq {
    /// A new SRQ of `max_wr` WQEs with `max_sge` SGEs each.
    pub(crate) fn new(
        max_wr: u32,
        max_sge: u32,
        limit: u32,
        ib: SrqPtr,
        user: Option<Queue>,
    ) -> Result<Arc<Srq>> {
        if max_wr == 0 || max_wr > MAX_QP_WR || max_sge > MAX_SGE || limit > max_wr {
            return Err(EINVAL);
        }
        let ring = WrRing::new(max_wr, max_sge.max(1), 0)?;
        Arc::pin_init(
            pin_init!(Srq {
                ring <- new_irq_spinlock!(ring, "rrxe_srq"),
                max_wr,
                max_sge,
                limit: AtomicU32::new(limit),
                ib,
                user,
                error: AtomicBool::new(false),
            }),
            GFP_KERNEL,
        )
    }

    /// (max_wr, max_sge, armed limit).
    pub(crate) fn attrs(&self) -> (u32, u32, u32) {
        (
            self.max_wr,
            self.max_sge,
            self.limit.load(Ordering::Acquire),
        )
    }

    /// Arms the limit event (0 disarms).
    pub(crate) fn set_limit(&self, limit: u32) -> Result {
        if limit > self.max_wr {
            return Err(EINVAL);
        }
        self.limit.store(limit, Ordering::Release);
        Ok(())
    }

    /// Whether the kernel may take receive WQEs for this SRQ from a WR list: not for a user
    /// SRQ, whose list comes from `ib_uverbs_post_srq_recv` with addresses the process chose
    /// (see [`crate::qp::Qp::accept_kernel_wrs`]). Refusals are counted in `counters`.
    pub(crate) fn accept_kernel_wrs(&self, counters: &Counters) -> Result {
        if self.user.is_some() {
            counters.inc(Counter::UserWrRefused);
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Posts a receive WQE (kernel consumers).
    pub(crate) fn post_recv(&self, wr: RecvWr, sges: &[Sge]) -> Result {
        if self.user.is_some() {
            return Err(EINVAL);
        }
        if sges.len() > self.max_sge as usize {
            return Err(EINVAL);
        }
        let mut r = self.ring.lock();
        if r.full() {
            return Err(ENOMEM);
        }
        r.push(wr, sges, None)
    }

    /// Moves the next WQE into a QP's claim slot (a QP's engine run: process context or
    /// softirq; the caller holds the QP's `claim` lock, so interrupts are off). Events to
    /// raise are recorded in `events`, for the caller to dispatch once that lock is
    /// released ([`Srq::raise`]; rdma_rxe also calls the event handler outside its queue
    /// lock).
    pub(crate) fn take_into(
        &self,
        dst: &mut Option<Claim>,
        events: &mut SrqEvents,
    ) -> Option<RecvWr> {
        if let Some(u) = &self.user {
            if !self.error.load(Ordering::Acquire)
                && crate::qp::pull_recv_queue(u, &self.ring, self.max_sge).is_err()
            {
                self.error.store(true, Ordering::Release);
                u.error_flag().store(1, Ordering::Release);
                events.error = true;
            }
        }
        let (wr, left) = self.ring.lock().pop_into(dst)?;
        let lim = self.limit.load(Ordering::Acquire);
        if lim != 0
            && left < lim
            && self
                .limit
                .compare_exchange(lim, 0, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            events.limit_reached = true;
        }
        Some(wr)
    }

    /// Dispatches the events [`Srq::take_into`] recorded (no interrupts-off lock held).
    pub(crate) fn raise(&self, events: SrqEvents) {
        if events.error {
            self.ib.error();
        }
        if events.limit_reached {
            self.ib.limit_reached();
        }
    }
}

/// SRQ events found while a WQE was taken, raised after the caller's locks are released.
#[derive(Clone, Copy, Default)]
pub(crate) struct SrqEvents {
    /// The shared queue was found corrupt (IB_EVENT_SRQ_ERR).
    pub(crate) error: bool,
    /// Fewer WQEs than the armed limit remain (IB_EVENT_SRQ_LIMIT_REACHED).
    pub(crate) limit_reached: bool,
}
