// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The IPv4 / IPv6 / UDP headers of a RoCEv2 packet (only what the protocol
//! core needs: building them for the ICRC and for simulation, and locating
//! the IB packet inside a received IP datagram).

/// IANA UDP destination port of RoCEv2.
pub const ROCEV2_UDP_PORT: u16 = 4791;
/// IPv4 header length (RoCEv2 never uses IPv4 options).
pub const IPV4_HDR_LEN: usize = 20;
/// IPv6 header length.
pub const IPV6_HDR_LEN: usize = 40;
/// UDP header length.
pub const UDP_HDR_LEN: usize = 8;

/// Errors from [`locate_ib`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetError {
    /// Buffer shorter than the headers.
    Truncated,
    /// Not IPv4 / IPv6.
    BadVersion,
    /// IPv4 with options (IHL != 5).
    Ipv4Options,
    /// Not UDP.
    NotUdp,
    /// UDP destination port is not 4791.
    NotRoce,
    /// UDP / IP length fields inconsistent with the buffer.
    BadLength,
}

/// IP version of a RoCEv2 packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpVersion {
    /// IPv4 (20-byte header).
    V4,
    /// IPv6 (40-byte header).
    V6,
}

impl IpVersion {
    /// IP header length.
    pub const fn hdr_len(self) -> usize {
        match self {
            IpVersion::V4 => IPV4_HDR_LEN,
            IpVersion::V6 => IPV6_HDR_LEN,
        }
    }
}

/// Result of [`locate_ib`]: where the pieces of a RoCEv2 datagram are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoceLayout {
    /// IP version.
    pub ip: IpVersion,
    /// Offset of the UDP header.
    pub udp_off: usize,
    /// Offset of the BTH (start of the IB packet).
    pub ib_off: usize,
    /// Length of the IB packet (BTH .. ICRC inclusive), from the UDP length.
    pub ib_len: usize,
}

fn be16(b: &[u8], off: usize) -> Option<u16> {
    let s = b.get(off..off.checked_add(2)?)?;
    Some(u16::from_be_bytes(<[u8; 2]>::try_from(s).ok()?))
}

/// Locates the IB packet inside an IP datagram (`buf` starts at the IP
/// header). Checks version, protocol, UDP port 4791 and lengths.
pub fn locate_ib(buf: &[u8]) -> Result<RoceLayout, NetError> {
    let v = buf.first().ok_or(NetError::Truncated)? >> 4;
    let (ip, proto) = match v {
        4 => {
            if buf.len() < IPV4_HDR_LEN {
                return Err(NetError::Truncated);
            }
            if buf.first().map(|b| b & 0xf) != Some(5) {
                return Err(NetError::Ipv4Options);
            }
            let tot = usize::from(be16(buf, 2).ok_or(NetError::Truncated)?);
            if tot > buf.len() || tot < IPV4_HDR_LEN + UDP_HDR_LEN {
                return Err(NetError::BadLength);
            }
            (IpVersion::V4, buf.get(9).copied())
        }
        6 => {
            if buf.len() < IPV6_HDR_LEN {
                return Err(NetError::Truncated);
            }
            let pl = usize::from(be16(buf, 4).ok_or(NetError::Truncated)?);
            if pl.saturating_add(IPV6_HDR_LEN) > buf.len() || pl < UDP_HDR_LEN {
                return Err(NetError::BadLength);
            }
            (IpVersion::V6, buf.get(6).copied())
        }
        _ => return Err(NetError::BadVersion),
    };
    if proto != Some(17) {
        return Err(NetError::NotUdp);
    }
    let udp_off = ip.hdr_len();
    let dport = be16(buf, udp_off + 2).ok_or(NetError::Truncated)?;
    if dport != ROCEV2_UDP_PORT {
        return Err(NetError::NotRoce);
    }
    let ulen = usize::from(be16(buf, udp_off + 4).ok_or(NetError::Truncated)?);
    if ulen < UDP_HDR_LEN || udp_off.saturating_add(ulen) > buf.len() {
        return Err(NetError::BadLength);
    }
    Ok(RoceLayout {
        ip,
        udp_off,
        ib_off: udp_off + UDP_HDR_LEN,
        ib_len: ulen - UDP_HDR_LEN,
    })
}

/// Internet checksum (RFC 1071) of `b`.
pub fn inet_checksum(b: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut it = b.chunks_exact(2);
    for c in &mut it {
        let w = u16::from_be_bytes(<[u8; 2]>::try_from(c).unwrap_or([0; 2]));
        sum = sum.wrapping_add(u32::from(w));
    }
    if let Some(&last) = it.remainder().first() {
        sum = sum.wrapping_add(u32::from(last) << 8);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff).wrapping_add(sum >> 16);
    }
    !(sum as u16)
}

/// Writes a 20-byte IPv4 header + 8-byte UDP header for an IB packet of
/// `ib_len` bytes into `out[..28]` (checksum computed, UDP checksum 0).
pub fn write_ipv4_udp(
    out: &mut [u8],
    src: [u8; 4],
    dst: [u8; 4],
    tos: u8,
    ttl: u8,
    sport: u16,
    ib_len: usize,
) -> Option<usize> {
    let udp_len = u16::try_from(ib_len.checked_add(UDP_HDR_LEN)?).ok()?;
    let tot = udp_len.checked_add(IPV4_HDR_LEN as u16)?;
    let o = out.get_mut(..IPV4_HDR_LEN + UDP_HDR_LEN)?;
    o.fill(0);
    let tl = tot.to_be_bytes();
    let ip: [u8; 20] = [
        0x45, tos, tl[0], tl[1], 0, 0, 0x40, 0, ttl, 17, 0, 0, src[0], src[1], src[2], src[3],
        dst[0], dst[1], dst[2], dst[3],
    ];
    let cs = inet_checksum(&ip).to_be_bytes();
    o.get_mut(..20)?.copy_from_slice(&ip);
    o.get_mut(10..12)?.copy_from_slice(&cs);
    let sp = sport.to_be_bytes();
    let dp = ROCEV2_UDP_PORT.to_be_bytes();
    let ul = udp_len.to_be_bytes();
    o.get_mut(20..28)?
        .copy_from_slice(&[sp[0], sp[1], dp[0], dp[1], ul[0], ul[1], 0, 0]);
    Some(IPV4_HDR_LEN + UDP_HDR_LEN)
}

/// Sets the identification of the IPv4 header at `out[..20]` to `id` and its checksum to
/// match. A packet sent as the `id`-th of a chain (Linux's fraglist GSO) gets the head's id
/// plus its index from the stack (`inet_gso_segment`); the ICRC covers the id, so each
/// packet is built with it. `None` if `out` is shorter than the header.
pub fn set_ipv4_id(out: &mut [u8], id: u16) -> Option<()> {
    let h = out.get_mut(..IPV4_HDR_LEN)?;
    h.get_mut(4..6)?.copy_from_slice(&id.to_be_bytes());
    h.get_mut(10..12)?.copy_from_slice(&[0, 0]);
    let cs = inet_checksum(h).to_be_bytes();
    h.get_mut(10..12)?.copy_from_slice(&cs);
    Some(())
}

/// Writes a 40-byte IPv6 header + 8-byte UDP header for an IB packet of
/// `ib_len` bytes into `out[..48]` (UDP checksum 0).
#[allow(clippy::too_many_arguments)]
pub fn write_ipv6_udp(
    out: &mut [u8],
    src: [u8; 16],
    dst: [u8; 16],
    traffic_class: u8,
    flow_label: u32,
    hop_limit: u8,
    sport: u16,
    ib_len: usize,
) -> Option<usize> {
    let udp_len = u16::try_from(ib_len.checked_add(UDP_HDR_LEN)?).ok()?;
    let o = out.get_mut(..IPV6_HDR_LEN + UDP_HDR_LEN)?;
    let w0: u32 = (6 << 28) | (u32::from(traffic_class) << 20) | (flow_label & 0xf_ffff);
    o.get_mut(0..4)?.copy_from_slice(&w0.to_be_bytes());
    o.get_mut(4..6)?.copy_from_slice(&udp_len.to_be_bytes());
    *o.get_mut(6)? = 17;
    *o.get_mut(7)? = hop_limit;
    o.get_mut(8..24)?.copy_from_slice(&src);
    o.get_mut(24..40)?.copy_from_slice(&dst);
    let sp = sport.to_be_bytes();
    let dp = ROCEV2_UDP_PORT.to_be_bytes();
    let ul = udp_len.to_be_bytes();
    o.get_mut(40..48)?
        .copy_from_slice(&[sp[0], sp[1], dp[0], dp[1], ul[0], ul[1], 0, 0]);
    Some(IPV6_HDR_LEN + UDP_HDR_LEN)
}

/// The UDP source port of a QP's packets: RoCEv2 leaves it free for flow entropy, so ECMP
/// and RSS can spread QPs. It is a hash of the QP number and, for a connected QP, the peer's
/// QP number, folded into 0xC000..=0xFFFF as the IBTA's RoCEv2 annex suggests. Both ends
/// of a pair usually allocate QP numbers in the same order, so the two numbers are mixed
/// asymmetrically: a plain XOR would give every such pair the same port.
pub fn udp_sport(qpn: u32, dest_qpn: u32) -> u16 {
    let k = (u64::from(qpn & 0x00ff_ffff) << 24) | u64::from(dest_qpn & 0x00ff_ffff);
    // Fibonacci hashing: the top bits of the product depend on every input bit.
    let h = k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 50;
    0xc000 | h as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sport_spreads_symmetric_pairs() {
        let mut seen = std::collections::BTreeSet::new();
        for q in 17..17 + 64 {
            let p = udp_sport(q, q);
            assert!(p >= 0xc000);
            seen.insert(p);
        }
        // 64 pairs numbered alike on both ends (perftest -q 64 between twin hosts).
        assert!(seen.len() >= 60, "{} distinct ports", seen.len());
        assert_ne!(udp_sport(20, 21), udp_sport(21, 20));
        assert_eq!(udp_sport(5, 9), udp_sport(5, 9));
    }

    #[test]
    fn v4_roundtrip() {
        let mut b = [0u8; 28 + 16];
        write_ipv4_udp(&mut b, [10, 0, 0, 1], [10, 0, 0, 2], 0, 64, 0xc000, 16).unwrap();
        assert_eq!(inet_checksum(&b[..20]), 0);
        let l = locate_ib(&b).unwrap();
        assert_eq!(
            (l.ip, l.udp_off, l.ib_off, l.ib_len),
            (IpVersion::V4, 20, 28, 16)
        );
        let mut c = b;
        c[23] = 1;
        assert_eq!(locate_ib(&c), Err(NetError::NotRoce));
        assert_eq!(locate_ib(&b[..27]), Err(NetError::BadLength));
    }

    #[test]
    fn v4_id() {
        let mut b = [0u8; 28 + 16];
        write_ipv4_udp(&mut b, [10, 0, 0, 1], [10, 0, 0, 2], 0, 64, 0xc000, 16).unwrap();
        set_ipv4_id(&mut b, 0x1234).unwrap();
        assert_eq!(&b[4..6], &[0x12, 0x34]);
        assert_eq!(inet_checksum(&b[..20]), 0);
        assert_eq!(set_ipv4_id(&mut b[..19], 1), None);
    }

    #[test]
    fn v6_roundtrip() {
        let mut b = [0u8; 48 + 20];
        write_ipv6_udp(&mut b, [1; 16], [2; 16], 0x12, 0x34567, 3, 1, 20).unwrap();
        let l = locate_ib(&b).unwrap();
        assert_eq!((l.ip, l.ib_off, l.ib_len), (IpVersion::V6, 48, 20));
        assert_eq!(&b[..4], &[0x61, 0x23, 0x45, 0x67]);
    }
}
