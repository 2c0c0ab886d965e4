// SPDX-License-Identifier: GPL-2.0
//! Trampolines of the address handles (see the parent module for their contract).

use super::*;

pub(super) unsafe extern "C" fn create_ah<V: Verbs>(
    ibah: *mut b::ib_ah,
    init: *mut b::rdma_ah_init_attr,
    udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: it allocated ibah (size_ib_ah) for this creation with
    // device and pd set; init is live and its ah_attr holds a referenced sgid_attr; udata
    // is null or the command's.
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
    created(V::create_ah(obj, av, &mut udata))
}

pub(super) unsafe extern "C" fn destroy_ah<V: Verbs>(ibah: *mut b::ib_ah, _flags: u32) -> i32 {
    // SAFETY: the core's contract: a live AH of ours, destroyed once.
    if let Some(obj) = unsafe { Obj::from_raw(ibah) } {
        V::destroy_ah(&obj);
    }
    // SAFETY: as above; nothing refers to it any more.
    unsafe { destroy(ibah) };
    0
}

pub(super) unsafe extern "C" fn query_ah<V: Verbs>(
    ibah: *mut b::ib_ah,
    attr: *mut b::rdma_ah_attr,
) -> i32 {
    // SAFETY: the core's contract: a live AH of ours; attr is its output.
    let (obj, attr) = unsafe { (Obj::from_raw(ibah), &mut *attr) };
    if let Some(obj) = obj {
        crate::glue::av_to_ah_attr(&V::ah_av(&obj), attr);
    }
    0
}
