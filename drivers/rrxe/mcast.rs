// SPDX-License-Identifier: GPL-2.0
//! UD multicast: a device's groups (`attach_mcast`, `detach_mcast`) and the delivery of a
//! multicast datagram to every QP attached to its group.
//!
//! A group is named by its multicast GID and the scope of its QPs: the network namespace
//! of a user UD QP ([`Origin::Netns`]), or the device's own netdev for a kernel one
//! ([`Origin::Any`]). Each group joins one netdev to its IP group (IGMP or MLD,
//! [`NetDev::mc_join`]): the device's netdev, or in shared mode the pod's macvlan or
//! ipvlan on it that is in the QP's namespace; the last QP detached leaves it. A received
//! packet with destination QPN [`proto::mcast::MULTICAST_QPN`] is delivered to each QP of
//! the groups of its destination address that joined the netdev it arrived on
//! ([`McastTable::deliver`]), a clone per QP, as rdma_rxe's `rxe_rcv_mcast_pkt` does; two
//! pods on one shared device never get each other's datagrams (each QP's own origin check
//! refuses them too). The limits (`max_mcast_grp`, `max_mcast_qp_attach`,
//! `max_total_mcast_qp_attach`) are [`proto::mcast`]'s constants, rdma_rxe's values; an
//! attachment past one fails with ENOMEM, as in rdma_rxe, and is counted
//! (`mcast_attach_refused`).

use crate::counters::Counter;
use crate::glue::sync::{new_bh_spinlock, BhSpinLock};
use crate::glue::{IbDev, NdevId, NetDevRef, NetnsId, SkBuff};
use crate::proto::addr::IpAddrs;
use crate::proto::mcast::{self, Group, Totals, MAX_QP_ATTACH};
use crate::qp::{Icrc, Origin, MAX_QP};
use kernel::prelude::*;
use kernel::rbtree::{RBTree, RBTreeNodeReservation};
use kernel::sync::Mutex;

/// The scope of a group: [`SCOPE_DEVICE`] for kernel QPs, else the namespace cookie
/// (never 0) of its user QPs.
type Scope = u64;
/// The scope of kernel QPs' groups, joined on the device's netdev.
const SCOPE_DEVICE: Scope = 0;

/// A group: its multicast GID and its scope.
type Key = ([u8; 16], Scope);

struct Entry {
    grp: Group,
    /// The netdev the group joined (and leaves), and where its packets must arrive.
    ndev: NdevId,
}

struct Groups {
    /// The groups with at least one QP.
    tree: RBTree<Key, Entry>,
    totals: Totals,
    /// How many groups each QPN is attached to (a QP attached to any cannot be destroyed).
    per_qp: KVec<u16>,
}

/// A device's multicast groups.
///
/// # Locking
/// `ctl` (a mutex, process context) serialises `attach` and `detach`, which sleep to join
/// and leave the netdev's IP groups (RTNL is taken inside, under `ctl`; nothing takes `ctl`
/// under RTNL). `groups` (bottom halves off) guards the tree and the counts: held by
/// `attach`/`detach` for one tree lookup and one [`Group`] change, and by the receive path
/// ([`McastTable::deliver`]) for one lookup and a copy of at most [`MAX_QP_ATTACH`] QPNs;
/// the per-QP delivery (a clone, the QP table's lookup and the QP's run) happens after it
/// is released. Interrupts stay on. Order: `ctl` → `groups`; the QP table's lock is never
/// taken under `groups`.
#[pin_data]
pub(crate) struct McastTable {
    #[pin]
    ctl: Mutex<()>,
    #[pin]
    groups: BhSpinLock<Groups>,
}

/// The scope of a QP's groups.
fn scope_of(origin: Origin) -> Result<Scope> {
    match origin {
        Origin::Any => Ok(SCOPE_DEVICE),
        Origin::Netns(n) => Ok(n.to_raw()),
        // A connected QP's; attach is for UD QPs only.
        Origin::Netdev(_) => Err(EINVAL),
    }
}

/// The netdev a group of `scope` joins: the device's own for [`SCOPE_DEVICE`], else the one
/// of the device (its netdev, or an upper device of it: a pod's macvlan or ipvlan) in that
/// namespace. `None` when the device has none there.
fn netdev_of_scope(dev: &IbDev, scope: Scope) -> Option<NetDevRef> {
    let own = dev.netdev()?;
    if scope == SCOPE_DEVICE || own.id().netns() == NetnsId::from_raw(scope) {
        return Some(own);
    }
    let mut found = None;
    own.for_each_upper(|up| {
        if found.is_none() && up.id().netns() == NetnsId::from_raw(scope) {
            found = Some(up.hold());
        }
    });
    found
}

/// The device's netdev, or an upper device of it, whose identity is `id`; `None` once it is
/// gone (its IP group memberships went with it).
fn netdev_by_id(dev: &IbDev, id: NdevId) -> Option<NetDevRef> {
    let own = dev.netdev()?;
    if own.id() == id {
        return Some(own);
    }
    let mut found = None;
    own.for_each_upper(|up| {
        if found.is_none() && up.id() == id {
            found = Some(up.hold());
        }
    });
    found
}

impl McastTable {
    /// An empty table.
    pub(crate) fn new() -> Result<impl PinInit<Self>> {
        let mut per_qp = KVec::with_capacity(MAX_QP, GFP_KERNEL)?;
        per_qp.extend_with(MAX_QP, 0u16, GFP_KERNEL)?;
        let groups = Groups {
            tree: RBTree::new(),
            totals: Totals::default(),
            per_qp,
        };
        Ok(pin_init!(McastTable {
            ctl <- kernel::new_mutex!((), "rrxe_mcast_ctl"),
            groups <- new_bh_spinlock!(groups, "rrxe_mcast_groups"),
        }))
    }

    /// Whether QP `qpn` is attached to a group.
    pub(crate) fn is_attached(&self, qpn: u32) -> bool {
        let g = self.groups.lock();
        g.per_qp.get(qpn as usize).is_some_and(|&n| n != 0)
    }

    /// Hands a multicast packet (destination QPN 0xFFFFFF) that arrived on netdev `on` to
    /// every QP attached to a group of its destination address that joined `on`; bottom
    /// halves off. Each QP gets a clone, the last one the packet itself; a QP that refuses
    /// its copy (state, P_Key, namespace, backlog) is counted as for a unicast packet and
    /// the others still get theirs (UD is unreliable: rdma_rxe moves on the same way). A
    /// packet of this host (`local`) kicks each QP's work instead of running it here.
    /// Without such a group the packet is dropped, counted (`rx_drop_mcast_no_group`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn deliver(
        &self,
        dev: &IbDev,
        ndev: &crate::glue::NetDev,
        skb: SkBuff,
        icrc: Icrc,
        from: &IpAddrs,
        pkey: u16,
        local: bool,
    ) {
        let counters = &dev.data().counters;
        let on = ndev.id();
        let mgid = from.dst_gid();
        // The QPs of the two groups that may have joined `on`: its namespace's user QPs'
        // and, on the device's own netdev, the kernel QPs'. At most 2 * MAX_QP_ATTACH, so
        // one packet makes a bounded number of copies.
        let mut qpns = [0u32; 2 * MAX_QP_ATTACH];
        let n = {
            let g = self.groups.lock();
            let mut n = 0;
            for scope in [on.netns().to_raw(), SCOPE_DEVICE] {
                if let Some(e) = g.tree.get(&(mgid, scope)) {
                    if e.ndev != on {
                        continue;
                    }
                    for &q in e.grp.qpns() {
                        if let Some(d) = qpns.get_mut(n) {
                            *d = q;
                            n += 1;
                        }
                    }
                }
            }
            n
        };
        if n == 0 {
            counters.inc(Counter::RxDropMcastNoGroup);
            return;
        }
        counters.inc(Counter::McastRcvd);
        let mut skb = Some(skb);
        for (i, &qpn) in qpns.iter().take(n).enumerate() {
            let copy = if i + 1 == n {
                skb.take()
            } else {
                skb.as_ref().and_then(SkBuff::try_clone)
            };
            let Some(copy) = copy else {
                counters.inc(Counter::RxDropNoMem);
                continue;
            };
            match dev.data().qps.deliver(qpn, copy, icrc, from, pkey, on) {
                Ok(qp) => {
                    if local {
                        qp.kick();
                    } else {
                        qp.run_rx(ndev);
                    }
                }
                Err((why, _skb)) => counters.inc(crate::net::refused_counter(why)),
            }
        }
    }

    /// `attach_mcast`: attaches UD QP `qpn`, which takes packets from `origin`, to the
    /// group `mgid` (a multicast GID, which the core checked) of its namespace. Attaching
    /// a QP twice is not an error (rdma_rxe returns 0). ENODEV when the device has no
    /// netdev in the QP's namespace.
    pub(crate) fn attach(&self, dev: &IbDev, qpn: u32, origin: Origin, mgid: &[u8; 16]) -> Result {
        if !mcast::is_mgid(mgid) || qpn as usize >= MAX_QP {
            return Err(EINVAL);
        }
        let key = (*mgid, scope_of(origin)?);
        let counters = &dev.data().counters;
        let _ctl = self.ctl.lock();
        {
            let mut guard = self.groups.lock();
            let g = &mut *guard;
            let new_group = match g.tree.get(&key) {
                Some(e) if e.grp.has(qpn) => return Ok(()),
                Some(_) => false,
                None => true,
            };
            if let Err(e) = g.totals.admit(new_group) {
                counters.inc(Counter::McastAttachRefused);
                pr_debug!("rrxe: attach_mcast refused: {:?}\n", e);
                return Err(ENOMEM);
            }
            if !new_group {
                let Some(e) = g.tree.get_mut(&key) else {
                    return Err(EINVAL);
                };
                if e.grp.attach(qpn).is_err() {
                    counters.inc(Counter::McastAttachRefused);
                    return Err(ENOMEM);
                }
                g.totals.attached(false);
                if let Some(c) = g.per_qp.get_mut(qpn as usize) {
                    *c = c.saturating_add(1);
                }
                return Ok(());
            }
        }
        // A new group: the node is allocated and the netdev joined before the lock is
        // taken again (both may sleep); `ctl` keeps anyone else from adding the group
        // meanwhile.
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let mut grp = Group::new();
        grp.attach(qpn).map_err(|_| ENOMEM)?;
        let ndev = netdev_of_scope(dev, key.1).ok_or(ENODEV)?;
        ndev.mc_join(mgid)?;
        let entry = Entry {
            grp,
            ndev: ndev.id(),
        };
        let mut g = self.groups.lock();
        g.tree.insert(node.into_node(key, entry));
        g.totals.attached(true);
        if let Some(c) = g.per_qp.get_mut(qpn as usize) {
            *c = c.saturating_add(1);
        }
        Ok(())
    }

    /// `detach_mcast`: EINVAL when QP `qpn` (which takes packets from `origin`) is not
    /// attached to `mgid` (as rdma_rxe). The last QP of a group takes the netdev out of
    /// the IP group, if the netdev is still there.
    pub(crate) fn detach(&self, dev: &IbDev, qpn: u32, origin: Origin, mgid: &[u8; 16]) -> Result {
        let key = (*mgid, scope_of(origin)?);
        let _ctl = self.ctl.lock();
        let gone = {
            let mut guard = self.groups.lock();
            let g = &mut *guard;
            let e = g.tree.get_mut(&key).ok_or(EINVAL)?;
            if !e.grp.detach(qpn) {
                return Err(EINVAL);
            }
            let gone = if e.grp.is_empty() {
                g.tree.remove(&key).map(|e| e.ndev)
            } else {
                None
            };
            g.totals.detached(gone.is_some());
            if let Some(c) = g.per_qp.get_mut(qpn as usize) {
                *c = c.saturating_sub(1);
            }
            gone
        };
        if let Some(id) = gone {
            if let Some(ndev) = netdev_by_id(dev, id) {
                ndev.mc_leave(mgid);
            }
        }
        Ok(())
    }
}
