// SPDX-License-Identifier: GPL-2.0
//! Queue pairs: the driver around proto's state machines.
//!
//! ```text
//!  post_send (any ctx) ──▶ sq ring ──┐
//!  post_recv (any ctx) ──▶ rq ring   │                ┌──▶ transmit (skb, ICRC, route)
//!  rx softirq ──▶ rx ring ───────────┼─▶ run ─────────┼──▶ place data (MR table)
//!  timers (softirq) ──▶ fired bits ──┘ (engine lock)  └──▶ completions (CQ)
//! ```
//!
//! All protocol decisions come from [`proto::Qp`], driven by `run`, which holds the engine
//! lock (a bottom-half spinlock), does a bounded amount of work and re-queues the QP's work
//! item when more is pending. `run` executes where the CPU already is when that is safe:
//! in the receive softirq (at once for a packet that may complete or answer something;
//! for the FIRST and MIDDLE packets of a message once the softirq's pass has queued them,
//! a bottom-half work item, so one run takes them all), and in the user's doorbell system
//! call; everything else (kernel posts, timers) goes through the work item. Waiting for a
//! worker thread to be scheduled cost tens of milliseconds per round trip under a
//! busy-polling process. The rings between the producers and `run` are short
//! irq-safe critical sections. The locks and their order: [`Qp`]'s `# Locking` section.
//!
//! Files: `create` (the QP verbs' policy: create, destroy, modify and query decoding),
//! `post` (kernel WR lists decoded and posted, the doorbell), `res` (what `rdma resource
//! show qp -dd` shows), `wr` (SGEs, send/receive WRs,
//! the WR rings), `modify` (applying modify_qp, query attributes), `user` (intake of the
//! queues shared with a process), `run` (posting into the rings, the received-packet ring,
//! the run loop), `sink` (the [`ActionSink`](proto::ActionSink) that
//! transmits, places and completes), `env` (the [`ResponderEnv`](proto::ResponderEnv):
//! keys and receive buffers), `odp` (page faults the engine's accesses ask for), `event`
//! (the affiliated asynchronous events, raised outside the QP's locks), `table` (a
//! device's QPs by number), `xrc` (an XRC target's
//! receive side: the XRC SRQ each request names). This file: the [`Qp`]
//! itself, its creation, shutdown and event sources.

mod create;
mod env;
mod event;
mod modify;
mod odp;
mod post;
mod res;
mod run;
mod sink;
mod table;
mod user;
mod wr;
mod xrc;

pub(crate) use create::{
    attach_mcast, create, destroyed, detach_mcast, modify, query, shut_down, CreateArgs, QpHandle,
};
pub(crate) use modify::{ModifyArgs, QpAttrs};
pub(crate) use post::{post_recv, post_recv_list, post_send};
pub(crate) use table::{QpTable, Refused, MAX_QP};
pub(crate) use user::{pull_one_recv, RecvPullBuf};
pub(crate) use wr::{transport_op, Claim, RecvWr, SendKind, SendWr, Sge, WrRing};

use crate::counters::{Counter, Counters};
use crate::glue::bindings as b;
use crate::glue::sync::{new_bh_spinlock, new_irq_spinlock, BhSpinLock, IrqSpinLock};
use crate::glue::task::{new_arc_bound, Timer, TimerTarget, Work, WorkTarget};
use crate::glue::{CqPtr, DevPtr, QpPtr, Queue, XrcdId};
use crate::proto;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;
pub(crate) use run::Icrc;
pub(crate) use run::Origin;
use run::{OriginCell, RxRing};

/// Send WQEs the protocol core tracks at once (its window).
const S: usize = 64;
/// READ/atomic reply cache entries.
const R: usize = 16;
type ProtoQp = proto::Qp<S, R>;
static EMPTY_QP: ProtoQp = ProtoQp::EMPTY;

/// Largest work queue.
pub(crate) const MAX_QP_WR: u32 = 4096;
/// Largest scatter/gather list.
pub(crate) const MAX_SGE: u32 = 32;
/// Largest inline send.
pub(crate) const MAX_INLINE: u32 = 512;
/// Outstanding READ/atomic requests a QP serves as responder (`max_qp_rd_atom`: the
/// responder's reply cache).
pub(crate) const MAX_RD_ATOMIC: u32 = 16;
/// Outstanding READ/atomic requests a QP may have as initiator (`max_qp_init_rd_atom`):
/// only a count on the requester side, as large as rdma_rxe's, because perftest sets a
/// QP's initiator depth to the peer's advertised value (rxe: 128).
pub(crate) const MAX_INIT_RD_ATOMIC: u32 = 128;
/// The queue sizes the device offers ([`proto::caps`] checks requests against them).
pub(crate) const DEV_CAPS: proto::caps::DeviceCaps = proto::caps::DeviceCaps {
    max_wr: MAX_QP_WR,
    max_sge: MAX_SGE,
    max_inline: MAX_INLINE,
    max_cqe: crate::cq::MAX_CQE,
};
/// Received packets queued per QP before drops.
const RX_RING: usize = 512;
/// Packets a work run emits before yielding.
const TX_BUDGET: u32 = 64;
/// Received packets a work run handles before yielding.
const RX_BUDGET: usize = 64;
/// The QP's timer that resumes transmission once the device's queues had no room (after
/// proto's retransmit and RNR timers).
const TX_WAIT_TIMER: usize = 2;
/// How long a QP that found the device's queues half full waits before it transmits again:
/// the shortest timer there is (one jiffy).
const TX_WAIT_US: u64 = 1;
/// QPN of the GSI QP.
pub(crate) const GSI_QPN: u32 = 1;
/// The GSI Q_Key.
const GSI_QKEY: u32 = 0x8001_0000;
/// Size of the GRH area at the start of a UD receive buffer.
const GRH_LEN: usize = 40;
/// `rdma_network_type` values.
const RDMA_NETWORK_IPV4: u8 = 2;
const RDMA_NETWORK_IPV6: u8 = 3;

/// Transport of a QP.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum QpKind {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
    /// The GSI QP (QP1): UD with management semantics.
    Gsi,
    /// XRC initiator (send side only).
    XrcIni,
    /// XRC target (no queues: the receive queue is the XRC SRQ each request names).
    XrcTgt,
}

impl QpKind {
    fn proto(self) -> proto::QpType {
        match self {
            QpKind::Rc => proto::QpType::Rc,
            QpKind::Uc => proto::QpType::Uc,
            QpKind::Ud | QpKind::Gsi => proto::QpType::Ud,
            QpKind::XrcIni => proto::QpType::XrcIni,
            QpKind::XrcTgt => proto::QpType::XrcTgt,
        }
    }

    fn is_ud(self) -> bool {
        matches!(self, QpKind::Ud | QpKind::Gsi)
    }

    fn is_xrc(self) -> bool {
        matches!(self, QpKind::XrcIni | QpKind::XrcTgt)
    }
}

/// Protocol state, under the QP's `engine` lock (bottom halves off). `run_on` holds it in
/// three places: the QP's work item (process context, kernel workqueue), the user's
/// doorbell (process context, the `post_send` system call of the posting thread) and the
/// receive softirq (`run_rx`, or `run_soon`'s bottom-half work item: packets from the
/// wire). `modify`, `attrs` (query) and `shutdown` take it in process context.
struct Engine {
    proto: KBox<ProtoQp>,
    /// proto's send-queue counts already added to the device's and the QP's counters.
    seen: proto::SqStats,
    attrs: QpAttrs,
    /// UDP source port (flow entropy).
    sport: u16,
    /// The route to the peer of a connected QP (reset when its address vector changes);
    /// None without the memory for one.
    route: Option<crate::glue::RouteCache>,
    /// The netdev of the source GID the last packet left from (any QP type: it is kept
    /// with the GID index and address it belongs to). Boxed: the engine is built on the
    /// stack and then moved into the QP (`Engine::new`); None without the memory for it
    /// (each packet then looks the GID up).
    gid: Option<KBox<crate::glue::GidNetdevCache>>,
    /// A received packet a fault rule holds back (`delay`, `reorder`), at most one.
    held: run::Held,
}

/// What create_qp asks for.
pub(crate) struct QpInit {
    /// Kind.
    pub(crate) kind: QpKind,
    /// QP number.
    pub(crate) qpn: u32,
    /// PD identity.
    pub(crate) pd: usize,
    /// Send CQ (none for an XRC target).
    pub(crate) send_cq: Option<CqPtr>,
    /// Receive CQ (none for XRC QPs: a target's receives complete into the SRQ's CQ).
    pub(crate) recv_cq: Option<CqPtr>,
    /// Send queue size.
    pub(crate) max_send_wr: u32,
    /// Receive queue size.
    pub(crate) max_recv_wr: u32,
    /// SGEs per send WR.
    pub(crate) max_send_sge: u32,
    /// SGEs per receive WR.
    pub(crate) max_recv_sge: u32,
    /// Inline bytes per send WR.
    pub(crate) max_inline: u32,
    /// Signal all send WRs.
    pub(crate) sig_all: bool,
    /// The `ib_qp` (kernel CQ entries carry it).
    pub(crate) ibqp_addr: u64,
    /// The `ib_qp`, for its asynchronous events.
    pub(crate) ib: QpPtr,
    /// User QPs: the send and receive queues shared with the process (boxed: `Qp::new`'s
    /// initialiser captures what it moves into the QP, on the stack).
    pub(crate) user: Option<KBox<UserRings>>,
    /// The shared receive queue the QP takes its receive WQEs from, if any.
    pub(crate) srq: Option<Arc<crate::srq::Srq>>,
    /// XRC target QPs: their XRC domain.
    pub(crate) xrcd: Option<XrcdId>,
    /// The QP's own counts (zero).
    pub(crate) stats: Arc<Counters>,
}

/// Work queues shared with a user process.
pub(crate) struct UserRings {
    /// Send queue.
    pub(crate) sq: Queue,
    /// Receive queue.
    pub(crate) rq: Queue,
}

/// A queue pair's shared state.
///
/// # Locking
/// `engine` (bottom halves off) is the outer lock: one run of the state machine at a time.
/// The four rings are interrupts-off locks, each held for a few loads and stores and never
/// across a copy into or out of memory regions (the MR locks are bottom-half locks and must
/// not be taken with interrupts off): an SGE list is copied out of the ring first. Nesting,
/// outermost first: `engine` → `claim` → `rq` (or the SRQ's `ring`, or for an XRC target the
/// device's XRC table → the SRQ's `ring`); `engine` → the SRQ's `ring` (or the XRC table →
/// the SRQ's `ring`) to pull a user SRQ's WQEs, before `claim` is taken, a bounded batch
/// with the ring's lock taken per WQE; `engine` → `sq` → the device's AH table (decoding
/// a user UD WQE); `engine` → `rx`; an XRC target's `engine` → the XRC table → an SRQ's CQ
/// lock (its receive completions, see [`crate::xrc`]). `sq`, `rq` and `rx` are
/// never held together. Taken under `engine` with no ring lock held: the MR table's locks
/// (placement, fast registration, invalidation, binding), a CQ's lock (completions; the
/// consumer's completion handler is called after the CQ lock is released, still under
/// `engine`), the device's QP table (local delivery to a QP of this host, whose `rx` nests
/// in the table lock). `faults` is taken alone or under `engine` (after an access found
/// on-demand-paging memory not present; no ring or MR lock held), never around another.
/// The core's netdev lookup is done before `engine` is taken. The QP's asynchronous events
/// are noted under `engine` and raised with no lock held (`event`).
#[pin_data]
pub(crate) struct Qp {
    // Event sources first: on drop they are shut down (the receive run, which may arm a
    // timer or queue the work, then timers, then work) before the state they use goes.
    /// The run of the packets the receive softirq queued ([`Qp::run_soon`]), a bottom-half
    /// work item.
    rx_work: Work<Qp>,
    /// proto's retransmit and RNR timers, then [`TX_WAIT_TIMER`].
    timers: [Timer<Qp>; 3],
    work: Work<Qp>,
    /// QP number.
    pub(crate) qpn: u32,
    /// Kind.
    pub(crate) kind: QpKind,
    /// The QP's own counts of [`Counter::PER_QP`] since it was created (atomics: counted
    /// by its runs, read by the per-QP counter objects it is bound to, see
    /// [`crate::qp_counter`], and by `rdma resource show qp -dd`).
    pub(crate) stats: Arc<Counters>,
    pd: usize,
    dev: DevPtr,
    send_cq: Option<CqPtr>,
    recv_cq: Option<CqPtr>,
    sig_all: bool,
    ibqp_addr: u64,
    ib: QpPtr,
    max_send_sge: u32,
    max_recv_sge: u32,
    max_inline: u32,
    user: Option<KBox<UserRings>>,
    srq: Option<Arc<crate::srq::Srq>>,
    /// XRC target QPs: their domain, the XRC SRQ the request being handled names and the
    /// one the message in progress took its receive WQE from (numbers in the device's XRC
    /// table; 0 = none). Written under `engine` only.
    xrc: Option<XrcdId>,
    xrc_sel: AtomicU32,
    xrc_claimed: AtomicU32,
    /// Where packets must arrive to reach the QP ([`Origin`]): set by create and modify,
    /// read as packets are queued, all under `rx`.
    origin: OriginCell,
    dead: AtomicBool,
    in_error: AtomicBool,
    /// A user queue was found corrupt: the work moves the QP to the error state.
    want_error: AtomicBool,
    /// A page fault was taken (`odp`): the next run tells proto (`fault_done`).
    fault_done: AtomicBool,
    /// Asynchronous events noted under `engine`, to be raised once it is released (a bit
    /// per [`event::QpEvent`]).
    events: AtomicU32,
    /// Timers that fired (bit per proto::TimerKind).
    fired: AtomicU32,
    /// The CPU the QP's work is queued on ([`Qp::kick`]): the one its owner last posted a
    /// send from (a user doorbell or a kernel WR), at first the one that created it. A hint
    /// read and written without ordering; any value is safe (`Work::queue_on`).
    home_cpu: AtomicU32,
    /// Send WRs between the posters and the engine (the ring, its indices, the user queue's
    /// consumer index). IRQs off: kernel `post_send` (any context), the engine's run and
    /// `modify` (process context or softirq, under `engine`).
    #[pin]
    sq: IrqSpinLock<WrRing<SendWr>>,
    /// Receive WRs (QPs without an SRQ), as `sq`: kernel `post_recv` (any context), the
    /// engine's run and `modify` (under `engine`, nested in `claim` when taking a WQE).
    #[pin]
    rq: IrqSpinLock<WrRing<RecvWr>>,
    /// The receive WQE of the message in progress, taken out of `rq` or the SRQ. IRQs off;
    /// only under `engine` (run and `modify`).
    #[pin]
    claim: IrqSpinLock<Option<Claim>>,
    /// Received packets waiting for the engine. IRQs off: the receive softirq (nested in
    /// the device's QP table lock, possibly inside another QP's run for local delivery) and
    /// the engine's run.
    #[pin]
    rx: IrqSpinLock<RxRing>,
    /// Page faults (on-demand paging) asked for by the engine's accesses. IRQs off: the
    /// engine's run (under `engine`, no ring lock held) and the work item (alone).
    #[pin]
    faults: IrqSpinLock<odp::Faults>,
    /// The protocol state ([`Engine`]). Bottom halves off: the work item and the doorbell
    /// (process context), the receive softirq, `modify`, `attrs` and `shutdown` (process
    /// context). Never taken with an interrupts-off lock held.
    #[pin]
    engine: BhSpinLock<Engine>,
}

fn timer_kind(id: usize) -> proto::TimerKind {
    if id == 0 {
        proto::TimerKind::Retransmit
    } else {
        proto::TimerKind::Rnr
    }
}

fn timer_idx(k: proto::TimerKind) -> usize {
    match k {
        proto::TimerKind::Retransmit => 0,
        proto::TimerKind::Rnr => 1,
    }
}

/// `rrxe_pkt_tx` (`tx`) or `rrxe_pkt_rx` for a packet of QP `qpn` with headers `hdrs` and
/// `len` payload bytes, and `rrxe_nak_tx` / `rrxe_nak_rx` if it is an RNR NAK or NAK. While
/// the events are off: one out-of-line call (`glue::trace`).
fn trace_pkt(dev: &crate::glue::IbDev, qpn: u32, tx: bool, hdrs: &proto::Headers, len: u32) {
    let nak = hdrs.aeth.is_some_and(|a| {
        matches!(
            a.kind(),
            proto::AethKind::RnrNak { .. } | proto::AethKind::Nak(_)
        )
    });
    let p = crate::glue::trace::Pkt {
        qpn,
        dqpn: hdrs.bth.dest_qp,
        psn: hdrs.bth.psn.get(),
        len,
        opcode: hdrs.bth.opcode.0,
        ackreq: hdrs.bth.ack_req,
        aeth: hdrs.aeth.map(|a| a.syndrome),
        nak,
    };
    crate::glue::trace::pkt(dev, tx, &p);
}

fn ib_state(s: proto::QpState) -> u32 {
    match s {
        proto::QpState::Reset => b::ib_qp_state_IB_QPS_RESET,
        proto::QpState::Init => b::ib_qp_state_IB_QPS_INIT,
        proto::QpState::Rtr => b::ib_qp_state_IB_QPS_RTR,
        proto::QpState::Rts => b::ib_qp_state_IB_QPS_RTS,
        proto::QpState::Sqd => b::ib_qp_state_IB_QPS_SQD,
        proto::QpState::Error => b::ib_qp_state_IB_QPS_ERR,
    }
}

impl Engine {
    /// The protocol state of a new QP (in Reset), with its configuration.
    #[inline(never)]
    fn new(qpn: u32, kind: QpKind) -> Result<Engine> {
        let mut cfg = proto::QpConfig {
            qpn,
            qp_type: kind.proto(),
            // A consumer that never sets the send PSN (UD, or RC without IB_QP_SQ_PSN)
            // starts at a random one, as rdma_cm picks them: not guessable by a spoofer.
            sq_psn: proto::Psn::new(crate::glue::random_u32() & 0xff_ffff),
            ..Default::default()
        };
        if kind == QpKind::Gsi {
            cfg.qkey = GSI_QKEY;
        }
        // The protocol state is large (kilobytes): copy the empty QP straight into its heap
        // slot and initialise it there, never on the kernel stack.
        let mut proto_qp = crate::glue::mem::boxed_copy(&EMPTY_QP)?;
        proto_qp.reset(cfg);
        Ok(Engine {
            proto: proto_qp,
            seen: proto::SqStats::default(),
            attrs: QpAttrs {
                qkey: cfg.qkey,
                sq_psn: cfg.sq_psn.get(),
                ..Default::default()
            },
            sport: proto::net::udp_sport(qpn, 0),
            route: crate::glue::RouteCache::new(),
            gid: crate::glue::GidNetdevCache::boxed(),
            held: run::Held::default(),
        })
    }
}

impl Qp {
    /// Waits for completion handler calls queued on the QP's CQs' vectors (process
    /// context, once the QP posts no more completions): none is left for the consumer's
    /// CQ destruction to race with.
    pub(crate) fn flush_cq_events(&self) {
        for cq in [self.send_cq, self.recv_cq].into_iter().flatten() {
            cq.flush_events();
        }
    }

    /// Creates a QP (in Reset).
    ///
    /// Stack: a `Qp` is about 1.7 KiB, and its parts would be as much again on this frame if
    /// they were built here first: an initialiser captures what it is given by value, so
    /// each part would sit on the stack twice (built, then moved into the initialiser), and
    /// all of them at once (the empty claim slot alone is over 0.5 KiB). So each part is
    /// built inside the QP's initialiser, in the field's own expression, which pin-init
    /// evaluates while it writes the QP's memory, one field after the other; this frame
    /// holds only what the initialiser captures (the request and a few numbers), and the
    /// initialiser runs in [`new_arc_bound`]'s frame (never inlined here). On Linux 7.3 with
    /// the per-QP counters, building the parts here made this frame 2744 bytes.
    #[inline(never)]
    pub(crate) fn new(dev: DevPtr, init: QpInit) -> Result<Arc<Qp>> {
        if init.max_send_wr > MAX_QP_WR
            || init.max_recv_wr > MAX_QP_WR
            || init.max_send_sge > MAX_SGE
            || init.max_recv_sge > MAX_SGE
            || init.max_inline > MAX_INLINE
        {
            return Err(EINVAL);
        }
        let home_cpu = crate::glue::this_cpu();
        // The work item and timers are bound to the QP once it is initialised
        // (new_arc_bound): until then nothing references the QP, and queueing or arming
        // them would run nothing. The QP owns them and drops them (waiting for their
        // callbacks) before its memory goes.
        let qp = try_pin_init!(Qp {
            rx_work: Work::new_bh()?,
            timers: [
                Timer::new(0)?,
                Timer::new(1)?,
                Timer::new(TX_WAIT_TIMER)?,
            ],
            work: Work::new()?,
            qpn: init.qpn,
            kind: init.kind,
            stats: init.stats,
            pd: init.pd,
            dev,
            send_cq: init.send_cq,
            recv_cq: init.recv_cq,
            sig_all: init.sig_all,
            ibqp_addr: init.ibqp_addr,
            ib: init.ib,
            max_send_sge: init.max_send_sge,
            max_recv_sge: init.max_recv_sge,
            max_inline: init.max_inline,
            user: init.user,
            srq: init.srq,
            xrc: init.xrcd,
            xrc_sel: AtomicU32::new(0),
            xrc_claimed: AtomicU32::new(0),
            origin: OriginCell::new(),
            dead: AtomicBool::new(false),
            in_error: AtomicBool::new(false),
            want_error: AtomicBool::new(false),
            fault_done: AtomicBool::new(false),
            events: AtomicU32::new(0),
            fired: AtomicU32::new(0),
            home_cpu: AtomicU32::new(home_cpu),
            sq <- new_irq_spinlock!(
                WrRing::new(
                    init.max_send_wr.max(1),
                    init.max_send_sge.max(1),
                    init.max_inline,
                )?,
                "rrxe_qp_sq"
            ),
            rq <- new_irq_spinlock!(
                WrRing::new(init.max_recv_wr.max(1), init.max_recv_sge.max(1), 0)?,
                "rrxe_qp_rq"
            ),
            claim <- new_irq_spinlock!(None, "rrxe_qp_claim"),
            rx <- new_irq_spinlock!(RxRing::new()?, "rrxe_qp_rx"),
            faults <- new_irq_spinlock!(odp::Faults::default(), "rrxe_qp_faults"),
            engine <- new_bh_spinlock!(Engine::new(init.qpn, init.kind)?, "rrxe_qp_engine"),
        }? Error);
        new_arc_bound(qp, |qp| ([&qp.work, &qp.rx_work], &qp.timers))
    }

    /// Current IB state.
    pub(crate) fn attrs(&self) -> QpAttrs {
        let e = self.engine.lock();
        let mut a = e.attrs;
        a.state = ib_state(e.proto.state());
        a.sq_draining = e.proto.send_queue().is_draining();
        a
    }

    /// Stops all activity before destruction (process context): no more work, timers or
    /// received packets. The caller has removed the QP from the device's QP table.
    pub(crate) fn shutdown(&self) {
        self.dead.store(true, Ordering::Release);
        for t in &self.timers {
            t.shutdown();
        }
        self.rx_work.cancel_sync();
        self.work.cancel_sync();
        // A run in a softirq or a doorbell on another CPU finishes before we return; later
        // runs see `dead` under the lock and do nothing.
        drop(self.engine.lock());
        // Anything still queued is freed with the QP.
    }

    /// After [`Qp::shutdown`] and the grace period that ends every receive softirq holding
    /// the QP: cancels a receive run such a softirq queued after `shutdown` (it would find
    /// the QP dead and do nothing; nothing queues it again).
    pub(crate) fn cancel_rx_run(&self) {
        self.rx_work.cancel_sync();
    }

    /// Queues the QP's work on its home CPU. Work started by a packet from another QP of
    /// this host or by a timer runs where the QP's owner posts, not on the CPU that sent
    /// the packet: as the kernel's receive flow steering moves a flow's packets to where
    /// its application runs, so that the QPs of processes on different CPUs run in
    /// parallel. Not a pinning: work queued while it runs (a run that re-queues itself)
    /// stays on the CPU where it runs, and a QP that never posts a send (a responder only,
    /// an XRC target) stays on its creator's CPU. rdma_rxe queues its tasks on an unbound
    /// workqueue (rxe_wq) and lets the scheduler place them.
    pub(crate) fn kick(&self) {
        if !self.dead.load(Ordering::Acquire) {
            self.work.queue_on(self.home_cpu.load(Ordering::Relaxed));
        }
    }

    /// Counts `n` events of `c`, in the device's counters and, if it is one of
    /// [`Counter::PER_QP`], in the QP's.
    pub(crate) fn count(&self, c: Counter, n: u64) {
        self.dev.get().data().counters.add(c, n);
        self.count_own(c, n);
    }

    /// Counts `n` events of `c` in the QP's own counters only: the device counted them
    /// where they came in, before the QP was known (received packets and bytes).
    pub(crate) fn count_own(&self, c: Counter, n: u64) {
        if c.per_qp() {
            self.stats.add(c, n);
        }
    }

    /// Makes this CPU the QP's home (see [`Qp::kick`]); called where its owner posts.
    fn note_owner_cpu(&self) {
        let cpu = crate::glue::this_cpu();
        if self.home_cpu.load(Ordering::Relaxed) != cpu {
            self.home_cpu.store(cpu, Ordering::Relaxed);
        }
    }
}

impl WorkTarget for Qp {
    fn run_work(&self) {
        // Page faults first (they may sleep), then the engine, which retries what waited.
        self.run_faults();
        self.run();
    }

    fn run_bh_work(&self) {
        // Softirq context: the netdev under RCU (`IbDev::netdev` takes a lock that is not
        // softirq-safe).
        if !self.dead.load(Ordering::Acquire) {
            self.dev.get().with_netdev_rcu(|ndev| self.run_on(ndev));
        }
    }
}

impl TimerTarget for Qp {
    fn run_timer(&self, id: usize) {
        // Bits 0 and 1 are proto's timers; the transmit wait (bit 2) only needs the run.
        self.fired
            .fetch_or(1 << id.min(TX_WAIT_TIMER), Ordering::AcqRel);
        self.kick();
    }
}
