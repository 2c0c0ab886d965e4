// SPDX-License-Identifier: GPL-2.0
//! The C side of the verbs: the `struct ib_device_ops` of rrxe devices and its trampolines,
//! generic over the driver's [`Verbs`].
//!
//! A trampoline is a doorway: it converts its raw arguments once, with the views of
//! [`super::obj`] and [`super::wr`], calls one safe method of [`Verbs`] and turns the
//! result into an errno or an `ERR_PTR`. The policy lives in the driver's implementation
//! (its `verbs` module), which needs no `unsafe`.
//!
//! Every conversion relies on one fact about the caller, the RDMA core: it passes the
//! pointers of a live rrxe device and of live objects it allocated with the sizes declared
//! in [`device_ops`] (or, for MRs, that we returned), for the duration of the call. An
//! object's data is initialised before its creation callback succeeds: the creation
//! methods must return the [`Created`] proof that only [`NewObj::init`] gives.

use super::obj::PageSink;
use super::obj::{destroy, free_boxed, map_mr_sg, Created, DriverObj, DrvObj, NewObj, Obj};
use super::wr::WrList;
use super::{bindings as b, CqPtr, IbDev, NetDev, NlDriverAttrs, RdmaCounter, Udata, XrcdId};
use core::mem::size_of;
use kernel::prelude::*;

mod ah;
mod counter;
mod cq;
mod device;
mod mr;
mod qp;
mod srq;
use ah::*;
use counter::*;
use cq::*;
use device::*;
use mr::*;
use qp::*;
use srq::*;

/// The verbs of the driver: what each entry point calls once its arguments are converted.
pub(crate) trait Verbs: 'static
where
    <b::ib_mr as DriverObj>::Data: PageSink,
{
    /// `rdma link add`: checks the request and returns the new device's data.
    fn newlink(
        name: &CStr,
        ndev: &NetDev,
    ) -> Result<impl PinInit<<b::ib_device as DriverObj>::Data>>;
    /// A netdev notifier event (under RTNL).
    fn netdev_event(event: core::ffi::c_ulong, ndev: &NetDev);
    /// The device is registered.
    fn enable(dev: &IbDev) -> Result;
    /// Reading the device's debugfs file `faults`: its text into `out`; the length written.
    fn faults_show(dev: &IbDev, out: &mut [u8]) -> usize;
    /// Writing the device's debugfs file `faults` (one write, whole; the writer has
    /// CAP_NET_ADMIN in the device's network namespace).
    fn faults_write(dev: &IbDev, text: &[u8]) -> Result;
    /// The device's capture netdev (its debugfs file `capture`).
    fn capture(dev: &IbDev) -> &crate::glue::capture::Capture;
    /// `query_device`.
    fn query_device(dev: &IbDev, attr: &mut b::ib_device_attr, udata: &Udata<'_>) -> Result;
    /// `query_port`.
    fn query_port(dev: &IbDev, port: u32, attr: &mut b::ib_port_attr) -> Result;
    /// `get_port_immutable`.
    fn port_immutable(dev: &IbDev, port: u32, imm: &mut b::ib_port_immutable) -> Result;
    /// `query_pkey`.
    fn query_pkey(dev: &IbDev, port: u32, index: u16) -> Result<u16>;
    /// `add_gid` or `del_gid`: the core is adding a GID to the port's table (before it
    /// stores the entry) or deleting one (after marking it deleted, before dropping its
    /// netdev); process context, the table's mutex held.
    fn gid_changed(dev: &IbDev);
    /// `alloc_ucontext`.
    fn alloc_ucontext<'a>(
        uctx: NewObj<'a, b::ib_ucontext>,
        udata: &mut Udata<'_>,
    ) -> Result<Created<'a, b::ib_ucontext>>;
    /// `alloc_pd`.
    fn alloc_pd(pd: NewObj<'_, b::ib_pd>) -> Result<Created<'_, b::ib_pd>>;
    /// `dealloc_pd`, before the PD's data goes.
    fn dealloc_pd(pd: &Obj<'_, b::ib_pd>);
    /// `alloc_xrcd`: an XRC domain, known by its identity.
    fn alloc_xrcd(xrcd: XrcdId) -> Result;
    /// `dealloc_xrcd` (the core made sure nothing uses the domain any more).
    fn dealloc_xrcd(xrcd: XrcdId);
    /// `alloc_hw_port_stats`: the core owns the result.
    fn alloc_hw_stats() -> *mut b::rdma_hw_stats;
    /// The port's counter values, in the order of [`Verbs::alloc_hw_stats`]'s descriptors.
    /// The core adds the values of its per-QP counter objects to them (`rdma statistic show
    /// link`, `hw_counters/`), so what those counted is left out here.
    fn hw_stats(dev: &IbDev) -> impl Iterator<Item = u64>;
    /// The number of counters.
    const NUM_STATS: i32;
    /// `process_mad`: what to do with the MAD `req` at `port` (a response goes in `out`).
    fn process_mad(
        dev: &IbDev,
        port: u32,
        req: &[u8; MAD_SIZE],
        out: &mut [u8; MAD_SIZE],
    ) -> MadResult;
    /// `counter_alloc_stats`: the values of a per-QP counter object, with the port's
    /// descriptors (the core adds them index by index to the port's); the core owns them.
    fn alloc_counter_stats() -> *mut b::rdma_hw_stats;
    /// `counter_bind_qp`: `qp`'s events count in `counter` from now on; a counter without
    /// a number gets one.
    fn counter_bind_qp(counter: &RdmaCounter<'_>, qp: &Obj<'_, b::ib_qp>) -> Result;
    /// `counter_unbind_qp`: `qp`'s events so far stay in `counter`, later ones do not.
    fn counter_unbind_qp(counter: &RdmaCounter<'_>, qp: &Obj<'_, b::ib_qp>);
    /// `counter_update_stats`: brings `counter`'s values up to date.
    fn counter_update(counter: &RdmaCounter<'_>) -> Result;
    /// `counter_dealloc`: `counter` is freed (no QP is bound to it).
    fn counter_dealloc(counter: &RdmaCounter<'_>);
    /// `fill_res_qp_entry`: the driver's own attributes of `qp`.
    fn fill_res_qp(qp: &Obj<'_, b::ib_qp>, attrs: &mut NlDriverAttrs<'_>) -> Result;

    /// `create_cq`.
    fn create_cq<'a>(
        cq: NewObj<'a, b::ib_cq>,
        attr: &b::ib_cq_init_attr,
        udata: &mut Udata<'_>,
    ) -> Result<Created<'a, b::ib_cq>>;
    /// `destroy_cq`, once the CQ's data is gone.
    fn cq_destroyed(dev: &IbDev);
    /// `poll_cq`: fills `wcs`, returns how many (or the errno `ib_poll_cq` returns).
    fn poll_cq(cq: &Obj<'_, b::ib_cq>, wcs: &mut [b::ib_wc]) -> Result<usize>;
    /// `resize_cq`.
    fn resize_cq(cq: &Obj<'_, b::ib_cq>, cqe: i32, udata: &mut Udata<'_>) -> Result;
    /// `req_notify_cq`: whether to report missed events.
    fn req_notify_cq(cq: &Obj<'_, b::ib_cq>, flags: u32) -> bool;

    /// `create_qp`: `srq`, the CQs and the XRC domain are the objects `init` names.
    fn create_qp<'a>(
        qp: NewObj<'a, b::ib_qp>,
        init: &mut b::ib_qp_init_attr,
        srq: Option<Obj<'_, b::ib_srq>>,
        cqs: (Option<CqPtr>, Option<CqPtr>),
        xrcd: Option<XrcdId>,
        udata: &mut Udata<'_>,
    ) -> Result<Created<'a, b::ib_qp>>;
    /// `destroy_qp`, before the QP's data goes; an error refuses the destruction (the QP
    /// stays as it was).
    fn shut_down_qp(qp: &Obj<'_, b::ib_qp>) -> Result;
    /// `destroy_qp`, once the QP's data is gone.
    fn qp_destroyed(dev: &IbDev);
    /// `modify_qp`; `av` is `attr.ah_attr` converted when `mask` has IB_QP_AV; `udata` is
    /// a user's command's (empty for a kernel consumer).
    fn modify_qp(
        qp: &Obj<'_, b::ib_qp>,
        attr: &b::ib_qp_attr,
        mask: i32,
        av: Option<Result<b::rrxe_kav>>,
        udata: &Udata<'_>,
    ) -> Result;
    /// `query_qp`.
    fn query_qp(qp: &Obj<'_, b::ib_qp>, attr: &mut b::ib_qp_attr, init: &mut b::ib_qp_init_attr);
    /// `attach_mcast`: the QP joins the multicast group `gid` (the core checked that the
    /// QP is UD and the GID multicast).
    fn attach_mcast(qp: &Obj<'_, b::ib_qp>, gid: &[u8; 16]) -> Result;
    /// `detach_mcast`.
    fn detach_mcast(qp: &Obj<'_, b::ib_qp>, gid: &[u8; 16]) -> Result;
    /// `post_send`.
    fn post_send(qp: &Obj<'_, b::ib_qp>, list: WrList<'_, b::ib_send_wr>) -> Result;
    /// `post_recv`.
    fn post_recv(qp: &Obj<'_, b::ib_qp>, list: WrList<'_, b::ib_recv_wr>) -> Result;

    /// `create_srq`; `xrc` is the XRC domain and CQ of an XRC SRQ (`init.ext`).
    fn create_srq<'a>(
        srq: NewObj<'a, b::ib_srq>,
        init: &mut b::ib_srq_init_attr,
        xrc: Option<(XrcdId, Option<CqPtr>)>,
        udata: &mut Udata<'_>,
    ) -> Result<Created<'a, b::ib_srq>>;
    /// `modify_srq` (`udata`: a user command's driver input, empty for a kernel caller).
    fn modify_srq(
        srq: &Obj<'_, b::ib_srq>,
        attr: &mut b::ib_srq_attr,
        mask: b::ib_srq_attr_mask,
        udata: &mut Udata<'_>,
    ) -> Result;
    /// `query_srq`.
    fn query_srq(srq: &Obj<'_, b::ib_srq>, attr: &mut b::ib_srq_attr);
    /// `destroy_srq`, before the SRQ's data goes.
    fn shut_down_srq(srq: &Obj<'_, b::ib_srq>);
    /// `destroy_srq`, once the SRQ's data is gone.
    fn srq_destroyed(dev: &IbDev);
    /// `post_srq_recv`.
    fn post_srq_recv(srq: &Obj<'_, b::ib_srq>, list: WrList<'_, b::ib_recv_wr>) -> Result;

    /// `create_ah` and `create_user_ah`; `av` is the converted `ah_attr`.
    fn create_ah<'a>(
        ah: NewObj<'a, b::ib_ah>,
        av: Result<b::rrxe_kav>,
        udata: &mut Udata<'_>,
    ) -> Result<Created<'a, b::ib_ah>>;
    /// `destroy_ah`, before the AH's data goes.
    fn destroy_ah(ah: &Obj<'_, b::ib_ah>);
    /// `query_ah`: the AH's address vector.
    fn ah_av(ah: &Obj<'_, b::ib_ah>) -> b::rrxe_kav;

    /// `get_dma_mr`.
    fn get_dma_mr(pd: &Obj<'_, b::ib_pd>, access: i32) -> Result<*mut b::ib_mr>;
    /// `reg_user_mr`: `range` is the start, length and iova; `uctx` the user context of
    /// the command (`None` for a kernel caller).
    fn reg_user_mr(
        pd: &Obj<'_, b::ib_pd>,
        range: (u64, u64, u64),
        access: i32,
        uctx: Option<&Obj<'_, b::ib_ucontext>>,
    ) -> Result<*mut b::ib_mr>;
    /// `reg_user_mr_dmabuf`: `range` is the offset in the dma-buf, the length and the iova.
    fn reg_user_mr_dmabuf(
        pd: &Obj<'_, b::ib_pd>,
        range: (u64, u64, u64),
        fd: i32,
        access: i32,
    ) -> Result<*mut b::ib_mr>;
    /// `rereg_user_mr`: a new MR, or `None` for a change made in place. `args` are the
    /// flags, start, length, iova, access and the new PD's identity.
    fn rereg_user_mr(
        mr: &Obj<'_, b::ib_mr>,
        args: (i32, u64, u64, u64, i32, usize),
        uctx: Option<&Obj<'_, b::ib_ucontext>>,
    ) -> Result<Option<*mut b::ib_mr>>;
    /// `alloc_mr`.
    fn alloc_mr(
        pd: &Obj<'_, b::ib_pd>,
        mr_type: b::ib_mr_type,
        max_num_sg: u32,
    ) -> Result<*mut b::ib_mr>;
    /// `advise_mr`: what to do with the ranges the SGEs name (an unknown advice or flag
    /// was refused with EINVAL already; `IB_UVERBS_ADVISE_MR_FLAG_FLUSH`, "done before
    /// returning", is a permission the driver may ignore, so it is not passed).
    fn advise_mr(pd: &Obj<'_, b::ib_pd>, advice: Advice, sges: &[b::ib_sge]) -> Result;
    /// `dereg_mr`, before the MR is freed.
    fn dereg_mr(mr: &Obj<'_, b::ib_mr>);
    /// `dereg_mr`, once it is freed.
    fn mr_freed(dev: &IbDev);
    /// `alloc_mw`.
    fn alloc_mw(mw: NewObj<'_, b::ib_mw>) -> Result<Created<'_, b::ib_mw>>;
    /// `dealloc_mw`, before the MW's data goes.
    fn dealloc_mw(mw: &Obj<'_, b::ib_mw>);
}

/// Bytes of a MAD on an IB or RoCE port (`IB_MGMT_MAD_SIZE`, `struct ib_mad`).
pub(crate) const MAD_SIZE: usize = b::IB_MGMT_MAD_SIZE as usize;

/// What `process_mad` did with a MAD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MadResult {
    /// The response is in the output buffer: the core sends it.
    Reply,
    /// Not the driver's: the core hands the MAD to its agents (the CM, user MAD agents).
    PassOn,
    /// Not processed (`IB_MAD_RESULT_FAILURE`): a sysfs query fails with EINVAL; a received
    /// MAD goes on to the agents as well.
    Failure,
}

/// What `advise_mr` asks for the ranges it names (`IB_UVERBS_ADVISE_MR_ADVICE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Advice {
    /// Map them for reading, faulting pages in.
    Prefetch,
    /// Map them for writing, faulting pages in.
    PrefetchWrite,
    /// Map what the process has present, without faulting.
    PrefetchNoFault,
}

impl Advice {
    /// The advice of the uverbs/kernel argument, `None` for an unknown one.
    fn from_raw(advice: b::ib_uverbs_advise_mr_advice) -> Option<Self> {
        match advice {
            b::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH => {
                Some(Advice::Prefetch)
            }
            b::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE => {
                Some(Advice::PrefetchWrite)
            }
            b::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT => {
                Some(Advice::PrefetchNoFault)
            }
            _ => None,
        }
    }
}

/// The size the core allocates for objects of core type `I`.
const fn obj_size<I: DriverObj>() -> usize {
    size_of::<DrvObj<I, I::Data>>()
}

/// Turns a driver result into the C convention (0 or a negative errno).
pub(super) fn errno(r: Result) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// A creation's result: the object is kept on success.
fn created<I: DriverObj>(r: Result<Created<'_, I>>) -> i32 {
    errno(r.map(Created::keep))
}

/// Turns a driver result into the `ERR_PTR` convention.
fn ptr_or_err<T>(r: Result<*mut T>) -> *mut T {
    match r {
        Ok(p) => p,
        Err(e) => e.to_errno() as isize as *mut T,
    }
}

/// The ops table copied into each device by `ib_set_device_ops`.
pub(super) fn device_ops<V: Verbs>() -> b::ib_device_ops
where
    <b::ib_mr as DriverObj>::Data: PageSink,
{
    let mut ops = b::ib_device_ops::default();
    ops.owner = crate::glue::this_module();
    ops.driver_id = b::rdma_driver_id_RDMA_DRIVER_UNKNOWN;
    ops.uverbs_abi_ver = b::RRXE_UVERBS_ABI_VERSION;
    ops.dealloc_driver = Some(crate::glue::dealloc_driver);
    ops.mmap = Some(b::rrxe_glue_mmap);
    ops.mmap_free = Some(b::rrxe_glue_mmap_free);
    ops.query_device = Some(query_device::<V>);
    ops.query_port = Some(query_port::<V>);
    ops.get_port_immutable = Some(get_port_immutable::<V>);
    ops.get_link_layer = Some(get_link_layer);
    ops.query_pkey = Some(query_pkey::<V>);
    // With both set the core calls them on every change to a RoCE port's GID table
    // (rdma_cap_roce_gid_table); rdma_rxe sets neither. No per-GID context is kept.
    ops.add_gid = Some(gid_changed_op::<V>);
    ops.del_gid = Some(gid_changed_op::<V>);
    ops.alloc_ucontext = Some(alloc_ucontext::<V>);
    ops.dealloc_ucontext = Some(dealloc_ucontext);
    ops.alloc_pd = Some(alloc_pd::<V>);
    ops.dealloc_pd = Some(dealloc_pd::<V>);
    ops.alloc_hw_port_stats = Some(alloc_hw_port_stats::<V>);
    ops.get_hw_stats = Some(get_hw_stats::<V>);
    ops.process_mad = Some(process_mad::<V>);
    ops.counter_alloc_stats = Some(counter_alloc_stats::<V>);
    ops.counter_bind_qp = Some(counter_bind_qp::<V>);
    ops.counter_unbind_qp = Some(counter_unbind_qp::<V>);
    ops.counter_update_stats = Some(counter_update_stats::<V>);
    ops.counter_dealloc = Some(counter_dealloc::<V>);
    #[cfg(rrxe_have_counter_init)]
    {
        ops.counter_init = Some(counter_init);
        // No driver data: the core's object as it is.
        ops.size_rdma_counter = size_of::<b::rdma_counter>();
    }
    ops.enable_driver = Some(enable_driver::<V>);
    ops.create_cq = Some(create_cq::<V>);
    ops.destroy_cq = Some(destroy_cq::<V>);
    ops.poll_cq = Some(poll_cq::<V>);
    ops.req_notify_cq = Some(req_notify_cq::<V>);
    #[cfg(rrxe_have_resize_user_cq)]
    {
        ops.resize_user_cq = Some(resize_cq::<V>);
    }
    #[cfg(not(rrxe_have_resize_user_cq))]
    {
        ops.resize_cq = Some(resize_cq::<V>);
    }
    ops.create_qp = Some(create_qp::<V>);
    ops.destroy_qp = Some(destroy_qp::<V>);
    ops.modify_qp = Some(modify_qp::<V>);
    ops.query_qp = Some(query_qp::<V>);
    ops.attach_mcast = Some(attach_mcast::<V>);
    ops.detach_mcast = Some(detach_mcast::<V>);
    ops.post_send = Some(post_send::<V>);
    ops.post_recv = Some(post_recv::<V>);
    ops.fill_res_qp_entry = Some(fill_res_qp_entry::<V>);
    ops.create_srq = Some(create_srq::<V>);
    ops.modify_srq = Some(modify_srq::<V>);
    ops.query_srq = Some(query_srq::<V>);
    ops.destroy_srq = Some(destroy_srq::<V>);
    ops.post_srq_recv = Some(post_srq_recv::<V>);
    ops.create_ah = Some(create_ah::<V>);
    ops.create_user_ah = Some(create_ah::<V>);
    ops.destroy_ah = Some(destroy_ah::<V>);
    ops.query_ah = Some(query_ah::<V>);
    ops.get_dma_mr = Some(get_dma_mr::<V>);
    ops.reg_user_mr = Some(reg_user_mr::<V>);
    ops.reg_user_mr_dmabuf = Some(reg_user_mr_dmabuf::<V>);
    ops.alloc_mr = Some(alloc_mr::<V>);
    ops.map_mr_sg = Some(map_mr_sg_op);
    ops.dereg_mr = Some(dereg_mr::<V>);
    ops.rereg_user_mr = Some(rereg_user_mr::<V>);
    ops.advise_mr = Some(advise_mr::<V>);
    ops.alloc_xrcd = Some(alloc_xrcd::<V>);
    ops.dealloc_xrcd = Some(dealloc_xrcd::<V>);
    ops.alloc_mw = Some(alloc_mw::<V>);
    ops.dealloc_mw = Some(dealloc_mw::<V>);
    ops.size_ib_cq = obj_size::<b::ib_cq>();
    ops.size_ib_qp = obj_size::<b::ib_qp>();
    ops.size_ib_srq = obj_size::<b::ib_srq>();
    ops.size_ib_ah = obj_size::<b::ib_ah>();
    ops.size_ib_mw = obj_size::<b::ib_mw>();
    ops.size_ib_ucontext = obj_size::<b::ib_ucontext>();
    ops.size_ib_pd = obj_size::<b::ib_pd>();
    // No driver data in an XRC domain: the core's object as it is.
    ops.size_ib_xrcd = size_of::<b::ib_xrcd>();
    ops
}
