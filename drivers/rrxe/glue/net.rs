// SPDX-License-Identifier: GPL-2.0
//! Network glue: the RoCEv2 UDP tunnel sockets and received `sk_buff`s.

use super::{bindings, IbDev, IbDevRef, NetDev, NetDevRef};
use core::cell::Cell;
use core::marker::PhantomData;
use core::ptr::NonNull;
use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use kernel::prelude::*;

/// The IANA port of RoCEv2.
pub(crate) const ROCE_V2_UDP_PORT: u16 = 4791;

/// Opens the RoCEv2 UDP sockets (port 4791, IPv4 and, where the namespace has it, IPv6) of
/// `ndev`'s network namespace, unless it has them already. Each namespace's pair lives until
/// the namespace goes away (or the module): a device needs them where its netdev is, and a
/// shared device also where the upper devices of its netdev are (macvlan, ipvlan in pods).
pub(crate) fn open_sockets(ndev: &NetDev) -> Result {
    let mut v6 = false;
    // SAFETY: ndev is live (type invariant); the helper takes its own reference on the
    // namespace while it opens, and writes the bool.
    let err = unsafe { bindings::rrxe_glue_net_open(ndev.as_ptr(), ROCE_V2_UDP_PORT, &mut v6) };
    match err {
        0 => Ok(()),
        // EAFNOSUPPORT: no IPv6 (in this kernel or namespace); IPv4 is open.
        -97 if v6 => Ok(()),
        e => {
            pr_err!(
                "rrxe: cannot bind UDP port {} ({}) in the network namespace of {} ({:?}): is another RoCE driver (rdma_rxe) using it?\n",
                ROCE_V2_UDP_PORT,
                if v6 { "IPv6" } else { "IPv4" },
                ndev.name(),
                Error::from_errno(e)
            );
            Err(Error::from_errno(e))
        }
    }
}

impl NetDev {
    /// In a NETDEV_UNREGISTER event: the netdev only moves to another network namespace
    /// (it is registered again there), it is not going away.
    pub(crate) fn is_moving_netns(&self) -> bool {
        // SAFETY: self is a live net_device (type invariant).
        unsafe { bindings::rrxe_glue_netdev_moving(self.as_ptr()) }
    }

    /// The device owning the local address `addr` (IPv4: the first 4 bytes) in this
    /// device's network namespace, if the address is local.
    pub(crate) fn local_addr_owner(&self, ipv6: bool, addr: &[u8; 16]) -> Option<NetDevRef> {
        // SAFETY: self is a live net_device; the helper reads 4 or 16 bytes of addr (it has
        // 16) and returns null or a device with one reference taken for us.
        unsafe {
            NetDevRef::from_held(bindings::rrxe_glue_local_addr_dev(
                self.as_ptr(),
                ipv6,
                addr.as_ptr(),
            ))
        }
    }
}

/// A network namespace by identity: its cookie, unique for the system's lifetime (never
/// reused, unlike the namespace's address), so it may be kept without a reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NetnsId(u64);

/// A netdev by identity (`struct rrxe_ndev_id`): its namespace ([`NetnsId`]) and its ifindex
/// there (allocated cyclically per namespace, so not soon reused). Kept without a
/// reference, compared, never dereferenced: two loads for a live netdev, no name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NdevId {
    net: NetnsId,
    ifindex: i32,
}

impl NdevId {
    /// The netdev of an address vector's source GID, as the core gave it at create_ah or
    /// modify_qp (`rrxe_glue_ah_attr_to_av`).
    pub(crate) fn of_av(av: &bindings::rrxe_kav) -> Self {
        NdevId::of_raw(&av.src)
    }

    fn of_raw(id: &bindings::rrxe_ndev_id) -> Self {
        NdevId {
            net: NetnsId((u64::from(id.net_hi) << 32) | u64::from(id.net_lo)),
            ifindex: id.ifindex,
        }
    }

    /// The namespace of the netdev.
    pub(crate) fn netns(self) -> NetnsId {
        self.net
    }

    /// The namespace's cookie and the ifindex, to be stored (in atomics) and given back to
    /// [`Self::from_raw`].
    pub(crate) fn to_raw(self) -> (u64, i32) {
        (self.net.0, self.ifindex)
    }

    /// The identity [`Self::to_raw`] gave.
    pub(crate) fn from_raw(net: u64, ifindex: i32) -> Self {
        NdevId {
            net: NetnsId(net),
            ifindex,
        }
    }
}

impl NetnsId {
    /// The namespace's cookie, to be stored and given back to [`Self::from_raw`].
    pub(crate) fn to_raw(self) -> u64 {
        self.0
    }

    /// The identity [`Self::to_raw`] gave.
    pub(crate) fn from_raw(cookie: u64) -> Self {
        NetnsId(cookie)
    }
}

/// The network namespace of the calling task (a user process's, in its system call);
/// `None` for a task that has none left (exiting).
pub(crate) fn current_netns() -> Option<NetnsId> {
    let mut cookie = 0u64;
    // SAFETY: the helper only reads the current task's nsproxy (stable for the task's own
    // calls) and writes the u64.
    unsafe { bindings::rrxe_glue_current_net(&mut cookie) }.then_some(NetnsId(cookie))
}

impl NetDev {
    /// This netdev's identity ([`NdevId`]).
    pub(crate) fn id(&self) -> NdevId {
        // SAFETY: self is a live net_device (type invariant); the helper reads its ifindex
        // and its namespace's cookie (written once, when the namespace was set up).
        let id = unsafe { bindings::rrxe_glue_ndev_id(self.as_ptr()) };
        NdevId::of_raw(&id)
    }

    /// Joins this netdev to the IP multicast group of the multicast GID `mgid` (IGMP for an
    /// IPv4-mapped one, MLD for IPv6): a membership of the device, which the kernel counts,
    /// so that the group's datagrams reach the RoCE v2 sockets. Process context (sleeps,
    /// takes RTNL for IPv4); `mgid` must be multicast.
    pub(crate) fn mc_join(&self, mgid: &[u8; 16]) -> Result {
        // SAFETY: self is a live net_device (type invariant); the helper reads 16 bytes of
        // mgid and may sleep, which our callers (attach_mcast, process context) allow.
        let err = unsafe { bindings::rrxe_glue_mc_join(self.as_ptr(), mgid.as_ptr()) };
        if err != 0 {
            return Err(Error::from_errno(err));
        }
        Ok(())
    }

    /// Gives back one membership [`NetDev::mc_join`] took. Process context.
    pub(crate) fn mc_leave(&self, mgid: &[u8; 16]) {
        // SAFETY: as in mc_join.
        unsafe { bindings::rrxe_glue_mc_leave(self.as_ptr(), mgid.as_ptr()) }
    }
}

/// How many upper devices of one netdev get their namespace's sockets when a device is added.
const MAX_UPPERS: usize = 32;

impl NetDev {
    /// Calls `f` for the devices above this one (macvlan, ipvlan, vlan; all levels), at most
    /// [`MAX_UPPERS`] of them.
    pub(crate) fn for_each_upper(&self, mut f: impl FnMut(&NetDev)) {
        let mut ups = [core::ptr::null_mut(); MAX_UPPERS];
        // SAFETY: self is live; the helper writes at most MAX_UPPERS pointers, each with a
        // reference taken for us, and returns how many.
        let n = unsafe {
            bindings::rrxe_glue_upper_devs(self.as_ptr(), ups.as_mut_ptr(), MAX_UPPERS as u32)
        };
        for &p in ups.iter().take(n as usize) {
            // SAFETY: one of the n pointers the helper filled, each with a reference we own
            // (given back when the NetDevRef drops).
            if let Some(up) = unsafe { NetDevRef::from_held(p) } {
                f(&up);
            }
        }
    }
}

impl IbDevRef {
    /// Our device bound to `ndev` or, in shared mode, to a device below it: a packet that
    /// came in on a pod's macvlan or ipvlan is for the device of its eth0.
    pub(crate) fn by_netdev_or_below(ndev: &NetDev) -> Option<IbDevRef> {
        IbDevRef::by_netdev(ndev).or_else(|| {
            // SAFETY: ndev is live; the helper returns null or one of our devices with a
            // reference held for us.
            let p = unsafe { bindings::rrxe_glue_ib_device_below(ndev.as_ptr()) };
            NonNull::new(p).map(IbDevRef)
        })
    }
}

impl IbDev {
    /// Runs `f` with the netdev of port 1 (`None` without one), read inside an RCU
    /// read-side section with no lock and no reference: usable in softirq context, where
    /// [`IbDev::netdev`] is not (the core's `ib_device_get_netdev` takes a spinlock with
    /// bottom halves on). `f` must not sleep.
    pub(crate) fn with_netdev_rcu<R>(&self, f: impl FnOnce(Option<&NetDev>) -> R) -> R {
        let _rcu = RcuRead::lock();
        // SAFETY: live ib_device; the helper only reads its port 1 netdev pointer with
        // rcu_dereference, inside the section `_rcu` holds.
        let p = unsafe { bindings::rrxe_glue_ibdev_netdev_rcu(self.as_ptr()) };
        // SAFETY: a netdev published in port 1 stays allocated until a grace period after
        // its unregistration, so at least until `_rcu` is dropped, after `f` returns; `f`
        // is only lent the reference and cannot keep it.
        let nd = (!p.is_null()).then(|| unsafe { NetDev::from_raw(p) });
        f(nd)
    }

    /// The netdev a packet from source GID `index` leaves through, if that GID still holds
    /// the source address `sip` (IPv4: the first 4 bytes): the device's own netdev, or in
    /// shared mode a pod's upper device of it, in the pod's namespace.
    pub(crate) fn gid_netdev(&self, index: u8, ipv6: bool, sip: &[u8; 16]) -> Option<NetDevRef> {
        // SAFETY: the device is live; the helper reads 4 or 16 bytes of sip (it has 16) and
        // returns null or a netdev with a reference held for us.
        unsafe {
            NetDevRef::from_held(bindings::rrxe_glue_gid_netdev(
                self.as_ptr(),
                u32::from(index),
                ipv6,
                sip.as_ptr(),
            ))
        }
    }

    /// Runs `f` on the netdev a packet from source GID `index` with source address `sip`
    /// leaves through (as [`Self::gid_netdev`] finds it); `None` if that GID is gone, holds
    /// another address or is on another netdev than `src`, the one the address vector was
    /// made with (in shared mode, the same address on another pod's netdev). `cache` keeps the answer between one sender's packets: it is
    /// used again, without the GID table's two read locks or a netdev reference, while the
    /// device's [`GidGeneration`] has not moved (its `add_gid`/`del_gid` ops move it as the
    /// core adds or deletes a GID: [`crate::device::gid_changed`]). `f` runs inside an RCU
    /// read-side section: it must not sleep (a transmit runs under the QP's engine lock
    /// anyway).
    pub(crate) fn with_gid_netdev<R>(
        &self,
        cache: Option<&Cell<GidNetdevCache>>,
        index: u8,
        ipv6: bool,
        sip: &[u8; 16],
        src: NdevId,
        f: impl FnOnce(&NetDev) -> R,
    ) -> Option<R> {
        let _rcu = RcuRead::lock();
        // Read before the lookup below: what it finds is kept under this generation, so a
        // change made meanwhile sends the next packet to the table again.
        let g = self.data().gid_gen.get();
        let me = NonNull::new(self.as_ptr());
        if let Some(c) = cache.map(Cell::get) {
            if let Some(p) = c.ndev {
                if c.dev == me
                    && c.gen == g
                    && c.index == index
                    && c.ipv6 == ipv6
                    && c.sip == *sip
                    && c.src == Some(src)
                {
                    // Why p is still live: it is the netdev that GID `index` of this device,
                    // holding `sip`, had in generation g (looked up with a reference held:
                    // INVARIANT of GidNetdevCache). The load above did not see the generation
                    // move past g, so this RCU read section began before the grace period of
                    // any call_rcu that drops that entry's netdev reference: the core's
                    // del_gid (drivers/infiniband/core/cache.c), the only way a stored entry
                    // is removed, marks the entry deleted, calls our del_gid op (which moves
                    // the generation) and only then queues put_gid_ndev with call_rcu.
                    // SAFETY: p lives until `_rcu` is dropped (above), after `f` returns; `f`
                    // is only lent the reference and cannot keep it.
                    let nd = unsafe { NetDev::from_raw(p.as_ptr()) };
                    return Some(f(nd));
                }
            }
        }
        let nd = self.gid_netdev(index, ipv6, sip)?;
        if nd.id() != src {
            return None;
        }
        if let Some(c) = cache {
            // INVARIANT: found just now on this device, with a reference held, at generation
            // g or later, and it is `src`.
            c.set(GidNetdevCache {
                dev: me,
                gen: g,
                index,
                ipv6,
                sip: *sip,
                src: Some(src),
                ndev: NonNull::new(nd.as_ptr()),
            });
        }
        Some(f(&nd))
    }

    /// Whether `gid` is a RoCE v2 GID of port 1 on `ndev` (the GID table lookup of
    /// rdma_rxe's `rxe_chk_dgid`).
    pub(crate) fn has_roce_gid(&self, gid: &[u8; 16], ndev: &NetDev) -> bool {
        // SAFETY: self and ndev are live; the helper reads 16 bytes of gid and drops the
        // reference its lookup takes.
        unsafe { bindings::rrxe_glue_has_roce_gid(self.as_ptr(), gid.as_ptr(), ndev.as_ptr()) }
    }

    /// [`Self::has_roce_gid`] for a received packet, answered from `cache` while the
    /// device's [`GidGeneration`] has not moved since the same GID was found on the same
    /// netdev: a few loads instead of the GID table's read lock, a walk of its entries and
    /// a reference on the one found (rdma_rxe looks it up for every packet). A GID found
    /// in generation g stays in the table until a `del_gid`, which moves the generation
    /// first (`crate::device::gid_changed`); a netdev that goes away has its GIDs deleted.
    /// Only found GIDs are kept: a packet to an address that is not ours is looked up
    /// each time (and dropped).
    pub(crate) fn has_roce_gid_kept(
        &self,
        cache: &DgidCache,
        gid: &[u8; 16],
        ndev: &NetDev,
    ) -> bool {
        // Read before the lookup: a GID added or deleted meanwhile leaves the entry stale.
        let g = self.data().gid_gen.get();
        let id = ndev.id();
        let slot = cache.slot(id);
        let want = DgidKey::new(gid, id);
        let seen = slot.seq.load(Ordering::Acquire);
        if seen & 1 == 0 {
            let key = slot.key();
            let gen = slot.gen.load(Ordering::Relaxed);
            // Orders the loads above before the second read of the count (a seqlock's
            // read side): a count unchanged means no writer touched the slot meanwhile.
            fence(Ordering::Acquire);
            if slot.seq.load(Ordering::Relaxed) == seen && gen == g && key == want {
                return true;
            }
        }
        if !self.has_roce_gid(gid, ndev) {
            return false;
        }
        // One writer at a time: the one that makes the count odd; a CPU that finds it odd
        // (another writing) or moved leaves the slot as it is.
        if seen & 1 == 0
            && slot
                .seq
                .compare_exchange(
                    seen,
                    seen.wrapping_add(1),
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            // Orders the odd count before the stores below (a seqlock's write side).
            fence(Ordering::Release);
            slot.set(&want, g);
            slot.seq.store(seen.wrapping_add(2), Ordering::Release);
        }
        true
    }
}

/// How many destination GIDs [`DgidCache`] keeps: one per slot, a netdev's slot picked by
/// its ifindex (in shared mode each pod's netdev has its own, up to this many).
const DGID_SLOTS: usize = 8;

/// The destination GIDs the receive path found in a device's GID table, each with the
/// netdev it was found on and the table's generation then ([`IbDev::has_roce_gid_kept`]).
/// Lock-free: a slot is a sequence count (odd while one writer stores) and its fields; a
/// reader takes the fields only if the count was even and unchanged around its loads.
pub(crate) struct DgidCache {
    slots: [DgidSlot; DGID_SLOTS],
}

struct DgidSlot {
    seq: AtomicU32,
    /// The generation the GID was found in; `u64::MAX` (never reached) while empty.
    gen: AtomicU64,
    gid: [AtomicU64; 2],
    net: AtomicU64,
    ifindex: AtomicU32,
}

#[derive(PartialEq, Eq)]
struct DgidKey {
    gid: [u64; 2],
    net: u64,
    ifindex: u32,
}

impl DgidKey {
    fn new(gid: &[u8; 16], id: NdevId) -> Self {
        let half = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&gid[i * 8..i * 8 + 8]);
            u64::from_ne_bytes(b)
        };
        DgidKey {
            gid: [half(0), half(1)],
            net: id.net.0,
            ifindex: id.ifindex as u32,
        }
    }
}

impl DgidSlot {
    const fn new() -> Self {
        DgidSlot {
            seq: AtomicU32::new(0),
            gen: AtomicU64::new(u64::MAX),
            gid: [AtomicU64::new(0), AtomicU64::new(0)],
            net: AtomicU64::new(0),
            ifindex: AtomicU32::new(0),
        }
    }

    fn key(&self) -> DgidKey {
        DgidKey {
            gid: [
                self.gid[0].load(Ordering::Relaxed),
                self.gid[1].load(Ordering::Relaxed),
            ],
            net: self.net.load(Ordering::Relaxed),
            ifindex: self.ifindex.load(Ordering::Relaxed),
        }
    }

    fn set(&self, k: &DgidKey, gen: u64) {
        self.gid[0].store(k.gid[0], Ordering::Relaxed);
        self.gid[1].store(k.gid[1], Ordering::Relaxed);
        self.net.store(k.net, Ordering::Relaxed);
        self.ifindex.store(k.ifindex, Ordering::Relaxed);
        self.gen.store(gen, Ordering::Relaxed);
    }
}

impl DgidCache {
    /// An empty cache.
    pub(crate) const fn new() -> Self {
        DgidCache {
            slots: [const { DgidSlot::new() }; DGID_SLOTS],
        }
    }

    fn slot(&self, id: NdevId) -> &DgidSlot {
        &self.slots[id.ifindex.unsigned_abs() as usize % DGID_SLOTS]
    }
}

/// One sender's source-GID netdev, kept between its packets by
/// [`IbDev::with_gid_netdev`] (rdma_rxe looks the GID up for every packet, in
/// `rxe_init_packet`; so did rrxe, two GID-table read locks a packet). Empty by default.
///
/// INVARIANT: `ndev`, if set, was the netdev of GID `index` (holding `sip`) of device `dev`,
/// with identity `src`, found with a reference held while that device's GID-table
/// generation was `gen` or later. No reference is kept: it is dereferenced only by `with_gid_netdev` of that same
/// device, in an RCU read section that finds the generation still at `gen`. Safe code can
/// neither fill one nor move a generation back: the fields and [`GidGeneration`]'s value are
/// private to the glue.
#[derive(Clone, Copy, Default)]
pub(crate) struct GidNetdevCache {
    dev: Option<NonNull<bindings::ib_device>>,
    gen: u64,
    index: u8,
    ipv6: bool,
    sip: [u8; 16],
    src: Option<NdevId>,
    ndev: Option<NonNull<bindings::net_device>>,
}

// SAFETY: plain data; the pointer is dereferenced only under the protocol of
// `with_gid_netdev`, which holds on any CPU.
unsafe impl Send for GidNetdevCache {}

impl GidNetdevCache {
    /// An empty one on the heap (process context), or None without memory. Not inlined:
    /// its temporary stays out of the QP's initialiser, its caller.
    #[inline(never)]
    pub(crate) fn boxed() -> Option<KBox<Self>> {
        KBox::new(Self::default(), GFP_KERNEL).ok()
    }
}

/// A device's GID-table generation: moved (never back) each time the core adds or deletes a
/// GID of the port, read by every transmit that kept a source netdev. What keeps a kept
/// netdev alive is RCU (see [`IbDev::with_gid_netdev`]); the atomic orderings only make the
/// moves visible promptly.
pub(crate) struct GidGeneration(AtomicU64);

impl GidGeneration {
    /// The first generation.
    pub(crate) const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    /// The table changed: every kept netdev is looked up again before its next use.
    pub(crate) fn bump(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// An RCU read-side critical section, ended on drop (on the same CPU and in the same
/// context: not `Send`).
pub(crate) struct RcuRead(PhantomData<*mut ()>);

impl RcuRead {
    pub(crate) fn lock() -> Self {
        // SAFETY: rcu_read_lock may be called in any context; the section is ended by Drop.
        unsafe { bindings::rrxe_glue_rcu_read_lock() };
        RcuRead(PhantomData)
    }
}

impl Drop for RcuRead {
    fn drop(&mut self) {
        // SAFETY: ends the section `lock` began (sections nest).
        unsafe { bindings::rrxe_glue_rcu_read_unlock() };
    }
}

/// An owned `sk_buff`; freed (as a drop) unless consumed.
pub(crate) struct SkBuff(NonNull<bindings::sk_buff>);

// SAFETY: an skb we own may be processed and freed on any CPU.
unsafe impl Send for SkBuff {}

impl SkBuff {
    /// The skb, for glue helpers that read it (the caller keeps owning it).
    pub(super) fn raw(&self) -> *mut bindings::sk_buff {
        self.0.as_ptr()
    }

    /// The device the packet came in on.
    pub(crate) fn netdev(&self) -> Option<&NetDev> {
        // SAFETY: we own the skb; skb->dev is NULL or a device the stack keeps alive while
        // it processes the skb.
        let dev = unsafe { bindings::rrxe_glue_skb_dev(self.0.as_ptr()) };
        // SAFETY: non-null skb->dev is live for as long as the skb is in the receive path.
        (!dev.is_null()).then(|| unsafe { NetDev::from_raw(dev) })
    }

    /// Makes all data linear (may allocate).
    pub(crate) fn linearize(&mut self) -> Result {
        // SAFETY: we own the skb.
        let err = unsafe { bindings::rrxe_glue_skb_linearize(self.0.as_ptr()) };
        if err != 0 {
            return Err(Error::from_errno(err));
        }
        Ok(())
    }

    /// The IP packet of a linearised received skb (IP header to the end) and the length of
    /// its IP header.
    pub(crate) fn ip_packet(&self) -> Option<(&[u8], usize)> {
        let (mut len, mut l3) = (0u32, 0u32);
        // SAFETY: we own the skb; the helper writes two outputs.
        let p = unsafe { bindings::rrxe_glue_skb_ip_packet(self.0.as_ptr(), &mut len, &mut l3) };
        if p.is_null() || l3 > len {
            return None;
        }
        // SAFETY: the helper returned a range inside the skb's linear data, which we own and
        // do not modify while the slice is borrowed from self.
        Some((
            unsafe { core::slice::from_raw_parts(p, len as usize) },
            l3 as usize,
        ))
    }

    /// The length of the packet's IP datagram, IP header to the end (what `rcvd_bytes`
    /// counts), whether or not its data is linear yet.
    pub(crate) fn ip_len(&self) -> u32 {
        // SAFETY: we own the skb; the helper only reads its lengths and header offsets.
        unsafe { bindings::rrxe_glue_skb_ip_len(self.0.as_ptr()) }
    }

    /// The source MAC of the Ethernet frame (zero if there is none).
    pub(crate) fn smac(&self) -> [u8; 6] {
        let mut mac = [0u8; 6];
        // SAFETY: we own the skb; the helper writes 6 bytes.
        unsafe { bindings::rrxe_glue_skb_smac(self.0.as_ptr(), mac.as_mut_ptr()) };
        mac
    }

    /// A clone for one more receiver (the data is shared; receivers only read it), or
    /// `None` without memory.
    pub(crate) fn try_clone(&self) -> Option<SkBuff> {
        // SAFETY: we own the skb; skb_clone (GFP_ATOMIC) returns null or a new skb we own.
        let c = unsafe { bindings::rrxe_glue_skb_clone(self.0.as_ptr()) };
        NonNull::new(c).map(SkBuff)
    }

    /// Lets go of the packet's route and conntrack entry, keeping its data: for a packet
    /// kept beyond its arrival (held back by a fault rule).
    pub(crate) fn release_refs(&mut self) {
        // SAFETY: we own the skb; the helper drops references it holds, nothing else.
        unsafe { bindings::rrxe_glue_skb_release_refs(self.0.as_ptr()) };
    }

    /// Frees a packet that was handled successfully (not counted as a drop).
    pub(crate) fn consume(self) {
        let p = self.0.as_ptr();
        core::mem::forget(self);
        // SAFETY: we owned the skb and give it up here.
        unsafe { bindings::rrxe_glue_consume_skb(p) };
    }
}

impl Drop for SkBuff {
    fn drop(&mut self) {
        // SAFETY: we own the skb; kfree_skb records it as dropped.
        unsafe { bindings::rrxe_glue_kfree_skb(self.0.as_ptr()) };
    }
}

/// An skb being built for transmission: an IP packet the caller writes in full.
pub(crate) struct TxSkb {
    skb: NonNull<bindings::sk_buff>,
    data: NonNull<u8>,
    len: usize,
}

// SAFETY: we own the skb until it is sent or freed; it may move between threads.
unsafe impl Send for TxSkb {}

impl TxSkb {
    /// An skb for an `ip_len`-byte IP packet leaving through `ndev` (atomic allocation).
    pub(crate) fn alloc(ndev: &NetDev, ip_len: usize, ipv6: bool) -> Option<Self> {
        let len32 = u32::try_from(ip_len).ok()?;
        let mut data = core::ptr::null_mut();
        // SAFETY: ndev is live; the helper returns null or an skb with ip_len bytes put.
        let skb = unsafe { bindings::rrxe_glue_tx_alloc(ndev.as_ptr(), len32, ipv6, &mut data) };
        Some(TxSkb {
            skb: NonNull::new(skb)?,
            data: NonNull::new(data)?,
            len: ip_len,
        })
    }

    /// The skb, for glue helpers that read it (the caller keeps owning it).
    pub(super) fn raw(&self) -> *mut bindings::sk_buff {
        self.skb.as_ptr()
    }

    /// The packet bytes (IP header first).
    pub(crate) fn data(&mut self) -> &mut [u8] {
        // SAFETY: the skb we own has `len` bytes at `data` (skb_put), exclusively ours.
        unsafe { core::slice::from_raw_parts_mut(self.data.as_ptr(), self.len) }
    }

    /// Routes and sends the packet (IPv4 addresses in the first 4 bytes), through the
    /// route kept in `route` when there is one for this source and device.
    pub(crate) fn send(
        self,
        ipv6: bool,
        sip: &[u8; 16],
        dip: &[u8; 16],
        route: Option<&RouteCache>,
    ) -> Result {
        let skb = self.skb.as_ptr();
        core::mem::forget(self);
        // A cache's per-CPU entries are used with bottom halves off (the helper turns them
        // off) and each CPU touches only its own: sends on other CPUs may run meanwhile.
        let r = route.map_or(core::ptr::null_mut(), |r| r.raw.as_ptr());
        // SAFETY: the helper consumes the skb in every case; `r` is null or a live cache,
        // borrowed for the call and safe to share as said above.
        let err = unsafe { bindings::rrxe_glue_tx_send(skb, ipv6, sip.as_ptr(), dip.as_ptr(), r) };
        if err < 0 {
            return Err(Error::from_errno(err));
        }
        Ok(())
    }
}

impl Drop for TxSkb {
    fn drop(&mut self) {
        // SAFETY: not sent, still ours.
        unsafe { bindings::rrxe_glue_kfree_skb(self.skb.as_ptr()) };
    }
}

/// Built packets of one flow that leave as one skb, the first the head and the others on its
/// frag_list (`rrxe_glue_tx_chain`: the stack splits them back before the driver, which
/// then takes them as one burst). Dropping it frees them all.
pub(crate) struct TxChain {
    head: TxSkb,
    /// The last packet chained, owned by `head` (null: none yet).
    tail: *mut bindings::sk_buff,
    segs: u16,
}

// SAFETY: every skb of the chain is owned by `head`, which may move between threads.
unsafe impl Send for TxChain {}

impl TxChain {
    /// A chain of one packet.
    pub(crate) fn new(head: TxSkb) -> Self {
        TxChain {
            head,
            tail: core::ptr::null_mut(),
            segs: 1,
        }
    }

    /// Packets in the chain.
    pub(crate) fn segs(&self) -> u16 {
        self.segs
    }

    /// Hangs `seg` at the end. The caller built it for the same netdev, addresses and UDP
    /// ports as the head, at most as long as the head (the stack checks only the head
    /// against the path MTU), with the head's IPv4 id plus its index ([`TxChain::segs`]
    /// before the call).
    pub(crate) fn push(&mut self, seg: TxSkb) {
        let s = seg.skb.as_ptr();
        core::mem::forget(seg);
        // SAFETY: head is ours and not sent; `tail` is null or the last skb chained to it
        // (ours through head); `s` is an unsent skb whose ownership moves into head's
        // frag_list (freed with head).
        unsafe { bindings::rrxe_glue_tx_chain(self.head.raw(), &mut self.tail, s) };
        self.segs = self.segs.saturating_add(1);
    }

    /// Routes and sends the chain (as [`TxSkb::send`]; one packet goes as it is).
    pub(crate) fn send(
        self,
        ipv6: bool,
        sip: &[u8; 16],
        dip: &[u8; 16],
        route: Option<&RouteCache>,
    ) -> Result {
        if self.segs > 1 {
            // SAFETY: head is ours, with segs - 1 packets chained by rrxe_glue_tx_chain.
            unsafe { bindings::rrxe_glue_tx_chain_seal(self.head.raw(), self.segs) };
        }
        self.head.send(ipv6, sip, dip, route)
    }
}

/// A connected QP's route to its peer, kept between packets (the kernel's `dst_cache`: one
/// entry per CPU, each checked against route changes when used; IPv4 or IPv6). Without the
/// memory for one, sends look their route up each time.
pub(crate) struct RouteCache {
    raw: NonNull<bindings::rrxe_route>,
}

// SAFETY: the cache is a heap object of ours; sends use it from any CPU (see TxSkb::send)
// and `reset` needs exclusive access.
unsafe impl Send for RouteCache {}
// SAFETY: shared use is TxSkb::send's, safe from any number of CPUs at once.
unsafe impl Sync for RouteCache {}

impl RouteCache {
    /// An empty cache (process context), or None without memory.
    pub(crate) fn new() -> Option<Self> {
        // SAFETY: plain allocation.
        let raw = NonNull::new(unsafe { bindings::rrxe_glue_route_new() })?;
        Some(Self { raw })
    }

    /// Forgets every kept route (the destination changed). `&mut`: no send uses the cache
    /// meanwhile, as `dst_cache_reset_now` requires.
    pub(crate) fn reset(&mut self) {
        // SAFETY: live, and exclusively ours for the call.
        unsafe { bindings::rrxe_glue_route_reset(self.raw.as_ptr()) };
    }
}

impl Drop for RouteCache {
    fn drop(&mut self) {
        // SAFETY: live and no longer used; freed once.
        unsafe { bindings::rrxe_glue_route_free(self.raw.as_ptr()) };
    }
}

/// The ICRC's CRC-32: the glue's slicing-by-8 loop (`rrxe_glue_table_crc`) or the kernel's
/// `crc32_le`, as chosen at module init (`super::mem::choose_icrc`: the loop outruns the
/// generic `crc32_le`; where `crc32_le` has architecture code the faster, timed).
pub(crate) struct KernelCrc32;

impl crate::proto::Crc32 for KernelCrc32 {
    fn update(&self, crc: u32, data: &[u8]) -> u32 {
        if super::mem::table_crc_wanted() {
            let tab = super::mem::crc_tables();
            // SAFETY: the loop reads exactly len bytes from p, which data provides, and the
            // table pointer is proto's static tables of 8 x 256 entries.
            return unsafe {
                bindings::rrxe_glue_table_crc(data.as_ptr().cast(), data.len(), crc, tab)
            };
        }
        // SAFETY: crc32_le reads exactly len bytes from p, which data provides.
        unsafe { bindings::crc32_le(crc, data.as_ptr().cast(), data.len()) }
    }
}

/// How a received datagram got here.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// From the network: one of our UDP sockets, in its receive softirq.
    Wire,
    /// From this host's transmit path: a QP of this host sending to another (or itself),
    /// inside the sender's run, with bottom halves off.
    Local,
}

/// The driver's receive path: what every datagram for port 4791 is handed to.
pub(crate) trait Receiver: 'static {
    /// Handles one received datagram, which it now owns (bottom halves off; must not
    /// sleep).
    fn recv(skb: SkBuff, arrival: Arrival);
}

/// Every datagram to UDP port 4791 of our sockets (softirq context), for `R`.
pub(super) unsafe extern "C" fn udp_recv<R: Receiver>(skb: *mut bindings::sk_buff) {
    if let Some(skb) = NonNull::new(skb) {
        // The UDP stack hands us ownership of the skb.
        R::recv(SkBuff(skb), Arrival::Wire);
    }
}

/// A packet from one of our QPs to a QP on this host (bottom halves off, inside the
/// sender's run), for `R`.
pub(super) unsafe extern "C" fn udp_recv_local<R: Receiver>(skb: *mut bindings::sk_buff) {
    if let Some(skb) = NonNull::new(skb) {
        // The transmit path hands us ownership of the skb.
        R::recv(SkBuff(skb), Arrival::Local);
    }
}
