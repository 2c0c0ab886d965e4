// SPDX-License-Identifier: GPL-2.0
//! Trampolines of the shared receive queues (see the parent module for their contract).

use super::*;

pub(super) unsafe extern "C" fn create_srq<V: Verbs>(
    ibsrq: *mut b::ib_srq,
    init: *mut b::ib_srq_init_attr,
    udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: it allocated ibsrq (size_ib_srq) for this creation;
    // init is live and ours for the call; udata is null or the command's.
    let (obj, init, mut udata) =
        unsafe { (NewObj::from_raw(ibsrq), &mut *init, Udata::from_raw(udata)) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    let xrc = if init.srq_type == b::ib_srq_type_IB_SRQT_XRC {
        // SAFETY: for an XRC SRQ the core filled `ext.xrc` (ib_create_srq_user), the member
        // of the union it reads back for this type; ext.cq is a live CQ of ours that the
        // core counts as used by the SRQ until destroy_srq returns.
        let (xrcd, cq) = unsafe { (init.ext.__bindgen_anon_1.xrc.xrcd, CqPtr::new(init.ext.cq)) };
        if xrcd.is_null() {
            return EINVAL.to_errno();
        }
        Some((XrcdId(xrcd as usize), cq))
    } else {
        None
    };
    created(V::create_srq(obj, init, xrc, &mut udata))
}

pub(super) unsafe extern "C" fn modify_srq<V: Verbs>(
    ibsrq: *mut b::ib_srq,
    attr: *mut b::ib_srq_attr,
    mask: b::ib_srq_attr_mask,
    udata: *mut b::ib_udata,
) -> i32 {
    let (obj, attr, mut udata) =
        // SAFETY: the core's contract: a live SRQ of ours; attr is live for the call and
        // ours to update (uverbs sets only max_wr and srq_limit, the fields `mask` names and
        // the only ones read); udata is null or the command's.
        unsafe { (Obj::from_raw(ibsrq), &mut *attr, Udata::from_raw(udata)) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(V::modify_srq(&obj, attr, mask, &mut udata))
}

pub(super) unsafe extern "C" fn query_srq<V: Verbs>(
    ibsrq: *mut b::ib_srq,
    attr: *mut b::ib_srq_attr,
) -> i32 {
    // SAFETY: the core's contract: a live SRQ of ours; attr is its output.
    let (obj, attr) = unsafe { (Obj::from_raw(ibsrq), &mut *attr) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    V::query_srq(&obj, attr);
    0
}

pub(super) unsafe extern "C" fn destroy_srq<V: Verbs>(
    ibsrq: *mut b::ib_srq,
    _udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: a live SRQ of ours, destroyed once.
    if let Some(obj) = unsafe { Obj::from_raw(ibsrq) } {
        V::shut_down_srq(&obj);
    }
    // SAFETY: the core's contract: called once, after it made sure no QP uses the SRQ (an
    // XRC SRQ's target QPs can no longer find it: shut_down_srq).
    if let Some(dev) = unsafe { destroy(ibsrq) } {
        V::srq_destroyed(dev);
    }
    0
}

pub(super) unsafe extern "C" fn post_srq_recv<V: Verbs>(
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
    errno(V::post_srq_recv(&obj, list))
}
