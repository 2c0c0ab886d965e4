// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Memory regions.

use core::ffi::{c_int, c_void};
use core::mem::size_of;
use core::ptr;

use super::{set_errno, zeroed_box};
use crate::abi::driver::verbs_mr;
use crate::abi::ffi;
use crate::abi::uverbs::*;

pub(crate) unsafe extern "C" fn reg_mr(
    pd: *mut ibv_pd,
    addr: *mut c_void,
    length: usize,
    hca_va: u64,
    access: c_int,
) -> *mut ibv_mr {
    // SAFETY: verbs_mr is plain data.
    let mut mr: Box<verbs_mr> = unsafe { zeroed_box() };
    let mut cmd = ibv_reg_mr::default();
    let mut resp = ib_uverbs_reg_mr_resp::default();
    // SAFETY: `pd` is live; buffers as given.
    let ret = unsafe {
        ffi::ibv_cmd_reg_mr(
            pd,
            addr,
            length,
            hca_va,
            access,
            &mut *mr,
            &mut cmd,
            size_of::<ibv_reg_mr>(),
            &mut resp,
            size_of::<ib_uverbs_reg_mr_resp>(),
        )
    };
    if ret != 0 {
        set_errno(ret);
        return ptr::null_mut();
    }
    // `ibv_mr` is the first field of `verbs_mr`.
    Box::into_raw(mr).cast()
}

/// `ibv_reg_dmabuf_mr`: `[offset, offset + length)` of the dma-buf `fd`, at `iova`. The
/// kernel checks everything (fd, range, access); the MR is freed by [`dereg_mr`] like any
/// other.
pub(crate) unsafe extern "C" fn reg_dmabuf_mr(
    pd: *mut ibv_pd,
    offset: u64,
    length: usize,
    iova: u64,
    fd: c_int,
    access: c_int,
) -> *mut ibv_mr {
    // SAFETY: verbs_mr is plain data.
    let mut mr: Box<verbs_mr> = unsafe { zeroed_box() };
    // SAFETY: `pd` is live; the MR is ours to fill; no driver attributes.
    let ret = unsafe {
        ffi::ibv_cmd_reg_dmabuf_mr(
            pd,
            offset,
            length,
            iova,
            fd,
            access,
            &mut *mr,
            ptr::null_mut(),
        )
    };
    if ret != 0 {
        set_errno(ret);
        return ptr::null_mut();
    }
    // `ibv_mr` is the first field of `verbs_mr`.
    Box::into_raw(mr).cast()
}

pub(crate) unsafe extern "C" fn dereg_mr(vmr: *mut verbs_mr) -> c_int {
    // SAFETY: a live MR of ours.
    let ret = unsafe { ffi::ibv_cmd_dereg_mr(vmr) };
    if ret == 0 {
        // SAFETY: created by `reg_mr` as a Box<verbs_mr>.
        drop(unsafe { Box::from_raw(vmr) });
    }
    ret
}

/// `ibv_advise_mr`: the kernel checks the advice, flags, keys and ranges (on-demand-paging
/// MRs of this PD only) and faults the ranges in; the result is 0 or a positive errno, as
/// `ibv_advise_mr` returns it.
pub(crate) unsafe extern "C" fn advise_mr(
    pd: *mut ibv_pd,
    advice: ib_uverbs_advise_mr_advice,
    flags: u32,
    sg_list: *mut ibv_sge,
    num_sge: u32,
) -> c_int {
    // SAFETY: libibverbs passes a live PD of ours and the caller's array of num_sge SGEs,
    // which the command only reads.
    unsafe { ffi::ibv_cmd_advise_mr(pd, advice, flags, sg_list, num_sge) }
}

pub(crate) unsafe extern "C" fn rereg_mr(
    vmr: *mut verbs_mr,
    flags: c_int,
    pd: *mut ibv_pd,
    addr: *mut c_void,
    length: usize,
    access: c_int,
) -> c_int {
    let mut cmd = ibv_rereg_mr::default();
    let mut resp = ib_uverbs_rereg_mr_resp::default();
    // SAFETY: libibverbs passes a live MR of ours and checked arguments; buffers as given.
    // The new keys land in the MR.
    unsafe {
        ffi::ibv_cmd_rereg_mr(
            vmr,
            flags as u32,
            addr,
            length,
            addr as u64,
            access,
            pd,
            &mut cmd,
            size_of::<ibv_rereg_mr>(),
            &mut resp,
            size_of::<ib_uverbs_rereg_mr_resp>(),
        )
    }
}
