// SPDX-License-Identifier: GPL-2.0
//! XRC (eXtended Reliable Connected transport): the XRC domain verbs and a device's XRC
//! SRQs by number, the receive queues XRC target QPs look up for every request.
//!
//! An XRC SRQ belongs to an XRC domain and has its own CQ; an XRC target QP (no send or
//! receive queue of its own) takes each message's receive WQE from the SRQ the request's
//! XRCETH names, which must be an XRC SRQ of the QP's domain (else proto NAKs "invalid
//! request", IBTA). The core counts neither QPs nor SRQs of a domain against each other,
//! so a target QP never keeps an SRQ: it looks it up by number under the table's lock for
//! each use (taking a WQE, completing into the SRQ's CQ, raising its events, the PD of its
//! key checks), and destroying the SRQ removes it from the table first.

use crate::glue::sync::{new_irq_spinlock, IrqSpinLock};
use crate::glue::XrcdId;
use crate::proto::ids::RandomIds;
use crate::srq::Srq;
use kernel::prelude::*;
use kernel::sync::Arc;

/// Slots of the XRC table: every SRQ the device allows may be an XRC SRQ (numbers
/// 1..MAX_XRC_SRQ; 0 is never used, so a WQE that names no SRQ names none).
pub(crate) const MAX_XRC_SRQ: usize = crate::limits::Obj::Srq.max() as usize + 1;

/// `alloc_xrcd`: nothing to set up, the domain is its identity.
pub(crate) fn alloc_xrcd(_xrcd: XrcdId) -> Result {
    Ok(())
}

/// `dealloc_xrcd`: the core checked that no SRQ or QP uses the domain.
pub(crate) fn dealloc_xrcd(_xrcd: XrcdId) {}

/// The table's slots and its free numbers.
struct Slots {
    srqs: KVec<Option<Arc<Srq>>>,
    /// The free numbers of `1..MAX_XRC_SRQ`, drawn at random: XRC SRQ numbers travel in
    /// requests (XRCETH), so they are not handed out in a predictable order either.
    ids: RandomIds<KVec<u32>>,
}

/// A device's XRC SRQs by number.
#[pin_data]
pub(crate) struct XrcSrqTable {
    /// The SRQs by number. IRQs off: `create_srq` and `destroy_srq` (process context, O(1):
    /// a number drawn from the free ones, no scan) and XRC target QPs' runs (process
    /// context or softirq, under their `engine`, possibly in their `claim`), which run one
    /// SRQ step in it: a lookup, a bounded pull of user WQEs
    /// ([`SRQ_PULL_BATCH`](crate::srq::SRQ_PULL_BATCH), each under the SRQ's `ring`), one
    /// WQE taken (the SRQ's `ring`), one completion (the SRQ's CQ's `state`) or an event
    /// handler. The last reference of an SRQ is never dropped under it.
    #[pin]
    inner: IrqSpinLock<Slots>,
}

impl XrcSrqTable {
    /// An empty table.
    pub(crate) fn new() -> Result<impl PinInit<Self>> {
        let mut srqs = KVec::with_capacity(MAX_XRC_SRQ, GFP_KERNEL)?;
        for _ in 0..MAX_XRC_SRQ {
            srqs.push(None, GFP_KERNEL)?;
        }
        let mut order = KVec::with_capacity(MAX_XRC_SRQ, GFP_KERNEL)?;
        order.extend_with(MAX_XRC_SRQ, 0u32, GFP_KERNEL)?;
        let mut pos = KVec::with_capacity(MAX_XRC_SRQ, GFP_KERNEL)?;
        pos.extend_with(MAX_XRC_SRQ, 0u32, GFP_KERNEL)?;
        let ids = RandomIds::new(order, pos, 1).ok_or(EINVAL)?;
        Ok(pin_init!(XrcSrqTable {
            inner <- new_irq_spinlock!(Slots { srqs, ids }, "rrxe_xrc_srqs"),
        }))
    }

    /// Enters `srq` under a free number, which it returns.
    pub(crate) fn insert(&self, srq: Arc<Srq>) -> Result<u32> {
        let r = crate::glue::random_u32();
        let mut t = self.inner.lock();
        let n = t.ids.take(r).ok_or(ENOMEM)?;
        match t.srqs.get_mut(n as usize) {
            Some(slot @ None) => {
                *slot = Some(srq);
                Ok(n)
            }
            // Unreachable: a free number's slot is empty. (`srq` is not the last
            // reference: the caller keeps one.)
            _ => Err(ENOMEM),
        }
    }

    /// Removes SRQ `n`; the caller drops it outside the lock.
    pub(crate) fn remove(&self, n: u32) -> Option<Arc<Srq>> {
        let mut t = self.inner.lock();
        let srq = t.srqs.get_mut(n as usize).and_then(Option::take)?;
        t.ids.release(n);
        Some(srq)
    }

    /// Runs `f` on SRQ `n` under the table's lock if it is an XRC SRQ of domain `xrcd`
    /// (`n` comes from the wire: any value is looked up safely).
    pub(crate) fn with<R>(&self, n: u32, xrcd: XrcdId, f: impl FnOnce(&Srq) -> R) -> Option<R> {
        let t = self.inner.lock();
        let srq = t.srqs.get(usize::try_from(n).ok()?)?.as_ref()?;
        if srq.xrc_domain() != Some(xrcd) {
            return None;
        }
        Some(f(srq))
    }
}
