// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Requester and completer: the send side of a QP.
//!
//! # State
//!
//! [`SendQueue`] keeps up to `S` posted-but-incomplete WQEs in a ring, in
//! posting order. The first `assigned` of them have PSNs: WQE *i* owns
//! `[first_psn, first_psn + npkts)` where `npkts` is the number of request
//! packets (SEND/WRITE) or response packets (READ), 1 for atomics / FLUSH /
//! ATOMIC WRITE. Three PSN cursors describe progress:
//!
//! ```text
//!   una ............ send_psn ............ next_psn
//!   oldest unacked   next packet to (re)send   first unassigned PSN
//! ```
//!
//! # Requester (`poll_tx`)
//!
//! Emits the packet at `send_psn`; when `send_psn == next_psn` it assigns PSNs
//! to the next WQE, subject to: RC window (`next_psn - una <` the congestion
//! window, see below, and for a READ also `<` [`MAX_READ_INFLIGHT`]),
//! `max_rd_atomic` outstanding READ/atomic/FLUSH/ATOMIC WRITE WQEs, and the
//! fence bit. A READ consumes `npkts` PSNs (one per response packet) and is
//! requested in chunks of `read_chunk` response packets, fixed from `first`:
//! the request at PSN `first + k` asks for the bytes from offset `k * mtu` to
//! the end of its chunk (a retransmission resumes the same way, inside one
//! chunk). A chunk after the first goes out only while fewer than `read_chunk`
//! earlier responses are outstanding and, when any are, only if another
//! outstanding request stays within `max_rd_atomic`; so a responder never sends
//! an unbounded burst (an 8 MiB READ is 8192 packets) at a receiver that cannot
//! absorb it. UC/UD WQEs complete as soon as their last packet is emitted.
//! The ACK-request bit is set on the last packet of each message and every
//! [`ACK_EVERY`] packets.
//!
//! # Completer (`on_response`, `on_timer`)
//!
//! * ACK at PSN `p`: completes, in order, every SEND/WRITE WQE whose PSNs are
//!   all `<= p`; a WQE that needs a response (READ, atomic, ...) is never
//!   completed by a plain ACK: an ACK beyond it means its responses were lost
//!   (implied NAK) and the requester rewinds to `una`.
//! * READ response at `p == una`: data is placed into the WQE (`PlaceWqe`);
//!   the last one completes the WQE. A READ response after `una` is placed too and
//!   remembered (`req/ahead.rs`), so `una` moves past it once the earlier ones arrive;
//!   the gap before it is a loss (rewind to `una`) only once it has lasted a reordering
//!   window, as TCP's RACK keeps one (`gap_at_una`: a round trip). Atomic ACK:
//!   `AtomicResult` then completion.
//! * NAK PSN sequence error at `p`: implicitly ACKs `< p`, rewinds to `p`
//!   (go-back-N), once per `p`. It does not consume a retry and does not
//!   restart the retransmit timer, so a NAK livelock still ends in a timeout.
//! * RNR NAK at `p`: ACKs `< p`, rewinds to `p` and stops sending until the
//!   RNR timer fires; consumes one RNR retry unless `rnr_retry == 7`.
//! * Other NAKs: the WQE at `p` completes with the matching error and the QP
//!   enters the error state (remaining WQEs are flushed).
//! * Retransmit timer (armed while packets are unacknowledged, restarted on
//!   progress; while a gap at `una` waits out its reordering window, armed for the
//!   window's end instead, which rewinds without consuming a retry; a firing handled
//!   before the armed deadline, as the driver may, waits for it): consumes a retry and
//!   rewinds to `una`, sending one packet first when a READ, SEND or WRITE is there (a
//!   probe: a one-response READ request, or the packet at `una` asking for an ACK), and
//!   the rest only if its answer shows a loss; with no retries left,
//!   the oldest WQE completes with `RetryExcErr` and the QP enters error. Each
//!   timeout without progress doubles the next wait (at most 2^[`MAX_RTO_BACKOFF`]
//!   times); the wait itself follows the measured round trip,
//!   never below the QP's timeout (the attribute is a minimum; see `req/rtt.rs`):
//!   a queue that takes longer than the timeout to drain (many QPs sharing a
//!   slow link) would otherwise see every retry expire while its own earlier
//!   packets, or their responses, still wait in it.
//!
//! Any forward progress resets both retry counters.
//!
//! # SQD
//!
//! In the Send Queue Drain state the requester assigns no PSNs to a new WQE: what has PSNs
//! is sent, retransmitted and completed as in RTS, the rest waits for RTS. Once no WQE with
//! PSNs is left, the drain is over ([`SendQueue::is_draining`]) and, if the move to SQD
//! asked for it, [`QpEvent::SqDrained`] is emitted.
//!
//! # On-demand paging (`PlaceError::NotPresent`)
//!
//! Memory the driver must fault in first is no error: a packet whose gather list is not
//! present is not sent (nothing changes; the driver runs the QP again after the fault); a
//! READ response or atomic ACK that cannot be placed is dropped, the requester rewinds to
//! it and waits for [`SendQueue::fault_done`] (or the retransmit timer) before asking
//! again (counted in [`SqStats::unplaced`]).
//!
//! # Local buffer errors
//!
//! The driver reports a gather list it cannot read ([`ActionSink::transmit`]) and a READ
//! response or atomic result it cannot place ([`ActionSink::place`]). Either completes
//! the WQE with `LocProtErr` (the IBTA status of a local L_Key / access / range
//! violation) and the QP enters the error state, as rdma_rxe does (`finish_packet` →
//! `LOC_PROT_ERR` for a range fault, `do_read` / `do_atomic` → `LOC_PROT_ERR`; rdma_rxe
//! reports an unknown lkey while gathering as `LOC_QP_OP_ERR`, where the IBTA status is
//! the protection error used here). An atomic result that cannot be placed leaves the
//! local buffer untouched.
//!
//! # Congestion window (RC)
//!
//! SEND and WRITE packets go out only while fewer than `cwnd` PSNs are
//! unacknowledged. `cwnd` starts at `max_inflight`, halves (not below
//! [`MIN_CWND`]) on a loss indication (a new sequence NAK, a gap before a READ response or
//! an implied NAK that outlasted its reordering window, a retransmit timeout), at most once per loss
//! episode (until `una` passes the `next_psn` of that moment), and grows by one
//! packet per window of acknowledged packets, back up to `max_inflight`. Go-back-N
//! resends everything after a loss, so a window that outruns what the path
//! (or the sender's own transmit queue, shared by every QP) holds costs a whole
//! window per loss; shrinking it keeps that cost proportional to the loss rate.
//!
//! A retransmit timeout is a loss indication only until its probe is answered: an answer
//! that shows the originals arrived (an ACK beyond the probe's PSN, or one that came before
//! the probe went out; a READ response of an earlier request) makes the timeout spurious,
//! and the cut it made is undone (the window and its growth count as they were), unless
//! another loss indication came in between. An answer that shows a loss, a probe dropped
//! unanswered, or a timeout with no probe (an atomic or FLUSH at `una`) makes the cut
//! stand. TCP does the same for a spurious retransmit
//! timeout (RFC 5682 F-RTO, Linux's `tcp_try_undo_loss`). Here spurious timeouts come from
//! hosts that deschedule a QP's work (TCG guests on a busy host), not from a congested
//! path; without the undo each one halved the window for the rest of a run, since it
//! grows back by one packet per window.

use super::hdr::{
    rnr_timer_usecs, Aeth, AethKind, AtomicEth, Bth, Deth, Feth, Headers, NakCode, Packet, Reth,
};
use super::opcode::{OpKind, Opcode, Position, Transport};
use super::psn::{Psn, PSN_HALF};
use super::qp::{
    Action, ActionSink, Payload, PktRange, PlaceError, PostError, QpConfig, QpEvent, QpType,
    RxStatus, SendCompletion, SendOp, SendWqe, TimerKind, TxPacket, WcStatus,
};
use super::seg::{Segment, Segments};

mod ack;
mod ahead;
mod rtt;
mod tx;

use ahead::Ahead;
use rtt::Rto;
pub use rtt::{MAX_RTO_BACKOFF, MAX_RTO_ESTIMATE_US};

/// The requester sets AckReq at least every this many packets of a message (and on the
/// packet that fills the window, and on a message's last). rdma_rxe asks every 64 too
/// (RXE_MAX_PKT_PER_ACK). Each ACK costs both hosts a packet's work: 16 gave 0.384 Gb/s of
/// ib_write_bw 64 KiB on the benchmark kernel, 64 gave 0.437.
pub const ACK_EVERY: u32 = 64;
/// A READ WQE starts only while fewer PSNs than this are outstanding, whatever the
/// window: its responses come back as a burst the responder does not pace, and eight QPs
/// with 1024 response packets each overflowed a responder's transmit queue (ib_read_bw
/// -q 8 ended in RETRY_EXC), where SENDs and WRITEs are paced by the requester's ACKs.
pub const MAX_READ_INFLIGHT: u32 = 256;
/// The congestion window never shrinks below this many packets.
pub const MIN_CWND: u32 = 8;
/// Largest message length.
pub const MAX_MSG_LEN: u32 = 1 << 31;

/// After a retransmit timeout with a READ, SEND or WRITE at `una`: the one packet sent to
/// find out whether what followed it was lost or only late (see `on_timer`). For a READ
/// it is a request for one response packet; for a SEND or WRITE the packet at `una` again,
/// asking for an ACK, which the responder answers, if it had the packet already, with an
/// ACK of everything it has (a duplicate is re-ACKed at `epsn - 1`).
#[derive(Clone, Copy, Debug)]
struct Probe {
    /// The PSN sent (`una` at the timeout).
    psn: Psn,
    /// Where sending stood before the timeout: if the original packets or responses turn
    /// out to be still coming, sending resumes there instead of repeating them all.
    resume: Psn,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    wqe: SendWqe,
    first_psn: Psn,
    npkts: u32,
}

/// The largest window `cfg` allows: `max_inflight`, within half the PSN space.
const fn max_window(cfg: &QpConfig) -> u32 {
    let w = if cfg.max_inflight == 0 {
        1
    } else {
        cfg.max_inflight
    };
    if w > PSN_HALF - 1 {
        PSN_HALF - 1
    } else {
        w
    }
}

const fn needs_response(op: &SendOp) -> bool {
    !matches!(op, SendOp::Send { .. } | SendOp::Write { .. })
}

/// Event counts of a send queue (monotonic, for the driver's statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SqStats {
    /// Request packets sent again (after a timeout or a NAK).
    pub retransmits: u64,
    /// RNR NAKs received.
    pub rnr_naks: u64,
    /// PSN sequence error NAKs received.
    pub seq_naks: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Times the congestion window was halved (once per loss episode).
    pub cwnd_cuts: u64,
    /// Cuts undone: the retransmit timeout that made them proved spurious.
    pub cwnd_undos: u64,
    /// READ responses and atomic acknowledgements dropped because their destination was
    /// not present yet (on-demand paging; asked for again).
    pub unplaced: u64,
}

impl SqStats {
    const ZERO: SqStats = SqStats {
        retransmits: 0,
        rnr_naks: 0,
        seq_naks: 0,
        timeouts: 0,
        cwnd_cuts: 0,
        cwnd_undos: 0,
        unplaced: 0,
    };
}

/// An AIMD congestion window in packets (see the module docs).
#[derive(Clone, Copy, Debug)]
struct Cwnd {
    size: u32,
    /// Acknowledged packets not yet counted towards the next increase.
    acked: u32,
    /// While `Some(p)`, losses belong to the episode that ends when `una` reaches `p`.
    recover: Option<Psn>,
    /// `size` and `acked` before a retransmit timeout cut them, while that timeout may
    /// still prove spurious: no other loss indication came since.
    undo: Option<(u32, u32)>,
}

impl Cwnd {
    const fn new(max: u32) -> Self {
        Cwnd {
            size: max,
            acked: 0,
            recover: None,
            undo: None,
        }
    }

    /// A loss was seen while `next` was the first unassigned PSN. Returns whether the
    /// window shrank (the first loss of an episode). A cut made by a timeout of this
    /// episode is no longer undone: the loss is real.
    fn on_loss(&mut self, una: Psn, next: Psn) -> bool {
        self.undo = None;
        self.cut(una, next)
    }

    /// A retransmit timeout: [`Self::on_loss`], keeping what [`Self::undo`] restores if
    /// this timeout cut the window. A later timeout of the same episode keeps the first
    /// one's undo.
    fn on_timeout(&mut self, una: Psn, next: Psn) -> bool {
        let before = (self.size, self.acked);
        let cut = self.cut(una, next);
        if cut {
            self.undo = Some(before);
        }
        cut
    }

    /// The timeout behind the current cut proved real, or can no longer prove spurious:
    /// nothing will undo it.
    fn keep_cut(&mut self) {
        self.undo = None;
    }

    /// The timeout behind the current cut was spurious: the window is as it was before
    /// it, and the episode is over. Returns whether there was a cut to undo.
    fn undo(&mut self) -> bool {
        let Some((size, acked)) = self.undo.take() else {
            return false;
        };
        // Never below where it stands: ACKs of the episode may have grown it (by one a
        // window, never past what the cut took), and a smaller value would be a second cut.
        if size >= self.size {
            self.size = size;
            self.acked = acked;
        }
        self.recover = None;
        true
    }

    fn cut(&mut self, una: Psn, next: Psn) -> bool {
        if matches!(self.recover, Some(r) if una.before(r)) {
            return false;
        }
        self.size = (self.size / 2).max(MIN_CWND);
        self.acked = 0;
        self.recover = Some(next);
        true
    }

    /// `n` more packets are acknowledged, up to `una`; the window grows by one per
    /// window's worth, never beyond `max`.
    fn on_acked(&mut self, n: u32, una: Psn, max: u32) {
        if matches!(self.recover, Some(r) if !una.before(r)) {
            self.recover = None;
        }
        if self.size >= max {
            self.size = max;
            self.acked = 0;
            return;
        }
        self.acked = self.acked.saturating_add(n);
        while self.acked >= self.size && self.size < max {
            self.acked -= self.size;
            self.size += 1;
        }
    }
}

/// Requester + completer state of one QP, with room for `S` WQEs.
#[derive(Clone, Copy, Debug)]
pub struct SendQueue<const S: usize> {
    stats: SqStats,
    /// One past the highest PSN ever sent (packets below it are retransmissions).
    high_psn: Psn,
    cfg: QpConfig,
    ring: [Option<Entry>; S],
    head: usize,
    len: usize,
    assigned: usize,
    next_psn: Psn,
    send_psn: Psn,
    una: Psn,
    retry_left: u8,
    rnr_left: u8,
    rnr_wait: bool,
    /// A response could not be placed (its destination is being faulted in, on-demand
    /// paging): nothing is (re)requested until the driver says the fault is done
    /// ([`SendQueue::fault_done`]) or the retransmit timer fires.
    fault_wait: bool,
    rto_armed: bool,
    /// The retransmit timeout: round-trip estimate and backoff.
    rto: Rto,
    rd_atomic: u32,
    nak_guard: Option<Psn>,
    probe: Option<Probe>,
    /// READ responses placed while ahead of `una` (`ahead.rs`).
    ahead: Ahead,
    /// When a response after `una` was first seen while `una`'s was missing (µs, from the
    /// sink's clock): the start of the reordering window (`gap_at_una`).
    gap_since: Option<u64>,
    /// The armed retransmit timer is the end of that window, not a retransmit timeout.
    reorder_check: bool,
    /// When the armed retransmit timer is due (µs, the sink's clock; `None` without one).
    timer_due: Option<u64>,
    cwnd: Cwnd,
    /// SQD: no WQE without PSNs is started (IBTA 10.3.1: the messages in progress finish,
    /// no new one begins); the held WQEs start once the QP is back in RTS.
    hold: bool,
    /// SQD, while a started WQE is not complete yet: whether SQ Drained is emitted then.
    draining: Option<bool>,
    error: bool,
    started: bool,
}

impl<const S: usize> SendQueue<S> {
    /// A stopped send queue (started by the transition to RTS).
    pub const fn new(cfg: &QpConfig) -> Self {
        SendQueue {
            stats: SqStats::ZERO,
            high_psn: cfg.sq_psn,
            cfg: *cfg,
            ring: [None; S],
            head: 0,
            len: 0,
            assigned: 0,
            next_psn: cfg.sq_psn,
            send_psn: cfg.sq_psn,
            una: cfg.sq_psn,
            retry_left: cfg.retry_cnt,
            rnr_left: cfg.rnr_retry,
            rnr_wait: false,
            fault_wait: false,
            rto_armed: false,
            rto: Rto::NEW,
            rd_atomic: 0,
            nak_guard: None,
            probe: None,
            ahead: Ahead::new(cfg.sq_psn),
            gap_since: None,
            reorder_check: false,
            timer_due: None,
            cwnd: Cwnd::new(max_window(cfg)),
            hold: false,
            draining: None,
            error: false,
            started: false,
        }
    }

    /// Resets to the state of [`SendQueue::new`] in place (no large
    /// temporary on the stack).
    pub fn reset(&mut self, cfg: &QpConfig) {
        for e in self.ring.iter_mut() {
            *e = None;
        }
        self.cfg = *cfg;
        self.high_psn = cfg.sq_psn;
        self.head = 0;
        self.len = 0;
        self.assigned = 0;
        self.next_psn = cfg.sq_psn;
        self.send_psn = cfg.sq_psn;
        self.una = cfg.sq_psn;
        self.retry_left = cfg.retry_cnt;
        self.rnr_left = cfg.rnr_retry;
        self.rnr_wait = false;
        self.fault_wait = false;
        self.rto_armed = false;
        self.rto.reset();
        self.rd_atomic = 0;
        self.nak_guard = None;
        self.probe = None;
        self.ahead.clear(cfg.sq_psn);
        self.gap_since = None;
        self.reorder_check = false;
        self.timer_due = None;
        self.cwnd = Cwnd::new(max_window(cfg));
        self.hold = false;
        self.draining = None;
        self.error = false;
        self.started = false;
    }

    pub(crate) fn start(&mut self, cfg: &QpConfig) {
        self.cfg = *cfg;
        self.high_psn = cfg.sq_psn;
        self.next_psn = cfg.sq_psn;
        self.send_psn = cfg.sq_psn;
        self.una = cfg.sq_psn;
        self.retry_left = cfg.retry_cnt;
        self.rnr_left = cfg.rnr_retry;
        self.rto.reset();
        self.ahead.clear(cfg.sq_psn);
        self.gap_since = None;
        self.cwnd = Cwnd::new(max_window(cfg));
        self.started = true;
    }

    pub(crate) fn update_cfg(&mut self, cfg: &QpConfig) {
        // PSNs only change through start(); other attributes apply at once.
        let (s, r) = (self.cfg.sq_psn, self.cfg.rq_psn);
        self.cfg = *cfg;
        self.cfg.sq_psn = s;
        self.cfg.rq_psn = r;
    }

    /// The QP enters SQD: nothing new starts; `notify`: emit SQ Drained once drained.
    pub(crate) fn hold(&mut self, notify: bool) {
        self.hold = true;
        self.draining = Some(notify);
    }

    /// The QP is back in RTS: the held WQEs may start.
    pub(crate) fn release(&mut self) {
        self.hold = false;
        self.draining = None;
    }

    /// SQD: a WQE the queue started is not complete yet (`ib_qp_attr.sq_draining`).
    pub const fn is_draining(&self) -> bool {
        self.draining.is_some()
    }

    /// SQD: once no started WQE is left, the drain is over; [`QpEvent::SqDrained`] if it
    /// was asked for. rdma_rxe's requester and completer raise it on the same condition
    /// (`req_check_sq_drain_done`, `comp_check_sq_drain_done`).
    pub(crate) fn check_drained<A: ActionSink>(&mut self, sink: &mut A) {
        if let Some(notify) = self.draining {
            if self.assigned == 0 {
                self.draining = None;
                if notify {
                    sink.push(Action::Event(QpEvent::SqDrained));
                }
            }
        }
    }

    /// Event counts since creation.
    pub const fn stats(&self) -> SqStats {
        self.stats
    }

    /// Number of WQEs held (posted, not yet completed).
    pub const fn len(&self) -> usize {
        self.len
    }
    /// `true` if no WQE is held.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Oldest unacknowledged PSN.
    pub const fn una(&self) -> Psn {
        self.una
    }
    /// Next PSN to be assigned.
    pub const fn next_psn(&self) -> Psn {
        self.next_psn
    }
    /// `true` once a fatal error was detected.
    pub const fn is_error(&self) -> bool {
        self.error
    }

    fn idx(&self, i: usize) -> Option<usize> {
        self.head.checked_add(i)?.checked_rem(S)
    }
    fn entry(&self, i: usize) -> Option<&Entry> {
        if i >= self.len {
            return None;
        }
        self.ring.get(self.idx(i)?)?.as_ref()
    }
    fn entry_mut(&mut self, i: usize) -> Option<&mut Entry> {
        if i >= self.len {
            return None;
        }
        let k = self.idx(i)?;
        self.ring.get_mut(k)?.as_mut()
    }

    /// Checks a WQE against the QP type and limits.
    pub fn validate(&self, w: &SendWqe) -> Result<(), PostError> {
        if w.len > MAX_MSG_LEN {
            return Err(PostError::BadLength);
        }
        let t = self.cfg.qp_type;
        if t == QpType::XrcTgt {
            // An XRC target QP has no send queue.
            return Err(PostError::InvalidOp);
        }
        match w.op {
            SendOp::Send { imm, inv_rkey } => {
                if imm.is_some() && inv_rkey.is_some() {
                    return Err(PostError::InvalidOp);
                }
                if inv_rkey.is_some() && !t.reliable() {
                    return Err(PostError::InvalidOp);
                }
            }
            SendOp::Write { .. } => {
                if t == QpType::Ud {
                    return Err(PostError::InvalidOp);
                }
            }
            SendOp::Read { .. } => {
                if !t.reliable() {
                    return Err(PostError::InvalidOp);
                }
            }
            // IBTA 1.5's FLUSH and ATOMIC WRITE: RC only here (no XRC opcodes, see `opcode`).
            SendOp::Flush { .. } => {
                if t != QpType::Rc {
                    return Err(PostError::InvalidOp);
                }
            }
            SendOp::CompareSwap { remote, .. }
            | SendOp::FetchAdd { remote, .. }
            | SendOp::AtomicWrite { remote, .. } => {
                let rc_only = matches!(w.op, SendOp::AtomicWrite { .. });
                if !t.reliable() || (rc_only && t != QpType::Rc) {
                    return Err(PostError::InvalidOp);
                }
                if w.len != 8 {
                    return Err(PostError::BadLength);
                }
                if remote.va & 7 != 0 {
                    return Err(PostError::Misaligned);
                }
            }
        }
        if t == QpType::Ud {
            if w.ud.is_none() {
                return Err(PostError::InvalidOp);
            }
            if w.len > self.cfg.mtu.bytes() {
                return Err(PostError::BadLength);
            }
        }
        Ok(())
    }

    /// Queues a WQE.
    pub fn post(&mut self, w: SendWqe) -> Result<(), PostError> {
        self.validate(&w)?;
        if self.len >= S {
            return Err(PostError::Full);
        }
        let k = self.idx(self.len).ok_or(PostError::Full)?;
        let slot = self.ring.get_mut(k).ok_or(PostError::Full)?;
        let npkts = match w.op {
            SendOp::Send { .. } | SendOp::Write { .. } | SendOp::Read { .. } => {
                self.cfg.mtu.packets(w.len)
            }
            _ => 1,
        };
        *slot = Some(Entry {
            wqe: w,
            first_psn: Psn::new(0),
            npkts,
        });
        self.len += 1;
        Ok(())
    }

    fn complete_head<A: ActionSink>(&mut self, status: WcStatus, sink: &mut A) {
        let Some(k) = self.idx(0) else { return };
        let Some(e) = self.ring.get_mut(k).and_then(Option::take) else {
            return;
        };
        self.head = self.idx(1).unwrap_or(0);
        self.len = self.len.saturating_sub(1);
        self.assigned = self.assigned.saturating_sub(1);
        if needs_response(&e.wqe.op) {
            self.rd_atomic = self.rd_atomic.saturating_sub(1);
        }
        let last = e.first_psn.add(e.npkts);
        if self.una.before(last) {
            self.una = last;
        }
        if self.send_psn.before(self.una) {
            self.send_psn = self.una;
        }
        sink.push(Action::SendComplete(SendCompletion {
            id: e.wqe.id,
            status,
            byte_len: if status == WcStatus::Success {
                e.wqe.len
            } else {
                0
            },
            signaled: e.wqe.signaled,
        }));
    }

    /// WQE `i` (the `i`-th held one) failed locally: the WQEs posted before it, still
    /// waiting for their ACKs, are flushed (the QP is going to the error state and
    /// completions stay in posting order), WQE `i` completes with `status`, the rest are
    /// flushed when the QP enters the error state.
    fn fail_at<A: ActionSink>(&mut self, i: usize, status: WcStatus, sink: &mut A) {
        for _ in 0..i {
            if self.len == 0 {
                break;
            }
            self.complete_head(WcStatus::WrFlushErr, sink);
        }
        self.fail(status, sink);
    }

    fn fail<A: ActionSink>(&mut self, status: WcStatus, sink: &mut A) {
        if self.len > 0 {
            self.complete_head(status, sink);
        }
        self.error = true;
    }

    /// Completes every held WQE with `WrFlushErr` and stops (QP → Error).
    pub fn flush<A: ActionSink>(&mut self, sink: &mut A) {
        while self.len > 0 {
            self.complete_head(WcStatus::WrFlushErr, sink);
        }
        if self.cfg.qp_type.reliable() {
            sink.push(Action::CancelTimer(TimerKind::Retransmit));
            sink.push(Action::CancelTimer(TimerKind::Rnr));
        }
        self.rto_armed = false;
        self.rnr_wait = false;
        // Nothing is draining in the error state (SQD's drain ends unreported).
        self.draining = None;
        self.error = true;
    }

    fn rewind(&mut self, psn: Psn) {
        // An unanswered probe at `psn` stays: when a READ's original request was
        // lost, the responder knows that READ only from the probe's one-packet request,
        // its reply cache entry ends there, and a longer request for it again is refused
        // (invalid request, dropped) every time, until RETRY_EXC_ERR.
        if !matches!(self.probe, Some(pr) if pr.psn == psn) {
            self.drop_probe();
        }
        if psn.before(self.send_psn) {
            self.rto.on_retransmit();
            self.send_psn = if psn.before(self.una) { self.una } else { psn };
        }
    }

    fn find(&self, psn: Psn) -> Option<(usize, Entry)> {
        let mut i = 0;
        while i < self.assigned {
            let e = self.entry(i)?;
            if psn.in_window(e.first_psn, e.npkts) {
                return Some((i, *e));
            }
            i += 1;
        }
        None
    }

    /// The driver has mapped the memory a response could not be placed into (on-demand
    /// paging): what was dropped is asked for again from the next [`SendQueue::poll_tx`].
    pub fn fault_done(&mut self) {
        self.fault_wait = false;
    }

    fn has_tx_work(&self) -> bool {
        !self.rnr_wait
            && !self.fault_wait
            && !self.window_full()
            && (self.send_psn != self.next_psn || (!self.hold && self.assigned < self.len))
    }

    /// RC: the most request PSNs beyond the oldest unacknowledged one.
    fn window(&self) -> u32 {
        self.cwnd.size.clamp(1, max_window(&self.cfg))
    }

    /// The congestion window, in packets (RC).
    pub const fn cwnd(&self) -> u32 {
        self.cwnd.size
    }

    /// The smoothed round trip in µs, as the retransmit timeout measures it (RC; 0 before
    /// the first sample).
    pub const fn srtt_us(&self) -> u64 {
        self.rto.srtt()
    }

    /// The wait the retransmit timer is armed with next (µs): the QP's Local ACK Timeout,
    /// or the round-trip estimate above it, with its backoff. `None` without a timeout
    /// (not RC, or a timeout of 0: wait forever).
    pub fn rto_us(&self) -> Option<u64> {
        self.cfg.ack_timeout_usecs().map(|us| self.rto.timeout(us))
    }

    /// A loss indication: the window shrinks once per episode.
    fn on_loss(&mut self) {
        let cut = self.cwnd.on_loss(self.una, self.next_psn);
        self.count_cut(cut);
    }

    /// A retransmit timeout: a loss indication until its probe's answer says otherwise.
    fn on_timeout_loss(&mut self) {
        let cut = self.cwnd.on_timeout(self.una, self.next_psn);
        self.count_cut(cut);
    }

    fn count_cut(&mut self, cut: bool) {
        if cut {
            self.stats.cwnd_cuts = self.stats.cwnd_cuts.wrapping_add(1);
        }
    }

    /// Forgets the probe unanswered: with it goes the chance to find its timeout
    /// spurious, so that timeout's cut stands.
    fn drop_probe(&mut self) {
        if self.probe.take().is_some() {
            self.cwnd.keep_cut();
        }
    }

    /// The timeout's probe is answered: by the originals, `late` (the timeout was
    /// spurious and its cut is undone), or by the probe's own answer (a loss: the cut
    /// stands).
    fn probe_verdict(&mut self, late: bool) {
        if !late {
            self.cwnd.keep_cut();
        } else if self.cwnd.undo() {
            self.stats.cwnd_undos = self.stats.cwnd_undos.wrapping_add(1);
        }
    }

    /// RC: as many packets are unacknowledged as the window allows; nothing more goes out
    /// until ACKs (requested every `ACK_EVERY` packets) move `una`.
    fn window_full(&self) -> bool {
        self.cfg.qp_type.reliable() && self.send_psn.distance_from(self.una) >= self.window()
    }

    fn arm_rto<A: ActionSink>(&mut self, sink: &mut A) {
        self.reorder_check = false;
        if let Some(us) = self.cfg.ack_timeout_usecs() {
            let usecs = self.rto.timeout(us);
            self.arm_timer(usecs, sink.now_us(), sink);
        }
    }

    /// Arms the retransmit timer for `usecs` from `now` (the sink's clock, if it has one),
    /// remembering when it is due: a firing handled before then belongs to an earlier
    /// arming (`on_timer`).
    fn arm_timer<A: ActionSink>(&mut self, usecs: u64, now: Option<u64>, sink: &mut A) {
        sink.push(Action::ArmTimer {
            kind: TimerKind::Retransmit,
            usecs,
        });
        self.rto_armed = true;
        self.timer_due = now.map(|t| t.saturating_add(usecs));
    }
}
