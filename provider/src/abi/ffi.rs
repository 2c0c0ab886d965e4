//! The libibverbs functions the provider calls (all `IBVERBS_PRIVATE_34`, exported by the
//! system's libibverbs.so.1; the link records that symbol version).

use core::ffi::{c_char, c_int, c_void};

use super::driver::verbs_context_ops;
use super::driver::verbs_device_ops;
use super::uverbs::{
    ib_uverbs_ex_query_device_resp, ib_uverbs_get_context_resp, ibv_get_context, ibv_query_port,
};
use super::verbs::{
    ibv_context, ibv_device, ibv_device_attr_ex, ibv_port_attr, ibv_query_device_ex_input,
    verbs_context,
};

#[link(name = "ibverbs")]
extern "C" {
    /// `verbs_register_driver` (driver.h pastes the private ABI number into the name).
    pub fn verbs_register_driver_34(ops: *const verbs_device_ops);

    /// What `verbs_init_and_alloc_context()` expands to: calloc `alloc_size` bytes, run
    /// `verbs_init_context` on the `verbs_context` at byte offset `context_offset` (passed as
    /// a pointer, as the macro does). On failure closes `cmd_fd`, sets errno, returns NULL.
    pub fn _verbs_init_and_alloc_context(
        device: *mut ibv_device,
        cmd_fd: c_int,
        alloc_size: usize,
        context_offset: *mut verbs_context,
        driver_id: u32,
    ) -> *mut c_void;

    /// Frees libibverbs' private part, closes cmd_fd/async_fd, drops the device reference.
    pub fn verbs_uninit_context(context: *mut verbs_context);

    /// Installs every non-NULL op of `ops` (the rest keep their dummy EOPNOTSUPP ops).
    pub fn verbs_set_ops(vctx: *mut verbs_context, ops: *const verbs_context_ops);

    /// GET_CONTEXT (alloc_ucontext); returns 0 or an errno value.
    pub fn ibv_cmd_get_context(
        context: *mut verbs_context,
        cmd: *mut ibv_get_context,
        cmd_size: usize,
        resp: *mut ib_uverbs_get_context_resp,
        resp_size: usize,
    ) -> c_int;

    /// QUERY_DEVICE / EX_QUERY_DEVICE into `attr` (zeroes `attr_size` bytes first); returns
    /// 0 or an errno value. `resp_size` is in/out.
    pub fn ibv_cmd_query_device_any(
        context: *mut ibv_context,
        input: *const ibv_query_device_ex_input,
        attr: *mut ibv_device_attr_ex,
        attr_size: usize,
        resp: *mut ib_uverbs_ex_query_device_resp,
        resp_size: *mut usize,
    ) -> c_int;

    /// QUERY_PORT into `port_attr`; returns 0 or an errno value.
    pub fn ibv_cmd_query_port(
        context: *mut ibv_context,
        port_num: u8,
        port_attr: *mut ibv_port_attr,
        cmd: *mut ibv_query_port,
        cmd_size: usize,
    ) -> c_int;

    /// libibverbs' logger (`verbs_log()` expands to it); prints when `level` is at most
    /// `VERBS_LOG_LEVEL`.
    pub fn __verbs_log(ctx: *mut verbs_context, level: u32, fmt: *const c_char, ...);
}
