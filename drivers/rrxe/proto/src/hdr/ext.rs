// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The extension transport headers that follow the BTH (RETH, AETH, AtomicETH,
//! AtomicAckETH, DETH, FETH) and the RNR NAK timer encoding.

/// RDMA Extended Transport Header (16 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Reth {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// DMA length in bytes.
    pub len: u32,
}

/// ACK Extended Transport Header (4 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Aeth {
    /// Syndrome byte (see [`AethKind`]).
    pub syndrome: u8,
    /// Message sequence number (24 bits).
    pub msn: u32,
}

/// NAK codes carried in an AETH syndrome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NakCode {
    /// PSN sequence error (0).
    PsnSeqError,
    /// Invalid request (1).
    InvalidRequest,
    /// Remote access error (2).
    RemoteAccess,
    /// Remote operational error (3).
    RemoteOperational,
    /// Invalid RD request (4).
    InvalidRdRequest,
    /// Reserved code (5..=31).
    Reserved(u8),
}

/// Decoded AETH syndrome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AethKind {
    /// ACK with a credit count (31 = unlimited / invalid credits).
    Ack {
        /// Encoded credit count.
        credits: u8,
    },
    /// RNR NAK with an encoded RNR timer (see [`rnr_timer_usecs`]).
    RnrNak {
        /// Encoded timer (0..=31).
        timer: u8,
    },
    /// NAK.
    Nak(NakCode),
    /// Reserved syndrome class (0b010).
    Reserved,
}

/// AETH syndrome "ACK, unlimited credits".
pub const AETH_ACK_UNLIMITED: u8 = 0x1f;

impl Aeth {
    /// Decodes the syndrome.
    pub const fn kind(&self) -> AethKind {
        let v = self.syndrome & 0x1f;
        match self.syndrome >> 5 {
            0 => AethKind::Ack { credits: v },
            1 => AethKind::RnrNak { timer: v },
            3 => AethKind::Nak(match v {
                0 => NakCode::PsnSeqError,
                1 => NakCode::InvalidRequest,
                2 => NakCode::RemoteAccess,
                3 => NakCode::RemoteOperational,
                4 => NakCode::InvalidRdRequest,
                x => NakCode::Reserved(x),
            }),
            _ => AethKind::Reserved,
        }
    }
    /// Encodes a syndrome byte.
    pub const fn syndrome_of(k: AethKind) -> u8 {
        match k {
            AethKind::Ack { credits } => credits & 0x1f,
            AethKind::RnrNak { timer } => 0x20 | (timer & 0x1f),
            AethKind::Nak(c) => {
                0x60 | match c {
                    NakCode::PsnSeqError => 0,
                    NakCode::InvalidRequest => 1,
                    NakCode::RemoteAccess => 2,
                    NakCode::RemoteOperational => 3,
                    NakCode::InvalidRdRequest => 4,
                    NakCode::Reserved(x) => x & 0x1f,
                }
            }
            AethKind::Reserved => 0x40,
        }
    }
}

/// IBTA encoded RNR NAK timer values in microseconds (index = 5-bit code).
pub const RNR_TIMER_USECS: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
    5120, 7680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840, 245_760,
    327_680, 491_520,
];

/// Decodes a 5-bit RNR timer code to microseconds.
pub fn rnr_timer_usecs(code: u8) -> u32 {
    RNR_TIMER_USECS
        .get(usize::from(code & 0x1f))
        .copied()
        .unwrap_or(655_360)
}

/// Atomic Extended Transport Header (28 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AtomicEth {
    /// Remote virtual address (8-byte aligned).
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Swap (CompareSwap) or add (FetchAdd) operand.
    pub swap_add: u64,
    /// Compare operand (CompareSwap).
    pub compare: u64,
}

/// Atomic ACK Extended Transport Header (8 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AtomicAckEth {
    /// Original remote value.
    pub orig: u64,
}

/// Datagram Extended Transport Header (8 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Deth {
    /// Queue key.
    pub qkey: u32,
    /// Source QP number (24 bits).
    pub src_qp: u32,
}

/// FLUSH Extended Transport Header (4 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Feth {
    /// Selectivity level (2 bits, bits 5:4).
    pub sel: u8,
    /// Placement type (4 bits, bits 3:0).
    pub plt: u8,
}

impl Feth {
    /// Selectivity: the range [VA, VA + DMA length).
    pub const SEL_RANGE: u8 = 0;
    /// Selectivity: the whole memory region of the rkey (VA and length are not used).
    pub const SEL_MR: u8 = 1;
    /// Placement type bit: global visibility.
    pub const PLT_GLOBAL: u8 = 1;
    /// Placement type bit: persistence.
    pub const PLT_PERSISTENT: u8 = 2;
}
