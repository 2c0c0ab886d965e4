// SPDX-License-Identifier: GPL-2.0
//! Kernel consumers' work-request lists (`ib_send_wr`, `ib_recv_wr`), read through safe
//! views: the list walk, the SGE arrays, the UD and REG_MR parts, inline data.

use super::bindings;
use super::obj::{DriverObj, Obj};
use core::marker::PhantomData;
use kernel::prelude::*;

/// A list of kernel work requests (`T` = `ib_send_wr` or `ib_recv_wr`) and the core's
/// `bad_wr` output, for the duration of a post call.
pub(crate) struct WrList<'a, T> {
    next: *const T,
    bad: *mut *const T,
    _p: PhantomData<&'a T>,
}

/// A WR type with a `next` link.
pub(crate) trait Linked {
    /// The next WR of the list (null at the end).
    fn next_ptr(&self) -> *const Self;
}

impl Linked for bindings::ib_send_wr {
    fn next_ptr(&self) -> *const Self {
        self.next
    }
}

impl Linked for bindings::ib_recv_wr {
    fn next_ptr(&self) -> *const Self {
        self.next
    }
}

impl<'a, T: Linked> WrList<'a, T> {
    /// # Safety
    /// `wr` is null or a list of WRs the consumer keeps alive and unchanged for `'a` (the
    /// duration of the post call); `bad` is null or a writable output slot.
    pub(crate) unsafe fn from_raw(wr: *const T, bad: *mut *const T) -> Self {
        WrList {
            next: wr,
            bad,
            _p: PhantomData,
        }
    }

    /// Whether the list is empty (a user QP's doorbell).
    pub(crate) fn is_empty(&self) -> bool {
        self.next.is_null()
    }

    /// Hands each WR to `post`, in order, until one fails: that WR is named in `bad_wr` and
    /// the error returned.
    pub(crate) fn post_each(mut self, mut post: impl FnMut(&'a T) -> Result) -> Result {
        while !self.next.is_null() {
            // SAFETY: a live WR of the list (contract of from_raw).
            let wr = unsafe { &*self.next };
            if let Err(e) = post(wr) {
                return Err(self.refuse(e));
            }
            self.next = wr.next_ptr();
        }
        Ok(())
    }

    /// Refuses the rest of the list: `bad_wr` names its first WR not posted (the uverbs
    /// layer counts the WRs up to it for the process).
    pub(crate) fn refuse(self, e: Error) -> Error {
        if !self.bad.is_null() {
            // SAFETY: non-null, so writable (contract of from_raw).
            unsafe { *self.bad = self.next };
        }
        e
    }
}

/// The SGE array of a WR (`num_sge` entries at `sg_list`), bounded by `max`.
///
/// # Safety
/// `sg_list` holds `n` entries alive for `'a` when `n > 0`.
unsafe fn sge_slice<'a>(
    sg_list: *const bindings::ib_sge,
    n: usize,
    max: u32,
) -> Result<&'a [bindings::ib_sge]> {
    if n > max.max(1) as usize || (n > 0 && sg_list.is_null()) {
        return Err(EINVAL);
    }
    if n == 0 {
        return Ok(&[]);
    }
    // SAFETY: non-null with n entries (contract).
    Ok(unsafe { core::slice::from_raw_parts(sg_list, n) })
}

/// A kernel receive WR.
pub(crate) trait RecvWrView {
    /// The consumer's id.
    fn id(&self) -> u64;
    /// Its SGEs, at most `max` (else EINVAL).
    fn sges(&self, max: u32) -> Result<&[bindings::ib_sge]>;
}

impl RecvWrView for bindings::ib_recv_wr {
    fn id(&self) -> u64 {
        // SAFETY: the consumer sets wr_id (or wr_cqe, the same bytes); any u64 is valid.
        unsafe { self.__bindgen_anon_1.wr_id }
    }

    fn sges(&self, max: u32) -> Result<&[bindings::ib_sge]> {
        let n = usize::try_from(self.num_sge).unwrap_or(usize::MAX);
        // SAFETY: the WR is live (WrList contract) and its sg_list holds num_sge entries.
        unsafe { sge_slice(self.sg_list, n, max) }
    }
}

/// A kernel send WR, decoded into its fields.
pub(crate) struct SendWrView<'a> {
    wr: &'a bindings::ib_send_wr,
    /// Posted to a UD (or GSI) QP: the core types its WRs as `ib_ud_wr`.
    ud_qp: bool,
    /// The common fields (and, for [`SendWrView::ud`], the UD ones).
    pub(crate) k: bindings::rrxe_kwr,
}

impl<'a> SendWrView<'a> {
    /// Decodes `wr` (one of a [`WrList`]) posted to `qp`.
    pub(crate) fn new(wr: &'a bindings::ib_send_wr, qp: &bindings::ib_qp) -> Self {
        let ud_qp = matches!(
            qp.qp_type,
            bindings::ib_qp_type_IB_QPT_UD | bindings::ib_qp_type_IB_QPT_GSI
        );
        let mut k = bindings::rrxe_kwr::default();
        // SAFETY: wr is live; the helper reads the common part and the opcode's own
        // extension (rdma/atomic/reg WRs embed ib_send_wr first).
        unsafe { bindings::rrxe_glue_decode_send_wr(wr, &mut k) };
        SendWrView { wr, ud_qp, k }
    }

    /// Its SGEs, at most `max` (else EINVAL).
    pub(crate) fn sges(&self, max: u32) -> Result<&'a [bindings::ib_sge]> {
        // SAFETY: the WR is live for 'a and its sg_list holds num_sge entries.
        unsafe { sge_slice(self.k.sg_list.cast(), self.k.num_sge as usize, max) }
    }

    /// The UD part of a WR posted to a UD QP (EINVAL for another QP): its AH (ours, alive while the WR is
    /// posted), destination QPN and Q_Key. EINVAL without an AH.
    pub(crate) fn ud(&mut self) -> Result<(Obj<'a, bindings::ib_ah>, u32, u32)>
    where
        bindings::ib_ah: DriverObj,
    {
        if !self.ud_qp {
            return Err(EINVAL);
        }
        // SAFETY: posted to a UD QP (checked above), whose send WRs are ib_ud_wr.
        unsafe { bindings::rrxe_glue_decode_ud_wr(self.wr, &mut self.k) };
        // SAFETY: the consumer's AH, one of our device's, alive while the WR is posted.
        let ah = unsafe { Obj::from_raw(self.k.ah.cast::<bindings::ib_ah>()) }.ok_or(EINVAL)?;
        Ok((ah, self.k.remote_qpn, self.k.remote_qkey))
    }

    /// The MR of a REG_MR WR (ours; the consumer keeps it while the WR is posted).
    pub(crate) fn reg_mr(&self) -> Option<Obj<'a, bindings::ib_mr>>
    where
        bindings::ib_mr: DriverObj,
    {
        // SAFETY: a REG_MR WR names an MR of our device, alive while posted.
        unsafe { Obj::from_raw(self.k.reg_mr.cast::<bindings::ib_mr>()) }
    }

    /// Copies the bytes of the inline SGEs into `dst`; returns how many. EINVAL if they do
    /// not fit.
    pub(crate) fn copy_inline(&self, sges: &[bindings::ib_sge], dst: &mut [u8]) -> Result<usize> {
        let mut at = 0usize;
        for s in sges {
            let l = s.length as usize;
            let d = dst
                .get_mut(at..at.checked_add(l).ok_or(EINVAL)?)
                .ok_or(EINVAL)?;
            // SAFETY: an inline SGE of a kernel consumer is a kernel virtual address of
            // `length` readable bytes, valid during post_send (the list is a kernel one: a
            // user QP's lists are refused before they are read).
            unsafe { core::ptr::copy(s.addr as usize as *const u8, d.as_mut_ptr(), l) };
            at += l;
        }
        Ok(at)
    }
}
