// SPDX-License-Identifier: GPL-2.0
//! Network glue: the RoCEv2 UDP tunnel sockets and received `sk_buff`s.

use super::{bindings, IbDev, NetDev, NetDevRef};
use core::ptr::NonNull;
use kernel::prelude::*;

/// The IANA port of RoCEv2.
pub(crate) const ROCE_V2_UDP_PORT: u16 = 4791;

/// The UDP tunnel sockets (IPv4 and IPv6) listening on port 4791.
pub(crate) struct UdpSockets {
    v4: NonNull<bindings::socket>,
    v6: Option<NonNull<bindings::socket>>,
}

// SAFETY: the sockets are only opened and released (from module init/exit); the socket layer
// synchronises their use.
unsafe impl Send for UdpSockets {}
// SAFETY: as above; no method takes &self to touch the sockets.
unsafe impl Sync for UdpSockets {}

fn open(ipv6: bool) -> Result<NonNull<bindings::socket>> {
    let mut err = 0;
    // SAFETY: init_net lives forever; the helper creates and sets up the socket, or returns
    // NULL with *err set.
    let sock = unsafe {
        bindings::rrxe_glue_udp_open(
            bindings::rrxe_glue_init_net(),
            ipv6,
            ROCE_V2_UDP_PORT,
            &mut err,
        )
    };
    NonNull::new(sock).ok_or_else(|| Error::from_errno(if err < 0 { err } else { -12 }))
}

impl UdpSockets {
    /// Binds UDP port 4791 on IPv4 and, where the kernel has it, IPv6.
    pub(crate) fn open() -> Result<Self> {
        let v4 = open(false).inspect_err(|e| {
            pr_err!(
                "rrxe: cannot bind UDP port {} ({:?}): is another RoCE driver (rdma_rxe) loaded?\n",
                ROCE_V2_UDP_PORT,
                e
            )
        })?;
        let v6 = match open(true) {
            Ok(s) => Some(s),
            Err(e) if e.to_errno() == -97 => None, // EAFNOSUPPORT: no IPv6
            Err(e) => {
                // SAFETY: v4 was opened above and is released once.
                unsafe { bindings::rrxe_glue_udp_close(v4.as_ptr()) };
                pr_err!(
                    "rrxe: cannot bind UDP port {} on IPv6 ({:?})\n",
                    ROCE_V2_UDP_PORT,
                    e
                );
                return Err(e);
            }
        };
        Ok(Self { v4, v6 })
    }
}

impl Drop for UdpSockets {
    fn drop(&mut self) {
        // SAFETY: opened in open(), released exactly once here.
        unsafe {
            bindings::rrxe_glue_udp_close(self.v4.as_ptr());
            if let Some(v6) = self.v6 {
                bindings::rrxe_glue_udp_close(v6.as_ptr());
            }
        }
    }
}

impl NetDev {
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

impl IbDev {
    /// Whether `gid` is a RoCE v2 GID of port 1 on `ndev` (the GID table lookup of
    /// rdma_rxe's `rxe_chk_dgid`).
    pub(crate) fn has_roce_gid(&self, gid: &[u8; 16], ndev: &NetDev) -> bool {
        // SAFETY: self and ndev are live; the helper reads 16 bytes of gid and drops the
        // reference its lookup takes.
        unsafe { bindings::rrxe_glue_has_roce_gid(self.as_ptr(), gid.as_ptr(), ndev.as_ptr()) }
    }
}

/// An owned `sk_buff`; freed (as a drop) unless consumed.
pub(crate) struct SkBuff(NonNull<bindings::sk_buff>);

// SAFETY: an skb we own may be processed and freed on any CPU.
unsafe impl Send for SkBuff {}

impl SkBuff {
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

    /// The source MAC of the Ethernet frame (zero if there is none).
    pub(crate) fn smac(&self) -> [u8; 6] {
        let mut mac = [0u8; 6];
        // SAFETY: we own the skb; the helper writes 6 bytes.
        unsafe { bindings::rrxe_glue_skb_smac(self.0.as_ptr(), mac.as_mut_ptr()) };
        mac
    }

    /// Frees a packet that was handled successfully (not counted as a drop).
    #[allow(dead_code)] // used once packets reach QPs
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
#[allow(dead_code)] // used by the QP datapath (issue #4)
pub(crate) struct TxSkb {
    skb: NonNull<bindings::sk_buff>,
    data: NonNull<u8>,
    len: usize,
}

// SAFETY: we own the skb until it is sent or freed; it may move between threads.
unsafe impl Send for TxSkb {}

#[allow(dead_code)] // used by the QP datapath (issue #4)
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

    /// The packet bytes (IP header first).
    pub(crate) fn data(&mut self) -> &mut [u8] {
        // SAFETY: the skb we own has `len` bytes at `data` (skb_put), exclusively ours.
        unsafe { core::slice::from_raw_parts_mut(self.data.as_ptr(), self.len) }
    }

    /// Routes and sends the packet (IPv4 addresses in the first 4 bytes).
    pub(crate) fn send(self, ipv6: bool, sip: &[u8; 16], dip: &[u8; 16]) -> Result {
        let skb = self.skb.as_ptr();
        core::mem::forget(self);
        // SAFETY: the helper consumes the skb in every case.
        let err = unsafe { bindings::rrxe_glue_tx_send(skb, ipv6, sip.as_ptr(), dip.as_ptr()) };
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

/// The kernel's CRC-32 (`crc32_le`, architecture-optimised) for the ICRC.
pub(crate) struct KernelCrc32;

impl crate::proto::Crc32 for KernelCrc32 {
    fn update(&self, crc: u32, data: &[u8]) -> u32 {
        // SAFETY: crc32_le reads exactly len bytes from p, which data provides.
        unsafe { bindings::crc32_le(crc, data.as_ptr(), data.len()) }
    }
}

/// Every datagram to UDP port 4791 of our sockets (softirq context).
#[no_mangle]
unsafe extern "C" fn rrxe_rs_udp_recv(skb: *mut bindings::sk_buff) {
    if let Some(skb) = NonNull::new(skb) {
        // The UDP stack hands us ownership of the skb.
        crate::net::recv(SkBuff(skb), crate::net::Arrival::Wire);
    }
}

/// A packet from one of our QPs to a QP on this host (bottom halves off, inside the
/// sender's run).
#[no_mangle]
unsafe extern "C" fn rrxe_rs_udp_recv_local(skb: *mut bindings::sk_buff) {
    if let Some(skb) = NonNull::new(skb) {
        // The transmit path hands us ownership of the skb.
        crate::net::recv(SkBuff(skb), crate::net::Arrival::Local);
    }
}
