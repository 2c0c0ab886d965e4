// SPDX-License-Identifier: GPL-2.0
//! The `struct ib_device_ops` of rrxe devices: trampolines from the RDMA core's C calls to
//! the safe logic in [`crate::device`].
//!
//! Each trampoline relies on one fact about its caller, the RDMA core: it passes the
//! pointers of a live rrxe device and live objects it allocated with the sizes we declared,
//! for the duration of the call.

use super::{bindings, IbDev, Udata};
use crate::counters::{Counter, NUM_COUNTERS};
use crate::device;
use core::marker::PhantomData;
use kernel::prelude::*;

/// Turns a driver result into the C convention (0 or a negative errno).
pub(super) fn errno(r: Result) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The ops table copied into each device by `ib_set_device_ops`.
pub(super) fn device_ops() -> bindings::ib_device_ops {
    let mut ops = bindings::ib_device_ops::default();
    // SAFETY: returns this module's `struct module`, valid while the module is loaded.
    ops.owner = unsafe { bindings::rrxe_glue_this_module() };
    ops.driver_id = bindings::rdma_driver_id_RDMA_DRIVER_UNKNOWN;
    ops.uverbs_abi_ver = bindings::RRXE_UVERBS_ABI_VERSION;
    ops.query_device = Some(query_device);
    ops.query_port = Some(query_port);
    ops.get_port_immutable = Some(get_port_immutable);
    ops.get_link_layer = Some(get_link_layer);
    ops.query_pkey = Some(query_pkey);
    ops.alloc_ucontext = Some(alloc_ucontext);
    ops.dealloc_ucontext = Some(dealloc_ucontext);
    ops.alloc_pd = Some(alloc_pd);
    ops.dealloc_pd = Some(dealloc_pd);
    ops.dealloc_driver = Some(dealloc_driver);
    ops.alloc_hw_port_stats = Some(alloc_hw_port_stats);
    ops.get_hw_stats = Some(get_hw_stats);
    ops.enable_driver = Some(enable_driver);
    ops.size_ib_ucontext = core::mem::size_of::<bindings::ib_ucontext>();
    ops.size_ib_pd = core::mem::size_of::<bindings::ib_pd>();
    ops
}

unsafe extern "C" fn query_device(
    ibdev: *mut bindings::ib_device,
    attr: *mut bindings::ib_device_attr,
    udata: *mut bindings::ib_udata,
) -> i32 {
    // SAFETY: see the module doc; attr is a live, exclusively ours output struct.
    let (dev, attr) = unsafe { (IbDev::from_raw(ibdev), &mut *attr) };
    errno(device::query_device(dev, attr, &Udata(udata, PhantomData)))
}

unsafe extern "C" fn query_port(
    ibdev: *mut bindings::ib_device,
    port: u32,
    attr: *mut bindings::ib_port_attr,
) -> i32 {
    // SAFETY: see the module doc; the core zeroed *attr and it is ours for the call.
    let (dev, attr) = unsafe { (IbDev::from_raw(ibdev), &mut *attr) };
    errno(device::query_port(dev, port, attr))
}

unsafe extern "C" fn get_port_immutable(
    ibdev: *mut bindings::ib_device,
    port: u32,
    imm: *mut bindings::ib_port_immutable,
) -> i32 {
    // SAFETY: see the module doc.
    let (dev, imm) = unsafe { (IbDev::from_raw(ibdev), &mut *imm) };
    errno(device::port_immutable(dev, port, imm))
}

unsafe extern "C" fn get_link_layer(
    _ibdev: *mut bindings::ib_device,
    _port: u32,
) -> bindings::rdma_link_layer {
    bindings::rdma_link_layer_IB_LINK_LAYER_ETHERNET
}

unsafe extern "C" fn query_pkey(
    ibdev: *mut bindings::ib_device,
    port: u32,
    index: u16,
    pkey: *mut u16,
) -> i32 {
    // SAFETY: see the module doc; pkey is a live output.
    let (dev, pkey) = unsafe { (IbDev::from_raw(ibdev), &mut *pkey) };
    match device::query_pkey(dev, port, index) {
        Ok(v) => {
            *pkey = v;
            0
        }
        Err(e) => e.to_errno(),
    }
}

unsafe extern "C" fn alloc_ucontext(
    uctx: *mut bindings::ib_ucontext,
    udata: *mut bindings::ib_udata,
) -> i32 {
    // SAFETY: the core allocated uctx with size_ib_ucontext and set its device.
    let dev = unsafe { IbDev::from_raw((*uctx).device) };
    errno(device::alloc_ucontext(dev, &mut Udata(udata, PhantomData)))
}

unsafe extern "C" fn dealloc_ucontext(_uctx: *mut bindings::ib_ucontext) {}

unsafe extern "C" fn alloc_pd(pd: *mut bindings::ib_pd, _udata: *mut bindings::ib_udata) -> i32 {
    // SAFETY: the core allocated pd with size_ib_pd and set its device.
    let _dev = unsafe { IbDev::from_raw((*pd).device) };
    0
}

unsafe extern "C" fn dealloc_pd(_pd: *mut bindings::ib_pd, _udata: *mut bindings::ib_udata) -> i32 {
    0
}

unsafe extern "C" fn enable_driver(ibdev: *mut bindings::ib_device) -> i32 {
    // SAFETY: see the module doc.
    let dev = unsafe { IbDev::from_raw(ibdev) };
    errno(device::enable(dev))
}

/// Last callback of a device: drops the driver data and forgets the device.
pub(super) unsafe extern "C" fn dealloc_driver(ibdev: *mut bindings::ib_device) {
    let rdev = ibdev.cast::<super::RrxeDev>();
    // SAFETY: called once per device by ib_dealloc_device, after every other op has
    // returned and before the memory is freed; `data` was initialised in IbDev::create.
    unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*rdev).data)) };
    if let (Some(reg), Some(p)) = (super::registry(), core::ptr::NonNull::new(rdev)) {
        reg.remove(p);
    }
}

/// `rdma statistic` descriptors, built from [`Counter::NAMES`].
struct StatDescs([bindings::rdma_stat_desc; NUM_COUNTERS]);

// SAFETY: immutable after compile-time construction; the pointers are to 'static C strings.
unsafe impl Sync for StatDescs {}

static STAT_DESCS: StatDescs = {
    let mut d = [bindings::rdma_stat_desc {
        name: core::ptr::null(),
        flags: 0,
        priv_: core::ptr::null(),
    }; NUM_COUNTERS];
    let mut i = 0;
    while i < NUM_COUNTERS {
        d[i].name = Counter::NAMES[i].as_ptr().cast();
        i += 1;
    }
    StatDescs(d)
};

unsafe extern "C" fn alloc_hw_port_stats(
    _ibdev: *mut bindings::ib_device,
    _port: u32,
) -> *mut bindings::rdma_hw_stats {
    // SAFETY: STAT_DESCS is 'static and has NUM_COUNTERS entries; the core owns the result.
    unsafe { bindings::rrxe_glue_alloc_hw_stats(STAT_DESCS.0.as_ptr(), NUM_COUNTERS as i32) }
}

unsafe extern "C" fn get_hw_stats(
    ibdev: *mut bindings::ib_device,
    stats: *mut bindings::rdma_hw_stats,
    _port: u32,
    _index: i32,
) -> i32 {
    // SAFETY: see the module doc; stats was allocated by alloc_hw_port_stats.
    let dev = unsafe { IbDev::from_raw(ibdev) };
    for (i, v) in dev.data().counters.values().enumerate() {
        // SAFETY: stats is live; the helper bounds-checks the index.
        unsafe { bindings::rrxe_glue_hw_stats_set(stats, i as i32, v) };
    }
    NUM_COUNTERS as i32
}
