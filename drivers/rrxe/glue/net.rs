// SPDX-License-Identifier: GPL-2.0
//! Network glue: the RoCEv2 UDP tunnel sockets and received `sk_buff`s.

use super::{bindings, NetDev};
use core::ptr::{self, NonNull};
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

/// An owned `sk_buff`; freed (as a drop) unless consumed.
pub(crate) struct SkBuff(NonNull<bindings::sk_buff>);

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

    /// The network header (IPv4/IPv6) and the UDP datagram (header + payload) of a
    /// linearised received skb.
    pub(crate) fn parts(&self) -> Option<(&[u8], &[u8])> {
        let (mut l3, mut l3_len, mut l4, mut l4_len) = (ptr::null(), 0u32, ptr::null(), 0u32);
        // SAFETY: we own the skb; the helper writes four outputs.
        unsafe {
            bindings::rrxe_glue_skb_parts(
                self.0.as_ptr(),
                &mut l3,
                &mut l3_len,
                &mut l4,
                &mut l4_len,
            )
        };
        if l3.is_null() || l4.is_null() {
            return None;
        }
        // SAFETY: the helper returned ranges inside the skb's linear data, which we own and
        // do not modify while the slices are borrowed from self.
        unsafe {
            Some((
                core::slice::from_raw_parts(l3, l3_len as usize),
                core::slice::from_raw_parts(l4, l4_len as usize),
            ))
        }
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

/// Every datagram to UDP port 4791 of our sockets (softirq context).
#[no_mangle]
unsafe extern "C" fn rrxe_rs_udp_recv(skb: *mut bindings::sk_buff) {
    if let Some(skb) = NonNull::new(skb) {
        // The UDP stack hands us ownership of the skb.
        crate::net::recv(SkBuff(skb));
    }
}
