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

/// A device's XRC SRQs by number.
#[pin_data]
pub(crate) struct XrcSrqTable {
    /// The SRQs by number. IRQs off: `create_srq` and `destroy_srq` (process context) and
    /// XRC target QPs' runs (process context or softirq, under their `engine`, possibly in
    /// their `claim`), which nest the SRQ's `ring` or the SRQ's CQ's `state` in it. The
    /// last reference of an SRQ is never dropped under it.
    #[pin]
    inner: IrqSpinLock<KVec<Option<Arc<Srq>>>>,
}

impl XrcSrqTable {
    /// An empty table.
    pub(crate) fn new() -> Result<impl PinInit<Self>> {
        let mut slots = KVec::with_capacity(MAX_XRC_SRQ, GFP_KERNEL)?;
        for _ in 0..MAX_XRC_SRQ {
            slots.push(None, GFP_KERNEL)?;
        }
        Ok(pin_init!(XrcSrqTable {
            inner <- new_irq_spinlock!(slots, "rrxe_xrc_srqs"),
        }))
    }

    /// Enters `srq` under a free number, which it returns.
    pub(crate) fn insert(&self, srq: Arc<Srq>) -> Result<u32> {
        let mut t = self.inner.lock();
        let (n, slot) = t
            .iter_mut()
            .enumerate()
            .skip(1)
            .find(|(_, s)| s.is_none())
            .ok_or(ENOMEM)?;
        *slot = Some(srq);
        u32::try_from(n).map_err(|_| ENOMEM)
    }

    /// Removes SRQ `n`; the caller drops it outside the lock.
    pub(crate) fn remove(&self, n: u32) -> Option<Arc<Srq>> {
        self.inner.lock().get_mut(n as usize).and_then(Option::take)
    }

    /// Runs `f` on SRQ `n` under the table's lock if it is an XRC SRQ of domain `xrcd`
    /// (`n` comes from the wire: any value is looked up safely).
    pub(crate) fn with<R>(&self, n: u32, xrcd: XrcdId, f: impl FnOnce(&Srq) -> R) -> Option<R> {
        let t = self.inner.lock();
        let srq = t.get(usize::try_from(n).ok()?)?.as_ref()?;
        if srq.xrc_domain() != Some(xrcd) {
            return None;
        }
        Some(f(srq))
    }
}
