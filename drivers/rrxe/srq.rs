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
use crate::qp::{
    pull_one_recv, Claim, RecvPullBuf, RecvWr, Sge, WrRing, DEV_CAPS, MAX_QP_WR, MAX_SGE,
};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

/// User SRQs: the most WQEs a QP's run copies from the shared queue into the ring before
/// it takes one, so that the run (and, for an XRC SRQ, the device's XRC table lock, held
/// with interrupts off) is not held for as many WQEs as the process posted at once. Each
/// take pulls again, so the ring never runs dry while the process has WQEs posted.
pub(crate) const SRQ_PULL_BATCH: u32 = 16;

/// WQEs a resize moves from the old ring to the new one per hold of the SRQ's lock
/// (interrupts off): about a kilobyte of copy, however large the SRQ.
const SRQ_MOVE_BATCH: u32 = 16;

/// What the SRQ's `ring` lock guards.
struct SrqRing {
    /// The posted WQEs (a resize replaces the ring).
    wrs: WrRing<RecvWr>,
    /// While a resize runs: the old ring's WQEs not yet moved to the front of `wrs`. They
    /// are older than every WQE of `wrs`, so they are taken first.
    old: Option<WrRing<RecvWr>>,
    /// User SRQs: the queue shared with the process (a resize replaces it once every WQE
    /// posted in it was read).
    user: Option<Queue>,
}

impl SrqRing {
    /// WQEs posted and not yet taken (pulled ones only, for a user SRQ).
    fn posted(&self) -> u32 {
        self.wrs
            .len()
            .saturating_add(self.old.as_ref().map_or(0, |o| o.len()))
    }

    /// Whether no WQE may be added: the posted ones fill the SRQ's (current) size.
    fn full(&self) -> bool {
        self.posted() >= self.wrs.cap()
    }

    /// User SRQs: WQEs posted in the shared queue and not yet pulled (a valid producer
    /// index only: `None` when it is more than a queue apart, corruption).
    fn unpulled(&self) -> Option<u32> {
        let Some(u) = &self.user else { return Some(0) };
        let n = u
            .producer()
            .load(Ordering::Acquire)
            .wrapping_sub(self.wrs.user_consumer());
        (n <= u.slots()).then_some(n)
    }
}

/// A shared receive queue.
#[pin_data]
pub(crate) struct Srq {
    /// The receive WQEs, a resize's old ring, and a user SRQ's shared queue with its
    /// consumer index. IRQs off, each section one WQE: kernel `post_recv` (any context),
    /// `pull` (a QP's engine run, process context or softirq, with no interrupts-off lock
    /// of the QP held; for an XRC SRQ nested in the device's XRC table lock), `take_into`
    /// (the same, nested in that QP's `claim` lock); `resize` (process context): the ring
    /// swap, then up to [`SRQ_MOVE_BATCH`] WQEs moved or one user WQE pulled per hold.
    /// Innermost.
    #[pin]
    ring: IrqSpinLock<SrqRing>,
    /// Serialises resizes (process context; the uverbs layer may run two modifies of one
    /// SRQ at once). Taken outside `ring`.
    #[pin]
    resizing: Mutex<()>,
    /// The SRQ's size (a resize changes it).
    max_wr: AtomicU32,
    max_sge: u32,
    /// Armed limit (0: disarmed): fire the event when fewer WQEs than this are posted.
    limit: AtomicU32,
    ib: SrqPtr,
    /// A user SRQ (its WQEs come through the shared queue only).
    is_user: bool,
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
    /// Waits for completion handler calls queued on an XRC SRQ's CQ (process context).
    pub(crate) fn flush_cq_events(&self) {
        if let Some(x) = &self.xrc {
            x.cq.flush_events();
        }
    }

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
        let wrs = WrRing::new(max_wr, max_sge.max(1), 0)?;
        let is_user = user.is_some();
        Arc::pin_init(
            pin_init!(Srq {
                ring <- new_irq_spinlock!(SrqRing { wrs, old: None, user }, "rrxe_srq"),
                resizing <- kernel::new_mutex!((), "rrxe_srq_resize"),
                max_wr: AtomicU32::new(max_wr),
                max_sge,
                limit: AtomicU32::new(limit),
                ib,
                is_user,
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
            self.max_wr.load(Ordering::Acquire),
            self.max_sge,
            self.limit.load(Ordering::Acquire),
        )
    }

    /// Arms the limit event (0 disarms).
    pub(crate) fn set_limit(&self, limit: u32) -> Result {
        if limit > self.max_wr.load(Ordering::Acquire) {
            return Err(EINVAL);
        }
        self.limit.store(limit, Ordering::Release);
        Ok(())
    }

    /// Whether the kernel may take receive WQEs for this SRQ from a WR list: not for a user
    /// SRQ, whose list comes from `ib_uverbs_post_srq_recv` with addresses the process chose
    /// (see [`crate::qp::Qp::accept_kernel_wrs`]). Refusals are counted in `counters`.
    pub(crate) fn accept_kernel_wrs(&self, counters: &Counters) -> Result {
        if self.is_user {
            counters.inc(Counter::UserWrRefused);
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Posts a receive WQE (kernel consumers).
    pub(crate) fn post_recv(&self, wr: RecvWr, sges: &[Sge]) -> Result {
        if self.is_user {
            return Err(EINVAL);
        }
        if sges.len() > self.max_sge as usize {
            return Err(EINVAL);
        }
        let mut r = self.ring.lock();
        if r.full() {
            return Err(ENOMEM);
        }
        r.wrs.push(wr, sges, None)
    }

    /// User SRQs: copies up to [`SRQ_PULL_BATCH`] new WQEs of the shared queue into the
    /// ring (a QP's engine run, before it takes a WQE; no interrupts-off lock of the QP
    /// held). A corrupt queue puts the SRQ in error (recorded in `events`).
    pub(crate) fn pull(&self, events: &mut SrqEvents) {
        if !self.is_user || self.error.load(Ordering::Acquire) {
            return;
        }
        // The cheap check first: a pull zeroes about a kilobyte of stack for its copies.
        let may = {
            let r = self.ring.lock();
            !r.full() && r.unpulled() != Some(0)
        };
        if may {
            self.pull_entries(SRQ_PULL_BATCH, events);
        }
    }

    /// Pulls up to `batch` user WQEs, one per hold of `ring`.
    #[inline(never)]
    fn pull_entries(&self, batch: u32, events: &mut SrqEvents) {
        let mut buf = RecvPullBuf::new();
        for _ in 0..batch {
            let mut g = self.ring.lock();
            let st = &mut *g;
            let Some(q) = &st.user else { return };
            if st.full() {
                return;
            }
            match pull_one_recv(q, &mut st.wrs, self.max_sge, &mut buf) {
                Ok(true) => {}
                Ok(false) => return,
                Err(()) => {
                    q.error_flag().store(1, Ordering::Release);
                    self.error.store(true, Ordering::Release);
                    events.error = true;
                    return;
                }
            }
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
            let mut g = self.ring.lock();
            let st = &mut *g;
            // A resize's old ring holds the oldest WQEs.
            let from_old = st.old.as_mut().and_then(|o| o.pop_into(dst));
            let (wr, _) = match from_old {
                Some(x) => x,
                None => st.wrs.pop_into(dst)?,
            };
            // Posted and not yet pulled count as posted for the limit (a valid producer
            // index only: a corrupt one is found by the next pull).
            (wr, st.posted().saturating_add(st.unpulled().unwrap_or(0)))
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

    /// Resizes the SRQ to at least `max_wr` WQEs (process context); returns its new size.
    /// As rdma_rxe (`rxe_srq_chk_attr`, `rxe_queue_resize`): `EINVAL` above the device's
    /// `max_srq_wr`, for 0, below an armed limit, in error, or when the WQEs posted do not
    /// fit. The posted WQEs stay posted, in order: the new ring takes over at once with the
    /// old ring's WQEs taken first, and they move to its front in batches of
    /// [`SRQ_MOVE_BATCH`], the lock released in between (rdma_rxe copies them all under its
    /// locks). A user SRQ gets a new shared queue, mapped through `udata`, whose layout is
    /// written to the address the command names (`rrxe_modify_srq_cmd`): the WQEs posted
    /// in the old queue are read (checked and copied) before the new one replaces it, and
    /// the new one starts empty. The process posts nothing during the call (the provider
    /// holds its SRQ lock): WQEs written into the old queue meanwhile may not be read.
    /// `new_limit`: the call also sets the limit (checked by the caller), so the armed one
    /// does not bound the size.
    pub(crate) fn resize(
        &self,
        max_wr: u32,
        new_limit: bool,
        udata: &mut Udata<'_>,
    ) -> Result<u32> {
        if self.error.load(Ordering::Acquire) {
            return Err(EINVAL);
        }
        let slots = crate::proto::caps::check_srq_caps(max_wr, self.max_sge, &DEV_CAPS)
            .map_err(|_| EINVAL)?;
        let lim = self.limit.load(Ordering::Acquire);
        if !new_limit && lim != 0 && max_wr < lim {
            return Err(EINVAL);
        }
        let _serial = self.resizing.lock();
        let mut wrs = WrRing::new(slots, self.max_sge.max(1), 0)?;
        let mut new_user = None;
        if self.is_user {
            let cmd: b::rrxe_modify_srq_cmd = udata.request()?;
            // A provider that does not know where to learn the new queue cannot use it.
            if cmd.queue_info_addr == 0 {
                return Err(crate::glue::eopnotsupp());
            }
            let uctx = UContext::from_udata(udata).ok_or(EINVAL)?;
            let shape = crate::proto::caps::user_srq_shape(
                slots,
                self.max_sge,
                &DEV_CAPS,
                &crate::uwqe::FORMAT,
            )
            .map_err(|_| EINVAL)?;
            let q = Queue::new(shape.log2_slots, shape.slot_size, Some(&uctx))?;
            // Before anything changes: a refused copy leaves the SRQ as it was.
            udata.respond_at(cmd.queue_info_addr, &q.info())?;
            new_user = Some(q);
        }
        // The swap. `wrs` and `new_user`, if refused, are dropped after the guard.
        let (pulls, stale) = {
            let mut g = self.ring.lock();
            let st = &mut *g;
            if st.old.as_ref().is_some_and(|o| o.len() != 0) {
                return Err(EBUSY);
            }
            let unpulled = st.unpulled().ok_or(EINVAL)?;
            if st.posted().saturating_add(unpulled) > slots {
                return Err(EINVAL);
            }
            wrs.set_user_consumer(st.wrs.user_consumer());
            let old = core::mem::replace(&mut st.wrs, wrs);
            // An earlier resize's old ring left behind (empty, checked above) is freed
            // below, outside the lock.
            (unpulled, st.old.replace(old))
        };
        drop(stale);
        // The old ring's WQEs to the front of the new one, newest first.
        loop {
            let mut g = self.ring.lock();
            let st = &mut *g;
            let Some(old) = st.old.as_mut() else { break };
            let mut n = 0;
            while n < SRQ_MOVE_BATCH && old.move_last_to_front(&mut st.wrs) {
                n += 1;
            }
            // None moved: the old ring is empty (taken or moved); stop.
            if n == 0 {
                break;
            }
        }
        // A user SRQ: the WQEs still in the old shared queue, one per hold.
        if self.is_user && pulls > 0 {
            let mut ev = SrqEvents::default();
            self.pull_entries(pulls, &mut ev);
            self.raise(ev);
        }
        let (old_ring, old_user) = {
            let mut g = self.ring.lock();
            let st = &mut *g;
            let old_ring = if st.old.as_ref().is_some_and(|o| o.len() == 0) {
                st.old.take()
            } else {
                None
            };
            let old_user = match new_user {
                Some(q) => {
                    if self.error.load(Ordering::Acquire) {
                        q.error_flag().store(1, Ordering::Release);
                    }
                    st.wrs.set_user_consumer(0);
                    st.user.replace(q)
                }
                None => None,
            };
            self.max_wr.store(slots, Ordering::Release);
            (old_ring, old_user)
        };
        // Freed (or their mmap entry removed) outside the lock.
        drop(old_ring);
        drop(old_user);
        Ok(slots)
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
    // An XRC SRQ's receive completions go to its own CQ (see Qp::flush_cq_events).
    obj.data().srq.flush_cq_events();
}

/// `modify_srq`: resizes (IB_SRQ_MAX_WR, [`Srq::resize`]) and arms the limit
/// (IB_SRQ_LIMIT). As rdma_rxe, every attribute is checked before any is applied: a limit
/// above the SRQ's size (the new one when both are given) is refused with `EINVAL`.
pub(crate) fn modify(
    obj: &Obj<'_, b::ib_srq>,
    attr: &mut b::ib_srq_attr,
    mask: b::ib_srq_attr_mask,
    udata: &mut Udata<'_>,
) -> Result {
    let h = obj.data();
    let resize = mask & b::ib_srq_attr_mask_IB_SRQ_MAX_WR != 0;
    let limit = mask & b::ib_srq_attr_mask_IB_SRQ_LIMIT != 0;
    if limit {
        let size = if resize {
            crate::proto::caps::check_srq_caps(attr.max_wr, 0, &DEV_CAPS).map_err(|_| EINVAL)?
        } else {
            h.srq.attrs().0
        };
        if attr.srq_limit > size {
            return Err(EINVAL);
        }
    }
    if resize {
        attr.max_wr = h.srq.resize(attr.max_wr, limit, udata)?;
    }
    if limit {
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
