// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The verbs objects and the data path: thin `extern "C"` shells over `crate::wq` and the
//! `ibv_cmd_*` helpers of libibverbs. Each object is a `Box` whose first field is the
//! libibverbs struct handed out, so the pointer libibverbs gives back is the box.
//!
//! Contract of every op here (libibverbs' and the verbs API's): object pointers are ones
//! this provider created and has not destroyed; work request lists, SGE arrays and the
//! memory of inline SGEs are valid for the duration of the call.
//!
//! One file a verbs object: [`pd`], [`mr`], [`mw`], [`cq`], [`qp`] (create, query, modify,
//! destroy), [`post`] (`ibv_post_send`/`ibv_post_recv` and the doorbell), [`qp_ex`] (the
//! `ibv_wr_*` extended send API), [`srq`], [`ah`], [`xrcd`]. Helpers shared by them are here.

use core::cell::UnsafeCell;
use core::ffi::c_int;
use std::sync::Mutex;

use super::queue::MapError;

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

pub mod ah;
pub mod cq;
pub mod mr;
pub mod mw;
pub mod pd;
pub mod post;
pub mod qp;
pub mod qp_ex;
pub mod srq;
pub mod xrcd;
