// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Shared receive queues, basic and XRC (`ibv_create_srq_ex`, `ibv_get_srq_num`).

use core::ffi::c_int;
use core::mem::size_of;
use core::ptr;
use std::sync::Mutex;

use super::post::post_recv_list;
use super::{lock, map_errno, set_errno, zeroed_box};
use crate::abi::driver::verbs_srq;
use crate::abi::ffi;
use crate::abi::queue::MappedQueue;
use crate::abi::rrxe::*;
use crate::abi::uverbs::*;
use crate::wq::RecvQueue;

/// The provider's SRQ: a `verbs_srq` (`ibv_srq` first), where libibverbs records an
/// extended SRQ's type and an XRC SRQ's number.
#[repr(C)]
pub struct RrxeSrq {
    pub vsrq: verbs_srq,
    pub rq: Option<Mutex<RecvQueue<MappedQueue>>>,
}

pub(crate) unsafe extern "C" fn create_srq(
    pd: *mut ibv_pd,
    attr: *mut ibv_srq_init_attr,
) -> *mut ibv_srq {
    // SAFETY: plain data and a `None`.
    let mut srq: Box<RrxeSrq> = unsafe { zeroed_box() };
    let mut cmd = ibv_create_srq::default();
    let mut resp = urrxe_create_srq_resp::new();
    // SAFETY: live `pd` and `attr`; buffers as given.
    let ret = unsafe {
        ffi::ibv_cmd_create_srq(
            pd,
            ptr::addr_of_mut!(srq.vsrq.srq),
            attr,
            &mut cmd,
            size_of::<ibv_create_srq>(),
            ptr::addr_of_mut!(resp).cast(),
            urrxe_create_srq_resp::size(),
        )
    };
    if ret != 0 {
        set_errno(ret);
        return ptr::null_mut();
    }
    // SAFETY: live `pd`; the command updated `attr` to what the SRQ has.
    let (fd, max_sge) = unsafe { ((*(*pd).context).cmd_fd, (*attr).attr.max_sge) };
    finish_srq(fd, srq, max_sge, &resp.drv_payload)
}

/// Maps the queue the kernel described and finishes `srq`; on failure destroys the kernel
/// SRQ.
fn finish_srq(
    fd: c_int,
    mut srq: Box<RrxeSrq>,
    max_sge: u32,
    drv: &rrxe_create_srq_resp,
) -> *mut ibv_srq {
    match MappedQueue::map(fd, &drv.rq) {
        Ok(q) => {
            srq.rq = Some(Mutex::new(RecvQueue::new(q, max_sge)));
            Box::into_raw(srq).cast()
        }
        Err(e) => {
            // SAFETY: just created, unknown to anybody else.
            unsafe { ffi::ibv_cmd_destroy_srq(&mut srq.vsrq.srq) };
            set_errno(map_errno(e));
            ptr::null_mut()
        }
    }
}

/// `ibv_create_srq_ex`: a basic SRQ or an XRC SRQ (a domain and a CQ besides the PD).
pub(crate) unsafe extern "C" fn create_srq_ex(
    ctx: *mut ibv_context,
    attr: *mut ibv_srq_init_attr_ex,
) -> *mut ibv_srq {
    if attr.is_null() {
        set_errno(libc::EINVAL);
        return ptr::null_mut();
    }
    // SAFETY: the caller's live attributes.
    let a = unsafe { &mut *attr };
    let known = IBV_SRQ_INIT_ATTR_TYPE
        | IBV_SRQ_INIT_ATTR_PD
        | IBV_SRQ_INIT_ATTR_XRCD
        | IBV_SRQ_INIT_ATTR_CQ;
    let srq_type = if a.comp_mask & IBV_SRQ_INIT_ATTR_TYPE != 0 {
        a.srq_type
    } else {
        IBV_SRQT_BASIC
    };
    if a.comp_mask & !known != 0 || !matches!(srq_type, IBV_SRQT_BASIC | IBV_SRQT_XRC) {
        set_errno(libc::EOPNOTSUPP);
        return ptr::null_mut();
    }
    // SAFETY: plain data and a `None`.
    let mut srq: Box<RrxeSrq> = unsafe { zeroed_box() };
    let mut cmd = ibv_create_xsrq::default();
    let mut resp = urrxe_create_srq_resp::new();
    // SAFETY: `ctx` and `attr` are live (libibverbs checks the PD, domain and CQ an XRC
    // SRQ needs); buffers as given; the `verbs_srq` is the SRQ's prefix.
    let ret = unsafe {
        ffi::ibv_cmd_create_srq_ex(
            ctx,
            &mut srq.vsrq,
            a,
            &mut cmd,
            size_of::<ibv_create_xsrq>(),
            ptr::addr_of_mut!(resp).cast(),
            urrxe_create_srq_resp::size(),
        )
    };
    if ret != 0 {
        set_errno(ret);
        return ptr::null_mut();
    }
    // SAFETY: `ctx` is live.
    let fd = unsafe { (*ctx).cmd_fd };
    finish_srq(fd, srq, a.attr.max_sge, &resp.drv_payload)
}

/// `ibv_get_srq_num`: an XRC SRQ's number, as the kernel returned it at creation.
pub(crate) unsafe extern "C" fn get_srq_num(ibsrq: *mut ibv_srq, srq_num: *mut u32) -> c_int {
    // SAFETY: a live SRQ of ours.
    let srq = unsafe { &*ibsrq.cast::<RrxeSrq>() };
    if srq.vsrq.srq_type != IBV_SRQT_XRC || srq_num.is_null() {
        return libc::EOPNOTSUPP;
    }
    // SAFETY: the caller's output slot.
    unsafe { *srq_num = srq.vsrq.srq_num };
    0
}

/// `ibv_modify_srq`. A resize (IBV_SRQ_MAX_WR) holds the queue's lock, so nothing is
/// posted while the kernel reads the old queue, then maps the new queue the kernel wrote
/// the layout of (`rrxe_modify_srq_cmd`) and unmaps the old one.
pub(crate) unsafe extern "C" fn modify_srq(
    ibsrq: *mut ibv_srq,
    attr: *mut ibv_srq_attr,
    mask: c_int,
) -> c_int {
    let mut cmd = urrxe_modify_srq::new();
    if mask & IBV_SRQ_MAX_WR as c_int == 0 {
        // SAFETY: caller's pointers; `cmd` is a live buffer of that size.
        return unsafe {
            ffi::ibv_cmd_modify_srq(
                ibsrq,
                attr,
                mask,
                ptr::addr_of_mut!(cmd).cast(),
                size_of_val(&cmd),
            )
        };
    }
    // SAFETY: a live SRQ of ours.
    let srq = unsafe { &*ibsrq.cast::<RrxeSrq>() };
    let Some(rq) = srq.rq.as_ref() else {
        return libc::EINVAL;
    };
    let mut g = lock(rq);
    let mut info = rrxe_queue_info::default();
    cmd.drv_payload.queue_info_addr = ptr::addr_of_mut!(info) as u64;
    // SAFETY: caller's pointers; `cmd` is a live buffer of that size; `info` outlives the
    // call, in which the kernel writes it.
    let ret = unsafe {
        ffi::ibv_cmd_modify_srq(
            ibsrq,
            attr,
            mask,
            ptr::addr_of_mut!(cmd).cast(),
            size_of_val(&cmd),
        )
    };
    if ret != 0 {
        // Refused: the old queue is still the live one.
        return ret;
    }
    // SAFETY: a live SRQ's context.
    let fd = unsafe { (*(*ibsrq).context).cmd_fd };
    match MappedQueue::map(fd, &info) {
        Ok(q) => {
            g.replace(q);
            0
        }
        Err(e) => {
            g.break_queue();
            map_errno(e)
        }
    }
}

pub(crate) unsafe extern "C" fn query_srq(srq: *mut ibv_srq, attr: *mut ibv_srq_attr) -> c_int {
    let mut cmd = ibv_query_srq::default();
    // SAFETY: caller's pointers; `cmd` is a live buffer of that size.
    unsafe { ffi::ibv_cmd_query_srq(srq, attr, &mut cmd, size_of::<ibv_query_srq>()) }
}

pub(crate) unsafe extern "C" fn destroy_srq(ibsrq: *mut ibv_srq) -> c_int {
    // SAFETY: a live SRQ of ours.
    let ret = unsafe { ffi::ibv_cmd_destroy_srq(ibsrq) };
    if ret == 0 {
        // SAFETY: created by `create_srq` as a Box<RrxeSrq>.
        drop(unsafe { Box::from_raw(ibsrq.cast::<RrxeSrq>()) });
    }
    ret
}

pub(crate) unsafe extern "C" fn post_srq_recv(
    ibsrq: *mut ibv_srq,
    wr: *mut ibv_recv_wr,
    bad_wr: *mut *mut ibv_recv_wr,
) -> c_int {
    // SAFETY: a live SRQ of ours.
    let srq = unsafe { &*ibsrq.cast::<RrxeSrq>() };
    match srq.rq.as_ref() {
        // SAFETY: the caller's list and out pointer.
        Some(rq) => unsafe { post_recv_list(rq, wr, bad_wr) },
        None => libc::EINVAL,
    }
}
