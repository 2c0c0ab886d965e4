// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Completion queues: creation, resizing, and polling (`ibv_poll_cq` and the extended
//! `ibv_start_poll` .. `ibv_end_poll` API).

use core::cell::UnsafeCell;
use core::ffi::{c_int, c_uint};
use core::mem::size_of;
use core::ptr;
use std::sync::Mutex;

use super::{lock, map_errno, set_errno, zeroed_box, SessionLock};
use crate::abi::driver::verbs_cq;
use crate::abi::ffi;
use crate::abi::queue::MappedQueue;
use crate::abi::rrxe::*;
use crate::abi::uverbs::*;
use crate::abi::verbs::*;
use crate::wq::CqRing;

/// The provider's CQ: a `verbs_cq`, so one object serves `ibv_create_cq` and
/// `ibv_create_cq_ex`.
#[repr(C)]
pub struct RrxeCq {
    pub vcq: verbs_cq,
    /// Set once the queue is mapped (and re-mapped after a resize, see [`CqRing`]).
    pub cq: Option<Mutex<CqRing<MappedQueue, rrxe_queue_info>>>,
    /// Held from `start_poll` to `end_poll`.
    session: SessionLock,
    /// The completion an extended poll is at (read under `session`).
    cur: UnsafeCell<ibv_wc>,
}

/// The work completion flags an extended CQ can report (no timestamps, VLANs, flow tags or
/// tag matching).
const CQ_EX_WC_FLAGS: u64 = (IBV_WC_EX_WITH_BYTE_LEN
    | IBV_WC_EX_WITH_IMM
    | IBV_WC_EX_WITH_QP_NUM
    | IBV_WC_EX_WITH_SRC_QP
    | IBV_WC_EX_WITH_SLID
    | IBV_WC_EX_WITH_SL
    | IBV_WC_EX_WITH_DLID_PATH_BITS) as u64;

/// Maps the CQ the kernel described and finishes `cq`; on failure destroys the kernel CQ.
fn finish_cq(ctx: *mut ibv_context, mut cq: Box<RrxeCq>, q: &rrxe_queue_info) -> *mut RrxeCq {
    // SAFETY: `ctx` is live.
    let fd = unsafe { (*ctx).cmd_fd };
    match MappedQueue::map(fd, q) {
        Ok(m) => {
            cq.cq = Some(Mutex::new(CqRing::new(m, *q)));
            cq.session.init();
            Box::into_raw(cq)
        }
        Err(e) => {
            // SAFETY: the CQ was just created and nobody else knows it.
            unsafe { ffi::ibv_cmd_destroy_cq(ptr::addr_of_mut!(cq.vcq).cast()) };
            set_errno(map_errno(e));
            ptr::null_mut()
        }
    }
}

pub(crate) unsafe extern "C" fn create_cq(
    ctx: *mut ibv_context,
    cqe: c_int,
    channel: *mut ibv_comp_channel,
    comp_vector: c_int,
) -> *mut ibv_cq {
    // SAFETY: plain data, `None`s and a pthread mutex (initialised in finish_cq): all-zero
    // is valid.
    let mut cq: Box<RrxeCq> = unsafe { zeroed_box() };
    let mut cmd = ibv_create_cq::default();
    let mut resp = urrxe_create_cq_resp::new();
    // SAFETY: `ctx` is live; buffers as given; the response is a DECLARE_DRV_CMD layout;
    // `ibv_cq` is the prefix of the `verbs_cq`.
    let ret = unsafe {
        ffi::ibv_cmd_create_cq(
            ctx,
            cqe,
            channel,
            comp_vector,
            ptr::addr_of_mut!(cq.vcq).cast(),
            &mut cmd,
            size_of::<ibv_create_cq>(),
            ptr::addr_of_mut!(resp).cast(),
            urrxe_create_cq_resp::size(),
        )
    };
    if ret != 0 {
        set_errno(ret);
        return ptr::null_mut();
    }
    finish_cq(ctx, cq, &resp.drv_payload.cq).cast()
}

pub(crate) unsafe extern "C" fn create_cq_ex(
    ctx: *mut ibv_context,
    attr: *mut ibv_cq_init_attr_ex,
) -> *mut ibv_cq_ex {
    if attr.is_null() {
        set_errno(libc::EINVAL);
        return ptr::null_mut();
    }
    // SAFETY: the caller's live attributes.
    let mut a = unsafe { *attr };
    let flags = if a.comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS != 0 {
        a.flags
    } else {
        0
    };
    if a.comp_mask & !IBV_CQ_INIT_ATTR_MASK_FLAGS != 0
        || flags & !IBV_CREATE_CQ_ATTR_SINGLE_THREADED != 0
        || a.wc_flags & !CQ_EX_WC_FLAGS != 0
    {
        set_errno(libc::EOPNOTSUPP);
        return ptr::null_mut();
    }
    // The single-threaded hint is the provider's alone: the kernel is told nothing.
    a.comp_mask = 0;
    a.flags = 0;
    // SAFETY: as in create_cq.
    let mut cq: Box<RrxeCq> = unsafe { zeroed_box() };
    let mut cmd = ibv_create_cq_ex::default();
    let mut resp = urrxe_create_cq_ex_resp::new();
    // SAFETY: `ctx` is live; buffers as given; the response is a DECLARE_DRV_CMD layout.
    let ret = unsafe {
        ffi::cmd_create_cq_ex(
            ctx,
            &a,
            &mut cq.vcq,
            &mut cmd,
            size_of::<ibv_create_cq_ex>(),
            ptr::addr_of_mut!(resp).cast(),
            size_of::<urrxe_create_cq_ex_resp>(),
            0,
        )
    };
    if ret != 0 {
        set_errno(ret);
        return ptr::null_mut();
    }
    let x = &mut cq.vcq.__bindgen_anon_1.cq_ex;
    x.start_poll = Some(cq_start_poll);
    x.next_poll = Some(cq_next_poll);
    x.end_poll = Some(cq_end_poll);
    x.read_opcode = Some(cq_read_opcode);
    x.read_vendor_err = Some(cq_read_vendor_err);
    x.read_byte_len = Some(cq_read_byte_len);
    x.read_imm_data = Some(cq_read_imm_data);
    x.read_qp_num = Some(cq_read_qp_num);
    x.read_src_qp = Some(cq_read_src_qp);
    x.read_wc_flags = Some(cq_read_wc_flags);
    x.read_slid = Some(cq_read_slid);
    x.read_sl = Some(cq_read_sl);
    x.read_dlid_path_bits = Some(cq_read_dlid_path_bits);
    finish_cq(ctx, cq, &resp.drv_payload.cq).cast()
}

pub(crate) unsafe extern "C" fn resize_cq(ibcq: *mut ibv_cq, cqe: c_int) -> c_int {
    // SAFETY: a live CQ of ours.
    let cq = unsafe { our_cq(ibcq) };
    let Some(q) = cq.cq.as_ref() else {
        return libc::EINVAL;
    };
    // Nobody polls while the kernel moves the pending completions to the new ring.
    let mut g = lock(q);
    let mut cmd = ibv_resize_cq::default();
    let mut resp = urrxe_resize_cq_resp::new();
    // SAFETY: a live CQ; buffers as given; the response is a DECLARE_DRV_CMD layout.
    let ret = unsafe {
        ffi::ibv_cmd_resize_cq(
            ibcq,
            cqe,
            &mut cmd,
            size_of::<ibv_resize_cq>(),
            ptr::addr_of_mut!(resp).cast(),
            urrxe_resize_cq_resp::size(),
        )
    };
    if ret != 0 {
        return ret;
    }
    // The kernel now writes only the new ring. If it cannot be mapped, the error is
    // returned and the CQ maps it on its next poll (see `CqRing`); the dead ring is never
    // polled again. Had the kernel refused the resize (above), the old ring would still be
    // the live one and stays mapped.
    // SAFETY: a live CQ's context.
    let fd = unsafe { (*(*ibcq).context).cmd_fd };
    match g.replace(resp.drv_payload.cq, |i| MappedQueue::map(fd, i)) {
        Ok(()) => 0,
        Err(e) => map_errno(e),
    }
}

pub(crate) unsafe extern "C" fn destroy_cq(ibcq: *mut ibv_cq) -> c_int {
    // SAFETY: a live CQ of ours.
    let ret = unsafe { ffi::ibv_cmd_destroy_cq(ibcq) };
    if ret == 0 {
        // SAFETY: created by `create_cq(_ex)` as a Box<RrxeCq>; dropping unmaps the queue.
        drop(unsafe { Box::from_raw(ibcq.cast::<RrxeCq>()) });
    }
    ret
}

/// Our CQ behind a libibverbs CQ pointer.
///
/// # Safety
/// `cq` is a live CQ this provider created.
unsafe fn our_cq<'a, T>(cq: *mut T) -> &'a RrxeCq {
    // SAFETY: the CQ structs are the first field of a Box<RrxeCq>.
    unsafe { &*cq.cast::<RrxeCq>() }
}

pub(crate) unsafe extern "C" fn poll_cq(ibcq: *mut ibv_cq, num: c_int, wc: *mut ibv_wc) -> c_int {
    // SAFETY: a live CQ of ours (shared: other threads may poll it too, hence the mutex).
    let cq = unsafe { our_cq(ibcq) };
    let Some(q) = cq.cq.as_ref() else {
        return -1;
    };
    if num <= 0 || wc.is_null() {
        return 0;
    }
    // SAFETY: the caller provides `num` writable `ibv_wc`s.
    let out = unsafe { core::slice::from_raw_parts_mut(wc, num as usize) };
    // SAFETY: a live CQ's context.
    let fd = unsafe { (*(*ibcq).context).cmd_fd };
    let mut g = lock(q);
    match g.ring(|i| MappedQueue::map(fd, i)).map(|q| q.poll(out)) {
        Ok(Ok(n)) => n as c_int,
        _ => -1,
    }
}

/// Takes the next completion into `cur` and the CQ's `status`/`wr_id`: 0, `ENOENT` when
/// there is none, `EIO` when the CQ is broken. The caller holds the session.
///
/// # Safety
/// `ibcq` is a live extended CQ of ours.
unsafe fn cq_take(ibcq: *mut ibv_cq_ex) -> c_int {
    // SAFETY: per the contract.
    let cq = unsafe { our_cq(ibcq) };
    let Some(q) = cq.cq.as_ref() else {
        return libc::EIO;
    };
    let mut wc = [ibv_wc::default()];
    // SAFETY: a live CQ's context.
    let fd = unsafe { (*(*ibcq).context).cmd_fd };
    let mut g = lock(q);
    match g.ring(|i| MappedQueue::map(fd, i)).map(|q| q.poll(&mut wc)) {
        Ok(Ok(1)) => {
            // SAFETY: the session is held: nobody else touches `cur` or the two fields.
            unsafe {
                *cq.cur.get() = wc[0];
                (*ibcq).status = wc[0].status;
                (*ibcq).wr_id = wc[0].wr_id;
            }
            0
        }
        Ok(Ok(_)) => libc::ENOENT,
        _ => libc::EIO,
    }
}

unsafe extern "C" fn cq_start_poll(ibcq: *mut ibv_cq_ex, attr: *mut ibv_poll_cq_attr) -> c_int {
    // SAFETY: the caller's attributes, if any.
    if !attr.is_null() && unsafe { (*attr).comp_mask } != 0 {
        return libc::EINVAL;
    }
    // SAFETY: a live extended CQ of ours.
    let cq = unsafe { our_cq(ibcq) };
    cq.session.lock();
    // SAFETY: as above; the session is held.
    let r = unsafe { cq_take(ibcq) };
    if r != 0 {
        // No poll session follows a failed start (ibv_end_poll is not called).
        cq.session.unlock();
    }
    r
}

unsafe extern "C" fn cq_next_poll(ibcq: *mut ibv_cq_ex) -> c_int {
    // SAFETY: a live extended CQ of ours, inside a poll session.
    unsafe { cq_take(ibcq) }
}

unsafe extern "C" fn cq_end_poll(ibcq: *mut ibv_cq_ex) {
    // SAFETY: a live extended CQ of ours, inside a poll session (entries were consumed as
    // they were read).
    unsafe { our_cq(ibcq) }.session.unlock();
}

/// The completion a poll session is at.
///
/// # Safety
/// `ibcq` is a live extended CQ of ours inside a poll session.
unsafe fn cq_cur(ibcq: *mut ibv_cq_ex) -> ibv_wc {
    // SAFETY: per the contract, `cur` is stable while the session is held.
    unsafe { *our_cq(ibcq).cur.get() }
}

macro_rules! cq_reader {
    ($name:ident -> $t:ty, |$w:ident| $e:expr) => {
        unsafe extern "C" fn $name(ibcq: *mut ibv_cq_ex) -> $t {
            // SAFETY: libibverbs calls readers inside a poll session on our CQ.
            let $w = unsafe { cq_cur(ibcq) };
            $e
        }
    };
}
cq_reader!(cq_read_opcode -> ibv_wc_opcode, |w| w.opcode);
cq_reader!(cq_read_vendor_err -> u32, |w| w.vendor_err);
cq_reader!(cq_read_byte_len -> u32, |w| w.byte_len);
cq_reader!(cq_read_imm_data -> u32, |w| wc_imm(&w));
cq_reader!(cq_read_qp_num -> u32, |w| w.qp_num);
cq_reader!(cq_read_src_qp -> u32, |w| w.src_qp);
cq_reader!(cq_read_wc_flags -> c_uint, |w| w.wc_flags);
cq_reader!(cq_read_slid -> u32, |w| u32::from(w.slid));
cq_reader!(cq_read_sl -> u8, |w| w.sl);
cq_reader!(cq_read_dlid_path_bits -> u8, |w| w.dlid_path_bits);

pub(crate) unsafe extern "C" fn req_notify_cq(ibcq: *mut ibv_cq, solicited_only: c_int) -> c_int {
    // SAFETY: a live CQ of ours.
    unsafe { ffi::ibv_cmd_req_notify_cq(ibcq, solicited_only) }
}
