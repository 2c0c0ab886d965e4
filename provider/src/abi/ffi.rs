//! The libibverbs functions the provider calls (all `IBVERBS_PRIVATE_34`, exported by the
//! system's libibverbs.so.1; the link records that symbol version).

use core::ffi::{c_char, c_int, c_void};

use super::driver::{
    verbs_context_ops, verbs_cq, verbs_device_ops, verbs_mr, verbs_qp, verbs_srq, verbs_xrcd,
};
use super::uverbs::*;
use super::verbs::*;

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

// The verbs objects (driver.h). Each returns 0 or an errno value.
#[link(name = "ibverbs")]
extern "C" {
    pub fn ibv_cmd_alloc_pd(
        context: *mut ibv_context,
        pd: *mut ibv_pd,
        cmd: *mut ibv_alloc_pd,
        cmd_size: usize,
        resp: *mut ib_uverbs_alloc_pd_resp,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_dealloc_pd(pd: *mut ibv_pd) -> c_int;

    pub fn ibv_cmd_alloc_mw(
        pd: *mut ibv_pd,
        type_: c_int,
        mw: *mut ibv_mw,
        cmd: *mut ibv_alloc_mw,
        cmd_size: usize,
        resp: *mut ib_uverbs_alloc_mw_resp,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_dealloc_mw(mw: *mut ibv_mw) -> c_int;

    pub fn ibv_cmd_reg_mr(
        pd: *mut ibv_pd,
        addr: *mut c_void,
        length: usize,
        hca_va: u64,
        access: c_int,
        vmr: *mut verbs_mr,
        cmd: *mut ibv_reg_mr,
        cmd_size: usize,
        resp: *mut ib_uverbs_reg_mr_resp,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_dereg_mr(vmr: *mut verbs_mr) -> c_int;
    /// `ibv_advise_mr` (UVERBS_METHOD_ADVISE_MR): prefetch the ranges of on-demand-paging MRs
    /// named by `num_sge` SGEs. Returns 0 or a positive errno. Exported by rdma-core 44 as by
    /// 56.
    pub fn ibv_cmd_advise_mr(
        pd: *mut ibv_pd,
        advice: c_int,
        flags: u32,
        sg_list: *mut ibv_sge,
        num_sge: u32,
    ) -> c_int;
    /// Registers a dma-buf MR (UVERBS_METHOD_REG_DMABUF_MR); `driver` is an optional
    /// `struct ibv_command_buffer` of driver attributes (rrxe passes none). Exported by
    /// rdma-core 44 (Debian 12) as by 56.
    pub fn ibv_cmd_reg_dmabuf_mr(
        pd: *mut ibv_pd,
        offset: u64,
        length: usize,
        iova: u64,
        fd: c_int,
        access: c_int,
        vmr: *mut verbs_mr,
        driver: *mut c_void,
    ) -> c_int;

    pub fn ibv_cmd_create_cq(
        context: *mut ibv_context,
        cqe: c_int,
        channel: *mut ibv_comp_channel,
        comp_vector: c_int,
        cq: *mut ibv_cq,
        cmd: *mut ibv_create_cq,
        cmd_size: usize,
        resp: *mut ib_uverbs_create_cq_resp,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_create_cq_ex(
        context: *mut ibv_context,
        cq_attr: *const ibv_cq_init_attr_ex,
        cq: *mut verbs_cq,
        cmd: *mut ibv_create_cq_ex,
        cmd_size: usize,
        resp: *mut ib_uverbs_ex_create_cq_resp,
        resp_size: usize,
        cmd_flags: u32,
    ) -> c_int;
    pub fn ibv_cmd_create_qp_ex(
        context: *mut ibv_context,
        qp: *mut verbs_qp,
        attr_ex: *mut ibv_qp_init_attr_ex,
        cmd: *mut ibv_create_qp,
        cmd_size: usize,
        resp: *mut ib_uverbs_create_qp_resp,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_rereg_mr(
        vmr: *mut verbs_mr,
        flags: u32,
        addr: *mut c_void,
        length: usize,
        hca_va: u64,
        access: c_int,
        pd: *mut ibv_pd,
        cmd: *mut ibv_rereg_mr,
        cmd_sz: usize,
        resp: *mut ib_uverbs_rereg_mr_resp,
        resp_sz: usize,
    ) -> c_int;
    pub fn ibv_cmd_resize_cq(
        cq: *mut ibv_cq,
        cqe: c_int,
        cmd: *mut ibv_resize_cq,
        cmd_size: usize,
        resp: *mut ib_uverbs_resize_cq_resp,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_req_notify_cq(cq: *mut ibv_cq, solicited_only: c_int) -> c_int;
    pub fn ibv_cmd_destroy_cq(cq: *mut ibv_cq) -> c_int;

    pub fn ibv_cmd_create_qp(
        pd: *mut ibv_pd,
        qp: *mut ibv_qp,
        attr: *mut ibv_qp_init_attr,
        cmd: *mut ibv_create_qp,
        cmd_size: usize,
        resp: *mut ib_uverbs_create_qp_resp,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_query_qp(
        qp: *mut ibv_qp,
        attr: *mut ibv_qp_attr,
        attr_mask: c_int,
        init_attr: *mut ibv_qp_init_attr,
        cmd: *mut ibv_query_qp,
        cmd_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_modify_qp(
        qp: *mut ibv_qp,
        attr: *mut ibv_qp_attr,
        attr_mask: c_int,
        cmd: *mut ibv_modify_qp,
        cmd_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_destroy_qp(qp: *mut ibv_qp) -> c_int;

    pub fn ibv_cmd_open_xrcd(
        context: *mut ibv_context,
        xrcd: *mut verbs_xrcd,
        vxrcd_size: c_int,
        attr: *mut ibv_xrcd_init_attr,
        cmd: *mut ibv_open_xrcd,
        cmd_size: usize,
        resp: *mut ib_uverbs_open_xrcd_resp,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_close_xrcd(xrcd: *mut verbs_xrcd) -> c_int;
    pub fn ibv_cmd_create_srq_ex(
        context: *mut ibv_context,
        srq: *mut verbs_srq,
        attr_ex: *mut ibv_srq_init_attr_ex,
        cmd: *mut ibv_create_xsrq,
        cmd_size: usize,
        resp: *mut ib_uverbs_create_srq_resp,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_open_qp(
        context: *mut ibv_context,
        qp: *mut verbs_qp,
        vqp_sz: c_int,
        attr: *mut ibv_qp_open_attr,
        cmd: *mut ibv_open_qp,
        cmd_size: usize,
        resp: *mut ib_uverbs_create_qp_resp,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_create_srq(
        pd: *mut ibv_pd,
        srq: *mut ibv_srq,
        attr: *mut ibv_srq_init_attr,
        cmd: *mut ibv_create_srq,
        cmd_size: usize,
        resp: *mut ib_uverbs_create_srq_resp,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_modify_srq(
        srq: *mut ibv_srq,
        attr: *mut ibv_srq_attr,
        attr_mask: c_int,
        cmd: *mut ibv_modify_srq,
        cmd_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_query_srq(
        srq: *mut ibv_srq,
        attr: *mut ibv_srq_attr,
        cmd: *mut ibv_query_srq,
        cmd_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_destroy_srq(srq: *mut ibv_srq) -> c_int;

    pub fn ibv_cmd_create_ah(
        pd: *mut ibv_pd,
        ah: *mut ibv_ah,
        attr: *mut ibv_ah_attr,
        resp: *mut ib_uverbs_create_ah_resp,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_destroy_ah(ah: *mut ibv_ah) -> c_int;
}
