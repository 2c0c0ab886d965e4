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
//! in the receive softirq right after a packet is queued, and in the user's doorbell
//! system call; everything else (kernel posts, timers, leftovers) goes through the work
//! item. Waiting for a worker thread to be scheduled cost tens of milliseconds per round
//! trip under a busy-polling process. The rings between the producers and `run` are short
//! irq-safe critical sections. The locks and their order: [`Qp`]'s `# Locking` section.

use crate::ah::Av;
use crate::counters::Counter;
use crate::cq::Completion;
use crate::glue::bindings as b;
use crate::glue::mem::Xfer;
use crate::glue::sync::{new_bh_spinlock, new_irq_spinlock, BhSpinLock, IrqSpinLock};
use crate::glue::task::{Timer, TimerTarget, Work, WorkTarget};
use crate::glue::{CqPtr, DevPtr, NetDev, Queue, SkBuff};
use crate::mr::access;
use crate::proto::{self, Action, ActionSink, ResponderEnv};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::alloc::KVVec;
use kernel::prelude::*;
use kernel::sync::{Arc, UniqueArc};

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
}

impl QpKind {
    fn proto(self) -> proto::QpType {
        match self {
            QpKind::Rc => proto::QpType::Rc,
            QpKind::Uc => proto::QpType::Uc,
            QpKind::Ud | QpKind::Gsi => proto::QpType::Ud,
        }
    }

    fn is_ud(self) -> bool {
        matches!(self, QpKind::Ud | QpKind::Gsi)
    }
}

/// One scatter/gather element.
#[derive(Clone, Copy, Default)]
pub(crate) struct Sge {
    /// Address (kernel VA for DMA MRs, IOVA for user/FR MRs).
    pub(crate) addr: u64,
    /// Length.
    pub(crate) len: u32,
    /// Local key.
    pub(crate) lkey: u32,
}

/// What a send WR does.
#[derive(Clone, Copy)]
pub(crate) enum SendKind {
    /// A transport operation handed to proto.
    Transport(proto::SendOp),
    /// Fast-register an MR with the pages recorded by `ib_map_mr_sg`.
    RegMr(crate::mr::FastReg),
    /// Invalidate an MR key or a type 2B window's rkey.
    LocalInv {
        /// The key.
        key: u32,
    },
    /// Bind a memory window (user QPs).
    BindMw(crate::mr::BindReq),
    /// A malformed user WQE: completes with a local QP operation error and moves the QP
    /// to the error state.
    Invalid,
}

/// The transport operation and completion opcode of a send work request. `opcode` is an
/// `ib_wr_opcode`, whose transport values are those of `ib_uverbs_wr_opcode` (and so of the
/// rrxe ABI); `ex` holds the immediate data in wire order or the rkey to invalidate.
pub(crate) fn transport_op(
    opcode: u32,
    ex: u32,
    rdma: proto::RemoteAddr,
    atomic: proto::RemoteAddr,
    compare_add: u64,
    swap: u64,
) -> Option<(proto::SendOp, u32)> {
    use proto::SendOp;
    // Immediate data is stored in wire (big-endian) byte order; proto takes its value.
    let imm = u32::from_be(ex);
    Some(match opcode {
        b::ib_wr_opcode_IB_WR_SEND => (
            SendOp::Send {
                imm: None,
                inv_rkey: None,
            },
            b::ib_wc_opcode_IB_WC_SEND,
        ),
        b::ib_wr_opcode_IB_WR_SEND_WITH_IMM => (
            SendOp::Send {
                imm: Some(imm),
                inv_rkey: None,
            },
            b::ib_wc_opcode_IB_WC_SEND,
        ),
        b::ib_wr_opcode_IB_WR_SEND_WITH_INV => (
            SendOp::Send {
                imm: None,
                inv_rkey: Some(ex),
            },
            b::ib_wc_opcode_IB_WC_SEND,
        ),
        b::ib_wr_opcode_IB_WR_RDMA_WRITE => (
            SendOp::Write {
                remote: rdma,
                imm: None,
            },
            b::ib_wc_opcode_IB_WC_RDMA_WRITE,
        ),
        b::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM => (
            SendOp::Write {
                remote: rdma,
                imm: Some(imm),
            },
            b::ib_wc_opcode_IB_WC_RDMA_WRITE,
        ),
        b::ib_wr_opcode_IB_WR_RDMA_READ => (
            SendOp::Read { remote: rdma },
            b::ib_wc_opcode_IB_WC_RDMA_READ,
        ),
        b::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP => (
            SendOp::CompareSwap {
                remote: atomic,
                compare: compare_add,
                swap,
            },
            b::ib_wc_opcode_IB_WC_COMP_SWAP,
        ),
        b::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD => (
            SendOp::FetchAdd {
                remote: atomic,
                add: compare_add,
            },
            b::ib_wc_opcode_IB_WC_FETCH_ADD,
        ),
        _ => return None,
    })
}

const _: () = assert!(
    b::ib_wr_opcode_IB_WR_SEND == b::RRXE_WR_SEND
        && b::ib_wr_opcode_IB_WR_SEND_WITH_IMM == b::RRXE_WR_SEND_WITH_IMM
        && b::ib_wr_opcode_IB_WR_SEND_WITH_INV == b::RRXE_WR_SEND_WITH_INV
        && b::ib_wr_opcode_IB_WR_RDMA_WRITE == b::RRXE_WR_RDMA_WRITE
        && b::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM == b::RRXE_WR_RDMA_WRITE_WITH_IMM
        && b::ib_wr_opcode_IB_WR_RDMA_READ == b::RRXE_WR_RDMA_READ
        && b::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP == b::RRXE_WR_ATOMIC_CMP_AND_SWP
        && b::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD == b::RRXE_WR_ATOMIC_FETCH_AND_ADD
);

/// A posted send work request, as the driver keeps it.
#[derive(Clone, Copy)]
pub(crate) struct SendWr {
    /// Consumer's id.
    pub(crate) wr_id: u64,
    /// Operation.
    pub(crate) kind: SendKind,
    /// `ib_wc_opcode` of its completion.
    pub(crate) wc_opcode: u32,
    /// Total local length.
    pub(crate) len: u32,
    /// Signaled completion.
    pub(crate) signaled: bool,
    /// Solicited event.
    pub(crate) solicited: bool,
    /// Fence.
    pub(crate) fence: bool,
    /// Inline data (copied at post time) instead of SGEs.
    pub(crate) inline: bool,
    /// SGEs in use.
    pub(crate) num_sge: u32,
    /// UD: destination.
    pub(crate) ud: Option<(Av, proto::UdDest)>,
}

/// A posted receive work request.
#[derive(Clone, Copy, Default)]
pub(crate) struct RecvWr {
    /// Consumer's id.
    pub(crate) wr_id: u64,
    /// SGEs in use.
    pub(crate) num_sge: u32,
    /// Sum of SGE lengths.
    pub(crate) len: u32,
}

/// The receive WQE a QP took from its receive queue for the message in progress.
#[derive(Clone, Copy)]
pub(crate) struct Claim {
    /// The WQE.
    pub(crate) wr: RecvWr,
    /// Its SGEs (the first `wr.num_sge`).
    pub(crate) sges: [Sge; MAX_SGE as usize],
}

/// A ring of work requests with their SGEs (and inline bytes) in flat arrays.
///
/// The counters run freely and wrap at 2^32; [`proto::RingIndex`] keeps the slot of a
/// counter consistent across the wrap (2^k slots) and bounds the outstanding WRs by the
/// size the consumer asked for.
pub(crate) struct WrRing<T: Copy> {
    wrs: KVVec<Option<T>>,
    sges: KVVec<Sge>,
    inline: KVVec<u8>,
    /// INVARIANT: `wrs` has `ix.slots()` entries, `sges` `max_sge` per slot and `inline`
    /// `max_inline` per slot.
    ix: proto::RingIndex,
    max_sge: usize,
    max_inline: usize,
    /// Next to post.
    prod: u32,
    /// Next to hand to the engine (sends only).
    fed: u32,
    /// Next to complete.
    done: u32,
    /// User QPs: next slot of the shared queue to read.
    ucons: u32,
}

impl<T: Copy> WrRing<T> {
    /// A ring for up to `cap` outstanding WRs (1..=MAX_QP_WR; callers checked the range).
    pub(crate) fn new(cap: u32, max_sge: u32, max_inline: u32) -> Result<Self> {
        if cap > MAX_QP_WR || max_sge > MAX_SGE || max_inline > MAX_INLINE {
            return Err(EINVAL);
        }
        let ix = proto::RingIndex::new(cap).ok_or(EINVAL)?;
        // Charged to the creating process's memory cgroup: a user QP's rings are sized by
        // the process (up to MB each).
        let gfp = GFP_KERNEL_ACCOUNT;
        let n = ix.slots() as usize;
        let mut wrs = KVVec::with_capacity(n, gfp)?;
        wrs.extend_with(n, None, gfp)?;
        let ns = n * max_sge as usize;
        let mut sges = KVVec::with_capacity(ns, gfp)?;
        sges.extend_with(ns, Sge::default(), gfp)?;
        let mut inline = KVVec::new();
        if max_inline > 0 {
            let ni = n * max_inline as usize;
            inline = KVVec::with_capacity(ni, gfp)?;
            inline.extend_with(ni, 0u8, gfp)?;
        }
        Ok(Self {
            wrs,
            sges,
            inline,
            ix,
            max_sge: max_sge as usize,
            max_inline: max_inline as usize,
            prod: 0,
            fed: 0,
            done: 0,
            ucons: 0,
        })
    }

    fn idx(&self, i: u32) -> usize {
        self.ix.slot(i)
    }

    pub(crate) fn full(&self) -> bool {
        self.ix.full(self.prod, self.done)
    }

    fn get(&self, i: u32) -> Option<T> {
        self.wrs.get(self.idx(i)).copied().flatten()
    }
}

impl WrRing<RecvWr> {
    /// Moves the oldest posted WQE with its SGEs into `dst` (in place: no large
    /// temporaries); returns it and how many remain posted.
    pub(crate) fn pop_into(&mut self, dst: &mut Option<Claim>) -> Option<(RecvWr, u32)> {
        if self.done == self.prod {
            return None;
        }
        let wr = self.get(self.done)?;
        let cl = dst.insert(Claim {
            wr,
            sges: [Sge::default(); MAX_SGE as usize],
        });
        for (d, s) in cl.sges.iter_mut().zip(self.sges(self.done, wr.num_sge)) {
            *d = *s;
        }
        self.done = self.done.wrapping_add(1);
        Some((wr, self.prod.wrapping_sub(self.done)))
    }
}

impl<T: Copy> WrRing<T> {
    fn sges(&self, i: u32, n: u32) -> &[Sge] {
        let s = self.idx(i) * self.max_sge;
        let n = (n as usize).min(self.max_sge);
        self.sges.get(s..s + n).unwrap_or(&[])
    }

    fn inline(&self, i: u32, n: u32) -> &[u8] {
        let s = self.idx(i) * self.max_inline;
        let n = (n as usize).min(self.max_inline);
        self.inline.get(s..s + n).unwrap_or(&[])
    }

    /// Stores a WR at `prod` and advances it. The caller checked `full()`.
    pub(crate) fn push(&mut self, wr: T, sges: &[Sge], inline: Option<&[u8]>) -> Result {
        if sges.len() > self.max_sge {
            return Err(EINVAL);
        }
        let i = self.idx(self.prod);
        let s = i * self.max_sge;
        for (d, v) in self
            .sges
            .get_mut(s..s + sges.len())
            .ok_or(EINVAL)?
            .iter_mut()
            .zip(sges)
        {
            *d = *v;
        }
        if let Some(data) = inline {
            if data.len() > self.max_inline {
                return Err(EINVAL);
            }
            let s = i * self.max_inline;
            let dst = self.inline.get_mut(s..s + data.len()).ok_or(EINVAL)?;
            if !proto::copy_exact(dst, data) {
                return Err(EINVAL);
            }
        }
        *self.wrs.get_mut(i).ok_or(EINVAL)? = Some(wr);
        self.prod = self.prod.wrapping_add(1);
        Ok(())
    }
}

/// Received packets waiting for the work.
struct RxRing {
    skbs: KVec<Option<SkBuff>>,
    head: usize,
    len: usize,
    /// RC/UC: the path (address vector) packets must come from, set by modify; checked as
    /// they are queued.
    path: Option<proto::addr::Path>,
}

/// Attributes reported back by query_qp.
#[derive(Clone, Copy, Default)]
pub(crate) struct QpAttrs {
    /// IB QP state (`ib_qp_state`).
    pub(crate) state: u32,
    /// Path MTU (`ib_mtu`).
    pub(crate) path_mtu: u32,
    /// Q_Key.
    pub(crate) qkey: u32,
    /// Receive PSN.
    pub(crate) rq_psn: u32,
    /// Send PSN.
    pub(crate) sq_psn: u32,
    /// Destination QPN.
    pub(crate) dest_qpn: u32,
    /// Access flags.
    pub(crate) access: u32,
    /// Timeout.
    pub(crate) timeout: u8,
    /// Retry count.
    pub(crate) retry_cnt: u8,
    /// RNR retry.
    pub(crate) rnr_retry: u8,
    /// Min RNR timer.
    pub(crate) min_rnr_timer: u8,
    /// Max outstanding RD/atomic (initiator).
    pub(crate) max_rd_atomic: u8,
    /// Max outstanding RD/atomic (responder).
    pub(crate) max_dest_rd_atomic: u8,
    /// Address vector.
    pub(crate) av: Option<Av>,
}

/// A modify_qp request, decoded from `ib_qp_attr` + mask by the glue.
#[derive(Default)]
pub(crate) struct ModifyArgs {
    /// New IB state.
    pub(crate) state: Option<u32>,
    /// Address vector.
    pub(crate) av: Option<Av>,
    /// Path MTU (`ib_mtu`).
    pub(crate) path_mtu: Option<u32>,
    /// Destination QPN.
    pub(crate) dest_qpn: Option<u32>,
    /// Q_Key.
    pub(crate) qkey: Option<u32>,
    /// Send PSN.
    pub(crate) sq_psn: Option<u32>,
    /// Receive PSN.
    pub(crate) rq_psn: Option<u32>,
    /// Timeout.
    pub(crate) timeout: Option<u8>,
    /// Retry count.
    pub(crate) retry_cnt: Option<u8>,
    /// RNR retry.
    pub(crate) rnr_retry: Option<u8>,
    /// Min RNR timer.
    pub(crate) min_rnr_timer: Option<u8>,
    /// Max outstanding RD/atomic (initiator).
    pub(crate) max_rd_atomic: Option<u8>,
    /// Max outstanding RD/atomic (responder).
    pub(crate) max_dest_rd_atomic: Option<u8>,
    /// Access flags.
    pub(crate) access: Option<u32>,
}

/// Protocol state, under the QP's `engine` lock (bottom halves off). `run_on` holds it in
/// three places: the QP's work item (process context, kernel workqueue), the user's
/// doorbell (process context, the `post_send` system call of the posting thread) and the
/// receive softirq (`run_rx`, a packet from the wire). `modify`, `attrs` (query) and
/// `shutdown` take it in process context.
struct Engine {
    proto: KBox<ProtoQp>,
    /// proto's send-queue counts already added to the device counters.
    seen: proto::SqStats,
    attrs: QpAttrs,
    /// UDP source port (flow entropy).
    sport: u16,
}

/// What create_qp asks for.
pub(crate) struct QpInit {
    /// Kind.
    pub(crate) kind: QpKind,
    /// QP number.
    pub(crate) qpn: u32,
    /// PD identity.
    pub(crate) pd: usize,
    /// Send CQ.
    pub(crate) send_cq: CqPtr,
    /// Receive CQ.
    pub(crate) recv_cq: CqPtr,
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
    /// User QPs: the send and receive queues shared with the process.
    pub(crate) user: Option<UserRings>,
    /// The shared receive queue the QP takes its receive WQEs from, if any.
    pub(crate) srq: Option<Arc<crate::srq::Srq>>,
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
/// outermost first: `engine` → `claim` → `rq` (or the SRQ's `ring`); `engine` → `sq` → the
/// device's AH table (decoding a user UD WQE); `engine` → `rx`. `sq`, `rq` and `rx` are
/// never held together. Taken under `engine` with no ring lock held: the MR table's locks
/// (placement, fast registration, invalidation, binding), a CQ's lock (completions; the
/// consumer's completion handler is called after the CQ lock is released, still under
/// `engine`), the device's QP table (local delivery to a QP of this host, whose `rx` nests
/// in the table lock). The core's netdev lookup is done before `engine` is taken.
#[pin_data]
pub(crate) struct Qp {
    // Event sources first: on drop they are shut down (timers, then work) before the state
    // they use goes.
    timers: [Timer; 2],
    work: Work,
    /// QP number.
    pub(crate) qpn: u32,
    /// Kind.
    pub(crate) kind: QpKind,
    pd: usize,
    dev: DevPtr,
    send_cq: CqPtr,
    recv_cq: CqPtr,
    sig_all: bool,
    ibqp_addr: u64,
    max_send_sge: u32,
    max_recv_sge: u32,
    max_inline: u32,
    user: Option<UserRings>,
    srq: Option<Arc<crate::srq::Srq>>,
    dead: AtomicBool,
    in_error: AtomicBool,
    /// A user queue was found corrupt: the work moves the QP to the error state.
    want_error: AtomicBool,
    /// Timers that fired (bit per proto::TimerKind).
    fired: AtomicU32,
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

fn wc_status(s: proto::WcStatus) -> u32 {
    use proto::WcStatus::*;
    match s {
        Success => b::ib_wc_status_IB_WC_SUCCESS,
        LocLenErr => b::ib_wc_status_IB_WC_LOC_LEN_ERR,
        LocQpOpErr => b::ib_wc_status_IB_WC_LOC_QP_OP_ERR,
        RemInvReqErr => b::ib_wc_status_IB_WC_REM_INV_REQ_ERR,
        RemAccessErr => b::ib_wc_status_IB_WC_REM_ACCESS_ERR,
        RemOpErr => b::ib_wc_status_IB_WC_REM_OP_ERR,
        RetryExcErr => b::ib_wc_status_IB_WC_RETRY_EXC_ERR,
        RnrRetryExcErr => b::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR,
        WrFlushErr => b::ib_wc_status_IB_WC_WR_FLUSH_ERR,
        BadRespErr => b::ib_wc_status_IB_WC_BAD_RESP_ERR,
        LocProtErr => b::ib_wc_status_IB_WC_LOC_PROT_ERR,
    }
}

fn ib_state(s: proto::QpState) -> u32 {
    match s {
        proto::QpState::Reset => b::ib_qp_state_IB_QPS_RESET,
        proto::QpState::Init => b::ib_qp_state_IB_QPS_INIT,
        proto::QpState::Rtr => b::ib_qp_state_IB_QPS_RTR,
        proto::QpState::Rts => b::ib_qp_state_IB_QPS_RTS,
        proto::QpState::Error => b::ib_qp_state_IB_QPS_ERR,
    }
}

impl Qp {
    /// Creates a QP (in Reset).
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
        let sq = WrRing::new(
            init.max_send_wr.max(1),
            init.max_send_sge.max(1),
            init.max_inline,
        )?;
        let rq = WrRing::new(init.max_recv_wr.max(1), init.max_recv_sge.max(1), 0)?;
        let mut skbs = KVec::with_capacity(RX_RING, GFP_KERNEL)?;
        for _ in 0..RX_RING {
            skbs.push(None, GFP_KERNEL)?;
        }
        let mut cfg = proto::QpConfig {
            qpn: init.qpn,
            qp_type: init.kind.proto(),
            // A consumer that never sets the send PSN (UD, or RC without IB_QP_SQ_PSN)
            // starts at a random one, as rdma_cm picks them: not guessable by a spoofer.
            sq_psn: proto::Psn::new(crate::glue::random_u32() & 0xff_ffff),
            ..Default::default()
        };
        if init.kind == QpKind::Gsi {
            cfg.qkey = GSI_QKEY;
        }
        // The protocol state is large (kilobytes): copy the empty QP straight into its heap
        // slot and initialise it there, never on the kernel stack.
        let mut proto_qp = crate::glue::mem::boxed_copy(&EMPTY_QP)?;
        proto_qp.reset(cfg);
        let engine = Engine {
            proto: proto_qp,
            seen: proto::SqStats::default(),
            attrs: QpAttrs {
                qkey: cfg.qkey,
                sq_psn: cfg.sq_psn.get(),
                ..Default::default()
            },
            sport: proto::net::udp_sport(init.qpn, 0),
        };
        let uninit = UniqueArc::<Qp>::new_uninit(GFP_KERNEL)?;
        let this: *const Qp = uninit.as_ptr();
        // The Qp is initialised at `this` below, before anything can queue the work or arm
        // a timer (nothing references the QP yet); it owns both and drops them (waiting for
        // their callbacks) before its memory goes.
        let (work, t0, t1) =
            // SAFETY: `this` is initialised before first use and outlives work and timers.
            unsafe { (Work::new(this)?, Timer::new(this, 0)?, Timer::new(this, 1)?) };
        let sq_init = new_irq_spinlock!(sq, "rrxe_qp_sq");
        let rq_init = new_irq_spinlock!(rq, "rrxe_qp_rq");
        let claim_init = new_irq_spinlock!(None, "rrxe_qp_claim");
        let rx_init = new_irq_spinlock!(
            RxRing {
                skbs,
                head: 0,
                len: 0,
                path: None,
            },
            "rrxe_qp_rx"
        );
        let engine_init = new_bh_spinlock!(engine, "rrxe_qp_engine");
        let qp = uninit.pin_init_with(try_pin_init!(Qp {
            timers: [t0, t1],
            work,
            qpn: init.qpn,
            kind: init.kind,
            pd: init.pd,
            dev,
            send_cq: init.send_cq,
            recv_cq: init.recv_cq,
            sig_all: init.sig_all,
            ibqp_addr: init.ibqp_addr,
            max_send_sge: init.max_send_sge,
            max_recv_sge: init.max_recv_sge,
            max_inline: init.max_inline,
            user: init.user,
            srq: init.srq,
            dead: AtomicBool::new(false),
            in_error: AtomicBool::new(false),
            want_error: AtomicBool::new(false),
            fired: AtomicU32::new(0),
            sq <- sq_init,
            rq <- rq_init,
            claim <- claim_init,
            rx <- rx_init,
            engine <- engine_init,
        }? Error))?;
        Ok(qp.into())
    }

    /// Current IB state.
    pub(crate) fn attrs(&self) -> QpAttrs {
        let e = self.engine.lock();
        let mut a = e.attrs;
        a.state = ib_state(e.proto.state());
        a
    }

    /// Stops all activity before destruction (process context): no more work, timers or
    /// received packets. The caller has removed the QP from the device's QP table.
    pub(crate) fn shutdown(&self) {
        self.dead.store(true, Ordering::Release);
        for t in &self.timers {
            t.shutdown();
        }
        self.work.cancel_sync();
        // A run in a softirq or a doorbell on another CPU finishes before we return; later
        // runs see `dead` under the lock and do nothing.
        drop(self.engine.lock());
        // Anything still queued is freed with the QP.
    }

    pub(crate) fn kick(&self) {
        if !self.dead.load(Ordering::Acquire) {
            self.work.queue();
        }
    }

    /// Whether the kernel may take work requests for this QP from a WR list (kernel QPs) or
    /// must refuse them (user QPs). A user QP's list arrives through `ib_uverbs_post_send`
    /// or `ib_uverbs_post_recv`: the process chose every SGE address and length, so none of
    /// it may be read as kernel memory. Its only way in is the shared ring plus the doorbell
    /// (an empty list). rdma_rxe ignores such a list on its send side; rrxe refuses it with
    /// EINVAL (as rxe does for a list it cannot take) and counts it.
    pub(crate) fn accept_kernel_wrs(&self) -> Result {
        if self.user.is_some() {
            self.dev.get().data().counters.inc(Counter::UserWrRefused);
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Posts a send WR of a kernel consumer (any context). `inline` holds the data of an
    /// inline send.
    pub(crate) fn post_send(&self, wr: SendWr, sges: &[Sge], inline: Option<&[u8]>) -> Result {
        self.accept_kernel_wrs()?;
        {
            let mut sq = self.sq.lock();
            if sq.full() {
                return Err(ENOMEM);
            }
            sq.push(wr, sges, inline)?;
        }
        self.kick();
        Ok(())
    }

    /// The user's doorbell (a post_send with no work requests, process context): read the
    /// shared send queue and transmit now, in the caller's time slice.
    pub(crate) fn doorbell(&self) {
        if self.user.is_some() {
            self.run();
        } else {
            self.kick();
        }
    }

    /// Handles newly queued received packets now (receive softirq), transmitting on `ndev`,
    /// the device they arrived on.
    pub(crate) fn run_rx(&self, ndev: &NetDev) {
        self.run_on(Some(ndev));
    }

    /// User QPs: copies new entries of the shared send queue into the driver's ring,
    /// validating each. Stops when the ring is full (continued at the next run).
    #[inline(never)]
    fn pull_user_sq(&self) {
        let Some(u) = &self.user else { return };
        let lim = crate::uwqe::SendLimits {
            max_sge: self.max_send_sge,
            max_inline: self.max_inline,
            ud: self.kind.is_ud(),
            ahs: &self.dev.get().data().ahs,
            pd: self.pd,
        };
        let slot_len = (u.sq.slot_words() * 8)
            .min(crate::uwqe::SEND_HDR + MAX_SGE as usize * crate::uwqe::SGE);
        let mut bytes = [0u8; crate::uwqe::SEND_HDR + MAX_SGE as usize * crate::uwqe::SGE];
        let mut sges = [Sge::default(); MAX_SGE as usize];
        loop {
            let mut sq = self.sq.lock();
            if sq.full() {
                return;
            }
            let prod = u.sq.producer().load(Ordering::Acquire);
            let avail = prod.wrapping_sub(sq.ucons);
            if avail == 0 {
                return;
            }
            if avail > u.sq.slots() {
                // A producer index no valid process writes: stop reading this queue.
                drop(sq);
                self.set_error_async();
                return;
            }
            let i = sq.ucons;
            // One copy out of the shared slot; everything below reads the copy.
            let Some(hdr) = bytes.get_mut(..slot_len) else {
                return;
            };
            u.sq.read_slot_bytes(i, 0, hdr);
            let decoded = crate::uwqe::decode_send(hdr, &lim, &mut sges);
            let r = match decoded {
                Some(us) => {
                    let n = us.wr.num_sge as usize;
                    let at = sq.prod;
                    let r = sq.push(us.wr, sges.get(..n).unwrap_or(&[]), None);
                    // Inline data goes straight from the shared slot into the ring's copy.
                    if let (Ok(()), Some((off, len))) = (&r, us.inline) {
                        let (s0, max) = (sq.idx(at) * sq.max_inline, sq.max_inline);
                        if let Some(d) = sq.inline.get_mut(s0..s0 + len.min(max)) {
                            u.sq.read_slot_bytes(i, off, d);
                        }
                    }
                    r
                }
                None => {
                    let mut id = [0u8; 8];
                    id.copy_from_slice(hdr.get(..8).unwrap_or(&[0; 8]));
                    let bad = SendWr {
                        wr_id: u64::from_ne_bytes(id),
                        kind: SendKind::Invalid,
                        wc_opcode: b::ib_wc_opcode_IB_WC_SEND,
                        len: 0,
                        signaled: true,
                        solicited: false,
                        fence: false,
                        inline: false,
                        num_sge: 0,
                        ud: None,
                    };
                    sq.push(bad, &[], None)
                }
            };
            if r.is_err() {
                return;
            }
            sq.ucons = sq.ucons.wrapping_add(1);
            u.sq.consumer().store(sq.ucons, Ordering::Release);
        }
    }

    /// User QPs: copies new receive WQEs of the shared receive queue into the driver's ring.
    fn pull_user_rq(&self) {
        let Some(u) = &self.user else { return };
        if pull_recv_queue(&u.rq, &self.rq, self.max_recv_sge).is_err() {
            self.set_error_async();
        }
    }

    /// Moves the QP to the error state from the work (a corrupt user queue).
    fn set_error_async(&self) {
        crate::glue::dbg(
            self.dev.get(),
            c"user queue corrupt: QP to error",
            u64::from(self.qpn),
            0,
        );
        self.want_error.store(true, Ordering::Release);
        if let Some(u) = &self.user {
            u.sq.error_flag().store(1, Ordering::Release);
        }
    }

    /// Posts a receive WR of a kernel consumer (any context).
    pub(crate) fn post_recv(&self, wr: RecvWr, sges: &[Sge]) -> Result {
        self.accept_kernel_wrs()?;
        if self.srq.is_some() {
            return Err(EINVAL);
        }
        {
            let mut rq = self.rq.lock();
            if rq.full() {
                return Err(ENOMEM);
            }
            rq.push(wr, sges, None)?;
        }
        if self.in_error.load(Ordering::Acquire) {
            self.kick();
        }
        Ok(())
    }

    /// Queues a received packet for this QP (softirq) for the next run, which the caller
    /// starts, if the QP takes it from where it comes: `from` (its IP addresses) and `pkey`
    /// pass [`proto::addr::check_qp`]. A refused skb comes back with the reason.
    fn enqueue_rx(
        &self,
        skb: SkBuff,
        from: &proto::addr::IpAddrs,
        pkey: u16,
    ) -> Result<(), (Refused, SkBuff)> {
        if self.dead.load(Ordering::Acquire) {
            return Err((Refused::Backlog, skb));
        }
        {
            let mut rx = self.rx.lock();
            let connected = matches!(self.kind, QpKind::Rc | QpKind::Uc);
            if let Err(e) = proto::addr::check_qp(connected, from, rx.path.as_ref(), pkey) {
                return Err((Refused::Addr(e), skb));
            }
            if rx.len >= rx.skbs.len() {
                return Err((Refused::Backlog, skb));
            }
            let n = rx.skbs.len();
            let i = (rx.head + rx.len) % n;
            if let Some(slot) = rx.skbs.get_mut(i) {
                *slot = Some(skb);
            }
            rx.len += 1;
        }
        Ok(())
    }

    fn rx_pop(&self) -> Option<SkBuff> {
        let mut rx = self.rx.lock();
        if rx.len == 0 {
            return None;
        }
        let n = rx.skbs.len();
        let h = rx.head;
        rx.head = (h + 1) % n;
        rx.len -= 1;
        rx.skbs.get_mut(h).and_then(Option::take)
    }

    /// Applies a modify_qp request.
    pub(crate) fn modify(&self, m: &ModifyArgs) -> Result {
        // Before the engine lock: the core's netdev lock must not nest in a softirq-safe one.
        let ndev = self.dev.get().netdev();
        let mut eng = self.engine.lock();
        let mut pm = proto::ModifyQp::default();
        if let Some(s) = m.state {
            pm.state = Some(match s {
                b::ib_qp_state_IB_QPS_RESET => proto::QpState::Reset,
                b::ib_qp_state_IB_QPS_INIT => proto::QpState::Init,
                b::ib_qp_state_IB_QPS_RTR => proto::QpState::Rtr,
                b::ib_qp_state_IB_QPS_RTS => proto::QpState::Rts,
                b::ib_qp_state_IB_QPS_ERR => proto::QpState::Error,
                _ => return Err(crate::glue::eopnotsupp()),
            });
        }
        // Everything is validated by proto.modify below before any of it is kept: the new
        // attributes are built in a copy, committed only on success (rdma_rxe checks all
        // attributes in rxe_qp_chk_attr before rxe_qp_from_attr applies them).
        let mut attrs = eng.attrs;
        let mut sport = eng.sport;
        if let Some(mtu) = m.path_mtu {
            let asked = proto::Mtu::from_ib(mtu as u8).ok_or(EINVAL)?;
            // Not above what the netdev carries now: a larger path MTU would make packets
            // the link drops (the netdev's MTU minus the RoCEv2 headers, as the port's
            // active MTU). A later MTU change does not move the QP, as for hardware.
            let port = ndev
                .as_deref()
                .map(|n| crate::device::ib_mtu_for(n.mtu()))
                .unwrap_or(mtu);
            let ib = mtu.min(port);
            pm.mtu = Some(proto::Mtu::from_ib(ib as u8).unwrap_or(asked));
            attrs.path_mtu = ib;
        }
        if let Some(v) = m.dest_qpn {
            pm.dest_qpn = Some(v);
            attrs.dest_qpn = v;
            sport = proto::net::udp_sport(self.qpn, v);
        }
        if let Some(v) = m.qkey {
            pm.qkey = Some(v);
            attrs.qkey = v;
        }
        if let Some(v) = m.sq_psn {
            pm.sq_psn = Some(proto::Psn::new(v));
            attrs.sq_psn = v;
        }
        if let Some(v) = m.rq_psn {
            pm.rq_psn = Some(proto::Psn::new(v));
            attrs.rq_psn = v;
        }
        if let Some(v) = m.timeout {
            pm.timeout = Some(v);
            attrs.timeout = v;
        }
        if let Some(v) = m.retry_cnt {
            pm.retry_cnt = Some(v);
            attrs.retry_cnt = v;
        }
        if let Some(v) = m.rnr_retry {
            pm.rnr_retry = Some(v);
            attrs.rnr_retry = v;
        }
        if let Some(v) = m.min_rnr_timer {
            pm.min_rnr_timer = Some(v);
            attrs.min_rnr_timer = v;
        }
        if let Some(v) = m.max_rd_atomic {
            // Not above what query_device offers (rdma_rxe refuses more than its
            // max_qp_rd_atom too).
            if u32::from(v) > MAX_INIT_RD_ATOMIC {
                return Err(EINVAL);
            }
            pm.max_rd_atomic = Some(v.max(1));
            attrs.max_rd_atomic = v;
        }
        if let Some(v) = m.max_dest_rd_atomic {
            pm.max_dest_rd_atomic = Some(v);
            attrs.max_dest_rd_atomic = v;
        }
        if let Some(v) = m.access {
            if v & !access::QP_SUPPORTED != 0 {
                return Err(EINVAL);
            }
            attrs.access = v;
        }
        if let Some(av) = m.av {
            attrs.av = Some(av);
        }
        let Engine { proto, .. } = &mut *eng;
        let mut sink = Sink {
            qp: self,
            av: attrs.av,
            sport,
            ndev: ndev.as_deref(),
            pkt: None,
        };
        proto.modify(&pm, &mut sink).map_err(|_| EINVAL)?;
        eng.attrs = attrs;
        eng.sport = sport;
        if let Some(av) = m.av {
            // Packets are taken from the path they are sent to (kept with the other
            // attributes, once the change is accepted).
            self.rx.lock().path = Some(crate::ah::path(&av));
        }
        let proto = &eng.proto;
        let err = proto.state() == proto::QpState::Error;
        self.in_error.store(err, Ordering::Release);
        if err {
            self.flush_unfed_sends();
            self.flush_recvs();
        }
        if proto.state() == proto::QpState::Reset {
            self.reset_rings();
        }
        drop(eng);
        self.kick();
        Ok(())
    }

    fn reset_rings(&self) {
        {
            let mut sq = self.sq.lock();
            sq.prod = 0;
            sq.fed = 0;
            sq.done = 0;
        }
        *self.claim.lock() = None;
        let mut rq = self.rq.lock();
        rq.prod = 0;
        rq.done = 0;
    }

    fn complete_send(&self, wr: &SendWr, status: u32, byte_len: u32) {
        if status != b::ib_wc_status_IB_WC_SUCCESS || wr.signaled || self.sig_all {
            let c = Completion {
                wr_id: wr.wr_id,
                status,
                opcode: wr.wc_opcode,
                byte_len,
                qp_num: self.qpn,
                qp_addr: self.ibqp_addr,
                ..Default::default()
            };
            self.send_cq.complete(&c, false);
        }
    }

    /// Completes send WRs never handed to proto with WR_FLUSH_ERR (QP in error).
    fn flush_unfed_sends(&self) {
        loop {
            let wr = {
                let mut sq = self.sq.lock();
                if sq.fed == sq.prod {
                    break;
                }
                let wr = sq.get(sq.fed);
                sq.fed = sq.fed.wrapping_add(1);
                sq.done = sq.fed;
                wr
            };
            if let Some(wr) = wr {
                self.complete_send(&wr, b::ib_wc_status_IB_WC_WR_FLUSH_ERR, 0);
            }
        }
    }

    /// The receive WQE for the message in progress: the one already taken, or the next
    /// one of the receive queue.
    fn claim_head(&self) -> Option<RecvWr> {
        let mut events = crate::srq::SrqEvents::default();
        let wr = {
            let mut c = self.claim.lock();
            if let Some(cl) = &*c {
                return Some(cl.wr);
            }
            match &self.srq {
                Some(srq) => srq.take_into(&mut c, &mut events),
                None => self.rq.lock().pop_into(&mut c).map(|(wr, _)| wr),
            }
        };
        // SRQ events go to the consumer's handler without the claim lock (interrupts off).
        if let Some(srq) = &self.srq {
            srq.raise(events);
        }
        wr
    }

    fn flush_recv(&self, wr: &RecvWr) {
        let c = Completion {
            wr_id: wr.wr_id,
            status: b::ib_wc_status_IB_WC_WR_FLUSH_ERR,
            opcode: b::ib_wc_opcode_IB_WC_RECV,
            qp_num: self.qpn,
            qp_addr: self.ibqp_addr,
            ..Default::default()
        };
        self.recv_cq.complete(&c, false);
    }

    /// Completes every posted receive (and the one in progress) with WR_FLUSH_ERR.
    fn flush_recvs(&self) {
        let held = self.claim.lock().take();
        if let Some(cl) = held {
            self.flush_recv(&cl.wr);
        }
        if self.srq.is_some() {
            // The SRQ's other WQEs belong to the other QPs.
            return;
        }
        loop {
            let wr = {
                let mut rq = self.rq.lock();
                if rq.done == rq.prod {
                    break;
                }
                let wr = rq.get(rq.done);
                rq.done = rq.done.wrapping_add(1);
                wr
            };
            if let Some(wr) = wr {
                self.flush_recv(&wr);
            }
        }
    }

    /// Copies bytes into (or out of) a WR's scatter/gather list at `offset`.
    ///
    /// Every SGE the bytes touch is checked first (its lkey in the QP's PD, valid, the range
    /// inside its region, Local Write to place into it) and nothing is copied unless all
    /// pass: an atomic result or a receive into a bad lkey leaves the buffer untouched
    /// (IBTA: a local protection error). Bytes beyond the list are a length error. A region
    /// deregistered between the check and the copy fails the copy (a protection error with
    /// the earlier SGEs written; the WQE completes in error either way).
    fn wr_buffer_copy(
        &self,
        sges: &[Sge],
        offset: u32,
        buf: &mut Xfer<'_>,
    ) -> Result<(), proto::PlaceError> {
        let mrs = &self.dev.get().data().mrs;
        let need = match buf {
            Xfer::To(_) => access::LOCAL_WRITE,
            Xfer::From(_) => 0,
        };
        let total = buf.len();
        // Pass 1: check, and find that the list holds all of the bytes.
        let mut covered = 0usize;
        for (sge, va, at, n) in sge_chunks(sges, offset, total) {
            let r = mrs.with(sge.lkey, self.pd, |r| r.check(va, n as u64, need));
            if !matches!(r, Ok(Ok(_))) {
                return Err(proto::PlaceError::Protection);
            }
            covered = at + n;
        }
        if covered != total {
            return Err(proto::PlaceError::Length);
        }
        // Pass 2: copy.
        for (sge, va, at, n) in sge_chunks(sges, offset, total) {
            let mut chunk = buf.sub(at, n).ok_or(proto::PlaceError::Length)?;
            let r = mrs.with(sge.lkey, self.pd, |r| r.copy(va, &mut chunk, need));
            if !matches!(r, Ok(Ok(()))) {
                return Err(proto::PlaceError::Protection);
            }
        }
        Ok(())
    }

    /// Copies between `buf` and what `rkey` reaches at `va` (a region, or one through a
    /// window), for a remote access of this QP needing `need` (READ responses, WRITE
    /// placement). Any refusal is a protection error for proto to act on.
    fn remote_copy(
        &self,
        rkey: u32,
        va: u64,
        mut buf: Xfer<'_>,
        need: u32,
    ) -> Result<(), proto::PlaceError> {
        let range = (va, buf.len() as u64, need);
        let mrs = &self.dev.get().data().mrs;
        match mrs.with_remote(rkey, self.pd, self.qpn, range, |r| {
            r.copy(va, &mut buf, need)
        }) {
            Ok(Ok(())) => Ok(()),
            _ => Err(proto::PlaceError::Protection),
        }
    }

    /// Drives the engine with everything that arrived (process context), transmitting on
    /// the port's netdev.
    fn run(&self) {
        if self.dead.load(Ordering::Acquire) {
            return;
        }
        let ndev = self.dev.get().netdev();
        self.run_on(ndev.as_deref());
    }

    /// Drives the engine with everything that arrived (process context or softirq).
    fn run_on(&self, ndev: Option<&NetDev>) {
        let mut eng = self.engine.lock();
        if self.dead.load(Ordering::Acquire) {
            return;
        }
        let counters = &self.dev.get().data().counters;
        let Engine {
            proto,
            attrs,
            sport,
            seen,
        } = &mut *eng;
        let mut sink = Sink {
            qp: self,
            av: attrs.av,
            sport: *sport,
            ndev,
            pkt: None,
        };

        // 0. What a user process posted.
        self.pull_user_rq();
        self.pull_user_sq();
        if self.want_error.swap(false, Ordering::AcqRel) {
            let m = proto::ModifyQp {
                state: Some(proto::QpState::Error),
                ..Default::default()
            };
            let _ = proto.modify(&m, &mut sink);
        }

        // 1. Timers.
        let fired = self.fired.swap(0, Ordering::AcqRel);
        for id in 0..2 {
            if fired & (1 << id) != 0 {
                proto.on_timer(timer_kind(id), &mut sink);
            }
        }

        // 2. Received packets.
        let mut env = Env {
            qp: self,
            access: attrs.access,
        };
        for _ in 0..RX_BUDGET {
            let Some(mut skb) = self.rx_pop() else { break };
            let smac = skb.smac();
            let _ = skb.linearize();
            let Some((ip_pkt, l3)) = skb.ip_packet() else {
                continue;
            };
            let Some(ib) = ip_pkt.get(l3 + 8..) else {
                continue;
            };
            let Ok(pkt) = proto::parse_packet(ib) else {
                continue;
            };
            let mut psink = Sink {
                qp: self,
                av: sink.av,
                sport: sink.sport,
                ndev: sink.ndev,
                pkt: Some(RxCtx {
                    ib,
                    ip_hdr: ip_pkt.get(..l3).unwrap_or(&[]),
                    smac,
                }),
            };
            let st = proto.on_packet(&pkt, &mut env, &mut psink);
            match st {
                proto::RxStatus::Ok => {}
                proto::RxStatus::Duplicate => counters.inc(Counter::DuplicateRequests),
                proto::RxStatus::OutOfSequence => counters.inc(Counter::SeqErrors),
                proto::RxStatus::NoRecv => counters.inc(Counter::RnrNaksSent),
                proto::RxStatus::BadState => counters.inc(Counter::RxDropQpState),
                proto::RxStatus::WrongTransport
                | proto::RxStatus::WrongQp
                | proto::RxStatus::BadQkey => counters.inc(Counter::RxDropQpMismatch),
                proto::RxStatus::Invalid => counters.inc(Counter::RxInvalidRequest),
                proto::RxStatus::Busy => counters.inc(Counter::RxDropBusy),
            }
        }

        // 3. New send WRs, in order.
        loop {
            let (idx, wr, sge_len) = {
                let sq = self.sq.lock();
                if sq.fed == sq.prod {
                    break;
                }
                (sq.fed, sq.get(sq.fed), sq.done)
            };
            let Some(wr) = wr else { break };
            let _ = sge_len;
            match wr.kind {
                SendKind::Transport(op) => {
                    let w = proto::SendWqe {
                        id: proto::WqeId(u64::from(idx)),
                        op,
                        len: wr.len,
                        signaled: true,
                        solicited: wr.solicited,
                        fence: wr.fence,
                        ud: wr.ud.map(|(_, d)| d),
                    };
                    match proto.post_send(w, &mut sink) {
                        Ok(()) => {}
                        Err(proto::PostError::Full) => break,
                        Err(_) => {
                            // Invalid for the QP's state or type: complete it in order.
                            if !proto.send_queue().is_empty() {
                                break;
                            }
                            self.complete_send(&wr, b::ib_wc_status_IB_WC_LOC_QP_OP_ERR, 0);
                            let mut sq = self.sq.lock();
                            sq.done = sq.done.wrapping_add(1);
                        }
                    }
                    let mut sq = self.sq.lock();
                    sq.fed = sq.fed.wrapping_add(1);
                }
                SendKind::Invalid => {
                    if !proto.send_queue().is_empty() {
                        break;
                    }
                    crate::glue::dbg(
                        self.dev.get(),
                        c"malformed user send WQE: QP to error",
                        u64::from(self.qpn),
                        wr.wr_id,
                    );
                    self.complete_send(&wr, b::ib_wc_status_IB_WC_LOC_QP_OP_ERR, 0);
                    {
                        let mut sq = self.sq.lock();
                        sq.fed = sq.fed.wrapping_add(1);
                        sq.done = sq.done.wrapping_add(1);
                    }
                    // The process wrote garbage into its queue: later posts fail at once.
                    if let Some(u) = &self.user {
                        u.sq.error_flag().store(1, Ordering::Release);
                    }
                    let m = proto::ModifyQp {
                        state: Some(proto::QpState::Error),
                        ..Default::default()
                    };
                    let _ = proto.modify(&m, &mut sink);
                }
                SendKind::RegMr(_) | SendKind::LocalInv { .. } | SendKind::BindMw(_) => {
                    // Local operations complete in order: wait for the transport ones.
                    if !proto.send_queue().is_empty() {
                        break;
                    }
                    let mrs = &self.dev.get().data().mrs;
                    let ok = match wr.kind {
                        SendKind::RegMr(fr) => mrs.fast_reg(&fr, self.pd).is_ok(),
                        SendKind::LocalInv { key } => mrs.invalidate(key, self.pd, None).is_ok(),
                        SendKind::BindMw(req) => mrs.bind(&req, self.pd, self.qpn).is_ok(),
                        SendKind::Transport(_) | SendKind::Invalid => false,
                    };
                    let st = match (ok, wr.kind) {
                        (true, _) => b::ib_wc_status_IB_WC_SUCCESS,
                        (false, SendKind::BindMw(_)) => b::ib_wc_status_IB_WC_MW_BIND_ERR,
                        (false, _) => b::ib_wc_status_IB_WC_LOC_PROT_ERR,
                    };
                    self.complete_send(&wr, st, 0);
                    let mut sq = self.sq.lock();
                    sq.fed = sq.fed.wrapping_add(1);
                    sq.done = sq.done.wrapping_add(1);
                }
            }
        }

        // 4. Transmit.
        let more = proto.poll_tx(TX_BUDGET, &mut sink);

        // The send queue's event counts since the last run go to the device counters.
        let now = proto.send_queue().stats();
        for (counter, now, before) in [
            (Counter::Retransmits, now.retransmits, seen.retransmits),
            (Counter::RnrNaksRcvd, now.rnr_naks, seen.rnr_naks),
            (Counter::RetransmitTimeouts, now.timeouts, seen.timeouts),
            (Counter::CwndCuts, now.cwnd_cuts, seen.cwnd_cuts),
        ] {
            counters.add(counter, now.wrapping_sub(before));
        }
        *seen = now;

        if proto.state() == proto::QpState::Error {
            self.in_error.store(true, Ordering::Release);
            self.flush_unfed_sends();
            self.flush_recvs();
        }
        let pending_rx = self.rx.lock().len > 0;
        drop(eng);
        if more || pending_rx || self.fired.load(Ordering::Acquire) != 0 {
            self.kick();
        }
    }
}

impl WorkTarget for Qp {
    fn run_work(&self) {
        self.run();
    }
}

impl TimerTarget for Qp {
    fn run_timer(&self, id: usize) {
        self.fired.fetch_or(1 << id.min(1), Ordering::AcqRel);
        self.kick();
    }
}

/// The received packet an action refers to.
#[derive(Clone, Copy)]
struct RxCtx<'a> {
    /// The IB packet (BTH to ICRC): `PktRange`s index into it.
    ib: &'a [u8],
    /// The IP header (for the GRH of UD receives).
    ip_hdr: &'a [u8],
    smac: [u8; 6],
}

/// Applies proto's actions as they come.
struct Sink<'a> {
    qp: &'a Qp,
    av: Option<Av>,
    sport: u16,
    ndev: Option<&'a NetDev>,
    pkt: Option<RxCtx<'a>>,
}

impl Sink<'_> {
    fn pkt_bytes(&self, r: proto::PktRange) -> Option<&[u8]> {
        let p = self.pkt?;
        p.ib.get(r.off as usize..(r.off as usize).checked_add(r.len as usize)?)
    }

    /// Transmits `tx`. `Err` only if its payload cannot be read (a send WQE's gather list,
    /// the MR of a READ response): proto decides what follows. Any other failure is a lost
    /// packet (counted), which the protocol recovers like a loss on the wire.
    fn send(&mut self, tx: &proto::TxPacket) -> Result<(), proto::PlaceError> {
        let qp = self.qp;
        let counters = &qp.dev.get().data().counters;
        if self.ndev.is_none() {
            counters.inc(Counter::TxDrops);
            return Ok(());
        }
        let av = match tx.ud_wqe {
            Some(id) => qp
                .sq
                .lock()
                .get(id.0 as u32)
                .and_then(|w| w.ud.map(|(av, _)| av)),
            None => self.av,
        };
        let Some(av) = av else { return Ok(()) };
        let len = tx.payload.len();
        let mut gather = Ok(());
        let fill = |buf: &mut [u8]| -> bool {
            match tx.payload {
                proto::Payload::None => true,
                proto::Payload::Inline(v) => {
                    let n = buf.len().min(8);
                    match (buf.get_mut(..n), v.get(..n)) {
                        (Some(d), Some(s)) => proto::copy_exact(d, s),
                        _ => false,
                    }
                }
                proto::Payload::Mr { rkey, va, .. } => {
                    // The MR was checked when the READ arrived; it may have gone since.
                    gather = qp.remote_copy(rkey, va, Xfer::From(buf), access::REMOTE_READ);
                    gather.is_ok()
                }
                proto::Payload::Wqe { id, offset, .. } => {
                    let i = id.0 as u32;
                    let mut sges = [Sge::default(); MAX_SGE as usize];
                    let n = {
                        let sq = qp.sq.lock();
                        let Some(wr) = sq.get(i) else { return false };
                        if wr.inline {
                            let data = sq.inline(i, wr.len);
                            return match data.get(offset as usize..offset as usize + buf.len()) {
                                Some(s) => proto::copy_exact(buf, s),
                                None => false,
                            };
                        }
                        copy_sges(&mut sges, sq.sges(i, wr.num_sge))
                    };
                    // The MR copy runs outside the ring's interrupts-off lock (the WR's
                    // slot stays ours: it completes only in this engine run or a later one).
                    let sges = sges.get(..n).unwrap_or(&[]);
                    gather = qp.wr_buffer_copy(sges, offset, &mut Xfer::From(buf));
                    gather.is_ok()
                }
            }
        };
        let sent = crate::net::transmit(qp.dev.get(), &av, self.sport, &tx.hdrs, len, fill);
        gather?;
        match sent {
            Ok(()) => counters.inc(Counter::SentPkts),
            Err(e) => {
                counters.inc(Counter::TxDrops);
                crate::glue::dbg(
                    qp.dev.get(),
                    c"transmit failed",
                    u64::from(qp.qpn),
                    e as u64,
                );
            }
        }
        Ok(())
    }

    /// Places bytes into send WQE `id`'s buffer (READ response data, an atomic's result).
    fn place_wqe(
        &self,
        id: proto::WqeId,
        offset: u32,
        data: &[u8],
    ) -> Result<(), proto::PlaceError> {
        let qp = self.qp;
        let i = id.0 as u32;
        let mut sges = [Sge::default(); MAX_SGE as usize];
        let n = {
            let sq = qp.sq.lock();
            let wr = sq.get(i).ok_or(proto::PlaceError::Protection)?;
            copy_sges(&mut sges, sq.sges(i, wr.num_sge))
        };
        let sges = sges.get(..n).unwrap_or(&[]);
        qp.wr_buffer_copy(sges, offset, &mut Xfer::To(data))
    }

    /// Places bytes into the receive WQE of the message in progress.
    fn place_recv(&self, offset: u32, data: &[u8]) -> Result<(), proto::PlaceError> {
        let qp = self.qp;
        // proto asked recv_head_len first: a WQE is claimed (else nothing can take the data).
        qp.claim_head().ok_or(proto::PlaceError::Length)?;
        let mut sges = [Sge::default(); MAX_SGE as usize];
        let n = {
            let c = qp.claim.lock();
            let cl = c.as_ref().ok_or(proto::PlaceError::Length)?;
            copy_sges(
                &mut sges,
                cl.sges.get(..cl.wr.num_sge as usize).unwrap_or(&[]),
            )
        };
        let sges = sges.get(..n).unwrap_or(&[]);
        qp.wr_buffer_copy(sges, offset, &mut Xfer::To(data))
    }

    /// UD: the GRH area of the receive buffer, from the packet's IP header (the IPv6 header,
    /// or the IPv4 header in its last 20 bytes).
    fn place_grh(&self) -> Result<(), proto::PlaceError> {
        let Some(p) = self.pkt else {
            return Err(proto::PlaceError::Length);
        };
        let mut grh = [0u8; GRH_LEN];
        let h = p.ip_hdr;
        let at = GRH_LEN.saturating_sub(h.len());
        if let Some(d) = grh.get_mut(at..at + h.len()) {
            proto::copy_exact(d, h);
        }
        self.place_recv(0, &grh)
    }

    /// Places the bytes of a placement action; the result goes back to proto.
    fn place_action(&mut self, a: &Action) -> Result<(), proto::PlaceError> {
        let qp = self.qp;
        let missing = proto::PlaceError::Length;
        match *a {
            Action::PlaceWqe { id, offset, src } => {
                let data = self.pkt_bytes(src).ok_or(missing)?;
                self.place_wqe(id, offset, data)
            }
            // The CQE consumer reads the original value in host order.
            Action::AtomicResult { id, value } => self.place_wqe(id, 0, &value.to_ne_bytes()),
            Action::PlaceRecv { offset, src } => {
                let data = self.pkt_bytes(src).ok_or(missing)?;
                self.place_recv(offset, data)
            }
            Action::PlaceGrh => self.place_grh(),
            Action::PlaceMr { rkey, va, src } => {
                let data = self.pkt_bytes(src).ok_or(missing)?;
                // Checked at the message's first packet; re-checked here because the MR or
                // window may have been invalidated or deregistered since (rdma_rxe re-looks
                // the rkey up for every packet).
                qp.remote_copy(rkey, va, Xfer::To(data), access::REMOTE_WRITE)
            }
            _ => Ok(()),
        }
    }

    fn recv_complete(&mut self, c: &proto::RecvCompletion) {
        let qp = self.qp;
        let _ = qp.claim_head();
        let Some(cl) = qp.claim.lock().take() else {
            return;
        };
        let wr = cl.wr;
        let mut flags = 0;
        let mut ex = 0;
        if let Some(imm) = c.imm {
            flags |= b::ib_wc_flags_IB_WC_WITH_IMM;
            // The CQE holds immediate data in wire (big-endian) byte order.
            ex = imm.to_be();
        } else if let (Some(k), proto::WcStatus::Success) = (c.inv_rkey, c.status) {
            // proto invalidated the key (ResponderEnv::invalidate) before reporting it: a key
            // that could not be invalidated is never reported (rdma_rxe sets
            // IB_WC_WITH_INVALIDATE only on a successful completion).
            flags |= b::ib_wc_flags_IB_WC_WITH_INVALIDATE;
            ex = k;
        }
        let mut comp = Completion {
            wr_id: wr.wr_id,
            status: wc_status(c.status),
            opcode: match c.kind {
                proto::RecvKind::Send => b::ib_wc_opcode_IB_WC_RECV,
                proto::RecvKind::WriteImm => b::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM,
            },
            byte_len: c.byte_len,
            ex,
            qp_num: qp.qpn,
            src_qp: c.src_qp,
            wc_flags: flags,
            qp_addr: qp.ibqp_addr,
            ..Default::default()
        };
        if qp.kind.is_ud() && c.status == proto::WcStatus::Success {
            if let Some(p) = self.pkt {
                comp.wc_flags |= b::ib_wc_flags_IB_WC_GRH
                    | b::ib_wc_flags_IB_WC_WITH_NETWORK_HDR_TYPE
                    | b::ib_wc_flags_IB_WC_WITH_SMAC;
                comp.network_hdr_type = if p.ip_hdr.len() == 40 {
                    RDMA_NETWORK_IPV6
                } else {
                    RDMA_NETWORK_IPV4
                };
                comp.smac = p.smac;
            }
        }
        qp.recv_cq.complete(&comp, c.solicited);
    }

    fn send_complete(&mut self, c: &proto::SendCompletion) {
        let qp = self.qp;
        let wr = {
            let mut sq = qp.sq.lock();
            let wr = sq.get(c.id.0 as u32);
            sq.done = (c.id.0 as u32).wrapping_add(1);
            wr
        };
        if let Some(wr) = wr {
            qp.complete_send(&wr, wc_status(c.status), c.byte_len);
        }
    }
}

impl ActionSink for Sink<'_> {
    fn place(&mut self, a: Action) -> Result<(), proto::PlaceError> {
        self.place_action(&a)
    }

    fn transmit(&mut self, p: proto::TxPacket) -> Result<(), proto::PlaceError> {
        self.send(&p)
    }

    fn push(&mut self, a: Action) {
        let qp = self.qp;
        match a {
            // ACKs and NAKs: no payload to read.
            Action::Send(tx) => {
                let _ = self.send(&tx);
            }
            // proto hands placements to `place`, which reports failure; none come here.
            Action::PlaceWqe { .. }
            | Action::AtomicResult { .. }
            | Action::PlaceRecv { .. }
            | Action::PlaceGrh
            | Action::PlaceMr { .. } => {
                let _ = self.place_action(&a);
            }
            Action::SendComplete(c) => self.send_complete(&c),
            Action::RecvComplete(c) => self.recv_complete(&c),
            Action::FlushRecvQueue => qp.flush_recvs(),
            Action::ArmTimer { kind, usecs } => {
                if let Some(t) = qp.timers.get(timer_idx(kind)) {
                    t.arm(usecs);
                }
            }
            Action::CancelTimer(kind) => {
                if let Some(t) = qp.timers.get(timer_idx(kind)) {
                    t.cancel();
                }
            }
            Action::StateChanged(_) => {}
        }
    }
}

/// The responder's view of memory and receive buffers.
struct Env<'a> {
    qp: &'a Qp,
    /// Remote access the QP grants (IB_ACCESS_*).
    access: u32,
}

fn need_bits(a: proto::Access) -> u32 {
    match a {
        proto::Access::RemoteWrite => access::REMOTE_WRITE,
        proto::Access::RemoteRead => access::REMOTE_READ,
        proto::Access::RemoteAtomic => access::REMOTE_ATOMIC,
        proto::Access::Flush => access::FLUSH_GLOBAL,
    }
}

fn map_err(e: crate::mr::AccessError) -> proto::AccessError {
    match e {
        crate::mr::AccessError::BadKey => proto::AccessError::BadKey,
        crate::mr::AccessError::OutOfBounds => proto::AccessError::OutOfBounds,
        crate::mr::AccessError::NoPermission => proto::AccessError::NoPermission,
    }
}

impl ResponderEnv for Env<'_> {
    fn check_access(
        &mut self,
        rkey: u32,
        va: u64,
        len: u32,
        a: proto::Access,
    ) -> Result<(), proto::AccessError> {
        let need = need_bits(a);
        // The QP itself must enable the remote operation: otherwise it is an unsupported
        // request (rdma_rxe's check_qp_attr_access, an invalid-request NAK).
        if self.access & need != need {
            return Err(proto::AccessError::QpDenied);
        }
        let mrs = &self.qp.dev.get().data().mrs;
        let q = (self.qp.pd, self.qp.qpn);
        match mrs.with_remote(rkey, q.0, q.1, (va, u64::from(len), need), |r| {
            r.check(va, u64::from(len), need)
        }) {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) | Err(e) => Err(map_err(e)),
        }
    }

    fn atomic(
        &mut self,
        rkey: u32,
        va: u64,
        op: proto::AtomicOp,
    ) -> Result<u64, proto::AccessError> {
        if self.access & access::REMOTE_ATOMIC == 0 {
            return Err(proto::AccessError::QpDenied);
        }
        let mrs = &self.qp.dev.get().data().mrs;
        let need = (va, 8, access::REMOTE_ATOMIC);
        let r = mrs.with_remote(rkey, self.qp.pd, self.qp.qpn, need, |r| r.atomic(va, op));
        match r {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) | Err(e) => Err(map_err(e)),
        }
    }

    fn atomic_write(&mut self, rkey: u32, va: u64, value: u64) -> Result<(), proto::AccessError> {
        if self.access & access::REMOTE_WRITE == 0 {
            return Err(proto::AccessError::QpDenied);
        }
        let mrs = &self.qp.dev.get().data().mrs;
        let need = (va, 8, access::REMOTE_WRITE);
        let r = mrs.with_remote(rkey, self.qp.pd, self.qp.qpn, need, |r| {
            r.atomic_write(va, value)
        });
        match r {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) | Err(e) => Err(map_err(e)),
        }
    }

    fn recv_head_len(&mut self) -> Option<u32> {
        self.qp.claim_head().map(|w| w.len)
    }

    /// SEND with Invalidate: an FR MR or a type 2B window bound to this QP, in its PD.
    fn invalidate(&mut self, rkey: u32) -> Result<(), proto::AccessError> {
        let mrs = &self.qp.dev.get().data().mrs;
        mrs.invalidate(rkey, self.qp.pd, Some(self.qp.qpn))
            .map_err(map_err)
    }

    /// FLUSH: the MR must grant each placement type asked for. Memory is coherent here, so
    /// once the request is ordered behind the earlier writes there is nothing to do. With
    /// selectivity "memory region" the VA and length are not used, so only the key and its
    /// access are checked (a requester may send 0 for both).
    fn flush(
        &mut self,
        rkey: u32,
        va: u64,
        len: u32,
        sel: u8,
        plt: u8,
    ) -> Result<(), proto::AccessError> {
        let mut need = 0;
        if plt & proto::Feth::PLT_GLOBAL != 0 {
            need |= access::FLUSH_GLOBAL;
        }
        if plt & proto::Feth::PLT_PERSISTENT != 0 {
            need |= access::FLUSH_PERSISTENT;
        }
        if need == 0 {
            return Err(proto::AccessError::NoPermission);
        }
        // The QP must enable each placement type too (rdma_rxe's check_qp_attr_access:
        // FLUSH_GLOBAL / FLUSH_PERSISTENT in the QP's access flags, else an unsupported
        // request, NAKed invalid request).
        if self.access & need != need {
            return Err(proto::AccessError::QpDenied);
        }
        let mrs = &self.qp.dev.get().data().mrs;
        let (pd, qpn) = (self.qp.pd, self.qp.qpn);
        let r = if sel == proto::Feth::SEL_MR {
            // A window's range would apply: whole-region FLUSH is for MR keys only.
            mrs.with_remote(rkey, pd, qpn, (0, 0, need), |r| r.check_whole(need))
        } else {
            mrs.with_remote(rkey, pd, qpn, (va, u64::from(len), need), |r| {
                r.check(va, u64::from(len), need).map(|_| ())
            })
        };
        match r {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) | Err(e) => Err(map_err(e)),
        }
    }
}

/// The pieces of `total` bytes starting `offset` bytes into a scatter/gather list: for each
/// SGE they touch, `(sge, address, position in the bytes, length)`. Stops at the end of the
/// list, so the pieces cover less than `total` when the list is too short.
fn sge_chunks(
    sges: &[Sge],
    offset: u32,
    total: usize,
) -> impl Iterator<Item = (&Sge, u64, usize, usize)> + '_ {
    let mut off = offset;
    let mut done = 0usize;
    sges.iter().filter_map(move |sge| {
        if done == total {
            return None;
        }
        if off >= sge.len {
            off -= sge.len;
            return None;
        }
        let n = core::cmp::min((sge.len - off) as usize, total - done);
        let piece = (sge, sge.addr.wrapping_add(u64::from(off)), done, n);
        done += n;
        off = 0;
        Some(piece)
    })
}

/// Copies a WR's SGE list out of its ring (into `dst`, at most [`MAX_SGE`]), so that the
/// MR accesses that follow run after the ring's interrupts-off lock is released (the MR
/// table's locks are bottom-half locks). Returns how many were copied.
fn copy_sges(dst: &mut [Sge; MAX_SGE as usize], src: &[Sge]) -> usize {
    let mut n = 0;
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s;
        n += 1;
    }
    n
}

/// A slot of the QP table.
enum Slot {
    Free,
    Reserved,
    Used(Arc<Qp>),
}

/// Most QPs per device.
pub(crate) const MAX_QP: usize = 4096;
/// First QPN handed to ordinary QPs.
const FIRST_QPN: usize = 16;

struct Slots {
    slots: KVec<Slot>,
    next: usize,
}

/// A device's QPs by number; the receive path finds its QP here.
#[pin_data]
pub(crate) struct QpTable {
    /// The slots and the next number to try. IRQs off: create and destroy (process
    /// context) and `deliver` (the receive softirq, or a sending QP's run under its
    /// `engine` for a packet to a QP of this host), which queues the packet on the QP's
    /// `rx` inside it. Nothing else nests in it.
    #[pin]
    inner: IrqSpinLock<Slots>,
}

impl QpTable {
    /// A table for [`MAX_QP`] QPs.
    pub(crate) fn new() -> Result<impl PinInit<Self>> {
        let mut slots = KVec::with_capacity(MAX_QP, GFP_KERNEL)?;
        for _ in 0..MAX_QP {
            slots.push(Slot::Free, GFP_KERNEL)?;
        }
        // Numbers are handed out from a random point on, so that a peer or another tenant
        // cannot predict the QPN of the next connection (rdma_rxe allocates cyclically too).
        let span = (MAX_QP - FIRST_QPN) as u32;
        let next = FIRST_QPN + (crate::glue::random_u32() % span) as usize;
        Ok(pin_init!(QpTable {
            inner <- new_irq_spinlock!(Slots { slots, next }, "rrxe_qp_table"),
        }))
    }

    /// Reserves a QP number (1 for the GSI QP).
    pub(crate) fn reserve(&self, gsi: bool) -> Result<u32> {
        let mut t = self.inner.lock();
        if gsi {
            return match t.slots.get_mut(GSI_QPN as usize) {
                Some(s @ Slot::Free) => {
                    *s = Slot::Reserved;
                    Ok(GSI_QPN)
                }
                _ => Err(EBUSY),
            };
        }
        let n = t.slots.len();
        for k in 0..n {
            let i = FIRST_QPN + (t.next - FIRST_QPN + k) % (n - FIRST_QPN);
            if let Some(s @ Slot::Free) = t.slots.get_mut(i) {
                *s = Slot::Reserved;
                t.next = if i + 1 >= n { FIRST_QPN } else { i + 1 };
                return Ok(i as u32);
            }
        }
        Err(ENOMEM)
    }

    /// Makes a reserved QPN reachable.
    pub(crate) fn publish(&self, qpn: u32, qp: Arc<Qp>) {
        if let Some(s) = self.inner.lock().slots.get_mut(qpn as usize) {
            *s = Slot::Used(qp);
        }
    }

    /// Frees a QPN; returns the QP that was there, to be dropped by the caller (process
    /// context).
    pub(crate) fn remove(&self, qpn: u32) -> Option<Arc<Qp>> {
        let mut t = self.inner.lock();
        let s = t.slots.get_mut(qpn as usize)?;
        match core::mem::replace(s, Slot::Free) {
            Slot::Used(qp) => Some(qp),
            _ => None,
        }
    }

    /// Queues a received packet for QP `qpn` (bottom halves off) and returns the QP, which
    /// the caller runs or kicks. `from` and `pkey` are the packet's IP addresses and BTH
    /// P_Key. A refused packet comes back with the reason, to be counted and freed by the
    /// caller outside the table lock.
    ///
    /// The returned reference must be dropped with bottom halves still off: `destroy_qp`
    /// waits for such sections to end (`synchronize_rcu`) so that the last reference to a
    /// QP is always dropped in process context.
    pub(crate) fn deliver(
        &self,
        qpn: u32,
        skb: SkBuff,
        from: &proto::addr::IpAddrs,
        pkey: u16,
    ) -> Result<Arc<Qp>, (Refused, SkBuff)> {
        let t = self.inner.lock();
        match t.slots.get(qpn as usize) {
            Some(Slot::Used(qp)) => qp.enqueue_rx(skb, from, pkey).map(|()| qp.clone()),
            _ => Err((Refused::NoQp, skb)),
        }
    }
}

/// Why [`QpTable::deliver`] refused a packet.
pub(crate) enum Refused {
    /// No such QP.
    NoQp,
    /// The QP's receive backlog is full (or the QP is going away).
    Backlog,
    /// The QP does not take packets from there (address or P_Key).
    Addr(proto::addr::AddrDrop),
}

/// Copies new receive WQEs of a queue shared with a process into a driver ring, validating
/// each; stops when the ring is full. `Err` when the queue is corrupt (its producer index
/// or an entry): the caller moves its owner to the error state.
#[inline(never)]
pub(crate) fn pull_recv_queue(
    q: &Queue,
    ring: &IrqSpinLock<WrRing<RecvWr>>,
    max_sge: u32,
) -> Result<(), ()> {
    let slot_len =
        (q.slot_words() * 8).min(crate::uwqe::RECV_HDR + MAX_SGE as usize * crate::uwqe::SGE);
    let mut bytes = [0u8; crate::uwqe::RECV_HDR + MAX_SGE as usize * crate::uwqe::SGE];
    let mut sges = [Sge::default(); MAX_SGE as usize];
    loop {
        let mut rq = ring.lock();
        if rq.full() {
            return Ok(());
        }
        let prod = q.producer().load(Ordering::Acquire);
        let avail = prod.wrapping_sub(rq.ucons);
        if avail == 0 {
            return Ok(());
        }
        if avail > q.slots() {
            return Err(());
        }
        let i = rq.ucons;
        let wqe = bytes.get_mut(..slot_len).ok_or(())?;
        q.read_slot_bytes(i, 0, wqe);
        let (wr_id, n, len) = crate::uwqe::decode_recv(wqe, max_sge, &mut sges).ok_or(())?;
        if rq
            .push(
                RecvWr {
                    wr_id,
                    num_sge: n,
                    len,
                },
                sges.get(..n as usize).unwrap_or(&[]),
                None,
            )
            .is_err()
        {
            return Ok(());
        }
        rq.ucons = rq.ucons.wrapping_add(1);
        q.consumer().store(rq.ucons, Ordering::Release);
    }
}
