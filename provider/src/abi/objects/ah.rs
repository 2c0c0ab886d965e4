// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Address handles.

use core::ffi::c_int;
use core::ptr;

use super::{set_errno, zeroed_box};
use crate::abi::ffi;
use crate::abi::rrxe::*;
use crate::abi::verbs::*;

/// The provider's AH: UD send WQEs carry `ah_num`.
#[repr(C)]
pub struct RrxeAh {
    pub ibah: ibv_ah,
    pub ah_num: u32,
}

pub(crate) unsafe extern "C" fn create_ah(pd: *mut ibv_pd, attr: *mut ibv_ah_attr) -> *mut ibv_ah {
    // SAFETY: plain data.
    let mut ah: Box<RrxeAh> = unsafe { zeroed_box() };
    let mut resp = urrxe_create_ah_resp::new();
    // SAFETY: live `pd`/`attr`; the response buffer is live and of that size.
    let ret = unsafe {
        ffi::ibv_cmd_create_ah(
            pd,
            &mut ah.ibah,
            attr,
            ptr::addr_of_mut!(resp).cast(),
            urrxe_create_ah_resp::size(),
        )
    };
    if ret != 0 {
        set_errno(ret);
        return ptr::null_mut();
    }
    if resp.drv_payload.ah_num == 0 {
        // SAFETY: just created.
        unsafe { ffi::ibv_cmd_destroy_ah(&mut ah.ibah) };
        set_errno(libc::EPROTO);
        return ptr::null_mut();
    }
    ah.ah_num = resp.drv_payload.ah_num;
    Box::into_raw(ah).cast()
}

pub(crate) unsafe extern "C" fn destroy_ah(ibah: *mut ibv_ah) -> c_int {
    // SAFETY: a live AH of ours.
    let ret = unsafe { ffi::ibv_cmd_destroy_ah(ibah) };
    if ret == 0 {
        // SAFETY: created by `create_ah` as a Box<RrxeAh>.
        drop(unsafe { Box::from_raw(ibah.cast::<RrxeAh>()) });
    }
    ret
}
