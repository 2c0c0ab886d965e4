// SPDX-License-Identifier: GPL-2.0
//! Completion queues.
//!
//! A CQ is a [`Queue`] ring the driver produces into. For a user CQ the ring is mapped into
//! the process, which polls it without system calls and publishes its consumer index; for a
//! kernel CQ, `poll_cq` consumes it. A completion is encoded into a slot as plain 64-bit
//! words: `ib_uverbs_wc` for user CQs (the ABI), a driver-private layout for kernel CQs
//! (which also carries the `ib_qp` pointer and the RoCE source MAC).

use crate::glue::bindings as b;
use crate::glue::obj::{Created, NewObj, Obj};
use crate::glue::sync::{new_irq_spinlock, IrqSpinLock};
use crate::glue::{CompVector, CqPtr, Queue, UContext, Udata};
use crate::ib::{WcOpcode, WcStatus};
use crate::limits;
use kernel::prelude::*;
use kernel::sync::Mutex;

/// Largest number of CQ entries.
pub(crate) const MAX_CQE: u32 = 1 << 16;
/// Completions a resize moves from the old ring to the new one per hold of the CQ's lock
/// (interrupts off): a few kilobytes of copy, however large the CQ.
const CQ_MOVE_BATCH: u32 = 32;
/// Completions `poll` takes per hold of the CQ's lock, however many the consumer asks for.
const CQ_POLL_BATCH: usize = 16;
const USER_SLOT: u32 = 64;
const KERNEL_SLOT: u32 = 128;

/// Notification request flags (IB_CQ_SOLICITED, IB_CQ_NEXT_COMP).
pub(crate) const NOTIFY_SOLICITED: u32 = 1;
/// See [`NOTIFY_SOLICITED`].
pub(crate) const NOTIFY_NEXT: u32 = 2;

/// One work completion, as the datapath reports it.
#[derive(Clone, Copy, Default)]
pub(crate) struct Completion {
    /// The work request's id.
    pub(crate) wr_id: u64,
    /// Status.
    pub(crate) status: WcStatus,
    /// What it completes.
    pub(crate) opcode: WcOpcode,
    /// Bytes transferred (receives).
    pub(crate) byte_len: u32,
    /// Immediate data (wire byte order, as a native u32 of the wire bytes) or invalidated rkey.
    pub(crate) ex: u32,
    /// Local QP number.
    pub(crate) qp_num: u32,
    /// Source QP (UD receives).
    pub(crate) src_qp: u32,
    /// `ib_wc_flags`.
    pub(crate) wc_flags: u32,
    /// Kernel CQs: the `ib_qp` the completion belongs to (as an address).
    pub(crate) qp_addr: u64,
    /// Source MAC (UD receives on kernel CQs).
    pub(crate) smac: [u8; 6],
    /// `rdma_network_type` of a UD receive (kernel CQs).
    pub(crate) network_hdr_type: u8,
}

impl Completion {
    fn encode_user(&self) -> [u64; 6] {
        [
            self.wr_id,
            u64::from(self.status as u32) | u64::from(self.opcode as u32) << 32,
            u64::from(self.byte_len) << 32, // vendor_err = 0
            u64::from(self.ex) | u64::from(self.qp_num) << 32,
            u64::from(self.src_qp) | u64::from(self.wc_flags) << 32,
            1u64 << 48, // pkey_index 0, slid 0, sl 0, dlid_path_bits 0, port_num 1
        ]
    }

    fn encode_kernel(&self) -> [u64; 9] {
        let mut mac = [0u8; 8];
        mac[..6].copy_from_slice(&self.smac);
        let u = self.encode_user();
        [
            u[0],
            u[1],
            u[2],
            u[3],
            u[4],
            u[5],
            self.qp_addr,
            u64::from_le_bytes(mac),
            u64::from(self.network_hdr_type),
        ]
    }
}

struct CqState {
    /// The ring (replaced by a resize).
    queue: Queue,
    /// Our producer index (the one in the queue header is only published).
    producer: u32,
    /// Armed notification flags.
    notify: u32,
    /// Set once the CQ overflowed: it reports errors from then on.
    overflowed: bool,
    /// While a resize moves the pending completions into the new ring (`queue`): the old
    /// ring and what is left to move. New completions go into `queue` behind them, and its
    /// producer index is published only once the move is over.
    moving: Option<Moving>,
}

/// The completions a resize still moves: `old` slots `from + done .. from + count` go to
/// the new ring's slots `done .. count`.
struct Moving {
    old: Queue,
    from: u32,
    count: u32,
    done: u32,
}

/// What posting a completion led to.
pub(crate) enum Posted {
    /// Queued; call the completion handler if `notify`.
    Ok {
        /// The consumer asked to be told.
        notify: bool,
    },
    /// The CQ is full (or its consumer index is corrupt): the completion was lost and the
    /// CQ is in error; report IB_EVENT_CQ_ERR.
    Overflow,
}

/// A completion queue's driver state.
#[pin_data]
pub(crate) struct Cq {
    /// The ring, producer index, armed flags, overflow and a resize's move. IRQs off, each
    /// section a few slots at most: `post` (one CQE; a QP's engine run, process context or
    /// softirq, with no QP ring lock held), `poll` (up to [`CQ_POLL_BATCH`] CQEs) and
    /// `req_notify` (kernel consumers, any context), `resize` (up to [`CQ_MOVE_BATCH`]
    /// CQEs) and `queue_info` (process context). Innermost: no other lock is taken inside
    /// it, and the completion handler and the CQ error event are dispatched after it is
    /// released.
    #[pin]
    state: IrqSpinLock<CqState>,
    /// Serialises resizes (process context; the uverbs layer may run two resizes of one CQ
    /// at once: it takes the CQ for reading only). Taken outside `state`.
    #[pin]
    resizing: Mutex<()>,
    user: bool,
    /// Where the completion handler runs (the CQ's `comp_vector`).
    vector: CompVector,
}

impl Cq {
    /// A CQ for at least `cqe` entries; mapped through `uctx` for a user CQ. Returns the
    /// initialiser and the actual number of entries.
    pub(crate) fn new(
        cqe: u32,
        uctx: Option<&UContext>,
        vector: CompVector,
    ) -> Result<(impl PinInit<Self, Error>, u32)> {
        if cqe == 0 || cqe > MAX_CQE {
            return Err(EINVAL);
        }
        let user = uctx.is_some();
        let (queue, slots) = Self::ring(cqe, user, uctx)?;
        let init = try_pin_init!(Cq {
            state <- new_irq_spinlock!(
                CqState {
                    queue,
                    producer: 0,
                    notify: 0,
                    overflowed: false,
                    moving: None,
                },
                "rrxe_cq"
            ),
            resizing <- kernel::new_mutex!((), "rrxe_cq_resize"),
            user,
            vector,
        });
        Ok((init, slots))
    }

    fn ring(cqe: u32, user: bool, uctx: Option<&UContext>) -> Result<(Queue, u32)> {
        let slots = crate::proto::caps::cq_slots(cqe, &crate::qp::DEV_CAPS).map_err(|_| EINVAL)?;
        let slot = if user { USER_SLOT } else { KERNEL_SLOT };
        Ok((Queue::new(slots.trailing_zeros(), slot, uctx)?, slots))
    }

    /// The ring's layout, for the create and resize responses.
    pub(crate) fn queue_info(&self) -> crate::glue::bindings::rrxe_queue_info {
        self.state.lock().queue.info()
    }

    /// Replaces the ring by one of at least `cqe` entries, moving the completions not yet
    /// consumed to its start. `EINVAL` if they do not fit (or the size is out of range).
    /// Returns the new number of entries, after handing it to `publish` under the CQ's lock
    /// (resizes of one CQ run one at a time, `resizing`, and publish in that order). A user
    /// CQ's consumer must not poll during the call (the provider holds its CQ lock) and
    /// maps the new ring afterwards; a kernel CQ's `poll` finds nothing until the call
    /// ends.
    ///
    /// The interrupts-off sections are short whatever the CQ's size: the new ring takes
    /// over at once (completions posted meanwhile go in behind the pending ones), and the
    /// pending completions move over in batches of [`CQ_MOVE_BATCH`], the lock released in
    /// between. (rdma_rxe's `rxe_queue_resize` copies them all under its locks.)
    pub(crate) fn resize(
        &self,
        cqe: u32,
        uctx: Option<&UContext>,
        publish: impl FnOnce(u32),
    ) -> Result<u32> {
        if cqe == 0 || cqe > MAX_CQE {
            return Err(EINVAL);
        }
        let _serial = self.resizing.lock();
        let (new, slots) = Self::ring(cqe, self.user, uctx)?;
        {
            let mut st = self.state.lock();
            let cons = st
                .queue
                .consumer()
                .load(core::sync::atomic::Ordering::Acquire);
            // Untrusted for a user CQ: more than a full ring apart is corruption.
            let pending = st.producer.wrapping_sub(cons);
            if pending > st.queue.slots() || pending > slots {
                // `new` is dropped after the guard, outside the lock.
                return Err(EINVAL);
            }
            let old = core::mem::replace(&mut st.queue, new);
            st.moving = Some(Moving {
                old,
                from: cons,
                count: pending,
                done: 0,
            });
            st.producer = pending;
        }
        loop {
            let mut guard = self.state.lock();
            let st = &mut *guard;
            let Some(m) = st.moving.as_mut() else {
                break;
            };
            let n = (m.count - m.done).min(CQ_MOVE_BATCH);
            if n == 0 {
                break;
            }
            let mut w = [0u64; 16];
            let words = m.old.slot_words().min(w.len());
            for i in m.done..m.done + n {
                m.old.read_slot(m.from.wrapping_add(i), &mut w[..words]);
                st.queue.write_slot(i, &w[..words]);
            }
            m.done += n;
        }
        let old = {
            let mut st = self.state.lock();
            st.queue
                .producer()
                .store(st.producer, core::sync::atomic::Ordering::Release);
            publish(slots);
            st.moving.take()
        };
        // Freed (or its mmap entry removed) outside the lock.
        drop(old);
        Ok(slots)
    }

    /// Adds a completion. `solicited`: the completion of a solicited receive.
    pub(crate) fn post(&self, c: &Completion, solicited: bool) -> Posted {
        let mut st = self.state.lock();
        if st.overflowed {
            return Posted::Overflow;
        }
        // Untrusted for a user CQ: bound the consumer index by what we produced.
        let cons = st
            .queue
            .consumer()
            .load(core::sync::atomic::Ordering::Acquire);
        let used = st.producer.wrapping_sub(cons);
        if used >= st.queue.slots() {
            st.overflowed = true;
            st.queue
                .error_flag()
                .store(1, core::sync::atomic::Ordering::Release);
            return Posted::Overflow;
        }
        if self.user {
            st.queue.write_slot(st.producer, &c.encode_user());
        } else {
            st.queue.write_slot(st.producer, &c.encode_kernel());
        }
        st.producer = st.producer.wrapping_add(1);
        // During a resize the new ring's producer index waits for the move (`resize`).
        if st.moving.is_none() {
            st.queue
                .producer()
                .store(st.producer, core::sync::atomic::Ordering::Release);
        }
        // Armed for solicited completions, the consumer is also woken by an unsuccessful one
        // (IBTA 11.4.2.2): a QP that fails must not leave it asleep.
        let wakes_solicited = solicited || c.status != WcStatus::Success;
        let notify =
            st.notify & NOTIFY_NEXT != 0 || (wakes_solicited && st.notify & NOTIFY_SOLICITED != 0);
        if notify {
            st.notify = 0;
        }
        Posted::Ok { notify }
    }

    /// Kernel CQs: takes up to `max` completions, passing each slot to `f`, in batches of
    /// [`CQ_POLL_BATCH`] per hold of the lock; none while a resize moves them. `EINVAL` for a
    /// user CQ: its ring holds the user ABI's layout, not the kernel one `f` reads, and its
    /// consumer index belongs to the process. The uverbs layer never gets here (rrxe does
    /// not offer the POLL_CQ command: the core answers EOPNOTSUPP), and this refusal does
    /// not rely on that.
    pub(crate) fn poll(&self, max: usize, mut f: impl FnMut(usize, &[u64; 9])) -> Result<usize> {
        if self.user {
            return Err(EINVAL);
        }
        let mut n = 0;
        while n < max {
            let st = self.state.lock();
            if st.moving.is_some() {
                break;
            }
            let mut cons = st
                .queue
                .consumer()
                .load(core::sync::atomic::Ordering::Relaxed);
            let end = n + (max - n).min(CQ_POLL_BATCH);
            while n < end && cons != st.producer {
                let mut w = [0u64; 9];
                st.queue.read_slot(cons, &mut w);
                f(n, &w);
                cons = cons.wrapping_add(1);
                n += 1;
            }
            st.queue
                .consumer()
                .store(cons, core::sync::atomic::Ordering::Release);
            if n < end {
                break;
            }
        }
        Ok(n)
    }

    /// Arms notification; returns whether completions are already waiting (for
    /// IB_CQ_REPORT_MISSED_EVENTS).
    pub(crate) fn req_notify(&self, flags: u32) -> bool {
        let mut st = self.state.lock();
        st.notify |= flags & (NOTIFY_NEXT | NOTIFY_SOLICITED);
        let cons = st
            .queue
            .consumer()
            .load(core::sync::atomic::Ordering::Acquire);
        cons != st.producer
    }
}

/// `create_cq`: a CQ of at least `attr.cqe` entries in the object the core allocated, under
/// one unit of the device's CQ limit; a user CQ's ring layout goes back in the response.
pub(crate) fn create<'a>(
    obj: NewObj<'a, b::ib_cq>,
    attr: &b::ib_cq_init_attr,
    udata: &mut Udata<'_>,
) -> Result<Created<'a, b::ib_cq>> {
    let dev = obj.dev();
    dev.data().limits.counted(limits::Obj::Cq, || {
        if attr.flags != 0 {
            return Err(crate::glue::eopnotsupp());
        }
        // A vector the device does not have: EINVAL, as mlx5 (rdma_rxe accepts any value
        // and ignores it).
        if attr.comp_vector >= dev.num_comp_vectors() {
            return Err(EINVAL);
        }
        let vector = obj.comp_vector(attr.comp_vector)?;
        let uctx = UContext::from_udata(udata);
        let (init, entries) = Cq::new(attr.cqe, uctx.as_ref(), vector)?;
        let mut cq = obj.init(init)?;
        cq.ib_mut().cqe = entries as i32;
        if udata.is_user() {
            let resp = b::rrxe_create_cq_resp {
                cq: cq.data().queue_info(),
            };
            // On failure `cq` is dropped with its ring.
            udata.respond(&resp)?;
        }
        Ok(cq)
    })
}

/// `destroy_cq`, once the CQ's data is gone: gives back its unit of the device's limit.
pub(crate) fn destroyed(dev: &crate::glue::IbDev) {
    dev.data().limits.put(limits::Obj::Cq);
}

/// `resize_cq` to at least `cqe` entries; a user CQ's new ring layout goes back in the
/// response.
pub(crate) fn resize(obj: &Obj<'_, b::ib_cq>, cqe: i32, udata: &mut Udata<'_>) -> Result {
    let cqe = u32::try_from(cqe).map_err(|_| EINVAL)?;
    let cq = obj.data();
    let uctx = UContext::from_udata(udata);
    // The core's `cqe` is written under the CQ's lock (Cq::resize): two resizes of one CQ
    // (the uverbs layer takes the CQ for reading only) publish in the order they resize.
    cq.resize(cqe, uctx.as_ref(), |entries| obj.set_cqe(entries as i32))?;
    if udata.is_user() {
        let resp = b::rrxe_resize_cq_resp {
            cq: cq.queue_info(),
        };
        udata.respond(&resp)?;
    }
    Ok(())
}

/// IB_CQ_REPORT_MISSED_EVENTS.
const REPORT_MISSED_EVENTS: u32 = 4;

/// `req_notify_cq`: arms the CQ; true if the caller asked to hear of completions already
/// waiting and there are some.
pub(crate) fn req_notify(cq: &Cq, flags: u32) -> bool {
    let pending = cq.req_notify(flags);
    flags & REPORT_MISSED_EVENTS != 0 && pending
}

/// `poll_cq` of a kernel CQ into the consumer's `wcs`; returns how many were filled
/// (`EINVAL` for a user CQ, see [`Cq::poll`]).
pub(crate) fn poll(cq: &Cq, wcs: &mut [b::ib_wc]) -> Result<usize> {
    cq.poll(wcs.len(), |i, s| {
        if let Some(w) = wcs.get_mut(i) {
            fill_wc(s, w);
        }
    })
}

/// Fills an `ib_wc` from a kernel CQ slot (written by [`Completion`]'s `encode_kernel`).
fn fill_wc(s: &[u64; 9], w: &mut b::ib_wc) {
    let mut smac = [0u8; 6];
    smac.copy_from_slice(&s[7].to_le_bytes()[..6]);
    *w = b::ib_wc::default();
    w.__bindgen_anon_1.wr_id = s[0];
    w.status = s[1] as u32;
    w.opcode = (s[1] >> 32) as u32;
    w.byte_len = (s[2] >> 32) as u32;
    w.qp = s[6] as *mut b::ib_qp;
    w.ex.invalidate_rkey = s[3] as u32;
    w.src_qp = s[4] as u32;
    w.wc_flags = (s[4] >> 32) as i32;
    w.port_num = 1;
    w.smac = smac;
    w.vlan_id = 0xffff;
    w.network_hdr_type = s[8] as u8;
}

impl CqPtr {
    /// Waits until a completion handler call queued on the CQ's vector has run (process
    /// context): a QP's destruction calls it, so that no handler call for the QP's
    /// completions is left queued when the consumer frees the CQ.
    pub(crate) fn flush_events(&self) {
        self.data().vector.flush();
    }

    /// Posts a completion, calling the consumer's handler if it asked to be notified, or
    /// reporting IB_EVENT_CQ_ERR on overflow.
    pub(crate) fn complete(&self, c: &Completion, solicited: bool) {
        match self.data().post(c, solicited) {
            Posted::Ok { notify: true } => self.data().vector.fire(),
            Posted::Ok { notify: false } => {}
            // The QP (or the consumer's ring) cannot go on: report it.
            Posted::Overflow => self.error_event(),
        }
    }
}
