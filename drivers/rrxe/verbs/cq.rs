// SPDX-License-Identifier: GPL-2.0
//! CQ verbs: create, destroy, poll, resize, arm.

use super::errno;
use crate::cq;
use crate::glue::bindings as b;
use crate::glue::obj::{self, NewObj, Obj};
use crate::glue::Udata;
use kernel::prelude::*;

pub(super) fn fill(ops: &mut b::ib_device_ops) {
    ops.create_cq = Some(create_cq);
    ops.destroy_cq = Some(destroy_cq);
    ops.poll_cq = Some(poll_cq);
    ops.req_notify_cq = Some(req_notify_cq);
    ops.resize_cq = Some(resize_cq);
}

unsafe extern "C" fn create_cq(
    ibcq: *mut b::ib_cq,
    attr: *const b::ib_cq_init_attr,
    attrs: *mut b::uverbs_attr_bundle,
) -> i32 {
    // SAFETY: the core's contract (module doc): it allocated ibcq (size_ib_cq) for this
    // creation; attr is live; attrs is null (kernel caller) or the command's bundle.
    let (obj, attr, mut udata) =
        unsafe { (NewObj::from_raw(ibcq), &*attr, Udata::from_attrs(attrs)) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(cq::create(obj, attr, &mut udata))
}

unsafe extern "C" fn destroy_cq(ibcq: *mut b::ib_cq, _udata: *mut b::ib_udata) -> i32 {
    // SAFETY: the core's contract: called once, after it made sure no QP uses the CQ.
    if let Some(dev) = unsafe { obj::destroy(ibcq) } {
        cq::destroyed(dev);
    }
    0
}

unsafe extern "C" fn poll_cq(ibcq: *mut b::ib_cq, num: i32, wc: *mut b::ib_wc) -> i32 {
    let Ok(num) = usize::try_from(num) else {
        return EINVAL.to_errno();
    };
    if num == 0 || wc.is_null() {
        return 0;
    }
    // SAFETY: the core's contract: a live CQ; the caller gives an array of num ib_wc it
    // owns.
    let (obj, wcs) = unsafe {
        (
            Obj::from_raw(ibcq),
            core::slice::from_raw_parts_mut(wc, num),
        )
    };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    cq::poll(obj.data(), wcs) as i32
}

unsafe extern "C" fn resize_cq(ibcq: *mut b::ib_cq, cqe: i32, udata: *mut b::ib_udata) -> i32 {
    // SAFETY: the core's contract: a live CQ; udata is null (kernel caller) or the
    // command's.
    let (obj, mut udata) = unsafe { (Obj::from_raw(ibcq), Udata::from_raw(udata)) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(cq::resize(&obj, cqe, &mut udata))
}

unsafe extern "C" fn req_notify_cq(ibcq: *mut b::ib_cq, flags: b::ib_cq_notify_flags) -> i32 {
    // SAFETY: the core's contract: a live CQ.
    let Some(obj) = (unsafe { Obj::from_raw(ibcq) }) else {
        return EINVAL.to_errno();
    };
    i32::from(cq::req_notify(obj.data(), flags))
}
