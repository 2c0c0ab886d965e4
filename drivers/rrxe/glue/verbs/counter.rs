// SPDX-License-Identifier: GPL-2.0
//! Trampolines of the per-QP counter objects, `rdma statistic qp` (see the parent module for
//! their contract). The core allocates a `struct rdma_counter`, asks for its values
//! (`counter_alloc_stats`), binds QPs to it (automatically by the port's rule, or by
//! `rdma statistic qp bind`), reads it (`counter_update_stats`), unbinds them and frees it
//! (`counter_dealloc`) when its last QP is gone. The driver keeps `qp->counter` and the
//! counter's number.
//!
//! Kernel differences: since 6.13 (as probed) the bind and unbind ops are passed the port,
//! and the core allocates the counter with the driver's size and calls `counter_init` on
//! it, unconditionally; rrxe keeps nothing in the counter itself and gives the core's size
//! and an empty `counter_init`.

use super::super::RdmaCounter;
use super::*;

/// `counter_bind_qp` and `counter_unbind_qp` without the port (6.12).
#[cfg(not(rrxe_have_counter_bind_qp_port))]
pub(super) unsafe extern "C" fn counter_bind_qp<V: Verbs>(
    counter: *mut b::rdma_counter,
    qp: *mut b::ib_qp,
) -> i32 {
    // SAFETY: the core's contract, as in `bind` (one port: no port to check).
    unsafe { bind::<V>(counter, qp) }
}

#[cfg(not(rrxe_have_counter_bind_qp_port))]
pub(super) unsafe extern "C" fn counter_unbind_qp<V: Verbs>(qp: *mut b::ib_qp) -> i32 {
    // SAFETY: the core's contract, as in `unbind`.
    unsafe { unbind::<V>(qp) }
}

/// `counter_bind_qp` and `counter_unbind_qp` with the port (the core checked it is valid:
/// rrxe's only port).
#[cfg(rrxe_have_counter_bind_qp_port)]
pub(super) unsafe extern "C" fn counter_bind_qp<V: Verbs>(
    counter: *mut b::rdma_counter,
    qp: *mut b::ib_qp,
    _port: u32,
) -> i32 {
    // SAFETY: the core's contract, as in `bind`.
    unsafe { bind::<V>(counter, qp) }
}

#[cfg(rrxe_have_counter_bind_qp_port)]
pub(super) unsafe extern "C" fn counter_unbind_qp<V: Verbs>(qp: *mut b::ib_qp, _port: u32) -> i32 {
    // SAFETY: the core's contract, as in `unbind`.
    unsafe { unbind::<V>(qp) }
}

/// # Safety
/// The core's contract of `counter_bind_qp`: `counter` is a live counter of an rrxe device
/// whose values were allocated by `counter_alloc_stats`, its mutex held for the call; `qp`
/// is a live QP of that device, bound to no counter.
unsafe fn bind<V: Verbs>(counter: *mut b::rdma_counter, qp: *mut b::ib_qp) -> i32 {
    let r = {
        // SAFETY: the contract above is RdmaCounter's invariant and Obj's.
        let (c, obj) = unsafe { (RdmaCounter::from_raw(counter), Obj::from_raw(qp)) };
        let (Some(c), Some(obj)) = (c, obj) else {
            return EINVAL.to_errno();
        };
        V::counter_bind_qp(&c, &obj)
    };
    if r.is_ok() {
        // SAFETY: the core leaves `qp->counter` to the driver (it reads it to unbind); the
        // QP is live and no view of it remains.
        unsafe { b::rrxe_glue_qp_set_counter(qp, counter) };
    }
    errno(r)
}

/// # Safety
/// The core's contract of `counter_unbind_qp`: `qp` is a live QP of ours bound to the
/// live counter `qp->counter`, whose mutex is held for the call.
unsafe fn unbind<V: Verbs>(qp: *mut b::ib_qp) -> i32 {
    {
        // SAFETY: as above; a QP bound by `bind` has its counter set.
        let (c, obj) = unsafe {
            (
                RdmaCounter::from_raw(b::rrxe_glue_qp_counter(qp)),
                Obj::from_raw(qp),
            )
        };
        let (Some(c), Some(obj)) = (c, obj) else {
            return EINVAL.to_errno();
        };
        V::counter_unbind_qp(&c, &obj);
    }
    // SAFETY: live QP, no view of it remains.
    unsafe { b::rrxe_glue_qp_set_counter(qp, core::ptr::null_mut()) };
    0
}

pub(super) unsafe extern "C" fn counter_alloc_stats<V: Verbs>(
    _counter: *mut b::rdma_counter,
) -> *mut b::rdma_hw_stats {
    V::alloc_counter_stats()
}

pub(super) unsafe extern "C" fn counter_update_stats<V: Verbs>(
    counter: *mut b::rdma_counter,
) -> i32 {
    // SAFETY: the core's contract: a live counter of ours with its values, its mutex held.
    let Some(c) = (unsafe { RdmaCounter::from_raw(counter) }) else {
        return EINVAL.to_errno();
    };
    errno(V::counter_update(&c))
}

pub(super) unsafe extern "C" fn counter_dealloc<V: Verbs>(counter: *mut b::rdma_counter) -> i32 {
    // SAFETY: the core's contract: its last reference is gone (no QP is bound), freed by
    // the core after we return.
    if let Some(c) = unsafe { RdmaCounter::from_raw(counter) } {
        V::counter_dealloc(&c);
    }
    0
}

/// `counter_init`: nothing to set up (no driver data in the counter).
#[cfg(rrxe_have_counter_init)]
pub(super) unsafe extern "C" fn counter_init(_counter: *mut b::rdma_counter) {}
