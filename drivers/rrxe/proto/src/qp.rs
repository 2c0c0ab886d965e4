// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Queue-pair types shared by the requester, completer and responder, and
//! the [`Qp`] wrapper that drives them.
//!
//! The shared types are in `wr` (work requests, completions), `action` (what the state
//! machines emit) and `env` (what the responder asks of the driver), all re-exported here;
//! this file has the configuration, the events and errors, and [`Qp`].
//!
//! # Driving model
//!
//! The state machines are pure: the driver feeds [`Event`]s in and receives
//! [`Action`]s through an [`ActionSink`]. They never hold references to driver
//! memory; payloads are described as ranges (of a WQE's buffer, of an MR, or
//! of the received packet) and the driver does the copying.
//!
//! ```text
//!  driver                              Qp
//!  ------                              --
//!  post_send(SendWqe)      ───────▶  requester: queue WQE (fixed-capacity ring)
//!  rx packet (parse_packet)───────▶  request  ─▶ responder ─▶ Place*/RecvComplete/ACK/NAK
//!                                    response ─▶ completer ─▶ PlaceWqe/AtomicResult/SendComplete
//!  timer fired             ───────▶  completer: retransmit / RNR retry
//!  modify                  ───────▶  state transitions, flush on Error
//!  poll_tx(budget)         ───────▶  requester packets + queued READ/atomic responses
//! ```
//!
//! After every event the driver applies the emitted actions **in order** and
//! then calls [`Qp::poll_tx`] until it returns `false` (or reschedules itself
//! when the budget is exhausted). Receive buffers are owned by the driver and
//! queried through [`ResponderEnv`] so that SRQs work unchanged.

use super::hdr::Packet;
use super::psn::Psn;
use super::req::SendQueue;
use super::resp::Responder;
use super::seg::Mtu;

mod action;
mod env;
mod wr;

pub use action::*;
pub use env::*;
pub use wr::*;

/// QP configuration, set at creation and updated by [`ModifyQp`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpConfig {
    /// Local QP number.
    pub qpn: u32,
    /// Transport type.
    pub qp_type: QpType,
    /// Partition key.
    pub pkey: u16,
    /// Remote QP number (connected QPs).
    pub dest_qpn: u32,
    /// Q_Key (UD).
    pub qkey: u32,
    /// Path MTU.
    pub mtu: Mtu,
    /// First PSN the requester uses.
    pub sq_psn: Psn,
    /// First PSN the responder expects.
    pub rq_psn: Psn,
    /// Local ACK timeout exponent: 4.096 us * 2^timeout (0 = infinite).
    pub timeout: u8,
    /// Transport retry count (0..=7).
    pub retry_cnt: u8,
    /// RNR retry count (0..=7, 7 = infinite).
    pub rnr_retry: u8,
    /// Encoded RNR timer the responder sends in RNR NAKs.
    pub min_rnr_timer: u8,
    /// Max outstanding READ/atomic requests as requester.
    pub max_rd_atomic: u8,
    /// READ/atomic/FLUSH/ATOMIC WRITE requests the responder keeps replies for (its
    /// reply cache in use: `min(R, this)`); 0 refuses them (invalid-request NAK, as
    /// rdma_rxe's `check_resource` does).
    pub max_dest_rd_atomic: u8,
    /// Max packets in flight (unacknowledged) as requester (clamped to 2^23-1).
    pub max_inflight: u32,
    /// Response packets one READ request asks for at most: a longer READ WQE is
    /// requested in chunks, the next one only when the responses of the previous one
    /// have started to arrive (clamped to 1..=2^23-1).
    pub read_chunk: u32,
}

impl Default for QpConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl QpConfig {
    /// The defaults (RC, QPN 0, MTU 1024, PSNs 0, timeout 14, retries 7).
    pub const DEFAULT: QpConfig = QpConfig {
        qpn: 0,
        qp_type: QpType::Rc,
        pkey: super::hdr::DEFAULT_PKEY,
        dest_qpn: 0,
        qkey: 0,
        mtu: Mtu::M1024,
        sq_psn: Psn::new(0),
        rq_psn: Psn::new(0),
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        min_rnr_timer: 12,
        max_rd_atomic: 16,
        max_dest_rd_atomic: 16,
        max_inflight: 1024,
        read_chunk: 64,
    };
}

impl QpConfig {
    /// Local ACK timeout in microseconds (`None` = infinite).
    pub fn ack_timeout_usecs(&self) -> Option<u64> {
        if self.timeout == 0 {
            None
        } else {
            let t = u32::from(self.timeout.min(31));
            Some((4096u64 << t) / 1000)
        }
    }
}

/// Attribute changes for [`Qp::modify`] (`None` = unchanged).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ModifyQp {
    /// New state.
    pub state: Option<QpState>,
    /// Remote QP number.
    pub dest_qpn: Option<u32>,
    /// Q_Key.
    pub qkey: Option<u32>,
    /// Partition key.
    pub pkey: Option<u16>,
    /// Path MTU.
    pub mtu: Option<Mtu>,
    /// Requester start PSN.
    pub sq_psn: Option<Psn>,
    /// Responder expected PSN.
    pub rq_psn: Option<Psn>,
    /// ACK timeout exponent.
    pub timeout: Option<u8>,
    /// Retry count.
    pub retry_cnt: Option<u8>,
    /// RNR retry count.
    pub rnr_retry: Option<u8>,
    /// Min RNR timer code.
    pub min_rnr_timer: Option<u8>,
    /// Max outstanding READ/atomic as requester.
    pub max_rd_atomic: Option<u8>,
    /// Responder resources for READ/atomic requests (at most `R`).
    pub max_dest_rd_atomic: Option<u8>,
    /// The move from RTS to SQD: whether the QP emits [`QpEvent::SqDrained`] once drained
    /// (the IBTA's "enable SQD affiliated asynchronous event", `IB_QP_EN_SQD_ASYNC_NOTIFY`);
    /// `None` is no.
    pub sqd_notify: Option<bool>,
}

/// Errors of [`Qp::post_send`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostError {
    /// The protocol core's send window is full; retry after completions.
    Full,
    /// QP state does not allow posting (Reset).
    BadState,
    /// Operation not supported by the QP type, or inconsistent WQE
    /// (imm + invalidate, UD without destination, ...).
    InvalidOp,
    /// Length invalid (> 2^31, atomic != 8, UD > MTU).
    BadLength,
    /// Atomic target not 8-byte aligned.
    Misaligned,
}

/// Errors of [`Qp::modify`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModifyError {
    /// Transition not allowed.
    InvalidTransition,
    /// Attribute value out of range.
    InvalidAttr,
}

/// Events fed to [`Qp::handle`].
#[derive(Clone, Copy, Debug)]
pub enum Event<'a> {
    /// A send WQE was posted.
    PostSend(SendWqe),
    /// A packet (already ICRC-checked and parsed) arrived for this QP.
    Packet(&'a Packet),
    /// A timer fired.
    Timer(TimerKind),
    /// The QP is being modified.
    Modify(&'a ModifyQp),
}

/// Errors of [`Qp::handle`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpError {
    /// From `PostSend`.
    Post(PostError),
    /// From `Modify`.
    Modify(ModifyError),
}

/// Why a received packet was dropped (for counters; dropping is silent on the wire
/// unless a NAK action was emitted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxStatus {
    /// Consumed.
    Ok,
    /// Dropped: QP state does not accept packets.
    BadState,
    /// Dropped: transport of the opcode does not match the QP type.
    WrongTransport,
    /// Dropped: destination QP number is not this QP.
    WrongQp,
    /// Dropped: duplicate or stale.
    Duplicate,
    /// Dropped: out of sequence (a NAK may have been sent).
    OutOfSequence,
    /// Dropped: Q_Key mismatch (UD).
    BadQkey,
    /// Dropped: no receive WQE (RNR NAK sent for RC).
    NoRecv,
    /// Dropped: malformed for the QP's state (invalid-request NAK for RC).
    Invalid,
    /// Dropped: responder resources busy.
    Busy,
}

/// A queue pair: requester + completer ([`SendQueue`], `S` WQE slots) and
/// responder ([`Responder`], `R` READ/atomic reply cache entries).
///
/// It is plain data (`Copy`, no pointers): a driver that cannot afford a large
/// temporary on its stack copies [`Qp::EMPTY`] into its allocation and calls
/// [`Qp::reset`] in place.
#[derive(Clone, Copy, Debug)]
pub struct Qp<const S: usize, const R: usize> {
    cfg: QpConfig,
    state: QpState,
    sq: SendQueue<S>,
    rq: Responder<R>,
    /// [`QpEvent::CommEst`] was emitted since the QP left Reset.
    comm_est: bool,
}

impl<const S: usize, const R: usize> Qp<S, R> {
    /// A QP in `Reset` with the default configuration.
    pub const EMPTY: Self = Qp {
        cfg: QpConfig::DEFAULT,
        state: QpState::Reset,
        sq: SendQueue::new(&QpConfig::DEFAULT),
        rq: Responder::new(&QpConfig::DEFAULT),
        comm_est: false,
    };

    /// Re-initialises in place as `Qp::new(cfg)` would, without a large temporary.
    pub fn reset(&mut self, cfg: QpConfig) {
        self.cfg = cfg;
        self.state = QpState::Reset;
        self.sq.reset(&cfg);
        self.rq.reset(&cfg);
        self.comm_est = false;
    }

    /// A new QP in `Reset`.
    pub fn new(cfg: QpConfig) -> Self {
        Qp {
            cfg,
            state: QpState::Reset,
            sq: SendQueue::new(&cfg),
            rq: Responder::new(&cfg),
            comm_est: false,
        }
    }

    /// Current state.
    pub const fn state(&self) -> QpState {
        self.state
    }

    /// Current configuration.
    pub const fn config(&self) -> &QpConfig {
        &self.cfg
    }

    /// The driver has mapped memory a response could not be placed into (on-demand
    /// paging): the requester asks again for what it dropped (see `PlaceError::NotPresent`).
    pub fn fault_done(&mut self) {
        self.sq.fault_done();
    }

    /// Requester/completer half (read-only, for diagnostics).
    pub const fn send_queue(&self) -> &SendQueue<S> {
        &self.sq
    }

    /// Responder half (read-only, for diagnostics).
    pub const fn responder(&self) -> &Responder<R> {
        &self.rq
    }

    /// Dispatches one event.
    pub fn handle<E: ResponderEnv, A: ActionSink>(
        &mut self,
        ev: Event<'_>,
        env: &mut E,
        sink: &mut A,
    ) -> Result<RxStatus, QpError> {
        match ev {
            Event::PostSend(w) => self
                .post_send(w, sink)
                .map(|_| RxStatus::Ok)
                .map_err(QpError::Post),
            Event::Packet(p) => Ok(self.on_packet(p, env, sink)),
            Event::Timer(t) => {
                self.on_timer(t, sink);
                Ok(RxStatus::Ok)
            }
            Event::Modify(m) => self
                .modify(m, sink)
                .map(|_| RxStatus::Ok)
                .map_err(QpError::Modify),
        }
    }

    /// Modifies attributes and/or state.
    ///
    /// SQD (IBTA 10.3.1): entered from RTS, left to RTS (or Reset, Error); while the send
    /// queue is still draining, a move to RTS or SQD is refused (`InvalidTransition`), as
    /// rdma_rxe refuses it (EINVAL in `__qp_chk_state`).
    pub fn modify<A: ActionSink>(&mut self, m: &ModifyQp, sink: &mut A) -> Result<(), ModifyError> {
        let to = m.state.unwrap_or(self.state);
        use QpState::*;
        let ok = matches!(
            (self.state, to),
            (_, Reset)
                | (_, Error)
                | (Reset, Init)
                | (Init, Init)
                | (Init, Rtr)
                | (Rtr, Rts)
                | (Rtr, Rtr)
                | (Rts, Rts)
                | (Rts, Sqd)
                | (Sqd, Sqd)
                | (Sqd, Rts)
        );
        if !ok {
            return Err(ModifyError::InvalidTransition);
        }
        if self.state == Sqd
            && m.state.is_some()
            && matches!(to, Rts | Sqd)
            && self.sq.is_draining()
        {
            return Err(ModifyError::InvalidTransition);
        }
        let mut c = self.cfg;
        if let Some(v) = m.dest_qpn {
            c.dest_qpn = v & 0x00ff_ffff;
        }
        if let Some(v) = m.qkey {
            c.qkey = v;
        }
        if let Some(v) = m.pkey {
            c.pkey = v;
        }
        if let Some(v) = m.mtu {
            c.mtu = v;
        }
        if let Some(v) = m.sq_psn {
            c.sq_psn = v;
        }
        if let Some(v) = m.rq_psn {
            c.rq_psn = v;
        }
        if let Some(v) = m.timeout {
            if v > 31 {
                return Err(ModifyError::InvalidAttr);
            }
            c.timeout = v;
        }
        if let Some(v) = m.retry_cnt {
            if v > 7 {
                return Err(ModifyError::InvalidAttr);
            }
            c.retry_cnt = v;
        }
        if let Some(v) = m.rnr_retry {
            if v > 7 {
                return Err(ModifyError::InvalidAttr);
            }
            c.rnr_retry = v;
        }
        if let Some(v) = m.min_rnr_timer {
            if v > 31 {
                return Err(ModifyError::InvalidAttr);
            }
            c.min_rnr_timer = v;
        }
        if let Some(v) = m.max_rd_atomic {
            c.max_rd_atomic = v;
        }
        if let Some(v) = m.max_dest_rd_atomic {
            // The reply cache has R entries: more cannot be honoured (rdma_rxe refuses
            // more than its device's max_qp_rd_atom with EINVAL too).
            if usize::from(v) > R {
                return Err(ModifyError::InvalidAttr);
            }
            c.max_dest_rd_atomic = v;
        }
        self.cfg = c;
        let from = self.state;
        match to {
            Reset => {
                self.sq.reset(&c);
                self.rq.reset(&c);
                self.comm_est = false;
                if from != Reset {
                    sink.push(Action::CancelTimer(TimerKind::Retransmit));
                    sink.push(Action::CancelTimer(TimerKind::Rnr));
                }
            }
            Error => {
                if from != Error {
                    self.enter_error(sink);
                    return Ok(());
                }
            }
            Rtr if from == Init => self.rq.start(&c),
            Rts if from == Rtr => self.sq.start(&c),
            _ => {
                self.sq.update_cfg(&c);
                self.rq.update_cfg(&c);
                match (from, to) {
                    (Rts, Sqd) => self.sq.hold(m.sqd_notify.unwrap_or(false)),
                    (Sqd, Rts) => self.sq.release(),
                    _ => {}
                }
            }
        }
        if from != to {
            self.state = to;
        }
        if to == Sqd {
            // Nothing started may be left: drained at once.
            self.sq.check_drained(sink);
        }
        Ok(())
    }

    /// After the send queue handled an event: the error state if it failed, else, in SQD,
    /// SQ Drained once its last started WQE is complete.
    fn after_sq<A: ActionSink>(&mut self, sink: &mut A) {
        if self.sq.is_error() {
            self.enter_error(sink);
        } else if self.state == QpState::Sqd {
            self.sq.check_drained(sink);
        }
    }

    fn enter_error<A: ActionSink>(&mut self, sink: &mut A) {
        self.state = QpState::Error;
        self.rq.set_error();
        self.sq.flush(sink);
        sink.push(Action::FlushRecvQueue);
        sink.push(Action::StateChanged(QpState::Error));
    }

    /// Posts a send WQE.
    pub fn post_send<A: ActionSink>(&mut self, w: SendWqe, sink: &mut A) -> Result<(), PostError> {
        match self.state {
            QpState::Reset => Err(PostError::BadState),
            QpState::Error => {
                self.sq.validate(&w)?;
                sink.push(Action::SendComplete(SendCompletion {
                    id: w.id,
                    status: WcStatus::WrFlushErr,
                    byte_len: 0,
                    signaled: w.signaled,
                }));
                Ok(())
            }
            _ => self.sq.post(w),
        }
    }

    /// Fault injection: answers the received request `p` with the ACKNOWLEDGE syndrome
    /// `syndrome` (an RNR NAK or a NAK), as this QP's responder would send it, without
    /// executing the request or changing any state: the requester sees the NAK as if the
    /// responder had refused the request. Only a reliable QP (RC, XRC target) in RTR, RTS
    /// or SQD answers a request of its own transport addressed to it; `false` otherwise
    /// (the caller drops the packet, as a loss).
    pub fn answer_nak<A: ActionSink>(&mut self, p: &Packet, syndrome: u8, sink: &mut A) -> bool {
        use super::opcode::Transport;
        let ours = matches!(
            (self.cfg.qp_type, p.info.transport),
            (QpType::Rc, Transport::Rc) | (QpType::XrcTgt, Transport::Xrc)
        );
        if !ours
            || !p.info.is_request()
            || p.hdrs.bth.dest_qp != self.cfg.qpn
            || !matches!(self.state, QpState::Rtr | QpState::Rts | QpState::Sqd)
        {
            return false;
        }
        self.rq.answer_nak(p.hdrs.bth.psn, syndrome, sink);
        true
    }

    /// Handles a received packet addressed to this QP (ICRC already checked).
    pub fn on_packet<E: ResponderEnv, A: ActionSink>(
        &mut self,
        p: &Packet,
        env: &mut E,
        sink: &mut A,
    ) -> RxStatus {
        use super::opcode::Transport;
        if !matches!(self.state, QpState::Rtr | QpState::Rts | QpState::Sqd) {
            return RxStatus::BadState;
        }
        // An XRC initiator only receives responses, an XRC target only requests.
        let req = p.info.is_request();
        let tr_ok = match (self.cfg.qp_type, p.info.transport) {
            (QpType::Rc, Transport::Rc)
            | (QpType::Uc, Transport::Uc)
            | (QpType::Ud, Transport::Ud) => true,
            (QpType::XrcIni, Transport::Xrc) => !req,
            (QpType::XrcTgt, Transport::Xrc) => req,
            _ => false,
        };
        if !tr_ok {
            return RxStatus::WrongTransport;
        }
        // A UD QP also takes multicast packets (destination QPN 0xFFFFFF, IB_MULTICAST_QPN);
        // the driver hands it only those of the groups it is attached to.
        let mcast =
            self.cfg.qp_type == QpType::Ud && p.hdrs.bth.dest_qp == super::mcast::MULTICAST_QPN;
        if p.hdrs.bth.dest_qp != self.cfg.qpn && !mcast {
            return RxStatus::WrongQp;
        }
        if p.info.is_response() {
            if !matches!(self.state, QpState::Rts | QpState::Sqd) {
                return RxStatus::BadState;
            }
            let r = self.sq.on_response(p, sink);
            self.after_sq(sink);
            r
        } else {
            let r = self.rq.on_request(p, env, sink);
            if self.rq.is_error() && self.state != QpState::Error {
                self.enter_error(sink);
            } else if self.state == QpState::Rtr
                && !self.comm_est
                && self.cfg.qp_type != QpType::Ud
                && matches!(r, RxStatus::Ok | RxStatus::NoRecv)
            {
                // The first request a connected QP in RTR takes (IBTA 11.6.3.1; rdmavt's
                // RC and UC receive paths raise it there too; rdma_rxe raises none).
                self.comm_est = true;
                sink.push(Action::Event(QpEvent::CommEst));
            }
            r
        }
    }

    /// Handles a timer expiry.
    pub fn on_timer<A: ActionSink>(&mut self, t: TimerKind, sink: &mut A) {
        if !matches!(self.state, QpState::Rts | QpState::Sqd) {
            return;
        }
        self.sq.on_timer(t, sink);
        self.after_sq(sink);
    }

    /// Emits up to `budget` packets: queued READ / atomic responses first, then
    /// requests. Returns `true` if more work is pending (call again).
    pub fn poll_tx<A: ActionSink>(&mut self, budget: u32, sink: &mut A) -> bool {
        let mut left = budget;
        let mut more = false;
        if matches!(self.state, QpState::Rtr | QpState::Rts | QpState::Sqd) {
            more |= self.rq.poll_tx(&mut left, sink);
            if self.rq.is_error() {
                // A READ response whose data could not be read (NAKed).
                self.enter_error(sink);
                return false;
            }
        }
        if matches!(self.state, QpState::Rts | QpState::Sqd) {
            more |= self.sq.poll_tx(&mut left, sink);
            self.after_sq(sink);
        }
        more
    }
}
