// SPDX-License-Identifier: GPL-2.0
//! A device's QPs by number.

use super::{Qp, GSI_QPN};
use crate::glue::sync::{new_irq_spinlock, IrqSpinLock};
use crate::glue::SkBuff;
use crate::proto;
use kernel::prelude::*;
use kernel::sync::Arc;

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
        icrc: super::Icrc,
        from: &proto::addr::IpAddrs,
        pkey: u16,
    ) -> Result<Arc<Qp>, (Refused, SkBuff)> {
        let t = self.inner.lock();
        match t.slots.get(qpn as usize) {
            Some(Slot::Used(qp)) => qp.enqueue_rx(skb, icrc, from, pkey).map(|()| qp.clone()),
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
