// SPDX-License-Identifier: GPL-2.0
//! Trampolines of the device, port, ucontext, PD, XRC domain, port counters and the port's MADs (see the parent module for their contract).

use super::*;

pub(super) unsafe extern "C" fn query_device<V: Verbs>(
    ibdev: *mut b::ib_device,
    attr: *mut b::ib_device_attr,
    udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract (module doc); attr is an output struct exclusively ours
    // for the call; udata is null or the command's.
    let (dev, attr, udata) =
        unsafe { (IbDev::from_raw(ibdev), &mut *attr, Udata::from_raw(udata)) };
    errno(V::query_device(dev, attr, &udata))
}

pub(super) unsafe extern "C" fn query_port<V: Verbs>(
    ibdev: *mut b::ib_device,
    port: u32,
    attr: *mut b::ib_port_attr,
) -> i32 {
    // SAFETY: the core's contract; the core zeroed *attr and it is ours for the call.
    let (dev, attr) = unsafe { (IbDev::from_raw(ibdev), &mut *attr) };
    errno(V::query_port(dev, port, attr))
}

pub(super) unsafe extern "C" fn get_port_immutable<V: Verbs>(
    ibdev: *mut b::ib_device,
    port: u32,
    imm: *mut b::ib_port_immutable,
) -> i32 {
    // SAFETY: the core's contract; imm is its output, ours for the call.
    let (dev, imm) = unsafe { (IbDev::from_raw(ibdev), &mut *imm) };
    errno(V::port_immutable(dev, port, imm))
}

pub(super) unsafe extern "C" fn get_link_layer(
    _ibdev: *mut b::ib_device,
    _port: u32,
) -> b::rdma_link_layer {
    b::rdma_link_layer_IB_LINK_LAYER_ETHERNET
}

pub(super) unsafe extern "C" fn query_pkey<V: Verbs>(
    ibdev: *mut b::ib_device,
    port: u32,
    index: u16,
    pkey: *mut u16,
) -> i32 {
    // SAFETY: the core's contract; pkey is a live output.
    let (dev, pkey) = unsafe { (IbDev::from_raw(ibdev), &mut *pkey) };
    errno(V::query_pkey(dev, port, index).map(|v| *pkey = v))
}

/// `add_gid` and `del_gid` (same signature): `context` is left alone (no per-GID data).
pub(super) unsafe extern "C" fn gid_changed_op<V: Verbs>(
    attr: *const b::ib_gid_attr,
    _context: *mut *mut core::ffi::c_void,
) -> i32 {
    // SAFETY: the core's contract; attr is a live GID attribute of one of our devices.
    let dev = unsafe { IbDev::from_raw((*attr).device) };
    V::gid_changed(dev);
    0
}

pub(super) unsafe extern "C" fn alloc_ucontext<V: Verbs>(
    uctx: *mut b::ib_ucontext,
    udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: it allocated uctx (size_ib_ucontext) for this creation
    // and set its device; udata is the command's.
    let (uctx, mut udata) = unsafe { (NewObj::from_raw(uctx), Udata::from_raw(udata)) };
    let Some(uctx) = uctx else {
        return EINVAL.to_errno();
    };
    created(V::alloc_ucontext(uctx, &mut udata))
}

pub(super) unsafe extern "C" fn dealloc_ucontext(uctx: *mut b::ib_ucontext) {
    // SAFETY: the core's contract: a live context of ours, deallocated once.
    unsafe { destroy(uctx) };
}

pub(super) unsafe extern "C" fn alloc_pd<V: Verbs>(
    pd: *mut b::ib_pd,
    _udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: it allocated pd (size_ib_pd) for this creation and set
    // its device.
    let Some(pd) = (unsafe { NewObj::from_raw(pd) }) else {
        return EINVAL.to_errno();
    };
    created(V::alloc_pd(pd))
}

pub(super) unsafe extern "C" fn dealloc_pd<V: Verbs>(
    pd: *mut b::ib_pd,
    _udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: a live PD of ours, deallocated once.
    if let Some(obj) = unsafe { Obj::from_raw(pd) } {
        V::dealloc_pd(&obj);
    }
    // SAFETY: as above; nothing refers to it any more.
    unsafe { destroy(pd) };
    0
}

pub(super) unsafe extern "C" fn alloc_xrcd<V: Verbs>(
    xrcd: *mut b::ib_xrcd,
    _udata: *mut b::ib_udata,
) -> i32 {
    // Only the address is kept: the domain's identity while the core keeps it allocated.
    errno(V::alloc_xrcd(XrcdId(xrcd as usize)))
}

pub(super) unsafe extern "C" fn dealloc_xrcd<V: Verbs>(
    xrcd: *mut b::ib_xrcd,
    _udata: *mut b::ib_udata,
) -> i32 {
    V::dealloc_xrcd(XrcdId(xrcd as usize));
    0
}

pub(super) unsafe extern "C" fn enable_driver<V: Verbs>(ibdev: *mut b::ib_device) -> i32 {
    // SAFETY: the core's contract.
    let dev = unsafe { IbDev::from_raw(ibdev) };
    errno(V::enable(dev))
}

pub(super) unsafe extern "C" fn alloc_hw_port_stats<V: Verbs>(
    _ibdev: *mut b::ib_device,
    _port: u32,
) -> *mut b::rdma_hw_stats {
    V::alloc_hw_stats()
}

pub(super) unsafe extern "C" fn get_hw_stats<V: Verbs>(
    ibdev: *mut b::ib_device,
    stats: *mut b::rdma_hw_stats,
    _port: u32,
    _index: i32,
) -> i32 {
    // SAFETY: the core's contract; stats was allocated by alloc_hw_port_stats and is live.
    unsafe { crate::glue::set_hw_stats(stats, V::hw_stats(IbDev::from_raw(ibdev))) };
    V::NUM_STATS
}

/// `process_mad`: the driver's first refusal of every MAD that reaches the port's GSI QP,
/// and the PerfMgt queries behind `ports/N/counters/` in sysfs (which pass no work
/// completion). Only the MAD itself is read; the work completion and GRH are not needed.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe extern "C" fn process_mad<V: Verbs>(
    ibdev: *mut b::ib_device,
    _flags: i32,
    port: u32,
    _in_wc: *const b::ib_wc,
    _in_grh: *const b::ib_grh,
    in_mad: *const b::ib_mad,
    out_mad: *mut b::ib_mad,
    out_mad_size: *mut usize,
    _out_mad_pkey_index: *mut u16,
) -> i32 {
    const _: () = assert!(size_of::<b::ib_mad>() == MAD_SIZE);
    let failure = b::ib_mad_result_IB_MAD_RESULT_FAILURE as i32;
    if in_mad.is_null() || out_mad.is_null() || out_mad_size.is_null() {
        return failure;
    }
    // SAFETY: the core's contract: out_mad_size points to the size of the response buffer
    // (the port's largest MAD: 256 bytes on an IB or RoCE port).
    if unsafe { *out_mad_size } < MAD_SIZE {
        return failure;
    }
    // SAFETY: the core's contract (module doc): in_mad is a MAD of at least 256 bytes, copied
    // once so that nothing read can change or alias the response; out_mad is the response
    // buffer, at least MAD_SIZE bytes (checked above), exclusively ours for the call.
    let (dev, req, out) = unsafe {
        (
            IbDev::from_raw(ibdev),
            core::ptr::read(in_mad.cast::<[u8; MAD_SIZE]>()),
            &mut *out_mad.cast::<[u8; MAD_SIZE]>(),
        )
    };
    match V::process_mad(dev, port, &req, out) {
        MadResult::Reply => {
            (b::ib_mad_result_IB_MAD_RESULT_SUCCESS | b::ib_mad_result_IB_MAD_RESULT_REPLY) as i32
        }
        MadResult::PassOn => b::ib_mad_result_IB_MAD_RESULT_SUCCESS as i32,
        MadResult::Failure => failure,
    }
}
