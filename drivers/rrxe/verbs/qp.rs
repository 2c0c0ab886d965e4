// SPDX-License-Identifier: GPL-2.0
//! QP verbs: create, destroy, modify, query, post.

use super::errno;
use crate::glue::bindings as b;
use crate::glue::obj::{self, NewObj, Obj};
use crate::glue::wr::WrList;
use crate::glue::{CqPtr, Udata};
use crate::qp;
use kernel::prelude::*;

pub(super) fn fill(ops: &mut b::ib_device_ops) {
    ops.create_qp = Some(create_qp);
    ops.destroy_qp = Some(destroy_qp);
    ops.modify_qp = Some(modify_qp);
    ops.query_qp = Some(query_qp);
    ops.post_send = Some(post_send);
    ops.post_recv = Some(post_recv);
}

unsafe extern "C" fn create_qp(
    ibqp: *mut b::ib_qp,
    init: *mut b::ib_qp_init_attr,
    udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract (module doc): ibqp is allocated for this creation; init
    // is ours for the call, its srq and CQs null or live objects of ours that the core keeps
    // while the QP exists (it counts their users); udata is null or the command's.
    let (obj, srq, send_cq, recv_cq, init, mut udata) = unsafe {
        let init = &mut *init;
        (
            NewObj::from_raw(ibqp),
            Obj::<b::ib_srq>::from_raw(init.srq),
            CqPtr::new(init.send_cq),
            CqPtr::new(init.recv_cq),
            init,
            Udata::from_raw(udata),
        )
    };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    let args = qp::CreateArgs {
        init,
        srq: srq.map(|s| &s.data().srq),
        send_cq,
        recv_cq,
    };
    errno(qp::create(obj, args, &mut udata))
}

unsafe extern "C" fn destroy_qp(ibqp: *mut b::ib_qp, _udata: *mut b::ib_udata) -> i32 {
    // SAFETY: the core's contract: a live QP of ours, destroyed once.
    if let Some(obj) = unsafe { Obj::from_raw(ibqp) } {
        qp::shut_down(obj.dev(), obj.data());
    }
    // SAFETY: as above; the QP is shut down and nothing refers to its handle any more; the
    // core frees the memory after we return.
    if let Some(dev) = unsafe { obj::destroy(ibqp) } {
        qp::destroyed(dev);
    }
    0
}

unsafe extern "C" fn modify_qp(
    ibqp: *mut b::ib_qp,
    attr: *mut b::ib_qp_attr,
    mask: i32,
    _udata: *mut b::ib_udata,
) -> i32 {
    let has_av = mask as u32 & b::ib_qp_attr_mask_IB_QP_AV != 0;
    // SAFETY: the core's contract: a live QP of ours; attr is live for the call, and with
    // IB_QP_AV its ah_attr holds a GRH whose sgid_attr the core resolved and holds.
    let (obj, attr, av) = unsafe {
        let attr = &*attr;
        let av = has_av.then(|| crate::glue::ah_attr_to_av(&attr.ah_attr));
        (Obj::from_raw(ibqp), attr, av)
    };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(qp::modify(&obj, attr, mask, av))
}

unsafe extern "C" fn query_qp(
    ibqp: *mut b::ib_qp,
    attr: *mut b::ib_qp_attr,
    _mask: i32,
    init: *mut b::ib_qp_init_attr,
) -> i32 {
    // SAFETY: the core's contract: a live QP of ours; attr and init are its outputs.
    let (obj, attr, init) = unsafe { (Obj::from_raw(ibqp), &mut *attr, &mut *init) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    qp::query(obj.data(), attr, init);
    0
}

unsafe extern "C" fn post_send(
    ibqp: *mut b::ib_qp,
    wr: *const b::ib_send_wr,
    bad: *mut *const b::ib_send_wr,
) -> i32 {
    // SAFETY: the core's contract: a live QP of ours; wr is null or the consumer's list,
    // live for the call; bad is null or its output slot.
    let (obj, list) = unsafe { (Obj::from_raw(ibqp), WrList::from_raw(wr, bad)) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(qp::post_send(&obj, list))
}

unsafe extern "C" fn post_recv(
    ibqp: *mut b::ib_qp,
    wr: *const b::ib_recv_wr,
    bad: *mut *const b::ib_recv_wr,
) -> i32 {
    // SAFETY: as in post_send.
    let (obj, list) = unsafe { (Obj::from_raw(ibqp), WrList::from_raw(wr, bad)) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(qp::post_recv(&obj, list))
}
