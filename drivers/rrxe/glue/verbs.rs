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
use super::{bindings as b, CqPtr, IbDev, NetDev, Udata, XrcdId};
use core::mem::size_of;
use kernel::prelude::*;

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
    /// `query_device`.
    fn query_device(dev: &IbDev, attr: &mut b::ib_device_attr, udata: &Udata<'_>) -> Result;
    /// `query_port`.
    fn query_port(dev: &IbDev, port: u32, attr: &mut b::ib_port_attr) -> Result;
    /// `get_port_immutable`.
    fn port_immutable(dev: &IbDev, port: u32, imm: &mut b::ib_port_immutable) -> Result;
    /// `query_pkey`.
    fn query_pkey(dev: &IbDev, port: u32, index: u16) -> Result<u16>;
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
    /// The counters' values, in the order of [`Verbs::alloc_hw_stats`]'s descriptors.
    fn hw_stats(dev: &IbDev) -> impl Iterator<Item = u64>;
    /// The number of counters.
    const NUM_STATS: i32;

    /// `create_cq`.
    fn create_cq<'a>(
        cq: NewObj<'a, b::ib_cq>,
        attr: &b::ib_cq_init_attr,
        udata: &mut Udata<'_>,
    ) -> Result<Created<'a, b::ib_cq>>;
    /// `destroy_cq`, once the CQ's data is gone.
    fn cq_destroyed(dev: &IbDev);
    /// `poll_cq`: fills `wcs`, returns how many.
    fn poll_cq(cq: &Obj<'_, b::ib_cq>, wcs: &mut [b::ib_wc]) -> usize;
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
    /// `destroy_qp`, before the QP's data goes.
    fn shut_down_qp(qp: &Obj<'_, b::ib_qp>);
    /// `destroy_qp`, once the QP's data is gone.
    fn qp_destroyed(dev: &IbDev);
    /// `modify_qp`; `av` is `attr.ah_attr` converted when `mask` has IB_QP_AV.
    fn modify_qp(
        qp: &Obj<'_, b::ib_qp>,
        attr: &b::ib_qp_attr,
        mask: i32,
        av: Option<Result<b::rrxe_kav>>,
    ) -> Result;
    /// `query_qp`.
    fn query_qp(qp: &Obj<'_, b::ib_qp>, attr: &mut b::ib_qp_attr, init: &mut b::ib_qp_init_attr);
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
    /// `modify_srq`.
    fn modify_srq(
        srq: &Obj<'_, b::ib_srq>,
        attr: &b::ib_srq_attr,
        mask: b::ib_srq_attr_mask,
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
    /// `reg_user_mr`.
    fn reg_user_mr(
        pd: &Obj<'_, b::ib_pd>,
        start: u64,
        length: u64,
        iova: u64,
        access: i32,
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
    ) -> Result<Option<*mut b::ib_mr>>;
    /// `alloc_mr`.
    fn alloc_mr(
        pd: &Obj<'_, b::ib_pd>,
        mr_type: b::ib_mr_type,
        max_num_sg: u32,
    ) -> Result<*mut b::ib_mr>;
    /// `dereg_mr`, before the MR is freed.
    fn dereg_mr(mr: &Obj<'_, b::ib_mr>);
    /// `dereg_mr`, once it is freed.
    fn mr_freed(dev: &IbDev);
    /// `alloc_mw`.
    fn alloc_mw(mw: NewObj<'_, b::ib_mw>) -> Result<Created<'_, b::ib_mw>>;
    /// `dealloc_mw`, before the MW's data goes.
    fn dealloc_mw(mw: &Obj<'_, b::ib_mw>);
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
    ops.owner = super::this_module();
    ops.driver_id = b::rdma_driver_id_RDMA_DRIVER_UNKNOWN;
    ops.uverbs_abi_ver = b::RRXE_UVERBS_ABI_VERSION;
    ops.dealloc_driver = Some(super::dealloc_driver);
    ops.mmap = Some(b::rrxe_glue_mmap);
    ops.mmap_free = Some(b::rrxe_glue_mmap_free);
    ops.query_device = Some(query_device::<V>);
    ops.query_port = Some(query_port::<V>);
    ops.get_port_immutable = Some(get_port_immutable::<V>);
    ops.get_link_layer = Some(get_link_layer);
    ops.query_pkey = Some(query_pkey::<V>);
    ops.alloc_ucontext = Some(alloc_ucontext::<V>);
    ops.dealloc_ucontext = Some(dealloc_ucontext);
    ops.alloc_pd = Some(alloc_pd::<V>);
    ops.dealloc_pd = Some(dealloc_pd::<V>);
    ops.alloc_hw_port_stats = Some(alloc_hw_port_stats::<V>);
    ops.get_hw_stats = Some(get_hw_stats::<V>);
    ops.enable_driver = Some(enable_driver::<V>);
    ops.create_cq = Some(create_cq::<V>);
    ops.destroy_cq = Some(destroy_cq::<V>);
    ops.poll_cq = Some(poll_cq::<V>);
    ops.req_notify_cq = Some(req_notify_cq::<V>);
    ops.resize_cq = Some(resize_cq::<V>);
    ops.create_qp = Some(create_qp::<V>);
    ops.destroy_qp = Some(destroy_qp::<V>);
    ops.modify_qp = Some(modify_qp::<V>);
    ops.query_qp = Some(query_qp::<V>);
    ops.post_send = Some(post_send::<V>);
    ops.post_recv = Some(post_recv::<V>);
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

// --- device, port, context, PD, counters ---

unsafe extern "C" fn query_device<V: Verbs>(
    ibdev: *mut b::ib_device,
    attr: *mut b::ib_device_attr,
    udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract (module doc); attr is an output struct exclusively ours
    // for the call; udata is null or the command's.
    let (dev, attr, udata) =
        unsafe { (IbDev::from_raw(ibdev), &mut *attr, Udata::from_raw(udata)) };
    errno(V::query_device(dev, attr, &udata))
}

unsafe extern "C" fn query_port<V: Verbs>(
    ibdev: *mut b::ib_device,
    port: u32,
    attr: *mut b::ib_port_attr,
) -> i32 {
    // SAFETY: the core's contract; the core zeroed *attr and it is ours for the call.
    let (dev, attr) = unsafe { (IbDev::from_raw(ibdev), &mut *attr) };
    errno(V::query_port(dev, port, attr))
}

unsafe extern "C" fn get_port_immutable<V: Verbs>(
    ibdev: *mut b::ib_device,
    port: u32,
    imm: *mut b::ib_port_immutable,
) -> i32 {
    // SAFETY: the core's contract; imm is its output, ours for the call.
    let (dev, imm) = unsafe { (IbDev::from_raw(ibdev), &mut *imm) };
    errno(V::port_immutable(dev, port, imm))
}

unsafe extern "C" fn get_link_layer(_ibdev: *mut b::ib_device, _port: u32) -> b::rdma_link_layer {
    b::rdma_link_layer_IB_LINK_LAYER_ETHERNET
}

unsafe extern "C" fn query_pkey<V: Verbs>(
    ibdev: *mut b::ib_device,
    port: u32,
    index: u16,
    pkey: *mut u16,
) -> i32 {
    // SAFETY: the core's contract; pkey is a live output.
    let (dev, pkey) = unsafe { (IbDev::from_raw(ibdev), &mut *pkey) };
    errno(V::query_pkey(dev, port, index).map(|v| *pkey = v))
}

unsafe extern "C" fn alloc_ucontext<V: Verbs>(
    uctx: *mut b::ib_ucontext,
    udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: it allocated uctx (size_ib_ucontext) for this creation
    // and set its device; udata is the command's.
    let (uctx, mut udata) = unsafe { (NewObj::from_raw(uctx), Udata::from_raw(udata)) };
    let Some(uctx) = uctx else {
        return EINVAL.to_errno();
    };
    created(V::alloc_ucontext(uctx, &mut udata))
}

unsafe extern "C" fn dealloc_ucontext(uctx: *mut b::ib_ucontext) {
    // SAFETY: the core's contract: a live context of ours, deallocated once.
    unsafe { destroy(uctx) };
}

unsafe extern "C" fn alloc_pd<V: Verbs>(pd: *mut b::ib_pd, _udata: *mut b::ib_udata) -> i32 {
    // SAFETY: the core's contract: it allocated pd (size_ib_pd) for this creation and set
    // its device.
    let Some(pd) = (unsafe { NewObj::from_raw(pd) }) else {
        return EINVAL.to_errno();
    };
    created(V::alloc_pd(pd))
}

unsafe extern "C" fn dealloc_pd<V: Verbs>(pd: *mut b::ib_pd, _udata: *mut b::ib_udata) -> i32 {
    // SAFETY: the core's contract: a live PD of ours, deallocated once.
    if let Some(obj) = unsafe { Obj::from_raw(pd) } {
        V::dealloc_pd(&obj);
    }
    // SAFETY: as above; nothing refers to it any more.
    unsafe { destroy(pd) };
    0
}

unsafe extern "C" fn alloc_xrcd<V: Verbs>(xrcd: *mut b::ib_xrcd, _udata: *mut b::ib_udata) -> i32 {
    // Only the address is kept: the domain's identity while the core keeps it allocated.
    errno(V::alloc_xrcd(XrcdId(xrcd as usize)))
}

unsafe extern "C" fn dealloc_xrcd<V: Verbs>(
    xrcd: *mut b::ib_xrcd,
    _udata: *mut b::ib_udata,
) -> i32 {
    V::dealloc_xrcd(XrcdId(xrcd as usize));
    0
}

unsafe extern "C" fn enable_driver<V: Verbs>(ibdev: *mut b::ib_device) -> i32 {
    // SAFETY: the core's contract.
    let dev = unsafe { IbDev::from_raw(ibdev) };
    errno(V::enable(dev))
}

unsafe extern "C" fn alloc_hw_port_stats<V: Verbs>(
    _ibdev: *mut b::ib_device,
    _port: u32,
) -> *mut b::rdma_hw_stats {
    V::alloc_hw_stats()
}

unsafe extern "C" fn get_hw_stats<V: Verbs>(
    ibdev: *mut b::ib_device,
    stats: *mut b::rdma_hw_stats,
    _port: u32,
    _index: i32,
) -> i32 {
    // SAFETY: the core's contract; stats was allocated by alloc_hw_port_stats and is live.
    unsafe { super::set_hw_stats(stats, V::hw_stats(IbDev::from_raw(ibdev))) };
    V::NUM_STATS
}

// --- CQ ---

unsafe extern "C" fn create_cq<V: Verbs>(
    ibcq: *mut b::ib_cq,
    attr: *const b::ib_cq_init_attr,
    attrs: *mut b::uverbs_attr_bundle,
) -> i32 {
    // SAFETY: the core's contract: it allocated ibcq (size_ib_cq) for this creation; attr
    // is live; attrs is null (kernel caller) or the command's bundle.
    let (obj, attr, mut udata) =
        unsafe { (NewObj::from_raw(ibcq), &*attr, Udata::from_attrs(attrs)) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    created(V::create_cq(obj, attr, &mut udata))
}

unsafe extern "C" fn destroy_cq<V: Verbs>(ibcq: *mut b::ib_cq, _udata: *mut b::ib_udata) -> i32 {
    // SAFETY: the core's contract: called once, after it made sure no QP uses the CQ.
    if let Some(dev) = unsafe { destroy(ibcq) } {
        V::cq_destroyed(dev);
    }
    0
}

unsafe extern "C" fn poll_cq<V: Verbs>(ibcq: *mut b::ib_cq, num: i32, wc: *mut b::ib_wc) -> i32 {
    let Ok(num) = usize::try_from(num) else {
        return EINVAL.to_errno();
    };
    if num == 0 || wc.is_null() {
        return 0;
    }
    // SAFETY: the core's contract: a live CQ; the caller gives an array of num ib_wc it
    // owns.
    let (obj, wcs) = unsafe {
        (
            Obj::from_raw(ibcq),
            core::slice::from_raw_parts_mut(wc, num),
        )
    };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    V::poll_cq(&obj, wcs) as i32
}

unsafe extern "C" fn resize_cq<V: Verbs>(
    ibcq: *mut b::ib_cq,
    cqe: i32,
    udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: a live CQ; udata is null or the command's.
    let (obj, mut udata) = unsafe { (Obj::from_raw(ibcq), Udata::from_raw(udata)) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(V::resize_cq(&obj, cqe, &mut udata))
}

unsafe extern "C" fn req_notify_cq<V: Verbs>(
    ibcq: *mut b::ib_cq,
    flags: b::ib_cq_notify_flags,
) -> i32 {
    // SAFETY: the core's contract: a live CQ.
    let Some(obj) = (unsafe { Obj::from_raw(ibcq) }) else {
        return EINVAL.to_errno();
    };
    i32::from(V::req_notify_cq(&obj, flags))
}

// --- QP ---

unsafe extern "C" fn create_qp<V: Verbs>(
    ibqp: *mut b::ib_qp,
    init: *mut b::ib_qp_init_attr,
    udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: ibqp is allocated for this creation; init is ours for
    // the call, its srq and CQs null or live objects of ours that the core keeps while the
    // QP exists (it counts their users); udata is null or the command's.
    let (obj, srq, cqs, init, mut udata) = unsafe {
        let init = &mut *init;
        (
            NewObj::from_raw(ibqp),
            Obj::<b::ib_srq>::from_raw(init.srq),
            (CqPtr::new(init.send_cq), CqPtr::new(init.recv_cq)),
            init,
            Udata::from_raw(udata),
        )
    };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    // The XRC domain of an XRC target QP, by identity only (the core counts the QP as its
    // user until the QP is destroyed).
    let xrcd = (!init.xrcd.is_null()).then(|| XrcdId(init.xrcd as usize));
    created(V::create_qp(obj, init, srq, cqs, xrcd, &mut udata))
}

unsafe extern "C" fn destroy_qp<V: Verbs>(ibqp: *mut b::ib_qp, _udata: *mut b::ib_udata) -> i32 {
    // SAFETY: the core's contract: a live QP of ours, destroyed once.
    if let Some(obj) = unsafe { Obj::from_raw(ibqp) } {
        V::shut_down_qp(&obj);
    }
    // SAFETY: as above; the QP is shut down and nothing refers to its data any more; the
    // core frees the memory after we return.
    if let Some(dev) = unsafe { destroy(ibqp) } {
        V::qp_destroyed(dev);
    }
    0
}

unsafe extern "C" fn modify_qp<V: Verbs>(
    ibqp: *mut b::ib_qp,
    attr: *mut b::ib_qp_attr,
    mask: i32,
    _udata: *mut b::ib_udata,
) -> i32 {
    let has_av = mask as u32 & b::ib_qp_attr_mask_IB_QP_AV != 0;
    // SAFETY: the core's contract: a live QP of ours; attr is live for the call, and with
    // IB_QP_AV its ah_attr holds a GRH whose sgid_attr the core resolved and holds.
    let (obj, attr, av) = unsafe {
        let attr = &*attr;
        let av = has_av.then(|| super::ah_attr_to_av(&attr.ah_attr));
        (Obj::from_raw(ibqp), attr, av)
    };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(V::modify_qp(&obj, attr, mask, av))
}

unsafe extern "C" fn query_qp<V: Verbs>(
    ibqp: *mut b::ib_qp,
    attr: *mut b::ib_qp_attr,
    _mask: i32,
    init: *mut b::ib_qp_init_attr,
) -> i32 {
    // SAFETY: the core's contract: a live QP of ours; attr and init are its outputs.
    let (obj, attr, init) = unsafe { (Obj::from_raw(ibqp), &mut *attr, &mut *init) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    V::query_qp(&obj, attr, init);
    0
}

unsafe extern "C" fn post_send<V: Verbs>(
    ibqp: *mut b::ib_qp,
    wr: *const b::ib_send_wr,
    bad: *mut *const b::ib_send_wr,
) -> i32 {
    // SAFETY: the core's contract: a live QP of ours; wr is null or the consumer's list,
    // live for the call; bad is null or its output slot.
    let (obj, list) = unsafe { (Obj::from_raw(ibqp), WrList::from_raw(wr, bad)) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(V::post_send(&obj, list))
}

unsafe extern "C" fn post_recv<V: Verbs>(
    ibqp: *mut b::ib_qp,
    wr: *const b::ib_recv_wr,
    bad: *mut *const b::ib_recv_wr,
) -> i32 {
    // SAFETY: as in post_send.
    let (obj, list) = unsafe { (Obj::from_raw(ibqp), WrList::from_raw(wr, bad)) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(V::post_recv(&obj, list))
}

// --- SRQ ---

unsafe extern "C" fn create_srq<V: Verbs>(
    ibsrq: *mut b::ib_srq,
    init: *mut b::ib_srq_init_attr,
    udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: it allocated ibsrq (size_ib_srq) for this creation;
    // init is live and ours for the call; udata is null or the command's.
    let (obj, init, mut udata) =
        unsafe { (NewObj::from_raw(ibsrq), &mut *init, Udata::from_raw(udata)) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    let xrc = if init.srq_type == b::ib_srq_type_IB_SRQT_XRC {
        // SAFETY: for an XRC SRQ the core filled `ext.xrc` (ib_create_srq_user), the member
        // of the union it reads back for this type; ext.cq is a live CQ of ours that the
        // core counts as used by the SRQ until destroy_srq returns.
        let (xrcd, cq) = unsafe { (init.ext.__bindgen_anon_1.xrc.xrcd, CqPtr::new(init.ext.cq)) };
        if xrcd.is_null() {
            return EINVAL.to_errno();
        }
        Some((XrcdId(xrcd as usize), cq))
    } else {
        None
    };
    created(V::create_srq(obj, init, xrc, &mut udata))
}

unsafe extern "C" fn modify_srq<V: Verbs>(
    ibsrq: *mut b::ib_srq,
    attr: *mut b::ib_srq_attr,
    mask: b::ib_srq_attr_mask,
    _udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: a live SRQ of ours; attr is live for the call.
    let (obj, attr) = unsafe { (Obj::from_raw(ibsrq), &*attr) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(V::modify_srq(&obj, attr, mask))
}

unsafe extern "C" fn query_srq<V: Verbs>(ibsrq: *mut b::ib_srq, attr: *mut b::ib_srq_attr) -> i32 {
    // SAFETY: the core's contract: a live SRQ of ours; attr is its output.
    let (obj, attr) = unsafe { (Obj::from_raw(ibsrq), &mut *attr) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    V::query_srq(&obj, attr);
    0
}

unsafe extern "C" fn destroy_srq<V: Verbs>(ibsrq: *mut b::ib_srq, _udata: *mut b::ib_udata) -> i32 {
    // SAFETY: the core's contract: a live SRQ of ours, destroyed once.
    if let Some(obj) = unsafe { Obj::from_raw(ibsrq) } {
        V::shut_down_srq(&obj);
    }
    // SAFETY: the core's contract: called once, after it made sure no QP uses the SRQ (an
    // XRC SRQ's target QPs can no longer find it: shut_down_srq).
    if let Some(dev) = unsafe { destroy(ibsrq) } {
        V::srq_destroyed(dev);
    }
    0
}

unsafe extern "C" fn post_srq_recv<V: Verbs>(
    ibsrq: *mut b::ib_srq,
    wr: *const b::ib_recv_wr,
    bad: *mut *const b::ib_recv_wr,
) -> i32 {
    // SAFETY: the core's contract: a live SRQ of ours; wr is null or the consumer's list,
    // live for the call; bad is null or its output slot.
    let (obj, list) = unsafe { (Obj::from_raw(ibsrq), WrList::from_raw(wr, bad)) };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    errno(V::post_srq_recv(&obj, list))
}

// --- AH ---

unsafe extern "C" fn create_ah<V: Verbs>(
    ibah: *mut b::ib_ah,
    init: *mut b::rdma_ah_init_attr,
    udata: *mut b::ib_udata,
) -> i32 {
    // SAFETY: the core's contract: it allocated ibah (size_ib_ah) for this creation with
    // device and pd set; init is live and its ah_attr holds a referenced sgid_attr; udata
    // is null or the command's.
    let (obj, av, mut udata) = unsafe {
        (
            NewObj::from_raw(ibah),
            super::ah_attr_to_av((*init).ah_attr),
            Udata::from_raw(udata),
        )
    };
    let Some(obj) = obj else {
        return EINVAL.to_errno();
    };
    created(V::create_ah(obj, av, &mut udata))
}

unsafe extern "C" fn destroy_ah<V: Verbs>(ibah: *mut b::ib_ah, _flags: u32) -> i32 {
    // SAFETY: the core's contract: a live AH of ours, destroyed once.
    if let Some(obj) = unsafe { Obj::from_raw(ibah) } {
        V::destroy_ah(&obj);
    }
    // SAFETY: as above; nothing refers to it any more.
    unsafe { destroy(ibah) };
    0
}

unsafe extern "C" fn query_ah<V: Verbs>(ibah: *mut b::ib_ah, attr: *mut b::rdma_ah_attr) -> i32 {
    // SAFETY: the core's contract: a live AH of ours; attr is its output.
    let (obj, attr) = unsafe { (Obj::from_raw(ibah), &mut *attr) };
    if let Some(obj) = obj {
        super::av_to_ah_attr(&V::ah_av(&obj), attr);
    }
    0
}

// --- MR, MW ---

unsafe extern "C" fn get_dma_mr<V: Verbs>(pd: *mut b::ib_pd, access: i32) -> *mut b::ib_mr {
    // SAFETY: the core's contract: a live PD of our device.
    let Some(pd) = (unsafe { Obj::from_raw(pd) }) else {
        return ptr_or_err(Err(EINVAL));
    };
    ptr_or_err(V::get_dma_mr(&pd, access))
}

unsafe extern "C" fn reg_user_mr<V: Verbs>(
    pd: *mut b::ib_pd,
    start: u64,
    length: u64,
    iova: u64,
    access: i32,
    _udata: *mut b::ib_udata,
) -> *mut b::ib_mr {
    // SAFETY: the core's contract: a live PD of our device.
    let Some(pd) = (unsafe { Obj::from_raw(pd) }) else {
        return ptr_or_err(Err(EINVAL));
    };
    ptr_or_err(V::reg_user_mr(&pd, start, length, iova, access))
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn reg_user_mr_dmabuf<V: Verbs>(
    pd: *mut b::ib_pd,
    offset: u64,
    length: u64,
    iova: u64,
    fd: i32,
    access: i32,
    _attrs: *mut b::uverbs_attr_bundle,
) -> *mut b::ib_mr {
    // SAFETY: the core's contract: a live PD of our device.
    let Some(pd) = (unsafe { Obj::from_raw(pd) }) else {
        return ptr_or_err(Err(EINVAL));
    };
    ptr_or_err(V::reg_user_mr_dmabuf(
        &pd,
        (offset, length, iova),
        fd,
        access,
    ))
}

unsafe extern "C" fn rereg_user_mr<V: Verbs>(
    ibmr: *mut b::ib_mr,
    flags: i32,
    start: u64,
    length: u64,
    iova: u64,
    access: i32,
    pd: *mut b::ib_pd,
    _udata: *mut b::ib_udata,
) -> *mut b::ib_mr {
    // SAFETY: the core's contract: a live MR of ours (its uobject locked for write).
    let Some(obj) = (unsafe { Obj::from_raw(ibmr) }) else {
        return ptr_or_err(Err(EINVAL));
    };
    match V::rereg_user_mr(&obj, (flags, start, length, iova, access, pd as usize)) {
        Ok(Some(p)) => p,
        Ok(None) => core::ptr::null_mut(),
        Err(e) => ptr_or_err(Err(e)),
    }
}

unsafe extern "C" fn alloc_mr<V: Verbs>(
    pd: *mut b::ib_pd,
    mr_type: b::ib_mr_type,
    max_num_sg: u32,
) -> *mut b::ib_mr {
    // SAFETY: the core's contract: a live PD of our device.
    let Some(pd) = (unsafe { Obj::from_raw(pd) }) else {
        return ptr_or_err(Err(EINVAL));
    };
    ptr_or_err(V::alloc_mr(&pd, mr_type, max_num_sg))
}

unsafe extern "C" fn map_mr_sg_op(
    ibmr: *mut b::ib_mr,
    sg: *mut b::scatterlist,
    nents: i32,
    sg_offset: *mut u32,
) -> i32
where
    <b::ib_mr as DriverObj>::Data: PageSink,
{
    // SAFETY: the core's arguments, passed through: a live MR of ours and the consumer's
    // scatterlist of nents entries.
    unsafe { map_mr_sg(ibmr, sg, nents, sg_offset) }
}

unsafe extern "C" fn dereg_mr<V: Verbs>(ibmr: *mut b::ib_mr, _udata: *mut b::ib_udata) -> i32 {
    // SAFETY: the core's contract: a live MR of ours, never used after this returns.
    if let Some(obj) = unsafe { Obj::from_raw(ibmr) } {
        V::dereg_mr(&obj);
    }
    // SAFETY: as above; allocated by new_boxed; this is the only release.
    if let Some(dev) = unsafe { free_boxed(ibmr) } {
        V::mr_freed(dev);
    }
    0
}

unsafe extern "C" fn alloc_mw<V: Verbs>(mw: *mut b::ib_mw, _udata: *mut b::ib_udata) -> i32 {
    // SAFETY: the core's contract: it allocated mw (size_ib_mw) for this creation and set
    // device, pd and type.
    let Some(obj) = (unsafe { NewObj::from_raw(mw) }) else {
        return EINVAL.to_errno();
    };
    created(V::alloc_mw(obj))
}

unsafe extern "C" fn dealloc_mw<V: Verbs>(mw: *mut b::ib_mw) -> i32 {
    // SAFETY: the core's contract: a live MW of ours, freed by the core after we return.
    if let Some(obj) = unsafe { Obj::from_raw(mw) } {
        V::dealloc_mw(&obj);
    }
    // SAFETY: as above; nothing refers to it any more.
    unsafe { destroy(mw) };
    0
}
