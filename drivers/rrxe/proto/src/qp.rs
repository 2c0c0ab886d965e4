//! Queue-pair types shared by the requester, completer and responder, and
//! the [`Qp`] wrapper that drives them.
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

use super::hdr::{Headers, Packet};
use super::psn::Psn;
use super::req::SendQueue;
use super::resp::Responder;
use super::seg::Mtu;

/// QP transport type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum QpType {
    /// Reliable connected.
    #[default]
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
}

/// QP state (IBTA; SQD/SQE are not modelled).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum QpState {
    /// Reset.
    #[default]
    Reset,
    /// Initialized: receives may be posted, nothing is processed.
    Init,
    /// Ready to receive.
    Rtr,
    /// Ready to send.
    Rts,
    /// Error: everything is flushed.
    Error,
}

/// Timers a QP asks the driver to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerKind {
    /// Local ACK timeout (retransmission).
    Retransmit,
    /// RNR NAK back-off.
    Rnr,
}

/// Opaque driver handle of a send WQE (returned in actions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct WqeId(pub u64);

/// Remote memory reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RemoteAddr {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
}

/// Operation of a send WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    /// SEND, optionally with immediate data or an rkey to invalidate (not both).
    Send {
        /// Immediate data.
        imm: Option<u32>,
        /// Rkey to invalidate at the responder (RC only).
        inv_rkey: Option<u32>,
    },
    /// RDMA WRITE, optionally with immediate data.
    Write {
        /// Target.
        remote: RemoteAddr,
        /// Immediate data.
        imm: Option<u32>,
    },
    /// RDMA READ of `SendWqe::len` bytes into the WQE's buffer.
    Read {
        /// Source.
        remote: RemoteAddr,
    },
    /// ATOMIC CompareSwap (len must be 8).
    CompareSwap {
        /// Target (8-byte aligned).
        remote: RemoteAddr,
        /// Compare value.
        compare: u64,
        /// Swap value.
        swap: u64,
    },
    /// ATOMIC FetchAdd (len must be 8).
    FetchAdd {
        /// Target (8-byte aligned).
        remote: RemoteAddr,
        /// Value to add.
        add: u64,
    },
    /// ATOMIC WRITE of 8 bytes (`value`, big-endian on the wire; len must be 8).
    AtomicWrite {
        /// Target (8-byte aligned).
        remote: RemoteAddr,
        /// Value written.
        value: u64,
    },
    /// FLUSH of `SendWqe::len` bytes.
    Flush {
        /// Target.
        remote: RemoteAddr,
        /// Selectivity level (FETH SEL).
        sel: u8,
        /// Placement type (FETH PLT).
        plt: u8,
    },
}

/// UD destination (the address handle itself stays with the driver).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct UdDest {
    /// Destination QP number.
    pub qpn: u32,
    /// Q_Key (if bit 31 is set, the QP's own Q_Key is used).
    pub qkey: u32,
}

/// A send work request as seen by the protocol core. The scatter/gather list
/// stays with the driver; `len` is its total length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWqe {
    /// Driver handle.
    pub id: WqeId,
    /// Operation.
    pub op: SendOp,
    /// Total local buffer length (payload for SEND/WRITE, destination size for READ).
    pub len: u32,
    /// Signaled completion requested (completions are always reported; the
    /// driver decides whether to post a CQE).
    pub signaled: bool,
    /// Solicited event bit for the last packet.
    pub solicited: bool,
    /// Fence: wait for outstanding READ/atomic operations first.
    pub fence: bool,
    /// UD destination (required for UD QPs).
    pub ud: Option<UdDest>,
}

/// Work completion status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WcStatus {
    /// Success.
    Success,
    /// Local length error (e.g. a message longer than the receive buffer).
    LocLenErr,
    /// Local QP operation error.
    LocQpOpErr,
    /// Remote invalid request.
    RemInvReqErr,
    /// Remote access error.
    RemAccessErr,
    /// Remote operational error.
    RemOpErr,
    /// Transport retry counter exceeded.
    RetryExcErr,
    /// RNR retry counter exceeded.
    RnrRetryExcErr,
    /// Flushed (QP in error).
    WrFlushErr,
    /// Bad response.
    BadRespErr,
    /// Local protection error: a local buffer (an SGE's L_Key, its range or its access
    /// rights) could not be read or written (IBTA "Local Protection Error").
    LocProtErr,
}

/// Completion of a send WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendCompletion {
    /// WQE handle.
    pub id: WqeId,
    /// Status.
    pub status: WcStatus,
    /// Bytes transferred (READ: bytes read; others: `len`).
    pub byte_len: u32,
    /// Copied from the WQE.
    pub signaled: bool,
}

/// Kind of a receive completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvKind {
    /// A SEND was received.
    Send,
    /// An RDMA WRITE with immediate consumed the receive WQE.
    WriteImm,
}

/// Completion of the head receive WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvCompletion {
    /// Status.
    pub status: WcStatus,
    /// Kind.
    pub kind: RecvKind,
    /// Bytes received (UD: includes the 40-byte GRH area).
    pub byte_len: u32,
    /// Immediate data.
    pub imm: Option<u32>,
    /// Rkey the sender asked to invalidate (the driver invalidates it).
    pub inv_rkey: Option<u32>,
    /// Source QP (UD: from the DETH; connected: the remote QP).
    pub src_qp: u32,
    /// Solicited event bit of the last packet.
    pub solicited: bool,
}

/// A range of bytes of a received packet buffer (offsets relative to the
/// start of the buffer given to [`super::hdr::parse_packet`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PktRange {
    /// Offset.
    pub off: u32,
    /// Length.
    pub len: u32,
}

/// Where the payload of an outgoing packet comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// No payload.
    None,
    /// `len` bytes at `offset` of send WQE `id`'s gather list.
    Wqe {
        /// WQE handle.
        id: WqeId,
        /// Offset in the WQE's buffer.
        offset: u32,
        /// Length.
        len: u32,
    },
    /// `len` bytes of a local MR (READ responses); access was validated.
    Mr {
        /// Rkey.
        rkey: u32,
        /// Virtual address.
        va: u64,
        /// Length.
        len: u32,
    },
    /// 8 bytes carried in the action itself (ATOMIC WRITE, big-endian value).
    Inline([u8; 8]),
}

impl Payload {
    /// Payload length.
    pub const fn len(&self) -> u32 {
        match self {
            Payload::None => 0,
            Payload::Wqe { len, .. } | Payload::Mr { len, .. } => *len,
            Payload::Inline(_) => 8,
        }
    }
    /// `true` if there is no payload.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An outgoing packet: header fields + payload source. Build it with
/// [`super::hdr::build_headers`] (pad is derived from the payload length).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxPacket {
    /// Headers.
    pub hdrs: Headers,
    /// Payload source.
    pub payload: Payload,
    /// For UD requests: the WQE whose address handle gives the destination.
    pub ud_wqe: Option<WqeId>,
}

/// Actions emitted by the state machines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Transmit a packet (requests, ACKs, NAKs, READ / atomic responses).
    Send(TxPacket),
    /// Copy `src` of the received packet into send WQE `id`'s buffer at `offset`
    /// (RDMA READ response data).
    PlaceWqe {
        /// WQE handle.
        id: WqeId,
        /// Offset in the WQE's scatter list.
        offset: u32,
        /// Source bytes in the packet.
        src: PktRange,
    },
    /// Store the original value of an atomic into send WQE `id`'s buffer.
    AtomicResult {
        /// WQE handle.
        id: WqeId,
        /// Original remote value.
        value: u64,
    },
    /// Copy `src` of the received packet into the head receive WQE at `offset`.
    PlaceRecv {
        /// Offset in the receive WQE's scatter list.
        offset: u32,
        /// Source bytes in the packet.
        src: PktRange,
    },
    /// Copy the received packet's network header into the GRH area (the first 40 bytes)
    /// of the head receive WQE (UD).
    PlaceGrh,
    /// Copy `src` of the received packet into MR `rkey` at `va` (validated).
    PlaceMr {
        /// Rkey.
        rkey: u32,
        /// Virtual address.
        va: u64,
        /// Source bytes in the packet.
        src: PktRange,
    },
    /// A send WQE is complete (in posting order).
    SendComplete(SendCompletion),
    /// The head receive WQE is complete; pop it.
    RecvComplete(RecvCompletion),
    /// Complete every posted receive WQE with `WrFlushErr`.
    FlushRecvQueue,
    /// (Re)arm a timer to fire after `usecs` microseconds.
    ArmTimer {
        /// Which timer.
        kind: TimerKind,
        /// Delay.
        usecs: u64,
    },
    /// Cancel a timer.
    CancelTimer(TimerKind),
    /// The QP changed state (e.g. to `Error` after a fatal NAK).
    StateChanged(QpState),
}

/// Why the driver could not move the bytes of an action (see [`ActionSink::place`] and
/// [`ActionSink::transmit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlaceError {
    /// A local buffer's key is unknown or invalid (deregistered, invalidated, other PD),
    /// the range lies outside its region, or the region does not grant the access (a
    /// receive or READ buffer without Local Write).
    Protection,
    /// The data does not fit the local buffer.
    Length,
}

/// Receiver of actions.
///
/// Actions that move bytes report failure back, so that the state machine that emitted
/// them decides what follows (a NAK, an error completion, the QP to the error state): data
/// placement goes through [`ActionSink::place`] and packets through
/// [`ActionSink::transmit`].
pub trait ActionSink {
    /// Accepts one action.
    fn push(&mut self, a: Action);
    /// Applies a placement action ([`Action::PlaceWqe`], [`Action::AtomicResult`],
    /// [`Action::PlaceRecv`], [`Action::PlaceGrh`], [`Action::PlaceMr`]): `Ok` once every
    /// byte landed. An `Err` must leave the destination untouched where the action is
    /// one copy into one local buffer (an atomic result). The default records the action
    /// and reports success.
    fn place(&mut self, a: Action) -> Result<(), PlaceError> {
        self.push(a);
        Ok(())
    }
    /// Transmits a packet. `Err` only when the payload's source cannot be read (a send
    /// WQE's gather list, the MR of a READ response); a packet lost for any other reason
    /// (no route, no memory) is `Ok`, like a loss on the wire, and recovered by the
    /// protocol. The default records the packet as [`Action::Send`] and reports success.
    fn transmit(&mut self, p: TxPacket) -> Result<(), PlaceError> {
        self.push(Action::Send(p));
        Ok(())
    }
}

/// A fixed-capacity action buffer (actions beyond `N` are counted in
/// `dropped`, which a correct driver sizes to keep at 0).
#[derive(Debug)]
pub struct ActionBuf<const N: usize> {
    buf: [Option<Action>; N],
    len: usize,
    /// Actions that did not fit.
    pub dropped: usize,
}

impl<const N: usize> Default for ActionBuf<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> ActionBuf<N> {
    /// Empty buffer.
    pub const fn new() -> Self {
        ActionBuf {
            buf: [None; N],
            len: 0,
            dropped: 0,
        }
    }
    /// Stored actions.
    pub fn as_slice(&self) -> &[Option<Action>] {
        self.buf.get(..self.len).unwrap_or(&[])
    }
    /// Iterates over stored actions.
    pub fn iter(&self) -> impl Iterator<Item = &Action> {
        self.as_slice().iter().flatten()
    }
    /// Number of stored actions.
    pub const fn len(&self) -> usize {
        self.len
    }
    /// `true` if empty.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Removes all actions.
    pub fn clear(&mut self) {
        self.len = 0;
        self.dropped = 0;
    }
}

impl<const N: usize> ActionSink for ActionBuf<N> {
    fn push(&mut self, a: Action) {
        match self.buf.get_mut(self.len) {
            Some(slot) => {
                *slot = Some(a);
                self.len += 1;
            }
            None => self.dropped = self.dropped.saturating_add(1),
        }
    }
}

/// Remote access kinds checked by the responder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// RDMA WRITE target.
    RemoteWrite,
    /// RDMA READ source.
    RemoteRead,
    /// Atomic target.
    RemoteAtomic,
    /// FLUSH target.
    Flush,
}

/// Memory access failure reported by the driver (a remote-access-error NAK, except
/// [`AccessError::QpDenied`]: an invalid-request NAK).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessError {
    /// Unknown / invalid rkey or wrong PD.
    BadKey,
    /// Range outside the region.
    OutOfBounds,
    /// Region does not grant the access.
    NoPermission,
    /// The QP's own access flags do not enable the operation (rdma_rxe's
    /// `check_qp_attr_access`: an unsupported operation, NAKed as an invalid request).
    QpDenied,
}

/// Atomic operation performed by the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    /// `if *p == compare { *p = swap }`.
    CompareSwap {
        /// Compare.
        compare: u64,
        /// Swap.
        swap: u64,
    },
    /// `*p += add`.
    FetchAdd {
        /// Addend.
        add: u64,
    },
}

/// What the responder needs from the driver: MR validation, atomics, and the
/// receive queue head. Implemented over the driver's MR table and RQ/SRQ.
pub trait ResponderEnv {
    /// Validates `[va, va+len)` of MR `rkey` for `access`.
    fn check_access(
        &mut self,
        rkey: u32,
        va: u64,
        len: u32,
        access: Access,
    ) -> Result<(), AccessError>;
    /// Performs an 8-byte atomic at `va` of MR `rkey` and returns the
    /// original value (validating access itself).
    fn atomic(&mut self, rkey: u32, va: u64, op: AtomicOp) -> Result<u64, AccessError>;
    /// Atomically writes 8 bytes (`value`) at `va` of MR `rkey`.
    fn atomic_write(&mut self, rkey: u32, va: u64, value: u64) -> Result<(), AccessError>;
    /// Length of the head receive WQE, or `None` if none is posted.
    fn recv_head_len(&mut self) -> Option<u32>;
    /// Invalidates `rkey` for a SEND with Invalidate (an MR or a type 2 window of the
    /// QP's PD). Default: succeeds.
    fn invalidate(&mut self, rkey: u32) -> Result<(), AccessError> {
        let _ = rkey;
        Ok(())
    }
    /// Performs a FLUSH of the range. Default: access check only.
    fn flush(&mut self, rkey: u32, va: u64, len: u32, sel: u8, plt: u8) -> Result<(), AccessError> {
        let _ = (sel, plt);
        self.check_access(rkey, va, len, Access::Flush)
    }
}

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
}

impl<const S: usize, const R: usize> Qp<S, R> {
    /// A QP in `Reset` with the default configuration.
    pub const EMPTY: Self = Qp {
        cfg: QpConfig::DEFAULT,
        state: QpState::Reset,
        sq: SendQueue::new(&QpConfig::DEFAULT),
        rq: Responder::new(&QpConfig::DEFAULT),
    };

    /// Re-initialises in place as `Qp::new(cfg)` would, without a large temporary.
    pub fn reset(&mut self, cfg: QpConfig) {
        self.cfg = cfg;
        self.state = QpState::Reset;
        self.sq.reset(&cfg);
        self.rq.reset(&cfg);
    }

    /// A new QP in `Reset`.
    pub fn new(cfg: QpConfig) -> Self {
        Qp {
            cfg,
            state: QpState::Reset,
            sq: SendQueue::new(&cfg),
            rq: Responder::new(&cfg),
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
        );
        if !ok {
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
            }
        }
        if from != to {
            self.state = to;
        }
        Ok(())
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

    /// Handles a received packet addressed to this QP (ICRC already checked).
    pub fn on_packet<E: ResponderEnv, A: ActionSink>(
        &mut self,
        p: &Packet,
        env: &mut E,
        sink: &mut A,
    ) -> RxStatus {
        use super::opcode::Transport;
        if !matches!(self.state, QpState::Rtr | QpState::Rts) {
            return RxStatus::BadState;
        }
        let tr_ok = matches!(
            (self.cfg.qp_type, p.info.transport),
            (QpType::Rc, Transport::Rc) | (QpType::Uc, Transport::Uc) | (QpType::Ud, Transport::Ud)
        );
        if !tr_ok {
            return RxStatus::WrongTransport;
        }
        if p.hdrs.bth.dest_qp != self.cfg.qpn {
            return RxStatus::WrongQp;
        }
        if p.info.is_response() {
            if self.state != QpState::Rts {
                return RxStatus::BadState;
            }
            let r = self.sq.on_response(p, sink);
            if self.sq.is_error() {
                self.enter_error(sink);
            }
            r
        } else {
            let r = self.rq.on_request(p, env, sink);
            if self.rq.is_error() && self.state != QpState::Error {
                self.enter_error(sink);
            }
            r
        }
    }

    /// Handles a timer expiry.
    pub fn on_timer<A: ActionSink>(&mut self, t: TimerKind, sink: &mut A) {
        if self.state != QpState::Rts {
            return;
        }
        self.sq.on_timer(t, sink);
        if self.sq.is_error() {
            self.enter_error(sink);
        }
    }

    /// Emits up to `budget` packets: queued READ / atomic responses first, then
    /// requests. Returns `true` if more work is pending (call again).
    pub fn poll_tx<A: ActionSink>(&mut self, budget: u32, sink: &mut A) -> bool {
        let mut left = budget;
        let mut more = false;
        if matches!(self.state, QpState::Rtr | QpState::Rts) {
            more |= self.rq.poll_tx(&mut left, sink);
            if self.rq.is_error() {
                // A READ response whose data could not be read (NAKed).
                self.enter_error(sink);
                return false;
            }
        }
        if self.state == QpState::Rts {
            more |= self.sq.poll_tx(&mut left, sink);
            if self.sq.is_error() {
                self.enter_error(sink);
            }
        }
        more
    }
}
