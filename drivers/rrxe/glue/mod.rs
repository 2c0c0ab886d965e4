// SPDX-License-Identifier: GPL-2.0
//! Kernel glue: the only place in rrxe.ko with `unsafe`.
//!
//! It turns the raw C interfaces (our bindgen output and the C helpers in `rrxe_glue*.c`)
//! into safe types the driver logic uses:
//! - [`NetDev`] / [`NetDevRef`]: a borrowed or counted `struct net_device`;
//! - [`IbDev`]: an rrxe `struct ib_device` together with its [`DeviceData`];
//! - [`Udata`]: the driver-private part of a uverbs command;
//! - [`Registration`]: module-lifetime registration of the link type and netdev notifier,
//!   and the fence that unregisters every device before the module goes away;
//! - [`obj`]: typed views of the verbs objects the core passes (`ib_cq`, `ib_qp`, ...);
//! - [`wr`]: kernel consumers' work-request lists;
//! - [`SkBuff`] / [`TxSkb`]: received and outgoing packets of the RoCEv2 UDP sockets
//!   ([`open_sockets`]), which hand every datagram to the driver's [`Receiver`].
//!
//! - [`verbs`]: the verbs entry points, which convert their raw arguments with these views
//!   and call the driver's [`Verbs`].
//!
//! Nothing here is driver policy, and nothing names a driver type: the driver implements
//! [`Verbs`] and [`Receiver`] and names the data each core object carries
//! ([`obj::DriverObj`]).

pub(crate) mod bindings;
pub(crate) mod capture;
pub(crate) mod debugfs;
pub(crate) mod dmabuf;
pub(crate) mod mem;
mod net;
pub(crate) mod obj;
pub(crate) mod odp;
mod queue;
mod stats;
pub(crate) mod sync;
pub(crate) mod task;
pub(crate) mod trace;
mod verbs;
pub(crate) mod wr;

pub(crate) use verbs::{Advice, MadResult, Verbs, MAD_SIZE};

pub(crate) use net::{
    current_netns, open_sockets, Arrival, DgidCache, GidGeneration, GidNetdevCache, KernelCrc32,
    NdevId, NetnsId, Receiver, RouteCache, SkBuff, TxChain, TxSkb,
};
pub(crate) use queue::{Queue, UContext, MAX_SLOT};
pub(crate) use stats::{set_hw_stats, NlDriverAttrs, RdmaCounter, StatDescs};
pub(crate) use task::{in_softirq, this_cpu};

use core::marker::PhantomData;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::prelude::*;
use kernel::sync::Mutex;
use kernel::types::Opaque;
use obj::{DriverObj, DrvObj};

/// A rate-limited dynamic-debug message on an error path: `what` happened on device `dev`,
/// with two values for context.
pub(crate) fn dbg(dev: &IbDev, what: &core::ffi::CStr, a: u64, b: u64) {
    // SAFETY: both strings are NUL-terminated and live for the call.
    unsafe { bindings::rrxe_glue_dbg(dev.name().as_char_ptr(), what.as_ptr().cast(), a, b) };
}

/// A random 32-bit number from the kernel's CSPRNG (keys, QP numbers, PSNs: values a
/// peer or another tenant must not guess).
pub(crate) fn random_u32() -> u32 {
    // SAFETY: get_random_u32 has no preconditions and may be called in any context.
    unsafe { bindings::rrxe_glue_random_u32() }
}

/// `EOPNOTSUPP` (the kernel crate of 6.12 has no constant for it).
pub(crate) fn eopnotsupp() -> Error {
    Error::from_errno(-95)
}

/// The ODP capability bits of FLUSH and ATOMIC WRITE (`IB_ODP_SUPPORT_FLUSH |
/// IB_ODP_SUPPORT_ATOMIC_WRITE`) where the core defines them (Linux 6.16 on); 0 before, where
/// neither the core nor rdma-core of that time knows the bits.
#[cfg(rrxe_have_odp_flush)]
pub(crate) const ODP_SUPPORT_FLUSH_ATOMIC_WRITE: bindings::ib_odp_transport_cap_bits =
    bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_FLUSH
        | bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_ATOMIC_WRITE;
/// See above: this core has no such bits.
#[cfg(not(rrxe_have_odp_flush))]
pub(crate) const ODP_SUPPORT_FLUSH_ATOMIC_WRITE: bindings::ib_odp_transport_cap_bits = 0;

/// A `struct net_device` borrowed for the duration of a callback.
#[repr(transparent)]
pub(crate) struct NetDev(Opaque<bindings::net_device>);

impl NetDev {
    /// # Safety
    /// `ptr` must point to a live `net_device` that stays alive for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a NetDev {
        // SAFETY: `NetDev` is a transparent wrapper of `Opaque<net_device>`, and the caller
        // guarantees the pointee lives for 'a.
        unsafe { &*ptr.cast::<NetDev>() }
    }

    fn as_ptr(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// A counted reference to this device.
    pub(crate) fn hold(&self) -> NetDevRef {
        // SAFETY: self is a live net_device (type invariant); the reference taken here is
        // owned by the returned NetDevRef, which gives it back on drop.
        unsafe { bindings::rrxe_glue_netdev_hold(self.as_ptr()) };
        NetDevRef(NonNull::from(&self.0).cast())
    }

    /// True for an Ethernet device (not loopback, not another link layer).
    pub(crate) fn is_ether(&self) -> bool {
        // SAFETY: self is a live net_device (type invariant).
        unsafe { bindings::rrxe_glue_netdev_is_ether(self.as_ptr()) }
    }

    /// Running and carrier present: the port is active.
    pub(crate) fn is_oper_up(&self) -> bool {
        // SAFETY: self is a live net_device (type invariant).
        unsafe { bindings::rrxe_glue_netdev_oper_up(self.as_ptr()) }
    }

    /// How many more packets the transmit queues should be given now (0 once they are half
    /// full; `u32::MAX` for a device without a queue).
    pub(crate) fn tx_room(&self) -> u32 {
        // SAFETY: self is a live net_device (type invariant); the helper reads its qdiscs'
        // lengths under RCU.
        unsafe { bindings::rrxe_glue_netdev_tx_room(self.as_ptr()) }
    }

    /// The current MTU in bytes.
    pub(crate) fn mtu(&self) -> u32 {
        // SAFETY: self is a live net_device (type invariant).
        unsafe { bindings::rrxe_glue_netdev_mtu(self.as_ptr()) }
    }

    /// The EUI-64 derived from the MAC address, in wire (big-endian) byte order.
    pub(crate) fn eui64(&self) -> [u8; 8] {
        let mut guid = [0u8; 8];
        // SAFETY: self is live; `guid` has the 8 bytes the helper writes.
        unsafe { bindings::rrxe_glue_netdev_eui64(self.as_ptr(), guid.as_mut_ptr()) };
        guid
    }

    /// The interface name.
    pub(crate) fn name(&self) -> &CStr {
        // SAFETY: netdev_name() returns the NUL-terminated name stored in the live device,
        // which lives at least as long as the borrow of self.
        unsafe { CStr::from_char_ptr(bindings::rrxe_glue_netdev_name(self.as_ptr())) }
    }
}

/// A counted reference to a `net_device` (released on drop).
pub(crate) struct NetDevRef(NonNull<bindings::net_device>);

impl NetDevRef {
    /// # Safety
    /// `ptr` is null or a net_device on which the caller owns one reference (`dev_hold`).
    unsafe fn from_held(ptr: *mut bindings::net_device) -> Option<Self> {
        NonNull::new(ptr).map(NetDevRef)
    }
}

impl core::ops::Deref for NetDevRef {
    type Target = NetDev;
    fn deref(&self) -> &NetDev {
        // SAFETY: we own a reference, so the device is alive as long as self.
        unsafe { NetDev::from_raw(self.0.as_ptr()) }
    }
}

impl Drop for NetDevRef {
    fn drop(&mut self) {
        // SAFETY: we own exactly one reference, given back here once.
        unsafe { bindings::rrxe_glue_netdev_put(self.0.as_ptr()) };
    }
}

/// The memory layout of every rrxe device: the core's `ib_device` first (so that the
/// core's pointer is also ours), then the driver's data (named by the top layer).
type RrxeDev = DrvObj<bindings::ib_device, DeviceData>;

/// The driver data of an rrxe device.
pub(crate) type DeviceData = <bindings::ib_device as DriverObj>::Data;

/// An rrxe `struct ib_device` borrowed from the RDMA core.
///
/// Invariant: the pointee was allocated by [`IbDev::create`] (it is an `RrxeDev` with
/// initialised `data`) and is alive for the borrow.
#[repr(transparent)]
pub(crate) struct IbDev(Opaque<bindings::ib_device>);

// SAFETY: the core calls device ops from any thread; DeviceData is Sync (the bound) and
// the ib_device part is only touched through core functions that do their own locking.
unsafe impl Sync for IbDev where DeviceData: Sync + Send {}

impl IbDev {
    /// # Safety
    /// `ptr` is an rrxe device (see type invariant), alive for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a IbDev {
        // SAFETY: transparent wrapper; liveness from the caller.
        unsafe { &*ptr.cast::<IbDev>() }
    }

    fn as_ptr(&self) -> *mut bindings::ib_device {
        self.0.get()
    }

    /// Whether `self` and `other` are the same device.
    pub(crate) fn is(&self, other: &IbDev) -> bool {
        ptr::eq(self.as_ptr(), other.as_ptr())
    }

    /// The driver's data of this device.
    pub(crate) fn data(&self) -> &DeviceData {
        // SAFETY: by the type invariant the ib_device is the first field of a live RrxeDev
        // whose `data` was initialised in `create`.
        unsafe { &(*self.as_ptr().cast::<RrxeDev>()).data }
    }

    /// The device name (`rrxe0`, …).
    pub(crate) fn name(&self) -> &CStr {
        // SAFETY: the helper returns the device's `name` array, NUL-terminated and inside the
        // live ib_device; a rename rewrites it in place (a concurrent reader may see a torn
        // name, never freed memory).
        unsafe { CStr::from_char_ptr(bindings::rrxe_glue_ibdev_name(self.as_ptr())) }
    }

    /// The node GUID (big-endian on the wire, as the core stores it).
    pub(crate) fn node_guid(&self) -> u64 {
        // SAFETY: node_guid is set once before registration and only read afterwards.
        unsafe { (*self.as_ptr()).node_guid }
    }

    /// The netdev bound to port 1, with a reference held.
    pub(crate) fn netdev(&self) -> Option<NetDevRef> {
        // SAFETY: ib_device_get_netdev returns null or a held reference.
        unsafe { NetDevRef::from_held(bindings::ib_device_get_netdev(self.as_ptr(), 1)) }
    }

    /// Fills the port's active speed and width from the netdev's link settings.
    pub(crate) fn eth_speed(&self, attr: &mut bindings::ib_port_attr) {
        // SAFETY: the device is live; the outputs are fields of an exclusive borrow. On
        // failure the core leaves a default (SDR x1), which is fine to report.
        let _ = unsafe {
            bindings::ib_get_eth_speed(
                self.as_ptr(),
                1,
                &mut attr.active_speed,
                &mut attr.active_width,
            )
        };
    }

    /// Whether the RDMA core has this device in `ndev`'s network namespace.
    pub(crate) fn in_netns_of(&self, ndev: &NetDev) -> bool {
        // SAFETY: both are live; the helper only compares namespace pointers.
        unsafe { bindings::rrxe_glue_dev_net_is_ndev(self.as_ptr(), ndev.as_ptr()) }
    }

    /// Whether the RDMA core has this device in the initial network namespace.
    pub(crate) fn in_init_net(&self) -> bool {
        // SAFETY: the device is live; the helper only compares namespace pointers.
        unsafe { bindings::rrxe_glue_dev_net_is_init(self.as_ptr()) }
    }

    /// Reports a port event to the core and its clients.
    pub(crate) fn port_event(&self, event: bindings::ib_event_type) {
        // SAFETY: the device is live; the helper builds the ib_event on its stack.
        unsafe { bindings::rrxe_glue_port_event(self.as_ptr(), 1, event as i32) };
    }

    /// Unregisters the device from a context that must not sleep on unregistration
    /// (netdev notifier, under RTNL): the core does it from a work item.
    pub(crate) fn unregister_queued(&self) {
        // SAFETY: the device is registered and has dealloc_driver set (see `create`).
        unsafe { bindings::ib_unregister_device_queued(self.as_ptr()) };
    }

    /// Creates and registers a device named `name` on `ndev`, with the verbs of `V`.
    fn create<V: Verbs>(name: &CStr, ndev: &NetDev, data: impl PinInit<DeviceData>) -> Result
    where
        <bindings::ib_mr as DriverObj>::Data: obj::PageSink,
    {
        let ops = verbs::device_ops::<V>();
        let reg = registry().ok_or(ENODEV)?;
        let size = core::mem::size_of::<RrxeDev>();
        // SAFETY: rrxe_glue_alloc_device (the core's _ib_alloc_device) allocates `size`
        // zeroed bytes (size >= sizeof(ib_device)) and initialises the ib_device at their
        // start.
        let raw = unsafe { bindings::rrxe_glue_alloc_device(size) };
        let rdev = NonNull::new(raw.cast::<RrxeDev>()).ok_or(ENOMEM)?;
        let ib = raw;
        // SAFETY: freshly allocated and never moved (the core frees it in place), not yet
        // visible to anybody: we have exclusive access and may pin-initialise data in place.
        // The initialiser is infallible.
        let _ = unsafe { pin_init_slot(data, ptr::addr_of_mut!((*rdev.as_ptr()).data)) };
        // SAFETY: as above.
        unsafe {
            (*ib).node_type = bindings::RDMA_NODE_IB_CA as _;
            (*ib).phys_port_cnt = 1;
            // One completion vector per online CPU (see CompVector); rdma_rxe and siw
            // count the possible CPUs but run every handler where the completion happens.
            (*ib).num_comp_vectors =
                bindings::rrxe_glue_num_online_cpus().clamp(1, i32::MAX as u32) as i32;
            (*ib).local_dma_lkey = 0;
            (*ib).node_guid = u64::from_ne_bytes(ndev.eui64());
            (*ib).uverbs_cmd_mask |= (1u64
                << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND)
                | (1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
            bindings::rrxe_glue_set_node_desc(ib, kernel::c_str!("rrxe").as_char_ptr());
            bindings::rrxe_glue_mark_name_assigned_by_user(ib);
            bindings::ib_set_device_ops(ib, &ops);
            bindings::rrxe_glue_set_sysfs_ops(ib);
        }
        // From here on, an error path releases the device with ib_dealloc_device, which calls
        // our dealloc_driver and so drops `data`.
        let free = |err: Error| {
            // SAFETY: the device is allocated and not registered; dealloc_driver drops data.
            unsafe { bindings::ib_dealloc_device(ib) };
            err
        };
        // SAFETY: ib is a valid device nobody else sees yet (not registered), so its RDMA
        // namespace may be set; ndev is live; ib_device_set_netdev takes its own reference
        // on ndev.
        let err = unsafe {
            bindings::rrxe_glue_set_dev_net(ib, ndev.as_ptr());
            bindings::ib_device_set_netdev(ib, ndev.as_ptr(), 1)
        };
        if err != 0 {
            return Err(free(Error::from_errno(err)));
        }
        if let Err(e) = reg.insert(rdev) {
            return Err(free(e));
        }
        // SAFETY: ib is fully set up; name is a NUL-terminated string.
        let err = unsafe { bindings::rrxe_glue_register_device(ib, name.as_char_ptr()) };
        if err != 0 {
            // dealloc_driver removes the registry entry.
            return Err(free(Error::from_errno(err)));
        }
        Ok(())
    }
}

/// A pointer to an rrxe device held by one of its objects (QPs): the RDMA core destroys
/// every object before the device, so the device outlives the holder.
#[derive(Clone, Copy)]
pub(crate) struct DevPtr(NonNull<bindings::ib_device>);

// SAFETY: IbDev is Sync; the pointer is only turned into a shared reference.
unsafe impl Send for DevPtr {}
// SAFETY: as above.
unsafe impl Sync for DevPtr {}

impl DevPtr {
    /// The device.
    pub(crate) fn get(&self) -> &IbDev {
        // SAFETY: see the type doc: the device outlives every object that holds a DevPtr.
        unsafe { IbDev::from_raw(self.0.as_ptr()) }
    }
}

impl IbDev {
    /// A [`DevPtr`] for an object of this device.
    pub(crate) fn ptr(&self) -> DevPtr {
        // SAFETY: self is a live device, so its pointer is non-null.
        DevPtr(unsafe { NonNull::new_unchecked(self.as_ptr()) })
    }

    /// The completion vectors the device reports (`num_comp_vectors`, set at its creation:
    /// one per CPU online then, at least one).
    pub(crate) fn num_comp_vectors(&self) -> u32 {
        // SAFETY: a live device; the field is written once, before registration.
        let n = unsafe { (*self.as_ptr()).num_comp_vectors };
        u32::try_from(n).unwrap_or(1).max(1)
    }
}

/// A CQ's completion vector: runs the CQ's completion handler on the vector's CPU, now if
/// the caller is on it, else from a work item queued there (`rrxe_glue_cq_vec_comp`). Owned
/// by the CQ's data; dropping it (at the CQ's destruction) drops a queued call and waits for
/// a running one.
pub(crate) struct CompVector(NonNull<bindings::rrxe_cq_vec>);

// SAFETY: the C functions below may be called from any thread (queue_work_on, flush_work
// and cancel_work_sync synchronise on the work item; `cq` and `cpu` are written once, before
// the value exists).
unsafe impl Send for CompVector {}
// SAFETY: as above.
unsafe impl Sync for CompVector {}

impl CompVector {
    /// Calls the CQ's completion handler on the vector's CPU (any context).
    pub(crate) fn fire(&self) {
        // SAFETY: a live vector (owned by self) of a live CQ (the vector dies with it).
        unsafe { bindings::rrxe_glue_cq_vec_comp(self.0.as_ptr()) }
    }

    /// Waits until a queued handler call has run (process context).
    pub(crate) fn flush(&self) {
        // SAFETY: a live vector; flush_work sleeps, the caller is in process context.
        unsafe { bindings::rrxe_glue_cq_vec_flush(self.0.as_ptr()) }
    }
}

impl Drop for CompVector {
    fn drop(&mut self) {
        // SAFETY: owned, never used again; the CQ's data (our owner) is dropped at the CQ's
        // destruction, in process context, when no QP posts to it any more.
        unsafe { bindings::rrxe_glue_cq_vec_free(self.0.as_ptr()) }
    }
}

/// A CQ a QP posts completions to. The core keeps the CQ alive (usecnt) while a QP uses it.
#[derive(Clone, Copy)]
pub(crate) struct CqPtr(NonNull<bindings::ib_cq>);

// SAFETY: Cq is Sync; posting takes the CQ's irq-safe lock.
unsafe impl Send for CqPtr {}
// SAFETY: as above.
unsafe impl Sync for CqPtr {}

impl CqPtr {
    /// # Safety
    /// `cq` is a live CQ of ours that outlives the returned value's users.
    pub(crate) unsafe fn new(cq: *mut bindings::ib_cq) -> Option<Self> {
        NonNull::new(cq).map(CqPtr)
    }

    /// The CQ's driver data.
    pub(crate) fn data(&self) -> &<bindings::ib_cq as DriverObj>::Data
    where
        bindings::ib_cq: DriverObj,
    {
        // SAFETY: a live CQ of ours (type invariant), so an initialised DrvObj.
        unsafe { &(*self.0.as_ptr().cast::<DrvObj<bindings::ib_cq, _>>()).data }
    }

    /// Reports IB_EVENT_CQ_ERR to the consumer.
    pub(crate) fn error_event(&self) {
        // SAFETY: live CQ.
        unsafe {
            bindings::rrxe_glue_cq_event(
                self.0.as_ptr(),
                bindings::ib_event_type_IB_EVENT_CQ_ERR as i32,
            )
        }
    }
}

/// An XRC domain's identity: the address of its `ib_xrcd`, which the core keeps allocated
/// while any SRQ or QP of the domain exists. Only compared, never dereferenced.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct XrcdId(pub(crate) usize);

/// The `ib_srq` of an SRQ, for its async events. The core keeps it alive while the SRQ
/// object that holds this exists (destroy_srq runs after every QP using it is gone).
#[derive(Clone, Copy)]
pub(crate) struct SrqPtr(NonNull<bindings::ib_srq>);

// SAFETY: only used to dispatch events, which the core allows from any context.
unsafe impl Send for SrqPtr {}
// SAFETY: as above.
unsafe impl Sync for SrqPtr {}

impl SrqPtr {
    /// IB_EVENT_SRQ_LIMIT_REACHED.
    pub(crate) fn limit_reached(&self) {
        // SAFETY: live SRQ (type doc).
        unsafe {
            bindings::rrxe_glue_srq_event(
                self.0.as_ptr(),
                bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED as i32,
            )
        }
    }

    /// IB_EVENT_SRQ_ERR.
    pub(crate) fn error(&self) {
        // SAFETY: live SRQ (type doc).
        unsafe {
            bindings::rrxe_glue_srq_event(
                self.0.as_ptr(),
                bindings::ib_event_type_IB_EVENT_SRQ_ERR as i32,
            )
        }
    }
}

/// The `ib_qp` of a QP, for its affiliated asynchronous events.
///
/// # Invariants
/// The `ib_qp` is one of ours, allocated by the core until `destroy_qp` returns; the driver
/// raises events only from the QP's creation to its `destroy_qp`: in its runs (which
/// `destroy_qp` waits for) and in `modify_qp` (which the core does not run at the same
/// time as `destroy_qp` on the same QP: the uverbs object lock for user QPs, the consumer's
/// contract for kernel ones).
#[derive(Clone, Copy)]
pub(crate) struct QpPtr(NonNull<bindings::ib_qp>);

// SAFETY: only used to dispatch events, which the core allows from any context (consumers'
// handlers run in interrupt context for hardware devices).
unsafe impl Send for QpPtr {}
// SAFETY: as above.
unsafe impl Sync for QpPtr {}

impl QpPtr {
    /// Calls the QP's event handler (the core's, which passes it on to the consumer's, or
    /// for a user QP to uverbs' async event queue) with `event`. The caller holds no lock
    /// the handler might take: a kernel consumer's handler may call into the QP (post,
    /// modify, drain). Any context.
    pub(crate) fn event(&self, event: bindings::ib_event_type) {
        // SAFETY: a live QP (type invariant); the helper builds the ib_event on its stack.
        unsafe { bindings::rrxe_glue_qp_event(self.0.as_ptr(), event as i32) }
    }
}

/// A counted reference to an rrxe device (`ib_device_put` on drop).
pub(crate) struct IbDevRef(NonNull<bindings::ib_device>);

impl IbDevRef {
    /// Our device bound to `ndev`, if any.
    pub(crate) fn by_netdev(ndev: &NetDev) -> Option<IbDevRef> {
        // SAFETY: ndev is live; the core returns null or a device with a reference held.
        let p = unsafe {
            bindings::ib_device_get_by_netdev(
                ndev.as_ptr(),
                bindings::rdma_driver_id_RDMA_DRIVER_UNKNOWN,
            )
        };
        let dev = IbDevRef(NonNull::new(p)?);
        // Several drivers may report RDMA_DRIVER_UNKNOWN: ours are owned by this module.
        // SAFETY: we hold a reference, so ops is valid to read.
        let ours = unsafe { (*p).ops.owner == bindings::rrxe_glue_this_module() };
        ours.then_some(dev)
    }

    /// Whether any RDMA device (of any driver) is named `name`.
    /// A tree without `ib_device_get_by_name` answers false (`rrxe_glue.c`): registration
    /// refuses a taken name there, with EEXIST.
    pub(crate) fn name_exists(name: &CStr) -> bool {
        // SAFETY: name is NUL-terminated; the glue drops the reference it may take.
        unsafe { bindings::rrxe_glue_ib_device_name_exists(name.as_char_ptr()) }
    }
}

impl core::ops::Deref for IbDevRef {
    type Target = IbDev;
    fn deref(&self) -> &IbDev {
        // SAFETY: the reference we hold keeps the device (an rrxe device, checked in
        // by_netdev) alive.
        unsafe { IbDev::from_raw(self.0.as_ptr()) }
    }
}

impl Drop for IbDevRef {
    fn drop(&mut self) {
        // SAFETY: we own one ib_device reference, released once here.
        unsafe { bindings::ib_device_put(self.0.as_ptr()) };
    }
}

/// The driver-private input and output of a uverbs command.
pub(crate) struct Udata<'a>(
    *mut bindings::ib_udata,
    PhantomData<&'a mut bindings::ib_udata>,
);

impl Udata<'_> {
    /// # Safety
    /// `p` is null (a kernel caller) or the live driver udata of the command being served,
    /// for `'a`.
    pub(crate) unsafe fn from_raw<'a>(p: *mut bindings::ib_udata) -> Udata<'a> {
        Udata(p, PhantomData)
    }

    /// The driver udata of a command's attribute bundle.
    ///
    /// # Safety
    /// `attrs` is null or the live bundle of the command being served, for `'a`.
    pub(crate) unsafe fn from_attrs<'a>(attrs: *mut bindings::uverbs_attr_bundle) -> Udata<'a> {
        // SAFETY: the helper returns null for a null bundle, else its udata, live for 'a.
        Udata(
            unsafe { bindings::rrxe_glue_attrs_udata(attrs) },
            PhantomData,
        )
    }

    /// Bytes of driver-private input.
    pub(crate) fn inlen(&self) -> usize {
        // SAFETY: null or a live udata for the duration of the command (the helper checks null).
        unsafe { bindings::rrxe_glue_udata_inlen(self.0) }
    }

    /// Bytes of driver-private output the caller accepts.
    pub(crate) fn outlen(&self) -> usize {
        // SAFETY: as in inlen.
        unsafe { bindings::rrxe_glue_udata_outlen(self.0) }
    }

    /// Whether this command came from userspace (kernel callers pass no udata).
    pub(crate) fn is_user(&self) -> bool {
        !self.0.is_null()
    }

    /// Copies a response to the user, who must accept all of it.
    pub(crate) fn respond<T: UserAbi>(&mut self, resp: &T) -> Result {
        let len = core::mem::size_of::<T>();
        if self.outlen() < len {
            return Err(EINVAL);
        }
        // SAFETY: resp is valid for len bytes; the helper copies min(len, outlen) bytes to
        // the user buffer with copy_to_user.
        let err =
            unsafe { bindings::rrxe_glue_copy_to_udata(self.0, (resp as *const T).cast(), len) };
        if err != 0 {
            return Err(Error::from_errno(err));
        }
        Ok(())
    }
}

impl Udata<'_> {
    /// The command's driver-private input as a `T`: as many bytes as the caller gave (at
    /// most `T`'s size), the rest zero. `EINVAL` for a kernel caller.
    pub(crate) fn request<T: UserAbi + Default>(&self) -> Result<T> {
        let mut cmd = T::default();
        // SAFETY: cmd is valid for size_of::<T>() bytes of writes, and any bytes make a
        // valid T (UserAbi); the helper copies min(len, inlen) bytes with copy_from_user.
        let err = unsafe {
            bindings::rrxe_glue_copy_from_udata(
                (&mut cmd as *mut T).cast(),
                self.0,
                core::mem::size_of::<T>(),
            )
        };
        if err != 0 {
            return Err(Error::from_errno(err));
        }
        Ok(cmd)
    }

    /// Copies a response to the user address `addr` the command named (a command without
    /// a driver output buffer: `modify_srq`). `EFAULT` if it is not writable.
    pub(crate) fn respond_at<T: UserAbi>(&mut self, addr: u64, resp: &T) -> Result {
        if !self.is_user() {
            return Err(EINVAL);
        }
        // SAFETY: resp is valid for size_of::<T>() bytes of reads (plain data, every byte
        // initialised: UserAbi); copy_to_user checks the user range itself. The command
        // is a user command (checked above), run in the process that named the address.
        let err = unsafe {
            bindings::rrxe_glue_copy_to_user_addr(
                addr,
                (resp as *const T).cast(),
                core::mem::size_of::<T>(),
            )
        };
        if err != 0 {
            return Err(Error::from_errno(err));
        }
        Ok(())
    }
}

/// A structure of the user ABI (`include/rdma/rrxe-abi.h`) that may be copied to userspace
/// as bytes.
///
/// # Safety
/// Implementors are `repr(C)` plain data with every byte initialised: no padding, no
/// pointers, valid for any bit pattern.
pub(crate) unsafe trait UserAbi {}

// SAFETY: two __u32 fields, no padding (see rrxe-abi.h).
unsafe impl UserAbi for bindings::rrxe_alloc_ucontext_resp {}
// SAFETY: one rrxe_queue_info: two __u64 then two __u32, no padding (see rrxe-abi.h).
unsafe impl UserAbi for bindings::rrxe_create_cq_resp {}
// SAFETY: one rrxe_queue_info of u64/u32 fields, no padding (checked by the provider's layout test).
unsafe impl UserAbi for bindings::rrxe_resize_cq_resp {}
// SAFETY: two __u32, no padding (see rrxe-abi.h).
unsafe impl UserAbi for bindings::rrxe_create_ah_resp {}
// SAFETY: one rrxe_queue_info then two __u32: 32 bytes, no padding.
unsafe impl UserAbi for bindings::rrxe_create_srq_resp {}
// SAFETY: one __u64, no padding.
unsafe impl UserAbi for bindings::rrxe_modify_srq_cmd {}
// SAFETY: two __u64 then two __u32: 24 bytes, no padding.
unsafe impl UserAbi for bindings::rrxe_queue_info {}
// SAFETY: two rrxe_queue_info (no padding) then two __u32: 56 bytes, no padding.
unsafe impl UserAbi for bindings::rrxe_create_qp_resp {}

/// Maximum number of rrxe devices at once.
const MAX_DEVICES: usize = 64;

/// All live rrxe devices, so that module exit can unregister them.
#[pin_data]
struct Registry {
    /// The device list. A mutex, process context only: `rdma link add` (device creation),
    /// `dealloc_driver` and module exit. No other rrxe lock is held when it is taken or
    /// taken inside it; module exit releases it before unregistering a device.
    #[pin]
    devices: Mutex<[Option<RegEntry>; MAX_DEVICES]>,
    /// `rdma link add` (the driver's [`Verbs`]).
    newlink: fn(&CStr, &NetDev) -> Result,
    /// Netdev notifier events (the driver's [`Verbs`]).
    netdev_event: fn(core::ffi::c_ulong, &NetDev),
}

/// `rdma link add` with the verbs of `V`: the driver checks the request and gives the
/// device's data, glue creates and registers the device.
fn link_add<V: Verbs>(name: &CStr, ndev: &NetDev) -> Result
where
    <bindings::ib_mr as DriverObj>::Data: obj::PageSink,
{
    let data = V::newlink(name, ndev)?;
    IbDev::create::<V>(name, ndev, data)
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct RegEntry(NonNull<RrxeDev>);
// SAFETY: a RegEntry is only an identity while in the registry; it is dereferenced only under
// the rules of `Registration::drop`.
unsafe impl Send for RegEntry {}

impl Registry {
    fn insert(&self, d: NonNull<RrxeDev>) -> Result {
        let mut slots = self.devices.lock();
        let free = slots.iter_mut().find(|s| s.is_none()).ok_or(ENOSPC)?;
        *free = Some(RegEntry(d));
        Ok(())
    }

    fn remove(&self, d: NonNull<RrxeDev>) {
        let mut slots = self.devices.lock();
        for s in slots.iter_mut() {
            if *s == Some(RegEntry(d)) {
                *s = None;
            }
        }
    }
}

/// Published between module init and exit; see [`Registration`].
static REGISTRY: AtomicPtr<Registry> = AtomicPtr::new(ptr::null_mut());

fn registry() -> Option<&'static Registry> {
    let p = REGISTRY.load(Ordering::Acquire);
    // SAFETY: a non-null REGISTRY points to the pinned Registry owned by the live
    // Registration; it is cleared only after every user (link ops, notifier, every device's
    // callbacks) has been fenced off in Registration::drop.
    unsafe { p.as_ref() }
}

/// Module-lifetime registration: the `rrxe` link type, the netdev notifier and the
/// per-namespace state (each namespace's sockets, opened by [`open_sockets`]).
pub(crate) struct Registration {
    registry: Pin<KBox<Registry>>,
}

impl Registration {
    /// Registers the link type and notifier, whose devices have the verbs of `V` and
    /// whose sockets hand what they receive to `R`.
    pub(crate) fn new<V: Verbs, R: Receiver>() -> Result<Self>
    where
        <bindings::ib_mr as DriverObj>::Data: obj::PageSink,
    {
        // The ICRC's routine, fixed before any device can send or receive.
        mem::choose_icrc()?;
        let registry = KBox::pin_init(
            pin_init!(Registry {
                devices <- kernel::new_mutex!([None; MAX_DEVICES], "rrxe_devices"),
                newlink: link_add::<V>,
                netdev_event: V::netdev_event,
            }),
            GFP_KERNEL,
        )?;
        let p = ptr::from_ref::<Registry>(&registry).cast_mut();
        REGISTRY.store(p, Ordering::Release);
        // SAFETY: plain registration; C side objects are static. The receive functions are
        // this module's, so they outlive every socket (closed before the module goes).
        let err = unsafe {
            bindings::rrxe_glue_register(Some(net::udp_recv::<R>), Some(net::udp_recv_local::<R>))
        };
        if err != 0 {
            REGISTRY.store(ptr::null_mut(), Ordering::Release);
            return Err(Error::from_errno(err));
        }
        debugfs::init::<V>();
        Ok(Self { registry })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // 1. No new devices.
        // SAFETY: registered in new().
        unsafe { bindings::rrxe_glue_unregister() };
        // 2. Unregister every device. A device found in the registry is alive (its
        // dealloc_driver, which removes it, has not finished); get_device keeps its memory
        // while we unregister. __ib_unregister_device is fenced by the device's
        // unregistration lock, so when ib_unregister_device returns, any concurrent
        // unregistration (link delete, netdev removal) has finished too and the entry is gone.
        loop {
            let next = {
                let slots = self.registry.devices.lock();
                slots.iter().flatten().next().copied()
            };
            let Some(RegEntry(d)) = next else { break };
            let ib = d.as_ptr().cast::<bindings::ib_device>();
            // SAFETY: see above; get/put balance, and the device memory stays valid meanwhile.
            unsafe {
                bindings::rrxe_glue_ib_get_device(ib);
                bindings::ib_unregister_device(ib);
                // If it is still listed, it was never registered successfully; should not
                // happen, but never loop forever.
                self.registry.remove(d);
                bindings::rrxe_glue_ib_put_device(ib);
            }
        }
        // 3. No more netdev events, no more packets: every namespace's sockets are closed.
        // SAFETY: registered in new().
        unsafe { bindings::rrxe_glue_unregister_notifier() };
        // A receive softirq may still be inside the encapsulation callback of a socket just
        // released (UDP's lookup is an RCU read section; the socket release does not wait
        // for one in every tree): wait for it before the module's data goes.
        // SAFETY: process context (module exit), no lock held.
        unsafe { bindings::rrxe_glue_synchronize_rcu() };
        // Every device, and so its debugfs directory, is gone.
        debugfs::exit();
        REGISTRY.store(ptr::null_mut(), Ordering::Release);
    }
}

/// Last callback of a device (`dealloc_driver` in every rrxe ops table): drops the driver
/// data and forgets the device.
pub(crate) unsafe extern "C" fn dealloc_driver(ibdev: *mut bindings::ib_device) {
    let rdev = ibdev.cast::<RrxeDev>();
    // SAFETY: called once per device by ib_dealloc_device, after every other op has
    // returned and before the memory is freed; `data` was initialised in IbDev::create.
    unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*rdev).data)) };
    if let (Some(reg), Some(p)) = (registry(), NonNull::new(rdev)) {
        reg.remove(p);
    }
}

/// This module's `struct module` (the ops table's owner).
pub(crate) fn this_module() -> *mut bindings::module {
    // SAFETY: returns this module's `struct module`, valid while the module is loaded.
    unsafe { bindings::rrxe_glue_this_module() }
}

/// The address vector of an AH attribute the core passes (a create_ah's, or a
/// modify_qp's path): EINVAL unless RoCE with a GRH over IPv4 or IPv6.
///
/// # Safety
/// `attr` is live for the call, and its GRH's `sgid_attr` is null or a gid attribute the
/// core holds a reference on (as the core guarantees for the attributes it passes).
pub(crate) unsafe fn ah_attr_to_av(
    attr: *const bindings::rdma_ah_attr,
) -> Result<bindings::rrxe_kav> {
    let mut av = bindings::rrxe_kav::default();
    // SAFETY: by the contract.
    let err = unsafe { bindings::rrxe_glue_ah_attr_to_av(attr, &mut av) };
    if err != 0 {
        return Err(Error::from_errno(err));
    }
    Ok(av)
}

/// Fills an AH attribute (query_ah, query_qp) from an address vector.
pub(crate) fn av_to_ah_attr(av: &bindings::rrxe_kav, attr: &mut bindings::rdma_ah_attr) {
    // SAFETY: both are live and exclusive for the call; the helper only writes `attr`.
    unsafe { bindings::rrxe_glue_av_to_ah_attr(av, attr) };
}

/// The core's QP state transition table: whether moving from `cur` to `new` with `mask`
/// is allowed for a QP of `qp_type`.
pub(crate) fn modify_qp_is_ok(cur: u32, new: u32, qp_type: u32, mask: u32) -> bool {
    // SAFETY: a plain query of a constant table.
    unsafe { bindings::ib_modify_qp_is_ok(cur, new, qp_type, mask) }
}

/// `rdma link add NAME type rrxe netdev NDEV` (called by `rrxe_glue_net.c`'s link ops).
#[no_mangle]
unsafe extern "C" fn rrxe_rs_newlink(
    name: *const kernel::ffi::c_char,
    ndev: *mut bindings::net_device,
) -> i32 {
    if name.is_null() || ndev.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: the rdma netlink core passes a NUL-terminated name and a netdev it holds a
    // reference on for the duration of the call.
    let (name, ndev) = unsafe { (CStr::from_char_ptr(name), NetDev::from_raw(ndev)) };
    let Some(reg) = registry() else {
        return ENODEV.to_errno();
    };
    verbs::errno((reg.newlink)(name, ndev))
}

/// Netdev notifier events (called under RTNL by `rrxe_glue_net.c`'s notifier).
#[no_mangle]
unsafe extern "C" fn rrxe_rs_netdev_event(
    event: core::ffi::c_ulong,
    ndev: *mut bindings::net_device,
) {
    if ndev.is_null() {
        return;
    }
    // SAFETY: the notifier chain passes a live netdev for the duration of the call.
    let ndev = unsafe { NetDev::from_raw(ndev) };
    if let Some(reg) = registry() {
        (reg.netdev_event)(event, ndev);
    }
}

/// Runs a pin-initialiser on `slot`. The one place that names the kernel's entry point for
/// it, which trees spell differently: `__init` in the pin-init crate, `__pinned_init` in
/// older trees' `kernel::init`.
///
/// # Safety
///
/// As `PinInit`'s: `slot` is valid for writes and uninitialised, and does not move until
/// it is dropped; on `Err` the caller does not touch it.
pub(crate) unsafe fn pin_init_slot<T, E>(init: impl PinInit<T, E>, slot: *mut T) -> Result<(), E> {
    #[cfg(rrxe_have_pin_init_init)]
    // SAFETY: the caller's contract is PinInit::__init's.
    let r = unsafe { init.__init(slot) };
    #[cfg(not(rrxe_have_pin_init_init))]
    // SAFETY: the caller's contract is PinInit::__pinned_init's.
    let r = unsafe { init.__pinned_init(slot) };
    r
}

/// The module's version (`RRXE_VERSION`, from Cargo.toml) as a raw firmware version:
/// major, minor and patch in bits 47..32, 31..16 and 15..0, as libibverbs' providers read
/// `fw_ver` ("major.minor.sub_minor").
pub(crate) fn module_version_raw() -> u64 {
    // SAFETY: no arguments; reads a compile-time string.
    unsafe { bindings::rrxe_glue_module_version_raw() }
}
