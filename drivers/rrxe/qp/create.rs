// SPDX-License-Identifier: GPL-2.0
//! The QP verbs' policy: create (type, capabilities, the user rings, the QP number),
//! destroy, modify (the core's attribute mask decoded) and query.

use super::{ModifyArgs, Qp, QpInit, QpKind, UserRings, DEV_CAPS};
use crate::glue::bindings as b;
use crate::glue::obj::{Created, NewObj, Obj};
use crate::glue::{CqPtr, IbDev, Queue, UContext, Udata, XrcdId};
use crate::limits;
use crate::mr::AccessFlags;
use kernel::prelude::*;
use kernel::sync::Arc;

/// What an `ib_qp` carries for us.
pub(crate) struct QpHandle {
    /// The QP.
    pub(crate) qp: Arc<Qp>,
    /// The capabilities it was created with (as reported back).
    pub(crate) caps: b::ib_qp_cap,
    /// `ib_sig_type` it was created with.
    pub(crate) sig_type: u32,
}

/// The arguments of `create_qp` besides the QP object: the consumer's init attributes and
/// the objects they name, converted by the entry point.
pub(crate) struct CreateArgs<'a> {
    /// The init attributes; `cap` is updated to what the QP really has.
    pub(crate) init: &'a mut b::ib_qp_init_attr,
    /// The SRQ named by `init.srq`, if any.
    pub(crate) srq: Option<&'a Arc<crate::srq::Srq>>,
    /// The send CQ (`init.send_cq`); `None` if absent.
    pub(crate) send_cq: Option<CqPtr>,
    /// The receive CQ (`init.recv_cq`); `None` if absent.
    pub(crate) recv_cq: Option<CqPtr>,
    /// The XRC domain (`init.xrcd`, XRC target QPs).
    pub(crate) xrcd: Option<XrcdId>,
}

/// `create_qp`, under one unit of the device's QP limit.
pub(crate) fn create<'a>(
    obj: NewObj<'a, b::ib_qp>,
    a: CreateArgs<'_>,
    udata: &mut Udata<'_>,
) -> Result<Created<'a, b::ib_qp>> {
    let dev = obj.dev();
    dev.data()
        .limits
        .counted(limits::Obj::Qp, || create_uncounted(obj, a, udata))
}

fn create_uncounted<'a>(
    mut obj: NewObj<'a, b::ib_qp>,
    a: CreateArgs<'_>,
    udata: &mut Udata<'_>,
) -> Result<Created<'a, b::ib_qp>> {
    let dev = obj.dev();
    let pd = obj.ib().pd as usize;
    let init = a.init;
    let kind = match init.qp_type {
        b::ib_qp_type_IB_QPT_RC => QpKind::Rc,
        b::ib_qp_type_IB_QPT_UC => QpKind::Uc,
        b::ib_qp_type_IB_QPT_UD => QpKind::Ud,
        b::ib_qp_type_IB_QPT_GSI => QpKind::Gsi,
        b::ib_qp_type_IB_QPT_XRC_INI => QpKind::XrcIni,
        b::ib_qp_type_IB_QPT_XRC_TGT => QpKind::XrcTgt,
        _ => return Err(crate::glue::eopnotsupp()),
    };
    if init.create_flags != 0 {
        return Err(crate::glue::eopnotsupp());
    }
    // Only XRC target QPs have a domain, and XRC SRQs serve only them (the core refuses
    // both for user QPs; a kernel consumer's request is checked here).
    if (kind == QpKind::XrcTgt) != a.xrcd.is_some()
        || a.srq.is_some_and(|s| s.xrc_domain().is_some())
    {
        return Err(EINVAL);
    }
    let (send_cq, recv_cq) = match kind {
        // The core creates a target QP for the domain, without PD, CQs, queues or udata
        // (ib_create_qp_user): it only receives, into the XRC SRQs requests name.
        QpKind::XrcTgt => {
            if a.srq.is_some() || udata.is_user() {
                return Err(EINVAL);
            }
            init.cap = b::ib_qp_cap::default();
            (None, None)
        }
        // An initiator only sends (uverbs passes no receive CQ or SRQ).
        QpKind::XrcIni => {
            if a.srq.is_some() || a.send_cq.is_none() {
                return Err(EINVAL);
            }
            init.cap.max_recv_wr = 0;
            init.cap.max_recv_sge = 0;
            (a.send_cq, None)
        }
        _ => match (a.send_cq, a.recv_cq) {
            (Some(s), Some(r)) => (Some(s), Some(r)),
            _ => return Err(EINVAL),
        },
    };
    let srq = a.srq.cloned();
    // A QP with an SRQ takes its receives from the SRQ: its own receive capabilities are
    // ignored (rdma_rxe's rxe_qp_chk_cap checks them only for a QP without one) and
    // reported as 0.
    if srq.is_some() {
        init.cap.max_recv_wr = 0;
        init.cap.max_recv_sge = 0;
    }
    // User QPs: the work queues live in memory the process maps.
    let mut user = None;
    let mut resp = b::rrxe_create_qp_resp::default();
    if udata.is_user() {
        if kind == QpKind::Gsi {
            return Err(EINVAL);
        }
        let uctx = UContext::from_udata(udata).ok_or(EINVAL)?;
        let c = &mut init.cap;
        let asked = crate::proto::caps::QpCaps {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline: c.max_inline_data,
        };
        let l = crate::proto::caps::user_qp_layout(&asked, &DEV_CAPS, &crate::uwqe::FORMAT)
            .map_err(|_| EINVAL)?;
        let (sq_slots, rq_slots) = (l.sq.slots(), l.rq.slots());
        let sq = Queue::new(l.sq.log2_slots, l.sq.slot_size, Some(&uctx))?;
        let rq = Queue::new(l.rq.log2_slots, l.rq.slot_size, Some(&uctx))?;
        // What the QP really has: the rings' sizes.
        c.max_send_wr = sq_slots;
        c.max_recv_wr = rq_slots;
        resp.sq = sq.info();
        resp.rq = rq.info();
        resp.max_inline = c.max_inline_data;
        user = Some(KBox::new(UserRings { sq, rq }, GFP_KERNEL)?);
    }
    // The QP's own counts (rdma statistic qp), zero.
    let stats = crate::counters::Counters::new_arc()?;
    // A user's UD QP takes datagrams only from its creator's network namespace, as a
    // socket (see `Origin`); the others take them from anywhere until a path narrows it.
    let origin = if udata.is_user() && kind == QpKind::Ud {
        super::Origin::Netns(crate::glue::current_netns().ok_or(ENODEV)?)
    } else {
        super::Origin::Any
    };
    let qps = &dev.data().qps;
    let qpn = qps.reserve(kind == QpKind::Gsi)?;
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
        sig_all: init.sq_sig_type == b::ib_sig_type_IB_SIGNAL_ALL_WR,
        ibqp_addr: obj.addr(),
        ib: obj.qp_ptr(),
        user,
        srq,
        xrcd: a.xrcd,
        stats,
    };
    let qp = Qp::new(dev.ptr(), qi).inspect_err(|_| drop(qps.remove(qpn)))?;
    qp.set_origin(origin);
    if udata.is_user() {
        udata
            .respond(&resp)
            .inspect_err(|_| drop(qps.remove(qpn)))?;
    }
    qps.publish(qpn, qp.clone());
    let h = QpHandle {
        qp,
        caps: init.cap,
        sig_type: init.sq_sig_type,
    };
    obj.ib_mut().qp_num = qpn;
    // Plain data, initialised by value: nothing can fail from here on.
    Ok(obj.init_value(h))
}

/// `destroy_qp`, before the QP's handle is dropped: no more received packets reach it, then
/// no more work or timers run, and type 2B windows bound to it are unbound (its number will
/// be reused).
pub(crate) fn shut_down(dev: &IbDev, h: &QpHandle) -> Result {
    // IBTA o10-2.2.3 (rdma_rxe's rxe_qp_chk_destroy): a QP attached to a multicast group
    // cannot be destroyed. uverbs detaches a process's QPs itself when it goes away.
    if dev.data().mcast.is_attached(h.qp.qpn) {
        return Err(EBUSY);
    }
    let table_ref = dev.data().qps.remove(h.qp.qpn);
    h.qp.shutdown();
    dev.data().mrs.unbind_qp(h.qp.qpn);
    // The receive softirq may still hold a reference taken before the removal (or be
    // taking one from the table's slot): it drops it before bottom halves come back on, so
    // after this grace period ours are the last.
    let table_ref = table_ref.wait();
    h.qp.cancel_rx_run();
    drop(table_ref);
    h.qp.flush_cq_events();
    Ok(())
}

/// `attach_mcast`: a UD QP (not the GSI QP) joins a multicast group.
pub(crate) fn attach_mcast(obj: &Obj<'_, b::ib_qp>, gid: &[u8; 16]) -> Result {
    let h = obj.data();
    if h.qp.kind != QpKind::Ud {
        return Err(EINVAL);
    }
    let origin = h.qp.origin();
    obj.dev()
        .data()
        .mcast
        .attach(obj.dev(), h.qp.qpn, origin, gid)
}

/// `detach_mcast`.
pub(crate) fn detach_mcast(obj: &Obj<'_, b::ib_qp>, gid: &[u8; 16]) -> Result {
    let qp = &obj.data().qp;
    obj.dev()
        .data()
        .mcast
        .detach(obj.dev(), qp.qpn, qp.origin(), gid)
}

/// `destroy_qp`, once the handle is gone: gives back the unit of the device's limit.
pub(crate) fn destroyed(dev: &IbDev) {
    dev.data().limits.put(limits::Obj::Qp);
}

/// `modify_qp`: checks the transition against the core's table, decodes the attributes
/// `mask` selects and applies them. `av` is the converted `ah_attr` when the mask has
/// IB_QP_AV; a user's must have its source GID in the caller's network namespace.
pub(crate) fn modify(
    obj: &Obj<'_, b::ib_qp>,
    attr: &b::ib_qp_attr,
    mask: i32,
    av: Option<Result<crate::ah::Av>>,
    udata: &Udata<'_>,
) -> Result {
    let h = obj.data();
    let mask = mask as u32;
    let cur = h.qp.attrs().state;
    let new = if mask & b::ib_qp_attr_mask_IB_QP_STATE != 0 {
        attr.qp_state
    } else {
        cur
    };
    if mask & b::ib_qp_attr_mask_IB_QP_CUR_STATE != 0 && attr.cur_qp_state != cur {
        return Err(EINVAL);
    }
    if !crate::glue::modify_qp_is_ok(cur, new, obj.ib().qp_type, mask) {
        return Err(EINVAL);
    }
    let has = |bit: u32| mask & bit != 0;
    let mut m = ModifyArgs::default();
    if has(b::ib_qp_attr_mask_IB_QP_STATE) {
        m.state = Some(new);
    }
    if let Some(av) = av {
        let av = av?;
        if udata.is_user() {
            crate::ah::check_caller_netns(&av)?;
        }
        m.av = Some(av);
    }
    if has(b::ib_qp_attr_mask_IB_QP_PATH_MTU) {
        m.path_mtu = Some(attr.path_mtu);
    }
    if has(b::ib_qp_attr_mask_IB_QP_DEST_QPN) {
        m.dest_qpn = Some(attr.dest_qp_num);
    }
    if has(b::ib_qp_attr_mask_IB_QP_QKEY) {
        m.qkey = Some(attr.qkey);
    }
    if has(b::ib_qp_attr_mask_IB_QP_SQ_PSN) {
        m.sq_psn = Some(attr.sq_psn & 0xff_ffff);
    }
    if has(b::ib_qp_attr_mask_IB_QP_RQ_PSN) {
        m.rq_psn = Some(attr.rq_psn & 0xff_ffff);
    }
    if has(b::ib_qp_attr_mask_IB_QP_TIMEOUT) {
        m.timeout = Some(attr.timeout);
    }
    if has(b::ib_qp_attr_mask_IB_QP_RETRY_CNT) {
        m.retry_cnt = Some(attr.retry_cnt);
    }
    if has(b::ib_qp_attr_mask_IB_QP_RNR_RETRY) {
        m.rnr_retry = Some(attr.rnr_retry);
    }
    if has(b::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER) {
        m.min_rnr_timer = Some(attr.min_rnr_timer);
    }
    if has(b::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC) {
        m.max_rd_atomic = Some(attr.max_rd_atomic);
    }
    if has(b::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC) {
        m.max_dest_rd_atomic = Some(attr.max_dest_rd_atomic);
    }
    if has(b::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS) {
        m.access = Some(AccessFlags::from_raw(attr.qp_access_flags as u32));
    }
    if has(b::ib_qp_attr_mask_IB_QP_EN_SQD_ASYNC_NOTIFY) {
        m.sqd_notify = Some(attr.en_sqd_async_notify != 0);
    }
    h.qp.modify(&m)
}

/// `query_qp`: the current attributes and the capabilities the QP was created with.
pub(crate) fn query(h: &QpHandle, attr: &mut b::ib_qp_attr, init: &mut b::ib_qp_init_attr) {
    let a = h.qp.attrs();
    *attr = b::ib_qp_attr::default();
    attr.qp_state = a.state;
    attr.cur_qp_state = a.state;
    attr.path_mtu = a.path_mtu;
    attr.qkey = a.qkey;
    attr.rq_psn = a.rq_psn;
    attr.sq_psn = a.sq_psn;
    attr.dest_qp_num = a.dest_qpn;
    attr.qp_access_flags = a.access.bits() as i32;
    attr.cap = h.caps;
    attr.timeout = a.timeout;
    attr.retry_cnt = a.retry_cnt;
    attr.rnr_retry = a.rnr_retry;
    attr.min_rnr_timer = a.min_rnr_timer;
    attr.max_rd_atomic = a.max_rd_atomic;
    attr.max_dest_rd_atomic = a.max_dest_rd_atomic;
    attr.sq_draining = u8::from(a.sq_draining);
    attr.port_num = 1;
    if let Some(av) = a.av {
        crate::glue::av_to_ah_attr(&av, &mut attr.ah_attr);
    }
    init.cap = h.caps;
    init.sq_sig_type = h.sig_type;
}
