// SPDX-License-Identifier: GPL-2.0
//! MR and MW verbs: DMA, user and fast-registration MRs, re-registration, page mapping,
//! deregistration; window allocation and deallocation.

use super::{errno, ptr_or_err};
use crate::glue::bindings as b;
use crate::glue::obj::{self, NewObj, Obj};
use crate::mr;
use kernel::prelude::*;

pub(super) fn fill(ops: &mut b::ib_device_ops) {
    ops.get_dma_mr = Some(get_dma_mr);
    ops.reg_user_mr = Some(reg_user_mr);
    ops.alloc_mr = Some(alloc_mr);
    ops.map_mr_sg = Some(map_mr_sg);
    ops.dereg_mr = Some(dereg_mr);
    ops.rereg_user_mr = Some(rereg_user_mr);
    ops.alloc_mw = Some(alloc_mw);
    ops.dealloc_mw = Some(dealloc_mw);
}

unsafe extern "C" fn get_dma_mr(pd: *mut b::ib_pd, access: i32) -> *mut b::ib_mr {
    // SAFETY: the core's contract (module doc): a live PD of our device.
    let Some(pd) = (unsafe { Obj::from_raw(pd) }) else {
        return ptr_or_err(Err(EINVAL));
    };
    ptr_or_err(mr::get_dma(pd.dev(), pd.addr() as usize, access))
}

unsafe extern "C" fn reg_user_mr(
    pd: *mut b::ib_pd,
    start: u64,
    length: u64,
    iova: u64,
    access: i32,
    _udata: *mut b::ib_udata,
) -> *mut b::ib_mr {
    // SAFETY: the core's contract: a live PD of our device.
    let Some(pd) = (unsafe { Obj::from_raw(pd) }) else {
        return ptr_or_err(Err(EINVAL));
    };
    let id = pd.addr() as usize;
    ptr_or_err(mr::reg_user(pd.dev(), id, start, length, iova, access))
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn rereg_user_mr(
    ibmr: *mut b::ib_mr,
    flags: i32,
    start: u64,
    length: u64,
    iova: u64,
    access: i32,
    pd: *mut b::ib_pd,
    _udata: *mut b::ib_udata,
) -> *mut b::ib_mr {
    // SAFETY: the core's contract: a live MR of ours (its uobject locked for write) and a
    // live PD.
    let Some(obj) = (unsafe { Obj::from_raw(ibmr) }) else {
        return ptr_or_err(Err(EINVAL));
    };
    let (key, old_pd) = (obj.ib().lkey, obj.ib().pd as usize);
    let r = mr::Rereg {
        flags,
        start,
        length,
        iova,
        access,
        pd: pd as usize,
    };
    match mr::rereg_user(obj.dev(), key, old_pd, &r) {
        Ok(Some(p)) => p,
        Ok(None) => core::ptr::null_mut(),
        Err(e) => ptr_or_err(Err(e)),
    }
}

unsafe extern "C" fn alloc_mr(
    pd: *mut b::ib_pd,
    mr_type: b::ib_mr_type,
    max_num_sg: u32,
) -> *mut b::ib_mr {
    // SAFETY: the core's contract: a live PD of our device.
    let Some(pd) = (unsafe { Obj::from_raw(pd) }) else {
        return ptr_or_err(Err(EINVAL));
    };
    ptr_or_err(mr::alloc_fast(
        pd.dev(),
        pd.addr() as usize,
        mr_type,
        max_num_sg,
    ))
}

unsafe extern "C" fn map_mr_sg(
    ibmr: *mut b::ib_mr,
    sg: *mut b::scatterlist,
    nents: i32,
    sg_offset: *mut u32,
) -> i32 {
    // SAFETY: the core's arguments, passed through: a live MR of ours and the consumer's
    // scatterlist of nents entries.
    unsafe { obj::map_mr_sg(ibmr, sg, nents, sg_offset) }
}

unsafe extern "C" fn dereg_mr(ibmr: *mut b::ib_mr, _udata: *mut b::ib_udata) -> i32 {
    // SAFETY: the core's contract: a live MR of ours, never used after this returns.
    if let Some(obj) = unsafe { Obj::from_raw(ibmr) } {
        mr::dereg(obj.dev(), obj.ib().lkey);
    }
    // SAFETY: allocated by new_boxed (mr::reg); this is the only release.
    if let Some(dev) = unsafe { obj::free_boxed(ibmr) } {
        mr::deregistered(dev);
    }
    0
}

unsafe extern "C" fn alloc_mw(mw: *mut b::ib_mw, _udata: *mut b::ib_udata) -> i32 {
    // SAFETY: the core's contract: it allocated mw (size_ib_mw) for this creation and set
    // device, pd and type.
    let Some(obj) = (unsafe { NewObj::from_raw(mw) }) else {
        return EINVAL.to_errno();
    };
    errno(mr::alloc_mw(obj))
}

unsafe extern "C" fn dealloc_mw(mw: *mut b::ib_mw) -> i32 {
    // SAFETY: the core's contract: a live MW of ours, freed by the core after we return.
    // Its rkey field keeps the key given at allocation.
    if let Some(obj) = unsafe { Obj::from_raw(mw) } {
        mr::dealloc_mw(obj.dev(), obj.ib().rkey);
    }
    0
}
