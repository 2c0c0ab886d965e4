// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The work queue entries of rrxe's user ABI (`include/rdma/rrxe-abi.h`): their byte layout
//! as named constants, and the decoding of the send and receive WQEs a process writes into
//! the queues it shares with the driver.
//!
//! The layout is the header's: one module of offsets per C structure, and one per member of
//! its unions (offsets inside the union, which starts at [`send_wqe::WR`]). The kernel checks
//! every constant against bindgen's `offset_of!`/`size_of` of the C structures at compile
//! time and the provider's layout test checks them against the C compiler's, so a drift of
//! the header fails both builds. The provider's encoder (`provider/src/wqe.rs`) writes the
//! entries with these same constants.
//!
//! The bytes are untrusted: the driver copies a slot once out of the shared mapping and
//! hands the copy here. Every offset and length is range-checked before it is used, with
//! checked arithmetic only; a malformed entry is an error, never a panic. Fields are read in
//! native byte order (the process and the kernel run on the same machine). The decoder does
//! not look anything up: a UD destination's address handle is returned as its number.
//!
//! Tested in `tests/uabi.rs` (each opcode, each refusal) and by the `uwqe` fuzz target
//! (`fuzz/bodies.rs`: what is accepted stays inside the slot and the limits).

use super::qp::{RemoteAddr, UdDest};

/// `struct rrxe_sge`: one scatter/gather element.
pub mod sge {
    /// Size.
    pub const SIZE: usize = 16;
    /// `addr` (u64).
    pub const ADDR: usize = 0;
    /// `length` (u32).
    pub const LENGTH: usize = 8;
    /// `lkey` (u32).
    pub const LKEY: usize = 12;
}

/// `struct rrxe_send_wqe`: the header of a send WQE; `num_sge` SGEs or `inline_len` bytes of
/// inline data follow it.
pub mod send_wqe {
    /// Size (where the SGEs or the inline data start).
    pub const SIZE: usize = 72;
    /// `wr_id` (u64).
    pub const WR_ID: usize = 0;
    /// `opcode` (u32, `RRXE_WR_*`).
    pub const OPCODE: usize = 8;
    /// `send_flags` (u32, `RRXE_SEND_*`).
    pub const SEND_FLAGS: usize = 12;
    /// `num_sge` (u32).
    pub const NUM_SGE: usize = 16;
    /// `inline_len` (u32).
    pub const INLINE_LEN: usize = 20;
    /// `ex` (u32): the union of `imm_data` (big-endian) and `invalidate_rkey`.
    pub const EX: usize = 24;
    /// `xrc_remote_srqn` (u32): the remote XRC SRQ of an XRC send QP's WQE (24 bits).
    pub const XRC_REMOTE_SRQN: usize = 28;
    /// `wr`: the union of the opcode-specific structures below.
    pub const WR: usize = 32;
    /// Size of the `wr` union (`raw[40]`).
    pub const WR_SIZE: usize = 40;
}

/// `wr.rdma` (RDMA WRITE / READ), offsets inside `wr`.
pub mod wr_rdma {
    /// `remote_addr` (u64).
    pub const REMOTE_ADDR: usize = 0;
    /// `rkey` (u32).
    pub const RKEY: usize = 8;
    /// Size.
    pub const SIZE: usize = 16;
}

/// `wr.atomic` (compare-and-swap, fetch-and-add, ATOMIC WRITE), offsets inside `wr`.
pub mod wr_atomic {
    /// `remote_addr` (u64).
    pub const REMOTE_ADDR: usize = 0;
    /// `compare_add` (u64; the value of an ATOMIC WRITE, in memory order).
    pub const COMPARE_ADD: usize = 8;
    /// `swap` (u64).
    pub const SWAP: usize = 16;
    /// `rkey` (u32).
    pub const RKEY: usize = 24;
    /// Size.
    pub const SIZE: usize = 32;
}

/// `wr.ud` (UD QPs), offsets inside `wr`.
pub mod wr_ud {
    /// `ah_num` (u32, from `struct rrxe_create_ah_resp`).
    pub const AH_NUM: usize = 0;
    /// `remote_qpn` (u32).
    pub const REMOTE_QPN: usize = 4;
    /// `remote_qkey` (u32).
    pub const REMOTE_QKEY: usize = 8;
    /// Size.
    pub const SIZE: usize = 16;
}

/// `wr.bind_mw` (BIND_MW), offsets inside `wr`.
pub mod wr_bind_mw {
    /// `addr` (u64).
    pub const ADDR: usize = 0;
    /// `length` (u64).
    pub const LENGTH: usize = 8;
    /// `mw_rkey` (u32).
    pub const MW_RKEY: usize = 16;
    /// `mr_lkey` (u32).
    pub const MR_LKEY: usize = 20;
    /// `access` (u32, `IBV_ACCESS_*`).
    pub const ACCESS: usize = 24;
    /// Size.
    pub const SIZE: usize = 32;
}

/// `wr.flush` (FLUSH), offsets inside `wr`.
pub mod wr_flush {
    /// `remote_addr` (u64).
    pub const REMOTE_ADDR: usize = 0;
    /// `length` (u32).
    pub const LENGTH: usize = 8;
    /// `rkey` (u32).
    pub const RKEY: usize = 12;
    /// `type` (u8, `RRXE_FLUSH_GLOBAL | RRXE_FLUSH_PERSISTENT`).
    pub const TYPE: usize = 16;
    /// `level` (u8, `RRXE_FLUSH_RANGE` or `RRXE_FLUSH_MR`).
    pub const LEVEL: usize = 17;
    /// Size.
    pub const SIZE: usize = 24;
}

/// `struct rrxe_recv_wqe`: the header of a receive WQE; `num_sge` SGEs follow it.
pub mod recv_wqe {
    /// Size (where the SGEs start).
    pub const SIZE: usize = 16;
    /// `wr_id` (u64).
    pub const WR_ID: usize = 0;
    /// `num_sge` (u32).
    pub const NUM_SGE: usize = 8;
}

/// `RRXE_WR_RDMA_WRITE`.
pub const WR_RDMA_WRITE: u32 = 0;
/// `RRXE_WR_RDMA_WRITE_WITH_IMM`.
pub const WR_RDMA_WRITE_WITH_IMM: u32 = 1;
/// `RRXE_WR_SEND`.
pub const WR_SEND: u32 = 2;
/// `RRXE_WR_SEND_WITH_IMM`.
pub const WR_SEND_WITH_IMM: u32 = 3;
/// `RRXE_WR_RDMA_READ`.
pub const WR_RDMA_READ: u32 = 4;
/// `RRXE_WR_ATOMIC_CMP_AND_SWP`.
pub const WR_ATOMIC_CMP_AND_SWP: u32 = 5;
/// `RRXE_WR_ATOMIC_FETCH_AND_ADD`.
pub const WR_ATOMIC_FETCH_AND_ADD: u32 = 6;
/// `RRXE_WR_LOCAL_INV`.
pub const WR_LOCAL_INV: u32 = 7;
/// `RRXE_WR_BIND_MW`.
pub const WR_BIND_MW: u32 = 8;
/// `RRXE_WR_SEND_WITH_INV`.
pub const WR_SEND_WITH_INV: u32 = 9;
/// `RRXE_WR_ATOMIC_WRITE`.
pub const WR_ATOMIC_WRITE: u32 = 32;
/// `RRXE_WR_FLUSH`.
pub const WR_FLUSH: u32 = 33;

/// `RRXE_SEND_FENCE`.
pub const SEND_FENCE: u32 = 1 << 0;
/// `RRXE_SEND_SIGNALED`.
pub const SEND_SIGNALED: u32 = 1 << 1;
/// `RRXE_SEND_SOLICITED`.
pub const SEND_SOLICITED: u32 = 1 << 2;
/// `RRXE_SEND_INLINE`.
pub const SEND_INLINE: u32 = 1 << 3;

/// `RRXE_FLUSH_GLOBAL` (type bit).
pub const FLUSH_GLOBAL: u8 = 1;
/// `RRXE_FLUSH_PERSISTENT` (type bit).
pub const FLUSH_PERSISTENT: u8 = 2;
/// `RRXE_FLUSH_RANGE` (level).
pub const FLUSH_RANGE: u8 = 0;
/// `RRXE_FLUSH_MR` (level).
pub const FLUSH_MR: u8 = 1;

/// The opcode of a send WQE (`RRXE_WR_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrOpcode {
    /// RDMA WRITE.
    RdmaWrite,
    /// RDMA WRITE with immediate data.
    RdmaWriteWithImm,
    /// SEND.
    Send,
    /// SEND with immediate data.
    SendWithImm,
    /// RDMA READ.
    RdmaRead,
    /// Atomic compare-and-swap.
    AtomicCmpAndSwp,
    /// Atomic fetch-and-add.
    AtomicFetchAndAdd,
    /// Local invalidate (completed by the driver).
    LocalInv,
    /// Bind a type 2 memory window (completed by the driver).
    BindMw,
    /// SEND with invalidate.
    SendWithInv,
    /// ATOMIC WRITE (IBTA 1.5).
    AtomicWrite,
    /// FLUSH (IBTA 1.5).
    Flush,
}

impl WrOpcode {
    /// The opcode of an `RRXE_WR_*` value; `None` for any other value.
    pub const fn from_raw(v: u32) -> Option<Self> {
        Some(match v {
            WR_RDMA_WRITE => Self::RdmaWrite,
            WR_RDMA_WRITE_WITH_IMM => Self::RdmaWriteWithImm,
            WR_SEND => Self::Send,
            WR_SEND_WITH_IMM => Self::SendWithImm,
            WR_RDMA_READ => Self::RdmaRead,
            WR_ATOMIC_CMP_AND_SWP => Self::AtomicCmpAndSwp,
            WR_ATOMIC_FETCH_AND_ADD => Self::AtomicFetchAndAdd,
            WR_LOCAL_INV => Self::LocalInv,
            WR_BIND_MW => Self::BindMw,
            WR_SEND_WITH_INV => Self::SendWithInv,
            WR_ATOMIC_WRITE => Self::AtomicWrite,
            WR_FLUSH => Self::Flush,
            _ => return None,
        })
    }

    /// Its `RRXE_WR_*` value (the same number as `IB_WR_*` for the first ten).
    pub const fn raw(self) -> u32 {
        match self {
            Self::RdmaWrite => WR_RDMA_WRITE,
            Self::RdmaWriteWithImm => WR_RDMA_WRITE_WITH_IMM,
            Self::Send => WR_SEND,
            Self::SendWithImm => WR_SEND_WITH_IMM,
            Self::RdmaRead => WR_RDMA_READ,
            Self::AtomicCmpAndSwp => WR_ATOMIC_CMP_AND_SWP,
            Self::AtomicFetchAndAdd => WR_ATOMIC_FETCH_AND_ADD,
            Self::LocalInv => WR_LOCAL_INV,
            Self::BindMw => WR_BIND_MW,
            Self::SendWithInv => WR_SEND_WITH_INV,
            Self::AtomicWrite => WR_ATOMIC_WRITE,
            Self::Flush => WR_FLUSH,
        }
    }

    /// A request that carries no local data (no SGEs, no inline bytes): the local
    /// operations and the two whose arguments are all in the WQE.
    pub const fn is_dataless(self) -> bool {
        matches!(
            self,
            Self::LocalInv | Self::BindMw | Self::AtomicWrite | Self::Flush
        )
    }

    /// Allowed on RC only: refused on a UD QP. (The other transport opcodes are passed on
    /// to the engine, which applies the per-transport rules.)
    pub const fn is_rc_only(self) -> bool {
        matches!(self, Self::BindMw | Self::AtomicWrite | Self::Flush)
    }
}

/// The `send_flags` a WQE asked for, as they apply to its opcode: SOLICITED and INLINE are
/// only kept for requests that carry data (the other ones ignore them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendFlags {
    /// `RRXE_SEND_FENCE`.
    pub fence: bool,
    /// `RRXE_SEND_SIGNALED`.
    pub signaled: bool,
    /// `RRXE_SEND_SOLICITED`.
    pub solicited: bool,
    /// `RRXE_SEND_INLINE`.
    pub inline: bool,
}

/// `wr.bind_mw`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BindMw {
    /// First address of the window.
    pub addr: u64,
    /// Length (0 unbinds).
    pub length: u64,
    /// The new rkey of the window.
    pub mw_rkey: u32,
    /// The MR the window binds to.
    pub mr_lkey: u32,
    /// `IBV_ACCESS_*` of the window.
    pub access: u32,
}

/// `wr.flush`, with a valid type and level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flush {
    /// Target.
    pub remote: RemoteAddr,
    /// Bytes (level [`FLUSH_RANGE`]).
    pub length: u32,
    /// Placement type: a non-empty set of [`FLUSH_GLOBAL`] and [`FLUSH_PERSISTENT`].
    pub typ: u8,
    /// Selectivity: [`FLUSH_RANGE`] or [`FLUSH_MR`].
    pub level: u8,
}

/// The opcode-specific part of a send WQE (the member of the `wr` union the opcode names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrFields {
    /// SEND, SEND with immediate or invalidate, LOCAL_INV: nothing in `wr` (only `ex`).
    None,
    /// `wr.rdma`: RDMA WRITE (with immediate), RDMA READ.
    Rdma(RemoteAddr),
    /// `wr.atomic`: compare-and-swap, fetch-and-add.
    Atomic {
        /// Target.
        remote: RemoteAddr,
        /// Compare value (CAS) or addend (FADD).
        compare_add: u64,
        /// Swap value (CAS).
        swap: u64,
    },
    /// `wr.atomic` of an ATOMIC WRITE: the 8 bytes to write, in memory order.
    AtomicWrite {
        /// Target.
        remote: RemoteAddr,
        /// The bytes (`compare_add` as stored).
        value: [u8; 8],
    },
    /// `wr.bind_mw`.
    BindMw(BindMw),
    /// `wr.flush`.
    Flush(Flush),
}

/// `wr.ud` of a send on a UD QP: the destination, its address handle by number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ud {
    /// The AH number (the driver looks it up, in the QP's PD).
    pub ah_num: u32,
    /// Destination QP and Q_Key.
    pub dest: UdDest,
}

/// One decoded SGE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    /// Address.
    pub addr: u64,
    /// Length.
    pub length: u32,
    /// Local key.
    pub lkey: u32,
}

/// The validated SGE array of a WQE: `count` entries whose lengths add up (without overflow)
/// to `total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SgeList<'a> {
    bytes: &'a [u8],
    count: u32,
    total: u32,
}

impl<'a> SgeList<'a> {
    /// Checks `count` SGEs at `off` in `slot` and sums their lengths.
    fn new(slot: &'a [u8], off: usize, count: u32, max: u32) -> Result<Self, WqeError> {
        if count > max {
            return Err(WqeError::TooManySge);
        }
        let len = (count as usize)
            .checked_mul(sge::SIZE)
            .ok_or(WqeError::SgeOutside)?;
        let end = off.checked_add(len).ok_or(WqeError::SgeOutside)?;
        let bytes = slot.get(off..end).ok_or(WqeError::SgeOutside)?;
        let mut l = SgeList {
            bytes,
            count,
            total: 0,
        };
        let mut total: u32 = 0;
        for s in l.iter() {
            total = total
                .checked_add(s.length)
                .ok_or(WqeError::LengthOverflow)?;
        }
        l.total = total;
        Ok(l)
    }

    /// Number of SGEs.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Sum of their lengths.
    pub fn total(&self) -> u32 {
        self.total
    }

    /// The SGEs, in order.
    pub fn iter(&self) -> SgeIter<'a> {
        SgeIter {
            bytes: self.bytes,
            at: 0,
        }
    }
}

/// The SGEs of an [`SgeList`].
#[derive(Clone, Debug)]
pub struct SgeIter<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Iterator for SgeIter<'_> {
    type Item = Sge;

    fn next(&mut self) -> Option<Sge> {
        let o = self.at;
        let s = Sge {
            addr: u64_at(self.bytes, o.checked_add(sge::ADDR)?)?,
            length: u32_at(self.bytes, o.checked_add(sge::LENGTH)?)?,
            lkey: u32_at(self.bytes, o.checked_add(sge::LKEY)?)?,
        };
        self.at = o.checked_add(sge::SIZE)?;
        Some(s)
    }
}

/// The local data of a send WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Data<'a> {
    /// None (the dataless opcodes, see [`WrOpcode::is_dataless`]).
    None,
    /// A gather list.
    Sges(SgeList<'a>),
    /// Inline bytes at `offset..offset + len` of the slot (inside it, `len` <= the QP's
    /// `max_inline`).
    Inline {
        /// Offset in the slot ([`send_wqe::SIZE`]).
        offset: usize,
        /// Bytes.
        len: u32,
    },
}

impl Data<'_> {
    /// Total local length: the SGEs' sum or the inline length; 0 without data.
    pub fn len(&self) -> u32 {
        match self {
            Data::None => 0,
            Data::Sges(l) => l.total(),
            Data::Inline { len, .. } => *len,
        }
    }

    /// No local bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A decoded send WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWqe<'a> {
    /// The consumer's id.
    pub wr_id: u64,
    /// Opcode.
    pub opcode: WrOpcode,
    /// Flags.
    pub flags: SendFlags,
    /// `ex` as stored: immediate data (big-endian, SEND/WRITE with immediate) or the rkey to
    /// invalidate (SEND with invalidate, LOCAL_INV).
    pub ex: u32,
    /// The opcode's member of the `wr` union.
    pub wr: WrFields,
    /// UD QP: the destination (every opcode but LOCAL_INV).
    pub ud: Option<Ud>,
    /// `xrc_remote_srqn` as stored (meaningful for XRC send QPs only; the driver masks it
    /// to 24 bits).
    pub xrc_srqn: u32,
    /// Local data.
    pub data: Data<'a>,
}

/// A decoded receive WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWqe<'a> {
    /// The consumer's id.
    pub wr_id: u64,
    /// The scatter list.
    pub sges: SgeList<'a>,
}

/// What a queue allows in its send WQEs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendLimits {
    /// Most SGEs.
    pub max_sge: u32,
    /// Most inline bytes.
    pub max_inline: u32,
    /// A UD QP: every data-carrying WQE names a destination, RC-only opcodes are refused.
    pub ud: bool,
}

/// Why a WQE is malformed (the driver completes it in error, or fails the queue).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WqeError {
    /// The slot is shorter than the WQE header.
    Short,
    /// Unknown opcode, or not allowed on this QP type.
    Opcode,
    /// More SGEs than the queue allows.
    TooManySge,
    /// The SGEs do not fit in the slot.
    SgeOutside,
    /// The SGE lengths add up to more than 2^32 - 1.
    LengthOverflow,
    /// More inline bytes than the QP allows.
    InlineTooLong,
    /// The inline bytes do not fit in the slot.
    InlineOutside,
    /// FLUSH with an invalid type or level.
    FlushArgs,
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    let end = off.checked_add(4)?;
    Some(u32::from_ne_bytes(b.get(off..end)?.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    let end = off.checked_add(8)?;
    Some(u64::from_ne_bytes(b.get(off..end)?.try_into().ok()?))
}

/// A field of the header of `h` (the caller checked that `h` holds the whole header).
fn hdr32(h: &[u8], off: usize) -> Result<u32, WqeError> {
    u32_at(h, off).ok_or(WqeError::Short)
}

fn hdr64(h: &[u8], off: usize) -> Result<u64, WqeError> {
    u64_at(h, off).ok_or(WqeError::Short)
}

/// A field of the `wr` union.
fn wr32(h: &[u8], off: usize) -> Result<u32, WqeError> {
    hdr32(h, send_wqe::WR.checked_add(off).ok_or(WqeError::Short)?)
}

fn wr64(h: &[u8], off: usize) -> Result<u64, WqeError> {
    hdr64(h, send_wqe::WR.checked_add(off).ok_or(WqeError::Short)?)
}

fn remote(h: &[u8], va: usize, rkey: usize) -> Result<RemoteAddr, WqeError> {
    Ok(RemoteAddr {
        va: wr64(h, va)?,
        rkey: wr32(h, rkey)?,
    })
}

/// Decodes the send WQE in `slot` (a copy of a whole SQ slot) under `lim`.
pub fn decode_send<'a>(slot: &'a [u8], lim: &SendLimits) -> Result<SendWqe<'a>, WqeError> {
    let h = slot.get(..send_wqe::SIZE).ok_or(WqeError::Short)?;
    let wr_id = hdr64(h, send_wqe::WR_ID)?;
    let opcode = WrOpcode::from_raw(hdr32(h, send_wqe::OPCODE)?).ok_or(WqeError::Opcode)?;
    if lim.ud && opcode.is_rc_only() {
        return Err(WqeError::Opcode);
    }
    let raw_flags = hdr32(h, send_wqe::SEND_FLAGS)?;
    let ex = hdr32(h, send_wqe::EX)?;
    let dataless = opcode.is_dataless();
    let flags = SendFlags {
        fence: raw_flags & SEND_FENCE != 0,
        signaled: raw_flags & SEND_SIGNALED != 0,
        solicited: !dataless && raw_flags & SEND_SOLICITED != 0,
        inline: !dataless && raw_flags & SEND_INLINE != 0,
    };
    let wr = match opcode {
        WrOpcode::Send | WrOpcode::SendWithImm | WrOpcode::SendWithInv | WrOpcode::LocalInv => {
            WrFields::None
        }
        WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm | WrOpcode::RdmaRead => {
            WrFields::Rdma(remote(h, wr_rdma::REMOTE_ADDR, wr_rdma::RKEY)?)
        }
        WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => WrFields::Atomic {
            remote: remote(h, wr_atomic::REMOTE_ADDR, wr_atomic::RKEY)?,
            compare_add: wr64(h, wr_atomic::COMPARE_ADD)?,
            swap: wr64(h, wr_atomic::SWAP)?,
        },
        WrOpcode::AtomicWrite => WrFields::AtomicWrite {
            remote: remote(h, wr_atomic::REMOTE_ADDR, wr_atomic::RKEY)?,
            value: wr64(h, wr_atomic::COMPARE_ADD)?.to_ne_bytes(),
        },
        WrOpcode::BindMw => WrFields::BindMw(BindMw {
            addr: wr64(h, wr_bind_mw::ADDR)?,
            length: wr64(h, wr_bind_mw::LENGTH)?,
            mw_rkey: wr32(h, wr_bind_mw::MW_RKEY)?,
            mr_lkey: wr32(h, wr_bind_mw::MR_LKEY)?,
            access: wr32(h, wr_bind_mw::ACCESS)?,
        }),
        WrOpcode::Flush => {
            let byte = |off: usize| -> Result<u8, WqeError> {
                let at = send_wqe::WR.checked_add(off).ok_or(WqeError::Short)?;
                h.get(at).copied().ok_or(WqeError::Short)
            };
            let (typ, level) = (byte(wr_flush::TYPE)?, byte(wr_flush::LEVEL)?);
            // rdma_rxe / IBTA 1.5 FETH: a placement type of at least one of global
            // visibility and persistence, and a selectivity of a range or the whole MR.
            if typ == 0
                || typ & !(FLUSH_GLOBAL | FLUSH_PERSISTENT) != 0
                || (level != FLUSH_RANGE && level != FLUSH_MR)
            {
                return Err(WqeError::FlushArgs);
            }
            WrFields::Flush(Flush {
                remote: remote(h, wr_flush::REMOTE_ADDR, wr_flush::RKEY)?,
                length: wr32(h, wr_flush::LENGTH)?,
                typ,
                level,
            })
        }
    };
    let data = if dataless {
        Data::None
    } else if flags.inline {
        let len = hdr32(h, send_wqe::INLINE_LEN)?;
        if len > lim.max_inline {
            return Err(WqeError::InlineTooLong);
        }
        let end = send_wqe::SIZE
            .checked_add(len as usize)
            .ok_or(WqeError::InlineOutside)?;
        if end > slot.len() {
            return Err(WqeError::InlineOutside);
        }
        Data::Inline {
            offset: send_wqe::SIZE,
            len,
        }
    } else {
        let n = hdr32(h, send_wqe::NUM_SGE)?;
        Data::Sges(SgeList::new(slot, send_wqe::SIZE, n, lim.max_sge)?)
    };
    let ud = if lim.ud && opcode != WrOpcode::LocalInv {
        Some(Ud {
            ah_num: wr32(h, wr_ud::AH_NUM)?,
            dest: UdDest {
                qpn: wr32(h, wr_ud::REMOTE_QPN)?,
                qkey: wr32(h, wr_ud::REMOTE_QKEY)?,
            },
        })
    } else {
        None
    };
    Ok(SendWqe {
        wr_id,
        opcode,
        flags,
        ex,
        wr,
        ud,
        xrc_srqn: hdr32(h, send_wqe::XRC_REMOTE_SRQN)?,
        data,
    })
}

/// Decodes the receive WQE in `slot` (a copy of a whole RQ or SRQ slot), allowing at most
/// `max_sge` SGEs.
pub fn decode_recv(slot: &[u8], max_sge: u32) -> Result<RecvWqe<'_>, WqeError> {
    let h = slot.get(..recv_wqe::SIZE).ok_or(WqeError::Short)?;
    let wr_id = hdr64(h, recv_wqe::WR_ID)?;
    let n = hdr32(h, recv_wqe::NUM_SGE)?;
    let sges = SgeList::new(slot, recv_wqe::SIZE, n, max_sge)?;
    Ok(RecvWqe { wr_id, sges })
}
