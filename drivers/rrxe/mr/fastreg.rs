// SPDX-License-Identifier: GPL-2.0
//! Fast registration (REG_MR) and invalidation (LOCAL_INV, SEND with Invalidate).

use super::{check_access_flags, AccessError, AccessFlags, Entry, MrTable};
use crate::glue::mem::Backing;
use kernel::prelude::*;

/// A fast registration, as a REG_MR work request carries it.
#[derive(Clone, Copy)]
pub(crate) struct FastReg {
    /// The MR's key when the WR was posted.
    pub(crate) cur_key: u32,
    /// The key it gets (same slot, new tag).
    pub(crate) new_key: u32,
    /// What the region grants once registered (as the WR carries it: unknown bits are
    /// refused when it executes).
    pub(crate) access: AccessFlags,
    /// First address.
    pub(crate) iova: u64,
    /// Length.
    pub(crate) length: u64,
    /// Page size.
    pub(crate) page_size: u32,
}

impl MrTable {
    /// At post time: loads the page list of the next registration into the (invalid)
    /// fast-registration region `key` (no allocation: capacity was reserved at alloc_mr).
    pub(crate) fn fast_reg_load(
        &self,
        key: u32,
        pd: usize,
        pages: &[u64],
    ) -> Result<(), AccessError> {
        let c = self.region_cell(key).ok_or(AccessError::BadKey)?;
        let mut st = c.staged.lock();
        if st.pd != pd {
            return Err(AccessError::BadKey);
        }
        let dst = st
            .pages
            .get_mut(..pages.len())
            .ok_or(AccessError::OutOfBounds)?;
        if !crate::proto::copy_exact(dst, pages) {
            return Err(AccessError::OutOfBounds);
        }
        st.n = pages.len();
        Ok(())
    }

    /// Executes a REG_MR work request: the region becomes valid under its new key.
    pub(crate) fn fast_reg(&self, fr: &FastReg, pd: usize) -> Result<(), AccessError> {
        if fr.new_key >> 8 != fr.cur_key >> 8 || fr.page_size == 0 {
            return Err(AccessError::BadKey);
        }
        check_access_flags(fr.access).map_err(|_| AccessError::NoPermission)?;
        let c = self.region_cell(fr.cur_key).ok_or(AccessError::BadKey)?;
        let mut r = c.region.lock();
        if r.pd != pd || r.id == 0 {
            return Err(AccessError::BadKey);
        }
        // A region that is still valid must be invalidated first (rdma_rxe's
        // rxe_reg_fast_mr refuses an MR that is not free).
        if r.valid {
            return Err(AccessError::NoPermission);
        }
        {
            let Backing::KernelPages {
                pages,
                npages,
                page_size,
                first_off,
            } = &mut r.backing
            else {
                return Err(AccessError::BadKey);
            };
            // The page list staged at post time becomes the region's.
            let st = c.staged.lock();
            let src = st.pages.get(..st.n).ok_or(AccessError::OutOfBounds)?;
            let dst = pages.get_mut(..src.len()).ok_or(AccessError::OutOfBounds)?;
            if !crate::proto::copy_exact(dst, src) {
                return Err(AccessError::OutOfBounds);
            }
            *npages = src.len();
            let ps = u64::from(fr.page_size);
            let off = fr.iova % ps;
            let need = off
                .checked_add(fr.length)
                .ok_or(AccessError::OutOfBounds)?
                .div_ceil(ps);
            if need > *npages as u64 {
                return Err(AccessError::OutOfBounds);
            }
            *page_size = fr.page_size;
            *first_off = off as u32;
        }
        r.iova = fr.iova;
        r.length = fr.length;
        r.access = fr.access;
        r.lkey = fr.new_key;
        r.rkey = fr.new_key;
        r.valid = true;
        Ok(())
    }

    /// Invalidates `key` (LOCAL_INV, SEND with invalidate): a fast-registration region, or
    /// a bound type 2B window (for a SEND with invalidate, `remote_qpn` is the receiving QP,
    /// which must be the one the window is bound to).
    pub(crate) fn invalidate(
        &self,
        key: u32,
        pd: usize,
        remote_qpn: Option<u32>,
    ) -> Result<(), AccessError> {
        match self.entry(key).ok_or(AccessError::BadKey)? {
            Entry::Mr(c) => {
                let mut r = c.region.lock();
                if r.lkey != key || r.pd != pd || r.id == 0 {
                    return Err(AccessError::BadKey);
                }
                if matches!(r.backing, Backing::KernelPages { .. }) {
                    r.valid = false;
                    Ok(())
                } else {
                    Err(AccessError::NoPermission)
                }
            }
            Entry::Mw(c) => {
                let old = {
                    let mut w = c.window.lock();
                    if w.rkey != key || w.pd != pd {
                        return Err(AccessError::BadKey);
                    }
                    let Some(b) = w.bound else {
                        return Err(AccessError::BadKey);
                    };
                    if !w.type2 || remote_qpn.is_some_and(|q| b.qpn != Some(q)) {
                        return Err(AccessError::NoPermission);
                    }
                    w.bound.take()
                };
                if let Some(b) = old {
                    self.release_binding(&b);
                }
                Ok(())
            }
        }
    }
}
