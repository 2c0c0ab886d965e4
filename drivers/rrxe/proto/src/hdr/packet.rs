// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! A whole IB packet: the headers an opcode carries, [`parse_packet`] and
//! [`build_headers`] / [`build_packet`].

use super::super::opcode::{HdrSet, OpKind, Opcode, OpcodeInfo, PayloadRule, BTH_LEN};
use super::cursor::{Rd, Wr};
use super::{
    Aeth, AtomicAckEth, AtomicEth, Bth, BuildError, Deth, Feth, ParseError, Reth, ICRC_LEN,
};

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

/// The checks every packet passes before anything else is read: a BTH of version 0 with
/// a known opcode, and room for that opcode's headers and the ICRC. Returns the BTH, the
/// opcode's description and the headers+ICRC length.
fn check_head(buf: &[u8]) -> Result<(Bth, OpcodeInfo, usize), ParseError> {
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
    Ok((bth, info, min))
}

/// The BTH of a packet (`buf` as for [`parse_packet`]), for the receive path to pick the
/// destination QP; the QP's run then parses the packet once, whole. It fails exactly as
/// [`parse_packet`] does on a truncated packet, a BTH version other than 0 or an unknown
/// opcode, and succeeds wherever [`parse_packet`] does, with the same BTH; the checks
/// [`parse_packet`] adds (pad, payload length by opcode) are left to it.
pub fn peek_bth(buf: &[u8]) -> Result<Bth, ParseError> {
    check_head(buf).map(|(bth, _, _)| bth)
}

/// Parses an IB packet (`buf` = UDP payload: BTH ... ICRC).
pub fn parse_packet(buf: &[u8]) -> Result<Packet, ParseError> {
    let (bth, info, min) = check_head(buf)?;
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
/// zeroed ICRC placeholder (fill it with [`super::super::icrc`]). Returns the total
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
