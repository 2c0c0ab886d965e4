// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The libibverbs functions the provider calls (`IBVERBS_PRIVATE_<N>`, exported by the
//! target's libibverbs.so.1; the link records that symbol version), as bindgen declared
//! them from driver.h into [`super::sys`]. `verbs_register_driver` is the
//! `verbs_register_driver_<N>` of the target's ABI.
//!
//! Two signatures differ between ABIs, and each has one wrapper here with the same signature
//! on every ABI, branching on `build.rs`'s flags: [`cmd_get_context`] (`ibv_cmd_get_context`
//! takes `fd_arr` from rdma-core 57, `rrxe_pabi_ge_57`) and [`cmd_create_cq_ex`]
//! (`ibv_cmd_create_cq_ex` takes `prov_attr` from 59, `rrxe_pabi_ge_59`). Callers use those.

pub use super::sys::*;

use core::ffi::c_int;
#[cfg(any(rrxe_pabi_ge_57, rrxe_pabi_ge_59))]
use core::ptr;

/// `ibv_cmd_get_context` with the signature of every ABI: GET_CONTEXT (alloc_ucontext),
/// passing no file descriptors where the ABI (57+) can pass some. Returns 0 or an errno value.
///
/// # Safety
/// As `ibv_cmd_get_context`: `context` initialised by `_verbs_init_and_alloc_context`,
/// `cmd`/`resp` live buffers of at least `cmd_size`/`resp_size` bytes.
pub unsafe fn cmd_get_context(
    context: *mut verbs_context,
    cmd: *mut ibv_get_context,
    cmd_size: usize,
    resp: *mut ib_uverbs_get_context_resp,
    resp_size: usize,
) -> c_int {
    #[cfg(rrxe_pabi_ge_57)]
    // SAFETY: the caller's contract; a NULL `fd_arr` passes no file descriptors.
    return unsafe {
        ibv_cmd_get_context(context, cmd, cmd_size, ptr::null_mut(), resp, resp_size)
    };
    #[cfg(not(rrxe_pabi_ge_57))]
    // SAFETY: the caller's contract.
    return unsafe { ibv_cmd_get_context(context, cmd, cmd_size, resp, resp_size) };
}

/// `ibv_cmd_create_cq_ex` with the signature of every ABI: no provider attributes where the
/// ABI (59+) takes them. Returns 0 or an errno value.
///
/// # Safety
/// As `ibv_cmd_create_cq_ex`: a live context, valid attributes, `cq` zeroed memory of a
/// `verbs_cq`, `cmd`/`resp` live buffers of the sizes given.
#[allow(clippy::too_many_arguments)]
pub unsafe fn cmd_create_cq_ex(
    context: *mut ibv_context,
    cq_attr: *const ibv_cq_init_attr_ex,
    cq: *mut verbs_cq,
    cmd: *mut ibv_create_cq_ex,
    cmd_size: usize,
    resp: *mut ib_uverbs_ex_create_cq_resp,
    resp_size: usize,
    cmd_flags: u32,
) -> c_int {
    #[cfg(rrxe_pabi_ge_59)]
    // SAFETY: the caller's contract; a NULL `prov_attr` is what providers without
    // provider-allocated CQ buffers pass (rdma_rxe does).
    return unsafe {
        ibv_cmd_create_cq_ex(
            context,
            cq_attr,
            ptr::null_mut(),
            cq,
            cmd,
            cmd_size,
            resp,
            resp_size,
            cmd_flags,
        )
    };
    #[cfg(not(rrxe_pabi_ge_59))]
    // SAFETY: the caller's contract.
    return unsafe {
        ibv_cmd_create_cq_ex(
            context, cq_attr, cq, cmd, cmd_size, resp, resp_size, cmd_flags,
        )
    };
}
