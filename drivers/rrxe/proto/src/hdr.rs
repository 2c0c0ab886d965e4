// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Wire formats of the InfiniBand transport headers carried by RoCEv2, and
//! packet-level parse / build.
//!
//! A RoCEv2 "IB packet" is the UDP payload: `BTH | ext headers | payload |
//! pad (0..=3 zero bytes) | ICRC (4 bytes)`. [`parse_packet`] validates such a
//! buffer against the opcode table and returns a [`Packet`] holding decoded
//! headers and the payload's position inside the buffer (never a reference).
//! [`build_headers`] / [`build_packet`] do the inverse. All multi-byte fields
//! are big-endian on the wire; reserved fields are written as 0 and ignored
//! on receive.
//!
//! By concept: [`Bth`] (`bth.rs`), the extension headers (`ext.rs`), and the packet as a
//! whole, parse and build (`packet.rs`); `cursor.rs` reads and writes big-endian fields.

mod bth;
mod cursor;
mod ext;
mod packet;
#[cfg(test)]
mod tests;

pub use bth::Bth;
pub use ext::*;
pub use packet::*;

/// Length of the ICRC trailer.
pub const ICRC_LEN: usize = 4;
/// Largest header length of any supported opcode (BTH + RETH + ImmDt = 32,
/// BTH + AtomicETH = 40, BTH + XRCETH + AtomicETH = 44).
pub const MAX_HDR_LEN: usize = 44;
/// Default partition key.
pub const DEFAULT_PKEY: u16 = 0xffff;
/// The well-known GSI Q_Key.
pub const GSI_QKEY: u32 = 0x8001_0000;

/// Errors from [`parse_packet`] and the header parsers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Buffer shorter than the headers + ICRC the opcode requires.
    Truncated,
    /// BTH transport header version is not 0.
    BadVersion(u8),
    /// Opcode is reserved, RD, or otherwise unsupported.
    UnknownOpcode(u8),
    /// Pad count larger than the bytes available, or non-zero where the
    /// opcode carries no payload / is not the end of a message.
    BadPad,
    /// Payload present for an opcode that allows none.
    UnexpectedPayload,
    /// Payload length not allowed for the opcode (e.g. ATOMIC WRITE != 8).
    BadPayloadLength,
}

/// Errors from [`build_headers`] / [`build_packet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// Output buffer too small.
    BufferTooSmall,
    /// Opcode unknown / unsupported.
    UnknownOpcode(u8),
    /// An extension header required by the opcode is missing (`None`).
    MissingHeader,
    /// An extension header is present that the opcode does not carry.
    UnexpectedHeader,
    /// A payload was given for an opcode that allows none, or the length is
    /// not allowed (ATOMIC WRITE must be 8 bytes), or exceeds 2^31.
    BadPayloadLength,
}
