// SPDX-License-Identifier: GPL-2.0
//! The verbs entry points: the `struct ib_device_ops` of rrxe devices and its trampolines,
//! one file per object.
//!
//! A trampoline is a doorway: it converts its raw arguments once, with the typed views of
//! [`crate::glue::obj`] and [`crate::glue::wr`], calls one safe function of the driver
//! (`cq::create`, `qp::post_send`, `mr::reg_user`, ...) and turns its result into an errno
//! or an `ERR_PTR`. Limits, sizing, decoding and unwinding live in those safe functions.
//!
//! Every conversion relies on one fact about the caller, the RDMA core: it passes the
//! pointers of a live rrxe device and of live objects it allocated with the sizes declared
//! in [`device_ops`] (or, for MRs, that we returned), for the duration of the call.

mod ah;
mod cq;
mod device;
mod mr;
mod qp;
mod srq;

use crate::glue::bindings as b;
use crate::glue::obj::{DriverObj, DrvObj};
use core::mem::size_of;
use kernel::prelude::*;

// SAFETY (all six): the ops table below declares `size_of::<DrvObj<I, I::Data>>()` for
// each core-allocated type, the device is allocated as such by `IbDev::create`, and MRs by
// `new_boxed`; each creation trampoline initialises the data (`NewObj::init`, or plain
// zero-sized data) before returning success, and only the matching destroy trampoline
// drops it.
unsafe impl DriverObj for b::ib_device {
    type Data = crate::device::DeviceData;
}
// SAFETY: see above.
unsafe impl DriverObj for b::ib_cq {
    type Data = crate::cq::Cq;
}
// SAFETY: see above.
unsafe impl DriverObj for b::ib_qp {
    type Data = crate::qp::QpHandle;
}
// SAFETY: see above.
unsafe impl DriverObj for b::ib_srq {
    type Data = crate::srq::SrqHandle;
}
// SAFETY: see above.
unsafe impl DriverObj for b::ib_ah {
    type Data = crate::ah::AhData;
}
// SAFETY: see above.
unsafe impl DriverObj for b::ib_mr {
    type Data = crate::mr::MrData;
}
// SAFETY: no driver data (zero-sized: nothing to initialise or drop).
unsafe impl DriverObj for b::ib_mw {
    type Data = ();
}
// SAFETY: as for ib_mw.
unsafe impl DriverObj for b::ib_pd {
    type Data = ();
}
// SAFETY: as for ib_mw.
unsafe impl DriverObj for b::ib_ucontext {
    type Data = ();
}

/// The size the core allocates for objects of core type `I`.
const fn obj_size<I: DriverObj>() -> usize {
    size_of::<DrvObj<I, I::Data>>()
}

/// Turns a driver result into the C convention (0 or a negative errno).
fn errno(r: Result) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Turns a driver result into the `ERR_PTR` convention.
fn ptr_or_err<T>(r: Result<*mut T>) -> *mut T {
    match r {
        Ok(p) => p,
        Err(e) => e.to_errno() as isize as *mut T,
    }
}

/// The ops table copied into each device by `ib_set_device_ops`.
pub(crate) fn device_ops() -> b::ib_device_ops {
    let mut ops = b::ib_device_ops::default();
    ops.owner = crate::glue::this_module();
    ops.driver_id = b::rdma_driver_id_RDMA_DRIVER_UNKNOWN;
    ops.uverbs_abi_ver = b::RRXE_UVERBS_ABI_VERSION;
    ops.dealloc_driver = Some(crate::glue::dealloc_driver);
    ops.mmap = Some(b::rrxe_glue_mmap);
    ops.mmap_free = Some(b::rrxe_glue_mmap_free);
    device::fill(&mut ops);
    cq::fill(&mut ops);
    qp::fill(&mut ops);
    srq::fill(&mut ops);
    ah::fill(&mut ops);
    mr::fill(&mut ops);
    ops.size_ib_cq = obj_size::<b::ib_cq>();
    ops.size_ib_qp = obj_size::<b::ib_qp>();
    ops.size_ib_srq = obj_size::<b::ib_srq>();
    ops.size_ib_ah = obj_size::<b::ib_ah>();
    ops.size_ib_mw = obj_size::<b::ib_mw>();
    ops.size_ib_ucontext = obj_size::<b::ib_ucontext>();
    ops.size_ib_pd = obj_size::<b::ib_pd>();
    ops
}
