//! The verbs objects and the data path: thin `extern "C"` shells over `crate::wq` and the
//! `ibv_cmd_*` helpers of libibverbs. Each object is a `Box` whose first field is the
//! libibverbs struct handed out, so the pointer libibverbs gives back is the box.
//!
//! Contract of every op here (libibverbs' and the verbs API's): object pointers are ones
//! this provider created and has not destroyed; work request lists, SGE arrays and the
//! memory of inline SGEs are valid for the duration of the call.

use core::ffi::{c_int, c_void};
use core::mem::size_of;
use core::ptr;
use std::sync::Mutex;

use super::driver::verbs_mr;
use super::ffi;
use super::queue::{MapError, MappedQueue};
use super::rrxe::*;
use super::uverbs::*;
use super::verbs::*;
use crate::wq::{CompletionQueue, RecvQueue, SendQueue};
use crate::wqe::{SendLimits, SendWr, Sge, Transport, WrError};

fn set_errno(err: c_int) {
    // SAFETY: __errno_location() returns the calling thread's errno slot, always valid.
    unsafe { *libc::__errno_location() = err };
}

fn map_errno(e: MapError) -> c_int {
    match e {
        MapError::Geometry => libc::EPROTO,
        MapError::Mmap(e) => e,
    }
}

/// Allocates a zeroed `T` on the heap.
///
/// # Safety
/// All-zero bytes must be a valid `T` (plain data, raw pointers, `Option`s of function
/// pointers, `Option`s of boxes).
unsafe fn zeroed_box<T>() -> Box<T> {
    // SAFETY: per the contract.
    Box::new(unsafe { core::mem::zeroed() })
}

/// Locks `m`, recovering the data if another thread panicked while holding it (the queues'
/// state stays consistent: every update is a single index store).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------------------
// PD

pub(super) unsafe extern "C" fn alloc_pd(ctx: *mut ibv_context) -> *mut ibv_pd {
    // SAFETY: ibv_pd is plain data.
    let mut pd: Box<ibv_pd> = unsafe { zeroed_box() };
    let mut cmd = ibv_alloc_pd::default();
    let mut resp = ib_uverbs_alloc_pd_resp::default();
    // SAFETY: `ctx` is a live context; cmd/resp are live buffers of the sizes given.
    let ret = unsafe {
        ffi::ibv_cmd_alloc_pd(
            ctx,
            &mut *pd,
            &mut cmd,
            size_of::<ibv_alloc_pd>(),
            &mut resp,
            size_of::<ib_uverbs_alloc_pd_resp>(),
        )
    };
    if ret != 0 {
        set_errno(ret);
        return ptr::null_mut();
    }
    Box::into_raw(pd)
}

pub(super) unsafe extern "C" fn dealloc_pd(pd: *mut ibv_pd) -> c_int {
    // SAFETY: a live PD of ours.
    let ret = unsafe { ffi::ibv_cmd_dealloc_pd(pd) };
    if ret == 0 {
        // SAFETY: created by `alloc_pd` as a Box; the kernel object is gone.
        drop(unsafe { Box::from_raw(pd) });
    }
    ret
}

// ---------------------------------------------------------------------------------------
// MR

pub(super) unsafe extern "C" fn reg_mr(
    pd: *mut ibv_pd,
    addr: *mut c_void,
    length: usize,
    hca_va: u64,
    access: c_int,
) -> *mut ibv_mr {
    // SAFETY: verbs_mr is plain data.
    let mut mr: Box<verbs_mr> = unsafe { zeroed_box() };
    let mut cmd = ibv_reg_mr::default();
    let mut resp = ib_uverbs_reg_mr_resp::default();
    // SAFETY: `pd` is live; buffers as given.
    let ret = unsafe {
        ffi::ibv_cmd_reg_mr(
            pd,
            addr,
            length,
            hca_va,
            access,
            &mut *mr,
            &mut cmd,
            size_of::<ibv_reg_mr>(),
            &mut resp,
            size_of::<ib_uverbs_reg_mr_resp>(),
        )
    };
    if ret != 0 {
        set_errno(ret);
        return ptr::null_mut();
    }
    // `ibv_mr` is the first field of `verbs_mr`.
    Box::into_raw(mr).cast()
}

pub(super) unsafe extern "C" fn dereg_mr(vmr: *mut verbs_mr) -> c_int {
    // SAFETY: a live MR of ours.
    let ret = unsafe { ffi::ibv_cmd_dereg_mr(vmr) };
    if ret == 0 {
        // SAFETY: created by `reg_mr` as a Box<verbs_mr>.
        drop(unsafe { Box::from_raw(vmr) });
    }
    ret
}

// ---------------------------------------------------------------------------------------
// CQ

/// The provider's CQ.
#[repr(C)]
pub struct RrxeCq {
    pub ibcq: ibv_cq,
    /// Set once the queue is mapped.
    pub cq: Option<Mutex<CompletionQueue<MappedQueue>>>,
}

pub(super) unsafe extern "C" fn create_cq(
    ctx: *mut ibv_context,
    cqe: c_int,
    channel: *mut ibv_comp_channel,
    comp_vector: c_int,
) -> *mut ibv_cq {
    // SAFETY: ibv_cq is plain data and `None` is all-zero.
    let mut cq: Box<RrxeCq> = unsafe { zeroed_box() };
    let mut cmd = ibv_create_cq::default();
    let mut resp = urrxe_create_cq_resp::new();
    // SAFETY: `ctx` is live; buffers as given; the response is a DECLARE_DRV_CMD layout.
    let ret = unsafe {
        ffi::ibv_cmd_create_cq(
            ctx,
            cqe,
            channel,
            comp_vector,
            &mut cq.ibcq,
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
    // SAFETY: `ctx` is live.
    let fd = unsafe { (*ctx).cmd_fd };
    match MappedQueue::map(fd, &resp.drv_payload.cq) {
        Ok(q) => {
            cq.cq = Some(Mutex::new(CompletionQueue::new(q)));
            Box::into_raw(cq).cast()
        }
        Err(e) => {
            // SAFETY: the CQ was just created and nobody else knows it.
            unsafe { ffi::ibv_cmd_destroy_cq(&mut cq.ibcq) };
            set_errno(map_errno(e));
            ptr::null_mut()
        }
    }
}

pub(super) unsafe extern "C" fn destroy_cq(ibcq: *mut ibv_cq) -> c_int {
    // SAFETY: a live CQ of ours.
    let ret = unsafe { ffi::ibv_cmd_destroy_cq(ibcq) };
    if ret == 0 {
        // SAFETY: created by `create_cq` as a Box<RrxeCq>; dropping unmaps the queue.
        drop(unsafe { Box::from_raw(ibcq.cast::<RrxeCq>()) });
    }
    ret
}

pub(super) unsafe extern "C" fn poll_cq(ibcq: *mut ibv_cq, num: c_int, wc: *mut ibv_wc) -> c_int {
    // SAFETY: a live CQ of ours (shared: other threads may poll it too, hence the mutex).
    let cq = unsafe { &*ibcq.cast::<RrxeCq>() };
    let Some(q) = cq.cq.as_ref() else {
        return -1;
    };
    if num <= 0 || wc.is_null() {
        return 0;
    }
    // SAFETY: the caller provides `num` writable `ibv_wc`s.
    let out = unsafe { core::slice::from_raw_parts_mut(wc, num as usize) };
    match lock(q).poll(out) {
        Ok(n) => n as c_int,
        Err(_) => -1,
    }
}

pub(super) unsafe extern "C" fn req_notify_cq(ibcq: *mut ibv_cq, solicited_only: c_int) -> c_int {
    // SAFETY: a live CQ of ours.
    unsafe { ffi::ibv_cmd_req_notify_cq(ibcq, solicited_only) }
}

// ---------------------------------------------------------------------------------------
// QP

/// The provider's QP.
#[repr(C)]
pub struct RrxeQp {
    pub ibqp: ibv_qp,
    pub sq: Option<Mutex<SendQueue<MappedQueue>>>,
    /// `None` with an SRQ.
    pub rq: Option<Mutex<RecvQueue<MappedQueue>>>,
}

fn transport(qp_type: c_int) -> Option<Transport> {
    match qp_type {
        IBV_QPT_RC => Some(Transport::Rc),
        IBV_QPT_UC => Some(Transport::Uc),
        IBV_QPT_UD => Some(Transport::Ud),
        _ => None,
    }
}

pub(super) unsafe extern "C" fn create_qp(
    pd: *mut ibv_pd,
    attr: *mut ibv_qp_init_attr,
) -> *mut ibv_qp {
    // SAFETY: the caller passes a live init attr.
    let Some(t) = transport(unsafe { (*attr).qp_type }) else {
        set_errno(libc::EOPNOTSUPP);
        return ptr::null_mut();
    };
    // SAFETY: ibv_qp is plain data and `None`s are all-zero.
    let mut qp: Box<RrxeQp> = unsafe { zeroed_box() };
    let mut cmd = ibv_create_qp::default();
    let mut resp = urrxe_create_qp_resp::new();
    // SAFETY: `pd` and `attr` are live; buffers as given.
    let ret = unsafe {
        ffi::ibv_cmd_create_qp(
            pd,
            &mut qp.ibqp,
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
    let drv = resp.drv_payload;
    let setup = || -> Result<_, MapError> {
        let sq = MappedQueue::map(fd, &drv.sq)?;
        let rq = if has_srq || drv.rq.mmap_size == 0 {
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
            qp.sq = Some(Mutex::new(SendQueue::new(sq, lim)));
            qp.rq = rq.map(|q| Mutex::new(RecvQueue::new(q, cap.max_recv_sge)));
            Box::into_raw(qp).cast()
        }
        Err(e) => {
            // SAFETY: the QP was just created and nobody else knows it.
            unsafe { ffi::ibv_cmd_destroy_qp(&mut qp.ibqp) };
            set_errno(map_errno(e));
            ptr::null_mut()
        }
    }
}

pub(super) unsafe extern "C" fn query_qp(
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_attr,
    mask: c_int,
    init_attr: *mut ibv_qp_init_attr,
) -> c_int {
    let mut cmd = ibv_query_qp::default();
    // SAFETY: all pointers from the caller; `cmd` is a live buffer of that size.
    unsafe {
        ffi::ibv_cmd_query_qp(
            qp,
            attr,
            mask,
            init_attr,
            &mut cmd,
            size_of::<ibv_query_qp>(),
        )
    }
}

pub(super) unsafe extern "C" fn modify_qp(
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_attr,
    mask: c_int,
) -> c_int {
    let mut cmd = ibv_modify_qp::default();
    // SAFETY: all pointers from the caller; `cmd` is a live buffer of that size.
    unsafe { ffi::ibv_cmd_modify_qp(qp, attr, mask, &mut cmd, size_of::<ibv_modify_qp>()) }
}

pub(super) unsafe extern "C" fn destroy_qp(ibqp: *mut ibv_qp) -> c_int {
    // SAFETY: a live QP of ours.
    let ret = unsafe { ffi::ibv_cmd_destroy_qp(ibqp) };
    if ret == 0 {
        // SAFETY: created by `create_qp` as a Box<RrxeQp>; dropping unmaps its queues.
        drop(unsafe { Box::from_raw(ibqp.cast::<RrxeQp>()) });
    }
    ret
}

/// Rings the send doorbell: a POST_SEND with no work requests.
fn doorbell(fd: c_int, qp_handle: u32) -> c_int {
    let mut resp = ib_uverbs_post_send_resp::default();
    let cmd = ibv_post_send {
        hdr: ib_uverbs_cmd_hdr {
            command: IB_USER_VERBS_CMD_POST_SEND,
            in_words: (size_of::<ibv_post_send>() / 4) as u16,
            out_words: (size_of::<ib_uverbs_post_send_resp>() / 4) as u16,
        },
        core_payload: ib_uverbs_post_send {
            response: ptr::addr_of_mut!(resp) as u64,
            qp_handle,
            wr_count: 0,
            sge_count: 0,
            wqe_size: IB_UVERBS_SEND_WR_SIZE,
        },
    };
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
unsafe fn sges(list: *const ibv_sge, n: c_int, buf: &mut [Sge; 32]) -> Option<&[Sge]> {
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
fn inline_capable(opcode: u32) -> bool {
    matches!(
        opcode,
        RRXE_WR_SEND
            | RRXE_WR_SEND_WITH_IMM
            | RRXE_WR_SEND_WITH_INV
            | RRXE_WR_RDMA_WRITE
            | RRXE_WR_RDMA_WRITE_WITH_IMM
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
    let opcode = wr.opcode as u32;
    let ud = sq.limits().transport == Transport::Ud;
    let mut d = SendWr {
        wr_id: wr.wr_id,
        opcode,
        send_flags: wr.send_flags,
        ex: wr.imm,
        ..Default::default()
    };
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
        opcode,
        RRXE_WR_ATOMIC_CMP_AND_SWP | RRXE_WR_ATOMIC_FETCH_AND_ADD
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
    if wr.send_flags & RRXE_SEND_INLINE != 0 && inline_capable(opcode) {
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
        d.send_flags &= !RRXE_SEND_INLINE;
        sq.stage(&d, list, None)
    }
}

pub(super) unsafe extern "C" fn post_send(
    ibqp: *mut ibv_qp,
    mut wr: *mut ibv_send_wr,
    bad_wr: *mut *mut ibv_send_wr,
) -> c_int {
    // SAFETY: a live QP of ours.
    let qp = unsafe { &*ibqp.cast::<RrxeQp>() };
    let Some(sq) = qp.sq.as_ref() else {
        return libc::EINVAL;
    };
    let mut sq = lock(sq);
    let mut err = 0;
    while !wr.is_null() {
        // SAFETY: the caller's list of valid work requests.
        let w = unsafe { &*wr };
        // SAFETY: as above.
        if let Err(e) = unsafe { stage_send(&mut sq, w) } {
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
        let fd = unsafe { (*qp.ibqp.context).cmd_fd };
        let db = doorbell(fd, qp.ibqp.handle);
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
unsafe fn post_recv_list(
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

pub(super) unsafe extern "C" fn post_recv(
    ibqp: *mut ibv_qp,
    wr: *mut ibv_recv_wr,
    bad_wr: *mut *mut ibv_recv_wr,
) -> c_int {
    // SAFETY: a live QP of ours.
    let qp = unsafe { &*ibqp.cast::<RrxeQp>() };
    match qp.rq.as_ref() {
        // SAFETY: the caller's list and out pointer.
        Some(rq) => unsafe { post_recv_list(rq, wr, bad_wr) },
        None => {
            if !bad_wr.is_null() {
                // SAFETY: the caller's out pointer.
                unsafe { *bad_wr = wr };
            }
            libc::EINVAL
        }
    }
}

// ---------------------------------------------------------------------------------------
// SRQ

/// The provider's SRQ.
#[repr(C)]
pub struct RrxeSrq {
    pub ibsrq: ibv_srq,
    pub rq: Option<Mutex<RecvQueue<MappedQueue>>>,
}

pub(super) unsafe extern "C" fn create_srq(
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

pub(super) unsafe extern "C" fn modify_srq(
    srq: *mut ibv_srq,
    attr: *mut ibv_srq_attr,
    mask: c_int,
) -> c_int {
    let mut cmd = ibv_modify_srq::default();
    // SAFETY: caller's pointers; `cmd` is a live buffer of that size.
    unsafe { ffi::ibv_cmd_modify_srq(srq, attr, mask, &mut cmd, size_of::<ibv_modify_srq>()) }
}

pub(super) unsafe extern "C" fn query_srq(srq: *mut ibv_srq, attr: *mut ibv_srq_attr) -> c_int {
    let mut cmd = ibv_query_srq::default();
    // SAFETY: caller's pointers; `cmd` is a live buffer of that size.
    unsafe { ffi::ibv_cmd_query_srq(srq, attr, &mut cmd, size_of::<ibv_query_srq>()) }
}

pub(super) unsafe extern "C" fn destroy_srq(ibsrq: *mut ibv_srq) -> c_int {
    // SAFETY: a live SRQ of ours.
    let ret = unsafe { ffi::ibv_cmd_destroy_srq(ibsrq) };
    if ret == 0 {
        // SAFETY: created by `create_srq` as a Box<RrxeSrq>.
        drop(unsafe { Box::from_raw(ibsrq.cast::<RrxeSrq>()) });
    }
    ret
}

pub(super) unsafe extern "C" fn post_srq_recv(
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

// ---------------------------------------------------------------------------------------
// AH

/// The provider's AH: UD send WQEs carry `ah_num`.
#[repr(C)]
pub struct RrxeAh {
    pub ibah: ibv_ah,
    pub ah_num: u32,
}

pub(super) unsafe extern "C" fn create_ah(pd: *mut ibv_pd, attr: *mut ibv_ah_attr) -> *mut ibv_ah {
    // SAFETY: plain data.
    let mut ah: Box<RrxeAh> = unsafe { zeroed_box() };
    let mut resp = urrxe_create_ah_resp::new();
    // SAFETY: live `pd`/`attr`; the response buffer is live and of that size.
    let ret = unsafe {
        ffi::ibv_cmd_create_ah(
            pd,
            &mut ah.ibah,
            attr,
            ptr::addr_of_mut!(resp).cast(),
            urrxe_create_ah_resp::size(),
        )
    };
    if ret != 0 {
        set_errno(ret);
        return ptr::null_mut();
    }
    if resp.drv_payload.ah_num == 0 {
        // SAFETY: just created.
        unsafe { ffi::ibv_cmd_destroy_ah(&mut ah.ibah) };
        set_errno(libc::EPROTO);
        return ptr::null_mut();
    }
    ah.ah_num = resp.drv_payload.ah_num;
    Box::into_raw(ah).cast()
}

pub(super) unsafe extern "C" fn destroy_ah(ibah: *mut ibv_ah) -> c_int {
    // SAFETY: a live AH of ours.
    let ret = unsafe { ffi::ibv_cmd_destroy_ah(ibah) };
    if ret == 0 {
        // SAFETY: created by `create_ah` as a Box<RrxeAh>.
        drop(unsafe { Box::from_raw(ibah.cast::<RrxeAh>()) });
    }
    ret
}
