// SPDX-License-Identifier: GPL-2.0
//! The IB verbs values the driver reports and reads, as Rust types. Their numbers are the
//! kernel's (`enum ib_wc_status`, `ib_wc_opcode`, `ib_wr_opcode` in `ib_verbs.h`), which
//! the uverbs ABI shares; they are converted to raw numbers only where a CQE is written.

use crate::glue::bindings as b;
use crate::proto;

/// The status of a work completion (the statuses rrxe reports).
#[repr(u32)]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) enum WcStatus {
    /// Success.
    #[default]
    Success = b::ib_wc_status_IB_WC_SUCCESS,
    /// Local length error.
    LocLenErr = b::ib_wc_status_IB_WC_LOC_LEN_ERR,
    /// Local QP operation error.
    LocQpOpErr = b::ib_wc_status_IB_WC_LOC_QP_OP_ERR,
    /// Local protection error.
    LocProtErr = b::ib_wc_status_IB_WC_LOC_PROT_ERR,
    /// Flushed (QP in error).
    WrFlushErr = b::ib_wc_status_IB_WC_WR_FLUSH_ERR,
    /// Memory window bind error.
    MwBindErr = b::ib_wc_status_IB_WC_MW_BIND_ERR,
    /// Bad response.
    BadRespErr = b::ib_wc_status_IB_WC_BAD_RESP_ERR,
    /// Remote invalid request.
    RemInvReqErr = b::ib_wc_status_IB_WC_REM_INV_REQ_ERR,
    /// Remote access error.
    RemAccessErr = b::ib_wc_status_IB_WC_REM_ACCESS_ERR,
    /// Remote operation error.
    RemOpErr = b::ib_wc_status_IB_WC_REM_OP_ERR,
    /// Transport retries exceeded.
    RetryExcErr = b::ib_wc_status_IB_WC_RETRY_EXC_ERR,
    /// RNR retries exceeded.
    RnrRetryExcErr = b::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR,
}

impl From<proto::WcStatus> for WcStatus {
    fn from(s: proto::WcStatus) -> Self {
        use proto::WcStatus as P;
        match s {
            P::Success => WcStatus::Success,
            P::LocLenErr => WcStatus::LocLenErr,
            P::LocQpOpErr => WcStatus::LocQpOpErr,
            P::RemInvReqErr => WcStatus::RemInvReqErr,
            P::RemAccessErr => WcStatus::RemAccessErr,
            P::RemOpErr => WcStatus::RemOpErr,
            P::RetryExcErr => WcStatus::RetryExcErr,
            P::RnrRetryExcErr => WcStatus::RnrRetryExcErr,
            P::WrFlushErr => WcStatus::WrFlushErr,
            P::BadRespErr => WcStatus::BadRespErr,
            P::LocProtErr => WcStatus::LocProtErr,
        }
    }
}

/// What a work completion completes.
#[repr(u32)]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) enum WcOpcode {
    /// SEND (with or without immediate or invalidate).
    #[default]
    Send = b::ib_wc_opcode_IB_WC_SEND,
    /// RDMA WRITE (with or without immediate).
    RdmaWrite = b::ib_wc_opcode_IB_WC_RDMA_WRITE,
    /// RDMA READ.
    RdmaRead = b::ib_wc_opcode_IB_WC_RDMA_READ,
    /// Compare and swap.
    CompSwap = b::ib_wc_opcode_IB_WC_COMP_SWAP,
    /// Fetch and add.
    FetchAdd = b::ib_wc_opcode_IB_WC_FETCH_ADD,
    /// Memory window bind.
    BindMw = b::ib_wc_opcode_IB_WC_BIND_MW,
    /// Local invalidate.
    LocalInv = b::ib_wc_opcode_IB_WC_LOCAL_INV,
    /// Fast registration.
    RegMr = b::ib_wc_opcode_IB_WC_REG_MR,
    /// Atomic write.
    AtomicWrite = b::ib_wc_opcode_IB_WC_ATOMIC_WRITE,
    /// Flush.
    Flush = b::ib_wc_opcode_IB_WC_FLUSH,
    /// A receive (SEND).
    Recv = b::ib_wc_opcode_IB_WC_RECV,
    /// A receive consumed by an RDMA WRITE with immediate.
    RecvRdmaWithImm = b::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM,
}

/// The operation of a send work request (the ones rrxe executes). The transport values are
/// those of `ib_uverbs_wr_opcode` too, and so of the rrxe ABI (checked below).
#[repr(u32)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum WrOpcode {
    /// SEND.
    Send = b::ib_wr_opcode_IB_WR_SEND,
    /// SEND with immediate.
    SendWithImm = b::ib_wr_opcode_IB_WR_SEND_WITH_IMM,
    /// SEND with invalidate.
    SendWithInv = b::ib_wr_opcode_IB_WR_SEND_WITH_INV,
    /// RDMA WRITE.
    RdmaWrite = b::ib_wr_opcode_IB_WR_RDMA_WRITE,
    /// RDMA WRITE with immediate.
    RdmaWriteWithImm = b::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM,
    /// RDMA READ.
    RdmaRead = b::ib_wr_opcode_IB_WR_RDMA_READ,
    /// Compare and swap.
    AtomicCmpAndSwp = b::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP,
    /// Fetch and add.
    AtomicFetchAndAdd = b::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD,
    /// Local invalidate (kernel WRs).
    LocalInv = b::ib_wr_opcode_IB_WR_LOCAL_INV,
    /// Fast registration (kernel WRs).
    RegMr = b::ib_wr_opcode_IB_WR_REG_MR,
}

impl WrOpcode {
    /// The opcode of raw number `v`; `None` for one rrxe does not execute.
    pub(crate) fn from_raw(v: u32) -> Option<Self> {
        use WrOpcode::*;
        [
            Send,
            SendWithImm,
            SendWithInv,
            RdmaWrite,
            RdmaWriteWithImm,
            RdmaRead,
            AtomicCmpAndSwp,
            AtomicFetchAndAdd,
            LocalInv,
            RegMr,
        ]
        .into_iter()
        .find(|o| *o as u32 == v)
    }
}

const _: () = assert!(
    WrOpcode::Send as u32 == b::RRXE_WR_SEND
        && WrOpcode::SendWithImm as u32 == b::RRXE_WR_SEND_WITH_IMM
        && WrOpcode::SendWithInv as u32 == b::RRXE_WR_SEND_WITH_INV
        && WrOpcode::RdmaWrite as u32 == b::RRXE_WR_RDMA_WRITE
        && WrOpcode::RdmaWriteWithImm as u32 == b::RRXE_WR_RDMA_WRITE_WITH_IMM
        && WrOpcode::RdmaRead as u32 == b::RRXE_WR_RDMA_READ
        && WrOpcode::AtomicCmpAndSwp as u32 == b::RRXE_WR_ATOMIC_CMP_AND_SWP
        && WrOpcode::AtomicFetchAndAdd as u32 == b::RRXE_WR_ATOMIC_FETCH_AND_ADD
);
