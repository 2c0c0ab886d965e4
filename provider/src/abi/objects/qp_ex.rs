// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The extended send API (`ibv_wr_*`) of a QP created with send ops flags.

use core::ffi::{c_int, c_void};
use core::ptr;

use super::ah::RrxeAh;
use super::lock;
use super::mw::type2_binding;
use super::post::{doorbell, sges};
use super::qp::{RrxeQp, Sq};
use crate::abi::queue::MappedQueue;
use crate::abi::verbs::*;
use crate::wq::{SendQueue, WrBatch};
use crate::wqe::{SendWr, Sge, Transport, WrError};
use rrxe_proto::uabi;

/// Points the `ibv_qp_ex` calls of a QP created with send ops flags at this module.
pub(super) fn install(x: &mut ibv_qp_ex) {
    x.wr_start = Some(wr_start);
    x.wr_complete = Some(wr_complete);
    x.wr_abort = Some(wr_abort);
    x.wr_send = Some(wr_send);
    x.wr_send_imm = Some(wr_send_imm);
    x.wr_send_inv = Some(wr_send_inv);
    x.wr_rdma_write = Some(wr_rdma_write);
    x.wr_rdma_write_imm = Some(wr_rdma_write_imm);
    x.wr_rdma_read = Some(wr_rdma_read);
    x.wr_atomic_cmp_swp = Some(wr_atomic_cmp_swp);
    x.wr_atomic_fetch_add = Some(wr_atomic_fetch_add);
    x.wr_local_inv = Some(wr_local_inv);
    x.wr_bind_mw = Some(wr_bind_mw);
    x.wr_send_tso = Some(wr_send_tso);
    x.wr_set_ud_addr = Some(wr_set_ud_addr);
    x.wr_set_xrc_srqn = Some(wr_set_xrc_srqn);
    x.wr_set_inline_data = Some(wr_set_inline_data);
    x.wr_set_inline_data_list = Some(wr_set_inline_data_list);
    x.wr_set_sge = Some(wr_set_sge);
    x.wr_set_sge_list = Some(wr_set_sge_list);
    x.wr_atomic_write = Some(wr_atomic_write);
    #[cfg(rrxe_have_wr_flush)]
    {
        x.wr_flush = Some(wr_flush);
    }
}

/// Our QP behind an `ibv_qp_ex` pointer.
///
/// # Safety
/// `qpx` is a live QP this provider created with send ops flags.
unsafe fn our_qp<'a>(qpx: *mut ibv_qp_ex) -> &'a RrxeQp {
    // SAFETY: the ibv_qp_ex is the first field of a Box<RrxeQp>.
    unsafe { &*qpx.cast::<RrxeQp>() }
}

/// Runs `f` on the QP's batch and send queue.
///
/// # Safety
/// As [`our_qp`].
unsafe fn with_batch(
    qpx: *mut ibv_qp_ex,
    f: impl FnOnce(&mut WrBatch, &mut SendQueue<MappedQueue>),
) {
    // SAFETY: per the contract.
    let qp = unsafe { our_qp(qpx) };
    if let Some(sq) = qp.sq.as_ref() {
        let mut g = lock(sq);
        let Sq { q, batch } = &mut *g;
        f(batch, q);
    }
}

/// An opcode call: a new request with the caller's `wr_id` and `wr_flags`, if the QP was
/// created for `op`.
///
/// # Safety
/// As [`our_qp`].
unsafe fn wr_begin(qpx: *mut ibv_qp_ex, op: ibv_qp_create_send_ops_flags, mut wr: SendWr) {
    // SAFETY: per the contract.
    let (qp, wr_id, flags) = unsafe { (our_qp(qpx), (*qpx).wr_id, (*qpx).wr_flags) };
    wr.wr_id = wr_id;
    // Inline data comes from ibv_wr_set_inline_data*, not from the flag.
    wr.send_flags = flags & !uabi::SEND_INLINE;
    let allowed = qp.send_ops & u64::from(op) != 0;
    // SAFETY: per the contract.
    unsafe {
        with_batch(qpx, |b, q| {
            if allowed {
                b.begin(q, wr)
            } else {
                b.reject(WrError::Unsupported)
            }
        })
    };
}

/// An operation this device cannot do: the batch fails with `EOPNOTSUPP`.
///
/// # Safety
/// As [`our_qp`].
unsafe fn wr_unsupported(qpx: *mut ibv_qp_ex) {
    // SAFETY: per the contract.
    unsafe { with_batch(qpx, |b, _| b.reject(WrError::Unsupported)) };
}

unsafe extern "C" fn wr_start(qpx: *mut ibv_qp_ex) {
    // SAFETY: libibverbs passes our QP.
    unsafe { our_qp(qpx) }.session.lock();
    // SAFETY: as above.
    unsafe { with_batch(qpx, |b, _| b.start()) };
}

unsafe extern "C" fn wr_complete(qpx: *mut ibv_qp_ex) -> c_int {
    // SAFETY: libibverbs passes our QP, inside ibv_wr_start .. ibv_wr_complete.
    let qp = unsafe { our_qp(qpx) };
    let mut r = Err(WrError::Sequence);
    let state = qp.state.check_send();
    // SAFETY: as above.
    unsafe {
        with_batch(qpx, |b, q| {
            r = match state {
                // Nothing of the batch is posted, as for a failed ibv_post_send.
                Err(e) if b.active() => {
                    b.abort(q);
                    Err(e)
                }
                _ => b.complete(q),
            }
        })
    };
    let ret = match r {
        Ok(true) => {
            let ibqp = qp.ibqp();
            // SAFETY: a live QP's context.
            doorbell(unsafe { (*ibqp.context).cmd_fd }, ibqp.handle)
        }
        Ok(false) => 0,
        Err(e) => e.errno(),
    };
    qp.session.unlock();
    ret
}

unsafe extern "C" fn wr_abort(qpx: *mut ibv_qp_ex) {
    // SAFETY: libibverbs passes our QP, inside ibv_wr_start .. ibv_wr_abort.
    unsafe { with_batch(qpx, |b, q| b.abort(q)) };
    // SAFETY: as above.
    unsafe { our_qp(qpx) }.session.unlock();
}

unsafe extern "C" fn wr_send(qpx: *mut ibv_qp_ex) {
    let wr = SendWr {
        opcode: uabi::WR_SEND,
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_SEND, wr) };
}

unsafe extern "C" fn wr_send_imm(qpx: *mut ibv_qp_ex, imm: u32) {
    let wr = SendWr {
        opcode: uabi::WR_SEND_WITH_IMM,
        ex: imm,
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_SEND_WITH_IMM, wr) };
}

unsafe extern "C" fn wr_send_inv(qpx: *mut ibv_qp_ex, rkey: u32) {
    let wr = SendWr {
        opcode: uabi::WR_SEND_WITH_INV,
        ex: rkey,
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_SEND_WITH_INV, wr) };
}

unsafe extern "C" fn wr_rdma_write(qpx: *mut ibv_qp_ex, rkey: u32, addr: u64) {
    let wr = SendWr {
        opcode: uabi::WR_RDMA_WRITE,
        rkey,
        remote_addr: addr,
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_RDMA_WRITE, wr) };
}

unsafe extern "C" fn wr_rdma_write_imm(qpx: *mut ibv_qp_ex, rkey: u32, addr: u64, imm: u32) {
    let wr = SendWr {
        opcode: uabi::WR_RDMA_WRITE_WITH_IMM,
        rkey,
        remote_addr: addr,
        ex: imm,
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, wr) };
}

unsafe extern "C" fn wr_rdma_read(qpx: *mut ibv_qp_ex, rkey: u32, addr: u64) {
    let wr = SendWr {
        opcode: uabi::WR_RDMA_READ,
        rkey,
        remote_addr: addr,
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_RDMA_READ, wr) };
}

unsafe extern "C" fn wr_atomic_cmp_swp(
    qpx: *mut ibv_qp_ex,
    rkey: u32,
    addr: u64,
    cmp: u64,
    swap: u64,
) {
    let wr = SendWr {
        opcode: uabi::WR_ATOMIC_CMP_AND_SWP,
        rkey,
        remote_addr: addr,
        compare_add: cmp,
        swap,
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, wr) };
}

unsafe extern "C" fn wr_atomic_fetch_add(qpx: *mut ibv_qp_ex, rkey: u32, addr: u64, add: u64) {
    let wr = SendWr {
        opcode: uabi::WR_ATOMIC_FETCH_AND_ADD,
        rkey,
        remote_addr: addr,
        compare_add: add,
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, wr) };
}

unsafe extern "C" fn wr_local_inv(qpx: *mut ibv_qp_ex, rkey: u32) {
    let wr = SendWr {
        opcode: uabi::WR_LOCAL_INV,
        ex: rkey,
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_LOCAL_INV, wr) };
}

unsafe extern "C" fn wr_bind_mw(
    qpx: *mut ibv_qp_ex,
    mw: *mut ibv_mw,
    rkey: u32,
    info: *const ibv_mw_bind_info,
) {
    // SAFETY: libibverbs passes the caller's MW and bind info.
    let Some(bind) = (unsafe { type2_binding(mw, rkey, info) }) else {
        // SAFETY: libibverbs passes our QP.
        unsafe { with_batch(qpx, |b, _| b.reject(WrError::Opcode)) };
        return;
    };
    let wr = SendWr {
        opcode: uabi::WR_BIND_MW,
        bind,
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_BIND_MW, wr) };
}

unsafe extern "C" fn wr_send_tso(qpx: *mut ibv_qp_ex, _hdr: *mut c_void, _sz: u16, _mss: u16) {
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_unsupported(qpx) };
}

unsafe extern "C" fn wr_set_xrc_srqn(qpx: *mut ibv_qp_ex, srqn: u32) {
    // Only an XRC send QP names a remote SRQ; on the others the batch fails (EOPNOTSUPP).
    // SAFETY: libibverbs passes our QP.
    unsafe {
        with_batch(qpx, |b, q| {
            if q.limits().transport == Transport::Xrc {
                b.set_xrc_srqn(srqn)
            } else {
                b.reject(WrError::Unsupported)
            }
        })
    };
}

unsafe extern "C" fn wr_atomic_write(qpx: *mut ibv_qp_ex, rkey: u32, addr: u64, v: *const c_void) {
    if v.is_null() {
        // SAFETY: libibverbs passes our QP.
        unsafe { with_batch(qpx, |b, _| b.reject(WrError::Opcode)) };
        return;
    }
    let mut bytes = [0u8; 8];
    // SAFETY: the verbs contract: `v` points at the 8 bytes to write.
    unsafe { ptr::copy_nonoverlapping(v.cast::<u8>(), bytes.as_mut_ptr(), 8) };
    let wr = SendWr {
        opcode: uabi::WR_ATOMIC_WRITE,
        rkey,
        remote_addr: addr,
        // The 8 bytes in memory order (the ABI's encoding of the value).
        compare_add: u64::from_ne_bytes(bytes),
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_ATOMIC_WRITE, wr) };
}

/// `ibv_wr_flush` (verbs.h of rdma-core 45+): the type and level values of verbs.h are the
/// ABI's `RRXE_FLUSH_*`; the kernel checks them.
#[cfg(rrxe_have_wr_flush)]
unsafe extern "C" fn wr_flush(
    qpx: *mut ibv_qp_ex,
    rkey: u32,
    addr: u64,
    len: usize,
    placement: u8,
    level: u8,
) {
    let Ok(length) = u32::try_from(len) else {
        // SAFETY: libibverbs passes our QP.
        unsafe { with_batch(qpx, |b, _| b.reject(WrError::Opcode)) };
        return;
    };
    let wr = SendWr {
        opcode: uabi::WR_FLUSH,
        rkey,
        remote_addr: addr,
        flush: crate::wqe::FlushArgs {
            length,
            placement,
            level,
        },
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_FLUSH, wr) };
}

unsafe extern "C" fn wr_set_ud_addr(qpx: *mut ibv_qp_ex, ah: *mut ibv_ah, qpn: u32, qkey: u32) {
    let ah_num = if ah.is_null() {
        0
    } else {
        // SAFETY: a live AH of ours (the verbs contract).
        unsafe { (*ah.cast::<RrxeAh>()).ah_num }
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { with_batch(qpx, |b, _| b.set_ud(ah_num, qpn, qkey)) };
}

unsafe extern "C" fn wr_set_sge(qpx: *mut ibv_qp_ex, lkey: u32, addr: u64, length: u32) {
    let sge = Sge { addr, length, lkey };
    // SAFETY: libibverbs passes our QP.
    unsafe { with_batch(qpx, |b, _| b.set_sges(&[sge])) };
}

unsafe extern "C" fn wr_set_sge_list(qpx: *mut ibv_qp_ex, n: usize, list: *const ibv_sge) {
    let mut buf = [Sge::default(); 32];
    // SAFETY: the caller's array of `n` SGEs.
    let sges = c_int::try_from(n)
        .ok()
        .and_then(|n| unsafe { sges(list, n, &mut buf) });
    // SAFETY: libibverbs passes our QP.
    unsafe {
        with_batch(qpx, |b, _| match sges {
            Some(s) => b.set_sges(s),
            None => b.reject(WrError::TooManySge),
        })
    };
}

unsafe extern "C" fn wr_set_inline_data(qpx: *mut ibv_qp_ex, addr: *mut c_void, len: usize) {
    let data: &[u8] = if len == 0 || addr.is_null() {
        &[]
    } else {
        // SAFETY: the caller's `len` readable bytes, valid for the call (copied now).
        unsafe { core::slice::from_raw_parts(addr.cast::<u8>(), len) }
    };
    // SAFETY: libibverbs passes our QP.
    unsafe {
        with_batch(qpx, |b, q| {
            let max = q.limits().max_inline;
            b.set_inline(&[data], max)
        })
    };
}

unsafe extern "C" fn wr_set_inline_data_list(
    qpx: *mut ibv_qp_ex,
    n: usize,
    list: *const ibv_data_buf,
) {
    if n > 32 || (n > 0 && list.is_null()) {
        // SAFETY: libibverbs passes our QP.
        unsafe { with_batch(qpx, |b, _| b.reject(WrError::InlineTooLong)) };
        return;
    }
    let mut pieces: [&[u8]; 32] = [&[]; 32];
    if n > 0 {
        // SAFETY: the caller's array of `n` buffers.
        let bufs = unsafe { core::slice::from_raw_parts(list, n) };
        for (p, d) in pieces.iter_mut().zip(bufs) {
            if d.length > 0 && !d.addr.is_null() {
                // SAFETY: each buffer names `length` readable bytes for the call.
                *p = unsafe { core::slice::from_raw_parts(d.addr.cast::<u8>(), d.length) };
            }
        }
    }
    // SAFETY: libibverbs passes our QP.
    unsafe {
        with_batch(qpx, |b, q| {
            let max = q.limits().max_inline;
            b.set_inline(&pieces[..n], max)
        })
    };
}
