// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! RoCEv2 Invariant CRC.
//!
//! The ICRC is a CRC-32 (IEEE, reflected; see [`super::crc`]) computed over:
//!
//! 1. 8 bytes of `0xFF` (the masked LRH of native IB), starting from a CRC
//!    register of `!0` (the register is then `0xDEBB20E3`, rxe's seed);
//! 2. the IP header with variant fields replaced by ones: IPv4 TOS (byte 1),
//!    TTL (byte 8) and header checksum (bytes 10..12); IPv6 traffic class and
//!    flow label (the low nibble of byte 0 and bytes 1..4) and hop limit
//!    (byte 7);
//! 3. the UDP header with its checksum (bytes 6..8) replaced by ones;
//! 4. the BTH with byte 4 (FECN, BECN and the 6 reserved bits before the
//!    destination QP) replaced by ones;
//! 5. the rest of the IB packet: extension headers, payload and pad.
//!
//! The result is complemented and transmitted least-significant byte first
//! (like the Ethernet FCS): wire bytes are `(!crc).to_le_bytes()`. This is
//! what Linux rdma_rxe produces on little-endian hosts and what RoCE NICs
//! expect. The IPv4 header must be the 20-byte form (RoCEv2 uses no options).

use super::crc::Crc32;
use super::net::{IPV4_HDR_LEN, IPV6_HDR_LEN, UDP_HDR_LEN};
use super::opcode::BTH_LEN;

/// Errors from the ICRC helpers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IcrcError {
    /// A header buffer was too short.
    Truncated,
}

/// Incremental ICRC computation (for non-contiguous packet buffers).
#[derive(Clone, Copy, Debug)]
pub struct Icrc<'c, C: Crc32 + ?Sized> {
    crc: &'c C,
    reg: u32,
}

impl<'c, C: Crc32 + ?Sized> Icrc<'c, C> {
    fn start(crc: &'c C) -> Self {
        Icrc {
            crc,
            reg: crc.update(!0, &[0xff; 8]),
        }
    }

    fn udp_bth(mut self, udp: &[u8], bth: &[u8]) -> Result<Self, IcrcError> {
        let mut u =
            <[u8; UDP_HDR_LEN]>::try_from(udp.get(..UDP_HDR_LEN).ok_or(IcrcError::Truncated)?)
                .map_err(|_| IcrcError::Truncated)?;
        u[6] = 0xff;
        u[7] = 0xff;
        let mut b = <[u8; BTH_LEN]>::try_from(bth.get(..BTH_LEN).ok_or(IcrcError::Truncated)?)
            .map_err(|_| IcrcError::Truncated)?;
        b[4] = 0xff;
        self.reg = self.crc.update(self.reg, &u);
        self.reg = self.crc.update(self.reg, &b);
        Ok(self)
    }

    /// Starts an ICRC over an IPv4 packet: `ip` = 20-byte IPv4 header,
    /// `udp` = UDP header, `bth` = the 12-byte BTH.
    pub fn begin_v4(crc: &'c C, ip: &[u8], udp: &[u8], bth: &[u8]) -> Result<Self, IcrcError> {
        let mut s = Self::start(crc);
        let mut h =
            <[u8; IPV4_HDR_LEN]>::try_from(ip.get(..IPV4_HDR_LEN).ok_or(IcrcError::Truncated)?)
                .map_err(|_| IcrcError::Truncated)?;
        h[1] = 0xff;
        h[8] = 0xff;
        h[10] = 0xff;
        h[11] = 0xff;
        s.reg = crc.update(s.reg, &h);
        s.udp_bth(udp, bth)
    }

    /// Starts an ICRC over an IPv6 packet: `ip` = 40-byte IPv6 header.
    pub fn begin_v6(crc: &'c C, ip: &[u8], udp: &[u8], bth: &[u8]) -> Result<Self, IcrcError> {
        let mut s = Self::start(crc);
        let mut h =
            <[u8; IPV6_HDR_LEN]>::try_from(ip.get(..IPV6_HDR_LEN).ok_or(IcrcError::Truncated)?)
                .map_err(|_| IcrcError::Truncated)?;
        h[0] |= 0x0f;
        h[1] = 0xff;
        h[2] = 0xff;
        h[3] = 0xff;
        h[7] = 0xff;
        s.reg = crc.update(s.reg, &h);
        s.udp_bth(udp, bth)
    }

    /// Starts the ICRC of a contiguous datagram (`ip_pkt` from the IP header on) over its
    /// IP, UDP and BTH headers, for a caller that feeds the rest ([`Icrc::update`]) itself.
    pub fn begin(crc: &'c C, ip_pkt: &[u8], v6: bool) -> Result<Self, IcrcError> {
        let iplen = if v6 { IPV6_HDR_LEN } else { IPV4_HDR_LEN };
        let ib_off = iplen + UDP_HDR_LEN;
        let ip = ip_pkt.get(..iplen).ok_or(IcrcError::Truncated)?;
        let udp = ip_pkt.get(iplen..ib_off).ok_or(IcrcError::Truncated)?;
        let bth = ip_pkt.get(ib_off..).ok_or(IcrcError::Truncated)?;
        if v6 {
            Icrc::begin_v6(crc, ip, udp, bth)
        } else {
            Icrc::begin_v4(crc, ip, udp, bth)
        }
    }

    /// Feeds the bytes following the BTH (extension headers, payload, pad).
    pub fn update(&mut self, data: &[u8]) {
        self.reg = self.crc.update(self.reg, data);
    }

    /// The raw CRC register (as [`Crc32::update`] takes it) over what was fed so far, for
    /// an engine that continues it elsewhere (the driver's copy that computes the CRC of
    /// the bytes it copies); [`Icrc::resume`] takes the result back.
    pub fn register(&self) -> u32 {
        self.reg
    }

    /// Continues from `reg`: the register [`Icrc::register`] gave, continued over the
    /// next bytes of the packet elsewhere.
    pub fn resume(&mut self, reg: u32) {
        self.reg = reg;
    }

    /// Finishes: the 4 ICRC bytes in wire order.
    pub fn finish(self) -> [u8; 4] {
        (!self.reg).to_le_bytes()
    }
}

/// Computes the ICRC of a contiguous RoCEv2 datagram starting at the IP
/// header (`ip_pkt`: IP | UDP | IB packet including the 4 ICRC bytes, whose
/// value is ignored). `v6` selects the IP version.
pub fn compute<C: Crc32 + ?Sized>(crc: &C, ip_pkt: &[u8], v6: bool) -> Result<[u8; 4], IcrcError> {
    let iplen = if v6 { IPV6_HDR_LEN } else { IPV4_HDR_LEN };
    let ib = ip_pkt
        .get(iplen + UDP_HDR_LEN..)
        .ok_or(IcrcError::Truncated)?;
    let body_end = ib.len().checked_sub(4).ok_or(IcrcError::Truncated)?;
    let rest = ib.get(BTH_LEN..body_end).ok_or(IcrcError::Truncated)?;
    let mut s = Icrc::begin(crc, ip_pkt, v6)?;
    s.update(rest);
    Ok(s.finish())
}

/// Computes and stores the ICRC into the last 4 bytes of `ip_pkt`.
pub fn fill<C: Crc32 + ?Sized>(crc: &C, ip_pkt: &mut [u8], v6: bool) -> Result<(), IcrcError> {
    let v = compute(crc, ip_pkt, v6)?;
    let n = ip_pkt.len();
    ip_pkt
        .get_mut(n.checked_sub(4).ok_or(IcrcError::Truncated)?..)
        .ok_or(IcrcError::Truncated)?
        .copy_from_slice(&v);
    Ok(())
}

/// Verifies the ICRC stored in the last 4 bytes of `ip_pkt`.
pub fn verify<C: Crc32 + ?Sized>(crc: &C, ip_pkt: &[u8], v6: bool) -> bool {
    let Ok(v) = compute(crc, ip_pkt, v6) else {
        return false;
    };
    let n = ip_pkt.len();
    match n.checked_sub(4).and_then(|s| ip_pkt.get(s..)) {
        Some(t) => t == v,
        None => false,
    }
}
