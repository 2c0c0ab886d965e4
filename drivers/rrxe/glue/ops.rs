// SPDX-License-Identifier: GPL-2.0
//! The `struct ib_device_ops` of rrxe devices: trampolines from the RDMA core's C calls to
//! the safe logic in [`crate::device`].
//!
//! Each trampoline relies on one fact about its caller, the RDMA core: it passes the
//! pointers of a live rrxe device and live objects it allocated with the sizes we declared,
//! for the duration of the call.

use super::{bindings, CqPtr, DrvObj, IbDev, UContext, Udata};
use crate::counters::{Counter, NUM_COUNTERS};
use crate::cq::Cq;
use crate::device;
use crate::limits::Obj;
use core::marker::PhantomData;
use core::ptr::addr_of_mut;
use kernel::prelude::*;

/// Turns a driver result into the C convention (0 or a negative errno).
pub(super) fn errno(r: Result) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The ops table copied into each device by `ib_set_device_ops`.
pub(super) fn device_ops() -> bindings::ib_device_ops {
    let mut ops = bindings::ib_device_ops::default();
    // SAFETY: returns this module's `struct module`, valid while the module is loaded.
    ops.owner = unsafe { bindings::rrxe_glue_this_module() };
    ops.driver_id = bindings::rdma_driver_id_RDMA_DRIVER_UNKNOWN;
    ops.uverbs_abi_ver = bindings::RRXE_UVERBS_ABI_VERSION;
    ops.query_device = Some(query_device);
    ops.query_port = Some(query_port);
    ops.get_port_immutable = Some(get_port_immutable);
    ops.get_link_layer = Some(get_link_layer);
    ops.query_pkey = Some(query_pkey);
    ops.alloc_ucontext = Some(alloc_ucontext);
    ops.dealloc_ucontext = Some(dealloc_ucontext);
    ops.alloc_pd = Some(alloc_pd);
    ops.dealloc_pd = Some(dealloc_pd);
    ops.dealloc_driver = Some(dealloc_driver);
    ops.alloc_hw_port_stats = Some(alloc_hw_port_stats);
    ops.get_hw_stats = Some(get_hw_stats);
    ops.enable_driver = Some(enable_driver);
    ops.mmap = Some(bindings::rrxe_glue_mmap);
    ops.mmap_free = Some(bindings::rrxe_glue_mmap_free);
    ops.create_cq = Some(create_cq);
    ops.destroy_cq = Some(destroy_cq);
    ops.poll_cq = Some(poll_cq);
    ops.req_notify_cq = Some(req_notify_cq);
    ops.resize_cq = Some(resize_cq);
    ops.size_ib_cq = core::mem::size_of::<CqObj>();
    ops.create_qp = Some(create_qp);
    ops.destroy_qp = Some(destroy_qp);
    ops.modify_qp = Some(modify_qp);
    ops.query_qp = Some(query_qp);
    ops.post_send = Some(post_send);
    ops.post_recv = Some(post_recv);
    ops.size_ib_qp = core::mem::size_of::<QpObj>();
    ops.create_srq = Some(create_srq);
    ops.modify_srq = Some(modify_srq);
    ops.query_srq = Some(query_srq);
    ops.destroy_srq = Some(destroy_srq);
    ops.post_srq_recv = Some(post_srq_recv);
    ops.size_ib_srq = core::mem::size_of::<SrqObj>();
    ops.create_ah = Some(create_ah);
    ops.create_user_ah = Some(create_ah);
    ops.destroy_ah = Some(destroy_ah);
    ops.query_ah = Some(query_ah);
    ops.size_ib_ah = core::mem::size_of::<AhObj>();
    ops.get_dma_mr = Some(get_dma_mr);
    ops.reg_user_mr = Some(reg_user_mr);
    ops.reg_user_mr_dmabuf = Some(super::dmabuf::reg_user_mr_dmabuf);
    ops.alloc_mr = Some(alloc_mr);
    ops.map_mr_sg = Some(map_mr_sg);
    ops.dereg_mr = Some(dereg_mr);
    ops.rereg_user_mr = Some(rereg_user_mr);
    ops.alloc_mw = Some(alloc_mw);
    ops.dealloc_mw = Some(dealloc_mw);
    ops.size_ib_mw = core::mem::size_of::<bindings::ib_mw>();
    ops.size_ib_ucontext = core::mem::size_of::<bindings::ib_ucontext>();
    ops.size_ib_pd = core::mem::size_of::<bindings::ib_pd>();
    ops
}

unsafe extern "C" fn query_device(
    ibdev: *mut bindings::ib_device,
    attr: *mut bindings::ib_device_attr,
    udata: *mut bindings::ib_udata,
) -> i32 {
    // SAFETY: see the module doc; attr is a live, exclusively ours output struct.
    let (dev, attr) = unsafe { (IbDev::from_raw(ibdev), &mut *attr) };
    errno(device::query_device(dev, attr, &Udata(udata, PhantomData)))
}

unsafe extern "C" fn query_port(
    ibdev: *mut bindings::ib_device,
    port: u32,
    attr: *mut bindings::ib_port_attr,
) -> i32 {
    // SAFETY: see the module doc; the core zeroed *attr and it is ours for the call.
    let (dev, attr) = unsafe { (IbDev::from_raw(ibdev), &mut *attr) };
    errno(device::query_port(dev, port, attr))
}

unsafe extern "C" fn get_port_immutable(
    ibdev: *mut bindings::ib_device,
    port: u32,
    imm: *mut bindings::ib_port_immutable,
) -> i32 {
    // SAFETY: see the module doc.
    let (dev, imm) = unsafe { (IbDev::from_raw(ibdev), &mut *imm) };
    errno(device::port_immutable(dev, port, imm))
}

unsafe extern "C" fn get_link_layer(
    _ibdev: *mut bindings::ib_device,
    _port: u32,
) -> bindings::rdma_link_layer {
    bindings::rdma_link_layer_IB_LINK_LAYER_ETHERNET
}

unsafe extern "C" fn query_pkey(
    ibdev: *mut bindings::ib_device,
    port: u32,
    index: u16,
    pkey: *mut u16,
) -> i32 {
    // SAFETY: see the module doc; pkey is a live output.
    let (dev, pkey) = unsafe { (IbDev::from_raw(ibdev), &mut *pkey) };
    match device::query_pkey(dev, port, index) {
        Ok(v) => {
            *pkey = v;
            0
        }
        Err(e) => e.to_errno(),
    }
}

unsafe extern "C" fn alloc_ucontext(
    uctx: *mut bindings::ib_ucontext,
    udata: *mut bindings::ib_udata,
) -> i32 {
    // SAFETY: the core allocated uctx with size_ib_ucontext and set its device.
    let dev = unsafe { IbDev::from_raw((*uctx).device) };
    errno(device::alloc_ucontext(dev, &mut Udata(udata, PhantomData)))
}

unsafe extern "C" fn dealloc_ucontext(_uctx: *mut bindings::ib_ucontext) {}

unsafe extern "C" fn alloc_pd(pd: *mut bindings::ib_pd, _udata: *mut bindings::ib_udata) -> i32 {
    // SAFETY: the core allocated pd with size_ib_pd and set its device.
    let dev = unsafe { IbDev::from_raw((*pd).device) };
    errno(dev.data().limits.take(Obj::Pd))
}

unsafe extern "C" fn dealloc_pd(pd: *mut bindings::ib_pd, _udata: *mut bindings::ib_udata) -> i32 {
    // SAFETY: a live PD of ours, deallocated once.
    let dev = unsafe { IbDev::from_raw((*pd).device) };
    dev.data().limits.put(Obj::Pd);
    0
}

/// Runs a creation under one unit of the device's limit for `o`: taken first (EINVAL past
/// the maximum), given back if the creation fails. The matching destroy gives it back.
fn counted(dev: &IbDev, o: Obj, create: impl FnOnce() -> i32) -> i32 {
    let limits = &dev.data().limits;
    if let Err(e) = limits.take(o) {
        return e.to_errno();
    }
    let r = create();
    if r != 0 {
        limits.put(o);
    }
    r
}

unsafe extern "C" fn enable_driver(ibdev: *mut bindings::ib_device) -> i32 {
    // SAFETY: see the module doc.
    let dev = unsafe { IbDev::from_raw(ibdev) };
    errno(device::enable(dev))
}

/// Last callback of a device: drops the driver data and forgets the device.
pub(super) unsafe extern "C" fn dealloc_driver(ibdev: *mut bindings::ib_device) {
    let rdev = ibdev.cast::<super::RrxeDev>();
    // SAFETY: called once per device by ib_dealloc_device, after every other op has
    // returned and before the memory is freed; `data` was initialised in IbDev::create.
    unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*rdev).data)) };
    if let (Some(reg), Some(p)) = (super::registry(), core::ptr::NonNull::new(rdev)) {
        reg.remove(p);
    }
}

/// `rdma statistic` descriptors, built from [`Counter::NAMES`].
struct StatDescs([bindings::rdma_stat_desc; NUM_COUNTERS]);

// SAFETY: immutable after compile-time construction; the pointers are to 'static C strings.
unsafe impl Sync for StatDescs {}

static STAT_DESCS: StatDescs = {
    let mut d = [bindings::rdma_stat_desc {
        name: core::ptr::null(),
        flags: 0,
        priv_: core::ptr::null(),
    }; NUM_COUNTERS];
    let mut i = 0;
    while i < NUM_COUNTERS {
        d[i].name = Counter::NAMES[i].as_ptr().cast();
        i += 1;
    }
    StatDescs(d)
};

unsafe extern "C" fn alloc_hw_port_stats(
    _ibdev: *mut bindings::ib_device,
    _port: u32,
) -> *mut bindings::rdma_hw_stats {
    // SAFETY: STAT_DESCS is 'static and has NUM_COUNTERS entries; the core owns the result.
    unsafe { bindings::rrxe_glue_alloc_hw_stats(STAT_DESCS.0.as_ptr(), NUM_COUNTERS as i32) }
}

unsafe extern "C" fn get_hw_stats(
    ibdev: *mut bindings::ib_device,
    stats: *mut bindings::rdma_hw_stats,
    _port: u32,
    _index: i32,
) -> i32 {
    // SAFETY: see the module doc; stats was allocated by alloc_hw_port_stats.
    let dev = unsafe { IbDev::from_raw(ibdev) };
    for (i, v) in dev.data().counters.values().enumerate() {
        // SAFETY: stats is live; the helper bounds-checks the index.
        unsafe { bindings::rrxe_glue_hw_stats_set(stats, i as i32, v) };
    }
    NUM_COUNTERS as i32
}

type CqObj = DrvObj<bindings::ib_cq, Cq>;

/// The driver data of a CQ the core passes us.
///
/// # Safety
/// `ibcq` is a live CQ created by [`create_cq`] and not yet destroyed.
pub(super) unsafe fn cq_data<'a>(ibcq: *mut bindings::ib_cq) -> &'a Cq {
    // SAFETY: by the contract, the CQ is a CqObj whose data was initialised.
    unsafe { &(*ibcq.cast::<CqObj>()).data }
}

unsafe extern "C" fn create_cq(
    ibcq: *mut bindings::ib_cq,
    attr: *const bindings::ib_cq_init_attr,
    attrs: *mut bindings::uverbs_attr_bundle,
) -> i32 {
    // SAFETY: the core allocated ibcq (size_ib_cq) and set its device.
    let dev = unsafe { IbDev::from_raw((*ibcq).device) };
    // SAFETY: the core's arguments, passed through unchanged.
    counted(dev, Obj::Cq, || unsafe {
        create_cq_uncounted(ibcq, attr, attrs)
    })
}

/// [`create_cq`] once a unit of the device's limit is taken.
unsafe extern "C" fn create_cq_uncounted(
    ibcq: *mut bindings::ib_cq,
    attr: *const bindings::ib_cq_init_attr,
    attrs: *mut bindings::uverbs_attr_bundle,
) -> i32 {
    // SAFETY: the core passes a live attr and a null or live attribute bundle.
    let (attr, mut udata) = unsafe {
        (
            &*attr,
            Udata(bindings::rrxe_glue_attrs_udata(attrs), PhantomData),
        )
    };
    if attr.flags != 0 {
        return super::eopnotsupp().to_errno();
    }
    if attr.comp_vector != 0 {
        return EINVAL.to_errno();
    }
    let uctx = UContext::from_udata(&udata);
    let (init, entries) = match Cq::new(attr.cqe, uctx.as_ref()) {
        Ok(v) => v,
        Err(e) => return e.to_errno(),
    };
    let obj = ibcq.cast::<CqObj>();
    // SAFETY: the core allocated size_ib_cq = size_of::<CqObj>() bytes for ibcq, which do
    // not move until destroy_cq; data is uninitialised and ours to initialise.
    let slot = unsafe { addr_of_mut!((*obj).data) };
    // SAFETY: as above; on error the initialiser leaves nothing to drop.
    if let Err(e) = unsafe { init.__pinned_init(slot) } {
        return e.to_errno();
    }
    // SAFETY: ibcq is ours for the duration of creation.
    unsafe { (*ibcq).cqe = entries as i32 };
    if udata.is_user() {
        // SAFETY: just initialised.
        let cq = unsafe { &*slot };
        let resp = bindings::rrxe_create_cq_resp {
            cq: cq.queue_info(),
        };
        if let Err(e) = udata.respond(&resp) {
            // SAFETY: initialised above and not visible to anybody else yet.
            unsafe { core::ptr::drop_in_place(slot) };
            return e.to_errno();
        }
    }
    0
}

unsafe extern "C" fn destroy_cq(
    ibcq: *mut bindings::ib_cq,
    _udata: *mut bindings::ib_udata,
) -> i32 {
    // SAFETY: called once, after the core made sure no QP uses the CQ; the data was
    // initialised by create_cq; the device outlives its CQs.
    let dev = unsafe {
        core::ptr::drop_in_place(addr_of_mut!((*ibcq.cast::<CqObj>()).data));
        IbDev::from_raw((*ibcq).device)
    };
    dev.data().limits.put(Obj::Cq);
    0
}

unsafe extern "C" fn poll_cq(
    ibcq: *mut bindings::ib_cq,
    num: i32,
    wc: *mut bindings::ib_wc,
) -> i32 {
    let Ok(num) = usize::try_from(num) else {
        return EINVAL.to_errno();
    };
    if num == 0 || wc.is_null() {
        return 0;
    }
    // SAFETY: a live CQ; the caller gives an array of num ib_wc it owns.
    let (cq, wcs) = unsafe { (cq_data(ibcq), core::slice::from_raw_parts_mut(wc, num)) };
    let n = cq.poll(num, |i, c| {
        if let Some(w) = wcs.get_mut(i) {
            *w = bindings::ib_wc::default();
            w.__bindgen_anon_1.wr_id = c.wr_id;
            w.status = c.status;
            w.opcode = c.opcode;
            w.byte_len = c.byte_len;
            w.qp = c.qp_addr as *mut bindings::ib_qp;
            w.ex.invalidate_rkey = c.ex;
            w.src_qp = c.src_qp;
            w.wc_flags = c.wc_flags as i32;
            w.port_num = 1;
            w.smac = c.smac;
            w.vlan_id = 0xffff;
            w.network_hdr_type = c.network_hdr_type;
        }
    });
    n as i32
}

unsafe extern "C" fn resize_cq(
    ibcq: *mut bindings::ib_cq,
    cqe: i32,
    udata: *mut bindings::ib_udata,
) -> i32 {
    let Ok(cqe) = u32::try_from(cqe) else {
        return EINVAL.to_errno();
    };
    // SAFETY: a live CQ; udata is null (kernel caller) or the command's driver udata.
    let (cq, mut udata) = unsafe { (cq_data(ibcq), Udata(udata, PhantomData)) };
    let uctx = UContext::from_udata(&udata);
    let publish = |entries: u32| {
        // SAFETY: a live CQ; `cqe` is written only here and at creation, and Cq::resize
        // calls this under the CQ's lock, so two resizes (the uverbs layer takes the CQ for
        // reading only) never write it at once.
        unsafe { (*ibcq).cqe = entries as i32 };
    };
    if let Err(e) = cq.resize(cqe, uctx.as_ref(), publish) {
        return e.to_errno();
    }
    if udata.is_user() {
        let resp = bindings::rrxe_resize_cq_resp {
            cq: cq.queue_info(),
        };
        if let Err(e) = udata.respond(&resp) {
            return e.to_errno();
        }
    }
    0
}

/// IB_CQ_REPORT_MISSED_EVENTS.
const REPORT_MISSED_EVENTS: u32 = 4;

unsafe extern "C" fn req_notify_cq(
    ibcq: *mut bindings::ib_cq,
    flags: bindings::ib_cq_notify_flags,
) -> i32 {
    // SAFETY: a live CQ.
    let cq = unsafe { cq_data(ibcq) };
    let pending = cq.req_notify(flags);
    i32::from(flags & REPORT_MISSED_EVENTS != 0 && pending)
}

/// The `ib_mr` the core gets from us, and the page list of a fast-registration MR.
#[repr(C)]
#[pin_data]
struct MrObj {
    ib: bindings::ib_mr,
    /// The pages `ib_map_mr_sg` recorded. IRQs off: `map_mr_sg` and its `fr_set_page`
    /// callback (the consumer's context), and a REG_MR `post_send` (any context), which
    /// stages the list into the MR table inside it (the table's `inner`, then the region's
    /// `staged`, both interrupts-off locks).
    #[pin]
    fr: crate::glue::sync::IrqSpinLock<FrPages>,
}

/// Pages recorded by `ib_map_mr_sg` for the next REG_MR work request.
pub(crate) struct FrPages {
    /// Kernel virtual address of each page (capacity = max_num_sg, never reallocated).
    pub(crate) pages: KVec<u64>,
    /// Entries of `pages` in use.
    pub(crate) n: usize,
}

/// Largest fast-registration page list.
const MAX_FR_PAGES: u32 = 512;

pub(super) fn err_ptr<T>(e: Error) -> *mut T {
    e.to_errno() as isize as *mut T
}

/// Allocates the MrObj, registers `region` in the device's table and returns the `ib_mr`.
pub(super) fn new_mr(
    dev: &IbDev,
    region: crate::mr::Region,
    fr_cap: usize,
) -> Result<*mut bindings::ib_mr> {
    let limits = &dev.data().limits;
    limits.take(Obj::Mr)?;
    new_mr_counted(dev, region, fr_cap).inspect_err(|_| limits.put(Obj::Mr))
}

/// [`new_mr`] once a unit of the device's limit is taken.
fn new_mr_counted(
    dev: &IbDev,
    region: crate::mr::Region,
    fr_cap: usize,
) -> Result<*mut bindings::ib_mr> {
    let mut pages = KVec::with_capacity(fr_cap, GFP_KERNEL)?;
    pages.extend_with(fr_cap, 0u64, GFP_KERNEL)?;
    let obj = KBox::pin_init(
        pin_init!(MrObj {
            ib: bindings::ib_mr::default(),
            fr <- crate::glue::sync::new_irq_spinlock!(FrPages { pages, n: 0 }, "rrxe_fr_pages"),
        }),
        GFP_KERNEL,
    )?;
    let key = dev.data().mrs.insert(region)?;
    // SAFETY: we never move the MrObj out of its box; dereg_mr turns the pointer back into
    // the box.
    let obj = KBox::into_raw(unsafe { Pin::into_inner_unchecked(obj) });
    // SAFETY: just allocated and exclusively ours.
    unsafe {
        (*obj).ib.lkey = key;
        (*obj).ib.rkey = key;
    }
    Ok(obj.cast())
}

unsafe extern "C" fn get_dma_mr(pd: *mut bindings::ib_pd, access: i32) -> *mut bindings::ib_mr {
    // SAFETY: the core passes a live PD of our device.
    let dev = unsafe { IbDev::from_raw((*pd).device) };
    match crate::mr::dma_region(pd as usize, access as u32).and_then(|r| new_mr(dev, r, 0)) {
        Ok(p) => p,
        Err(e) => err_ptr(e),
    }
}

unsafe extern "C" fn reg_user_mr(
    pd: *mut bindings::ib_pd,
    start: u64,
    length: u64,
    iova: u64,
    access: i32,
    _udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_mr {
    // SAFETY: the core passes a live PD of our device.
    let dev = unsafe { IbDev::from_raw((*pd).device) };
    let r = crate::mr::check_access_flags(access as u32)
        .and_then(|()| crate::mr::check_user_range(start, length, iova))
        .and_then(|()| super::mem::Umem::get(dev, start, length, access))
        .and_then(|umem| crate::mr::user_region(pd as usize, access as u32, iova, length, umem))
        .and_then(|r| new_mr(dev, r, 0));
    match r {
        Ok(p) => p,
        Err(e) => err_ptr(e),
    }
}

/// `IB_MR_REREG_*`.
const REREG_TRANS: i32 = 1;
const REREG_PD: i32 = 2;
const REREG_ACCESS: i32 = 4;

/// Re-registration of a user MR. A new translation or new access flags make a new region
/// (pinned again, with new keys: the core then destroys the old MR); a PD change alone is
/// made in place.
unsafe extern "C" fn rereg_user_mr(
    ibmr: *mut bindings::ib_mr,
    flags: i32,
    start: u64,
    length: u64,
    iova: u64,
    access: i32,
    pd: *mut bindings::ib_pd,
    udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_mr {
    // SAFETY: the core passes a live MR of ours (its uobject locked for write) and a live PD.
    let (dev, key, old_pd) = unsafe { (IbDev::from_raw((*ibmr).device), (*ibmr).lkey, (*ibmr).pd) };
    let mrs = &dev.data().mrs;
    let Ok(Some((cur_access, cur_iova, cur_len, cur_start))) =
        mrs.with(key, old_pd as usize, |r| crate::mr::user_extent(r))
    else {
        return err_ptr(EINVAL);
    };
    // A region with windows bound to it keeps its PD, access and translation: the IBTA's
    // reregistration, like deregistration, refuses a region in use by windows (rdma_rxe
    // refuses to deregister one with EINVAL).
    if mrs.has_bound_windows(key) {
        return err_ptr(EINVAL);
    }
    if flags & (REREG_TRANS | REREG_ACCESS) != 0 {
        let access = if flags & REREG_ACCESS != 0 {
            access
        } else {
            cur_access as i32
        };
        let (start, length, iova) = if flags & REREG_TRANS != 0 {
            (start, length, iova)
        } else {
            (cur_start, cur_len, cur_iova)
        };
        // SAFETY: arguments checked by the core as for reg_user_mr.
        return unsafe { reg_user_mr(pd, start, length, iova, access, udata) };
    }
    if flags & REREG_PD != 0 && mrs.set_pd(key, old_pd as usize, pd as usize).is_err() {
        return err_ptr(EINVAL);
    }
    core::ptr::null_mut()
}

unsafe extern "C" fn alloc_mr(
    pd: *mut bindings::ib_pd,
    mr_type: bindings::ib_mr_type,
    max_num_sg: u32,
) -> *mut bindings::ib_mr {
    // SAFETY: the core passes a live PD of our device.
    let dev = unsafe { IbDev::from_raw((*pd).device) };
    if mr_type != bindings::ib_mr_type_IB_MR_TYPE_MEM_REG {
        return err_ptr(EINVAL);
    }
    if max_num_sg == 0 || max_num_sg > MAX_FR_PAGES {
        return err_ptr(EINVAL);
    }
    let r = crate::mr::fast_region(pd as usize, max_num_sg as usize)
        .and_then(|r| new_mr(dev, r, max_num_sg as usize));
    match r {
        Ok(p) => p,
        Err(e) => err_ptr(e),
    }
}

unsafe extern "C" fn fr_set_page(ibmr: *mut bindings::ib_mr, addr: u64) -> i32 {
    // SAFETY: called by ib_sg_to_pages for an MR of ours during map_mr_sg.
    let obj = unsafe { &*ibmr.cast::<MrObj>() };
    let mut fr = obj.fr.lock();
    let n = fr.n;
    match fr.pages.get_mut(n) {
        Some(slot) => {
            *slot = addr;
            fr.n = n + 1;
            0
        }
        None => ENOMEM.to_errno(),
    }
}

unsafe extern "C" fn map_mr_sg(
    ibmr: *mut bindings::ib_mr,
    sg: *mut bindings::scatterlist,
    nents: i32,
    sg_offset: *mut u32,
) -> i32 {
    // SAFETY: an MR of ours, alive during the call.
    let obj = unsafe { &*ibmr.cast::<MrObj>() };
    obj.fr.lock().n = 0;
    // SAFETY: the core's arguments are passed through; fr_set_page only touches our MrObj.
    unsafe { bindings::rrxe_glue_sg_to_pages(ibmr, sg, nents, sg_offset, Some(fr_set_page)) }
}

unsafe extern "C" fn dereg_mr(ibmr: *mut bindings::ib_mr, _udata: *mut bindings::ib_udata) -> i32 {
    // SAFETY: the core passes a live MR of ours and never uses it after this returns.
    let (dev, key) = unsafe { (IbDev::from_raw((*ibmr).device), (*ibmr).lkey) };
    // Unreachable from the datapath from here on; its memory is released here, in process
    // context.
    drop(dev.data().mrs.remove(key));
    // SAFETY: allocated by new_mr as a KBox<MrObj>; this is the only release.
    drop(unsafe { KBox::from_raw(ibmr.cast::<MrObj>()) });
    dev.data().limits.put(Obj::Mr);
    0
}

unsafe extern "C" fn alloc_mw(mw: *mut bindings::ib_mw, udata: *mut bindings::ib_udata) -> i32 {
    // SAFETY: the core allocated mw (size_ib_mw) and set its device.
    let dev = unsafe { IbDev::from_raw((*mw).device) };
    // SAFETY: the core's arguments, passed through unchanged.
    counted(dev, Obj::Mw, || unsafe { alloc_mw_uncounted(mw, udata) })
}

/// [`alloc_mw`] once a unit of the device's limit is taken.
unsafe extern "C" fn alloc_mw_uncounted(
    mw: *mut bindings::ib_mw,
    _udata: *mut bindings::ib_udata,
) -> i32 {
    // SAFETY: the core allocated mw (size_ib_mw) and set device, pd and type.
    let (dev, pd, ty) = unsafe { (IbDev::from_raw((*mw).device), (*mw).pd, (*mw).type_) };
    let type2 = match ty {
        bindings::ib_mw_type_IB_MW_TYPE_1 => false,
        bindings::ib_mw_type_IB_MW_TYPE_2 => true,
        _ => return EINVAL.to_errno(),
    };
    match dev.data().mrs.insert_window(pd as usize, type2) {
        Ok(key) => {
            // SAFETY: the MW is ours until alloc_mw returns.
            unsafe { (*mw).rkey = key };
            0
        }
        Err(e) => e.to_errno(),
    }
}

unsafe extern "C" fn dealloc_mw(mw: *mut bindings::ib_mw) -> i32 {
    // SAFETY: the core passes a live MW of ours and frees it after we return. Its rkey field
    // keeps the key given at allocation, whose slot is the window's whatever binds did to
    // the tag.
    let (dev, key) = unsafe { (IbDev::from_raw((*mw).device), (*mw).rkey) };
    dev.data().mrs.remove_window(key);
    dev.data().limits.put(Obj::Mw);
    0
}

/// What an `ib_ah` carries for us.
pub(crate) struct AhData {
    /// The address vector.
    pub(crate) av: crate::ah::Av,
    /// Its number in the device's user AH table (0 for kernel AHs).
    pub(crate) num: u32,
}

type AhObj = DrvObj<bindings::ib_ah, AhData>;

/// The AV of a kernel AH.
///
/// # Safety
/// `ah` is a live AH of ours.
pub(super) unsafe fn ah_av(ah: *const bindings::ib_ah) -> crate::ah::Av {
    // SAFETY: by the contract the AH is an AhObj with initialised data.
    unsafe { (*ah.cast::<AhObj>()).data.av }
}

unsafe extern "C" fn create_ah(
    ibah: *mut bindings::ib_ah,
    init: *mut bindings::rdma_ah_init_attr,
    udata: *mut bindings::ib_udata,
) -> i32 {
    // SAFETY: the core allocated ibah (size_ib_ah) and set its device.
    let dev = unsafe { IbDev::from_raw((*ibah).device) };
    // SAFETY: the core's arguments, passed through unchanged.
    counted(dev, Obj::Ah, || unsafe {
        create_ah_uncounted(ibah, init, udata)
    })
}

/// [`create_ah`] once a unit of the device's limit is taken.
unsafe extern "C" fn create_ah_uncounted(
    ibah: *mut bindings::ib_ah,
    init: *mut bindings::rdma_ah_init_attr,
    udata: *mut bindings::ib_udata,
) -> i32 {
    let mut av = crate::ah::Av::default();
    // SAFETY: the core passes a live init attr whose ah_attr holds a referenced sgid_attr.
    let err = unsafe { bindings::rrxe_glue_ah_attr_to_av((*init).ah_attr, &mut av) };
    if err != 0 {
        return err;
    }
    // SAFETY: the core allocated ibah (size_ib_ah) and set device and pd.
    let (dev, pd) = unsafe { (IbDev::from_raw((*ibah).device), (*ibah).pd as usize) };
    let mut udata = Udata(udata, PhantomData);
    let mut num = 0;
    if udata.is_user() {
        num = match dev.data().ahs.insert(pd, av) {
            Ok(n) => n,
            Err(e) => return e.to_errno(),
        };
        let resp = bindings::rrxe_create_ah_resp {
            ah_num: num,
            reserved: 0,
        };
        if let Err(e) = udata.respond(&resp) {
            dev.data().ahs.remove(num);
            return e.to_errno();
        }
    }
    // SAFETY: data is ours to initialise (plain data, nothing to drop).
    unsafe {
        core::ptr::write(
            addr_of_mut!((*ibah.cast::<AhObj>()).data),
            AhData { av, num },
        )
    };
    0
}

unsafe extern "C" fn destroy_ah(ibah: *mut bindings::ib_ah, _flags: u32) -> i32 {
    // SAFETY: a live AH of ours, destroyed once.
    let (dev, num) = unsafe {
        (
            IbDev::from_raw((*ibah).device),
            (*ibah.cast::<AhObj>()).data.num,
        )
    };
    if num != 0 {
        dev.data().ahs.remove(num);
    }
    dev.data().limits.put(Obj::Ah);
    0
}

unsafe extern "C" fn query_ah(
    ibah: *mut bindings::ib_ah,
    attr: *mut bindings::rdma_ah_attr,
) -> i32 {
    // SAFETY: a live AH of ours; attr is the caller's output.
    unsafe { bindings::rrxe_glue_av_to_ah_attr(&ah_av(ibah), attr) };
    0
}

/// What an `ib_qp` carries for us.
pub(crate) struct QpHandle {
    qp: kernel::sync::Arc<crate::qp::Qp>,
    caps: bindings::ib_qp_cap,
    sig_type: u32,
}

type QpObj = DrvObj<bindings::ib_qp, QpHandle>;

/// # Safety
/// `ibqp` is a live QP created by [`create_qp`].
unsafe fn qp_handle<'a>(ibqp: *mut bindings::ib_qp) -> &'a QpHandle {
    // SAFETY: by the contract the QP is a QpObj with initialised data.
    unsafe { &(*ibqp.cast::<QpObj>()).data }
}

unsafe extern "C" fn create_qp(
    ibqp: *mut bindings::ib_qp,
    init: *mut bindings::ib_qp_init_attr,
    udata: *mut bindings::ib_udata,
) -> i32 {
    // SAFETY: the core allocated ibqp (size_ib_qp) and set its device.
    let dev = unsafe { IbDev::from_raw((*ibqp).device) };
    // SAFETY: the core's arguments, passed through unchanged.
    counted(dev, Obj::Qp, || unsafe {
        create_qp_uncounted(ibqp, init, udata)
    })
}

/// [`create_qp`] once a unit of the device's limit is taken.
unsafe extern "C" fn create_qp_uncounted(
    ibqp: *mut bindings::ib_qp,
    init: *mut bindings::ib_qp_init_attr,
    udata: *mut bindings::ib_udata,
) -> i32 {
    use crate::qp::{Qp, QpInit, QpKind, UserRings};
    let mut udata = Udata(udata, PhantomData);
    // SAFETY: the core passes a live init attr and a QP it allocated (size_ib_qp) with
    // device and pd set.
    let (init, dev, pd) = unsafe {
        (
            &mut *init,
            IbDev::from_raw((*ibqp).device),
            (*ibqp).pd as usize,
        )
    };
    let kind = match init.qp_type {
        bindings::ib_qp_type_IB_QPT_RC => QpKind::Rc,
        bindings::ib_qp_type_IB_QPT_UC => QpKind::Uc,
        bindings::ib_qp_type_IB_QPT_UD => QpKind::Ud,
        bindings::ib_qp_type_IB_QPT_GSI => QpKind::Gsi,
        _ => return super::eopnotsupp().to_errno(),
    };
    if init.create_flags != 0 {
        return super::eopnotsupp().to_errno();
    }
    let srq = if init.srq.is_null() {
        None
    } else {
        // SAFETY: the core passes a live SRQ of ours and counts this QP as its user.
        Some(unsafe { srq_handle(init.srq) }.srq.clone())
    };
    // A QP with an SRQ takes its receives from the SRQ: its own receive capabilities are
    // ignored (rdma_rxe's rxe_qp_chk_cap checks them only for a QP without one) and
    // reported as 0.
    if srq.is_some() {
        init.cap.max_recv_wr = 0;
        init.cap.max_recv_sge = 0;
    }
    // SAFETY: the CQs given at creation are live and outlive the QP (the core counts their
    // users).
    let (Some(send_cq), Some(recv_cq)) = (unsafe { CqPtr::new(init.send_cq) }, unsafe {
        CqPtr::new(init.recv_cq)
    }) else {
        return EINVAL.to_errno();
    };
    // User QPs: the work queues live in memory the process maps.
    let mut user = None;
    let mut resp = bindings::rrxe_create_qp_resp::default();
    if udata.is_user() {
        if kind == QpKind::Gsi {
            return EINVAL.to_errno();
        }
        let Some(uctx) = UContext::from_udata(&udata) else {
            return EINVAL.to_errno();
        };
        let c = &mut init.cap;
        let asked = crate::proto::caps::QpCaps {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline: c.max_inline_data,
        };
        let Ok(l) =
            crate::proto::caps::user_qp_layout(&asked, &crate::qp::DEV_CAPS, &crate::uwqe::FORMAT)
        else {
            return EINVAL.to_errno();
        };
        let (sq_slots, rq_slots) = (l.sq.slots(), l.rq.slots());
        let sq = match crate::glue::Queue::new(l.sq.log2_slots, l.sq.slot_size, Some(&uctx)) {
            Ok(q) => q,
            Err(e) => return e.to_errno(),
        };
        let rq = match crate::glue::Queue::new(l.rq.log2_slots, l.rq.slot_size, Some(&uctx)) {
            Ok(q) => q,
            Err(e) => return e.to_errno(),
        };
        // What the QP really has: the rings' sizes.
        c.max_send_wr = sq_slots;
        c.max_recv_wr = rq_slots;
        resp.sq = sq.info();
        resp.rq = rq.info();
        resp.max_inline = c.max_inline_data;
        user = Some(UserRings { sq, rq });
    }
    let qps = &dev.data().qps;
    let qpn = match qps.reserve(kind == QpKind::Gsi) {
        Ok(n) => n,
        Err(e) => return e.to_errno(),
    };
    let qi = QpInit {
        kind,
        qpn,
        pd,
        send_cq,
        recv_cq,
        max_send_wr: init.cap.max_send_wr,
        max_recv_wr: init.cap.max_recv_wr,
        max_send_sge: init.cap.max_send_sge,
        max_recv_sge: init.cap.max_recv_sge,
        max_inline: init.cap.max_inline_data,
        sig_all: init.sq_sig_type == bindings::ib_sig_type_IB_SIGNAL_ALL_WR,
        ibqp_addr: ibqp as u64,
        user,
        srq,
    };
    let qp = match Qp::new(dev.ptr(), qi) {
        Ok(qp) => qp,
        Err(e) => {
            drop(qps.remove(qpn));
            return e.to_errno();
        }
    };
    if udata.is_user() {
        if let Err(e) = udata.respond(&resp) {
            drop(qps.remove(qpn));
            return e.to_errno();
        }
    }
    qps.publish(qpn, qp.clone());
    let h = QpHandle {
        qp,
        caps: init.cap,
        sig_type: init.sq_sig_type,
    };
    // SAFETY: the QP object is ours to initialise; the core does not touch data.
    unsafe {
        core::ptr::write(addr_of_mut!((*ibqp.cast::<QpObj>()).data), h);
        (*ibqp).qp_num = qpn;
    }
    0
}

unsafe extern "C" fn destroy_qp(
    ibqp: *mut bindings::ib_qp,
    _udata: *mut bindings::ib_udata,
) -> i32 {
    // SAFETY: a live QP of ours, destroyed once.
    let (dev, h) = unsafe { (IbDev::from_raw((*ibqp).device), qp_handle(ibqp)) };
    // No more received packets reach it, then no more work or timers run.
    let table_ref = dev.data().qps.remove(h.qp.qpn);
    h.qp.shutdown();
    // Type 2B windows bound to it are unbound: its number will be reused.
    dev.data().mrs.unbind_qp(h.qp.qpn);
    // The receive softirq may still hold a reference taken before the removal: it drops
    // it before bottom halves come back on, so after this grace period ours are the last.
    super::sync::synchronize_rcu();
    drop(table_ref);
    // SAFETY: initialised by create_qp; the core frees the memory after we return.
    unsafe { core::ptr::drop_in_place(addr_of_mut!((*ibqp.cast::<QpObj>()).data)) };
    dev.data().limits.put(Obj::Qp);
    0
}

unsafe extern "C" fn modify_qp(
    ibqp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    mask: i32,
    _udata: *mut bindings::ib_udata,
) -> i32 {
    use crate::qp::ModifyArgs;
    // SAFETY: a live QP of ours; attr is the caller's.
    let (h, attr) = unsafe { (qp_handle(ibqp), &*attr) };
    let mask = mask as u32;
    let cur = h.qp.attrs().state;
    let new = if mask & bindings::ib_qp_attr_mask_IB_QP_STATE != 0 {
        attr.qp_state
    } else {
        cur
    };
    if mask & bindings::ib_qp_attr_mask_IB_QP_CUR_STATE != 0 && attr.cur_qp_state != cur {
        return EINVAL.to_errno();
    }
    // SAFETY: plain query of the core's transition table.
    let ok = unsafe { bindings::ib_modify_qp_is_ok(cur, new, (*ibqp).qp_type, mask) };
    if !ok {
        return EINVAL.to_errno();
    }
    let has = |bit: u32| mask & bit != 0;
    let mut m = ModifyArgs::default();
    if has(bindings::ib_qp_attr_mask_IB_QP_STATE) {
        m.state = Some(new);
    }
    if has(bindings::ib_qp_attr_mask_IB_QP_AV) {
        let mut av = crate::ah::Av::default();
        // SAFETY: attr.ah_attr is live; the core resolved its sgid_attr and dmac.
        let err = unsafe { bindings::rrxe_glue_ah_attr_to_av(&attr.ah_attr, &mut av) };
        if err != 0 {
            return err;
        }
        m.av = Some(av);
    }
    if has(bindings::ib_qp_attr_mask_IB_QP_PATH_MTU) {
        m.path_mtu = Some(attr.path_mtu);
    }
    if has(bindings::ib_qp_attr_mask_IB_QP_DEST_QPN) {
        m.dest_qpn = Some(attr.dest_qp_num);
    }
    if has(bindings::ib_qp_attr_mask_IB_QP_QKEY) {
        m.qkey = Some(attr.qkey);
    }
    if has(bindings::ib_qp_attr_mask_IB_QP_SQ_PSN) {
        m.sq_psn = Some(attr.sq_psn & 0xff_ffff);
    }
    if has(bindings::ib_qp_attr_mask_IB_QP_RQ_PSN) {
        m.rq_psn = Some(attr.rq_psn & 0xff_ffff);
    }
    if has(bindings::ib_qp_attr_mask_IB_QP_TIMEOUT) {
        m.timeout = Some(attr.timeout);
    }
    if has(bindings::ib_qp_attr_mask_IB_QP_RETRY_CNT) {
        m.retry_cnt = Some(attr.retry_cnt);
    }
    if has(bindings::ib_qp_attr_mask_IB_QP_RNR_RETRY) {
        m.rnr_retry = Some(attr.rnr_retry);
    }
    if has(bindings::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER) {
        m.min_rnr_timer = Some(attr.min_rnr_timer);
    }
    if has(bindings::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC) {
        m.max_rd_atomic = Some(attr.max_rd_atomic);
    }
    if has(bindings::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC) {
        m.max_dest_rd_atomic = Some(attr.max_dest_rd_atomic);
    }
    if has(bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS) {
        m.access = Some(attr.qp_access_flags as u32);
    }
    errno(h.qp.modify(&m))
}

unsafe extern "C" fn query_qp(
    ibqp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    _mask: i32,
    init: *mut bindings::ib_qp_init_attr,
) -> i32 {
    // SAFETY: a live QP of ours; attr and init are the caller's outputs.
    let (h, attr, init) = unsafe { (qp_handle(ibqp), &mut *attr, &mut *init) };
    let a = h.qp.attrs();
    *attr = bindings::ib_qp_attr::default();
    attr.qp_state = a.state;
    attr.cur_qp_state = a.state;
    attr.path_mtu = a.path_mtu;
    attr.qkey = a.qkey;
    attr.rq_psn = a.rq_psn;
    attr.sq_psn = a.sq_psn;
    attr.dest_qp_num = a.dest_qpn;
    attr.qp_access_flags = a.access as i32;
    attr.cap = h.caps;
    attr.timeout = a.timeout;
    attr.retry_cnt = a.retry_cnt;
    attr.rnr_retry = a.rnr_retry;
    attr.min_rnr_timer = a.min_rnr_timer;
    attr.max_rd_atomic = a.max_rd_atomic;
    attr.max_dest_rd_atomic = a.max_dest_rd_atomic;
    attr.port_num = 1;
    if let Some(av) = a.av {
        // SAFETY: attr.ah_attr is the caller's output.
        unsafe { bindings::rrxe_glue_av_to_ah_attr(&av, &mut attr.ah_attr) };
    }
    init.cap = h.caps;
    init.sq_sig_type = h.sig_type;
    0
}

/// IB_SEND_* flags.
const SEND_FENCE: u32 = 1;
const SEND_SIGNALED: u32 = 2;
const SEND_SOLICITED: u32 = 4;
const SEND_INLINE: u32 = 8;

/// Turns one kernel send WR into the driver's form and posts it.
///
/// # Safety
/// `wr` is a live send WR of the consumer for the duration of the call, and `ibqp` is a live
/// QP of ours.
unsafe fn post_one_send(
    ibqp: *mut bindings::ib_qp,
    h: &QpHandle,
    wr: *const bindings::ib_send_wr,
) -> Result {
    use crate::proto::{RemoteAddr, UdDest};
    use crate::qp::{SendKind, SendWr, Sge};
    let mut k = bindings::rrxe_kwr::default();
    // SAFETY: wr is live (contract).
    unsafe { bindings::rrxe_glue_decode_send_wr(wr, &mut k) };
    let qp = &h.qp;
    let n = k.num_sge as usize;
    if n > h.caps.max_send_sge.max(1) as usize || (n > 0 && k.sg_list.is_null()) {
        return Err(EINVAL);
    }
    let raw: &[bindings::ib_sge] = if n == 0 {
        &[]
    } else {
        // SAFETY: the WR's sg_list holds num_sge entries (checked non-null above).
        unsafe { core::slice::from_raw_parts(k.sg_list.cast::<bindings::ib_sge>(), n) }
    };
    let mut sges = [Sge::default(); crate::qp::MAX_SGE as usize];
    let mut len: u32 = 0;
    for (d, s) in sges.iter_mut().zip(raw) {
        *d = Sge {
            addr: s.addr,
            len: s.length,
            lkey: s.lkey,
        };
        len = len.checked_add(s.length).ok_or(EINVAL)?;
    }
    let remote = RemoteAddr {
        va: k.remote_addr,
        rkey: k.rkey,
    };
    let (kind, wc) = match k.opcode {
        bindings::ib_wr_opcode_IB_WR_LOCAL_INV => (
            SendKind::LocalInv { key: k.ex },
            bindings::ib_wc_opcode_IB_WC_LOCAL_INV,
        ),
        bindings::ib_wr_opcode_IB_WR_REG_MR => {
            let mr = k.reg_mr.cast::<bindings::ib_mr>();
            if mr.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: a live MR of ours (the consumer keeps it while the WR is posted).
            let (obj, ibmr) = unsafe { (&*mr.cast::<MrObj>(), &*mr) };
            let fr = crate::mr::FastReg {
                cur_key: ibmr.lkey,
                new_key: k.reg_key,
                access: k.reg_access,
                iova: ibmr.iova,
                length: ibmr.length,
                page_size: ibmr.page_size,
            };
            {
                let pages = obj.fr.lock();
                let list = pages.pages.get(..pages.n).ok_or(EINVAL)?;
                // SAFETY: the device of a live QP.
                let dev = unsafe { IbDev::from_raw((*ibqp).device) };
                // SAFETY: a live QP's pd.
                let pd = unsafe { (*ibqp).pd as usize };
                dev.data()
                    .mrs
                    .fast_reg_load(fr.cur_key, pd, list)
                    .map_err(|_| EINVAL)?;
            }
            (SendKind::RegMr(fr), bindings::ib_wc_opcode_IB_WC_REG_MR)
        }
        op => {
            let (op, wc) = crate::qp::transport_op(op, k.ex, remote, remote, k.compare_add, k.swap)
                .ok_or(EINVAL)?;
            (SendKind::Transport(op), wc)
        }
    };
    let mut ud = None;
    if matches!(qp.kind, crate::qp::QpKind::Ud | crate::qp::QpKind::Gsi) {
        // SAFETY: a UD QP's send WRs are ib_ud_wr.
        unsafe { bindings::rrxe_glue_decode_ud_wr(wr, &mut k) };
        if k.ah.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: a live AH of ours.
        let av = unsafe { ah_av(k.ah.cast()) };
        ud = Some((
            av,
            UdDest {
                qpn: k.remote_qpn,
                qkey: k.remote_qkey,
            },
        ));
    }
    let inline = k.send_flags & SEND_INLINE != 0 && matches!(kind, SendKind::Transport(_));
    let mut data = [0u8; crate::qp::MAX_INLINE as usize];
    let inline_data = if inline {
        if len > h.caps.max_inline_data {
            return Err(EINVAL);
        }
        let mut at = 0usize;
        for s in raw {
            let l = s.length as usize;
            let d = data.get_mut(at..at + l).ok_or(EINVAL)?;
            // SAFETY: an inline SGE of a kernel consumer is a kernel virtual address of
            // `length` readable bytes, valid during post_send.
            unsafe { core::ptr::copy(s.addr as usize as *const u8, d.as_mut_ptr(), l) };
            at += l;
        }
        data.get(..at)
    } else {
        None
    };
    let w = SendWr {
        wr_id: k.wr_id,
        kind,
        wc_opcode: wc,
        len,
        signaled: k.send_flags & SEND_SIGNALED != 0,
        solicited: k.send_flags & SEND_SOLICITED != 0,
        fence: k.send_flags & SEND_FENCE != 0,
        inline,
        num_sge: if inline { 0 } else { n as u32 },
        ud,
    };
    qp.post_send(w, sges.get(..n).unwrap_or(&[]), inline_data)
}

unsafe extern "C" fn post_send(
    ibqp: *mut bindings::ib_qp,
    mut wr: *const bindings::ib_send_wr,
    bad: *mut *const bindings::ib_send_wr,
) -> i32 {
    // SAFETY: a live QP of ours.
    let h = unsafe { qp_handle(ibqp) };
    if wr.is_null() {
        // The user's doorbell: new entries in the shared send queue.
        h.qp.doorbell();
        return 0;
    }
    // A user QP's list is refused before any of it is read.
    if let Err(e) = h.qp.accept_kernel_wrs() {
        // SAFETY: `bad` is the core's output slot or null.
        return unsafe { refuse_list(bad, wr, e) };
    }
    while !wr.is_null() {
        // SAFETY: the consumer's WR list is live for the call.
        if let Err(e) = unsafe { post_one_send(ibqp, h, wr) } {
            if !bad.is_null() {
                // SAFETY: the caller's output.
                unsafe { *bad = wr };
            }
            return e.to_errno();
        }
        // SAFETY: as above.
        wr = unsafe { (*wr).next };
    }
    0
}

unsafe extern "C" fn post_recv(
    ibqp: *mut bindings::ib_qp,
    wr: *const bindings::ib_recv_wr,
    bad: *mut *const bindings::ib_recv_wr,
) -> i32 {
    // SAFETY: a live QP of ours.
    let h = unsafe { qp_handle(ibqp) };
    if wr.is_null() {
        return 0;
    }
    // A user QP's list is refused before any of it is read.
    if let Err(e) = h.qp.accept_kernel_wrs() {
        // SAFETY: `bad` is the core's output slot or null.
        return unsafe { refuse_list(bad, wr, e) };
    }
    // SAFETY: the consumer's WR list is live for the call; bad is its output.
    unsafe { post_recv_list(wr, bad, h.caps.max_recv_sge, |w, s| h.qp.post_recv(w, s)) }
}

/// Refuses a whole WR list: `*bad` names its first WR (the uverbs layer counts the WRs up
/// to it for the process) and the errno is returned.
///
/// # Safety
/// `bad` is null or a writable output slot (the post trampolines' `bad` argument).
unsafe fn refuse_list<T>(bad: *mut *const T, wr: *const T, e: Error) -> i32 {
    if !bad.is_null() {
        // SAFETY: non-null, so writable by the contract.
        unsafe { *bad = wr };
    }
    e.to_errno()
}

/// Walks a kernel receive WR list, converting each WR and handing it to `post`.
///
/// # Safety
/// `wr` is null or a live WR list; `bad` is null or writable.
unsafe fn post_recv_list(
    mut wr: *const bindings::ib_recv_wr,
    bad: *mut *const bindings::ib_recv_wr,
    max_sge: u32,
    post: impl Fn(crate::qp::RecvWr, &[crate::qp::Sge]) -> Result,
) -> i32 {
    use crate::qp::{RecvWr, Sge};
    while !wr.is_null() {
        // SAFETY: the consumer's WR list is live for the call.
        let w = unsafe { &*wr };
        let n = usize::try_from(w.num_sge).unwrap_or(usize::MAX);
        let r = (|| -> Result {
            if n > max_sge.max(1) as usize || (n > 0 && w.sg_list.is_null()) {
                return Err(EINVAL);
            }
            let raw: &[bindings::ib_sge] = if n == 0 {
                &[]
            } else {
                // SAFETY: sg_list holds num_sge entries.
                unsafe { core::slice::from_raw_parts(w.sg_list, n) }
            };
            let mut sges = [Sge::default(); crate::qp::MAX_SGE as usize];
            let mut len: u32 = 0;
            for (d, s) in sges.iter_mut().zip(raw) {
                *d = Sge {
                    addr: s.addr,
                    len: s.length,
                    lkey: s.lkey,
                };
                len = len.checked_add(s.length).ok_or(EINVAL)?;
            }
            // SAFETY: reading the wr_id member of the union the consumer set.
            let wr_id = unsafe { w.__bindgen_anon_1.wr_id };
            post(
                RecvWr {
                    wr_id,
                    num_sge: n as u32,
                    len,
                },
                sges.get(..n).unwrap_or(&[]),
            )
        })();
        if let Err(e) = r {
            if !bad.is_null() {
                // SAFETY: the caller's output.
                unsafe { *bad = wr };
            }
            return e.to_errno();
        }
        wr = w.next;
    }
    0
}

/// What an `ib_srq` carries for us.
pub(crate) struct SrqHandle {
    srq: kernel::sync::Arc<crate::srq::Srq>,
}

type SrqObj = DrvObj<bindings::ib_srq, SrqHandle>;

/// # Safety
/// `ibsrq` is a live SRQ created by [`create_srq`].
unsafe fn srq_handle<'a>(ibsrq: *mut bindings::ib_srq) -> &'a SrqHandle {
    // SAFETY: by the contract the SRQ is an SrqObj with initialised data.
    unsafe { &(*ibsrq.cast::<SrqObj>()).data }
}

unsafe extern "C" fn create_srq(
    ibsrq: *mut bindings::ib_srq,
    init: *mut bindings::ib_srq_init_attr,
    udata: *mut bindings::ib_udata,
) -> i32 {
    // SAFETY: the core allocated ibsrq (size_ib_srq) and set its device.
    let dev = unsafe { IbDev::from_raw((*ibsrq).device) };
    // SAFETY: the core's arguments, passed through unchanged.
    counted(dev, Obj::Srq, || unsafe {
        create_srq_uncounted(ibsrq, init, udata)
    })
}

/// [`create_srq`] once a unit of the device's limit is taken.
unsafe extern "C" fn create_srq_uncounted(
    ibsrq: *mut bindings::ib_srq,
    init: *mut bindings::ib_srq_init_attr,
    udata: *mut bindings::ib_udata,
) -> i32 {
    // SAFETY: the core passes a live init attr and the SRQ it allocated (size_ib_srq).
    let init = unsafe { &mut *init };
    if init.srq_type != bindings::ib_srq_type_IB_SRQT_BASIC {
        return super::eopnotsupp().to_errno();
    }
    let mut udata = Udata(udata, PhantomData);
    let a = &mut init.attr;
    // Range first: max_wr comes from the process (next_power_of_two of a value over 2^31
    // overflows).
    let Ok(slots) = crate::proto::caps::check_srq_caps(a.max_wr, a.max_sge, &crate::qp::DEV_CAPS)
    else {
        return EINVAL.to_errno();
    };
    let mut resp = bindings::rrxe_create_srq_resp::default();
    let mut user = None;
    if udata.is_user() {
        let Some(uctx) = UContext::from_udata(&udata) else {
            return EINVAL.to_errno();
        };
        let Ok(shape) = crate::proto::caps::user_srq_shape(
            a.max_wr,
            a.max_sge,
            &crate::qp::DEV_CAPS,
            &crate::uwqe::FORMAT,
        ) else {
            return EINVAL.to_errno();
        };
        match super::Queue::new(shape.log2_slots, shape.slot_size, Some(&uctx)) {
            Ok(q) => {
                resp.rq = q.info();
                user = Some(q);
            }
            Err(e) => return e.to_errno(),
        }
    }
    a.max_wr = slots;
    // SAFETY: ibsrq is live and non-null.
    let ptr = super::SrqPtr(unsafe { core::ptr::NonNull::new_unchecked(ibsrq) });
    let srq = match crate::srq::Srq::new(slots, a.max_sge, a.srq_limit, ptr, user) {
        Ok(s) => s,
        Err(e) => return e.to_errno(),
    };
    if udata.is_user() {
        if let Err(e) = udata.respond(&resp) {
            return e.to_errno();
        }
    }
    // SAFETY: the SRQ object is ours to initialise.
    unsafe {
        core::ptr::write(
            addr_of_mut!((*ibsrq.cast::<SrqObj>()).data),
            SrqHandle { srq },
        )
    };
    0
}

unsafe extern "C" fn modify_srq(
    ibsrq: *mut bindings::ib_srq,
    attr: *mut bindings::ib_srq_attr,
    mask: bindings::ib_srq_attr_mask,
    _udata: *mut bindings::ib_udata,
) -> i32 {
    // SAFETY: a live SRQ of ours; attr is the caller's.
    let (h, attr) = unsafe { (srq_handle(ibsrq), &*attr) };
    if mask & bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR != 0 {
        // Resizing is not supported.
        return super::eopnotsupp().to_errno();
    }
    if mask & bindings::ib_srq_attr_mask_IB_SRQ_LIMIT != 0 {
        return errno(h.srq.set_limit(attr.srq_limit));
    }
    0
}

unsafe extern "C" fn query_srq(
    ibsrq: *mut bindings::ib_srq,
    attr: *mut bindings::ib_srq_attr,
) -> i32 {
    // SAFETY: a live SRQ of ours; attr is the caller's output.
    let (h, attr) = unsafe { (srq_handle(ibsrq), &mut *attr) };
    let (max_wr, max_sge, limit) = h.srq.attrs();
    attr.max_wr = max_wr;
    attr.max_sge = max_sge;
    attr.srq_limit = limit;
    0
}

unsafe extern "C" fn destroy_srq(
    ibsrq: *mut bindings::ib_srq,
    _udata: *mut bindings::ib_udata,
) -> i32 {
    // SAFETY: called once, after the core made sure no QP uses the SRQ; the device
    // outlives its SRQs.
    let dev = unsafe {
        core::ptr::drop_in_place(addr_of_mut!((*ibsrq.cast::<SrqObj>()).data));
        IbDev::from_raw((*ibsrq).device)
    };
    dev.data().limits.put(Obj::Srq);
    0
}

unsafe extern "C" fn post_srq_recv(
    ibsrq: *mut bindings::ib_srq,
    wr: *const bindings::ib_recv_wr,
    bad: *mut *const bindings::ib_recv_wr,
) -> i32 {
    // SAFETY: a live SRQ of ours, of a live device.
    let (h, dev) = unsafe { (srq_handle(ibsrq), IbDev::from_raw((*ibsrq).device)) };
    if wr.is_null() {
        return 0;
    }
    // A user SRQ's list is refused before any of it is read.
    if let Err(e) = h.srq.accept_kernel_wrs(&dev.data().counters) {
        // SAFETY: `bad` is the core's output slot or null.
        return unsafe { refuse_list(bad, wr, e) };
    }
    let (_, max_sge, _) = h.srq.attrs();
    // SAFETY: the consumer's WR list is live for the call; bad is its output.
    unsafe { post_recv_list(wr, bad, max_sge, |w, s| h.srq.post_recv(w, s)) }
}
