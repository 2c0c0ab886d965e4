// SPDX-License-Identifier: GPL-2.0
//! AH verbs: create (kernel and user), destroy, query.

use super::errno;
use crate::ah;
use crate::glue::bindings as b;
use crate::glue::obj::{self, NewObj, Obj};
use crate::glue::Udata;
use kernel::prelude::*;

pub(super) fn fill(ops: &mut b::ib_device_ops) {
    ops.create_ah = Some(create_ah);
    ops.create_user_ah = Some(create_ah);
    ops.destroy_ah = Some(destroy_ah);
    ops.query_ah = Some(query_ah);
}

unsafe extern "C" fn create_ah(
    ibah: *mut b::ib_ah,
    init: *mut b::rdma_ah_init_attr,
    udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract (module doc): it allocated ibah (size_ib_ah) for this
    // creation with device and pd set; init is live and its ah_attr holds a referenced
    // sgid_attr; udata is null or the command's.
    let (obj, av, mut udata) = unsafe {
        (
            NewObj::from_raw(ibah),
            crate::glue::ah_attr_to_av((*init).ah_attr),
            Udata::from_raw(udata),
        )
    };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(ah::create(obj, av, &mut udata))
}

unsafe extern "C" fn destroy_ah(ibah: *mut b::ib_ah, _flags: u32) -> i32 {
    // SAFETY: the core's contract: a live AH of ours, destroyed once.
    let num = unsafe { Obj::from_raw(ibah) }.map_or(0, |a| a.data().num);
    // SAFETY: as above; its number was read, nothing refers to it any more.
    if let Some(dev) = unsafe { obj::destroy(ibah) } {
        ah::destroy(dev, num);
    }
    0
}

unsafe extern "C" fn query_ah(ibah: *mut b::ib_ah, attr: *mut b::rdma_ah_attr) -> i32 {
    // SAFETY: the core's contract: a live AH of ours; attr is its output.
    let (obj, attr) = unsafe { (Obj::from_raw(ibah), &mut *attr) };
    if let Some(obj) = obj {
        crate::glue::av_to_ah_attr(&obj.data().av, attr);
    }
    0
}
