// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Where a received packet comes from: the address and partition checks rdma_rxe makes
//! before a packet reaches a QP (`rxe_chk_dgid`, `check_addr` and `check_keys` in
//! rxe_recv.c), as functions of the packet's IP addresses and the QP's path. The driver
//! only extracts the addresses and asks; the Q_Key of UD and GSI packets is checked by the
//! QP itself ([`crate::qp`]).

/// Why a packet was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrDrop {
    /// The destination address is not one of the port's GIDs (`rxe_chk_dgid`).
    Dgid,
    /// RC/UC: the source address, or the IP version, is not the QP's remote end
    /// (`check_addr`).
    SrcAddr,
    /// RC/UC: the destination is one of our addresses, but not the one the QP sends from
    /// (`check_addr`).
    DstAddr,
    /// RC/UC: the QP has no path yet (no address vector: not RTR).
    NoPath,
    /// The P_Key does not match the port's (`check_keys`).
    PKey,
}

/// The IP addresses of a received RoCEv2 packet. IPv4 addresses are in the first 4 bytes,
/// the rest zero (as in the driver's address vectors).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IpAddrs {
    /// IPv6 (else IPv4).
    pub v6: bool,
    /// Source address.
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
}

fn copy_into(dst: &mut [u8; 16], src: Option<&[u8]>) -> Option<()> {
    let src = src?;
    let d = dst.get_mut(..src.len())?;
    super::copy_exact(d, src).then_some(())
}

impl IpAddrs {
    /// The addresses of an IPv4 (20-byte, no options) or IPv6 (40-byte) header; `None` for
    /// anything else.
    pub fn from_ip_header(h: &[u8]) -> Option<Self> {
        let mut a = IpAddrs::default();
        match (h.len(), h.first()? >> 4) {
            (super::net::IPV4_HDR_LEN, 4) => {
                copy_into(&mut a.src, h.get(12..16))?;
                copy_into(&mut a.dst, h.get(16..20))?;
            }
            (super::net::IPV6_HDR_LEN, 6) => {
                a.v6 = true;
                copy_into(&mut a.src, h.get(8..24))?;
                copy_into(&mut a.dst, h.get(24..40))?;
            }
            _ => return None,
        }
        Some(a)
    }

    /// The number of address bytes that count (4 for IPv4, 16 for IPv6).
    fn len(&self) -> usize {
        if self.v6 {
            16
        } else {
            4
        }
    }

    /// The destination as a RoCEv2 GID: an IPv4 address is IPv4-mapped (`::ffff:a.b.c.d`),
    /// as the GID table holds it (`ipv6_addr_set_v4mapped` in `rxe_chk_dgid`).
    pub fn dst_gid(&self) -> [u8; 16] {
        if self.v6 {
            return self.dst;
        }
        let d = self.dst;
        [
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, d[0], d[1], d[2], d[3],
        ]
    }
}

/// A connected QP's path, from its address vector: the address it sends from (its source
/// GID) and the address it sends to (the destination GID).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Path {
    /// IPv6 (else IPv4; addresses in the first 4 bytes).
    pub v6: bool,
    /// Our address (the QP's source GID).
    pub local: [u8; 16],
    /// The remote end's address (the QP's destination GID).
    pub remote: [u8; 16],
}

/// The destination check every packet passes first (`rxe_chk_dgid`): a packet looped back
/// inside one device (source and destination address equal, rxe's `RXE_LOOPBACK_MASK`) and
/// a multicast destination are accepted as rdma_rxe accepts them; any other destination
/// must be a RoCEv2 GID of the receiving port, which `in_gid_table` looks up.
pub fn check_dgid(
    a: &IpAddrs,
    loopback: bool,
    in_gid_table: impl FnOnce(&[u8; 16]) -> bool,
) -> Result<(), AddrDrop> {
    if loopback {
        return Ok(());
    }
    let gid = a.dst_gid();
    // rdma_is_multicast_addr: IPv6 multicast, or IPv4-mapped 224.0.0.0/4.
    if super::mcast::is_mgid(&gid) {
        return Ok(());
    }
    if in_gid_table(&gid) {
        Ok(())
    } else {
        Err(AddrDrop::Dgid)
    }
}

/// The default partition key, full member: the only entry of an rrxe (and rdma_rxe) port's
/// P_Key table.
pub const DEFAULT_PKEY: u16 = 0xffff;

/// IBTA 10.9.3 (rdma_rxe's `pkey_match`): two P_Keys match when their low 15 bits are equal
/// and not zero (the invalid key), and at least one of them is a full member (bit 15).
pub fn pkey_match(a: u16, b: u16) -> bool {
    let (ka, kb) = (a & 0x7fff, b & 0x7fff);
    ka != 0 && ka == kb && (a | b) & 0x8000 != 0
}

/// The checks a packet for an existing QP passes before the QP sees it, in rdma_rxe's
/// order (`hdr_check`: `check_addr`, then `check_keys`):
///
/// * a connected (RC/UC) QP takes packets only from its path: same IP version, the source
///   address is the QP's remote address and the destination the QP's own address
///   (`check_addr`). Datagram QPs (UD, GSI) take them from anyone. The UDP source port is
///   not checked: RoCEv2 leaves it free for flow entropy, and rxe does not check it either.
/// * the BTH P_Key matches the port's one default key (`check_keys`), for every QP type.
///
/// `path` is `None` while a connected QP has no address vector yet.
pub fn check_qp(
    connected: bool,
    a: &IpAddrs,
    path: Option<&Path>,
    pkey: u16,
) -> Result<(), AddrDrop> {
    if connected {
        let p = path.ok_or(AddrDrop::NoPath)?;
        let n = a.len();
        if p.v6 != a.v6 || p.remote.get(..n) != a.src.get(..n) {
            return Err(AddrDrop::SrcAddr);
        }
        if p.local.get(..n) != a.dst.get(..n) {
            return Err(AddrDrop::DstAddr);
        }
    }
    if !pkey_match(pkey, DEFAULT_PKEY) {
        return Err(AddrDrop::PKey);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(a: [u8; 4]) -> [u8; 16] {
        let mut x = [0u8; 16];
        x[..4].copy_from_slice(&a);
        x
    }

    fn v4_hdr(src: [u8; 4], dst: [u8; 4]) -> [u8; 20] {
        let mut h = [0u8; 20];
        h[0] = 0x45;
        h[9] = 17;
        h[12..16].copy_from_slice(&src);
        h[16..20].copy_from_slice(&dst);
        h
    }

    fn path4() -> Path {
        Path {
            v6: false,
            local: v4([10, 77, 0, 1]),
            remote: v4([10, 77, 0, 2]),
        }
    }

    #[test]
    fn parses_headers() {
        let a = IpAddrs::from_ip_header(&v4_hdr([10, 77, 0, 2], [10, 77, 0, 1])).unwrap();
        assert_eq!(
            a,
            IpAddrs {
                v6: false,
                src: v4([10, 77, 0, 2]),
                dst: v4([10, 77, 0, 1])
            }
        );
        assert_eq!(
            a.dst_gid(),
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 77, 0, 1]
        );
        let mut h6 = [0u8; 40];
        h6[0] = 0x60;
        h6[8..24].copy_from_slice(&[1; 16]);
        h6[24..40].copy_from_slice(&[2; 16]);
        let b = IpAddrs::from_ip_header(&h6).unwrap();
        assert_eq!(
            (b.v6, b.src, b.dst, b.dst_gid()),
            (true, [1; 16], [2; 16], [2; 16])
        );
        // Lengths that do not fit the version, options, short buffers, other versions.
        assert_eq!(IpAddrs::from_ip_header(&h6[..20]), None);
        assert_eq!(IpAddrs::from_ip_header(&[0x46; 24]), None);
        assert_eq!(IpAddrs::from_ip_header(&[]), None);
        let mut h5 = v4_hdr([1; 4], [2; 4]);
        h5[0] = 0x55;
        assert_eq!(IpAddrs::from_ip_header(&h5), None);
    }

    #[test]
    fn connected_qp_takes_its_path_only() {
        let p = path4();
        let good = IpAddrs {
            v6: false,
            src: v4([10, 77, 0, 2]),
            dst: v4([10, 77, 0, 1]),
        };
        assert_eq!(check_qp(true, &good, Some(&p), 0xffff), Ok(()));
        // Bytes past an IPv4 address do not matter.
        let mut junk = good;
        junk.src[4..].fill(0xaa);
        assert_eq!(check_qp(true, &junk, Some(&p), 0xffff), Ok(()));
        // A second address of the peer host.
        let spoof = IpAddrs {
            src: v4([10, 77, 0, 102]),
            ..good
        };
        assert_eq!(
            check_qp(true, &spoof, Some(&p), 0xffff),
            Err(AddrDrop::SrcAddr)
        );
        // To another of our addresses.
        let other = IpAddrs {
            dst: v4([10, 77, 0, 9]),
            ..good
        };
        assert_eq!(
            check_qp(true, &other, Some(&p), 0xffff),
            Err(AddrDrop::DstAddr)
        );
        // The right bytes over the other IP version.
        let v6 = IpAddrs { v6: true, ..good };
        assert_eq!(
            check_qp(true, &v6, Some(&p), 0xffff),
            Err(AddrDrop::SrcAddr)
        );
        // Source checked before P_Key (rxe: check_addr, then check_keys).
        assert_eq!(
            check_qp(true, &spoof, Some(&p), 0x1234),
            Err(AddrDrop::SrcAddr)
        );
        assert_eq!(check_qp(true, &good, Some(&p), 0x1234), Err(AddrDrop::PKey));
        assert_eq!(check_qp(true, &good, None, 0xffff), Err(AddrDrop::NoPath));
    }

    #[test]
    fn ipv6_path() {
        let p = Path {
            v6: true,
            local: [1; 16],
            remote: [2; 16],
        };
        let mut a = IpAddrs {
            v6: true,
            src: [2; 16],
            dst: [1; 16],
        };
        assert_eq!(check_qp(true, &a, Some(&p), 0xffff), Ok(()));
        a.src[15] = 3;
        assert_eq!(check_qp(true, &a, Some(&p), 0xffff), Err(AddrDrop::SrcAddr));
        a.src = [2; 16];
        a.dst[0] = 0xfe;
        assert_eq!(check_qp(true, &a, Some(&p), 0xffff), Err(AddrDrop::DstAddr));
        // An IPv4 packet whose 4 bytes match the start of the IPv6 path.
        let b = IpAddrs {
            v6: false,
            src: v4([2; 4]),
            dst: v4([1; 4]),
        };
        assert_eq!(check_qp(true, &b, Some(&p), 0xffff), Err(AddrDrop::SrcAddr));
    }

    #[test]
    fn datagram_qp_takes_anyone_with_the_pkey() {
        let a = IpAddrs {
            v6: false,
            src: v4([192, 0, 2, 1]),
            dst: v4([10, 77, 0, 1]),
        };
        assert_eq!(check_qp(false, &a, None, 0xffff), Ok(()));
        assert_eq!(check_qp(false, &a, Some(&path4()), 0x7fff), Ok(()));
        assert_eq!(check_qp(false, &a, None, 0x8001), Err(AddrDrop::PKey));
        assert_eq!(check_qp(false, &a, None, 0), Err(AddrDrop::PKey));
    }

    #[test]
    fn pkey_rules() {
        // rxe's pkey_match against the default full-member key.
        assert!(pkey_match(0xffff, 0xffff));
        assert!(pkey_match(0x7fff, 0xffff)); // limited member meets a full member
        assert!(!pkey_match(0x7fff, 0x7fff)); // two limited members
        assert!(!pkey_match(0x8000, 0x8000)); // the invalid key
        assert!(!pkey_match(0x0000, 0x8000));
        assert!(!pkey_match(0x8001, 0xffff));
        assert!(pkey_match(0x8001, 0x0001));
    }

    #[test]
    fn destination_gid() {
        let a = IpAddrs {
            v6: false,
            src: v4([10, 77, 0, 2]),
            dst: v4([10, 77, 0, 1]),
        };
        let mut asked = None;
        assert_eq!(
            check_dgid(&a, false, |g| {
                asked = Some(*g);
                true
            }),
            Ok(())
        );
        assert_eq!(asked, Some(a.dst_gid()));
        assert_eq!(check_dgid(&a, false, |_| false), Err(AddrDrop::Dgid));
        // Broadcast is not multicast: it must be in the table (it never is).
        let bcast = IpAddrs {
            dst: v4([10, 77, 0, 255]),
            ..a
        };
        assert_eq!(check_dgid(&bcast, false, |_| false), Err(AddrDrop::Dgid));
        // Looped back inside the device, and multicast, are not looked up (as rxe).
        assert_eq!(check_dgid(&a, true, |_| panic!("looked up")), Ok(()));
        let mc4 = IpAddrs {
            dst: v4([239, 1, 2, 3]),
            ..a
        };
        assert_eq!(check_dgid(&mc4, false, |_| panic!("looked up")), Ok(()));
        let mut mc6 = IpAddrs { v6: true, ..a };
        mc6.dst = [0xff; 16];
        assert_eq!(check_dgid(&mc6, false, |_| panic!("looked up")), Ok(()));
        // 224/4 in a plain IPv6 address is not multicast.
        let mut u6 = mc6;
        u6.dst = [0; 16];
        u6.dst[12] = 0xe0;
        assert_eq!(check_dgid(&u6, false, |_| false), Err(AddrDrop::Dgid));
    }
}
