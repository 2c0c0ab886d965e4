// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! UD multicast: which GIDs are multicast groups, the Ethernet and IPv4 addresses a
//! group's packets carry, and the bookkeeping of the QPs attached to a group and of a
//! device's limits (`max_mcast_grp`, `max_mcast_qp_attach`, `max_total_mcast_qp_attach`).
//!
//! A multicast packet carries the destination QPN [`MULTICAST_QPN`] (IBTA 9.2: the
//! "permissive" QPN) and is delivered to every QP attached to the group its destination
//! address names, as rdma_rxe's `rxe_rcv_mcast_pkt` does. The driver keeps its groups in a
//! tree and a [`Group`] per entry; everything here is O([`MAX_QP_ATTACH`]) at most.

/// The destination QPN of a multicast packet (`IB_MULTICAST_QPN`).
pub const MULTICAST_QPN: u32 = 0x00ff_ffff;

/// Most multicast groups per device (`max_mcast_grp`; rdma_rxe's `RXE_MAX_MCAST_GRP`).
pub const MAX_GROUPS: u32 = 8192;
/// Most QPs attached to one group (`max_mcast_qp_attach`; rdma_rxe's
/// `RXE_MAX_MCAST_QP_ATTACH`). It also bounds the copies one received packet makes.
pub const MAX_QP_ATTACH: usize = 56;
/// Most attachments per device, all groups together (`max_total_mcast_qp_attach`;
/// rdma_rxe's `RXE_MAX_TOT_MCAST_QP_ATTACH`).
pub const MAX_TOTAL_ATTACH: u32 = 0x70000;

const V4MAPPED: [u8; 12] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/// Whether `gid` is a multicast GID (the core's `rdma_is_multicast_addr`): IPv6 multicast
/// (`ff00::/8`), or an IPv4-mapped address in `224.0.0.0/4`.
pub fn is_mgid(gid: &[u8; 16]) -> bool {
    gid[0] == 0xff || mgid_ipv4(gid).is_some()
}

/// The IPv4 group of an IPv4-mapped multicast GID (`::ffff:224.0.0.0/100`), `None` for
/// any other GID.
pub fn mgid_ipv4(gid: &[u8; 16]) -> Option<[u8; 4]> {
    if gid[..12] != V4MAPPED || gid[12] & 0xf0 != 0xe0 {
        return None;
    }
    Some([gid[12], gid[13], gid[14], gid[15]])
}

/// The Ethernet address a group's frames are sent to: `01:00:5e` and the low 23 bits of
/// an IPv4 group (RFC 1112, the kernel's `ip_eth_mc_map`), `33:33` and the low 32 bits of
/// an IPv6 group (RFC 2464, `ipv6_eth_mc_map`). `None` for a GID that is not multicast.
/// (rdma_rxe maps every GID, IPv4-mapped ones too, as IPv6: `33:33:e0:..`; the IPv4
/// group's frames do not carry that address.)
pub fn mgid_mac(gid: &[u8; 16]) -> Option<[u8; 6]> {
    if let Some(a) = mgid_ipv4(gid) {
        return Some([0x01, 0x00, 0x5e, a[1] & 0x7f, a[2], a[3]]);
    }
    (gid[0] == 0xff).then_some([0x33, 0x33, gid[12], gid[13], gid[14], gid[15]])
}

/// Why an attachment is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The device has [`MAX_GROUPS`] groups already.
    Groups,
    /// The group has [`MAX_QP_ATTACH`] QPs already.
    QpsPerGroup,
    /// The device has [`MAX_TOTAL_ATTACH`] attachments already.
    Total,
}

/// The QPs attached to one group, in the order they were attached.
///
/// INVARIANT: `n <= MAX_QP_ATTACH`; `qpns[..n]` holds distinct QPNs.
#[derive(Clone, Debug)]
pub struct Group {
    qpns: [u32; MAX_QP_ATTACH],
    n: usize,
}

impl Default for Group {
    fn default() -> Self {
        Self::new()
    }
}

impl Group {
    /// A group with no QP.
    pub const fn new() -> Self {
        Self {
            qpns: [0; MAX_QP_ATTACH],
            n: 0,
        }
    }

    /// The attached QPs.
    pub fn qpns(&self) -> &[u32] {
        self.qpns.get(..self.n).unwrap_or(&[])
    }

    /// Whether no QP is attached.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Whether `qpn` is attached.
    pub fn has(&self, qpn: u32) -> bool {
        self.qpns().contains(&qpn)
    }

    /// Attaches `qpn`: `Ok(true)` if it was not attached, `Ok(false)` if it was (attaching
    /// twice is not an error, as in rdma_rxe), [`Refusal::QpsPerGroup`] when full.
    pub fn attach(&mut self, qpn: u32) -> Result<bool, Refusal> {
        if self.has(qpn) {
            return Ok(false);
        }
        let slot = self.qpns.get_mut(self.n).ok_or(Refusal::QpsPerGroup)?;
        *slot = qpn;
        self.n += 1;
        Ok(true)
    }

    /// Detaches `qpn`; `false` if it was not attached. The others keep their order.
    pub fn detach(&mut self, qpn: u32) -> bool {
        let Some(i) = self.qpns().iter().position(|&q| q == qpn) else {
            return false;
        };
        let n = self.n;
        if let Some(s) = self.qpns.get_mut(i..n) {
            s.rotate_left(1);
        }
        self.n = n - 1;
        true
    }
}

/// A device's totals against [`MAX_GROUPS`] and [`MAX_TOTAL_ATTACH`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Groups with at least one QP.
    pub groups: u32,
    /// Attachments, all groups together.
    pub attached: u32,
}

impl Totals {
    /// Whether one more attachment is allowed, to a new group (`new_group`) or to one that
    /// exists.
    pub fn admit(&self, new_group: bool) -> Result<(), Refusal> {
        if new_group && self.groups >= MAX_GROUPS {
            return Err(Refusal::Groups);
        }
        if self.attached >= MAX_TOTAL_ATTACH {
            return Err(Refusal::Total);
        }
        Ok(())
    }

    /// Counts an attachment [`Totals::admit`] allowed.
    pub fn attached(&mut self, new_group: bool) {
        self.attached = self.attached.saturating_add(1);
        if new_group {
            self.groups = self.groups.saturating_add(1);
        }
    }

    /// Counts a detachment; `group_gone` when it left its group empty.
    pub fn detached(&mut self, group_gone: bool) {
        self.attached = self.attached.saturating_sub(1);
        if group_gone {
            self.groups = self.groups.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(a: [u8; 4]) -> [u8; 16] {
        let mut g = [0u8; 16];
        g[10] = 0xff;
        g[11] = 0xff;
        g[12..].copy_from_slice(&a);
        g
    }

    #[test]
    fn multicast_gids() {
        assert!(is_mgid(&v4([224, 0, 0, 1])));
        assert!(is_mgid(&v4([239, 255, 1, 2])));
        assert!(!is_mgid(&v4([240, 0, 0, 1])));
        assert!(!is_mgid(&v4([192, 168, 1, 1])));
        let mut g6 = [0u8; 16];
        g6[0] = 0xff;
        g6[1] = 0x0e;
        g6[15] = 1;
        assert!(is_mgid(&g6));
        // 224/4 in a plain (not mapped) IPv6 address is not multicast.
        let mut plain = [0u8; 16];
        plain[12] = 224;
        assert!(!is_mgid(&plain));
        assert_eq!(mgid_ipv4(&v4([239, 1, 2, 3])), Some([239, 1, 2, 3]));
        assert_eq!(mgid_ipv4(&g6), None);
    }

    #[test]
    fn macs() {
        // The 24th bit of the group is not in the MAC (RFC 1112).
        assert_eq!(
            mgid_mac(&v4([239, 129, 2, 3])),
            Some([0x01, 0x00, 0x5e, 0x01, 0x02, 0x03])
        );
        assert_eq!(
            mgid_mac(&v4([224, 0, 0, 251])),
            Some([0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb])
        );
        let mut g6 = [0u8; 16];
        g6[0] = 0xff;
        g6[1] = 0x02;
        g6[12..].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(mgid_mac(&g6), Some([0x33, 0x33, 0xde, 0xad, 0xbe, 0xef]));
        assert_eq!(mgid_mac(&v4([10, 0, 0, 1])), None);
    }

    #[test]
    fn group_attach_detach() {
        let mut g = Group::new();
        assert!(g.is_empty());
        assert_eq!(g.attach(17), Ok(true));
        assert_eq!(g.attach(18), Ok(true));
        assert_eq!(g.attach(17), Ok(false));
        assert_eq!(g.qpns(), &[17, 18]);
        assert!(!g.detach(99));
        assert!(g.detach(17));
        assert_eq!(g.qpns(), &[18]);
        assert!(!g.detach(17));
        assert!(g.detach(18));
        assert!(g.is_empty());
    }

    #[test]
    fn group_full() {
        let mut g = Group::new();
        for q in 0..MAX_QP_ATTACH as u32 {
            assert_eq!(g.attach(100 + q), Ok(true));
        }
        assert_eq!(g.attach(5), Err(Refusal::QpsPerGroup));
        // Already attached: still fine when full.
        assert_eq!(g.attach(100), Ok(false));
        assert!(g.detach(100 + 7));
        assert_eq!(g.attach(5), Ok(true));
        assert_eq!(g.qpns().len(), MAX_QP_ATTACH);
        assert_eq!(g.qpns().last(), Some(&5));
    }

    #[test]
    fn totals() {
        let mut t = Totals::default();
        assert_eq!(t.admit(true), Ok(()));
        t.attached(true);
        t.attached(false);
        assert_eq!(
            t,
            Totals {
                groups: 1,
                attached: 2
            }
        );
        t.detached(false);
        t.detached(true);
        assert_eq!(t, Totals::default());
        // Never below zero.
        t.detached(true);
        assert_eq!(t, Totals::default());
        let full = Totals {
            groups: MAX_GROUPS,
            attached: 5,
        };
        assert_eq!(full.admit(true), Err(Refusal::Groups));
        assert_eq!(full.admit(false), Ok(()));
        let all = Totals {
            groups: 1,
            attached: MAX_TOTAL_ATTACH,
        };
        assert_eq!(all.admit(false), Err(Refusal::Total));
    }
}
