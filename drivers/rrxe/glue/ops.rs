// SPDX-License-Identifier: GPL-2.0
//! The `struct ib_device_ops` of rrxe devices: trampolines from the RDMA core's C calls to
//! the safe logic in [`crate::device`].
//!
//! Each trampoline relies on one fact about its caller, the RDMA core: it passes the
//! pointers of a live rrxe device and live objects it allocated with the sizes we declared,
//! for the duration of the call.

use super::{bindings, DrvObj, IbDev, UContext, Udata};
use crate::counters::{Counter, NUM_COUNTERS};
use crate::cq::Cq;
use crate::device;
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
    ops.size_ib_cq = core::mem::size_of::<CqObj>();
    ops.create_ah = Some(create_ah);
    ops.create_user_ah = Some(create_ah);
    ops.destroy_ah = Some(destroy_ah);
    ops.query_ah = Some(query_ah);
    ops.size_ib_ah = core::mem::size_of::<AhObj>();
    ops.get_dma_mr = Some(get_dma_mr);
    ops.reg_user_mr = Some(reg_user_mr);
    ops.alloc_mr = Some(alloc_mr);
    ops.map_mr_sg = Some(map_mr_sg);
    ops.dereg_mr = Some(dereg_mr);
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
    let _dev = unsafe { IbDev::from_raw((*pd).device) };
    0
}

unsafe extern "C" fn dealloc_pd(_pd: *mut bindings::ib_pd, _udata: *mut bindings::ib_udata) -> i32 {
    0
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
    // initialised by create_cq.
    unsafe { core::ptr::drop_in_place(addr_of_mut!((*ibcq.cast::<CqObj>()).data)) };
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

fn err_ptr<T>(e: Error) -> *mut T {
    e.to_errno() as isize as *mut T
}

/// Allocates the MrObj, registers `region` in the device's table and returns the `ib_mr`.
fn new_mr(dev: &IbDev, region: crate::mr::Region, fr_cap: usize) -> Result<*mut bindings::ib_mr> {
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
        .and_then(|()| super::mem::Umem::get(dev, start, length, access))
        .and_then(|umem| crate::mr::user_region(pd as usize, access as u32, iova, length, umem))
        .and_then(|r| new_mr(dev, r, 0));
    match r {
        Ok(p) => p,
        Err(e) => err_ptr(e),
    }
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
