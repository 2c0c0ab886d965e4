// SPDX-License-Identifier: GPL-2.0
//! Memory windows: allocation, binding (BIND_MW), unbinding and release.

use super::{AccessError, AccessFlags, Entry, MrTable, MwCell};
use crate::glue::sync::new_bh_spinlock;
use core::sync::atomic::Ordering;
use kernel::prelude::*;
use kernel::sync::Arc;

/// A memory window.
pub(crate) struct Window {
    /// The PD (its address, as an identity).
    pub(crate) pd: usize,
    /// Type 2B (bound by work requests to one QP, invalidated by LOCAL_INV or SEND with
    /// invalidate) rather than type 1.
    pub(crate) type2: bool,
    /// The current rkey (same slot; the tag changes with each bind).
    pub(crate) rkey: u32,
    /// What it is bound to; `None` while unbound (free).
    pub(crate) bound: Option<Binding>,
}

/// A window's binding.
#[derive(Clone, Copy)]
pub(crate) struct Binding {
    /// The region's key.
    pub(crate) mr_key: u32,
    /// The region's identity (its key may be reused by a later region).
    pub(crate) mr_id: u64,
    /// First address of the window (in the region's address space).
    pub(crate) va: u64,
    /// Length in bytes.
    pub(crate) len: u64,
    /// The remote access it grants.
    pub(crate) access: AccessFlags,
    /// Type 2B: the QP it is bound to.
    pub(crate) qpn: Option<u32>,
}

/// A BIND_MW work request.
#[derive(Clone, Copy)]
pub(crate) struct BindReq {
    /// The rkey the window gets (its slot identifies the window).
    pub(crate) new_rkey: u32,
    /// The region to bind to.
    pub(crate) mr_lkey: u32,
    /// First address.
    pub(crate) va: u64,
    /// Length (0 unbinds a type 1 window).
    pub(crate) len: u64,
    /// The access the window is to grant (as the WR carries it: anything but remote
    /// rights is refused when it executes).
    pub(crate) access: AccessFlags,
}

impl MrTable {
    /// Adds an unbound window of PD `pd` and returns its rkey.
    pub(crate) fn insert_window(&self, pd: usize, type2: bool) -> Result<u32> {
        let cell = Arc::pin_init(
            pin_init!(MwCell {
                window <- new_bh_spinlock!(
                    Window {
                        pd,
                        type2,
                        rkey: 0,
                        bound: None,
                    },
                    "rrxe_mr_window"
                ),
            }),
            GFP_KERNEL,
        )?;
        let key = self.insert_entry(Entry::Mw(cell))?;
        self.windows.fetch_add(1, Ordering::Relaxed);
        Ok(key)
    }

    /// Removes the window in the slot of `key` (dealloc_mw). False if there is none.
    pub(crate) fn remove_window(&self, key: u32) -> bool {
        let Some(cell) = self.window_cell(key) else {
            return false;
        };
        // The key it has now (a bind may have changed its tag): the next one differs.
        let last = cell.window.lock().rkey;
        let Some(Entry::Mw(cell)) = self.take_slot(key >> 8, last) else {
            return false;
        };
        self.windows.fetch_sub(1, Ordering::Relaxed);
        let old = cell.window.lock().bound.take();
        if let Some(b) = old {
            self.release_binding(&b);
        }
        true
    }

    /// A binding ended: its region counts one window less (if it still exists).
    pub(super) fn release_binding(&self, b: &Binding) {
        if let Some(c) = self.region_cell(b.mr_key) {
            let mut r = c.region.lock();
            if r.id == b.mr_id {
                r.windows = r.windows.saturating_sub(1);
            }
        }
    }

    /// Whether `b` still leads to its region.
    pub(super) fn binding_live(&self, b: &Binding) -> bool {
        self.region_cell(b.mr_key)
            .is_some_and(|c| c.region.lock().id == b.mr_id)
    }

    /// Whether a window is bound to the region of `key`.
    pub(crate) fn has_bound_windows(&self, key: u32) -> bool {
        self.region_cell(key).is_some_and(|c| {
            let r = c.region.lock();
            r.lkey == key && r.windows > 0
        })
    }

    /// Type 2B windows bound to QP `qpn` become unbound (the QP is destroyed; its number
    /// will be reused). Process context: visits every slot, each under its own short lock
    /// (no long section with interrupts off); nothing to do while there is no window (a
    /// window allocated meanwhile cannot be bound to this QP: it posts nothing any more).
    pub(crate) fn unbind_qp(&self, qpn: u32) {
        if self.windows.load(Ordering::Relaxed) == 0 {
            return;
        }
        let n = self.inner.lock().slots();
        for i in 1..n {
            let Some(cell) = self.window_cell((i as u32) << 8) else {
                continue;
            };
            let old = {
                let mut w = cell.window.lock();
                if w.bound.is_some_and(|b| b.qpn == Some(qpn)) {
                    w.bound.take()
                } else {
                    None
                }
            };
            if let Some(b) = old {
                self.release_binding(&b);
            }
        }
    }

    /// Executes a BIND_MW work request of QP `qpn` in PD `pd`.
    pub(crate) fn bind(&self, req: &BindReq, pd: usize, qpn: u32) -> Result<(), AccessError> {
        const WINDOW_ACCESS: AccessFlags = AccessFlags::REMOTE_READ
            .union(AccessFlags::REMOTE_WRITE)
            .union(AccessFlags::REMOTE_ATOMIC);
        // Local Write among the bind's flags is accepted, as rdma_rxe (RXE_ACCESS_SUPPORTED_MW)
        // and mlx5 accept it, and dropped: a window grants only remote rights.
        let access = req.access.without(AccessFlags::LOCAL_WRITE);
        if !access.within(WINDOW_ACCESS) {
            return Err(AccessError::NoPermission);
        }
        let mw = self.window_cell(req.new_rkey).ok_or(AccessError::BadKey)?;
        let mut w = mw.window.lock();
        if w.pd != pd {
            return Err(AccessError::BadKey);
        }
        // A type 2B window is bound only from the free state (a binding whose region was
        // deregistered counts as free), and to a new key.
        if w.type2 {
            let bound = w.bound.is_some_and(|b| self.binding_live(&b));
            if bound || w.rkey == req.new_rkey {
                return Err(AccessError::NoPermission);
            }
        }
        let binding = if req.len == 0 && !w.type2 {
            None
        } else {
            let c = self.region_cell(req.mr_lkey).ok_or(AccessError::BadKey)?;
            let mut r = c.region.lock();
            if r.lkey != req.mr_lkey || r.pd != pd || r.id == 0 {
                return Err(AccessError::BadKey);
            }
            if !r.valid
                || !r.access.contains(AccessFlags::MW_BIND)
                || r.access.contains(AccessFlags::ZERO_BASED)
            {
                return Err(AccessError::NoPermission);
            }
            // Remote write and atomic through a window need local write on the region.
            if access.intersects(AccessFlags::NEEDS_LOCAL_WRITE)
                && !r.access.contains(AccessFlags::LOCAL_WRITE)
            {
                return Err(AccessError::NoPermission);
            }
            let off = req.va.checked_sub(r.iova).ok_or(AccessError::OutOfBounds)?;
            if off.checked_add(req.len).is_none_or(|end| end > r.length) {
                return Err(AccessError::OutOfBounds);
            }
            r.windows = r.windows.saturating_add(1);
            Some(Binding {
                mr_key: req.mr_lkey,
                mr_id: r.id,
                va: req.va,
                len: req.len,
                access,
                qpn: w.type2.then_some(qpn),
            })
        };
        w.rkey = req.new_rkey;
        let old = core::mem::replace(&mut w.bound, binding);
        drop(w);
        if let Some(b) = old {
            self.release_binding(&b);
        }
        Ok(())
    }
}
