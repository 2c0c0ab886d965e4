//! The verbs objects and the data path: thin `extern "C"` shells over `crate::wq` and the
//! `ibv_cmd_*` helpers of libibverbs. Each object is a `Box` whose first field is the
//! libibverbs struct handed out, so the pointer libibverbs gives back is the box.
//!
//! Contract of every op here (libibverbs' and the verbs API's): object pointers are ones
//! this provider created and has not destroyed; work request lists, SGE arrays and the
//! memory of inline SGEs are valid for the duration of the call.

use core::cell::UnsafeCell;
use core::ffi::{c_int, c_uint, c_void};
use core::mem::size_of;
use core::ptr;
use std::sync::Mutex;

use super::driver::{verbs_cq, verbs_mr, verbs_qp, VERBS_QP_EX};
use super::ffi;
use super::queue::{MapError, MappedQueue};
use super::rrxe::*;
use super::uverbs::*;
use super::verbs::*;
use crate::wq::{CqRing, QpState, RecvQueue, SendQueue, WrBatch};
use crate::wqe::{MwBind, SendLimits, SendWr, Sge, Transport, WrError};

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

pub(super) unsafe extern "C" fn rereg_mr(
    vmr: *mut verbs_mr,
    flags: c_int,
    pd: *mut ibv_pd,
    addr: *mut c_void,
    length: usize,
    access: c_int,
) -> c_int {
    let mut cmd = ibv_rereg_mr::default();
    let mut resp = ib_uverbs_rereg_mr_resp::default();
    // SAFETY: libibverbs passes a live MR of ours and checked arguments; buffers as given.
    // The new keys land in the MR.
    unsafe {
        ffi::ibv_cmd_rereg_mr(
            vmr,
            flags as u32,
            addr,
            length,
            addr as u64,
            access,
            pd,
            &mut cmd,
            size_of::<ibv_rereg_mr>(),
            &mut resp,
            size_of::<ib_uverbs_rereg_mr_resp>(),
        )
    }
}

// ---------------------------------------------------------------------------------------
// CQ

/// A lock held from one FFI call to another (`ibv_start_poll` .. `ibv_end_poll`,
/// `ibv_wr_start` .. `ibv_wr_complete`), which no Rust guard can span: a plain pthread mutex.
pub struct SessionLock(UnsafeCell<libc::pthread_mutex_t>);

// SAFETY: a pthread mutex is made to be shared between threads.
unsafe impl Sync for SessionLock {}

impl SessionLock {
    /// Puts the lock in its initial state (it was allocated zeroed; not yet shared).
    fn init(&mut self) {
        *self.0.get_mut() = libc::PTHREAD_MUTEX_INITIALIZER;
    }

    fn lock(&self) {
        // SAFETY: an initialised mutex that does not move (it lives in a Box).
        unsafe { libc::pthread_mutex_lock(self.0.get()) };
    }

    /// Releases the lock; the caller holds it (the verbs call order guarantees it).
    fn unlock(&self) {
        // SAFETY: as in `lock`; unlocking a normal mutex the thread holds.
        unsafe { libc::pthread_mutex_unlock(self.0.get()) };
    }
}

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
const CQ_EX_WC_FLAGS: u64 = IBV_WC_EX_WITH_BYTE_LEN
    | IBV_WC_EX_WITH_IMM
    | IBV_WC_EX_WITH_QP_NUM
    | IBV_WC_EX_WITH_SRC_QP
    | IBV_WC_EX_WITH_SLID
    | IBV_WC_EX_WITH_SL
    | IBV_WC_EX_WITH_DLID_PATH_BITS;

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

pub(super) unsafe extern "C" fn create_cq(
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

pub(super) unsafe extern "C" fn create_cq_ex(
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
        ffi::ibv_cmd_create_cq_ex(
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
    let x = &mut cq.vcq.cq_ex;
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

pub(super) unsafe extern "C" fn resize_cq(ibcq: *mut ibv_cq, cqe: c_int) -> c_int {
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

pub(super) unsafe extern "C" fn destroy_cq(ibcq: *mut ibv_cq) -> c_int {
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

pub(super) unsafe extern "C" fn poll_cq(ibcq: *mut ibv_cq, num: c_int, wc: *mut ibv_wc) -> c_int {
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
cq_reader!(cq_read_opcode -> c_int, |w| w.opcode);
cq_reader!(cq_read_vendor_err -> u32, |w| w.vendor_err);
cq_reader!(cq_read_byte_len -> u32, |w| w.byte_len);
cq_reader!(cq_read_imm_data -> u32, |w| w.imm);
cq_reader!(cq_read_qp_num -> u32, |w| w.qp_num);
cq_reader!(cq_read_src_qp -> u32, |w| w.src_qp);
cq_reader!(cq_read_wc_flags -> c_uint, |w| w.wc_flags);
cq_reader!(cq_read_slid -> u32, |w| u32::from(w.slid));
cq_reader!(cq_read_sl -> u8, |w| w.sl);
cq_reader!(cq_read_dlid_path_bits -> u8, |w| w.dlid_path_bits);

pub(super) unsafe extern "C" fn req_notify_cq(ibcq: *mut ibv_cq, solicited_only: c_int) -> c_int {
    // SAFETY: a live CQ of ours.
    unsafe { ffi::ibv_cmd_req_notify_cq(ibcq, solicited_only) }
}

// ---------------------------------------------------------------------------------------
// QP

/// A QP's send side: the queue and the extended-API batch being built on it.
pub struct Sq {
    q: SendQueue<MappedQueue>,
    batch: WrBatch,
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
    send_ops: u64,
    /// Held from `ibv_wr_start` to `ibv_wr_complete`/`ibv_wr_abort`, and by `ibv_post_send`
    /// and `ibv_bind_mw`, so that a legacy post never lands in (or publishes part of) an
    /// open batch. Taken before `sq`.
    session: SessionLock,
    /// The state the QP's own modify/query calls reported (see [`QpState`]: why that is
    /// enough for posting).
    state: QpState,
}

impl RrxeQp {
    fn ibqp(&self) -> &ibv_qp {
        &self.vqp.qp_ex.qp_base
    }
}

fn transport(qp_type: c_int) -> Option<Transport> {
    match qp_type {
        IBV_QPT_RC => Some(Transport::Rc),
        IBV_QPT_UC => Some(Transport::Uc),
        IBV_QPT_UD => Some(Transport::Ud),
        _ => None,
    }
}

/// The extended-API operations each transport can do here.
fn send_ops_for(t: Transport) -> u64 {
    let send = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
    match t {
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
        }
    }
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

pub(super) unsafe extern "C" fn create_qp(
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

pub(super) unsafe extern "C" fn create_qp_ex(
    ctx: *mut ibv_context,
    attr: *mut ibv_qp_init_attr_ex,
) -> *mut ibv_qp {
    if attr.is_null() {
        set_errno(libc::EINVAL);
        return ptr::null_mut();
    }
    // SAFETY: the caller's live attributes.
    let a = unsafe { &mut *attr };
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
    let saved_mask = a.comp_mask;
    a.comp_mask &= !IBV_QP_INIT_ATTR_CREATE_FLAGS;
    // SAFETY: as in create_qp.
    let mut qp: Box<RrxeQp> = unsafe { zeroed_box() };
    let mut cmd = ibv_create_qp::default();
    let mut resp = urrxe_create_qp_resp::new();
    // SAFETY: `ctx` and `attr` are live; buffers as given.
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
        set_errno(ret);
        return ptr::null_mut();
    }
    if send_ops != 0 {
        qp.send_ops = send_ops;
        qp.vqp.comp_mask |= VERBS_QP_EX;
        let x = &mut qp.vqp.qp_ex;
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
    }
    // SAFETY: `ctx` is live.
    let fd = unsafe { (*ctx).cmd_fd };
    finish_qp(fd, qp, t, a.cap, !a.srq.is_null(), &resp.drv_payload)
}

// --- the extended send API (ibv_wr_*) ---

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
unsafe fn wr_begin(qpx: *mut ibv_qp_ex, op: u64, mut wr: SendWr) {
    // SAFETY: per the contract.
    let (qp, wr_id, flags) = unsafe { (our_qp(qpx), (*qpx).wr_id, (*qpx).wr_flags) };
    wr.wr_id = wr_id;
    // Inline data comes from ibv_wr_set_inline_data*, not from the flag.
    wr.send_flags = flags & !RRXE_SEND_INLINE;
    let allowed = qp.send_ops & op != 0;
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
        opcode: RRXE_WR_SEND,
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_SEND, wr) };
}

unsafe extern "C" fn wr_send_imm(qpx: *mut ibv_qp_ex, imm: u32) {
    let wr = SendWr {
        opcode: RRXE_WR_SEND_WITH_IMM,
        ex: imm,
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_SEND_WITH_IMM, wr) };
}

unsafe extern "C" fn wr_send_inv(qpx: *mut ibv_qp_ex, rkey: u32) {
    let wr = SendWr {
        opcode: RRXE_WR_SEND_WITH_INV,
        ex: rkey,
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_SEND_WITH_INV, wr) };
}

unsafe extern "C" fn wr_rdma_write(qpx: *mut ibv_qp_ex, rkey: u32, addr: u64) {
    let wr = SendWr {
        opcode: RRXE_WR_RDMA_WRITE,
        rkey,
        remote_addr: addr,
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_RDMA_WRITE, wr) };
}

unsafe extern "C" fn wr_rdma_write_imm(qpx: *mut ibv_qp_ex, rkey: u32, addr: u64, imm: u32) {
    let wr = SendWr {
        opcode: RRXE_WR_RDMA_WRITE_WITH_IMM,
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
        opcode: RRXE_WR_RDMA_READ,
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
        opcode: RRXE_WR_ATOMIC_CMP_AND_SWP,
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
        opcode: RRXE_WR_ATOMIC_FETCH_AND_ADD,
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
        opcode: RRXE_WR_LOCAL_INV,
        ex: rkey,
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_LOCAL_INV, wr) };
}

/// The binding of a BIND_MW request of a type 2 window. `None` when the window is missing
/// or of type 1 (bound with `ibv_bind_mw`, not with a work request).
///
/// # Safety
/// `mw` is null or a live MW; `info` is null or readable, its `mr` null or a live MR.
unsafe fn type2_binding(
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
        opcode: RRXE_WR_BIND_MW,
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

unsafe extern "C" fn wr_set_xrc_srqn(qpx: *mut ibv_qp_ex, _srqn: u32) {
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_unsupported(qpx) };
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
        opcode: RRXE_WR_ATOMIC_WRITE,
        rkey,
        remote_addr: addr,
        // The 8 bytes in memory order (the ABI's encoding of the value).
        compare_add: u64::from_ne_bytes(bytes),
        ..Default::default()
    };
    // SAFETY: libibverbs passes our QP.
    unsafe { wr_begin(qpx, IBV_QP_EX_WITH_ATOMIC_WRITE, wr) };
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

pub(super) unsafe extern "C" fn query_qp(
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
    if ret == 0 && mask & IBV_QP_STATE != 0 {
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

pub(super) unsafe extern "C" fn modify_qp(
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_attr,
    mask: c_int,
) -> c_int {
    let mut cmd = ibv_modify_qp::default();
    // SAFETY: all pointers from the caller; `cmd` is a live buffer of that size.
    let ret =
        unsafe { ffi::ibv_cmd_modify_qp(qp, attr, mask, &mut cmd, size_of::<ibv_modify_qp>()) };
    if ret == 0 && mask & IBV_QP_STATE != 0 {
        // SAFETY: a live QP of ours; `attr` is the caller's `ibv_qp_attr`.
        unsafe { (*qp.cast::<RrxeQp>()).state.set(qp_attr_state(attr)) };
    }
    ret
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
    if opcode == RRXE_WR_BIND_MW {
        // SAFETY: a BIND_MW request's active union member is `bind_mw`.
        let b = unsafe { wr.ext.bind_mw };
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

// ---------------------------------------------------------------------------------------
// MW

pub(super) unsafe extern "C" fn alloc_mw(pd: *mut ibv_pd, ty: c_int) -> *mut ibv_mw {
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

pub(super) unsafe extern "C" fn dealloc_mw(mw: *mut ibv_mw) -> c_int {
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
pub(super) unsafe extern "C" fn bind_mw(
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
        opcode: RRXE_WR_BIND_MW,
        send_flags: b.send_flags & !RRXE_SEND_INLINE,
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

pub(super) unsafe extern "C" fn post_send(
    ibqp: *mut ibv_qp,
    wr: *mut ibv_send_wr,
    bad_wr: *mut *mut ibv_send_wr,
) -> c_int {
    // SAFETY: a live QP of ours.
    let qp = unsafe { &*ibqp.cast::<RrxeQp>() };
    let Some(sq) = qp.sq.as_ref() else {
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
