// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! BTH opcode table for RC, UC, UD, XRC and CNP.
//!
//! The opcode byte is `transport << 5 | operation`. For every supported
//! opcode, [`Opcode::info`] gives the extension headers that follow the BTH
//! (in wire order: DETH, XRCETH, FETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt,
//! IETH, CNP-reserved), whether a payload is allowed, and the packet's
//! position in its message (first / middle / last / only). RD and
//! reserved opcodes are reported as unknown (`None`).
//!
//! XRC (transport `0b101`, opcodes `0xA0..=0xB7`) has the operations of RC with the same
//! low five bits; every XRC *request* packet carries an XRCETH right after the BTH (IBTA
//! 9.2, table 38), responses (ACK, READ response, ATOMIC ACK) do not. FLUSH and ATOMIC
//! WRITE (IBTA 1.5, `0x1C`/`0x1D`) are RC-only here.

/// Transport service of an opcode (upper 3 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
    /// Extended reliable connected (XRC).
    Xrc,
    /// RoCEv2 congestion notification packet.
    Cnp,
}

/// What an opcode does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// SEND (any variant).
    Send,
    /// RDMA WRITE (any variant).
    Write,
    /// RDMA READ request.
    ReadRequest,
    /// RDMA READ response (also used to answer FLUSH and ATOMIC WRITE).
    ReadResponse,
    /// ACKNOWLEDGE (ACK, RNR NAK, NAK).
    Ack,
    /// ATOMIC ACKNOWLEDGE.
    AtomicAck,
    /// ATOMIC CompareSwap.
    CompareSwap,
    /// ATOMIC FetchAdd.
    FetchAdd,
    /// FLUSH (IBTA 1.5).
    Flush,
    /// ATOMIC WRITE (IBTA 1.5).
    AtomicWrite,
    /// Congestion notification.
    Cnp,
}

/// Position of a packet inside its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// First packet of a multi-packet message.
    First,
    /// Middle packet.
    Middle,
    /// Last packet of a multi-packet message.
    Last,
    /// The only packet of a message.
    Only,
}

impl Position {
    /// `true` for `First` and `Only` (the packet starts a message).
    pub const fn starts(self) -> bool {
        matches!(self, Position::First | Position::Only)
    }
    /// `true` for `Last` and `Only` (the packet ends a message).
    pub const fn ends(self) -> bool {
        matches!(self, Position::Last | Position::Only)
    }
}

/// Payload rule for an opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadRule {
    /// No payload (and pad count 0).
    None,
    /// Any payload length (including 0).
    Any,
    /// Exactly 8 bytes (ATOMIC WRITE).
    Exact8,
}

/// Set of extension headers (bit flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct HdrSet(pub u16);

impl HdrSet {
    /// Datagram ETH (8 bytes).
    pub const DETH: HdrSet = HdrSet(1 << 0);
    /// FLUSH ETH (4 bytes).
    pub const FETH: HdrSet = HdrSet(1 << 1);
    /// RDMA ETH (16 bytes).
    pub const RETH: HdrSet = HdrSet(1 << 2);
    /// Atomic ETH (28 bytes).
    pub const ATOMIC: HdrSet = HdrSet(1 << 3);
    /// ACK ETH (4 bytes).
    pub const AETH: HdrSet = HdrSet(1 << 4);
    /// Atomic ACK ETH (8 bytes).
    pub const ATOMIC_ACK: HdrSet = HdrSet(1 << 5);
    /// Immediate data (4 bytes).
    pub const IMMDT: HdrSet = HdrSet(1 << 6);
    /// Invalidate ETH (4 bytes).
    pub const IETH: HdrSet = HdrSet(1 << 7);
    /// CNP reserved area (16 bytes).
    pub const CNP_RSVD: HdrSet = HdrSet(1 << 8);
    /// XRC ETH (4 bytes: the XRC SRQ number).
    pub const XRCETH: HdrSet = HdrSet(1 << 9);
    /// Empty set.
    pub const NONE: HdrSet = HdrSet(0);

    /// Union.
    pub const fn with(self, o: HdrSet) -> HdrSet {
        HdrSet(self.0 | o.0)
    }
    /// `true` if all bits of `o` are set.
    pub const fn has(self, o: HdrSet) -> bool {
        self.0 & o.0 == o.0
    }
    /// Total length in bytes of the extension headers in the set.
    pub const fn len(self) -> usize {
        let mut n = 0;
        if self.has(HdrSet::DETH) {
            n += 8;
        }
        if self.has(HdrSet::FETH) {
            n += 4;
        }
        if self.has(HdrSet::RETH) {
            n += 16;
        }
        if self.has(HdrSet::ATOMIC) {
            n += 28;
        }
        if self.has(HdrSet::AETH) {
            n += 4;
        }
        if self.has(HdrSet::ATOMIC_ACK) {
            n += 8;
        }
        if self.has(HdrSet::IMMDT) {
            n += 4;
        }
        if self.has(HdrSet::IETH) {
            n += 4;
        }
        if self.has(HdrSet::CNP_RSVD) {
            n += 16;
        }
        if self.has(HdrSet::XRCETH) {
            n += 4;
        }
        n
    }
    /// `true` when the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// Static description of one opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpcodeInfo {
    /// Transport service.
    pub transport: Transport,
    /// Operation.
    pub kind: OpKind,
    /// Position in the message.
    pub pos: Position,
    /// Extension headers following the BTH.
    pub hdrs: HdrSet,
    /// Payload rule.
    pub payload: PayloadRule,
    /// Total header length: BTH (12) + extension headers.
    pub hdr_len: usize,
}

impl OpcodeInfo {
    /// `true` for requests (sent by a requester, handled by a responder).
    pub const fn is_request(&self) -> bool {
        !matches!(
            self.kind,
            OpKind::ReadResponse | OpKind::Ack | OpKind::AtomicAck | OpKind::Cnp
        )
    }
    /// `true` for responses (handled by the completer).
    pub const fn is_response(&self) -> bool {
        matches!(
            self.kind,
            OpKind::ReadResponse | OpKind::Ack | OpKind::AtomicAck
        )
    }
}

/// Length of the base transport header.
pub const BTH_LEN: usize = 12;

/// A BTH opcode byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Opcode(pub u8);

#[allow(missing_docs)]
impl Opcode {
    pub const RC_SEND_FIRST: Opcode = Opcode(0x00);
    pub const RC_SEND_MIDDLE: Opcode = Opcode(0x01);
    pub const RC_SEND_LAST: Opcode = Opcode(0x02);
    pub const RC_SEND_LAST_IMM: Opcode = Opcode(0x03);
    pub const RC_SEND_ONLY: Opcode = Opcode(0x04);
    pub const RC_SEND_ONLY_IMM: Opcode = Opcode(0x05);
    pub const RC_WRITE_FIRST: Opcode = Opcode(0x06);
    pub const RC_WRITE_MIDDLE: Opcode = Opcode(0x07);
    pub const RC_WRITE_LAST: Opcode = Opcode(0x08);
    pub const RC_WRITE_LAST_IMM: Opcode = Opcode(0x09);
    pub const RC_WRITE_ONLY: Opcode = Opcode(0x0a);
    pub const RC_WRITE_ONLY_IMM: Opcode = Opcode(0x0b);
    pub const RC_READ_REQUEST: Opcode = Opcode(0x0c);
    pub const RC_READ_RESPONSE_FIRST: Opcode = Opcode(0x0d);
    pub const RC_READ_RESPONSE_MIDDLE: Opcode = Opcode(0x0e);
    pub const RC_READ_RESPONSE_LAST: Opcode = Opcode(0x0f);
    pub const RC_READ_RESPONSE_ONLY: Opcode = Opcode(0x10);
    pub const RC_ACKNOWLEDGE: Opcode = Opcode(0x11);
    pub const RC_ATOMIC_ACKNOWLEDGE: Opcode = Opcode(0x12);
    pub const RC_COMPARE_SWAP: Opcode = Opcode(0x13);
    pub const RC_FETCH_ADD: Opcode = Opcode(0x14);
    pub const RC_SEND_LAST_INV: Opcode = Opcode(0x16);
    pub const RC_SEND_ONLY_INV: Opcode = Opcode(0x17);
    pub const RC_FLUSH: Opcode = Opcode(0x1c);
    pub const RC_ATOMIC_WRITE: Opcode = Opcode(0x1d);
    pub const UC_SEND_FIRST: Opcode = Opcode(0x20);
    pub const UC_SEND_MIDDLE: Opcode = Opcode(0x21);
    pub const UC_SEND_LAST: Opcode = Opcode(0x22);
    pub const UC_SEND_LAST_IMM: Opcode = Opcode(0x23);
    pub const UC_SEND_ONLY: Opcode = Opcode(0x24);
    pub const UC_SEND_ONLY_IMM: Opcode = Opcode(0x25);
    pub const UC_WRITE_FIRST: Opcode = Opcode(0x26);
    pub const UC_WRITE_MIDDLE: Opcode = Opcode(0x27);
    pub const UC_WRITE_LAST: Opcode = Opcode(0x28);
    pub const UC_WRITE_LAST_IMM: Opcode = Opcode(0x29);
    pub const UC_WRITE_ONLY: Opcode = Opcode(0x2a);
    pub const UC_WRITE_ONLY_IMM: Opcode = Opcode(0x2b);
    pub const XRC_SEND_FIRST: Opcode = Opcode(0xa0);
    pub const XRC_SEND_ONLY: Opcode = Opcode(0xa4);
    pub const XRC_READ_REQUEST: Opcode = Opcode(0xac);
    pub const XRC_ACKNOWLEDGE: Opcode = Opcode(0xb1);
    pub const XRC_COMPARE_SWAP: Opcode = Opcode(0xb3);
    pub const UD_SEND_ONLY: Opcode = Opcode(0x64);
    pub const UD_SEND_ONLY_IMM: Opcode = Opcode(0x65);
    pub const CNP: Opcode = Opcode(0x81);
}

impl Opcode {
    /// The opcode's static description, or `None` for unknown / reserved /
    /// unsupported (RD) opcodes.
    pub const fn info(self) -> Option<OpcodeInfo> {
        // XRC: the RC table (see the module docs); `0x1C`/`0x1D` do not exist.
        use OpKind as K;
        use PayloadRule as P;
        use Position::*;
        let transport = match self.0 >> 5 {
            0 => Transport::Rc,
            1 => Transport::Uc,
            3 => Transport::Ud,
            4 => Transport::Cnp,
            5 => Transport::Xrc,
            _ => return None,
        };
        let op = self.0 & 0x1f;
        let n = HdrSet::NONE;
        let (kind, pos, hdrs, payload) = match transport {
            Transport::Cnp => {
                if op != 0x01 {
                    return None;
                }
                (K::Cnp, Only, HdrSet::CNP_RSVD, P::None)
            }
            Transport::Ud => match op {
                0x04 => (K::Send, Only, HdrSet::DETH, P::Any),
                0x05 => (K::Send, Only, HdrSet::DETH.with(HdrSet::IMMDT), P::Any),
                _ => return None,
            },
            Transport::Rc | Transport::Uc | Transport::Xrc => {
                let rc_only = op > 0x0b;
                if rc_only && matches!(transport, Transport::Uc) {
                    return None;
                }
                if op > 0x17 && matches!(transport, Transport::Xrc) {
                    return None;
                }
                match op {
                    0x00 => (K::Send, First, n, P::Any),
                    0x01 => (K::Send, Middle, n, P::Any),
                    0x02 => (K::Send, Last, n, P::Any),
                    0x03 => (K::Send, Last, HdrSet::IMMDT, P::Any),
                    0x04 => (K::Send, Only, n, P::Any),
                    0x05 => (K::Send, Only, HdrSet::IMMDT, P::Any),
                    0x06 => (K::Write, First, HdrSet::RETH, P::Any),
                    0x07 => (K::Write, Middle, n, P::Any),
                    0x08 => (K::Write, Last, n, P::Any),
                    0x09 => (K::Write, Last, HdrSet::IMMDT, P::Any),
                    0x0a => (K::Write, Only, HdrSet::RETH, P::Any),
                    0x0b => (K::Write, Only, HdrSet::RETH.with(HdrSet::IMMDT), P::Any),
                    0x0c => (K::ReadRequest, Only, HdrSet::RETH, P::None),
                    0x0d => (K::ReadResponse, First, HdrSet::AETH, P::Any),
                    0x0e => (K::ReadResponse, Middle, n, P::Any),
                    0x0f => (K::ReadResponse, Last, HdrSet::AETH, P::Any),
                    0x10 => (K::ReadResponse, Only, HdrSet::AETH, P::Any),
                    0x11 => (K::Ack, Only, HdrSet::AETH, P::None),
                    0x12 => (
                        K::AtomicAck,
                        Only,
                        HdrSet::AETH.with(HdrSet::ATOMIC_ACK),
                        P::None,
                    ),
                    0x13 => (K::CompareSwap, Only, HdrSet::ATOMIC, P::None),
                    0x14 => (K::FetchAdd, Only, HdrSet::ATOMIC, P::None),
                    0x16 => (K::Send, Last, HdrSet::IETH, P::Any),
                    0x17 => (K::Send, Only, HdrSet::IETH, P::Any),
                    0x1c => (K::Flush, Only, HdrSet::FETH.with(HdrSet::RETH), P::None),
                    0x1d => (K::AtomicWrite, Only, HdrSet::RETH, P::Exact8),
                    _ => return None,
                }
            }
        };
        let is_request = !matches!(kind, K::ReadResponse | K::Ack | K::AtomicAck | K::Cnp);
        let hdrs = if matches!(transport, Transport::Xrc) && is_request {
            hdrs.with(HdrSet::XRCETH)
        } else {
            hdrs
        };
        Some(OpcodeInfo {
            transport,
            kind,
            pos,
            hdrs,
            payload,
            hdr_len: BTH_LEN + hdrs.len(),
        })
    }

    /// The XRC opcode of an RC opcode (same operation, transport `0b101`), or `None` if
    /// `self` is not an RC opcode that XRC has.
    pub const fn rc_to_xrc(self) -> Option<Opcode> {
        if self.0 > 0x17 {
            return None;
        }
        let x = Opcode(self.0 | 0xa0);
        match x.info() {
            Some(_) => Some(x),
            None => None,
        }
    }

    /// Builds the opcode for a transport, kind and position, with the given
    /// immediate / invalidate flags. Returns `None` if no such opcode exists.
    pub const fn compose(
        transport: Transport,
        kind: OpKind,
        pos: Position,
        imm: bool,
        inv: bool,
    ) -> Option<Opcode> {
        use OpKind as K;
        use Position::*;
        let base: u8 = match transport {
            Transport::Rc => 0x00,
            Transport::Uc => 0x20,
            Transport::Ud => 0x60,
            Transport::Xrc => 0xa0,
            Transport::Cnp => {
                return match kind {
                    K::Cnp => Some(Opcode::CNP),
                    _ => None,
                }
            }
        };
        let op: u8 = match (kind, pos, imm, inv) {
            (K::Send, First, false, false) => 0x00,
            (K::Send, Middle, false, false) => 0x01,
            (K::Send, Last, false, false) => 0x02,
            (K::Send, Last, true, false) => 0x03,
            (K::Send, Only, false, false) => 0x04,
            (K::Send, Only, true, false) => 0x05,
            (K::Send, Last, false, true) => 0x16,
            (K::Send, Only, false, true) => 0x17,
            (K::Write, First, false, false) => 0x06,
            (K::Write, Middle, false, false) => 0x07,
            (K::Write, Last, false, false) => 0x08,
            (K::Write, Last, true, false) => 0x09,
            (K::Write, Only, false, false) => 0x0a,
            (K::Write, Only, true, false) => 0x0b,
            (K::ReadRequest, Only, false, false) => 0x0c,
            (K::ReadResponse, First, false, false) => 0x0d,
            (K::ReadResponse, Middle, false, false) => 0x0e,
            (K::ReadResponse, Last, false, false) => 0x0f,
            (K::ReadResponse, Only, false, false) => 0x10,
            (K::Ack, Only, false, false) => 0x11,
            (K::AtomicAck, Only, false, false) => 0x12,
            (K::CompareSwap, Only, false, false) => 0x13,
            (K::FetchAdd, Only, false, false) => 0x14,
            (K::Flush, Only, false, false) => 0x1c,
            (K::AtomicWrite, Only, false, false) => 0x1d,
            _ => return None,
        };
        let code = Opcode(base | op);
        match code.info() {
            Some(_) => Some(code),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_sizes_match_rxe() {
        let cases: &[(Opcode, usize)] = &[
            (Opcode::RC_SEND_FIRST, 12),
            (Opcode::RC_SEND_ONLY_IMM, 16),
            (Opcode::RC_WRITE_ONLY_IMM, 32),
            (Opcode::RC_READ_REQUEST, 28),
            (Opcode::RC_READ_RESPONSE_MIDDLE, 12),
            (Opcode::RC_ACKNOWLEDGE, 16),
            (Opcode::RC_ATOMIC_ACKNOWLEDGE, 24),
            (Opcode::RC_COMPARE_SWAP, 40),
            (Opcode::RC_SEND_ONLY_INV, 16),
            (Opcode::RC_FLUSH, 32),
            (Opcode::RC_ATOMIC_WRITE, 28),
            (Opcode::UD_SEND_ONLY, 20),
            (Opcode::UD_SEND_ONLY_IMM, 24),
            (Opcode::CNP, 28),
        ];
        for &(op, len) in cases {
            assert_eq!(op.info().map(|i| i.hdr_len), Some(len), "{op:?}");
        }
        assert!(Opcode(0x15).info().is_none());
        assert!(Opcode(0x2c).info().is_none()); // UC READ does not exist
        assert!(Opcode(0x40).info().is_none()); // RD unsupported
        assert!(Opcode(0x80).info().is_none());
    }

    #[test]
    fn xrc_table() {
        // Requests: the RC size plus the 4-byte XRCETH; responses: the RC size.
        for b in 0..=0x17u8 {
            let rc = Opcode(b).info();
            let x = Opcode(0xa0 | b).info();
            assert_eq!(rc.is_some(), x.is_some(), "{b:#x}");
            let (Some(rc), Some(x)) = (rc, x) else {
                continue;
            };
            assert_eq!(x.transport, Transport::Xrc);
            assert_eq!((x.kind, x.pos, x.payload), (rc.kind, rc.pos, rc.payload));
            let extra = if rc.is_request() { 4 } else { 0 };
            assert_eq!(x.hdr_len, rc.hdr_len + extra, "{b:#x}");
            assert_eq!(x.hdrs.has(HdrSet::XRCETH), rc.is_request());
            assert_eq!(Opcode(b).rc_to_xrc(), Some(Opcode(0xa0 | b)));
        }
        assert_eq!(Opcode::XRC_SEND_ONLY.info().map(|i| i.hdr_len), Some(16));
        assert_eq!(Opcode::XRC_READ_REQUEST.info().map(|i| i.hdr_len), Some(32));
        assert_eq!(Opcode::XRC_COMPARE_SWAP.info().map(|i| i.hdr_len), Some(44));
        assert_eq!(Opcode::XRC_ACKNOWLEDGE.info().map(|i| i.hdr_len), Some(16));
        assert!(Opcode(0xbc).info().is_none()); // no XRC FLUSH
        assert!(Opcode(0xbd).info().is_none()); // no XRC ATOMIC WRITE
        assert!(Opcode(0xb5).info().is_none());
        assert!(Opcode(0xb8).info().is_none());
        assert_eq!(Opcode::RC_FLUSH.rc_to_xrc(), None);
        assert_eq!(Opcode::UC_SEND_ONLY.rc_to_xrc(), None);
    }

    #[test]
    fn compose_roundtrip() {
        for b in 0..=255u8 {
            let Some(i) = Opcode(b).info() else { continue };
            let imm = i.hdrs.has(HdrSet::IMMDT);
            let inv = i.hdrs.has(HdrSet::IETH);
            assert_eq!(
                Opcode::compose(i.transport, i.kind, i.pos, imm, inv),
                Some(Opcode(b))
            );
        }
    }
}
