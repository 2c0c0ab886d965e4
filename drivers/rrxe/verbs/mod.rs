// SPDX-License-Identifier: GPL-2.0
//! The verbs of rrxe devices: what each entry point calls once glue's trampolines
//! (`glue/verbs/`) have converted its raw arguments. One line a verb, into the safe
//! module of its object, where limits, sizing, decoding and unwinding live. Safe code: the
//! `unsafe` of the C calling convention stays in the glue.

use crate::counters::{Counter, NUM_COUNTERS};
use crate::glue::bindings as b;
use crate::glue::obj::{Created, DriverObj, NewObj, Obj};
use crate::glue::wr::WrList;
use crate::glue::{
    Advice, CqPtr, IbDev, MadResult, NetDev, NlDriverAttrs, RdmaCounter, StatDescs, Udata, Verbs,
    XrcdId, MAD_SIZE,
};
use crate::mr::AccessFlags;
use crate::{ah, cq, device, limits, mad, mr, qp, srq, xrc};
use kernel::prelude::*;

impl DriverObj for b::ib_device {
    type Data = device::DeviceData;
}
impl DriverObj for b::ib_cq {
    type Data = cq::Cq;
}
impl DriverObj for b::ib_qp {
    type Data = qp::QpHandle;
}
impl DriverObj for b::ib_srq {
    type Data = srq::SrqHandle;
}
impl DriverObj for b::ib_ah {
    type Data = ah::AhData;
}
impl DriverObj for b::ib_mr {
    type Data = mr::MrData;
}
impl DriverObj for b::ib_mw {
    type Data = ();
}
impl DriverObj for b::ib_pd {
    type Data = ();
}
impl DriverObj for b::ib_ucontext {
    type Data = device::UctxData;
}

/// `rdma statistic` descriptors, in [`Counter::NAMES`] order.
static STAT_DESCS: StatDescs<NUM_COUNTERS> = StatDescs::new(Counter::NAMES);

/// rrxe's verbs.
pub(crate) struct Rrxe;

impl Verbs for Rrxe {
    fn newlink(
        name: &CStr,
        ndev: &NetDev,
    ) -> Result<impl PinInit<<b::ib_device as DriverObj>::Data>> {
        device::newlink(name, ndev)
    }

    fn netdev_event(event: core::ffi::c_ulong, ndev: &NetDev) {
        device::netdev_event(event, ndev)
    }

    fn enable(dev: &IbDev) -> Result {
        device::enable(dev)
    }

    fn faults_show(dev: &IbDev, out: &mut [u8]) -> usize {
        dev.data().faults.show(out)
    }

    fn faults_write(dev: &IbDev, text: &[u8]) -> Result {
        let d = dev.data();
        d.faults.write(&d.counters, text)
    }

    fn capture(dev: &IbDev) -> &crate::glue::capture::Capture {
        &dev.data().capture
    }

    fn query_device(dev: &IbDev, attr: &mut b::ib_device_attr, udata: &Udata<'_>) -> Result {
        device::query_device(dev, attr, udata)
    }

    fn query_port(dev: &IbDev, port: u32, attr: &mut b::ib_port_attr) -> Result {
        device::query_port(dev, port, attr)
    }

    fn port_immutable(dev: &IbDev, port: u32, imm: &mut b::ib_port_immutable) -> Result {
        device::port_immutable(dev, port, imm)
    }

    fn query_pkey(dev: &IbDev, port: u32, index: u16) -> Result<u16> {
        device::query_pkey(dev, port, index)
    }

    fn gid_changed(dev: &IbDev) {
        device::gid_changed(dev)
    }

    fn alloc_ucontext<'a>(
        uctx: NewObj<'a, b::ib_ucontext>,
        udata: &mut Udata<'_>,
    ) -> Result<Created<'a, b::ib_ucontext>> {
        let data = device::alloc_ucontext(uctx.dev(), udata)?;
        Ok(uctx.init_value(data))
    }

    fn alloc_pd(pd: NewObj<'_, b::ib_pd>) -> Result<Created<'_, b::ib_pd>> {
        pd.dev().data().limits.take(limits::Obj::Pd)?;
        Ok(pd.init_value(()))
    }

    fn dealloc_pd(pd: &Obj<'_, b::ib_pd>) {
        pd.dev().data().limits.put(limits::Obj::Pd);
    }

    fn alloc_hw_stats() -> *mut b::rdma_hw_stats {
        STAT_DESCS.alloc()
    }

    fn hw_stats(dev: &IbDev) -> impl Iterator<Item = u64> {
        let data = dev.data();
        data.qp_counters.unbound(&data.counters)
    }

    const NUM_STATS: i32 = NUM_COUNTERS as i32;

    fn process_mad(
        dev: &IbDev,
        port: u32,
        req: &[u8; MAD_SIZE],
        out: &mut [u8; MAD_SIZE],
    ) -> MadResult {
        mad::process(dev, port, req, out)
    }

    fn alloc_counter_stats() -> *mut b::rdma_hw_stats {
        STAT_DESCS.alloc_shown(Counter::index_per_qp)
    }

    fn counter_bind_qp(counter: &RdmaCounter<'_>, obj: &Obj<'_, b::ib_qp>) -> Result {
        counter
            .dev()
            .data()
            .qp_counters
            .bind(counter, &obj.data().qp)
    }

    fn counter_unbind_qp(counter: &RdmaCounter<'_>, obj: &Obj<'_, b::ib_qp>) {
        counter
            .dev()
            .data()
            .qp_counters
            .unbind(counter, &obj.data().qp)
    }

    fn counter_update(counter: &RdmaCounter<'_>) -> Result {
        counter.dev().data().qp_counters.update(counter)
    }

    fn counter_dealloc(counter: &RdmaCounter<'_>) {
        counter.dev().data().qp_counters.dealloc(counter)
    }

    fn fill_res_qp(obj: &Obj<'_, b::ib_qp>, attrs: &mut NlDriverAttrs<'_>) -> Result {
        obj.data().qp.fill_res(attrs)
    }

    fn create_cq<'a>(
        obj: NewObj<'a, b::ib_cq>,
        attr: &b::ib_cq_init_attr,
        udata: &mut Udata<'_>,
    ) -> Result<Created<'a, b::ib_cq>> {
        cq::create(obj, attr, udata)
    }

    fn cq_destroyed(dev: &IbDev) {
        cq::destroyed(dev)
    }

    fn poll_cq(obj: &Obj<'_, b::ib_cq>, wcs: &mut [b::ib_wc]) -> Result<usize> {
        cq::poll(obj.data(), wcs)
    }

    fn resize_cq(obj: &Obj<'_, b::ib_cq>, cqe: i32, udata: &mut Udata<'_>) -> Result {
        cq::resize(obj, cqe, udata)
    }

    fn req_notify_cq(obj: &Obj<'_, b::ib_cq>, flags: u32) -> bool {
        cq::req_notify(obj.data(), flags)
    }

    fn create_qp<'a>(
        obj: NewObj<'a, b::ib_qp>,
        init: &mut b::ib_qp_init_attr,
        srq: Option<Obj<'_, b::ib_srq>>,
        (send_cq, recv_cq): (Option<CqPtr>, Option<CqPtr>),
        xrcd: Option<XrcdId>,
        udata: &mut Udata<'_>,
    ) -> Result<Created<'a, b::ib_qp>> {
        let srq = srq.as_ref().map(|s| &s.data().srq);
        let args = qp::CreateArgs {
            init,
            srq,
            send_cq,
            recv_cq,
            xrcd,
        };
        qp::create(obj, args, udata)
    }

    fn shut_down_qp(obj: &Obj<'_, b::ib_qp>) -> Result {
        qp::shut_down(obj.dev(), obj.data())
    }

    fn attach_mcast(obj: &Obj<'_, b::ib_qp>, gid: &[u8; 16]) -> Result {
        qp::attach_mcast(obj, gid)
    }

    fn detach_mcast(obj: &Obj<'_, b::ib_qp>, gid: &[u8; 16]) -> Result {
        qp::detach_mcast(obj, gid)
    }

    fn qp_destroyed(dev: &IbDev) {
        qp::destroyed(dev)
    }

    fn modify_qp(
        obj: &Obj<'_, b::ib_qp>,
        attr: &b::ib_qp_attr,
        mask: i32,
        av: Option<Result<b::rrxe_kav>>,
        udata: &Udata<'_>,
    ) -> Result {
        qp::modify(obj, attr, mask, av, udata)
    }

    fn query_qp(obj: &Obj<'_, b::ib_qp>, attr: &mut b::ib_qp_attr, init: &mut b::ib_qp_init_attr) {
        qp::query(obj.data(), attr, init)
    }

    fn post_send(obj: &Obj<'_, b::ib_qp>, list: WrList<'_, b::ib_send_wr>) -> Result {
        qp::post_send(obj, list)
    }

    fn post_recv(obj: &Obj<'_, b::ib_qp>, list: WrList<'_, b::ib_recv_wr>) -> Result {
        qp::post_recv(obj, list)
    }

    fn create_srq<'a>(
        obj: NewObj<'a, b::ib_srq>,
        init: &mut b::ib_srq_init_attr,
        xrc: Option<(XrcdId, Option<CqPtr>)>,
        udata: &mut Udata<'_>,
    ) -> Result<Created<'a, b::ib_srq>> {
        srq::create(obj, init, xrc, udata)
    }

    fn shut_down_srq(obj: &Obj<'_, b::ib_srq>) {
        srq::shut_down(obj)
    }

    fn modify_srq(
        obj: &Obj<'_, b::ib_srq>,
        attr: &mut b::ib_srq_attr,
        mask: b::ib_srq_attr_mask,
        udata: &mut Udata<'_>,
    ) -> Result {
        srq::modify(obj, attr, mask, udata)
    }

    fn query_srq(obj: &Obj<'_, b::ib_srq>, attr: &mut b::ib_srq_attr) {
        srq::query(obj.data(), attr)
    }

    fn alloc_xrcd(xrcd: XrcdId) -> Result {
        xrc::alloc_xrcd(xrcd)
    }

    fn dealloc_xrcd(xrcd: XrcdId) {
        xrc::dealloc_xrcd(xrcd)
    }

    fn srq_destroyed(dev: &IbDev) {
        srq::destroyed(dev)
    }

    fn post_srq_recv(obj: &Obj<'_, b::ib_srq>, list: WrList<'_, b::ib_recv_wr>) -> Result {
        srq::post_recv(obj, list)
    }

    fn create_ah<'a>(
        obj: NewObj<'a, b::ib_ah>,
        av: Result<b::rrxe_kav>,
        udata: &mut Udata<'_>,
    ) -> Result<Created<'a, b::ib_ah>> {
        ah::create(obj, av, udata)
    }

    fn destroy_ah(obj: &Obj<'_, b::ib_ah>) {
        ah::destroy(obj.dev(), obj.data().num)
    }

    fn ah_av(obj: &Obj<'_, b::ib_ah>) -> b::rrxe_kav {
        obj.data().av
    }

    fn get_dma_mr(pd: &Obj<'_, b::ib_pd>, access: i32) -> Result<*mut b::ib_mr> {
        mr::get_dma(
            pd.dev(),
            pd.addr() as usize,
            AccessFlags::from_raw(access as u32),
        )
    }

    fn reg_user_mr(
        pd: &Obj<'_, b::ib_pd>,
        range: (u64, u64, u64),
        access: i32,
        uctx: Option<&Obj<'_, b::ib_ucontext>>,
    ) -> Result<*mut b::ib_mr> {
        let access = AccessFlags::from_raw(access as u32);
        let odp = uctx.map(|u| &u.data().odp);
        mr::reg_user(pd.dev(), pd.addr() as usize, range, access, odp)
    }

    fn reg_user_mr_dmabuf(
        pd: &Obj<'_, b::ib_pd>,
        range: (u64, u64, u64),
        fd: i32,
        access: i32,
    ) -> Result<*mut b::ib_mr> {
        let access = AccessFlags::from_raw(access as u32);
        mr::reg_dmabuf(pd.dev(), pd.addr() as usize, range, fd, access)
    }

    fn rereg_user_mr(
        obj: &Obj<'_, b::ib_mr>,
        (flags, start, length, iova, access, pd): (i32, u64, u64, u64, i32, usize),
        uctx: Option<&Obj<'_, b::ib_ucontext>>,
    ) -> Result<Option<*mut b::ib_mr>> {
        let r = mr::Rereg {
            flags,
            start,
            length,
            iova,
            access: AccessFlags::from_raw(access as u32),
            pd,
            odp: uctx.map(|u| &u.data().odp),
        };
        mr::rereg_user(obj.dev(), obj.ib().lkey, obj.ib().pd as usize, &r)
    }

    fn alloc_mr(
        pd: &Obj<'_, b::ib_pd>,
        mr_type: b::ib_mr_type,
        max_num_sg: u32,
    ) -> Result<*mut b::ib_mr> {
        mr::alloc_fast(pd.dev(), pd.addr() as usize, mr_type, max_num_sg)
    }

    fn advise_mr(pd: &Obj<'_, b::ib_pd>, advice: Advice, sges: &[b::ib_sge]) -> Result {
        mr::advise(pd.dev(), pd.addr() as usize, advice, sges)
    }

    fn dereg_mr(obj: &Obj<'_, b::ib_mr>) {
        mr::dereg(obj.dev(), obj.ib().lkey)
    }

    fn mr_freed(dev: &IbDev) {
        mr::deregistered(dev)
    }

    fn alloc_mw(obj: NewObj<'_, b::ib_mw>) -> Result<Created<'_, b::ib_mw>> {
        mr::alloc_mw(obj)
    }

    fn dealloc_mw(obj: &Obj<'_, b::ib_mw>) {
        mr::dealloc_mw(obj.dev(), obj.ib().rkey)
    }
}
