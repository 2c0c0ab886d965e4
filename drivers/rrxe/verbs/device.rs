// SPDX-License-Identifier: GPL-2.0
//! Device, port, context and PD verbs, the `rdma statistic` counters, and the two C entry
//! points of the link type (`rdma link add`) and the netdev notifier.

use super::errno;
use crate::counters::{Counter, NUM_COUNTERS};
use crate::device;
use crate::glue::bindings as b;
use crate::glue::obj::{NewObj, Obj};
use crate::glue::{IbDev, NetDev, StatDescs, Udata};
use crate::limits;
use kernel::ffi::c_char;
use kernel::prelude::*;

pub(super) fn fill(ops: &mut b::ib_device_ops) {
    ops.query_device = Some(query_device);
    ops.query_port = Some(query_port);
    ops.get_port_immutable = Some(get_port_immutable);
    ops.get_link_layer = Some(get_link_layer);
    ops.query_pkey = Some(query_pkey);
    ops.alloc_ucontext = Some(alloc_ucontext);
    ops.dealloc_ucontext = Some(dealloc_ucontext);
    ops.alloc_pd = Some(alloc_pd);
    ops.dealloc_pd = Some(dealloc_pd);
    ops.alloc_hw_port_stats = Some(alloc_hw_port_stats);
    ops.get_hw_stats = Some(get_hw_stats);
    ops.enable_driver = Some(enable_driver);
}

unsafe extern "C" fn query_device(
    ibdev: *mut b::ib_device,
    attr: *mut b::ib_device_attr,
    udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract (module doc); attr is an output struct exclusively ours
    // for the call; udata is null or the command's.
    let (dev, attr, udata) =
        unsafe { (IbDev::from_raw(ibdev), &mut *attr, Udata::from_raw(udata)) };
    errno(device::query_device(dev, attr, &udata))
}

unsafe extern "C" fn query_port(
    ibdev: *mut b::ib_device,
    port: u32,
    attr: *mut b::ib_port_attr,
) -> i32 {
    // SAFETY: the core's contract; the core zeroed *attr and it is ours for the call.
    let (dev, attr) = unsafe { (IbDev::from_raw(ibdev), &mut *attr) };
    errno(device::query_port(dev, port, attr))
}

unsafe extern "C" fn get_port_immutable(
    ibdev: *mut b::ib_device,
    port: u32,
    imm: *mut b::ib_port_immutable,
) -> i32 {
    // SAFETY: the core's contract; imm is its output, ours for the call.
    let (dev, imm) = unsafe { (IbDev::from_raw(ibdev), &mut *imm) };
    errno(device::port_immutable(dev, port, imm))
}

unsafe extern "C" fn get_link_layer(_ibdev: *mut b::ib_device, _port: u32) -> b::rdma_link_layer {
    b::rdma_link_layer_IB_LINK_LAYER_ETHERNET
}

unsafe extern "C" fn query_pkey(
    ibdev: *mut b::ib_device,
    port: u32,
    index: u16,
    pkey: *mut u16,
) -> i32 {
    // SAFETY: the core's contract; pkey is a live output.
    let (dev, pkey) = unsafe { (IbDev::from_raw(ibdev), &mut *pkey) };
    errno(device::query_pkey(dev, port, index).map(|v| *pkey = v))
}

unsafe extern "C" fn alloc_ucontext(uctx: *mut b::ib_ucontext, udata: *mut b::ib_udata) -> i32 {
    // SAFETY: the core's contract: it allocated uctx (size_ib_ucontext) and set its device;
    // udata is the command's.
    let (uctx, mut udata) = unsafe { (NewObj::from_raw(uctx), Udata::from_raw(udata)) };
    let Some(uctx) = uctx else {
        return EINVAL.to_errno();
    };
    errno(device::alloc_ucontext(uctx.dev(), &mut udata))
}

unsafe extern "C" fn dealloc_ucontext(_uctx: *mut b::ib_ucontext) {}

unsafe extern "C" fn alloc_pd(pd: *mut b::ib_pd, _udata: *mut b::ib_udata) -> i32 {
    // SAFETY: the core's contract: it allocated pd (size_ib_pd) and set its device.
    let Some(pd) = (unsafe { NewObj::from_raw(pd) }) else {
        return EINVAL.to_errno();
    };
    errno(pd.dev().data().limits.take(limits::Obj::Pd))
}

unsafe extern "C" fn dealloc_pd(pd: *mut b::ib_pd, _udata: *mut b::ib_udata) -> i32 {
    // SAFETY: the core's contract: a live PD of ours, deallocated once.
    if let Some(pd) = unsafe { Obj::from_raw(pd) } {
        pd.dev().data().limits.put(limits::Obj::Pd);
    }
    0
}

unsafe extern "C" fn enable_driver(ibdev: *mut b::ib_device) -> i32 {
    // SAFETY: the core's contract.
    let dev = unsafe { IbDev::from_raw(ibdev) };
    errno(device::enable(dev))
}

/// `rdma statistic` descriptors, in [`Counter::NAMES`] order.
static STAT_DESCS: StatDescs<NUM_COUNTERS> = StatDescs::new(Counter::NAMES);

unsafe extern "C" fn alloc_hw_port_stats(
    _ibdev: *mut b::ib_device,
    _port: u32,
) -> *mut b::rdma_hw_stats {
    STAT_DESCS.alloc()
}

unsafe extern "C" fn get_hw_stats(
    ibdev: *mut b::ib_device,
    stats: *mut b::rdma_hw_stats,
    _port: u32,
    _index: i32,
) -> i32 {
    // SAFETY: the core's contract; stats was allocated by alloc_hw_port_stats and is live.
    unsafe {
        let dev = IbDev::from_raw(ibdev);
        crate::glue::set_hw_stats(stats, dev.data().counters.values());
    }
    NUM_COUNTERS as i32
}

/// `rdma link add NAME type rrxe netdev NDEV` (called by `rrxe_glue.c`'s link ops).
#[no_mangle]
unsafe extern "C" fn rrxe_rs_newlink(name: *const c_char, ndev: *mut b::net_device) -> i32 {
    if name.is_null() || ndev.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: the rdma netlink core passes a NUL-terminated name and a netdev it holds a
    // reference on for the duration of the call.
    let (name, ndev) = unsafe { (CStr::from_char_ptr(name), NetDev::from_raw(ndev)) };
    errno(device::newlink(name, ndev, &super::device_ops()))
}

/// Netdev notifier events (called under RTNL by `rrxe_glue.c`'s notifier).
#[no_mangle]
unsafe extern "C" fn rrxe_rs_netdev_event(event: core::ffi::c_ulong, ndev: *mut b::net_device) {
    if ndev.is_null() {
        return;
    }
    // SAFETY: the notifier chain passes a live netdev for the duration of the call.
    let ndev = unsafe { NetDev::from_raw(ndev) };
    device::netdev_event(event, ndev);
}
