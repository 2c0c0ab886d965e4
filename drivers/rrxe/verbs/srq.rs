// SPDX-License-Identifier: GPL-2.0
//! SRQ verbs: create, modify, query, destroy, post.

use super::errno;
use crate::glue::bindings as b;
use crate::glue::obj::{self, NewObj, Obj};
use crate::glue::wr::WrList;
use crate::glue::Udata;
use crate::srq;
use kernel::prelude::*;

pub(super) fn fill(ops: &mut b::ib_device_ops) {
    ops.create_srq = Some(create_srq);
    ops.modify_srq = Some(modify_srq);
    ops.query_srq = Some(query_srq);
    ops.destroy_srq = Some(destroy_srq);
    ops.post_srq_recv = Some(post_srq_recv);
}

unsafe extern "C" fn create_srq(
    ibsrq: *mut b::ib_srq,
    init: *mut b::ib_srq_init_attr,
    udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract (module doc): it allocated ibsrq (size_ib_srq) for this
    // creation; init is live and ours for the call; udata is null or the command's.
    let (obj, init, mut udata) =
        unsafe { (NewObj::from_raw(ibsrq), &mut *init, Udata::from_raw(udata)) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(srq::create(obj, init, &mut udata))
}

unsafe extern "C" fn modify_srq(
    ibsrq: *mut b::ib_srq,
    attr: *mut b::ib_srq_attr,
    mask: b::ib_srq_attr_mask,
    _udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: a live SRQ of ours; attr is live for the call.
    let (obj, attr) = unsafe { (Obj::from_raw(ibsrq), &*attr) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(srq::modify(obj.data(), attr, mask))
}

unsafe extern "C" fn query_srq(ibsrq: *mut b::ib_srq, attr: *mut b::ib_srq_attr) -> i32 {
    // SAFETY: the core's contract: a live SRQ of ours; attr is its output.
    let (obj, attr) = unsafe { (Obj::from_raw(ibsrq), &mut *attr) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    srq::query(obj.data(), attr);
    0
}

unsafe extern "C" fn destroy_srq(ibsrq: *mut b::ib_srq, _udata: *mut b::ib_udata) -> i32 {
    // SAFETY: the core's contract: called once, after it made sure no QP uses the SRQ.
    if let Some(dev) = unsafe { obj::destroy(ibsrq) } {
        srq::destroyed(dev);
    }
    0
}

unsafe extern "C" fn post_srq_recv(
    ibsrq: *mut b::ib_srq,
    wr: *const b::ib_recv_wr,
    bad: *mut *const b::ib_recv_wr,
) -> i32 {
    // SAFETY: the core's contract: a live SRQ of ours; wr is null or the consumer's list,
    // live for the call; bad is null or its output slot.
    let (obj, list) = unsafe { (Obj::from_raw(ibsrq), WrList::from_raw(wr, bad)) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(srq::post_recv(&obj, list))
}
