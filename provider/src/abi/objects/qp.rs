// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Queue pairs: creation (mapping their queues), query, modify and destroy; XRC receive
//! QPs (created or opened: no queues of their own).

use core::ffi::c_int;
use core::mem::size_of;
use core::ptr;
use std::sync::Mutex;

use super::{map_errno, set_errno, zeroed_box, SessionLock};
use crate::abi::driver::{verbs_qp, VERBS_QP_EX};
use crate::abi::ffi;
use crate::abi::queue::{MapError, MappedQueue};
use crate::abi::rrxe::*;
use crate::abi::uverbs::*;
use crate::wq::{QpState, RecvQueue, SendQueue, WrBatch};
use crate::wqe::{SendLimits, Transport};

/// A QP's send side: the queue and the extended-API batch being built on it.
pub struct Sq {
    pub(super) q: SendQueue<MappedQueue>,
    pub(super) batch: WrBatch,
}

/// The provider's QP: a `verbs_qp`, so `ibv_qp_to_qp_ex` works on QPs created with send
/// ops flags.
#[repr(C)]
pub struct RrxeQp {
    pub vqp: verbs_qp,
    pub sq: Option<Mutex<Sq>>,
    /// `None` with an SRQ.
    pub rq: Option<Mutex<RecvQueue<MappedQueue>>>,
    /// The `IBV_QP_EX_WITH_*` operations the QP was created for (extended API only).
    pub(super) send_ops: u64,
    /// Held from `ibv_wr_start` to `ibv_wr_complete`/`ibv_wr_abort`, and by `ibv_post_send`
    /// and `ibv_bind_mw`, so that a legacy post never lands in (or publishes part of) an
    /// open batch. Taken before `sq`.
    pub(super) session: SessionLock,
    /// The state the QP's own modify/query calls reported (see [`QpState`]: why that is
    /// enough for posting).
    pub(super) state: QpState,
}

impl RrxeQp {
    pub(super) fn ibqp(&self) -> &ibv_qp {
        // SAFETY: `ibv_qp` is the first member of both union members (`qp`, and `qp_ex`'s
        // `qp_base`), and the whole `verbs_qp` is initialised (allocated zeroed, then filled
        // by libibverbs), so either view reads initialised plain data.
        unsafe { &self.vqp.__bindgen_anon_1.qp }
    }
}

fn transport(qp_type: ibv_qp_type) -> Option<Transport> {
    match qp_type {
        IBV_QPT_RC => Some(Transport::Rc),
        IBV_QPT_UC => Some(Transport::Uc),
        IBV_QPT_UD => Some(Transport::Ud),
        IBV_QPT_XRC_SEND => Some(Transport::Xrc),
        _ => None,
    }
}

/// `IBV_QP_EX_WITH_FLUSH` where verbs.h has `ibv_wr_flush` (rdma-core 45+).
#[cfg(rrxe_have_wr_flush)]
const WITH_FLUSH: ibv_qp_create_send_ops_flags = IBV_QP_EX_WITH_FLUSH;
#[cfg(not(rrxe_have_wr_flush))]
const WITH_FLUSH: ibv_qp_create_send_ops_flags = 0;

/// The extended-API operations each transport can do here.
fn send_ops_for(t: Transport) -> u64 {
    let send = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
    let ops = match t {
        // XRC has no ATOMIC WRITE or FLUSH opcode.
        Transport::Xrc => {
            return send_ops_for(Transport::Rc)
                & !u64::from(IBV_QP_EX_WITH_ATOMIC_WRITE | WITH_FLUSH)
        }
        Transport::Ud => send,
        Transport::Uc => {
            send | IBV_QP_EX_WITH_RDMA_WRITE
                | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM
                | IBV_QP_EX_WITH_LOCAL_INV
                | IBV_QP_EX_WITH_BIND_MW
                | IBV_QP_EX_WITH_SEND_WITH_INV
        }
        Transport::Rc => {
            send | IBV_QP_EX_WITH_RDMA_WRITE
                | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM
                | IBV_QP_EX_WITH_RDMA_READ
                | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP
                | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD
                | IBV_QP_EX_WITH_LOCAL_INV
                | IBV_QP_EX_WITH_BIND_MW
                | IBV_QP_EX_WITH_SEND_WITH_INV
                | IBV_QP_EX_WITH_ATOMIC_WRITE
                | WITH_FLUSH
        }
    };
    u64::from(ops)
}

/// Maps the queues the kernel described and finishes `qp`; on failure destroys the kernel
/// QP. `cap` is what the QP got.
fn finish_qp(
    fd: c_int,
    mut qp: Box<RrxeQp>,
    t: Transport,
    cap: ibv_qp_cap,
    has_srq: bool,
    drv: &rrxe_create_qp_resp,
) -> *mut ibv_qp {
    let setup = || -> Result<_, MapError> {
        let sq = MappedQueue::map(fd, &drv.sq)?;
        // An XRC send QP receives nothing: whatever receive queue the kernel describes is
        // not used (posting receives on it fails).
        let rq = if has_srq || t == Transport::Xrc || drv.rq.mmap_size == 0 {
            None
        } else {
            Some(MappedQueue::map(fd, &drv.rq)?)
        };
        Ok((sq, rq))
    };
    match setup() {
        Ok((sq, rq)) => {
            let lim = SendLimits {
                transport: t,
                max_sge: cap.max_send_sge,
                max_inline: drv.max_inline,
                slot_size: 0,
            };
            qp.sq = Some(Mutex::new(Sq {
                q: SendQueue::new(sq, lim),
                batch: WrBatch::default(),
            }));
            qp.rq = rq.map(|q| Mutex::new(RecvQueue::new(q, cap.max_recv_sge)));
            qp.session.init();
            Box::into_raw(qp).cast()
        }
        Err(e) => {
            // SAFETY: the QP was just created and nobody else knows it.
            unsafe { ffi::ibv_cmd_destroy_qp(ptr::addr_of_mut!(qp.vqp).cast()) };
            set_errno(map_errno(e));
            ptr::null_mut()
        }
    }
}

pub(crate) unsafe extern "C" fn create_qp(
    pd: *mut ibv_pd,
    attr: *mut ibv_qp_init_attr,
) -> *mut ibv_qp {
    // SAFETY: the caller passes a live init attr.
    let Some(t) = transport(unsafe { (*attr).qp_type }) else {
        set_errno(libc::EOPNOTSUPP);
        return ptr::null_mut();
    };
    // SAFETY: plain data, `None`s, a zero u64 and a pthread mutex (initialised in
    // finish_qp): all-zero is valid.
    let mut qp: Box<RrxeQp> = unsafe { zeroed_box() };
    let mut cmd = ibv_create_qp::default();
    let mut resp = urrxe_create_qp_resp::new();
    // SAFETY: `pd` and `attr` are live; buffers as given; `ibv_qp` is the QP's prefix.
    let ret = unsafe {
        ffi::ibv_cmd_create_qp(
            pd,
            ptr::addr_of_mut!(qp.vqp).cast(),
            attr,
            &mut cmd,
            size_of::<ibv_create_qp>(),
            ptr::addr_of_mut!(resp).cast(),
            urrxe_create_qp_resp::size(),
        )
    };
    if ret != 0 {
        set_errno(ret);
        return ptr::null_mut();
    }
    // SAFETY: `pd` is live; ibv_cmd_create_qp updated `attr.cap` to what the QP has.
    let (fd, cap, has_srq) =
        unsafe { ((*(*pd).context).cmd_fd, (*attr).cap, !(*attr).srq.is_null()) };
    finish_qp(fd, qp, t, cap, has_srq, &resp.drv_payload)
}

pub(crate) unsafe extern "C" fn create_qp_ex(
    ctx: *mut ibv_context,
    attr: *mut ibv_qp_init_attr_ex,
) -> *mut ibv_qp {
    if attr.is_null() {
        set_errno(libc::EINVAL);
        return ptr::null_mut();
    }
    // SAFETY: the caller's live attributes.
    let a = unsafe { &mut *attr };
    if a.qp_type == IBV_QPT_XRC_RECV {
        // SAFETY: as given.
        return unsafe { create_xrc_recv(ctx, a) };
    }
    let Some(t) = transport(a.qp_type) else {
        set_errno(libc::EOPNOTSUPP);
        return ptr::null_mut();
    };
    let known =
        IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    let create_flags = if a.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS != 0 {
        a.create_flags
    } else {
        0
    };
    let send_ops = if a.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS != 0 {
        a.send_ops_flags
    } else {
        0
    };
    if a.comp_mask & IBV_QP_INIT_ATTR_PD == 0 {
        set_errno(libc::EINVAL);
        return ptr::null_mut();
    }
    if a.comp_mask & !known != 0 || create_flags != 0 || send_ops & !send_ops_for(t) != 0 {
        set_errno(libc::EOPNOTSUPP);
        return ptr::null_mut();
    }
    // ibv_cmd_create_qp_ex knows no create flags: what is left is zero anyway.
    // SAFETY: as given.
    let (mut qp, resp) = match unsafe { cmd_create_qp_ex(ctx, a, !IBV_QP_INIT_ATTR_CREATE_FLAGS) } {
        Ok(r) => r,
        Err(e) => {
            set_errno(e);
            return ptr::null_mut();
        }
    };
    if send_ops != 0 {
        qp.send_ops = send_ops;
        qp.vqp.comp_mask |= VERBS_QP_EX;
        super::qp_ex::install(&mut qp.vqp.__bindgen_anon_1.qp_ex);
    }
    // SAFETY: `ctx` is live.
    let fd = unsafe { (*ctx).cmd_fd };
    finish_qp(fd, qp, t, a.cap, !a.srq.is_null(), &resp.drv_payload)
}

/// A QP without queues (an XRC receive QP): the lock the post calls take is set up, there
/// is nothing to post on.
fn finish_queueless(mut qp: Box<RrxeQp>) -> *mut ibv_qp {
    qp.session.init();
    Box::into_raw(qp).cast()
}

/// `IBV_QPT_XRC_RECV`: the kernel creates a target QP for the XRC domain, without PD, CQs
/// or queues (its receives go to the XRC SRQs requests name), and passes no driver data.
///
/// # Safety
/// `ctx` and `a` are the caller's live context and attributes.
unsafe fn create_xrc_recv(ctx: *mut ibv_context, a: &mut ibv_qp_init_attr_ex) -> *mut ibv_qp {
    let known = IBV_QP_INIT_ATTR_XRCD
        | IBV_QP_INIT_ATTR_PD
        | IBV_QP_INIT_ATTR_CREATE_FLAGS
        | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    if a.comp_mask & IBV_QP_INIT_ATTR_XRCD == 0 || a.xrcd.is_null() {
        set_errno(libc::EINVAL);
        return ptr::null_mut();
    }
    let flags = a.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS != 0 && a.create_flags != 0;
    let ops = a.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS != 0 && a.send_ops_flags != 0;
    if a.comp_mask & !known != 0 || flags || ops {
        set_errno(libc::EOPNOTSUPP);
        return ptr::null_mut();
    }
    // SAFETY: as given.
    let (qp, _) = match unsafe { cmd_create_qp_ex(ctx, a, IBV_QP_INIT_ATTR_XRCD) } {
        Ok(r) => r,
        Err(e) => {
            set_errno(e);
            return ptr::null_mut();
        }
    };
    finish_queueless(qp)
}

/// `ibv_cmd_create_qp_ex` into a new QP (returned with the kernel's answer), with `a.comp_mask` narrowed to `keep` for the
/// call (and restored after): the command rejects attributes it does not know.
///
/// # Safety
/// `ctx` and `a` are the caller's live context and attributes.
unsafe fn cmd_create_qp_ex(
    ctx: *mut ibv_context,
    a: &mut ibv_qp_init_attr_ex,
    keep: u32,
) -> Result<(Box<RrxeQp>, urrxe_create_qp_resp), i32> {
    let saved_mask = a.comp_mask;
    a.comp_mask &= keep;
    // SAFETY: as in create_qp.
    let mut qp: Box<RrxeQp> = unsafe { zeroed_box() };
    let mut cmd = ibv_create_qp::default();
    let mut resp = urrxe_create_qp_resp::new();
    // SAFETY: `ctx` and `a` are live; buffers as given.
    let ret = unsafe {
        ffi::ibv_cmd_create_qp_ex(
            ctx,
            &mut qp.vqp,
            a,
            &mut cmd,
            size_of::<ibv_create_qp>(),
            ptr::addr_of_mut!(resp).cast(),
            urrxe_create_qp_resp::size(),
        )
    };
    a.comp_mask = saved_mask;
    if ret != 0 {
        return Err(ret);
    }
    Ok((qp, resp))
}

/// `ibv_open_qp`: another process's (or this one's) XRC receive QP, by number in a shared
/// XRC domain. No queues either.
pub(crate) unsafe extern "C" fn open_qp(
    ctx: *mut ibv_context,
    attr: *mut ibv_qp_open_attr,
) -> *mut ibv_qp {
    if attr.is_null() {
        set_errno(libc::EINVAL);
        return ptr::null_mut();
    }
    // SAFETY: as in create_qp.
    let mut qp: Box<RrxeQp> = unsafe { zeroed_box() };
    let mut cmd = ibv_open_qp::default();
    let mut resp = ib_uverbs_create_qp_resp::default();
    // SAFETY: the caller's live context and attributes (libibverbs checks the mask);
    // buffers of the sizes given.
    let ret = unsafe {
        ffi::ibv_cmd_open_qp(
            ctx,
            &mut qp.vqp,
            size_of::<verbs_qp>() as c_int,
            attr,
            &mut cmd,
            size_of::<ibv_open_qp>(),
            &mut resp,
            size_of::<ib_uverbs_create_qp_resp>(),
        )
    };
    if ret != 0 {
        set_errno(ret);
        return ptr::null_mut();
    }
    finish_queueless(qp)
}

pub(crate) unsafe extern "C" fn query_qp(
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_attr,
    mask: c_int,
    init_attr: *mut ibv_qp_init_attr,
) -> c_int {
    let mut cmd = ibv_query_qp::default();
    // SAFETY: all pointers from the caller; `cmd` is a live buffer of that size.
    let ret = unsafe {
        ffi::ibv_cmd_query_qp(
            qp,
            attr,
            mask,
            init_attr,
            &mut cmd,
            size_of::<ibv_query_qp>(),
        )
    };
    // Recorded only when asked for, so that no field left unset is taken for the state. A
    // state the kernel moved the QP to (ERROR, SQE) takes work requests like the one it
    // replaces.
    if ret == 0 && mask as u32 & IBV_QP_STATE != 0 {
        // SAFETY: a live QP of ours; `attr` is the caller's `ibv_qp_attr`, just filled.
        unsafe { (*qp.cast::<RrxeQp>()).state.set(qp_attr_state(attr)) };
    }
    ret
}

/// `attr->qp_state`: the first member of `struct ibv_qp_attr` (an `enum ibv_qp_state`).
///
/// # Safety
/// `attr` points to a readable `ibv_qp_attr`.
unsafe fn qp_attr_state(attr: *const ibv_qp_attr) -> u32 {
    // SAFETY: per the contract; `qp_state` is at offset 0 and 4 bytes wide (an enum).
    unsafe { *attr.cast::<u32>() }
}

pub(crate) unsafe extern "C" fn modify_qp(
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_attr,
    mask: c_int,
) -> c_int {
    let mut cmd = ibv_modify_qp::default();
    // SAFETY: all pointers from the caller; `cmd` is a live buffer of that size.
    let ret =
        unsafe { ffi::ibv_cmd_modify_qp(qp, attr, mask, &mut cmd, size_of::<ibv_modify_qp>()) };
    if ret == 0 && mask as u32 & IBV_QP_STATE != 0 {
        // SAFETY: a live QP of ours; `attr` is the caller's `ibv_qp_attr`.
        unsafe { (*qp.cast::<RrxeQp>()).state.set(qp_attr_state(attr)) };
    }
    ret
}

pub(crate) unsafe extern "C" fn destroy_qp(ibqp: *mut ibv_qp) -> c_int {
    // SAFETY: a live QP of ours.
    let ret = unsafe { ffi::ibv_cmd_destroy_qp(ibqp) };
    if ret == 0 {
        // SAFETY: created by `create_qp` as a Box<RrxeQp>; dropping unmaps its queues.
        drop(unsafe { Box::from_raw(ibqp.cast::<RrxeQp>()) });
    }
    ret
}

/// `ibv_attach_mcast`: the kernel's ATTACH_MCAST command (`ibv_cmd_attach_mcast`); the
/// device does the rest (joins the netdev to the group, delivers the group's datagrams).
pub(crate) unsafe extern "C" fn attach_mcast(
    ibqp: *mut ibv_qp,
    gid: *const ibv_gid,
    lid: u16,
) -> c_int {
    // SAFETY: a live QP of ours and the caller's GID, for the call.
    unsafe { ffi::ibv_cmd_attach_mcast(ibqp, gid, lid) }
}

/// `ibv_detach_mcast`: the kernel's DETACH_MCAST command (`ibv_cmd_detach_mcast`).
pub(crate) unsafe extern "C" fn detach_mcast(
    ibqp: *mut ibv_qp,
    gid: *const ibv_gid,
    lid: u16,
) -> c_int {
    // SAFETY: as in attach_mcast.
    unsafe { ffi::ibv_cmd_detach_mcast(ibqp, gid, lid) }
}
