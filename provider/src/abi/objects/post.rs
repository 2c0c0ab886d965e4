// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Posting: `ibv_post_send`/`ibv_post_recv` walk the caller's lists into the queues and
//! ring the doorbell.

use core::ffi::c_int;
use core::mem::size_of;
use core::ptr;
use std::sync::Mutex;

use super::ah::RrxeAh;
use super::lock;
use super::mw::type2_binding;
use super::qp::{RrxeQp, Sq};
use crate::abi::queue::MappedQueue;
use crate::abi::uverbs::*;
use crate::wq::{RecvQueue, SendQueue};
use crate::wqe::{SendWr, Sge, Transport, WrError};
use rrxe_proto::uabi::{self, WrOpcode};

/// Rings the send doorbell: a POST_SEND with no work requests.
pub(super) fn doorbell(fd: c_int, qp_handle: u32) -> c_int {
    let mut resp = ib_uverbs_post_send_resp::default();
    let mut cmd = ibv_post_send {
        hdr: ib_uverbs_cmd_hdr {
            command: IB_USER_VERBS_CMD_POST_SEND,
            in_words: (size_of::<ibv_post_send>() / 4) as u16,
            out_words: (size_of::<ib_uverbs_post_send_resp>() / 4) as u16,
        },
        ..Default::default()
    };
    // SAFETY: `core_payload` is the member of kern-abi.h's union that a write command
    // carries; the union is plain integers, all of them initialised (zero) by `default()`.
    let core = unsafe { cmd.__bindgen_anon_1.core_payload.as_mut() };
    core.response = ptr::addr_of_mut!(resp) as u64;
    core.qp_handle = qp_handle;
    core.wqe_size = IB_UVERBS_SEND_WR_SIZE;
    // SAFETY: writes the command from a live local; the kernel writes `resp`, which lives
    // until after the call.
    let n = unsafe { libc::write(fd, ptr::addr_of!(cmd).cast(), size_of::<ibv_post_send>()) };
    if n == size_of::<ibv_post_send>() as isize {
        0
    } else {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    }
}

/// Copies `n` SGEs from a caller's array.
///
/// # Safety
/// `list` points to at least `n` readable `ibv_sge` (when `n > 0`).
pub(super) unsafe fn sges(list: *const ibv_sge, n: c_int, buf: &mut [Sge; 32]) -> Option<&[Sge]> {
    let n = usize::try_from(n).ok()?;
    if n > buf.len() {
        return None;
    }
    if n == 0 {
        return Some(&[]);
    }
    if list.is_null() {
        return None;
    }
    // SAFETY: per the contract.
    let src = unsafe { core::slice::from_raw_parts(list, n) };
    for (d, s) in buf.iter_mut().zip(src) {
        *d = Sge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        };
    }
    Some(&buf[..n])
}

/// Opcodes whose data may be sent inline.
fn inline_capable(op: WrOpcode) -> bool {
    use WrOpcode::*;
    matches!(
        op,
        Send | SendWithImm | SendWithInv | RdmaWrite | RdmaWriteWithImm
    )
}

/// Stages one `ibv_send_wr`.
///
/// # Safety
/// `wr` is a valid work request (SGE list and, for inline sends, the memory it points at).
unsafe fn stage_send(sq: &mut SendQueue<MappedQueue>, wr: &ibv_send_wr) -> Result<(), WrError> {
    let mut buf = [Sge::default(); 32];
    // SAFETY: per the contract.
    let list = unsafe { sges(wr.sg_list, wr.num_sge, &mut buf) }.ok_or(WrError::TooManySge)?;
    let opcode: u32 = wr.opcode;
    // Unknown values go on to the encoder, which refuses them.
    let op = WrOpcode::from_raw(opcode);
    let ud = sq.limits().transport == Transport::Ud;
    let mut d = SendWr {
        wr_id: wr.wr_id,
        opcode,
        send_flags: wr.send_flags,
        // SAFETY: both members of the `imm_data`/`invalidate_rkey` union are a u32.
        ex: unsafe { wr.__bindgen_anon_1.invalidate_rkey },
        // `qp_type.xrc.remote_srqn` (encoded for XRC send QPs only).
        // SAFETY: `xrc` is the union's only member.
        xrc_srqn: unsafe { wr.qp_type.xrc.remote_srqn },
        ..Default::default()
    };
    if op == Some(WrOpcode::BindMw) {
        // SAFETY: a BIND_MW request's active union member is `bind_mw`.
        let b = unsafe { wr.__bindgen_anon_2.bind_mw };
        // SAFETY: the verbs contract: the request names a live MW and MR.
        d.bind = unsafe { type2_binding(b.mw, b.rkey, &b.bind_info) }.ok_or(WrError::Opcode)?;
        return sq.stage(&d, &[], None);
    }
    if ud {
        // SAFETY: a UD request's active union member is `ud`.
        let u = unsafe { wr.wr.ud };
        if !u.ah.is_null() {
            // SAFETY: a live AH of ours (the verbs contract).
            d.ah_num = unsafe { (*u.ah.cast::<RrxeAh>()).ah_num };
        }
        d.remote_qpn = u.remote_qpn;
        d.remote_qkey = u.remote_qkey;
    } else if matches!(
        op,
        Some(WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd)
    ) {
        // SAFETY: an atomic request's active union member is `atomic`.
        let a = unsafe { wr.wr.atomic };
        d.remote_addr = a.remote_addr;
        d.compare_add = a.compare_add;
        d.swap = a.swap;
        d.rkey = a.rkey;
    } else {
        // SAFETY: every other request reads `rdma` (unused fields are ignored).
        let r = unsafe { wr.wr.rdma };
        d.remote_addr = r.remote_addr;
        d.rkey = r.rkey;
    }
    if wr.send_flags & uabi::SEND_INLINE != 0 && op.is_some_and(inline_capable) {
        let total: u64 = list.iter().map(|s| u64::from(s.length)).sum();
        if total > u64::from(sq.limits().max_inline) {
            return Err(WrError::InlineTooLong);
        }
        let mut pieces: [&[u8]; 32] = [&[]; 32];
        for (p, s) in pieces.iter_mut().zip(list) {
            if s.length > 0 {
                // SAFETY: the verbs contract: an inline SGE names `length` readable bytes
                // at `addr` for the duration of the call (its lkey is not checked).
                *p = unsafe {
                    core::slice::from_raw_parts(s.addr as usize as *const u8, s.length as usize)
                };
            }
        }
        sq.stage(&d, &[], Some(&pieces[..list.len()]))
    } else {
        d.send_flags &= !uabi::SEND_INLINE;
        sq.stage(&d, list, None)
    }
}

pub(crate) unsafe extern "C" fn post_send(
    ibqp: *mut ibv_qp,
    wr: *mut ibv_send_wr,
    bad_wr: *mut *mut ibv_send_wr,
) -> c_int {
    // SAFETY: a live QP of ours.
    let qp = unsafe { &*ibqp.cast::<RrxeQp>() };
    let Some(sq) = qp.sq.as_ref() else {
        // No send queue (an XRC receive QP).
        if !bad_wr.is_null() {
            // SAFETY: the caller's out pointer.
            unsafe { *bad_wr = wr };
        }
        return libc::EINVAL;
    };
    if let Err(e) = qp.state.check_send() {
        if !bad_wr.is_null() {
            // SAFETY: the caller's out pointer.
            unsafe { *bad_wr = wr };
        }
        return e.errno();
    }
    qp.session.lock();
    // SAFETY: the caller's list and out pointer; the session is held.
    let ret = unsafe { post_send_list(qp, sq, wr, bad_wr) };
    qp.session.unlock();
    ret
}

/// Posts a list of send requests to `sq` and rings the doorbell.
///
/// # Safety
/// `wr` is null or a valid list; `bad_wr` is null or writable; `sq` is `qp`'s.
unsafe fn post_send_list(
    qp: &RrxeQp,
    sq: &Mutex<Sq>,
    mut wr: *mut ibv_send_wr,
    bad_wr: *mut *mut ibv_send_wr,
) -> c_int {
    let mut g = lock(sq);
    let sq = &mut g.q;
    let mut err = 0;
    while !wr.is_null() {
        // SAFETY: the caller's list of valid work requests.
        let w = unsafe { &*wr };
        // SAFETY: as above.
        if let Err(e) = unsafe { stage_send(sq, w) } {
            err = e.errno();
            break;
        }
        wr = w.next;
    }
    if err != 0 && !bad_wr.is_null() {
        // SAFETY: the caller's out pointer.
        unsafe { *bad_wr = wr };
    }
    if sq.publish() {
        // SAFETY: a live QP's context.
        let fd = unsafe { (*qp.ibqp().context).cmd_fd };
        let db = doorbell(fd, qp.ibqp().handle);
        if err == 0 {
            err = db;
        }
    }
    err
}

/// Posts a list of receive requests to `rq`.
///
/// # Safety
/// `wr` is null or a valid list; `bad_wr` is null or writable.
pub(super) unsafe fn post_recv_list(
    rq: &Mutex<RecvQueue<MappedQueue>>,
    mut wr: *mut ibv_recv_wr,
    bad_wr: *mut *mut ibv_recv_wr,
) -> c_int {
    let mut rq = lock(rq);
    let mut err = 0;
    while !wr.is_null() {
        // SAFETY: the caller's list.
        let w = unsafe { &*wr };
        let mut buf = [Sge::default(); 32];
        // SAFETY: a valid request's SGE list.
        let r = match unsafe { sges(w.sg_list, w.num_sge, &mut buf) } {
            Some(list) => rq.stage(w.wr_id, list),
            None => Err(WrError::TooManySge),
        };
        if let Err(e) = r {
            err = e.errno();
            break;
        }
        wr = w.next;
    }
    if err != 0 && !bad_wr.is_null() {
        // SAFETY: the caller's out pointer.
        unsafe { *bad_wr = wr };
    }
    rq.publish();
    err
}

pub(crate) unsafe extern "C" fn post_recv(
    ibqp: *mut ibv_qp,
    wr: *mut ibv_recv_wr,
    bad_wr: *mut *mut ibv_recv_wr,
) -> c_int {
    // SAFETY: a live QP of ours.
    let qp = unsafe { &*ibqp.cast::<RrxeQp>() };
    if let Err(e) = qp.state.check_recv() {
        if !bad_wr.is_null() {
            // SAFETY: the caller's out pointer.
            unsafe { *bad_wr = wr };
        }
        return e.errno();
    }
    match qp.rq.as_ref() {
        Some(rq) => {
            // SAFETY: the caller's list and out pointer.
            let ret = unsafe { post_recv_list(rq, wr, bad_wr) };
            if qp.state.recv_needs_doorbell() {
                // The kernel flushes the receive queue of a QP in error when it runs it.
                // SAFETY: a live QP's context.
                let db = doorbell(unsafe { (*qp.ibqp().context).cmd_fd }, qp.ibqp().handle);
                if ret == 0 {
                    return db;
                }
            }
            ret
        }
        None => {
            if !bad_wr.is_null() {
                // SAFETY: the caller's out pointer.
                unsafe { *bad_wr = wr };
            }
            libc::EINVAL
        }
    }
}
