// SPDX-License-Identifier: GPL-2.0
//! Work requests read from queues shared with a user process (`include/rdma/rrxe-abi.h`).
//!
//! The bytes come from memory userspace can write at any time: they were copied once into
//! a kernel buffer before decoding, and every field is validated here. A malformed entry is
//! reported as such; it never reaches the engine as a valid request.

use crate::ah::AhTable;
use crate::glue::bindings as b;
use crate::proto::{RemoteAddr, UdDest};
use crate::qp::{SendKind, SendWr, Sge};
use core::mem::{offset_of, size_of};

/// Size of the send WQE header.
pub(crate) const SEND_HDR: usize = size_of::<b::rrxe_send_wqe>();
/// Size of the receive WQE header.
pub(crate) const RECV_HDR: usize = size_of::<b::rrxe_recv_wqe>();
/// Size of one SGE.
pub(crate) const SGE: usize = size_of::<b::rrxe_sge>();

const _: () = assert!(SEND_HDR == 72 && RECV_HDR == 16 && SGE == 16);

/// The layout of the shared queues' entries, for sizing them ([`crate::proto::caps`]).
pub(crate) const FORMAT: crate::proto::caps::WqeFormat = crate::proto::caps::WqeFormat {
    send_hdr: SEND_HDR as u32,
    recv_hdr: RECV_HDR as u32,
    sge: SGE as u32,
    min_send_slot: 128,
    min_recv_slot: 32,
    max_slot: crate::glue::MAX_SLOT,
};

const OFF_WR_ID: usize = offset_of!(b::rrxe_send_wqe, wr_id);
const OFF_OPCODE: usize = offset_of!(b::rrxe_send_wqe, opcode);
const OFF_FLAGS: usize = offset_of!(b::rrxe_send_wqe, send_flags);
const OFF_NUM_SGE: usize = offset_of!(b::rrxe_send_wqe, num_sge);
const OFF_INLINE: usize = offset_of!(b::rrxe_send_wqe, inline_len);
const OFF_EX: usize = offset_of!(b::rrxe_send_wqe, ex);
const OFF_U: usize = offset_of!(b::rrxe_send_wqe, wr);
const OFF_RDMA_VA: usize =
    OFF_U + offset_of!(b::rrxe_send_wqe__bindgen_ty_2__bindgen_ty_1, remote_addr);
const OFF_RDMA_RKEY: usize = OFF_U + offset_of!(b::rrxe_send_wqe__bindgen_ty_2__bindgen_ty_1, rkey);
const OFF_AT_VA: usize =
    OFF_U + offset_of!(b::rrxe_send_wqe__bindgen_ty_2__bindgen_ty_2, remote_addr);
const OFF_AT_CMP: usize =
    OFF_U + offset_of!(b::rrxe_send_wqe__bindgen_ty_2__bindgen_ty_2, compare_add);
const OFF_AT_SWAP: usize = OFF_U + offset_of!(b::rrxe_send_wqe__bindgen_ty_2__bindgen_ty_2, swap);
const OFF_AT_RKEY: usize = OFF_U + offset_of!(b::rrxe_send_wqe__bindgen_ty_2__bindgen_ty_2, rkey);
const OFF_UD_AH: usize = OFF_U + offset_of!(b::rrxe_send_wqe__bindgen_ty_2__bindgen_ty_3, ah_num);
const OFF_UD_QPN: usize =
    OFF_U + offset_of!(b::rrxe_send_wqe__bindgen_ty_2__bindgen_ty_3, remote_qpn);
const OFF_UD_QKEY: usize =
    OFF_U + offset_of!(b::rrxe_send_wqe__bindgen_ty_2__bindgen_ty_3, remote_qkey);
type BindMw = b::rrxe_send_wqe__bindgen_ty_2__bindgen_ty_4;
const OFF_BIND_ADDR: usize = OFF_U + offset_of!(BindMw, addr);
const OFF_BIND_LEN: usize = OFF_U + offset_of!(BindMw, length);
const OFF_BIND_RKEY: usize = OFF_U + offset_of!(BindMw, mw_rkey);
const OFF_BIND_MR: usize = OFF_U + offset_of!(BindMw, mr_lkey);
const OFF_BIND_ACCESS: usize = OFF_U + offset_of!(BindMw, access);
type FlushWr = b::rrxe_send_wqe__bindgen_ty_2__bindgen_ty_5;
const OFF_FLUSH_VA: usize = OFF_U + offset_of!(FlushWr, remote_addr);
const OFF_FLUSH_LEN: usize = OFF_U + offset_of!(FlushWr, length);
const OFF_FLUSH_RKEY: usize = OFF_U + offset_of!(FlushWr, rkey);
const OFF_FLUSH_TYPE: usize = OFF_U + offset_of!(FlushWr, type_);
const OFF_FLUSH_LEVEL: usize = OFF_U + offset_of!(FlushWr, level);

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

/// Reads `n` SGEs starting at `off` into `out`; returns their total length.
fn sges(bytes: &[u8], off: usize, n: usize, out: &mut [Sge]) -> Option<u32> {
    let mut total: u32 = 0;
    for i in 0..n {
        let o = off.checked_add(i.checked_mul(SGE)?)?;
        let s = Sge {
            addr: u64_at(bytes, o)?,
            len: u32_at(bytes, o + 8)?,
            lkey: u32_at(bytes, o + 12)?,
        };
        *out.get_mut(i)? = s;
        total = total.checked_add(s.len)?;
    }
    Some(total)
}

/// IBV_SEND_* flags.
const F_FENCE: u32 = 1;
const F_SIGNALED: u32 = 2;
const F_SOLICITED: u32 = 4;
const F_INLINE: u32 = 8;

/// A decoded user send WQE: the WR, its SGEs (in `sges[..wr.num_sge]`) and, for an inline
/// send, the range of its data in the slot bytes.
pub(crate) struct UserSend {
    /// The work request.
    pub(crate) wr: SendWr,
    /// Inline data: offset and length in the slot.
    pub(crate) inline: Option<(usize, usize)>,
}

/// Limits a QP imposes on its send WQEs.
pub(crate) struct SendLimits<'a> {
    /// Most SGEs.
    pub(crate) max_sge: u32,
    /// Most inline bytes.
    pub(crate) max_inline: u32,
    /// UD QP: destinations come from AH numbers.
    pub(crate) ud: bool,
    /// The device's AH table and the QP's PD.
    pub(crate) ahs: &'a AhTable,
    /// PD identity.
    pub(crate) pd: usize,
}

/// Decodes a send WQE from a slot's bytes. `None`: malformed.
pub(crate) fn decode_send(
    bytes: &[u8],
    lim: &SendLimits<'_>,
    out_sges: &mut [Sge],
) -> Option<UserSend> {
    let wr_id = u64_at(bytes, OFF_WR_ID)?;
    let opcode = u32_at(bytes, OFF_OPCODE)?;
    let flags = u32_at(bytes, OFF_FLAGS)?;
    let num_sge = u32_at(bytes, OFF_NUM_SGE)?;
    let inline_len = u32_at(bytes, OFF_INLINE)?;
    let ex = u32_at(bytes, OFF_EX)?;
    // Requests that carry no SGEs and no inline data: local operations (completed by the
    // driver) and ATOMIC WRITE (its 8 bytes are in the WQE).
    let dataless = |kind, wc_opcode, len| {
        Some(UserSend {
            wr: SendWr {
                wr_id,
                kind,
                wc_opcode,
                len,
                signaled: flags & F_SIGNALED != 0,
                solicited: false,
                fence: flags & F_FENCE != 0,
                inline: false,
                num_sge: 0,
                ud: None,
            },
            inline: None,
        })
    };
    match opcode {
        b::RRXE_WR_LOCAL_INV => {
            return dataless(
                SendKind::LocalInv { key: ex },
                b::ib_wc_opcode_IB_WC_LOCAL_INV,
                0,
            );
        }
        b::RRXE_WR_BIND_MW if !lim.ud => {
            let req = crate::mr::BindReq {
                new_rkey: u32_at(bytes, OFF_BIND_RKEY)?,
                mr_lkey: u32_at(bytes, OFF_BIND_MR)?,
                va: u64_at(bytes, OFF_BIND_ADDR)?,
                len: u64_at(bytes, OFF_BIND_LEN)?,
                access: u32_at(bytes, OFF_BIND_ACCESS)?,
            };
            return dataless(SendKind::BindMw(req), b::ib_wc_opcode_IB_WC_BIND_MW, 0);
        }
        b::RRXE_WR_ATOMIC_WRITE if !lim.ud => {
            // The value's bytes are in memory order; proto takes their big-endian reading.
            let value = u64::from_be_bytes(u64_at(bytes, OFF_AT_CMP)?.to_ne_bytes());
            let op = crate::proto::SendOp::AtomicWrite {
                remote: RemoteAddr {
                    va: u64_at(bytes, OFF_AT_VA)?,
                    rkey: u32_at(bytes, OFF_AT_RKEY)?,
                },
                value,
            };
            let wc = b::ib_wc_opcode_IB_WC_ATOMIC_WRITE;
            return dataless(SendKind::Transport(op), wc, 8);
        }
        b::RRXE_WR_FLUSH if !lim.ud => {
            let plt = *bytes.get(OFF_FLUSH_TYPE)?;
            let sel = *bytes.get(OFF_FLUSH_LEVEL)?;
            let types = b::RRXE_FLUSH_GLOBAL | b::RRXE_FLUSH_PERSISTENT;
            if plt == 0
                || u32::from(plt) & !types != 0
                || (u32::from(sel) != b::RRXE_FLUSH_RANGE && u32::from(sel) != b::RRXE_FLUSH_MR)
            {
                return None;
            }
            let op = crate::proto::SendOp::Flush {
                remote: RemoteAddr {
                    va: u64_at(bytes, OFF_FLUSH_VA)?,
                    rkey: u32_at(bytes, OFF_FLUSH_RKEY)?,
                },
                sel,
                plt,
            };
            let len = u32_at(bytes, OFF_FLUSH_LEN)?;
            return dataless(SendKind::Transport(op), b::ib_wc_opcode_IB_WC_FLUSH, len);
        }
        _ => {}
    }
    let inline = flags & F_INLINE != 0;
    let (len, n, inl) = if inline {
        if inline_len > lim.max_inline || SEND_HDR.checked_add(inline_len as usize)? > bytes.len() {
            return None;
        }
        (inline_len, 0, Some((SEND_HDR, inline_len as usize)))
    } else {
        if num_sge > lim.max_sge || SEND_HDR + num_sge as usize * SGE > bytes.len() {
            return None;
        }
        (
            sges(bytes, SEND_HDR, num_sge as usize, out_sges)?,
            num_sge,
            None,
        )
    };
    let rdma = RemoteAddr {
        va: u64_at(bytes, OFF_RDMA_VA)?,
        rkey: u32_at(bytes, OFF_RDMA_RKEY)?,
    };
    let atomic = RemoteAddr {
        va: u64_at(bytes, OFF_AT_VA)?,
        rkey: u32_at(bytes, OFF_AT_RKEY)?,
    };
    let (op, wc) = crate::qp::transport_op(
        opcode,
        ex,
        rdma,
        atomic,
        u64_at(bytes, OFF_AT_CMP)?,
        u64_at(bytes, OFF_AT_SWAP)?,
    )?;
    let ud = if lim.ud {
        let av = lim.ahs.get(u32_at(bytes, OFF_UD_AH)?, lim.pd)?;
        Some((
            av,
            UdDest {
                qpn: u32_at(bytes, OFF_UD_QPN)?,
                qkey: u32_at(bytes, OFF_UD_QKEY)?,
            },
        ))
    } else {
        None
    };
    Some(UserSend {
        wr: SendWr {
            wr_id,
            kind: SendKind::Transport(op),
            wc_opcode: wc,
            len,
            signaled: flags & F_SIGNALED != 0,
            solicited: flags & F_SOLICITED != 0,
            fence: flags & F_FENCE != 0,
            inline,
            num_sge: n,
            ud,
        },
        inline: inl,
    })
}

/// Decodes a receive WQE: (wr_id, number of SGEs, total length). `None`: malformed.
pub(crate) fn decode_recv(
    bytes: &[u8],
    max_sge: u32,
    out_sges: &mut [Sge],
) -> Option<(u64, u32, u32)> {
    let wr_id = u64_at(bytes, offset_of!(b::rrxe_recv_wqe, wr_id))?;
    let n = u32_at(bytes, offset_of!(b::rrxe_recv_wqe, num_sge))?;
    if n > max_sge || RECV_HDR + n as usize * SGE > bytes.len() {
        return None;
    }
    let len = sges(bytes, RECV_HDR, n as usize, out_sges)?;
    Some((wr_id, n, len))
}
