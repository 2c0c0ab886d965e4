// SPDX-License-Identifier: GPL-2.0
//! Trampolines of the memory regions and memory windows (see the parent module for their contract).

use super::*;

/// The DMA handle type a tree's registrations carry (none before `struct ib_dmah`).
#[cfg(rrxe_have_reg_mr_dmah)]
type DmaHandle = b::ib_dmah;
#[cfg(not(rrxe_have_reg_mr_dmah))]
type DmaHandle = core::ffi::c_void;

pub(super) unsafe extern "C" fn get_dma_mr<V: Verbs>(
    pd: *mut b::ib_pd,
    access: i32,
) -> *mut b::ib_mr {
    // SAFETY: the core's contract: a live PD of our device.
    let Some(pd) = (unsafe { Obj::from_raw(pd) }) else {
        return ptr_or_err(Err(EINVAL));
    };
    ptr_or_err(V::get_dma_mr(&pd, access))
}

#[cfg(not(rrxe_have_reg_mr_dmah))]
pub(super) unsafe extern "C" fn reg_user_mr<V: Verbs>(
    pd: *mut b::ib_pd,
    start: u64,
    length: u64,
    iova: u64,
    access: i32,
    udata: *mut b::ib_udata,
) -> *mut b::ib_mr {
    // SAFETY: the core's contract, passed on unchanged.
    unsafe {
        reg_user_mr_dmah::<V>(
            pd,
            start,
            length,
            iova,
            access,
            core::ptr::null_mut(),
            udata,
        )
    }
}

#[cfg(rrxe_have_reg_mr_dmah)]
pub(super) use reg_user_mr_dmah as reg_user_mr;

/// A tree whose registrations carry a DMA handle (`struct ib_dmah`: a TPH steering tag
/// for a PCI device's DMA): a software device has no DMA to steer, so a registration that
/// names one is refused with EOPNOTSUPP, as rdma_rxe refuses it. Else the PD, as `Obj`.
///
/// # Safety
///
/// `pd` is null or a live PD of our device (the core's contract).
unsafe fn registration_pd<'a>(
    pd: *mut b::ib_pd,
    dmah: *mut DmaHandle,
) -> Result<Obj<'a, b::ib_pd>> {
    if !dmah.is_null() {
        return Err(crate::glue::eopnotsupp());
    }
    // SAFETY: the caller's contract.
    unsafe { Obj::from_raw(pd) }.ok_or(EINVAL)
}

/// `reg_user_mr` with a DMA handle (see [`registration_pd`]).
pub(super) unsafe extern "C" fn reg_user_mr_dmah<V: Verbs>(
    pd: *mut b::ib_pd,
    start: u64,
    length: u64,
    iova: u64,
    access: i32,
    dmah: *mut DmaHandle,
    udata: *mut b::ib_udata,
) -> *mut b::ib_mr {
    // SAFETY: the core's contract: a live PD of our device.
    let pd = match unsafe { registration_pd(pd, dmah) } {
        Ok(pd) => pd,
        Err(e) => return ptr_or_err(Err(e)),
    };
    // SAFETY: udata is null or the command's driver udata (the core's contract).
    let uctx = unsafe { udata_ucontext(udata) };
    ptr_or_err(V::reg_user_mr(
        &pd,
        (start, length, iova),
        access,
        uctx.as_ref(),
    ))
}

/// The user context of the command whose driver udata is `udata` (`None` for a kernel
/// caller).
///
/// # Safety
///
/// `udata` is null or the driver udata of a live uverbs command of our device.
unsafe fn udata_ucontext<'a>(udata: *mut b::ib_udata) -> Option<Obj<'a, b::ib_ucontext>> {
    // SAFETY: the caller's contract; the command's bundle holds its context.
    let uctx = unsafe { b::rrxe_glue_udata_ucontext(udata) };
    // SAFETY: a context of our device (its data initialised by alloc_ucontext), which the
    // core keeps until every object made in it, and the command, are gone.
    unsafe { Obj::from_raw(uctx) }
}

#[cfg(not(rrxe_have_reg_mr_dmah))]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe extern "C" fn reg_user_mr_dmabuf<V: Verbs>(
    pd: *mut b::ib_pd,
    offset: u64,
    length: u64,
    iova: u64,
    fd: i32,
    access: i32,
    attrs: *mut b::uverbs_attr_bundle,
) -> *mut b::ib_mr {
    // SAFETY: the core's contract, passed on unchanged.
    unsafe {
        reg_user_mr_dmabuf_dmah::<V>(
            pd,
            offset,
            length,
            iova,
            fd,
            access,
            core::ptr::null_mut(),
            attrs,
        )
    }
}

#[cfg(rrxe_have_reg_mr_dmah)]
pub(super) use reg_user_mr_dmabuf_dmah as reg_user_mr_dmabuf;

/// `reg_user_mr_dmabuf` with a DMA handle (see [`registration_pd`]).
#[allow(clippy::too_many_arguments)]
pub(super) unsafe extern "C" fn reg_user_mr_dmabuf_dmah<V: Verbs>(
    pd: *mut b::ib_pd,
    offset: u64,
    length: u64,
    iova: u64,
    fd: i32,
    access: i32,
    dmah: *mut DmaHandle,
    _attrs: *mut b::uverbs_attr_bundle,
) -> *mut b::ib_mr {
    // SAFETY: the core's contract: a live PD of our device.
    let pd = match unsafe { registration_pd(pd, dmah) } {
        Ok(pd) => pd,
        Err(e) => return ptr_or_err(Err(e)),
    };
    ptr_or_err(V::reg_user_mr_dmabuf(
        &pd,
        (offset, length, iova),
        fd,
        access,
    ))
}

pub(super) unsafe extern "C" fn rereg_user_mr<V: Verbs>(
    ibmr: *mut b::ib_mr,
    flags: i32,
    start: u64,
    length: u64,
    iova: u64,
    access: i32,
    pd: *mut b::ib_pd,
    udata: *mut b::ib_udata,
) -> *mut b::ib_mr {
    // SAFETY: the core's contract: a live MR of ours (its uobject locked for write).
    let Some(obj) = (unsafe { Obj::from_raw(ibmr) }) else {
        return ptr_or_err(Err(EINVAL));
    };
    // SAFETY: udata is null or the command's driver udata (the core's contract).
    let uctx = unsafe { udata_ucontext(udata) };
    let args = (flags, start, length, iova, access, pd as usize);
    match V::rereg_user_mr(&obj, args, uctx.as_ref()) {
        Ok(Some(p)) => p,
        Ok(None) => core::ptr::null_mut(),
        Err(e) => ptr_or_err(Err(e)),
    }
}

pub(super) unsafe extern "C" fn alloc_mr<V: Verbs>(
    pd: *mut b::ib_pd,
    mr_type: b::ib_mr_type,
    max_num_sg: u32,
) -> *mut b::ib_mr {
    // SAFETY: the core's contract: a live PD of our device.
    let Some(pd) = (unsafe { Obj::from_raw(pd) }) else {
        return ptr_or_err(Err(EINVAL));
    };
    ptr_or_err(V::alloc_mr(&pd, mr_type, max_num_sg))
}

pub(super) unsafe extern "C" fn map_mr_sg_op(
    ibmr: *mut b::ib_mr,
    sg: *mut b::scatterlist,
    nents: i32,
    sg_offset: *mut u32,
) -> i32
where
    <b::ib_mr as DriverObj>::Data: PageSink,
{
    // SAFETY: the core's arguments, passed through: a live MR of ours and the consumer's
    // scatterlist of nents entries.
    unsafe { map_mr_sg(ibmr, sg, nents, sg_offset) }
}

pub(super) unsafe extern "C" fn dereg_mr<V: Verbs>(
    ibmr: *mut b::ib_mr,
    _udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: a live MR of ours, never used after this returns.
    if let Some(obj) = unsafe { Obj::from_raw(ibmr) } {
        V::dereg_mr(&obj);
    }
    // SAFETY: as above; allocated by new_boxed; this is the only release.
    if let Some(dev) = unsafe { free_boxed(ibmr) } {
        V::mr_freed(dev);
    }
    0
}

pub(super) unsafe extern "C" fn advise_mr<V: Verbs>(
    pd: *mut b::ib_pd,
    advice: b::ib_uverbs_advise_mr_advice,
    flags: u32,
    sg_list: *mut b::ib_sge,
    num_sge: u32,
    _attrs: *mut b::uverbs_attr_bundle,
) -> i32 {
    // SAFETY: the core's contract: a live PD of our device.
    let Some(pd) = (unsafe { Obj::from_raw(pd) }) else {
        return EINVAL.to_errno();
    };
    let Some(advice) = Advice::from_raw(advice) else {
        return EINVAL.to_errno();
    };
    if flags & !b::ib_uverbs_advise_mr_flag_IB_UVERBS_ADVISE_MR_FLAG_FLUSH != 0 {
        return EINVAL.to_errno();
    }
    let sges = if sg_list.is_null() || num_sge == 0 {
        &[][..]
    } else {
        // SAFETY: the core's contract: sg_list holds num_sge entries (the command's
        // attribute, copied into the kernel, or a kernel consumer's array), live for the
        // call.
        unsafe { core::slice::from_raw_parts(sg_list, num_sge as usize) }
    };
    errno(V::advise_mr(&pd, advice, sges))
}

pub(super) unsafe extern "C" fn alloc_mw<V: Verbs>(
    mw: *mut b::ib_mw,
    _udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: it allocated mw (size_ib_mw) for this creation and set
    // device, pd and type.
    let Some(obj) = (unsafe { NewObj::from_raw(mw) }) else {
        return EINVAL.to_errno();
    };
    created(V::alloc_mw(obj))
}

pub(super) unsafe extern "C" fn dealloc_mw<V: Verbs>(mw: *mut b::ib_mw) -> i32 {
    // SAFETY: the core's contract: a live MW of ours, freed by the core after we return.
    if let Some(obj) = unsafe { Obj::from_raw(mw) } {
        V::dealloc_mw(&obj);
    }
    // SAFETY: as above; nothing refers to it any more.
    unsafe { destroy(mw) };
    0
}
