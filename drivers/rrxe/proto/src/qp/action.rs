// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! What the state machines emit: [`Action`]s, the packets among them, and the
//! [`ActionSink`] that applies them.

use super::super::hdr::Headers;
use super::{QpEvent, QpState, RecvCompletion, SendCompletion, TimerKind, WqeId};

/// A range of bytes of a received packet buffer (offsets relative to the
/// start of the buffer given to [`super::super::hdr::parse_packet`]).
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
        /// XRC target QPs: the XRC SRQ the READ named, whose PD the key was checked in
        /// (a later request may name another); 0 for the other QPs.
        xrc_srqn: u32,
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
/// [`super::super::hdr::build_headers`] (pad is derived from the payload length).
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
    /// An affiliated asynchronous event for the QP's consumer. A driver reports it once
    /// it no longer holds the locks the consumer's handler could need (the handler may
    /// call back into the QP).
    Event(QpEvent),
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
    /// The buffer is valid but some of its memory is not mapped yet (an on-demand-paging
    /// region; the driver has started the page fault): nothing that follows may count the
    /// bytes as moved. The state machine waits or asks for a retry instead of failing: an
    /// RC responder answers RNR NAK, a requester sends the packet later, a response that
    /// cannot be placed is dropped (the retransmission logic asks again).
    NotPresent,
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
    /// A monotonic clock in µs, for the round-trip estimate behind the retransmit timeout
    /// (`req/rtt.rs`), the reordering window of READ responses and the deadline of the
    /// armed timer (`req/ack.rs`). The default, no clock, keeps the timeout at the QP's
    /// Local ACK Timeout with backoff, and takes every gap before a READ response for a
    /// loss at once.
    fn now_us(&self) -> Option<u64> {
        None
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
