// SPDX-License-Identifier: GPL-2.0
//! Trampolines of the queue pairs and their work requests (see the parent module for their contract).

use super::*;

pub(super) unsafe extern "C" fn create_qp<V: Verbs>(
    ibqp: *mut b::ib_qp,
    init: *mut b::ib_qp_init_attr,
    udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: ibqp is allocated for this creation; init is ours for
    // the call, its srq and CQs null or live objects of ours that the core keeps while the
    // QP exists (it counts their users); udata is null or the command's.
    let (obj, srq, cqs, init, mut udata) = unsafe {
        let init = &mut *init;
        (
            NewObj::from_raw(ibqp),
            Obj::<b::ib_srq>::from_raw(init.srq),
            (CqPtr::new(init.send_cq), CqPtr::new(init.recv_cq)),
            init,
            Udata::from_raw(udata),
        )
    };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    // The XRC domain of an XRC target QP, by identity only (the core counts the QP as its
    // user until the QP is destroyed).
    let xrcd = (!init.xrcd.is_null()).then(|| XrcdId(init.xrcd as usize));
    created(V::create_qp(obj, init, srq, cqs, xrcd, &mut udata))
}

pub(super) unsafe extern "C" fn destroy_qp<V: Verbs>(
    ibqp: *mut b::ib_qp,
    _udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: a live QP of ours, destroyed once.
    if let Some(obj) = unsafe { Obj::from_raw(ibqp) } {
        // Refused: the core keeps the QP, live and unchanged.
        if let Err(e) = V::shut_down_qp(&obj) {
            return e.to_errno();
        }
    }
    // SAFETY: as above; the QP is shut down and nothing refers to its data any more; the
    // core frees the memory after we return.
    if let Some(dev) = unsafe { destroy(ibqp) } {
        V::qp_destroyed(dev);
    }
    0
}

pub(super) unsafe extern "C" fn modify_qp<V: Verbs>(
    ibqp: *mut b::ib_qp,
    attr: *mut b::ib_qp_attr,
    mask: i32,
    udata: *mut b::ib_udata,
) -> i32 {
    let has_av = mask as u32 & b::ib_qp_attr_mask_IB_QP_AV != 0;
    // SAFETY: the core's contract: a live QP of ours; attr is live for the call, and with
    // IB_QP_AV its ah_attr holds a GRH whose sgid_attr the core resolved and holds; udata
    // is null or the command's.
    let (obj, attr, av, udata) = unsafe {
        let attr = &*attr;
        let av = has_av.then(|| crate::glue::ah_attr_to_av(&attr.ah_attr));
        (Obj::from_raw(ibqp), attr, av, Udata::from_raw(udata))
    };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(V::modify_qp(&obj, attr, mask, av, &udata))
}

pub(super) unsafe extern "C" fn query_qp<V: Verbs>(
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
    V::query_qp(&obj, attr, init);
    0
}

/// The group of an `attach_mcast` or `detach_mcast` call, and the QP.
///
/// # Safety
/// The core's contract: `ibqp` is a live QP of ours and `gid` a live GID, for the call.
unsafe fn mcast_args<'a>(
    ibqp: *mut b::ib_qp,
    gid: *const b::ib_gid,
) -> Option<(Obj<'a, b::ib_qp>, [u8; 16])> {
    // SAFETY: by the contract; every bit pattern of the union is a valid `raw`.
    unsafe { Some((Obj::from_raw(ibqp)?, (*gid).raw)) }
}

pub(super) unsafe extern "C" fn attach_mcast<V: Verbs>(
    ibqp: *mut b::ib_qp,
    gid: *mut b::ib_gid,
    _lid: u16,
) -> i32 {
    // SAFETY: the core's contract (ib_attach_mcast, uverbs' ATTACH_MCAST): a live QP of
    // ours and a live GID, for the call.
    let Some((obj, gid)) = (unsafe { mcast_args(ibqp, gid) }) else {
        return EINVAL.to_errno();
    };
    errno(V::attach_mcast(&obj, &gid))
}

pub(super) unsafe extern "C" fn detach_mcast<V: Verbs>(
    ibqp: *mut b::ib_qp,
    gid: *mut b::ib_gid,
    _lid: u16,
) -> i32 {
    // SAFETY: as in attach_mcast.
    let Some((obj, gid)) = (unsafe { mcast_args(ibqp, gid) }) else {
        return EINVAL.to_errno();
    };
    errno(V::detach_mcast(&obj, &gid))
}

pub(super) unsafe extern "C" fn post_send<V: Verbs>(
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
    errno(V::post_send(&obj, list))
}

pub(super) unsafe extern "C" fn post_recv<V: Verbs>(
    ibqp: *mut b::ib_qp,
    wr: *const b::ib_recv_wr,
    bad: *mut *const b::ib_recv_wr,
) -> i32 {
    // SAFETY: as in post_send.
    let (obj, list) = unsafe { (Obj::from_raw(ibqp), WrList::from_raw(wr, bad)) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(V::post_recv(&obj, list))
}

/// `fill_res_qp_entry`: the driver attributes of a QP in `rdma resource show qp -dd`.
pub(super) unsafe extern "C" fn fill_res_qp_entry<V: Verbs>(
    msg: *mut b::sk_buff,
    ibqp: *mut b::ib_qp,
) -> i32 {
    // SAFETY: the core's contract: a live QP of ours (the dump holds its restrack entry,
    // which its destruction waits for); msg is the message being built, ours for the call.
    let Some(obj) = (unsafe { Obj::from_raw(ibqp) }) else {
        return EINVAL.to_errno();
    };
    // SAFETY: as above.
    errno(unsafe { NlDriverAttrs::fill(msg, |attrs| V::fill_res_qp(&obj, attrs)) })
}
