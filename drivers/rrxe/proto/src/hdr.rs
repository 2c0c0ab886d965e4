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

use super::opcode::{HdrSet, OpKind, Opcode, OpcodeInfo, PayloadRule, BTH_LEN};
use super::psn::Psn;

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

struct Rd<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Rd<'a> {
    fn new(b: &'a [u8]) -> Self {
        Rd { b, pos: 0 }
    }
    fn take<const N: usize>(&mut self) -> Result<[u8; N], ParseError> {
        let end = self.pos.checked_add(N).ok_or(ParseError::Truncated)?;
        let s = self.b.get(self.pos..end).ok_or(ParseError::Truncated)?;
        self.pos = end;
        <[u8; N]>::try_from(s).map_err(|_| ParseError::Truncated)
    }
    fn u8(&mut self) -> Result<u8, ParseError> {
        Ok(u8::from_be_bytes(self.take::<1>()?))
    }
    fn u16(&mut self) -> Result<u16, ParseError> {
        Ok(u16::from_be_bytes(self.take()?))
    }
    fn u32(&mut self) -> Result<u32, ParseError> {
        Ok(u32::from_be_bytes(self.take()?))
    }
    fn u64(&mut self) -> Result<u64, ParseError> {
        Ok(u64::from_be_bytes(self.take()?))
    }
}

struct Wr<'a> {
    b: &'a mut [u8],
    pos: usize,
}

impl<'a> Wr<'a> {
    fn new(b: &'a mut [u8]) -> Self {
        Wr { b, pos: 0 }
    }
    fn put(&mut self, v: &[u8]) -> Result<(), BuildError> {
        let end = self
            .pos
            .checked_add(v.len())
            .ok_or(BuildError::BufferTooSmall)?;
        let d = self
            .b
            .get_mut(self.pos..end)
            .ok_or(BuildError::BufferTooSmall)?;
        if !super::copy_exact(d, v) {
            return Err(BuildError::BufferTooSmall);
        }
        self.pos = end;
        Ok(())
    }
    fn u8(&mut self, v: u8) -> Result<(), BuildError> {
        self.put(&[v])
    }
    fn u16(&mut self, v: u16) -> Result<(), BuildError> {
        self.put(&v.to_be_bytes())
    }
    fn u32(&mut self, v: u32) -> Result<(), BuildError> {
        self.put(&v.to_be_bytes())
    }
    fn u64(&mut self, v: u64) -> Result<(), BuildError> {
        self.put(&v.to_be_bytes())
    }
}

/// Base Transport Header (12 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bth {
    /// Opcode.
    pub opcode: Opcode,
    /// Solicited event.
    pub se: bool,
    /// Migration state.
    pub mig: bool,
    /// Pad count (0..=3).
    pub pad: u8,
    /// Transport header version (must be 0).
    pub tver: u8,
    /// Partition key.
    pub pkey: u16,
    /// Forward ECN (RoCE: reserved, masked out of the ICRC).
    pub fecn: bool,
    /// Backward ECN (RoCE: reserved, masked out of the ICRC).
    pub becn: bool,
    /// Destination QP number (24 bits).
    pub dest_qp: u32,
    /// Acknowledge request.
    pub ack_req: bool,
    /// Packet sequence number.
    pub psn: Psn,
}

impl Bth {
    /// A BTH with the given opcode, destination QP and PSN; other fields
    /// default (pkey 0xffff).
    pub const fn new(opcode: Opcode, dest_qp: u32, psn: Psn) -> Bth {
        Bth {
            opcode,
            se: false,
            mig: false,
            pad: 0,
            tver: 0,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qp: dest_qp & 0x00ff_ffff,
            ack_req: false,
            psn,
        }
    }

    /// Parses the 12-byte BTH at the start of `b` (no opcode validation).
    pub fn parse(b: &[u8]) -> Result<Bth, ParseError> {
        let mut r = Rd::new(b);
        let opcode = Opcode(r.u8()?);
        let f = r.u8()?;
        let pkey = r.u16()?;
        let q = r.u32()?;
        let a = r.u32()?;
        Ok(Bth {
            opcode,
            se: f & 0x80 != 0,
            mig: f & 0x40 != 0,
            pad: (f >> 4) & 3,
            tver: f & 0x0f,
            pkey,
            fecn: q & 0x8000_0000 != 0,
            becn: q & 0x4000_0000 != 0,
            dest_qp: q & 0x00ff_ffff,
            ack_req: a & 0x8000_0000 != 0,
            psn: Psn::new(a),
        })
    }

    fn write(&self, w: &mut Wr<'_>) -> Result<(), BuildError> {
        w.u8(self.opcode.0)?;
        w.u8((u8::from(self.se) << 7)
            | (u8::from(self.mig) << 6)
            | ((self.pad & 3) << 4)
            | (self.tver & 0x0f))?;
        w.u16(self.pkey)?;
        w.u32(
            (u32::from(self.fecn) << 31)
                | (u32::from(self.becn) << 30)
                | (self.dest_qp & 0x00ff_ffff),
        )?;
        w.u32((u32::from(self.ack_req) << 31) | self.psn.get())
    }

    /// Writes the BTH into the first 12 bytes of `out`.
    pub fn write_to(&self, out: &mut [u8]) -> Result<(), BuildError> {
        self.write(&mut Wr::new(out))
    }
}

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

/// All headers of an IB packet: BTH plus the optional extension headers.
/// Exactly the headers required by `bth.opcode` must be `Some`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Headers {
    /// Base transport header.
    pub bth: Bth,
    /// RETH.
    pub reth: Option<Reth>,
    /// AETH.
    pub aeth: Option<Aeth>,
    /// AtomicETH.
    pub atomic: Option<AtomicEth>,
    /// AtomicAckETH.
    pub atomic_ack: Option<AtomicAckEth>,
    /// DETH.
    pub deth: Option<Deth>,
    /// Immediate data (opaque 32 bits, network order preserved as a u32).
    pub imm: Option<u32>,
    /// IETH: rkey to invalidate.
    pub ieth: Option<u32>,
    /// FETH.
    pub feth: Option<Feth>,
    /// XRCETH: the XRC SRQ number (24 bits) of an XRC request.
    pub xrceth: Option<u32>,
}

impl Headers {
    /// Headers with only a BTH.
    pub const fn new(bth: Bth) -> Headers {
        Headers {
            bth,
            reth: None,
            aeth: None,
            atomic: None,
            atomic_ack: None,
            deth: None,
            imm: None,
            ieth: None,
            feth: None,
            xrceth: None,
        }
    }

    /// The set of extension headers that are `Some`.
    pub fn present(&self) -> HdrSet {
        let mut s = HdrSet::NONE;
        if self.deth.is_some() {
            s = s.with(HdrSet::DETH);
        }
        if self.xrceth.is_some() {
            s = s.with(HdrSet::XRCETH);
        }
        if self.feth.is_some() {
            s = s.with(HdrSet::FETH);
        }
        if self.reth.is_some() {
            s = s.with(HdrSet::RETH);
        }
        if self.atomic.is_some() {
            s = s.with(HdrSet::ATOMIC);
        }
        if self.aeth.is_some() {
            s = s.with(HdrSet::AETH);
        }
        if self.atomic_ack.is_some() {
            s = s.with(HdrSet::ATOMIC_ACK);
        }
        if self.imm.is_some() {
            s = s.with(HdrSet::IMMDT);
        }
        if self.ieth.is_some() {
            s = s.with(HdrSet::IETH);
        }
        s
    }
}

/// A parsed IB packet: decoded headers and the payload location.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Decoded headers.
    pub hdrs: Headers,
    /// Opcode description.
    pub info: OpcodeInfo,
    /// Offset of the payload from the start of the parsed buffer (== header length).
    pub payload_off: u32,
    /// Payload length (excluding pad and ICRC).
    pub payload_len: u32,
    /// The 4 ICRC bytes as found on the wire.
    pub icrc: [u8; 4],
    /// ATOMIC WRITE only: the 8-byte payload as a big-endian value.
    pub atomic_write: Option<u64>,
}

impl Packet {
    /// Payload as a slice of the buffer that was parsed (`None` if `buf` is
    /// not that buffer / too short).
    pub fn payload<'a>(&self, buf: &'a [u8]) -> Option<&'a [u8]> {
        let s = self.payload_off as usize;
        buf.get(s..s.checked_add(self.payload_len as usize)?)
    }
    /// Length of the whole IB packet (headers + payload + pad + ICRC).
    pub fn total_len(&self) -> usize {
        (self.payload_off as usize)
            .saturating_add(self.payload_len as usize)
            .saturating_add(usize::from(self.hdrs.bth.pad))
            .saturating_add(ICRC_LEN)
    }
}

/// Pad count for a payload of `len` bytes.
pub const fn pad_for(len: u32) -> u8 {
    ((4 - (len & 3)) & 3) as u8
}

/// Parses an IB packet (`buf` = UDP payload: BTH ... ICRC).
pub fn parse_packet(buf: &[u8]) -> Result<Packet, ParseError> {
    let bth = Bth::parse(buf)?;
    if bth.tver != 0 {
        return Err(ParseError::BadVersion(bth.tver));
    }
    let info = bth
        .opcode
        .info()
        .ok_or(ParseError::UnknownOpcode(bth.opcode.0))?;
    let min = info
        .hdr_len
        .checked_add(ICRC_LEN)
        .ok_or(ParseError::Truncated)?;
    if buf.len() < min {
        return Err(ParseError::Truncated);
    }
    let mut hdrs = Headers::new(bth);
    let mut r = Rd::new(
        buf.get(BTH_LEN..info.hdr_len)
            .ok_or(ParseError::Truncated)?,
    );
    let h = info.hdrs;
    if h.has(HdrSet::DETH) {
        let qkey = r.u32()?;
        let src_qp = r.u32()? & 0x00ff_ffff;
        hdrs.deth = Some(Deth { qkey, src_qp });
    }
    if h.has(HdrSet::XRCETH) {
        // 8 reserved bits, then the 24-bit XRC SRQ number.
        hdrs.xrceth = Some(r.u32()? & 0x00ff_ffff);
    }
    if h.has(HdrSet::FETH) {
        let bits = r.u32()?;
        hdrs.feth = Some(Feth {
            sel: ((bits >> 4) & 3) as u8,
            plt: (bits & 0xf) as u8,
        });
    }
    if h.has(HdrSet::RETH) {
        let va = r.u64()?;
        let rkey = r.u32()?;
        let len = r.u32()?;
        hdrs.reth = Some(Reth { va, rkey, len });
    }
    if h.has(HdrSet::ATOMIC) {
        let va = r.u64()?;
        let rkey = r.u32()?;
        let swap_add = r.u64()?;
        let compare = r.u64()?;
        hdrs.atomic = Some(AtomicEth {
            va,
            rkey,
            swap_add,
            compare,
        });
    }
    if h.has(HdrSet::AETH) {
        let v = r.u32()?;
        hdrs.aeth = Some(Aeth {
            syndrome: (v >> 24) as u8,
            msn: v & 0x00ff_ffff,
        });
    }
    if h.has(HdrSet::ATOMIC_ACK) {
        hdrs.atomic_ack = Some(AtomicAckEth { orig: r.u64()? });
    }
    if h.has(HdrSet::IMMDT) {
        hdrs.imm = Some(r.u32()?);
    }
    if h.has(HdrSet::IETH) {
        hdrs.ieth = Some(r.u32()?);
    }
    // CNP reserved bytes are ignored.
    let rest = buf.len() - min; // buf.len() >= min checked above
    let pad = usize::from(bth.pad);
    if pad > rest {
        return Err(ParseError::BadPad);
    }
    let payload_len = rest - pad;
    match info.payload {
        PayloadRule::None => {
            if rest != 0 {
                return Err(if payload_len == 0 {
                    ParseError::BadPad
                } else {
                    ParseError::UnexpectedPayload
                });
            }
        }
        PayloadRule::Exact8 => {
            if payload_len != 8 {
                return Err(ParseError::BadPayloadLength);
            }
            if pad != 0 {
                return Err(ParseError::BadPad);
            }
        }
        PayloadRule::Any => {
            // Non-final packets carry whole PMTU multiples: no pad allowed.
            if !info.pos.ends() && pad != 0 {
                return Err(ParseError::BadPad);
            }
            // A pad must only round the payload up to a 4-byte multiple.
            if pad != usize::from(pad_for(payload_len as u32)) && payload_len != 0 {
                return Err(ParseError::BadPad);
            }
            if payload_len == 0 && pad != 0 {
                return Err(ParseError::BadPad);
            }
            if payload_len > (1usize << 31) {
                return Err(ParseError::BadPayloadLength);
            }
        }
    }
    let icrc_off = buf.len() - ICRC_LEN;
    let icrc = buf
        .get(icrc_off..)
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .ok_or(ParseError::Truncated)?;
    if matches!(info.kind, OpKind::Cnp) && bth.pad != 0 {
        return Err(ParseError::BadPad);
    }
    let atomic_write = if matches!(info.kind, OpKind::AtomicWrite) {
        let s = buf
            .get(info.hdr_len..info.hdr_len + 8)
            .ok_or(ParseError::Truncated)?;
        Some(u64::from_be_bytes(
            <[u8; 8]>::try_from(s).map_err(|_| ParseError::Truncated)?,
        ))
    } else {
        None
    };
    Ok(Packet {
        hdrs,
        info,
        payload_off: info.hdr_len as u32,
        payload_len: payload_len as u32,
        icrc,
        atomic_write,
    })
}

/// Header length (BTH + extension headers) for `opcode`.
pub fn header_len(opcode: Opcode) -> Option<usize> {
    opcode.info().map(|i| i.hdr_len)
}

/// Total IB packet length (headers + payload + pad + ICRC) for `opcode`
/// with `payload_len` payload bytes.
pub fn packet_len(opcode: Opcode, payload_len: u32) -> Option<usize> {
    let h = header_len(opcode)?;
    h.checked_add(payload_len as usize)?
        .checked_add(usize::from(pad_for(payload_len)))?
        .checked_add(ICRC_LEN)
}

/// Writes the headers into the start of `out`, with the BTH pad count
/// computed from `payload_len` (the `bth.pad` field is ignored). Validates
/// that exactly the extension headers of the opcode are present and that the
/// payload length is allowed. Returns the header length.
pub fn build_headers(h: &Headers, payload_len: u32, out: &mut [u8]) -> Result<usize, BuildError> {
    let op = h.bth.opcode;
    let info = op.info().ok_or(BuildError::UnknownOpcode(op.0))?;
    let want = HdrSet(info.hdrs.0 & !HdrSet::CNP_RSVD.0);
    let have = h.present();
    if have != want {
        return Err(if want.has(have) {
            BuildError::MissingHeader
        } else {
            BuildError::UnexpectedHeader
        });
    }
    match info.payload {
        PayloadRule::None if payload_len != 0 => return Err(BuildError::BadPayloadLength),
        PayloadRule::Exact8 if payload_len != 8 => return Err(BuildError::BadPayloadLength),
        _ => {}
    }
    if payload_len > (1u32 << 31) {
        return Err(BuildError::BadPayloadLength);
    }
    if out.len() < info.hdr_len {
        return Err(BuildError::BufferTooSmall);
    }
    let mut bth = h.bth;
    bth.pad = pad_for(payload_len);
    bth.tver = 0;
    let mut w = Wr::new(out);
    bth.write(&mut w)?;
    if let Some(d) = h.deth {
        w.u32(d.qkey)?;
        w.u32(d.src_qp & 0x00ff_ffff)?;
    }
    if let Some(x) = h.xrceth {
        w.u32(x & 0x00ff_ffff)?;
    }
    if let Some(f) = h.feth {
        w.u32((u32::from(f.sel & 3) << 4) | u32::from(f.plt & 0xf))?;
    }
    if let Some(r) = h.reth {
        w.u64(r.va)?;
        w.u32(r.rkey)?;
        w.u32(r.len)?;
    }
    if let Some(a) = h.atomic {
        w.u64(a.va)?;
        w.u32(a.rkey)?;
        w.u64(a.swap_add)?;
        w.u64(a.compare)?;
    }
    if let Some(a) = h.aeth {
        w.u32((u32::from(a.syndrome) << 24) | (a.msn & 0x00ff_ffff))?;
    }
    if let Some(a) = h.atomic_ack {
        w.u64(a.orig)?;
    }
    if let Some(i) = h.imm {
        w.u32(i)?;
    }
    if let Some(i) = h.ieth {
        w.u32(i)?;
    }
    if info.hdrs.has(HdrSet::CNP_RSVD) {
        w.put(&[0u8; 16])?;
    }
    Ok(w.pos)
}

/// Builds a complete IB packet into `out`: headers, payload, zero pad, and a
/// zeroed ICRC placeholder (fill it with [`super::icrc`]). Returns the total
/// length.
pub fn build_packet(h: &Headers, payload: &[u8], out: &mut [u8]) -> Result<usize, BuildError> {
    let plen = u32::try_from(payload.len()).map_err(|_| BuildError::BadPayloadLength)?;
    let hl = build_headers(h, plen, out)?;
    let mut w = Wr { b: out, pos: hl };
    w.put(payload)?;
    let pad = usize::from(pad_for(plen));
    w.put([0u8; 3].get(..pad).unwrap_or(&[]))?;
    w.put(&[0u8; ICRC_LEN])?;
    Ok(w.pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_send_only_packet() {
        // RC SEND ONLY, SE, pkey ffff, dest qp 0x000011, ackreq, psn 0x123456,
        // 5 payload bytes -> pad 3.
        let pkt: [u8; 12 + 5 + 3 + 4] = [
            0x04, 0xb0, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11, 0x80, 0x12, 0x34, 0x56, b'h', b'e',
            b'l', b'l', b'o', 0, 0, 0, 0xaa, 0xbb, 0xcc, 0xdd,
        ];
        let p = parse_packet(&pkt).unwrap();
        assert_eq!(p.hdrs.bth.opcode, Opcode::RC_SEND_ONLY);
        assert!(p.hdrs.bth.se);
        assert_eq!(p.hdrs.bth.pad, 3);
        assert_eq!(p.hdrs.bth.dest_qp, 0x11);
        assert!(p.hdrs.bth.ack_req);
        assert_eq!(p.hdrs.bth.psn, Psn::new(0x123456));
        assert_eq!(p.payload(&pkt), Some(&b"hello"[..]));
        assert_eq!(p.icrc, [0xaa, 0xbb, 0xcc, 0xdd]);
        let mut out = [0u8; 64];
        let n = build_packet(&p.hdrs, b"hello", &mut out).unwrap();
        assert_eq!(n, pkt.len());
        assert_eq!(&out[..n - 4], &pkt[..n - 4]);
    }

    #[test]
    fn known_write_and_ack() {
        let mut h = Headers::new(Bth::new(Opcode::RC_WRITE_ONLY_IMM, 0xabcdef, Psn::new(7)));
        h.reth = Some(Reth {
            va: 0x0102_0304_0506_0708,
            rkey: 0x1122_3344,
            len: 0,
        });
        h.imm = Some(0xdead_beef);
        let mut out = [0u8; 64];
        let n = build_packet(&h, &[], &mut out).unwrap();
        assert_eq!(
            &out[..n],
            &[
                0x0b, 0x00, 0xff, 0xff, 0x00, 0xab, 0xcd, 0xef, 0x00, 0x00, 0x00, 0x07, 1, 2, 3, 4,
                5, 6, 7, 8, 0x11, 0x22, 0x33, 0x44, 0, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0
            ]
        );
        let mut a = Headers::new(Bth::new(Opcode::RC_ACKNOWLEDGE, 1, Psn::new(2)));
        a.aeth = Some(Aeth {
            syndrome: Aeth::syndrome_of(AethKind::RnrNak { timer: 12 }),
            msn: 0x10203,
        });
        let n = build_packet(&a, &[], &mut out).unwrap();
        assert_eq!(&out[12..16], &[0x2c, 0x01, 0x02, 0x03]);
        let p = parse_packet(&out[..n]).unwrap();
        assert_eq!(p.hdrs.aeth.unwrap().kind(), AethKind::RnrNak { timer: 12 });
    }

    #[test]
    fn xrc_send_and_write() {
        // XRC SEND ONLY with immediate to SRQ 0x123456: BTH | XRCETH | ImmDt | payload.
        let mut h = Headers::new(Bth::new(Opcode(0xa5), 0x11, Psn::new(3)));
        h.xrceth = Some(0xab12_3456); // the reserved byte is written as 0
        h.imm = Some(0x0102_0304);
        let mut out = [0u8; 64];
        let n = build_packet(&h, b"abcd", &mut out).unwrap();
        assert_eq!(n, 12 + 4 + 4 + 4 + 4);
        assert_eq!(&out[12..20], &[0, 0x12, 0x34, 0x56, 1, 2, 3, 4]);
        let p = parse_packet(&out[..n]).unwrap();
        assert_eq!(p.hdrs.xrceth, Some(0x12_3456));
        assert_eq!(p.hdrs.imm, Some(0x0102_0304));
        assert_eq!(p.payload(&out[..n]), Some(&b"abcd"[..]));
        // The reserved byte is ignored on receive.
        out[12] = 0xff;
        assert_eq!(
            parse_packet(&out[..n]).unwrap().hdrs.xrceth,
            Some(0x12_3456)
        );
        // XRCETH comes before the RETH.
        let mut w = Headers::new(Bth::new(Opcode(0xaa), 1, Psn::new(0)));
        w.xrceth = Some(7);
        w.reth = Some(Reth {
            va: 0x10,
            rkey: 0x20,
            len: 0,
        });
        let n = build_packet(&w, &[], &mut out).unwrap();
        assert_eq!(&out[12..16], &[0, 0, 0, 7]);
        assert_eq!(&out[16..24], &[0, 0, 0, 0, 0, 0, 0, 0x10]);
        assert_eq!(parse_packet(&out[..n]).unwrap().hdrs, w);
        // An XRC request without its XRCETH, an RC request with one, an XRC ACK with one.
        let mut miss = w;
        miss.xrceth = None;
        assert_eq!(
            build_packet(&miss, &[], &mut out),
            Err(BuildError::MissingHeader)
        );
        let mut rc = Headers::new(Bth::new(Opcode::RC_SEND_ONLY, 1, Psn::new(0)));
        rc.xrceth = Some(1);
        assert_eq!(
            build_packet(&rc, &[], &mut out),
            Err(BuildError::UnexpectedHeader)
        );
        let mut ack = Headers::new(Bth::new(Opcode::XRC_ACKNOWLEDGE, 1, Psn::new(0)));
        ack.aeth = Some(Aeth::default());
        let n = build_packet(&ack, &[], &mut out).unwrap();
        assert_eq!(n, 12 + 4 + 4);
        ack.xrceth = Some(1);
        assert_eq!(
            build_packet(&ack, &[], &mut out),
            Err(BuildError::UnexpectedHeader)
        );
        // Truncated inside the XRCETH.
        let n = build_packet(&h, &[], &mut out).unwrap();
        assert_eq!(parse_packet(&out[..n - 5]), Err(ParseError::Truncated));
        // The largest header: XRC CompareSwap.
        let mut cs = Headers::new(Bth::new(Opcode::XRC_COMPARE_SWAP, 1, Psn::new(0)));
        cs.xrceth = Some(1);
        cs.atomic = Some(AtomicEth::default());
        assert_eq!(build_headers(&cs, 0, &mut out), Ok(MAX_HDR_LEN));
    }

    #[test]
    fn malformed() {
        let mut good = [0u8; 64];
        let h = Headers::new(Bth::new(Opcode::RC_SEND_MIDDLE, 1, Psn::new(0)));
        let n = build_packet(&h, &[1, 2, 3, 4], &mut good).unwrap();
        assert!(parse_packet(&good[..n]).is_ok());
        assert_eq!(parse_packet(&good[..11]), Err(ParseError::Truncated));
        assert_eq!(parse_packet(&good[..15]), Err(ParseError::Truncated));
        let mut b = good;
        b[1] |= 1;
        assert_eq!(parse_packet(&b[..n]), Err(ParseError::BadVersion(1)));
        let mut b = good;
        b[0] = 0x15;
        assert_eq!(parse_packet(&b[..n]), Err(ParseError::UnknownOpcode(0x15)));
        let mut b = good;
        b[1] |= 0x10; // pad on a middle packet
        assert_eq!(parse_packet(&b[..n]), Err(ParseError::BadPad));
        // ACK with payload
        let mut a = Headers::new(Bth::new(Opcode::RC_ACKNOWLEDGE, 1, Psn::new(0)));
        a.aeth = Some(Aeth::default());
        let n = build_packet(&a, &[], &mut good).unwrap();
        let mut big = [0u8; 64];
        big[..n - 4].copy_from_slice(&good[..n - 4]);
        assert_eq!(
            parse_packet(&big[..n + 4]),
            Err(ParseError::UnexpectedPayload)
        );
        // atomic write with 4 bytes
        let mut aw = Headers::new(Bth::new(Opcode::RC_ATOMIC_WRITE, 1, Psn::new(0)));
        aw.reth = Some(Reth::default());
        assert_eq!(
            build_packet(&aw, &[0; 4], &mut good),
            Err(BuildError::BadPayloadLength)
        );
        let n = build_packet(&aw, &[0; 8], &mut good).unwrap();
        assert!(parse_packet(&good[..n]).is_ok());
        assert_eq!(
            parse_packet(&good[..n - 4]),
            Err(ParseError::BadPayloadLength)
        );
        // header mismatch on build
        let mut bad = Headers::new(Bth::new(Opcode::RC_SEND_ONLY, 1, Psn::new(0)));
        bad.reth = Some(Reth::default());
        assert_eq!(
            build_packet(&bad, &[], &mut good),
            Err(BuildError::UnexpectedHeader)
        );
        let miss = Headers::new(Bth::new(Opcode::RC_READ_REQUEST, 1, Psn::new(0)));
        assert_eq!(
            build_packet(&miss, &[], &mut good),
            Err(BuildError::MissingHeader)
        );
        assert_eq!(
            build_packet(&h, &[0; 60], &mut good),
            Err(BuildError::BufferTooSmall)
        );
    }
}
