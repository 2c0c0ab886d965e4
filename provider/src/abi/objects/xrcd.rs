// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! XRC domains (`ibv_open_xrcd`): a `verbs_xrcd`, which libibverbs fills with the domain's
//! uverbs handle (XRC SRQs and XRC receive QPs name the domain by it).

use core::ffi::c_int;
use core::mem::size_of;
use core::ptr;

use super::{set_errno, zeroed_box};
use crate::abi::driver::verbs_xrcd;
use crate::abi::ffi;
use crate::abi::uverbs::*;

pub(crate) unsafe extern "C" fn open_xrcd(
    ctx: *mut ibv_context,
    attr: *mut ibv_xrcd_init_attr,
) -> *mut ibv_xrcd {
    // SAFETY: plain data and raw pointers: all-zero is valid.
    let mut x: Box<verbs_xrcd> = unsafe { zeroed_box() };
    let mut cmd = ibv_open_xrcd::default();
    let mut resp = ib_uverbs_open_xrcd_resp::default();
    // SAFETY: the caller's live context and attributes; buffers of the sizes given.
    let ret = unsafe {
        ffi::ibv_cmd_open_xrcd(
            ctx,
            &mut *x,
            size_of::<verbs_xrcd>() as c_int,
            attr,
            &mut cmd,
            size_of::<ibv_open_xrcd>(),
            &mut resp,
            size_of::<ib_uverbs_open_xrcd_resp>(),
        )
    };
    if ret != 0 {
        set_errno(ret);
        return ptr::null_mut();
    }
    Box::into_raw(x).cast()
}

pub(crate) unsafe extern "C" fn close_xrcd(xrcd: *mut ibv_xrcd) -> c_int {
    let vx = xrcd.cast::<verbs_xrcd>();
    // SAFETY: a live domain of ours: the `ibv_xrcd` is the first field of a Box<verbs_xrcd>.
    let ret = unsafe { ffi::ibv_cmd_close_xrcd(vx) };
    if ret == 0 {
        // SAFETY: created by `open_xrcd`; the kernel object is gone.
        drop(unsafe { Box::from_raw(vx) });
    }
    ret
}
