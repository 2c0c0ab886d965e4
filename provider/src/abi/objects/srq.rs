//! Shared receive queues.

use core::ffi::c_int;
use core::mem::size_of;
use core::ptr;
use std::sync::Mutex;

use super::post::post_recv_list;
use super::{map_errno, set_errno, zeroed_box};
use crate::abi::ffi;
use crate::abi::queue::MappedQueue;
use crate::abi::rrxe::*;
use crate::abi::uverbs::*;
use crate::abi::verbs::*;
use crate::wq::RecvQueue;

/// The provider's SRQ.
#[repr(C)]
pub struct RrxeSrq {
    pub ibsrq: ibv_srq,
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
            &mut srq.ibsrq,
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
    match MappedQueue::map(fd, &resp.drv_payload.rq) {
        Ok(q) => {
            srq.rq = Some(Mutex::new(RecvQueue::new(q, max_sge)));
            Box::into_raw(srq).cast()
        }
        Err(e) => {
            // SAFETY: just created, unknown to anybody else.
            unsafe { ffi::ibv_cmd_destroy_srq(&mut srq.ibsrq) };
            set_errno(map_errno(e));
            ptr::null_mut()
        }
    }
}

pub(crate) unsafe extern "C" fn modify_srq(
    srq: *mut ibv_srq,
    attr: *mut ibv_srq_attr,
    mask: c_int,
) -> c_int {
    let mut cmd = ibv_modify_srq::default();
    // SAFETY: caller's pointers; `cmd` is a live buffer of that size.
    unsafe { ffi::ibv_cmd_modify_srq(srq, attr, mask, &mut cmd, size_of::<ibv_modify_srq>()) }
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
