// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Work requests and their completions: the QP's type and state, the send WQE and its
//! operation, completion statuses.

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
    /// XRC initiator: an RC send queue whose requests name the remote XRC SRQ
    /// ([`SendWqe::xrc_srqn`]); it has no receive side.
    XrcIni,
    /// XRC target: an RC responder whose receive queue is the XRC SRQ each request names
    /// ([`ResponderEnv::select_xrc_srq`](super::ResponderEnv::select_xrc_srq)); it has no
    /// send queue.
    XrcTgt,
}

impl QpType {
    /// Reliable (acknowledged, retried) transport: RC and both halves of XRC.
    pub const fn reliable(self) -> bool {
        matches!(self, QpType::Rc | QpType::XrcIni | QpType::XrcTgt)
    }
}

/// QP state (IBTA 10.3.1; SQE is not modelled: a send error moves any QP to Error).
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
    /// Send Queue Drain: the receive side runs as in RTS, the send queue finishes the WQEs it
    /// has started and starts no new one (posted ones wait for the return to RTS).
    Sqd,
    /// Error: everything is flushed.
    Error,
}

/// An affiliated asynchronous event of a QP (IBTA 11.6.3.1 and 11.6.3.2), emitted as
/// [`Action::Event`](super::Action::Event): the driver reports it to the QP's consumer. The
/// events that depend on what only the driver knows (Last WQE Reached: whether the QP takes
/// its receive WQEs from an SRQ; a catastrophic error of a work queue the driver keeps) are
/// the driver's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpEvent {
    /// Communication Established: a connected QP in RTR received its first request (an
    /// in-sequence one it accepted or answered with an RNR NAK); the consumer may move it
    /// to RTS without waiting for the connection manager's RTU.
    CommEst,
    /// Send Queue Drained: a QP moved to SQD with the notification asked for has completed
    /// every WQE it had started.
    SqDrained,
    /// Invalid Request Local Work Queue Error: the responder NAKed a request "invalid
    /// request" (IBTA class C) and no receive WQE completes with the error.
    ReqErr,
    /// Local Access Violation Work Queue Error: the responder NAKed a request "remote access
    /// error" (an R_Key violation, class C) and no receive WQE completes with the error.
    AccessErr,
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
    /// XRC initiator QPs: the remote XRC SRQ number its requests carry in the XRCETH
    /// (24 bits; ignored by the other QP types).
    pub xrc_srqn: u32,
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
