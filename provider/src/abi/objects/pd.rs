// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Protection domains.

use core::ffi::c_int;
use core::mem::size_of;
use core::ptr;

use super::{set_errno, zeroed_box};
use crate::abi::ffi;
use crate::abi::uverbs::*;

pub(crate) unsafe extern "C" fn alloc_pd(ctx: *mut ibv_context) -> *mut ibv_pd {
    // SAFETY: ibv_pd is plain data.
    let mut pd: Box<ibv_pd> = unsafe { zeroed_box() };
    let mut cmd = ibv_alloc_pd::default();
    let mut resp = ib_uverbs_alloc_pd_resp::default();
    // SAFETY: `ctx` is a live context; cmd/resp are live buffers of the sizes given.
    let ret = unsafe {
        ffi::ibv_cmd_alloc_pd(
            ctx,
            &mut *pd,
            &mut cmd,
            size_of::<ibv_alloc_pd>(),
            &mut resp,
            size_of::<ib_uverbs_alloc_pd_resp>(),
        )
    };
    if ret != 0 {
        set_errno(ret);
        return ptr::null_mut();
    }
    Box::into_raw(pd)
}

pub(crate) unsafe extern "C" fn dealloc_pd(pd: *mut ibv_pd) -> c_int {
    // SAFETY: a live PD of ours.
    let ret = unsafe { ffi::ibv_cmd_dealloc_pd(pd) };
    if ret == 0 {
        // SAFETY: created by `alloc_pd` as a Box; the kernel object is gone.
        drop(unsafe { Box::from_raw(pd) });
    }
    ret
}
