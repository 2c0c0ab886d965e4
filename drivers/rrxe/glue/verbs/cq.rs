// SPDX-License-Identifier: GPL-2.0
//! Trampolines of the completion queues (see the parent module for their contract).

use super::*;

pub(super) unsafe extern "C" fn create_cq<V: Verbs>(
    ibcq: *mut b::ib_cq,
    attr: *const b::ib_cq_init_attr,
    attrs: *mut b::uverbs_attr_bundle,
) -> i32 {
    // SAFETY: the core's contract: it allocated ibcq (size_ib_cq) for this creation; attr
    // is live; attrs is null (kernel caller) or the command's bundle.
    let (obj, attr, mut udata) =
        unsafe { (NewObj::from_raw(ibcq), &*attr, Udata::from_attrs(attrs)) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    created(V::create_cq(obj, attr, &mut udata))
}

pub(super) unsafe extern "C" fn destroy_cq<V: Verbs>(
    ibcq: *mut b::ib_cq,
    _udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: called once, after it made sure no QP uses the CQ.
    if let Some(dev) = unsafe { destroy(ibcq) } {
        V::cq_destroyed(dev);
    }
    0
}

pub(super) unsafe extern "C" fn poll_cq<V: Verbs>(
    ibcq: *mut b::ib_cq,
    num: i32,
    wc: *mut b::ib_wc,
) -> i32 {
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
    match V::poll_cq(&obj, wcs) {
        // At most `num`, an i32.
        Ok(n) => i32::try_from(n).unwrap_or(num as i32),
        Err(e) => e.to_errno(),
    }
}

/// `resize_cq` (`resize_user_cq` in trees where the core calls it for user CQs only, with
/// an unsigned size: one above `i32::MAX` is out of range for every CQ, EINVAL).
pub(super) unsafe extern "C" fn resize_cq<V: Verbs>(
    ibcq: *mut b::ib_cq,
    #[cfg(rrxe_have_resize_user_cq)] cqe: u32,
    #[cfg(not(rrxe_have_resize_user_cq))] cqe: i32,
    udata: *mut b::ib_udata,
) -> i32 {
    // Through i64: the conversion is fallible whichever type the tree gives cqe.
    let Ok(cqe) = i32::try_from(i64::from(cqe)) else {
        return EINVAL.to_errno();
    };
    // SAFETY: the core's contract: a live CQ; udata is null or the command's.
    let (obj, mut udata) = unsafe { (Obj::from_raw(ibcq), Udata::from_raw(udata)) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(V::resize_cq(&obj, cqe, &mut udata))
}

pub(super) unsafe extern "C" fn req_notify_cq<V: Verbs>(
    ibcq: *mut b::ib_cq,
    flags: b::ib_cq_notify_flags,
) -> i32 {
    // SAFETY: the core's contract: a live CQ.
    let Some(obj) = (unsafe { Obj::from_raw(ibcq) }) else {
        return EINVAL.to_errno();
    };
    i32::from(V::req_notify_cq(&obj, flags))
}
