// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! rrxe's own user ABI, `include/rdma/rrxe-abi.h` (ABI version 1), as generated into
//! [`super::sys`] with its layout assertions, and the `DECLARE_DRV_CMD` wrappers the provider
//! builds from it.
//!
//! The work request opcodes (`RRXE_WR_*`) and send flags (`RRXE_SEND_*`) the provider uses are
//! `rrxe_proto::uabi`'s `WR_*` and `SEND_*`: one definition for the provider and the kernel.

pub use super::sys::{
    rrxe_alloc_ucontext_resp, rrxe_create_ah_resp, rrxe_create_cq_resp, rrxe_create_qp_resp,
    rrxe_create_srq_resp, rrxe_modify_srq_cmd, rrxe_queue_hdr, rrxe_queue_info, rrxe_recv_wqe,
    rrxe_resize_cq_resp, rrxe_send_wqe, rrxe_send_wqe_ex, rrxe_send_wqe_wr, rrxe_sge,
    rrxe_wr_atomic, rrxe_wr_bind_mw, rrxe_wr_flush, rrxe_wr_rdma, rrxe_wr_ud,
};
use super::uverbs::{
    empty, ib_uverbs_create_ah_resp, ib_uverbs_create_cq_resp, ib_uverbs_create_qp_resp,
    ib_uverbs_create_srq_resp, ib_uverbs_ex_create_cq_resp, ib_uverbs_get_context_resp,
    ib_uverbs_resize_cq_resp, ibv_get_context, ibv_modify_srq, DrvCmd, DrvResp,
};

/// `RRXE_UVERBS_ABI_VERSION`: the uverbs ABI version of every rrxe device, and the
/// `abi_version` of [`rrxe_alloc_ucontext_resp`].
pub const RRXE_UVERBS_ABI_VERSION: u32 = super::sys::RRXE_UVERBS_ABI_VERSION;
pub const RRXE_QUEUE_HDR_SIZE: usize = super::sys::RRXE_QUEUE_HDR_SIZE as usize;
pub const RRXE_MAX_SGE: u32 = super::sys::RRXE_MAX_SGE;
pub const RRXE_MAX_INLINE: u32 = super::sys::RRXE_MAX_INLINE;
pub const RRXE_CQE_SLOT_SIZE: u32 = super::sys::RRXE_CQE_SLOT_SIZE;

/// `DECLARE_DRV_CMD(urrxe_get_context, IB_USER_VERBS_CMD_GET_CONTEXT, empty,
/// rrxe_alloc_ucontext_resp)`: 16 bytes, no udata in.
pub type urrxe_get_context = DrvCmd<ibv_get_context, empty>;
/// Its response: 8 bytes of core response + 8 bytes of udata out.
pub type urrxe_get_context_resp = DrvResp<ib_uverbs_get_context_resp, rrxe_alloc_ucontext_resp>;

/// CREATE_CQ's response with rrxe's queue description as udata out.
pub type urrxe_create_cq_resp = DrvResp<ib_uverbs_create_cq_resp, rrxe_create_cq_resp>;
/// The extended CQ creation response (`DECLARE_DRV_CMD` over `IB_USER_VERBS_EX_CMD_CREATE_CQ`).
pub type urrxe_create_cq_ex_resp = DrvResp<ib_uverbs_ex_create_cq_resp, rrxe_create_cq_resp>;
/// MODIFY_SRQ with where the kernel writes a resized SRQ's new queue.
pub type urrxe_modify_srq = DrvCmd<ibv_modify_srq, rrxe_modify_srq_cmd>;
/// RESIZE_CQ's response with the new queue.
pub type urrxe_resize_cq_resp = DrvResp<ib_uverbs_resize_cq_resp, rrxe_resize_cq_resp>;
/// CREATE_QP's response with the SQ and RQ descriptions.
pub type urrxe_create_qp_resp = DrvResp<ib_uverbs_create_qp_resp, rrxe_create_qp_resp>;
/// CREATE_SRQ's response with the SRQ's queue.
pub type urrxe_create_srq_resp = DrvResp<ib_uverbs_create_srq_resp, rrxe_create_srq_resp>;
/// CREATE_AH's response with the AH number UD send WQEs name.
pub type urrxe_create_ah_resp = DrvResp<ib_uverbs_create_ah_resp, rrxe_create_ah_resp>;
