// SPDX-License-Identifier: GPL-2.0
//! The QP's affiliated asynchronous events (IBTA 11.6.3): noted while the engine lock is
//! held, raised to the consumer's handler once it is released.
//!
//! A kernel consumer's handler may call back into the QP: `ib_drain_qp`'s waits on the
//! completion the core's handler completes for Last WQE Reached, nvmet-rdma and ib_srpt
//! pass Communication Established on to the connection manager, and nothing stops one from
//! posting or modifying. So no rrxe lock is held when an event is raised, as rdma_rxe
//! drops its `state_lock` before calling the handler. The raising is done by whoever noted
//! the event, right after releasing the engine: a run (the QP's work, the receive softirq,
//! a user's doorbell) or `modify_qp` (process context).

use super::{Qp, QpKind};
use crate::glue::bindings as b;
use crate::proto;
use core::sync::atomic::Ordering;

/// An affiliated asynchronous event of a QP, with the core's number.
#[repr(u32)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum QpEvent {
    /// Communication Established: the first request taken in RTR (proto).
    CommEst = b::ib_event_type_IB_EVENT_COMM_EST,
    /// Invalid Request Local Work Queue Error (proto's responder).
    ReqErr = b::ib_event_type_IB_EVENT_QP_REQ_ERR,
    /// Local Access Violation Work Queue Error (proto's responder).
    AccessErr = b::ib_event_type_IB_EVENT_QP_ACCESS_ERR,
    /// Local Work Queue Catastrophic Error: a work queue the QP shares with its process was
    /// found corrupt (its producer index, or a receive WQE that cannot be decoded), so the
    /// QP went to the error state without a WQE to complete with the error.
    Fatal = b::ib_event_type_IB_EVENT_QP_FATAL,
    /// Send Queue Drained (proto's requester, in SQD).
    SqDrained = b::ib_event_type_IB_EVENT_SQ_DRAINED,
    /// Last WQE Reached: a QP that takes its receive WQEs from an SRQ entered the error
    /// state and will take none again (IBTA 10.3.1; rdma_rxe's `flush_recv_queue`).
    LastWqeReached = b::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED,
}

impl QpEvent {
    /// The order events noted together are raised in: the connection before its errors,
    /// the errors before what follows from the error state.
    const ORDER: [QpEvent; 6] = [
        QpEvent::CommEst,
        QpEvent::ReqErr,
        QpEvent::AccessErr,
        QpEvent::Fatal,
        QpEvent::SqDrained,
        QpEvent::LastWqeReached,
    ];

    fn bit(self) -> u32 {
        match self {
            QpEvent::CommEst => 1,
            QpEvent::ReqErr => 1 << 1,
            QpEvent::AccessErr => 1 << 2,
            QpEvent::Fatal => 1 << 3,
            QpEvent::SqDrained => 1 << 4,
            QpEvent::LastWqeReached => 1 << 5,
        }
    }
}

impl From<proto::QpEvent> for QpEvent {
    fn from(e: proto::QpEvent) -> Self {
        match e {
            proto::QpEvent::CommEst => QpEvent::CommEst,
            proto::QpEvent::SqDrained => QpEvent::SqDrained,
            proto::QpEvent::ReqErr => QpEvent::ReqErr,
            proto::QpEvent::AccessErr => QpEvent::AccessErr,
        }
    }
}

impl Qp {
    /// Notes `e` for the next [`Qp::raise_events`] (under the engine lock).
    pub(super) fn note_event(&self, e: QpEvent) {
        self.events.fetch_or(e.bit(), Ordering::AcqRel);
    }

    /// The QP has just entered the error state, its receive WQE in progress flushed (under
    /// the engine lock, which keeps it from taking another): a QP that takes its receive
    /// WQEs from an SRQ, or an XRC target from the XRC SRQs, has reached its last one.
    pub(super) fn entered_error(&self) {
        if self.srq.is_some() || self.kind == QpKind::XrcTgt {
            self.note_event(QpEvent::LastWqeReached);
        }
    }

    /// Raises the events noted so far, each once, in [`QpEvent::ORDER`]. Called with no
    /// rrxe lock held (see the module doc).
    pub(super) fn raise_events(&self) {
        if self.events.load(Ordering::Acquire) == 0 {
            return;
        }
        let noted = self.events.swap(0, Ordering::AcqRel);
        for e in QpEvent::ORDER {
            if noted & e.bit() != 0 {
                self.ib.event(e as b::ib_event_type);
            }
        }
    }
}
