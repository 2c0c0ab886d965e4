// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Memory windows: allocation, `ibv_bind_mw` of type 1 windows, and the bindings that
//! BIND_MW work requests carry.

use core::ffi::c_int;
use core::mem::size_of;
use core::ptr;

use super::post::doorbell;
use super::qp::RrxeQp;
use super::{lock, set_errno, zeroed_box};
use crate::abi::ffi;
use crate::abi::uverbs::*;
use crate::wqe::{MwBind, SendWr};
use rrxe_proto::uabi;

pub(crate) unsafe extern "C" fn alloc_mw(pd: *mut ibv_pd, ty: ibv_mw_type) -> *mut ibv_mw {
    if ty != IBV_MW_TYPE_1 && ty != IBV_MW_TYPE_2 {
        set_errno(libc::EINVAL);
        return ptr::null_mut();
    }
    // SAFETY: ibv_mw is plain data.
    let mut mw: Box<ibv_mw> = unsafe { zeroed_box() };
    let mut cmd = ibv_alloc_mw::default();
    let mut resp = ib_uverbs_alloc_mw_resp::default();
    // SAFETY: `pd` is a live PD; cmd/resp are live buffers of the sizes given. On success
    // libibverbs fills context, pd, rkey, handle and type.
    let ret = unsafe {
        ffi::ibv_cmd_alloc_mw(
            pd,
            ty,
            &mut *mw,
            &mut cmd,
            size_of::<ibv_alloc_mw>(),
            &mut resp,
            size_of::<ib_uverbs_alloc_mw_resp>(),
        )
    };
    if ret != 0 {
        set_errno(ret);
        return ptr::null_mut();
    }
    Box::into_raw(mw)
}

pub(crate) unsafe extern "C" fn dealloc_mw(mw: *mut ibv_mw) -> c_int {
    // SAFETY: a live MW of ours.
    let ret = unsafe { ffi::ibv_cmd_dealloc_mw(mw) };
    if ret == 0 {
        // SAFETY: created by `alloc_mw` as a Box; the kernel object is gone.
        drop(unsafe { Box::from_raw(mw) });
    }
    ret
}

/// `ibv_bind_mw()` of a type 1 window: a BIND_MW request under the window's next rkey,
/// which the window takes at once (as verbs specifies).
pub(crate) unsafe extern "C" fn bind_mw(
    ibqp: *mut ibv_qp,
    mw: *mut ibv_mw,
    mw_bind: *mut ibv_mw_bind,
) -> c_int {
    if mw.is_null() || mw_bind.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: the caller's live MW, bind request and QP of ours.
    let (m, b, qp) = unsafe { (&mut *mw, &*mw_bind, &*ibqp.cast::<RrxeQp>()) };
    if m.type_ != IBV_MW_TYPE_1 || m.pd != qp.ibqp().pd {
        return libc::EINVAL;
    }
    let Some(sq) = qp.sq.as_ref() else {
        return libc::EINVAL;
    };
    // A bind is a send queue request (as posting one through ibv_post_send).
    if let Err(e) = qp.state.check_send() {
        return e.errno();
    }
    let rkey = crate::wqe::inc_rkey(m.rkey);
    let wr = SendWr {
        wr_id: b.wr_id,
        opcode: uabi::WR_BIND_MW,
        send_flags: b.send_flags & !uabi::SEND_INLINE,
        // SAFETY: the verbs contract: bind_info.mr is null or a live MR.
        bind: unsafe { binding(rkey, &b.bind_info) },
        ..Default::default()
    };
    qp.session.lock();
    let ret = {
        let mut g = lock(sq);
        match g.q.stage(&wr, &[], None) {
            Err(e) => e.errno(),
            Ok(()) if g.q.publish() => {
                // SAFETY: a live QP's context.
                let fd = unsafe { (*qp.ibqp().context).cmd_fd };
                doorbell(fd, qp.ibqp().handle)
            }
            Ok(()) => 0,
        }
    };
    qp.session.unlock();
    if ret == 0 {
        m.rkey = rkey;
    }
    ret
}

/// The binding of a BIND_MW request of a type 2 window. `None` when the window is missing
/// or of type 1 (bound with `ibv_bind_mw`, not with a work request).
///
/// # Safety
/// `mw` is null or a live MW; `info` is null or readable, its `mr` null or a live MR.
pub(super) unsafe fn type2_binding(
    mw: *const ibv_mw,
    rkey: u32,
    info: *const ibv_mw_bind_info,
) -> Option<MwBind> {
    if mw.is_null() || info.is_null() {
        return None;
    }
    // SAFETY: per the contract.
    let (ty, info) = unsafe { ((*mw).type_, &*info) };
    if ty != IBV_MW_TYPE_2 {
        return None;
    }
    // SAFETY: per the contract.
    Some(unsafe { binding(rkey, info) })
}

/// What `info` binds a window to, under the new rkey `rkey`.
///
/// # Safety
/// `info.mr` is null or a live MR.
unsafe fn binding(rkey: u32, info: &ibv_mw_bind_info) -> MwBind {
    let mr_lkey = if info.mr.is_null() {
        0
    } else {
        // SAFETY: per the contract.
        unsafe { (*info.mr).lkey }
    };
    MwBind {
        mw_rkey: rkey,
        mr_lkey,
        addr: info.addr,
        length: info.length,
        access: info.mw_access_flags,
    }
}
