// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Work queue and completion entries of `include/rdma/rrxe-abi.h`: validating verbs work
//! requests against a queue's limits, encoding them into slot bytes, and decoding CQEs.
//! The byte layout is the kernel decoder's (`rrxe_proto::uabi`), which the tests check
//! against the C header's types as bindgen generated them: the provider writes what the
//! kernel reads by construction.

// Logic only: the FFI layer (`crate::abi`) holds all unsafe code.
#![deny(unsafe_code)]

use crate::abi::verbs::{ibv_wc, wc_imm_union};
use rrxe_proto::uabi::{
    self, recv_wqe, send_wqe, sge, wr_atomic, wr_bind_mw, wr_flush, wr_rdma, wr_ud, WrOpcode,
};

/// Size of `struct rrxe_send_wqe`.
pub const SEND_HDR: usize = send_wqe::SIZE;
/// Size of `struct rrxe_recv_wqe`.
pub const RECV_HDR: usize = recv_wqe::SIZE;
/// Size of `struct rrxe_sge`.
pub const SGE: usize = sge::SIZE;
/// Size of `struct ib_uverbs_wc` in a CQ slot.
pub const CQE: usize = 48;
/// Largest slot a send or receive entry needs (72 + 32 SGEs, or 72 + 512 inline bytes,
/// rounded up to the kernel's power of two).
pub const MAX_WQE: usize = 1024;

/// Where the `wr` union starts in `struct rrxe_send_wqe` (`uabi::wr_*` offsets are inside it).
const WR: usize = send_wqe::WR;

/// The transport a QP uses (what its work requests may do).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Rc,
    Uc,
    Ud,
    /// An XRC send QP: RC's operations, each request naming the remote XRC SRQ.
    Xrc,
}

/// Why a work request is refused (the verbs call fails with `EINVAL`, or `ENOMEM` when the
/// queue is full, and reports the request as bad).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrError {
    /// Opcode unknown or not allowed on this QP type.
    Opcode,
    /// More SGEs than the queue was created for.
    TooManySge,
    /// More inline data than the QP supports.
    InlineTooLong,
    /// UD: no address handle.
    NoAh,
    /// The queue is full.
    Full,
    /// The queue is corrupt or the QP/SRQ failed: nothing more can be posted.
    Broken,
    /// An operation this device does not implement (or the QP was not created for).
    Unsupported,
    /// `ibv_wr_*` outside `ibv_wr_start` .. `ibv_wr_complete`, or a setter before an opcode.
    Sequence,
    /// The QP's state does not take this kind of work request (see `wq::QpState`).
    QpState,
}

impl WrError {
    /// The errno the verbs call returns.
    pub fn errno(self) -> i32 {
        match self {
            Self::Full => libc::ENOMEM,
            Self::Broken => libc::EIO,
            Self::Unsupported => libc::EOPNOTSUPP,
            _ => libc::EINVAL,
        }
    }
}

/// One scatter/gather element.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// A send work request, already read out of the caller's `ibv_send_wr`.
#[derive(Clone, Copy, Debug, Default)]
pub struct SendWr {
    pub wr_id: u64,
    /// `IBV_WR_*`.
    pub opcode: u32,
    /// `IBV_SEND_*`.
    pub send_flags: u32,
    /// Immediate data (network order, as stored) or rkey to invalidate.
    pub ex: u32,
    pub remote_addr: u64,
    pub rkey: u32,
    pub compare_add: u64,
    pub swap: u64,
    /// UD: the AH number (0: none given).
    pub ah_num: u32,
    pub remote_qpn: u32,
    pub remote_qkey: u32,
    /// BIND_MW: what the window is bound to.
    pub bind: MwBind,
    /// XRC send QPs: the remote XRC SRQ (`wr.qp_type.xrc.remote_srqn`,
    /// `ibv_wr_set_xrc_srqn`).
    pub xrc_srqn: u32,
    /// FLUSH: what to flush (with `remote_addr` and `rkey`).
    pub flush: FlushArgs,
}

/// The arguments of a FLUSH (`ibv_wr_flush`) besides its target address and rkey.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlushArgs {
    /// Bytes from `remote_addr` (level `RRXE_FLUSH_RANGE`).
    pub length: u32,
    /// Placement type: `RRXE_FLUSH_GLOBAL` and/or `RRXE_FLUSH_PERSISTENT` (the values of
    /// `IBV_FLUSH_GLOBAL`/`IBV_FLUSH_PERSISTENT`).
    pub placement: u8,
    /// Selectivity: `RRXE_FLUSH_RANGE` or `RRXE_FLUSH_MR` (`IBV_FLUSH_RANGE`/`IBV_FLUSH_MR`).
    pub level: u8,
}

/// The binding a BIND_MW request gives a memory window.
#[derive(Clone, Copy, Debug, Default)]
pub struct MwBind {
    /// The window's new rkey.
    pub mw_rkey: u32,
    /// The region's lkey (0 with length 0: unbind a type 1 window).
    pub mr_lkey: u32,
    pub addr: u64,
    pub length: u64,
    /// `IBV_ACCESS_*` the window grants.
    pub access: u32,
}

/// `ibv_inc_rkey()`: the next rkey of a window (same index, next 8-bit tag).
pub fn inc_rkey(rkey: u32) -> u32 {
    (rkey & 0xffff_ff00) | (rkey.wrapping_add(1) & 0xff)
}

/// A send queue's limits.
#[derive(Clone, Copy, Debug)]
pub struct SendLimits {
    pub transport: Transport,
    pub max_sge: u32,
    pub max_inline: u32,
    pub slot_size: usize,
}

fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
}

fn put64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_ne_bytes());
}

fn get16(b: &[u8], off: usize) -> u16 {
    u16::from_ne_bytes([b[off], b[off + 1]])
}

fn get32(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn get64(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_ne_bytes(a)
}

/// Whether `op` may be posted on `t`: UD sends only; UC sends, RDMA WRITEs and the local
/// operations; RC every opcode: those of the legacy `ibv_send_wr` (`IBV_WR_*` 0..=9, the same
/// numbers as `RRXE_WR_*`), ATOMIC WRITE and FLUSH (`ibv_wr_atomic_write`, and
/// `ibv_wr_flush` of rdma-core 45+). The kernel checks FLUSH's arguments.
fn opcode_allowed(t: Transport, op: WrOpcode) -> bool {
    use WrOpcode::*;
    match t {
        Transport::Ud => matches!(op, Send | SendWithImm),
        Transport::Uc => matches!(
            op,
            Send | SendWithImm | RdmaWrite | RdmaWriteWithImm | LocalInv | BindMw
        ),
        Transport::Rc => true,
        // XRC has no ATOMIC WRITE (or FLUSH) opcode (the kernel's proto::opcode).
        Transport::Xrc => !matches!(op, Flush | AtomicWrite),
    }
}

/// Encodes a send WQE into `out` (at least `lim.slot_size` bytes). `payload` is either the
/// SGE list or, for an inline send (`IBV_SEND_INLINE` on a request that carries data), the
/// data pieces the SGEs point at, which the caller has gathered. Returns the entry's length.
pub fn encode_send(
    wr: &SendWr,
    sges: &[Sge],
    inline: Option<&[&[u8]]>,
    lim: &SendLimits,
    out: &mut [u8],
) -> Result<usize, WrError> {
    let op = WrOpcode::from_raw(wr.opcode)
        .filter(|&op| opcode_allowed(lim.transport, op))
        .ok_or(WrError::Opcode)?;
    if lim.transport == Transport::Ud && wr.ah_num == 0 {
        return Err(WrError::NoAh);
    }
    let out = out.get_mut(..lim.slot_size).ok_or(WrError::InlineTooLong)?;
    out[..SEND_HDR].fill(0);
    put64(out, send_wqe::WR_ID, wr.wr_id);
    put32(out, send_wqe::OPCODE, op.raw());
    put32(out, send_wqe::EX, wr.ex);
    if lim.transport == Transport::Xrc {
        put32(out, send_wqe::XRC_REMOTE_SRQN, wr.xrc_srqn);
    }
    if op == WrOpcode::AtomicWrite {
        // The 8 bytes travel in the WQE: no SGE, not inline.
        put32(
            out,
            send_wqe::SEND_FLAGS,
            wr.send_flags & !uabi::SEND_INLINE,
        );
        put64(out, WR + wr_atomic::REMOTE_ADDR, wr.remote_addr);
        put64(out, WR + wr_atomic::COMPARE_ADD, wr.compare_add);
        put32(out, WR + wr_atomic::RKEY, wr.rkey);
        return Ok(SEND_HDR);
    }
    if op == WrOpcode::Flush {
        // No data: the target is the (remote) range or MR.
        put32(
            out,
            send_wqe::SEND_FLAGS,
            wr.send_flags & !uabi::SEND_INLINE,
        );
        put64(out, WR + wr_flush::REMOTE_ADDR, wr.remote_addr);
        put32(out, WR + wr_flush::LENGTH, wr.flush.length);
        put32(out, WR + wr_flush::RKEY, wr.rkey);
        out[WR + wr_flush::TYPE] = wr.flush.placement;
        out[WR + wr_flush::LEVEL] = wr.flush.level;
        return Ok(SEND_HDR);
    }
    if matches!(op, WrOpcode::BindMw | WrOpcode::LocalInv) {
        // Local operations carry no data.
        put32(
            out,
            send_wqe::SEND_FLAGS,
            wr.send_flags & !uabi::SEND_INLINE,
        );
        if op == WrOpcode::BindMw {
            put64(out, WR + wr_bind_mw::ADDR, wr.bind.addr);
            put64(out, WR + wr_bind_mw::LENGTH, wr.bind.length);
            put32(out, WR + wr_bind_mw::MW_RKEY, wr.bind.mw_rkey);
            put32(out, WR + wr_bind_mw::MR_LKEY, wr.bind.mr_lkey);
            put32(out, WR + wr_bind_mw::ACCESS, wr.bind.access);
        }
        return Ok(SEND_HDR);
    }
    let len = if let Some(pieces) = inline {
        let total: usize = pieces.iter().map(|p| p.len()).sum();
        if total > lim.max_inline as usize || SEND_HDR + total > lim.slot_size {
            return Err(WrError::InlineTooLong);
        }
        let mut at = SEND_HDR;
        for p in pieces {
            out[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
        put32(out, send_wqe::SEND_FLAGS, wr.send_flags | uabi::SEND_INLINE);
        put32(out, send_wqe::INLINE_LEN, total as u32);
        at
    } else {
        if sges.len() > lim.max_sge as usize || SEND_HDR + sges.len() * SGE > lim.slot_size {
            return Err(WrError::TooManySge);
        }
        put32(
            out,
            send_wqe::SEND_FLAGS,
            wr.send_flags & !uabi::SEND_INLINE,
        );
        put32(out, send_wqe::NUM_SGE, sges.len() as u32);
        for (i, s) in sges.iter().enumerate() {
            let o = SEND_HDR + i * SGE;
            put64(out, o + sge::ADDR, s.addr);
            put32(out, o + sge::LENGTH, s.length);
            put32(out, o + sge::LKEY, s.lkey);
        }
        SEND_HDR + sges.len() * SGE
    };
    match op {
        _ if lim.transport == Transport::Ud => {
            put32(out, WR + wr_ud::AH_NUM, wr.ah_num);
            put32(out, WR + wr_ud::REMOTE_QPN, wr.remote_qpn);
            put32(out, WR + wr_ud::REMOTE_QKEY, wr.remote_qkey);
        }
        WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => {
            put64(out, WR + wr_atomic::REMOTE_ADDR, wr.remote_addr);
            put64(out, WR + wr_atomic::COMPARE_ADD, wr.compare_add);
            put64(out, WR + wr_atomic::SWAP, wr.swap);
            put32(out, WR + wr_atomic::RKEY, wr.rkey);
        }
        _ => {
            put64(out, WR + wr_rdma::REMOTE_ADDR, wr.remote_addr);
            put32(out, WR + wr_rdma::RKEY, wr.rkey);
        }
    }
    Ok(len)
}

/// Encodes a receive WQE into `out`; returns its length.
pub fn encode_recv(
    wr_id: u64,
    sges: &[Sge],
    max_sge: u32,
    slot_size: usize,
    out: &mut [u8],
) -> Result<usize, WrError> {
    let len = RECV_HDR + sges.len() * SGE;
    if sges.len() > max_sge as usize || len > slot_size || len > out.len() {
        return Err(WrError::TooManySge);
    }
    out[..RECV_HDR].fill(0);
    put64(out, recv_wqe::WR_ID, wr_id);
    put32(out, recv_wqe::NUM_SGE, sges.len() as u32);
    for (i, s) in sges.iter().enumerate() {
        let o = RECV_HDR + i * SGE;
        put64(out, o + sge::ADDR, s.addr);
        put32(out, o + sge::LENGTH, s.length);
        put32(out, o + sge::LKEY, s.lkey);
    }
    Ok(len)
}

/// Kernel `ib_wc_flags` bits as rrxe.ko writes them into `ib_uverbs_wc.wc_flags` (the same
/// values the kernel's own uverbs poll path copies out unchanged).
mod kflags {
    pub const GRH: u32 = 1 << 0;
    pub const WITH_IMM: u32 = 1 << 1;
    pub const WITH_INVALIDATE: u32 = 1 << 2;
    pub const IP_CSUM_OK: u32 = 1 << 3;
}

/// `IBV_WC_*` flags of libibverbs.
pub mod ibv_wc_flags {
    pub const GRH: u32 = 1 << 0;
    pub const WITH_IMM: u32 = 1 << 1;
    pub const IP_CSUM_OK: u32 = 1 << 2;
    pub const WITH_INV: u32 = 1 << 3;
}

/// Decodes a CQ slot (`struct ib_uverbs_wc`, at least [`CQE`] bytes) into an `ibv_wc`.
pub fn decode_cqe(b: &[u8]) -> ibv_wc {
    let kf = get32(b, 36);
    let mut flags = 0;
    for (k, u) in [
        (kflags::GRH, ibv_wc_flags::GRH),
        (kflags::WITH_IMM, ibv_wc_flags::WITH_IMM),
        (kflags::WITH_INVALIDATE, ibv_wc_flags::WITH_INV),
        (kflags::IP_CSUM_OK, ibv_wc_flags::IP_CSUM_OK),
    ] {
        if kf & k != 0 {
            flags |= u;
        }
    }
    ibv_wc {
        wr_id: get64(b, 0),
        status: get32(b, 8),
        opcode: get32(b, 12),
        vendor_err: get32(b, 16),
        byte_len: get32(b, 20),
        __bindgen_anon_1: wc_imm_union(get32(b, 24)),
        qp_num: get32(b, 28),
        src_qp: get32(b, 32),
        wc_flags: flags,
        pkey_index: get16(b, 40),
        slid: get16(b, 42),
        sl: b[44],
        dlid_path_bits: b[45],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lim(t: Transport) -> SendLimits {
        SendLimits {
            transport: t,
            max_sge: 4,
            max_inline: 64,
            slot_size: 256,
        }
    }

    #[test]
    fn bind_mw_layout() {
        let wr = SendWr {
            wr_id: 9,
            opcode: uabi::WR_BIND_MW,
            send_flags: uabi::SEND_SIGNALED | uabi::SEND_INLINE,
            bind: MwBind {
                mw_rkey: 0x1234_5601,
                mr_lkey: 0x77,
                addr: 0x1000,
                length: 0x200,
                access: 2,
            },
            ..Default::default()
        };
        let mut out = [0xffu8; MAX_WQE];
        let n = encode_send(&wr, &[], None, &lim(Transport::Rc), &mut out).unwrap();
        assert_eq!(n, SEND_HDR);
        assert_eq!(get32(&out, send_wqe::OPCODE), uabi::WR_BIND_MW);
        assert_eq!(get32(&out, send_wqe::SEND_FLAGS), uabi::SEND_SIGNALED);
        assert_eq!(get32(&out, send_wqe::NUM_SGE), 0);
        assert_eq!(get64(&out, WR + wr_bind_mw::ADDR), 0x1000);
        assert_eq!(get64(&out, WR + wr_bind_mw::LENGTH), 0x200);
        assert_eq!(get32(&out, WR + wr_bind_mw::MW_RKEY), 0x1234_5601);
        assert_eq!(get32(&out, WR + wr_bind_mw::MR_LKEY), 0x77);
        assert_eq!(get32(&out, WR + wr_bind_mw::ACCESS), 2);
        // Not on UD.
        assert_eq!(
            encode_send(&wr, &[], None, &lim(Transport::Ud), &mut out),
            Err(WrError::Opcode)
        );
    }

    /// The kernel decoder's layout, which the encoder writes, against bindgen's types of the
    /// C header (whose layout bindgen's compile-time assertions check).
    #[test]
    fn uabi_layout_matches_the_header() {
        use crate::abi::rrxe::*;
        use core::mem::{offset_of, size_of};
        use rrxe_proto::uabi::wr_flush;
        type W = rrxe_send_wqe;
        assert_eq!(SEND_HDR, size_of::<W>());
        assert_eq!(RECV_HDR, size_of::<rrxe_recv_wqe>());
        assert_eq!(SGE, size_of::<rrxe_sge>());
        assert_eq!(send_wqe::WR_ID, offset_of!(W, wr_id));
        assert_eq!(send_wqe::OPCODE, offset_of!(W, opcode));
        assert_eq!(send_wqe::SEND_FLAGS, offset_of!(W, send_flags));
        assert_eq!(send_wqe::NUM_SGE, offset_of!(W, num_sge));
        assert_eq!(send_wqe::INLINE_LEN, offset_of!(W, inline_len));
        assert_eq!(send_wqe::EX, offset_of!(W, ex));
        assert_eq!(WR, offset_of!(W, wr));
        assert_eq!(send_wqe::WR_SIZE, size_of::<rrxe_send_wqe_wr>());
        assert_eq!(wr_rdma::REMOTE_ADDR, offset_of!(rrxe_wr_rdma, remote_addr));
        assert_eq!(wr_rdma::RKEY, offset_of!(rrxe_wr_rdma, rkey));
        assert_eq!(
            wr_atomic::REMOTE_ADDR,
            offset_of!(rrxe_wr_atomic, remote_addr)
        );
        assert_eq!(
            wr_atomic::COMPARE_ADD,
            offset_of!(rrxe_wr_atomic, compare_add)
        );
        assert_eq!(wr_atomic::SWAP, offset_of!(rrxe_wr_atomic, swap));
        assert_eq!(wr_atomic::RKEY, offset_of!(rrxe_wr_atomic, rkey));
        assert_eq!(wr_ud::AH_NUM, offset_of!(rrxe_wr_ud, ah_num));
        assert_eq!(wr_ud::REMOTE_QPN, offset_of!(rrxe_wr_ud, remote_qpn));
        assert_eq!(wr_ud::REMOTE_QKEY, offset_of!(rrxe_wr_ud, remote_qkey));
        assert_eq!(wr_bind_mw::ADDR, offset_of!(rrxe_wr_bind_mw, addr));
        assert_eq!(wr_bind_mw::LENGTH, offset_of!(rrxe_wr_bind_mw, length));
        assert_eq!(wr_bind_mw::MW_RKEY, offset_of!(rrxe_wr_bind_mw, mw_rkey));
        assert_eq!(wr_bind_mw::MR_LKEY, offset_of!(rrxe_wr_bind_mw, mr_lkey));
        assert_eq!(wr_bind_mw::ACCESS, offset_of!(rrxe_wr_bind_mw, access));
        assert_eq!(
            wr_flush::REMOTE_ADDR,
            offset_of!(rrxe_wr_flush, remote_addr)
        );
        assert_eq!(wr_flush::LENGTH, offset_of!(rrxe_wr_flush, length));
        assert_eq!(wr_flush::RKEY, offset_of!(rrxe_wr_flush, rkey));
        assert_eq!(wr_flush::TYPE, offset_of!(rrxe_wr_flush, type_));
        assert_eq!(wr_flush::LEVEL, offset_of!(rrxe_wr_flush, level));
        assert_eq!(wr_flush::SIZE, size_of::<rrxe_wr_flush>());
        assert_eq!(recv_wqe::WR_ID, offset_of!(rrxe_recv_wqe, wr_id));
        assert_eq!(recv_wqe::NUM_SGE, offset_of!(rrxe_recv_wqe, num_sge));
        assert_eq!(sge::ADDR, offset_of!(rrxe_sge, addr));
        assert_eq!(sge::LENGTH, offset_of!(rrxe_sge, length));
        assert_eq!(sge::LKEY, offset_of!(rrxe_sge, lkey));
    }

    #[test]
    fn inc_rkey_keeps_the_index() {
        assert_eq!(inc_rkey(0x0000_1203), 0x0000_1204);
        assert_eq!(inc_rkey(0x0000_12ff), 0x0000_1200);
    }

    #[test]
    fn send_with_sges_layout() {
        let wr = SendWr {
            wr_id: 0x1122334455667788,
            opcode: uabi::WR_RDMA_WRITE_WITH_IMM,
            send_flags: uabi::SEND_SIGNALED,
            ex: 0xdeadbeef,
            remote_addr: 0x1000,
            rkey: 0x77,
            ..Default::default()
        };
        let sges = [
            Sge {
                addr: 1,
                length: 2,
                lkey: 3,
            },
            Sge {
                addr: 4,
                length: 5,
                lkey: 6,
            },
        ];
        let mut out = [0xffu8; MAX_WQE];
        let n = encode_send(&wr, &sges, None, &lim(Transport::Rc), &mut out).unwrap();
        assert_eq!(n, SEND_HDR + 2 * SGE);
        assert_eq!(get64(&out, send_wqe::WR_ID), wr.wr_id);
        assert_eq!(get32(&out, send_wqe::OPCODE), uabi::WR_RDMA_WRITE_WITH_IMM);
        assert_eq!(get32(&out, send_wqe::SEND_FLAGS), uabi::SEND_SIGNALED);
        assert_eq!(get32(&out, send_wqe::NUM_SGE), 2);
        assert_eq!(get32(&out, send_wqe::INLINE_LEN), 0);
        assert_eq!(get32(&out, send_wqe::EX), 0xdeadbeef);
        assert_eq!(get64(&out, WR + wr_rdma::REMOTE_ADDR), 0x1000);
        assert_eq!(get32(&out, WR + wr_rdma::RKEY), 0x77);
        assert_eq!(get64(&out, SEND_HDR + SGE), 4);
        assert_eq!(get32(&out, SEND_HDR + SGE + 8), 5);
        assert_eq!(get32(&out, SEND_HDR + SGE + 12), 6);
    }

    #[test]
    fn inline_gathers_pieces() {
        let wr = SendWr {
            opcode: uabi::WR_SEND,
            send_flags: uabi::SEND_INLINE,
            ..Default::default()
        };
        let mut out = [0u8; MAX_WQE];
        let pieces: [&[u8]; 2] = [b"hello ", b"world"];
        let n = encode_send(&wr, &[], Some(&pieces), &lim(Transport::Rc), &mut out).unwrap();
        assert_eq!(n, SEND_HDR + 11);
        assert_eq!(&out[SEND_HDR..n], b"hello world");
        assert_eq!(get32(&out, send_wqe::INLINE_LEN), 11);
        assert_eq!(get32(&out, send_wqe::NUM_SGE), 0);
        let big = [0u8; 65];
        assert_eq!(
            encode_send(&wr, &[], Some(&[&big]), &lim(Transport::Rc), &mut out),
            Err(WrError::InlineTooLong)
        );
    }

    #[test]
    fn atomics_and_ud_fields() {
        let mut out = [0u8; MAX_WQE];
        let wr = SendWr {
            opcode: uabi::WR_ATOMIC_CMP_AND_SWP,
            remote_addr: 0x2000,
            compare_add: 5,
            swap: 9,
            rkey: 0x42,
            ..Default::default()
        };
        encode_send(&wr, &[], None, &lim(Transport::Rc), &mut out).unwrap();
        assert_eq!(get64(&out, WR + wr_atomic::REMOTE_ADDR), 0x2000);
        assert_eq!(get64(&out, WR + wr_atomic::COMPARE_ADD), 5);
        assert_eq!(get64(&out, WR + wr_atomic::SWAP), 9);
        assert_eq!(get32(&out, WR + wr_atomic::RKEY), 0x42);

        let ud = SendWr {
            opcode: uabi::WR_SEND,
            ah_num: 3,
            remote_qpn: 0x55,
            remote_qkey: 0x11111111,
            ..Default::default()
        };
        encode_send(&ud, &[], None, &lim(Transport::Ud), &mut out).unwrap();
        assert_eq!(get32(&out, WR + wr_ud::AH_NUM), 3);
        assert_eq!(get32(&out, WR + wr_ud::REMOTE_QPN), 0x55);
        assert_eq!(get32(&out, WR + wr_ud::REMOTE_QKEY), 0x11111111);
        let no_ah = SendWr { ah_num: 0, ..ud };
        assert_eq!(
            encode_send(&no_ah, &[], None, &lim(Transport::Ud), &mut out),
            Err(WrError::NoAh)
        );
    }

    #[test]
    fn opcodes_checked_per_transport() {
        let mut out = [0u8; MAX_WQE];
        for (t, op, ok) in [
            (Transport::Ud, uabi::WR_RDMA_WRITE, false),
            (Transport::Ud, uabi::WR_SEND_WITH_IMM, true),
            (Transport::Uc, uabi::WR_RDMA_READ, false),
            (Transport::Uc, uabi::WR_ATOMIC_FETCH_AND_ADD, false),
            (Transport::Uc, uabi::WR_RDMA_WRITE_WITH_IMM, true),
            (Transport::Rc, uabi::WR_RDMA_READ, true),
            (Transport::Rc, uabi::WR_SEND_WITH_INV, true),
            (Transport::Rc, uabi::WR_FLUSH, true),
            (Transport::Xrc, uabi::WR_FLUSH, false),
            (Transport::Uc, uabi::WR_FLUSH, false),
            (Transport::Rc, 10, false),
            (Transport::Rc, u32::MAX, false),
        ] {
            let wr = SendWr {
                opcode: op,
                ah_num: 1,
                ..Default::default()
            };
            let r = encode_send(&wr, &[], None, &lim(t), &mut out);
            assert_eq!(r.is_ok(), ok, "{t:?} {op}");
            if !ok {
                assert_eq!(r, Err(WrError::Opcode));
                assert_eq!(WrError::Opcode.errno(), libc::EINVAL);
            }
        }
    }

    /// What the provider writes, the kernel's decoder (`rrxe_proto::uabi::decode_send`)
    /// reads back field for field.
    #[test]
    fn kernel_decoder_reads_what_we_write() {
        use rrxe_proto::uabi::{decode_send, Data, SendLimits as KLim, Ud, WrFields};
        use rrxe_proto::{RemoteAddr, UdDest};
        let mut out = [0u8; MAX_WQE];
        let rc = KLim {
            max_sge: 4,
            max_inline: 64,
            ud: false,
        };
        let sges = [
            Sge {
                addr: 0x1000,
                length: 10,
                lkey: 3,
            },
            Sge {
                addr: 0x2000,
                length: 20,
                lkey: 4,
            },
        ];
        let remote = RemoteAddr {
            va: 0xabc0,
            rkey: 0x77,
        };
        // RDMA WRITE with immediate, two SGEs.
        let w = SendWr {
            wr_id: 5,
            opcode: uabi::WR_RDMA_WRITE_WITH_IMM,
            send_flags: uabi::SEND_SIGNALED,
            ex: 0x1234,
            remote_addr: remote.va,
            rkey: remote.rkey,
            ..Default::default()
        };
        let n = encode_send(&w, &sges, None, &lim(Transport::Rc), &mut out).unwrap();
        let d = decode_send(&out[..256], &rc).unwrap();
        assert_eq!(n, SEND_HDR + 2 * SGE);
        assert_eq!(
            (d.wr_id, d.opcode, d.ex),
            (5, WrOpcode::RdmaWriteWithImm, 0x1234)
        );
        assert!(d.flags.signaled && !d.flags.inline);
        assert_eq!(d.wr, WrFields::Rdma(remote));
        let Data::Sges(l) = d.data else {
            panic!("{:?}", d.data)
        };
        let got: Vec<_> = l.iter().map(|s| (s.addr, s.length, s.lkey)).collect();
        assert_eq!(got, [(0x1000, 10, 3), (0x2000, 20, 4)]);
        // SEND inline.
        let w = SendWr {
            opcode: uabi::WR_SEND,
            ..Default::default()
        };
        let data: &[&[u8]] = &[b"hello"];
        encode_send(&w, &[], Some(data), &lim(Transport::Rc), &mut out).unwrap();
        let d = decode_send(&out[..256], &rc).unwrap();
        assert!(d.flags.inline);
        assert_eq!(
            d.data,
            Data::Inline {
                offset: SEND_HDR,
                len: 5
            }
        );
        assert_eq!(&out[SEND_HDR..SEND_HDR + 5], b"hello");
        // Compare-and-swap.
        let w = SendWr {
            opcode: uabi::WR_ATOMIC_CMP_AND_SWP,
            remote_addr: remote.va,
            rkey: remote.rkey,
            compare_add: 7,
            swap: 9,
            ..Default::default()
        };
        encode_send(&w, &sges[..1], None, &lim(Transport::Rc), &mut out).unwrap();
        let d = decode_send(&out[..256], &rc).unwrap();
        let atomic = WrFields::Atomic {
            remote,
            compare_add: 7,
            swap: 9,
        };
        assert_eq!((d.opcode, d.wr), (WrOpcode::AtomicCmpAndSwp, atomic));
        // ATOMIC WRITE: the value travels in the WQE.
        let w = SendWr {
            opcode: uabi::WR_ATOMIC_WRITE,
            remote_addr: remote.va,
            rkey: remote.rkey,
            compare_add: 0x0102_0304_0506_0708,
            ..Default::default()
        };
        encode_send(&w, &[], None, &lim(Transport::Rc), &mut out).unwrap();
        let d = decode_send(&out[..256], &rc).unwrap();
        let value = 0x0102_0304_0506_0708u64.to_ne_bytes();
        assert_eq!(d.wr, WrFields::AtomicWrite { remote, value });
        assert_eq!(d.data, Data::None);
        // FLUSH: a range, to global visibility and persistence.
        let w = SendWr {
            opcode: uabi::WR_FLUSH,
            send_flags: uabi::SEND_SIGNALED | uabi::SEND_INLINE,
            remote_addr: remote.va,
            rkey: remote.rkey,
            flush: FlushArgs {
                length: 4096,
                placement: uabi::FLUSH_GLOBAL | uabi::FLUSH_PERSISTENT,
                level: uabi::FLUSH_RANGE,
            },
            ..Default::default()
        };
        let n = encode_send(&w, &sges, None, &lim(Transport::Rc), &mut out).unwrap();
        assert_eq!(n, SEND_HDR);
        let d = decode_send(&out[..256], &rc).unwrap();
        assert!(d.flags.signaled && !d.flags.inline);
        let flush = uabi::Flush {
            remote,
            length: 4096,
            typ: uabi::FLUSH_GLOBAL | uabi::FLUSH_PERSISTENT,
            level: uabi::FLUSH_RANGE,
        };
        assert_eq!((d.opcode, d.wr), (WrOpcode::Flush, WrFields::Flush(flush)));
        assert_eq!(d.data, Data::None);
        // BIND_MW.
        let bind = MwBind {
            mw_rkey: 0x3301,
            mr_lkey: 0x44,
            addr: 0x8000,
            length: 0x100,
            access: 2,
        };
        let w = SendWr {
            opcode: uabi::WR_BIND_MW,
            bind,
            ..Default::default()
        };
        encode_send(&w, &[], None, &lim(Transport::Rc), &mut out).unwrap();
        let WrFields::BindMw(b) = decode_send(&out[..256], &rc).unwrap().wr else {
            panic!("not a bind")
        };
        let got = (b.mw_rkey, b.mr_lkey, b.addr, b.length, b.access);
        assert_eq!(got, (0x3301, 0x44, 0x8000, 0x100, 2));
        // UD SEND: the destination.
        let w = SendWr {
            opcode: uabi::WR_SEND,
            ah_num: 6,
            remote_qpn: 0x55,
            remote_qkey: 0x1111,
            ..Default::default()
        };
        encode_send(&w, &sges[..1], None, &lim(Transport::Ud), &mut out).unwrap();
        let ud = KLim { ud: true, ..rc };
        let d = decode_send(&out[..256], &ud).unwrap();
        let dest = UdDest {
            qpn: 0x55,
            qkey: 0x1111,
        };
        assert_eq!(d.ud, Some(Ud { ah_num: 6, dest }));
    }

    /// The typed check accepts exactly what the raw-integer rule it replaced did
    /// (UD: SEND, SEND_WITH_IMM; UC: those, RDMA WRITE (with imm), LOCAL_INV, BIND_MW;
    /// RC: 0..=9 and ATOMIC_WRITE), plus FLUSH on RC (`ibv_wr_flush`), for every value around
    /// the defined ones.
    #[test]
    fn opcode_rule_unchanged() {
        let mut out = [0u8; MAX_WQE];
        let old = |t: Transport, v: u32| match t {
            Transport::Ud => matches!(v, 2 | 3),
            Transport::Uc => matches!(v, 2 | 3 | 0 | 1 | 7 | 8),
            Transport::Rc => v <= 9 || v == 32 || v == 33,
            // XRC: RC's without ATOMIC WRITE.
            Transport::Xrc => v <= 9,
        };
        for t in [Transport::Ud, Transport::Uc, Transport::Rc, Transport::Xrc] {
            for v in (0..=40).chain([99, u32::MAX]) {
                let wr = SendWr {
                    opcode: v,
                    ah_num: 1,
                    ..Default::default()
                };
                let r = encode_send(&wr, &[], None, &lim(t), &mut out);
                assert_eq!(r != Err(WrError::Opcode), old(t, v), "{t:?} {v}");
                if r.is_ok() {
                    assert_eq!(get32(&out, send_wqe::OPCODE), v);
                }
            }
        }
    }

    /// An XRC send QP's WQE names the remote SRQ; other transports leave the field zero.
    #[test]
    fn xrc_srqn_only_on_xrc() {
        let mut out = [0xffu8; MAX_WQE];
        let w = SendWr {
            opcode: uabi::WR_SEND,
            xrc_srqn: 0x12_3456,
            ..Default::default()
        };
        encode_send(&w, &[], None, &lim(Transport::Xrc), &mut out).unwrap();
        assert_eq!(get32(&out, send_wqe::XRC_REMOTE_SRQN), 0x12_3456);
        let klim = rrxe_proto::uabi::SendLimits {
            max_sge: 4,
            max_inline: 64,
            ud: false,
        };
        let d = rrxe_proto::uabi::decode_send(&out[..256], &klim).unwrap();
        assert_eq!(d.xrc_srqn, 0x12_3456);
        out.fill(0xff);
        encode_send(&w, &[], None, &lim(Transport::Rc), &mut out).unwrap();
        assert_eq!(get32(&out, send_wqe::XRC_REMOTE_SRQN), 0);
    }

    #[test]
    fn sge_limits() {
        let mut out = [0u8; MAX_WQE];
        let wr = SendWr {
            opcode: uabi::WR_SEND,
            ..Default::default()
        };
        let sges = [Sge::default(); 5];
        assert_eq!(
            encode_send(&wr, &sges, None, &lim(Transport::Rc), &mut out),
            Err(WrError::TooManySge)
        );
        assert_eq!(
            encode_recv(1, &sges, 4, 256, &mut out),
            Err(WrError::TooManySge)
        );
        let n = encode_recv(7, &sges[..4], 4, 256, &mut out).unwrap();
        assert_eq!(n, RECV_HDR + 4 * SGE);
        assert_eq!(get64(&out, 0), 7);
        assert_eq!(get32(&out, 8), 4);
        // The slot bounds SGEs too.
        assert_eq!(
            encode_recv(1, &sges[..4], 4, 64, &mut out),
            Err(WrError::TooManySge)
        );
        assert_eq!(WrError::Full.errno(), libc::ENOMEM);
    }

    #[test]
    fn cqe_decode_translates_flags() {
        let mut b = [0u8; 64];
        b[..8].copy_from_slice(&42u64.to_ne_bytes());
        b[8..12].copy_from_slice(&5u32.to_ne_bytes()); // IBV_WC_WR_FLUSH_ERR
        b[12..16].copy_from_slice(&128u32.to_ne_bytes()); // IBV_WC_RECV
        b[20..24].copy_from_slice(&1000u32.to_ne_bytes());
        b[24..28].copy_from_slice(&0x12345678u32.to_ne_bytes());
        b[28..32].copy_from_slice(&17u32.to_ne_bytes());
        b[32..36].copy_from_slice(&99u32.to_ne_bytes());
        b[36..40].copy_from_slice(&(kflags::GRH | kflags::WITH_INVALIDATE).to_ne_bytes());
        let wc = decode_cqe(&b);
        assert_eq!(wc.wr_id, 42);
        assert_eq!((wc.status, wc.opcode), (5, 128));
        assert_eq!(wc.byte_len, 1000);
        assert_eq!(crate::abi::verbs::wc_imm(&wc), 0x12345678);
        assert_eq!((wc.qp_num, wc.src_qp), (17, 99));
        assert_eq!(wc.wc_flags, ibv_wc_flags::GRH | ibv_wc_flags::WITH_INV);
        b[36..40].copy_from_slice(&(kflags::WITH_IMM | kflags::IP_CSUM_OK).to_ne_bytes());
        assert_eq!(
            decode_cqe(&b).wc_flags,
            ibv_wc_flags::WITH_IMM | ibv_wc_flags::IP_CSUM_OK
        );
    }
}
