//! `#[repr(C)]` mirror of rrxe's own user ABI, `include/rdma/rrxe-abi.h` (ABI version 1),
//! and the `DECLARE_DRV_CMD` wrappers the provider builds from it. `tests/layout.rs` checks
//! every size and offset against the header.

use super::uverbs::{
    empty, ib_uverbs_create_ah_resp, ib_uverbs_create_cq_resp, ib_uverbs_create_qp_resp,
    ib_uverbs_create_srq_resp, ib_uverbs_ex_create_cq_resp, ib_uverbs_get_context_resp,
    ib_uverbs_resize_cq_resp, ibv_get_context, DrvCmd, DrvResp,
};

/// `RRXE_UVERBS_ABI_VERSION`: the uverbs ABI version of every rrxe device, and the
/// `abi_version` of [`rrxe_alloc_ucontext_resp`].
pub const RRXE_UVERBS_ABI_VERSION: u32 = 1;

pub const RRXE_QUEUE_HDR_SIZE: usize = 4096;
pub const RRXE_MAX_SGE: u32 = 32;
pub const RRXE_MAX_INLINE: u32 = 512;
pub const RRXE_CQE_SLOT_SIZE: u32 = 64;

// The work request opcodes (`RRXE_WR_*`) and send flags (`RRXE_SEND_*`) are
// `rrxe_proto::uabi`'s `WR_*` and `SEND_*`: one definition for the provider and the kernel.

/// `struct rrxe_queue_hdr`: the header page of a shared queue.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rrxe_queue_hdr {
    pub producer: u32,
    pub pad0: [u32; 15],
    pub consumer: u32,
    pub pad1: [u32; 15],
    pub error: u32,
    pub pad2: [u32; 15],
}

/// `struct rrxe_queue_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rrxe_queue_info {
    pub mmap_offset: u64,
    pub mmap_size: u64,
    pub log2_slots: u32,
    pub slot_size: u32,
}

/// `struct rrxe_sge`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rrxe_sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// `union rrxe_send_wqe_ex`: the `ex` union of `struct rrxe_send_wqe` (`imm_data` is big-endian on the wire).
#[repr(C)]
#[derive(Clone, Copy)]
pub union rrxe_send_wqe_ex {
    pub imm_data: u32,
    pub invalidate_rkey: u32,
}

/// `struct rrxe_wr_rdma`: `wr.rdma` of `struct rrxe_send_wqe`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rrxe_wr_rdma {
    pub remote_addr: u64,
    pub rkey: u32,
    pub reserved: u32,
}

/// `struct rrxe_wr_atomic`: `wr.atomic` of `struct rrxe_send_wqe`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rrxe_wr_atomic {
    pub remote_addr: u64,
    pub compare_add: u64,
    pub swap: u64,
    pub rkey: u32,
    pub reserved: u32,
}

/// `struct rrxe_wr_ud`: `wr.ud` of `struct rrxe_send_wqe`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rrxe_wr_ud {
    pub ah_num: u32,
    pub remote_qpn: u32,
    pub remote_qkey: u32,
    pub reserved: u32,
}

/// `struct rrxe_wr_bind_mw`: `wr.bind_mw` of `struct rrxe_send_wqe`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rrxe_wr_bind_mw {
    pub addr: u64,
    pub length: u64,
    pub mw_rkey: u32,
    pub mr_lkey: u32,
    pub access: u32,
    pub reserved: u32,
}

/// `struct rrxe_wr_flush`: `wr.flush` of `struct rrxe_send_wqe`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rrxe_wr_flush {
    pub remote_addr: u64,
    pub length: u32,
    pub rkey: u32,
    pub type_: u8,
    pub level: u8,
    pub reserved: [u8; 6],
}

/// `union rrxe_send_wqe_wr`: the `wr` union of `struct rrxe_send_wqe`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union rrxe_send_wqe_wr {
    pub rdma: rrxe_wr_rdma,
    pub atomic: rrxe_wr_atomic,
    pub ud: rrxe_wr_ud,
    pub bind_mw: rrxe_wr_bind_mw,
    pub flush: rrxe_wr_flush,
    pub raw: [u8; 40],
}

/// `struct rrxe_send_wqe` (SGEs or inline data follow it in the slot).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct rrxe_send_wqe {
    pub wr_id: u64,
    pub opcode: u32,
    pub send_flags: u32,
    pub num_sge: u32,
    pub inline_len: u32,
    pub ex: rrxe_send_wqe_ex,
    pub xrc_remote_srqn: u32,
    pub wr: rrxe_send_wqe_wr,
}

/// `struct rrxe_recv_wqe` (SGEs follow it in the slot).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rrxe_recv_wqe {
    pub wr_id: u64,
    pub num_sge: u32,
    pub reserved: u32,
}

/// `struct rrxe_alloc_ucontext_resp`: the driver part of the GET_CONTEXT response.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct rrxe_alloc_ucontext_resp {
    pub abi_version: u32,
    pub reserved: u32,
}

/// `struct rrxe_create_cq_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rrxe_create_cq_resp {
    pub cq: rrxe_queue_info,
}

/// `struct rrxe_resize_cq_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rrxe_resize_cq_resp {
    pub cq: rrxe_queue_info,
}

/// `struct rrxe_create_qp_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rrxe_create_qp_resp {
    pub sq: rrxe_queue_info,
    pub rq: rrxe_queue_info,
    pub max_inline: u32,
    pub reserved: u32,
}

/// `struct rrxe_create_srq_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rrxe_create_srq_resp {
    pub rq: rrxe_queue_info,
    pub srq_num: u32,
    pub reserved: u32,
}

/// `struct rrxe_modify_srq_cmd`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rrxe_modify_srq_cmd {
    pub reserved: u64,
}

/// `struct rrxe_create_ah_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rrxe_create_ah_resp {
    pub ah_num: u32,
    pub reserved: u32,
}

/// `DECLARE_DRV_CMD(urrxe_get_context, IB_USER_VERBS_CMD_GET_CONTEXT, empty,
/// rrxe_alloc_ucontext_resp)`: 16 bytes, no udata in.
pub type urrxe_get_context = DrvCmd<ibv_get_context, empty>;
/// Its response: 8 bytes of core response + 8 bytes of udata out.
pub type urrxe_get_context_resp = DrvResp<ib_uverbs_get_context_resp, rrxe_alloc_ucontext_resp>;

/// CREATE_CQ's response with rrxe's queue description as udata out.
pub type urrxe_create_cq_resp = DrvResp<ib_uverbs_create_cq_resp, rrxe_create_cq_resp>;
/// The extended CQ creation response (`DECLARE_DRV_CMD` over `IB_USER_VERBS_EX_CMD_CREATE_CQ`).
pub type urrxe_create_cq_ex_resp = DrvResp<ib_uverbs_ex_create_cq_resp, rrxe_create_cq_resp>;
/// RESIZE_CQ's response with the new queue.
pub type urrxe_resize_cq_resp = DrvResp<ib_uverbs_resize_cq_resp, rrxe_resize_cq_resp>;
/// CREATE_QP's response with the SQ and RQ descriptions.
pub type urrxe_create_qp_resp = DrvResp<ib_uverbs_create_qp_resp, rrxe_create_qp_resp>;
/// CREATE_SRQ's response with the SRQ's queue.
pub type urrxe_create_srq_resp = DrvResp<ib_uverbs_create_srq_resp, rrxe_create_srq_resp>;
/// CREATE_AH's response with the AH number UD send WQEs name.
pub type urrxe_create_ah_resp = DrvResp<ib_uverbs_create_ah_resp, rrxe_create_ah_resp>;
