// SPDX-License-Identifier: GPL-2.0
//! A device's QPs by number.

use super::{Qp, GSI_QPN};
use crate::glue::sync::{new_irq_spinlock, IrqSpinLock, RcuArc, Retired};
use crate::glue::SkBuff;
use crate::proto;
use crate::proto::ids::RandomIds;
use kernel::prelude::*;
use kernel::sync::Arc;

/// What a QP number is in the table (its QP, if any, is in [`QpTable::qps`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Free,
    Reserved,
    Used,
}

/// Most QPs per device.
pub(crate) const MAX_QP: usize = 4096;
/// First QPN handed to ordinary QPs (0 and the GSI QP's 1 are special, and rdma_rxe keeps
/// the numbers below 16 too: RXE_MIN_QP_INDEX).
const FIRST_QPN: u32 = 16;

struct Slots {
    slots: KVec<Slot>,
    /// The free numbers of `FIRST_QPN..MAX_QP`, drawn at random.
    ids: RandomIds<KVec<u32>>,
}

/// A device's QPs by number; the receive path finds its QP here.
///
/// A new QP's number is drawn uniformly at random among the free numbers of
/// `FIRST_QPN..MAX_QP` ([`RandomIds`]: O(1), no retry), so that neither a peer nor another
/// tenant can predict the QPN of the next connection from the ones it saw (rdma_rxe hands
/// them out cyclically, `xa_alloc_cyclic` from 16: predictable).
#[pin_data]
pub(crate) struct QpTable {
    /// The slots and the free numbers, and the writers of `qps`: taken by create and
    /// destroy (process context; IRQs off, as before the receive path stopped taking it).
    /// Every section is O(1). `qps`' writers nest in it; nothing else does.
    #[pin]
    inner: IrqSpinLock<Slots>,
    /// Each number's QP, read by `deliver` without a lock (the receive softirq, or a
    /// sending QP's run for a packet to a QP of this host): an RCU lookup, where an
    /// interrupts-off table lock was taken for every packet. Written under `inner`.
    qps: KVec<RcuArc<Qp>>,
}

impl QpTable {
    /// A table for [`MAX_QP`] QPs.
    pub(crate) fn new() -> Result<impl PinInit<Self>> {
        let mut slots = KVec::with_capacity(MAX_QP, GFP_KERNEL)?;
        for _ in 0..MAX_QP {
            slots.push(Slot::Free, GFP_KERNEL)?;
        }
        let mut order = KVec::with_capacity(MAX_QP, GFP_KERNEL)?;
        order.extend_with(MAX_QP, 0u32, GFP_KERNEL)?;
        let mut pos = KVec::with_capacity(MAX_QP, GFP_KERNEL)?;
        pos.extend_with(MAX_QP, 0u32, GFP_KERNEL)?;
        let ids = RandomIds::new(order, pos, FIRST_QPN).ok_or(EINVAL)?;
        let mut qps = KVec::with_capacity(MAX_QP, GFP_KERNEL)?;
        for _ in 0..MAX_QP {
            qps.push(RcuArc::new(), GFP_KERNEL)?;
        }
        Ok(pin_init!(QpTable {
            inner <- new_irq_spinlock!(Slots { slots, ids }, "rrxe_qp_table"),
            qps,
        }))
    }

    /// Reserves a QP number (1 for the GSI QP; else a random free one).
    pub(crate) fn reserve(&self, gsi: bool) -> Result<u32> {
        let r = crate::glue::random_u32();
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
        let n = t.ids.take(r).ok_or(ENOMEM)?;
        match t.slots.get_mut(n as usize) {
            Some(s @ Slot::Free) => {
                *s = Slot::Reserved;
                Ok(n)
            }
            // Unreachable: a free number's slot is free.
            _ => Err(ENOMEM),
        }
    }

    /// Makes a reserved QPN reachable.
    pub(crate) fn publish(&self, qpn: u32, qp: Arc<Qp>) {
        let old = {
            let mut t = self.inner.lock();
            match (t.slots.get_mut(qpn as usize), self.qps.get(qpn as usize)) {
                (Some(s @ Slot::Reserved), Some(slot)) => {
                    *s = Slot::Used;
                    Some(slot.publish(qp))
                }
                _ => None,
            }
        };
        // A reserved number's slot is empty (`remove` emptied it): nothing was retired. A
        // `Retired` may wait for a grace period when dropped, so never under the lock.
        drop(old);
    }

    /// Frees a QPN; returns the QP that was there, which receive paths that found it before
    /// may still be taking a reference to: [`Retired::wait`] (or its drop) waits for them.
    /// Process context.
    pub(crate) fn remove(&self, qpn: u32) -> Retired<Qp> {
        let mut t = self.inner.lock();
        let (Some(s), Some(slot)) = (t.slots.get_mut(qpn as usize), self.qps.get(qpn as usize))
        else {
            return Retired::none();
        };
        if core::mem::replace(s, Slot::Free) != Slot::Free {
            // GSI_QPN is not one of `ids`' numbers: refused there, as it should be.
            t.ids.release(qpn);
        }
        slot.take()
    }

    /// Queues a received packet for QP `qpn` (bottom halves off) and returns the QP, which
    /// the caller runs or kicks. `from` and `pkey` are the packet's IP addresses and BTH
    /// P_Key, `on` the netdev it arrived on. A refused packet comes back with the reason, to be counted and freed by the
    /// caller outside the table lock.
    ///
    /// The returned reference must be dropped with bottom halves still off: `destroy_qp`
    /// waits for such sections to end (a grace period, [`Retired::wait`]) so that the last
    /// reference to a QP is always dropped in process context.
    pub(crate) fn deliver(
        &self,
        qpn: u32,
        skb: SkBuff,
        icrc: super::Icrc,
        from: &proto::addr::IpAddrs,
        pkey: u16,
        on: crate::glue::NdevId,
    ) -> Result<Arc<Qp>, (Refused, SkBuff)> {
        match self.qps.get(qpn as usize).and_then(RcuArc::get) {
            Some(qp) => match qp.enqueue_rx(skb, icrc, from, pkey, on) {
                Ok(()) => Ok(qp),
                Err(e) => Err(e),
            },
            None => Err((Refused::NoQp, skb)),
        }
    }
}

/// Why [`QpTable::deliver`] refused a packet.
pub(crate) enum Refused {
    /// No such QP.
    NoQp,
    /// The QP's receive backlog is full (or the QP is going away).
    Backlog,
    /// The packet arrived on another netdev than the QP's source GID's (RC, UC, XRC), or
    /// in another network namespace than a user UD QP's: in shared mode, another pod's.
    Netdev,
    /// The QP does not take packets from there (address or P_Key).
    Addr(proto::addr::AddrDrop),
}
