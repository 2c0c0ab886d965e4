// SPDX-License-Identifier: GPL-2.0
//! Work requests read from queues shared with a user process (`include/rdma/rrxe-abi.h`).
//!
//! The bytes come from memory userspace can write at any time: they were copied once into
//! a kernel buffer before decoding. The decoding and every check are in the host-tested,
//! fuzzed [`crate::proto::uabi`]; this adapter looks up UD address handles and builds the
//! driver's [`SendWr`]. A malformed entry is reported as such; it never reaches the engine
//! as a valid request.

use crate::ah::AhTable;
use crate::glue::bindings as b;
use crate::ib::WcOpcode;
use crate::mr::AccessFlags;
use crate::proto::uabi::{self, WrFields, WrOpcode};
use crate::proto::{RemoteAddr, SendOp};
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

// The layout proto decodes must be the C header's: a drift fails the build here.
const _: () = {
    use crate::proto::uabi::*;
    type Wqe = b::rrxe_send_wqe;
    type Rdma = b::rrxe_wr_rdma;
    type Atomic = b::rrxe_wr_atomic;
    type Ud = b::rrxe_wr_ud;
    type Bind = b::rrxe_wr_bind_mw;
    type Flush = b::rrxe_wr_flush;
    assert!(SEND_HDR == send_wqe::SIZE && RECV_HDR == recv_wqe::SIZE && SGE == sge::SIZE);
    assert!(
        sge::ADDR == offset_of!(b::rrxe_sge, addr)
            && sge::LENGTH == offset_of!(b::rrxe_sge, length)
            && sge::LKEY == offset_of!(b::rrxe_sge, lkey)
    );
    assert!(
        send_wqe::WR_ID == offset_of!(Wqe, wr_id)
            && send_wqe::OPCODE == offset_of!(Wqe, opcode)
            && send_wqe::SEND_FLAGS == offset_of!(Wqe, send_flags)
            && send_wqe::NUM_SGE == offset_of!(Wqe, num_sge)
            && send_wqe::INLINE_LEN == offset_of!(Wqe, inline_len)
            && send_wqe::EX == offset_of!(Wqe, ex)
            && send_wqe::XRC_REMOTE_SRQN == offset_of!(Wqe, xrc_remote_srqn)
            && send_wqe::WR == offset_of!(Wqe, wr)
            && send_wqe::WR_SIZE == size_of::<b::rrxe_send_wqe_wr>()
    );
    assert!(
        wr_rdma::REMOTE_ADDR == offset_of!(Rdma, remote_addr)
            && wr_rdma::RKEY == offset_of!(Rdma, rkey)
            && wr_rdma::SIZE == size_of::<Rdma>()
    );
    assert!(
        wr_atomic::REMOTE_ADDR == offset_of!(Atomic, remote_addr)
            && wr_atomic::COMPARE_ADD == offset_of!(Atomic, compare_add)
            && wr_atomic::SWAP == offset_of!(Atomic, swap)
            && wr_atomic::RKEY == offset_of!(Atomic, rkey)
            && wr_atomic::SIZE == size_of::<Atomic>()
    );
    assert!(
        wr_ud::AH_NUM == offset_of!(Ud, ah_num)
            && wr_ud::REMOTE_QPN == offset_of!(Ud, remote_qpn)
            && wr_ud::REMOTE_QKEY == offset_of!(Ud, remote_qkey)
            && wr_ud::SIZE == size_of::<Ud>()
    );
    assert!(
        wr_bind_mw::ADDR == offset_of!(Bind, addr)
            && wr_bind_mw::LENGTH == offset_of!(Bind, length)
            && wr_bind_mw::MW_RKEY == offset_of!(Bind, mw_rkey)
            && wr_bind_mw::MR_LKEY == offset_of!(Bind, mr_lkey)
            && wr_bind_mw::ACCESS == offset_of!(Bind, access)
            && wr_bind_mw::SIZE == size_of::<Bind>()
    );
    assert!(
        wr_flush::REMOTE_ADDR == offset_of!(Flush, remote_addr)
            && wr_flush::LENGTH == offset_of!(Flush, length)
            && wr_flush::RKEY == offset_of!(Flush, rkey)
            && wr_flush::TYPE == offset_of!(Flush, type_)
            && wr_flush::LEVEL == offset_of!(Flush, level)
            && wr_flush::SIZE == size_of::<Flush>()
    );
    assert!(
        recv_wqe::WR_ID == offset_of!(b::rrxe_recv_wqe, wr_id)
            && recv_wqe::NUM_SGE == offset_of!(b::rrxe_recv_wqe, num_sge)
    );
    assert!(
        WR_RDMA_WRITE == b::RRXE_WR_RDMA_WRITE
            && WR_RDMA_WRITE_WITH_IMM == b::RRXE_WR_RDMA_WRITE_WITH_IMM
            && WR_SEND == b::RRXE_WR_SEND
            && WR_SEND_WITH_IMM == b::RRXE_WR_SEND_WITH_IMM
            && WR_RDMA_READ == b::RRXE_WR_RDMA_READ
            && WR_ATOMIC_CMP_AND_SWP == b::RRXE_WR_ATOMIC_CMP_AND_SWP
            && WR_ATOMIC_FETCH_AND_ADD == b::RRXE_WR_ATOMIC_FETCH_AND_ADD
            && WR_LOCAL_INV == b::RRXE_WR_LOCAL_INV
            && WR_BIND_MW == b::RRXE_WR_BIND_MW
            && WR_SEND_WITH_INV == b::RRXE_WR_SEND_WITH_INV
            && WR_ATOMIC_WRITE == b::RRXE_WR_ATOMIC_WRITE
            && WR_FLUSH == b::RRXE_WR_FLUSH
    );
    assert!(
        SEND_FENCE == b::RRXE_SEND_FENCE
            && SEND_SIGNALED == b::RRXE_SEND_SIGNALED
            && SEND_SOLICITED == b::RRXE_SEND_SOLICITED
            && SEND_INLINE == b::RRXE_SEND_INLINE
    );
    assert!(
        FLUSH_GLOBAL as u32 == b::RRXE_FLUSH_GLOBAL
            && FLUSH_PERSISTENT as u32 == b::RRXE_FLUSH_PERSISTENT
            && FLUSH_RANGE as u32 == b::RRXE_FLUSH_RANGE
            && FLUSH_MR as u32 == b::RRXE_FLUSH_MR
    );
};

/// Copies a decoded SGE list into the driver's SGEs; `None` if `out` is too short.
fn copy_sges(l: &uabi::SgeList<'_>, out: &mut [Sge]) -> Option<()> {
    for (i, s) in l.iter().enumerate() {
        *out.get_mut(i)? = Sge {
            addr: s.addr,
            len: s.length,
            lkey: s.lkey,
        };
    }
    Some(())
}

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

/// Decodes a send WQE from a slot's bytes ([`uabi::decode_send`]), looks up its AH and
/// turns it into the driver's WR. `None`: malformed.
pub(crate) fn decode_send(
    bytes: &[u8],
    lim: &SendLimits<'_>,
    out_sges: &mut [Sge],
) -> Option<UserSend> {
    let plim = uabi::SendLimits {
        max_sge: lim.max_sge,
        max_inline: lim.max_inline,
        ud: lim.ud,
    };
    let w = uabi::decode_send(bytes, &plim).ok()?;
    let len = w.data.len();
    let (num_sge, inline) = match w.data {
        uabi::Data::None => (0, None),
        uabi::Data::Sges(l) => {
            copy_sges(&l, out_sges)?;
            (l.count(), None)
        }
        uabi::Data::Inline { offset, len } => (0, Some((offset, len as usize))),
    };
    let no_remote = RemoteAddr { va: 0, rkey: 0 };
    let (kind, wc_opcode, len) = match w.wr {
        WrFields::BindMw(m) => {
            let req = crate::mr::BindReq {
                new_rkey: m.mw_rkey,
                mr_lkey: m.mr_lkey,
                va: m.addr,
                len: m.length,
                access: AccessFlags::from_raw(m.access),
            };
            (SendKind::BindMw(req), WcOpcode::BindMw, 0)
        }
        WrFields::AtomicWrite { remote, value } => {
            // The value's bytes are in memory order; proto takes their big-endian reading.
            let value = u64::from_be_bytes(value);
            let op = SendOp::AtomicWrite { remote, value };
            (SendKind::Transport(op), WcOpcode::AtomicWrite, 8)
        }
        WrFields::Flush(f) => {
            let op = SendOp::Flush {
                remote: f.remote,
                sel: f.level,
                plt: f.typ,
            };
            (SendKind::Transport(op), WcOpcode::Flush, f.length)
        }
        WrFields::None if w.opcode == WrOpcode::LocalInv => {
            (SendKind::LocalInv { key: w.ex }, WcOpcode::LocalInv, 0)
        }
        WrFields::None | WrFields::Rdma(_) | WrFields::Atomic { .. } => {
            let (rdma, atomic, cmp, swap) = match w.wr {
                WrFields::Rdma(r) => (r, no_remote, 0, 0),
                WrFields::Atomic {
                    remote,
                    compare_add,
                    swap,
                } => (no_remote, remote, compare_add, swap),
                _ => (no_remote, no_remote, 0, 0),
            };
            let (op, wc) = crate::qp::transport_op(w.opcode.raw(), w.ex, rdma, atomic, cmp, swap)?;
            (SendKind::Transport(op), wc, len)
        }
    };
    let ud = match w.ud {
        Some(u) => Some((lim.ahs.get(u.ah_num, lim.pd)?, u.dest)),
        None => None,
    };
    Some(UserSend {
        wr: SendWr {
            wr_id: w.wr_id,
            kind,
            wc_opcode,
            len,
            signaled: w.flags.signaled,
            solicited: w.flags.solicited,
            fence: w.flags.fence,
            inline: w.flags.inline,
            num_sge,
            ud,
            xrc_srqn: w.xrc_srqn & 0x00ff_ffff,
        },
        inline,
    })
}

/// Decodes a receive WQE ([`uabi::decode_recv`]): (wr_id, number of SGEs, total length).
/// `None`: malformed.
pub(crate) fn decode_recv(
    bytes: &[u8],
    max_sge: u32,
    out_sges: &mut [Sge],
) -> Option<(u64, u32, u32)> {
    let w = uabi::decode_recv(bytes, max_sge).ok()?;
    copy_sges(&w.sges, out_sges)?;
    Some((w.wr_id, w.sges.count(), w.sges.total()))
}
