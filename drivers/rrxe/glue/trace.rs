// SPDX-License-Identifier: GPL-2.0
//! Trace events: the `rrxe` system of tracefs (`/sys/kernel/tracing/events/rrxe/`), defined
//! in `rrxe_trace.h` and emitted by `rrxe_glue_trace.c` (docs/tracing.md).
//!
//! One function an event (two for a packet, whose NAK is an event of its own). Each is one
//! out-of-line call into C, where the event's static key is tested first: while tracing is
//! off that test is all it does (no field is read there, nothing copied), so a packet
//! costs the call, its key test, and filling the few words of [`Pkt`] on the stack.

use super::bindings;
use super::IbDev;

/// A packet a QP sent or received, as its events show it.
#[derive(Clone, Copy, Default)]
pub(crate) struct Pkt {
    /// The QP of this device that sent or received it.
    pub(crate) qpn: u32,
    /// The BTH's destination QP.
    pub(crate) dqpn: u32,
    pub(crate) psn: u32,
    /// Payload bytes.
    pub(crate) len: u32,
    pub(crate) opcode: u8,
    pub(crate) ackreq: bool,
    /// The AETH's syndrome, if the packet has one.
    pub(crate) aeth: Option<u8>,
    /// An RNR NAK or NAK: also `rrxe_nak_tx` / `rrxe_nak_rx`.
    pub(crate) nak: bool,
}

/// Why a congestion window moved (`rrxe_cwnd`'s `reason`).
#[derive(Clone, Copy)]
pub(crate) enum CwndReason {
    /// Acknowledgements grew it.
    Grow,
    /// A loss indication (a sequence NAK, a gap) halved it.
    Loss,
    /// A retransmit timeout halved it.
    Timeout,
    /// The timeout behind a cut proved spurious: the cut is undone.
    Undo,
    /// The QP was reset or its attributes changed the window's bound.
    Reset,
}

/// What a fault injection rule did (`rrxe_fault`'s `action` and `arg`).
#[derive(Clone, Copy)]
pub(crate) enum FaultDid {
    Drop,
    Dup,
    /// The delay in µs.
    Delay(u32),
    /// The K packets it let pass.
    Reorder(u8),
    Icrc,
    /// The NAK's syndrome.
    Nak(u8),
}

/// `rrxe_pkt_tx` (`tx`) or `rrxe_pkt_rx`, and the NAK's event if `p.nak`.
#[inline]
pub(crate) fn pkt(dev: &IbDev, tx: bool, p: &Pkt) {
    let raw = bindings::rrxe_trace_pkt {
        qpn: p.qpn,
        dqpn: p.dqpn,
        psn: p.psn,
        len: p.len,
        opcode: p.opcode,
        ackreq: u8::from(p.ackreq),
        has_aeth: u8::from(p.aeth.is_some()),
        syndrome: p.aeth.unwrap_or(0),
        tx: u8::from(tx),
        nak: u8::from(p.nak),
    };
    // SAFETY: `dev` is a live rrxe device for the call (the borrow); the event copies its
    // name (a bounded copy of `ib_device::name`) and `raw`'s fields, only while enabled, and
    // keeps neither pointer.
    unsafe { bindings::rrxe_glue_trace_pkt(dev.as_ptr(), &raw) }
}

/// `rrxe_retransmit`: `timeouts` retransmit timeouts handled in one run of QP `qpn`,
/// `[una, next)` unacknowledged, `resent` request packets sent again, `rto_us` armed next.
pub(crate) fn retransmit(
    dev: &IbDev,
    qpn: u32,
    timeouts: u32,
    una: u32,
    next: u32,
    resent: u32,
    rto_us: u64,
) {
    // SAFETY: `dev` is a live rrxe device for the call; only scalars besides it.
    unsafe {
        bindings::rrxe_glue_trace_retransmit(dev.as_ptr(), qpn, timeouts, una, next, resent, rto_us)
    }
}

/// `rrxe_cwnd`: QP `qpn`'s congestion window went from `old` to `new` packets.
pub(crate) fn cwnd(dev: &IbDev, qpn: u32, old: u32, new: u32, why: CwndReason) {
    let reason = match why {
        CwndReason::Grow => bindings::rrxe_cwnd_reason_RRXE_CWND_GROW,
        CwndReason::Loss => bindings::rrxe_cwnd_reason_RRXE_CWND_LOSS,
        CwndReason::Timeout => bindings::rrxe_cwnd_reason_RRXE_CWND_TIMEOUT,
        CwndReason::Undo => bindings::rrxe_cwnd_reason_RRXE_CWND_UNDO,
        CwndReason::Reset => bindings::rrxe_cwnd_reason_RRXE_CWND_RESET,
    };
    // SAFETY: `dev` is a live rrxe device for the call; only scalars besides it.
    unsafe { bindings::rrxe_glue_trace_cwnd(dev.as_ptr(), qpn, old, new, reason as u8) }
}

/// `rrxe_qp_state`: QP `qpn` went from `old` to `new` (`enum ib_qp_state` values).
pub(crate) fn qp_state(dev: &IbDev, qpn: u32, old: u32, new: u32) {
    // SAFETY: `dev` is a live rrxe device for the call; only scalars besides it.
    unsafe { bindings::rrxe_glue_trace_qp_state(dev.as_ptr(), qpn, old, new) }
}

/// `rrxe_comp_err`: a completion of QP `qpn`'s send (or receive, `recv`) queue with an
/// error `status` (`enum ib_wc_status`), `opcode` its `enum ib_wc_opcode`.
pub(crate) fn comp_err(dev: &IbDev, qpn: u32, wr_id: u64, status: u32, opcode: u32, recv: bool) {
    // SAFETY: `dev` is a live rrxe device for the call; only scalars besides it.
    unsafe { bindings::rrxe_glue_trace_comp_err(dev.as_ptr(), qpn, wr_id, status, opcode, recv) }
}

/// `rrxe_fault`: rule `rule` hit the packet `opcode`/`psn` of QP `qpn` going `rx` or out.
pub(crate) fn fault(
    dev: &IbDev,
    rule: u32,
    qpn: u32,
    rx: bool,
    opcode: u8,
    psn: u32,
    did: FaultDid,
) {
    let (action, arg) = match did {
        FaultDid::Drop => (bindings::rrxe_fault_action_RRXE_FAULT_DROP, 0),
        FaultDid::Dup => (bindings::rrxe_fault_action_RRXE_FAULT_DUP, 0),
        FaultDid::Delay(us) => (bindings::rrxe_fault_action_RRXE_FAULT_DELAY, us),
        FaultDid::Reorder(k) => (bindings::rrxe_fault_action_RRXE_FAULT_REORDER, u32::from(k)),
        FaultDid::Icrc => (bindings::rrxe_fault_action_RRXE_FAULT_ICRC, 0),
        FaultDid::Nak(s) => (bindings::rrxe_fault_action_RRXE_FAULT_NAK, u32::from(s)),
    };
    // SAFETY: `dev` is a live rrxe device for the call; only scalars besides it.
    unsafe {
        bindings::rrxe_glue_trace_fault(dev.as_ptr(), rule, qpn, rx, opcode, psn, action as u8, arg)
    }
}
