// SPDX-License-Identifier: GPL-2.0
//! Packet capture: a device's capture netdev (`rrxe0cap`), whose taps (tcpdump, Wireshark)
//! get a copy of each RoCEv2 frame the device sends or receives (`rrxe_glue_capture.c`;
//! docs/capture.md). Made and removed through the device's debugfs file `capture`
//! (`debugfs.rs`), removed with the device, or by the kernel with its network namespace.

use super::bindings;
use super::{IbDev, SkBuff, TxSkb};
use core::marker::PhantomPinned;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::prelude::*;

/// The slot of a device's capture netdev: null while there is none. Written by the C side
/// under rtnl (set once registered, cleared by the netdev's `ndo_uninit`), read in RCU read
/// sections; the data path's first test is one load of it. The netdev keeps the slot's
/// address: it does not move (pinned in the device's data) and outlives the netdev (its
/// drop unregisters it).
#[pin_data(PinnedDrop)]
pub(crate) struct Capture {
    netdev: AtomicPtr<bindings::net_device>,
    #[pin]
    _pin: PhantomPinned,
}

/// What a capture point did with a packet.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Copied {
    /// Nothing: no capture netdev, or no tap open on it.
    No,
    /// A copy was handed to the taps.
    Yes,
    /// A tap is open but no memory for a copy.
    NoMem,
}

impl Capture {
    /// No capture netdev.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Capture {
            netdev: AtomicPtr::new(ptr::null_mut()),
            _pin: PhantomPinned,
        })
    }

    fn raw(&self) -> *mut *mut bindings::net_device {
        self.netdev.as_ptr()
    }

    /// Creates the capture netdev of `dev` (in the device's network namespace), if it has
    /// none. Process context; takes rtnl.
    pub(crate) fn open(&self, dev: &IbDev) -> Result {
        // SAFETY: `dev` is live for the call; the slot is this pinned `Capture`'s, which
        // outlives the netdev (drop below unregisters it); process context, no lock held
        // (the debugfs write).
        let err = unsafe { bindings::rrxe_glue_capture_open(dev.as_ptr(), self.raw()) };
        if err != 0 {
            return Err(Error::from_errno(err));
        }
        Ok(())
    }

    /// Removes the capture netdev, if there is one. Process context; takes rtnl.
    pub(crate) fn close(&self) {
        if self.netdev.load(Ordering::Relaxed).is_null() {
            // Nobody creates one concurrently: the debugfs write (the only creator) runs
            // under a file operation the device's removal waits for, and a close racing
            // with a close or the namespace's exit finds the slot cleared under rtnl.
            return;
        }
        // SAFETY: the slot is this `Capture`'s; process context, no lock held.
        unsafe { bindings::rrxe_glue_capture_close(self.raw()) }
    }

    /// The capture netdev's name into `out` (no NUL); its length, 0 without one.
    pub(crate) fn name(&self, out: &mut [u8]) -> usize {
        let mut buf = [0u8; 16];
        // SAFETY: the slot is this `Capture`'s; `buf` is ours, 16 bytes (IFNAMSIZ);
        // process context.
        let n = unsafe {
            bindings::rrxe_glue_capture_name(self.raw(), buf.as_mut_ptr().cast(), buf.len())
        };
        let n = n.min(buf.len()).min(out.len());
        out[..n].copy_from_slice(&buf[..n]);
        n
    }

    /// Whether a capture netdev exists (one load): the data path's whole cost without one.
    #[inline]
    fn exists(&self) -> bool {
        !self.netdev.load(Ordering::Relaxed).is_null()
    }

    fn copy(&self, skb: *mut bindings::sk_buff, wire: bool) -> Copied {
        // SAFETY: `skb` is a live skb the caller owns, with its network header set at or
        // before its data; the helper copies from it and keeps nothing. The slot is ours
        // and read under RCU by the helper.
        match unsafe { bindings::rrxe_glue_capture_skb(self.raw(), skb, wire) } {
            0 => Copied::No,
            1 => Copied::Yes,
            _ => Copied::NoMem,
        }
    }

    /// A packet being sent (complete: headers and ICRC written), as on the wire.
    #[inline]
    pub(crate) fn tx(&self, skb: &TxSkb) -> Copied {
        if !self.exists() {
            return Copied::No;
        }
        self.copy(skb.raw(), false)
    }

    /// A packet received: from the wire (`wire`, with the Ethernet header it came with), or
    /// from another device of this host.
    #[inline]
    pub(crate) fn rx(&self, skb: &SkBuff, wire: bool) -> Copied {
        if !self.exists() {
            return Copied::No;
        }
        self.copy(skb.raw(), wire)
    }

    /// Reading the debugfs file `capture`: the netdev's name and a newline, or nothing.
    pub(super) fn show(&self, out: &mut [u8]) -> usize {
        let n = self.name(out);
        if n == 0 || n >= out.len() {
            return n;
        }
        out[n] = b'\n';
        n + 1
    }

    /// Writing the debugfs file `capture`: `1` creates the capture netdev, `0` removes it
    /// (a trailing newline allowed); anything else is EINVAL.
    pub(super) fn write(&self, dev: &IbDev, text: &[u8]) -> Result {
        let text = text.strip_suffix(b"\n").unwrap_or(text);
        match text {
            b"1" => self.open(dev),
            b"0" => {
                self.close();
                Ok(())
            }
            _ => Err(EINVAL),
        }
    }
}

#[pinned_drop]
impl PinnedDrop for Capture {
    fn drop(self: Pin<&mut Self>) {
        self.close();
    }
}
