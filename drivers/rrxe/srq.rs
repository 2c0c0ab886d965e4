// SPDX-License-Identifier: GPL-2.0
//! Shared receive queues: receive WQEs several QPs take from, with the limit event; XRC
//! SRQs (an XRC domain, a CQ and a number XRC target QPs find them by, see [`crate::xrc`]).

use crate::counters::{Counter, Counters};
use crate::glue::bindings as b;
use crate::glue::obj::{Created, NewObj, Obj};
use crate::glue::sync::{new_irq_spinlock, IrqSpinLock};
use crate::glue::wr::WrList;
use crate::glue::{CqPtr, IbDev, Queue, SrqPtr, UContext, Udata, XrcdId};
use crate::limits;
use crate::qp::{Claim, RecvWr, Sge, WrRing, DEV_CAPS, MAX_QP_WR, MAX_SGE};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;

/// User SRQs: the most WQEs a QP's run copies from the shared queue into the ring before
/// it takes one, so that the run (and, for an XRC SRQ, the device's XRC table lock, held
/// with interrupts off) is not held for as many WQEs as the process posted at once. Each
/// take pulls again, so the ring never runs dry while the process has WQEs posted.
pub(crate) const SRQ_PULL_BATCH: u32 = 16;

/// A shared receive queue.
#[pin_data]
pub(crate) struct Srq {
    /// The receive WQEs and the user queue's consumer index. IRQs off, each section one
    /// WQE: kernel `post_recv` (any context), `pull` (a QP's engine run, process context or
    /// softirq, with no interrupts-off lock of the QP held; for an XRC SRQ nested in the
    /// device's XRC table lock) and `take_into` (the same, nested in that QP's `claim`
    /// lock). Innermost.
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
    /// XRC SRQs: their domain, CQ and PD.
    xrc: Option<XrcPart>,
}

/// What an XRC SRQ has besides its queue.
pub(crate) struct XrcPart {
    /// The XRC domain.
    pub(crate) xrcd: XrcdId,
    /// The CQ its receive completions go to (the core keeps it while the SRQ exists; XRC
    /// target QPs reach it only through the device's XRC table, see [`crate::xrc`]).
    pub(crate) cq: CqPtr,
    /// The PD identity whose keys its WQEs and the XRC requests it receives use.
    pub(crate) pd: usize,
}

impl Srq {
    /// A new SRQ of `max_wr` WQEs with `max_sge` SGEs each.
    pub(crate) fn new(
        max_wr: u32,
        max_sge: u32,
        limit: u32,
        ib: SrqPtr,
        user: Option<Queue>,
        xrc: Option<XrcPart>,
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
                xrc,
            }),
            GFP_KERNEL,
        )
    }

    /// The XRC domain of an XRC SRQ.
    pub(crate) fn xrc_domain(&self) -> Option<XrcdId> {
        self.xrc.as_ref().map(|x| x.xrcd)
    }

    /// An XRC SRQ's CQ and PD.
    pub(crate) fn xrc(&self) -> Option<&XrcPart> {
        self.xrc.as_ref()
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

    /// User SRQs: copies up to [`SRQ_PULL_BATCH`] new WQEs of the shared queue into the
    /// ring (a QP's engine run, before it takes a WQE; no interrupts-off lock of the QP
    /// held). A corrupt queue puts the SRQ in error (recorded in `events`).
    pub(crate) fn pull(&self, events: &mut SrqEvents) {
        let Some(u) = &self.user else { return };
        if !self.error.load(Ordering::Acquire)
            && crate::qp::pull_recv_queue(u, &self.ring, self.max_sge, SRQ_PULL_BATCH).is_err()
        {
            self.error.store(true, Ordering::Release);
            u.error_flag().store(1, Ordering::Release);
            events.error = true;
        }
    }

    /// Moves the next WQE into a QP's claim slot (a QP's engine run: process context or
    /// softirq; the caller holds the QP's `claim` lock, so interrupts are off: one WQE's
    /// copy, the user queue was pulled before, [`Srq::pull`]). Events to raise are recorded
    /// in `events`, for the caller to dispatch once that lock is released ([`Srq::raise`];
    /// rdma_rxe also calls the event handler outside its queue lock).
    pub(crate) fn take_into(
        &self,
        dst: &mut Option<Claim>,
        events: &mut SrqEvents,
    ) -> Option<RecvWr> {
        let (wr, left) = {
            let mut r = self.ring.lock();
            let (wr, left) = r.pop_into(dst)?;
            // Posted and not yet pulled count as posted for the limit (a valid producer
            // index only: a corrupt one is found by the next pull).
            let unpulled = self.user.as_ref().map_or(0, |u| {
                let n = u
                    .producer()
                    .load(Ordering::Acquire)
                    .wrapping_sub(r.user_consumer());
                if n <= u.slots() {
                    n
                } else {
                    0
                }
            });
            (wr, left.saturating_add(unpulled))
        };
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

/// What an `ib_srq` carries for us.
pub(crate) struct SrqHandle {
    /// The SRQ (QPs using it hold references too).
    pub(crate) srq: Arc<Srq>,
    /// An XRC SRQ's number in the device's XRC table.
    pub(crate) xrc_srqn: Option<u32>,
}

/// `create_srq` under one unit of the device's SRQ limit: a basic or XRC SRQ whose size
/// the device rounds up (`init.attr.max_wr` is updated); a user SRQ's queue layout goes
/// back in the response. `xrc`: an XRC SRQ's domain and CQ, which it must have.
pub(crate) fn create<'a>(
    mut obj: NewObj<'a, b::ib_srq>,
    init: &mut b::ib_srq_init_attr,
    xrc: Option<(XrcdId, Option<CqPtr>)>,
    udata: &mut Udata<'_>,
) -> Result<Created<'a, b::ib_srq>> {
    let dev = obj.dev();
    dev.data().limits.counted(limits::Obj::Srq, || {
        let xrc = match (init.srq_type, xrc) {
            (b::ib_srq_type_IB_SRQT_BASIC, None) => None,
            (b::ib_srq_type_IB_SRQT_XRC, Some((xrcd, Some(cq)))) => Some(XrcPart {
                xrcd,
                cq,
                pd: obj.ib().pd as usize,
            }),
            (b::ib_srq_type_IB_SRQT_XRC, _) => return Err(EINVAL),
            _ => return Err(crate::glue::eopnotsupp()),
        };
        let a = &mut init.attr;
        // Range first: max_wr comes from the process (next_power_of_two of a value over
        // 2^31 overflows).
        let slots = crate::proto::caps::check_srq_caps(a.max_wr, a.max_sge, &DEV_CAPS)
            .map_err(|_| EINVAL)?;
        let mut resp = b::rrxe_create_srq_resp::default();
        let mut user = None;
        if udata.is_user() {
            let uctx = UContext::from_udata(udata).ok_or(EINVAL)?;
            let shape = crate::proto::caps::user_srq_shape(
                a.max_wr,
                a.max_sge,
                &DEV_CAPS,
                &crate::uwqe::FORMAT,
            )
            .map_err(|_| EINVAL)?;
            let q = Queue::new(shape.log2_slots, shape.slot_size, Some(&uctx))?;
            resp.rq = q.info();
            user = Some(q);
        }
        a.max_wr = slots;
        let is_xrc = xrc.is_some();
        let srq = Srq::new(slots, a.max_sge, a.srq_limit, obj.srq_ptr(), user, xrc)?;
        if udata.is_user() {
            udata.respond(&resp)?;
        }
        // An XRC SRQ is found by number from here on: last, once nothing can fail.
        let xrc_srqn = if is_xrc {
            let n = dev.data().xrc_srqs.insert(srq.clone())?;
            obj.set_xrc_srq_num(n);
            Some(n)
        } else {
            None
        };
        // Plain data, initialised by value: nothing can fail from here on.
        Ok(obj.init_value(SrqHandle { srq, xrc_srqn }))
    })
}

/// `destroy_srq`, before the handle goes: an XRC SRQ leaves the device's XRC table, so no
/// target QP reaches it (or its CQ) any more.
pub(crate) fn shut_down(obj: &Obj<'_, b::ib_srq>) {
    if let Some(n) = obj.data().xrc_srqn {
        // Dropped here, outside the table's lock.
        drop(obj.dev().data().xrc_srqs.remove(n));
    }
}

/// `modify_srq`: arms the limit (resizing is not supported).
pub(crate) fn modify(h: &SrqHandle, attr: &b::ib_srq_attr, mask: b::ib_srq_attr_mask) -> Result {
    if mask & b::ib_srq_attr_mask_IB_SRQ_MAX_WR != 0 {
        return Err(crate::glue::eopnotsupp());
    }
    if mask & b::ib_srq_attr_mask_IB_SRQ_LIMIT != 0 {
        return h.srq.set_limit(attr.srq_limit);
    }
    Ok(())
}

/// `query_srq`.
pub(crate) fn query(h: &SrqHandle, attr: &mut b::ib_srq_attr) {
    let (max_wr, max_sge, limit) = h.srq.attrs();
    attr.max_wr = max_wr;
    attr.max_sge = max_sge;
    attr.srq_limit = limit;
}

/// `destroy_srq`, once the handle is gone: gives back the unit of the device's limit.
pub(crate) fn destroyed(dev: &IbDev) {
    dev.data().limits.put(limits::Obj::Srq);
}

/// `post_srq_recv`: a kernel SRQ's list WR by WR; a user SRQ's list is refused before any
/// of it is read.
pub(crate) fn post_recv(obj: &Obj<'_, b::ib_srq>, list: WrList<'_, b::ib_recv_wr>) -> Result {
    let h = obj.data();
    if list.is_empty() {
        return Ok(());
    }
    if let Err(e) = h.srq.accept_kernel_wrs(&obj.dev().data().counters) {
        return Err(list.refuse(e));
    }
    let (_, max_sge, _) = h.srq.attrs();
    crate::qp::post_recv_list(list, max_sge, |w, s| h.srq.post_recv(w, s))
}
