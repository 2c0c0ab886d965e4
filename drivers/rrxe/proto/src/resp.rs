// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Responder: the receive side of a QP.
//!
//! # RC
//!
//! The responder tracks the expected PSN `epsn` and the MSN. For a request
//! at PSN `p`:
//!
//! * `p > epsn` (out of sequence): one NAK "PSN sequence error" at `epsn` is
//!   sent per gap (suppressed until an in-order packet arrives), packet dropped.
//! * `p < epsn` (duplicate): SEND/WRITE → re-ACK `epsn - 1`; READ → the
//!   request is re-executed from the reply cache entry whose PSN range holds
//!   `p` (the duplicate may ask for a tail of the original); atomic / FLUSH /
//!   ATOMIC WRITE → the cached response is replayed (never re-executed).
//!   Duplicates are ignored while responses are still queued.
//! * `p == epsn`: the opcode must fit the message in progress (a FIRST/ONLY
//!   when idle, MIDDLE/LAST of the same operation otherwise) and FIRST/MIDDLE
//!   packets must carry exactly one PMTU; violations → NAK invalid request and
//!   the QP enters error. SEND needs a receive WQE ([`ResponderEnv::recv_head_len`]):
//!   none → RNR NAK at `p` (epsn unchanged). WRITE/READ/atomic/FLUSH validate
//!   the rkey through [`ResponderEnv`]: failure → NAK remote access error, QP
//!   error. Data is placed with `PlaceRecv` / `PlaceMr` actions.
//!
//! # Placement errors
//!
//! Placement is reported back by [`ActionSink::place`] and acted on here:
//!
//! * memory not present yet (on-demand paging: `AccessError::NotPresent` from a key check
//!   or an atomic, `PlaceError::NotPresent` from a placement; the driver has started the
//!   page fault): no error. RC answers RNR NAK at the packet's PSN with nothing executed
//!   and the message's state unchanged, so the requester's RNR retry resends it once the
//!   pages are in (mlx5's answer to a responder page fault); a placement that fails this
//!   way after its check passed is therefore never acknowledged. UC and UD drop the
//!   message. A READ response whose source is not present waits, still pending;
//! * a receive buffer that cannot take the data (bad L_Key, no Local Write, range):
//!   the receive completes with `LocProtErr` (`LocLenErr` if it is too short), an RC
//!   responder NAKs "remote operational error" (invalid request for a length error) and
//!   the QP enters the error state, on every transport (IBTA responder class A / C; see
//!   `Responder::recv_failed` for rdma_rxe's statuses);
//! * an RDMA WRITE whose MR is invalidated or deregistered after its FIRST packet: NAK
//!   remote access error and QP error (RC), the rest of the message dropped (UC), as
//!   rdma_rxe re-checks the rkey on every packet (`check_rkey` → `RKEY_VIOLATION`);
//! * a READ response whose MR can no longer be read: NAK remote access error at the
//!   response's PSN, QP error (rdma_rxe's `read_reply` → `RKEY_VIOLATION`);
//! * a SEND with Invalidate whose rkey cannot be invalidated: the receive completes with
//!   `RemInvReqErr` and without the invalidated key, the message is acknowledged and the
//!   QP enters the error state (rdma_rxe's `RESPST_ERR_INVALIDATE_RKEY`, "class J").
//!
//! # Asynchronous events
//!
//! A class C error that no receive WQE reports (the "invalid request" and "remote access
//! error" NAKs of `fatal`) also emits [`QpEvent::ReqErr`] or [`QpEvent::AccessErr`]; an
//! error a receive completion carries emits none. The QP ([`super::qp::Qp`]) emits
//! [`QpEvent::CommEst`] for the first request a connected QP takes in RTR.
//!
//! READ, atomic, FLUSH and ATOMIC WRITE responses go through a fixed reply
//! cache of `R` entries and are emitted by [`Responder::poll_tx`] in PSN order;
//! a plain ACK requested while responses are still queued is deferred behind
//! them (a later response implies it). ACKs are sent for packets with the
//! AckReq bit (coalescing), always with "unlimited credits".
//!
//! # XRC
//!
//! An XRC target QP is an RC responder whose requests each name, in their XRCETH, the
//! XRC SRQ that receives them ([`ResponderEnv::select_xrc_srq`]); its responses carry the
//! XRC opcodes. The requester half is the RC one, see `req`.
//!
//! # UC
//!
//! No ACKs. Duplicates are dropped; a PSN gap abandons the message in
//! progress (the receive WQE is reused) and only a FIRST/ONLY packet starts a
//! new one. Errors drop the rest of the message.
//!
//! # UD
//!
//! SEND ONLY packets only; Q_Key must match; data is placed after the 40-byte
//! GRH area of the receive buffer; no receive WQE → silently dropped.

use super::hdr::{Aeth, AethKind, AtomicAckEth, Bth, Headers, NakCode, Packet, AETH_ACK_UNLIMITED};
use super::opcode::{OpKind, Opcode, Position};
use super::psn::Psn;
use super::qp::{
    Access, AccessError, Action, ActionSink, AtomicOp, Payload, PktRange, PlaceError, QpConfig,
    QpEvent, QpType, RecvCompletion, RecvKind, ResponderEnv, RxStatus, TxPacket, WcStatus,
};
use super::req::MAX_MSG_LEN;
use super::seg::Segments;

mod rc;
mod uc;
mod ud;
mod xrc;

/// Bytes reserved for the GRH at the start of a UD receive buffer.
pub const UD_GRH_LEN: u32 = 40;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cur {
    Idle,
    Send {
        recv_len: u32,
        off: u32,
    },
    Write {
        rkey: u32,
        va: u64,
        len: u32,
        off: u32,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReplyKind {
    Read { rkey: u32, xrc_srqn: u32 },
    Atomic { orig: u64 },
    Empty,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Reply {
    kind: ReplyKind,
    first_psn: Psn,
    npkts: u32,
    exec_psn: Psn,
    exec_va: u64,
    exec_len: u32,
    exec_n: u32,
    next_k: u32,
    pending: bool,
    /// Every response of the original request has gone out once (what remains pending
    /// after that is a replay for a duplicate).
    orig_done: bool,
    /// Service order among pending replies (refreshed on replay).
    seq: u64,
    /// Insertion order (eviction age; never refreshed).
    age: u64,
}

/// Responder state of one QP with an `R`-entry READ/atomic reply cache.
#[derive(Clone, Copy, Debug)]
pub struct Responder<const R: usize> {
    cfg: QpConfig,
    epsn: Psn,
    msn: u32,
    cur: Cur,
    nak_sent: bool,
    replies: [Option<Reply>; R],
    seq: u64,
    pending_ack: Option<(Psn, u8)>,
    /// XRC targets: the XRC SRQ the request being handled names (0 otherwise).
    xrc_srqn: u32,
    error: bool,
    started: bool,
}

fn range(p: &Packet) -> PktRange {
    PktRange {
        off: p.payload_off,
        len: p.payload_len,
    }
}

/// The successful receive completion of the message `p` ends (a SEND's last packet, or a
/// WRITE with immediate's): its immediate and solicited event come from `p`.
fn recv_done(kind: RecvKind, byte_len: u32, p: &Packet, src_qp: u32) -> Action {
    Action::RecvComplete(RecvCompletion {
        status: WcStatus::Success,
        kind,
        byte_len,
        imm: p.hdrs.imm,
        inv_rkey: None,
        src_qp,
        solicited: p.hdrs.bth.se,
    })
}

/// A failed receive completion: no data, no immediate, no event.
fn recv_error(status: WcStatus, kind: RecvKind, src_qp: u32) -> Action {
    Action::RecvComplete(RecvCompletion {
        status,
        kind,
        byte_len: 0,
        imm: None,
        inv_rkey: None,
        src_qp,
        solicited: false,
    })
}

impl<const R: usize> Responder<R> {
    /// A stopped responder (started by the transition to RTR).
    pub const fn new(cfg: &QpConfig) -> Self {
        Responder {
            cfg: *cfg,
            epsn: cfg.rq_psn,
            msn: 0,
            cur: Cur::Idle,
            nak_sent: false,
            replies: [None; R],
            seq: 0,
            pending_ack: None,
            xrc_srqn: 0,
            error: false,
            started: false,
        }
    }

    /// Resets to the state of [`Responder::new`] in place.
    pub fn reset(&mut self, cfg: &QpConfig) {
        for r in self.replies.iter_mut() {
            *r = None;
        }
        self.cfg = *cfg;
        self.epsn = cfg.rq_psn;
        self.msn = 0;
        self.cur = Cur::Idle;
        self.nak_sent = false;
        self.seq = 0;
        self.pending_ack = None;
        self.xrc_srqn = 0;
        self.error = false;
        self.started = false;
    }

    pub(crate) fn start(&mut self, cfg: &QpConfig) {
        self.cfg = *cfg;
        self.epsn = cfg.rq_psn;
        self.started = true;
    }

    pub(crate) fn update_cfg(&mut self, cfg: &QpConfig) {
        let (s, r) = (self.cfg.sq_psn, self.cfg.rq_psn);
        self.cfg = *cfg;
        self.cfg.sq_psn = s;
        self.cfg.rq_psn = r;
    }

    pub(crate) fn set_error(&mut self) {
        self.error = true;
    }

    /// `true` once a fatal error was detected.
    pub const fn is_error(&self) -> bool {
        self.error
    }
    /// Expected PSN.
    pub const fn epsn(&self) -> Psn {
        self.epsn
    }
    /// Message sequence number.
    pub const fn msn(&self) -> u32 {
        self.msn
    }

    fn any_pending(&self) -> bool {
        self.replies.iter().flatten().any(|r| r.pending)
    }

    /// The BTH of a response: the QP's destination and P_Key; an XRC target answers with
    /// the XRC opcode of the RC response (IBTA 9.2: responses carry no XRCETH).
    fn resp_bth(&self, op: Opcode, psn: Psn) -> Bth {
        let op = match self.cfg.qp_type {
            QpType::XrcTgt => op.rc_to_xrc().unwrap_or(op),
            _ => op,
        };
        let mut b = Bth::new(op, self.cfg.dest_qpn, psn);
        b.pkey = self.cfg.pkey;
        b
    }

    fn ack_packet(&self, psn: Psn, syndrome: u8) -> TxPacket {
        let b = self.resp_bth(Opcode::RC_ACKNOWLEDGE, psn);
        let mut h = Headers::new(b);
        h.aeth = Some(Aeth {
            syndrome,
            msn: self.msn & 0x00ff_ffff,
        });
        TxPacket {
            hdrs: h,
            payload: Payload::None,
            ud_wqe: None,
        }
    }

    /// Sends the ACKNOWLEDGE `syndrome` for `psn` now, changing nothing (fault
    /// injection's answer to a request it refuses: [`super::Qp::answer_nak`]).
    pub(crate) fn answer_nak<A: ActionSink>(&mut self, psn: Psn, syndrome: u8, sink: &mut A) {
        sink.push(Action::Send(self.ack_packet(psn, syndrome)));
    }

    fn emit_ack<A: ActionSink>(&mut self, psn: Psn, syndrome: u8, sink: &mut A) {
        if self.any_pending() {
            self.pending_ack = Some((psn, syndrome));
        } else {
            sink.push(Action::Send(self.ack_packet(psn, syndrome)));
        }
    }

    /// The NAK for a failed access check: the QP not enabling the operation is an
    /// unsupported request (rdma_rxe: `check_qp_attr_access` → invalid request), anything
    /// about the key or its region an R_Key violation (remote access error).
    ///
    /// Memory not present yet (on-demand paging, the driver has started the fault) is no
    /// error: RNR NAK at `psn`, nothing executed and no state changed, so the requester's
    /// RNR retry repeats the request once the pages are in (mlx5's answer to a responder
    /// page fault).
    fn access_nak<A: ActionSink>(&mut self, psn: Psn, e: AccessError, sink: &mut A) -> RxStatus {
        let code = match e {
            AccessError::NotPresent => return self.rnr(psn, sink),
            AccessError::QpDenied => NakCode::InvalidRequest,
            _ => NakCode::RemoteAccess,
        };
        self.fatal(psn, code, sink)
    }

    /// A class C error that no receive WQE reports (the request is not a SEND, or no WQE
    /// was taken for it): the NAK, the QP to the error state, and the affiliated
    /// asynchronous event the IBTA asks for in that case (rdma_rxe's comment cites
    /// C9-222.1): "invalid request" is an Invalid Request Local Work Queue Error, "remote
    /// access error" a Local Access Violation Work Queue Error. rdma_rxe raises only the
    /// latter (`RESPST_ERR_RKEY_VIOLATION_EVENT`).
    fn fatal<A: ActionSink>(&mut self, psn: Psn, code: NakCode, sink: &mut A) -> RxStatus {
        let event = match code {
            NakCode::InvalidRequest => Some(QpEvent::ReqErr),
            NakCode::RemoteAccess => Some(QpEvent::AccessErr),
            _ => None,
        };
        if let Some(e) = event {
            sink.push(Action::Event(e));
        }
        self.nak_to_error(psn, code, sink)
    }

    /// An error a receive completion already reports: the NAK and the QP to the error state,
    /// no event.
    fn nak_to_error<A: ActionSink>(&mut self, psn: Psn, code: NakCode, sink: &mut A) -> RxStatus {
        let syn = Aeth::syndrome_of(AethKind::Nak(code));
        sink.push(Action::Send(self.ack_packet(psn, syn)));
        self.error = true;
        RxStatus::Invalid
    }

    /// A reply cache entry among the first `max_dest_rd_atomic` (the responder resources
    /// the QP was given): a free one or the oldest finished one.
    /// The head receive WQE could not take the data of the message at `psn`: it completes
    /// in error and the QP enters the error state, on every transport (rdma_rxe: a
    /// `copy_data` failure is `RESPST_ERR_MALFORMED_WQE`, class A for all QP types).
    ///
    /// * Protection (L_Key, range, no Local Write): IBTA class A, "remote operational
    ///   error" NAK; the receive completes with `LocProtErr`, the IBTA status of a local
    ///   L_Key violation (rdma_rxe reports `LOC_QP_OP_ERR` here; the NAK is the same).
    /// * Length: IBTA class C, "invalid request" NAK; the receive completes with
    ///   `LocLenErr` (rdma_rxe reports `REM_INV_REQ_ERR`).
    /// * Not present (an on-demand-paging buffer whose pages the driver is faulting in):
    ///   no error. RC answers RNR NAK at `psn` with the message's state unchanged (the
    ///   receive WQE stays claimed, the bytes of this packet are placed again on the
    ///   retry); UC and UD drop the message and keep the WQE for the next one.
    fn recv_failed<A: ActionSink>(
        &mut self,
        psn: Psn,
        e: PlaceError,
        kind: RecvKind,
        src_qp: u32,
        sink: &mut A,
    ) -> RxStatus {
        let (status, code) = match e {
            PlaceError::Protection => (WcStatus::LocProtErr, NakCode::RemoteOperational),
            PlaceError::Length => (WcStatus::LocLenErr, NakCode::InvalidRequest),
            PlaceError::NotPresent if self.cfg.qp_type.reliable() => return self.rnr(psn, sink),
            PlaceError::NotPresent => {
                self.cur = Cur::Idle;
                return RxStatus::NoRecv;
            }
        };
        sink.push(recv_error(status, kind, src_qp));
        self.cur = Cur::Idle;
        if self.cfg.qp_type.reliable() {
            return self.nak_to_error(psn, code, sink);
        }
        self.error = true;
        RxStatus::Invalid
    }

    /// The cache slot for a new READ / atomic / FLUSH / ATOMIC WRITE request: a free one,
    /// else the oldest entry whose original responses have all gone out; `None` when every
    /// entry still has original responses to send (the requester exceeded our
    /// `max_dest_rd_atomic`).
    ///
    /// Age alone decides, not whether a replay is queued: a requester keeps at most
    /// `max_rd_atomic` (<= our `max_dest_rd_atomic`) such requests outstanding (IBTA
    /// 9.4.4: the responder keeps resources for that many), so a new one means it holds
    /// every response of the oldest, and a replay still queued for it answers a stale
    /// duplicate. Sparing such an entry would evict a younger one the requester may
    /// still need: its re-request would find nothing, be dropped, and the READ end in
    /// RETRY_EXC_ERR with the responder alive (seen under KASAN; `sim_read_loss.rs`).
    fn alloc_reply(&mut self) -> Option<usize> {
        let limit = usize::from(self.cfg.max_dest_rd_atomic).min(R);
        let used = self.replies.get(..limit)?;
        if let Some(i) = used.iter().position(Option::is_none) {
            return Some(i);
        }
        let mut best: Option<(usize, u64)> = None;
        for (i, r) in used.iter().enumerate() {
            if let Some(r) = r {
                if r.orig_done && best.is_none_or(|(_, s)| r.age < s) {
                    best = Some((i, r.age));
                }
            }
        }
        best.map(|(i, _)| i)
    }

    fn next_seq(&mut self) -> u64 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    /// Handles a request packet addressed to this QP.
    pub fn on_request<E: ResponderEnv, A: ActionSink>(
        &mut self,
        p: &Packet,
        env: &mut E,
        sink: &mut A,
    ) -> RxStatus {
        if self.error || !self.started {
            return RxStatus::BadState;
        }
        match self.cfg.qp_type {
            QpType::Rc => self.rc(p, env, sink),
            QpType::XrcTgt => self.xrc(p, env, sink),
            QpType::Uc => self.uc(p, env, sink),
            QpType::Ud => self.ud(p, env, sink),
            // An XRC initiator has no receive side (the QP never hands it a request).
            QpType::XrcIni => RxStatus::WrongTransport,
        }
    }

    /// Emits up to `*left` queued READ / atomic responses and then a deferred
    /// ACK. Returns `true` if work remains.
    pub fn poll_tx<A: ActionSink>(&mut self, left: &mut u32, sink: &mut A) -> bool {
        if self.error || !self.started {
            return false;
        }
        let mtu = self.cfg.mtu;
        while *left > 0 {
            let mut best: Option<(usize, u64)> = None;
            for (i, r) in self.replies.iter().enumerate() {
                if let Some(r) = r {
                    if r.pending && best.is_none_or(|(_, s)| r.seq < s) {
                        best = Some((i, r.seq));
                    }
                }
            }
            let Some((i, _)) = best else { break };
            let Some(Some(r)) = self.replies.get(i).copied() else {
                break;
            };
            let msn = self.msn;
            let ack = Aeth {
                syndrome: AETH_ACK_UNLIMITED,
                msn,
            };
            let mut done = true;
            let mut next_k = r.next_k;
            let (hdrs, payload) = match r.kind {
                ReplyKind::Read { rkey, xrc_srqn } => {
                    let segs = Segments::new(r.exec_len, mtu);
                    let Some(seg) = segs.get(r.next_k) else {
                        if let Some(Some(x)) = self.replies.get_mut(i) {
                            x.pending = false;
                            x.orig_done = true;
                        }
                        continue;
                    };
                    let op = match seg.pos {
                        Position::First => Opcode::RC_READ_RESPONSE_FIRST,
                        Position::Middle => Opcode::RC_READ_RESPONSE_MIDDLE,
                        Position::Last => Opcode::RC_READ_RESPONSE_LAST,
                        Position::Only => Opcode::RC_READ_RESPONSE_ONLY,
                    };
                    let b = self.resp_bth(op, r.exec_psn.add(seg.index));
                    let mut h = Headers::new(b);
                    if seg.pos != Position::Middle {
                        h.aeth = Some(ack);
                    }
                    next_k = r.next_k.saturating_add(1);
                    done = next_k >= r.exec_n;
                    let payload = if seg.len == 0 {
                        Payload::None
                    } else {
                        Payload::Mr {
                            rkey,
                            va: r.exec_va.wrapping_add(u64::from(seg.offset)),
                            len: seg.len,
                            xrc_srqn,
                        }
                    };
                    (h, payload)
                }
                ReplyKind::Atomic { orig } => {
                    let b = self.resp_bth(Opcode::RC_ATOMIC_ACKNOWLEDGE, r.first_psn);
                    let mut h = Headers::new(b);
                    h.aeth = Some(ack);
                    h.atomic_ack = Some(AtomicAckEth { orig });
                    (h, Payload::None)
                }
                ReplyKind::Empty => {
                    let b = self.resp_bth(Opcode::RC_READ_RESPONSE_ONLY, r.first_psn);
                    let mut h = Headers::new(b);
                    h.aeth = Some(ack);
                    (h, Payload::None)
                }
            };
            let psn = hdrs.bth.psn;
            let sent = sink.transmit(TxPacket {
                hdrs,
                payload,
                ud_wqe: None,
            });
            if sent == Err(PlaceError::NotPresent) {
                // The READ's memory is being faulted in (on-demand paging): the response
                // waits, unsent and still pending; the driver runs the QP again once the
                // fault is done.
                return false;
            }
            if sent.is_err() {
                // The MR of a READ was invalidated or deregistered while its responses
                // were going out: an R_Key violation, IBTA class C (rdma_rxe's
                // `read_reply` → RESPST_ERR_RKEY_VIOLATION). The NAK carries the PSN of the
                // response that could not be built, the one the requester waits for.
                let syn = Aeth::syndrome_of(AethKind::Nak(NakCode::RemoteAccess));
                sink.push(Action::Send(self.ack_packet(psn, syn)));
                sink.push(Action::Event(QpEvent::AccessErr));
                self.error = true;
                *left = left.saturating_sub(1);
                return false;
            }
            *left -= 1;
            if let Some(Some(x)) = self.replies.get_mut(i) {
                x.next_k = next_k;
                x.pending = !done;
                x.orig_done |= done;
            }
        }
        if *left > 0 && !self.any_pending() {
            if let Some((psn, syn)) = self.pending_ack.take() {
                sink.push(Action::Send(self.ack_packet(psn, syn)));
                *left -= 1;
            }
        }
        self.any_pending() || self.pending_ack.is_some()
    }
}
