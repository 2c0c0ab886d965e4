// SPDX-License-Identifier: GPL-2.0
//! Deferred work (a `work_struct` on the high-priority workqueue) and timers (`timer_list`), each
//! calling a method of a context object.
//!
//! Lifetime rule, enforced by construction: a [`Work`] or [`Timer`] is created for a
//! context `T` that is pinned and outlives it (the context owns it), and dropping it waits
//! for a running callback. Owners must stop every source that re-queues work (timers first,
//! then work) before dropping the context — see `Drop` order notes where they are used.

// Used by the QP datapath (issue #4).
#![allow(dead_code)]

use super::bindings;
use core::ffi::c_void;
use core::ptr::NonNull;
use kernel::prelude::*;

/// What a [`Work`] runs (process context).
pub(crate) trait WorkTarget: Sync {
    /// Runs the deferred work.
    fn run_work(&self);
}

/// What a [`Timer`] runs (softirq context: must not sleep).
pub(crate) trait TimerTarget: Sync {
    /// The timer expired.
    fn run_timer(&self, id: usize);
}

/// A work item bound to a context.
pub(crate) struct Work(NonNull<bindings::rrxe_work>);

// SAFETY: queue_work/cancel_work_sync may be called from any thread.
unsafe impl Send for Work {}
// SAFETY: as above.
unsafe impl Sync for Work {}

unsafe extern "C" fn work_trampoline<T: WorkTarget>(ctx: *mut c_void) {
    // SAFETY: ctx is the `&T` given to Work::new, alive while the Work exists (the contract
    // of Work::new), and the callback only runs while it exists.
    unsafe { (*ctx.cast::<T>()).run_work() };
}

impl Work {
    /// A work item running `ctx.run_work()`.
    ///
    /// # Safety
    /// `ctx` must be initialised before the work is first queued, and stay at its address and
    /// alive until the returned `Work` is dropped.
    pub(crate) unsafe fn new<T: WorkTarget>(ctx: *const T) -> Result<Self> {
        let p = ctx as *mut c_void;
        // SAFETY: plain allocation; the trampoline matches T.
        let w = unsafe { bindings::rrxe_glue_work_new(Some(work_trampoline::<T>), p) };
        NonNull::new(w).map(Work).ok_or(ENOMEM)
    }

    /// Waits for a running instance and cancels a queued one. Process context only.
    pub(crate) fn cancel_sync(&self) {
        // SAFETY: live work item.
        unsafe { bindings::rrxe_glue_work_cancel_sync(self.0.as_ptr()) };
    }

    /// Queues the work (no-op if already queued).
    pub(crate) fn queue(&self) {
        // SAFETY: live work item.
        unsafe { bindings::rrxe_glue_work_queue(self.0.as_ptr()) };
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        // SAFETY: waits for a running callback, then frees; never used again.
        unsafe { bindings::rrxe_glue_work_free(self.0.as_ptr()) };
    }
}

/// A timer bound to a context.
pub(crate) struct Timer {
    raw: NonNull<bindings::rrxe_timer>,
}

// SAFETY: mod_timer/timer_delete may be called from any thread.
unsafe impl Send for Timer {}
// SAFETY: as above.
unsafe impl Sync for Timer {}

unsafe extern "C" fn timer_trampoline<T: TimerTarget>(ctx: *mut c_void, id: kernel::ffi::c_ulong) {
    // SAFETY: ctx is the `&T` given to Timer::new, alive while the Timer exists (the contract
    // of Timer::new), and the callback only runs while it exists.
    unsafe { (*ctx.cast::<T>()).run_timer(id as usize) };
}

impl Timer {
    /// A timer running `ctx.run_timer(id)`.
    ///
    /// # Safety
    /// `ctx` must be initialised before the timer is first armed, and stay at its address and
    /// alive until the returned `Timer` is dropped.
    pub(crate) unsafe fn new<T: TimerTarget>(ctx: *const T, id: usize) -> Result<Self> {
        let p = ctx as *mut c_void;
        // SAFETY: plain allocation; the trampoline matches T.
        let t = unsafe { bindings::rrxe_glue_timer_new(Some(timer_trampoline::<T>), p, id as _) };
        NonNull::new(t).map(|raw| Timer { raw }).ok_or(ENOMEM)
    }

    /// (Re)arms the timer `usecs` from now.
    pub(crate) fn arm(&self, usecs: u64) {
        // SAFETY: live timer.
        unsafe { bindings::rrxe_glue_timer_arm(self.raw.as_ptr(), usecs) };
    }

    /// Stops the timer for good: waits for a running callback; later arms do nothing.
    /// Process context only.
    pub(crate) fn shutdown(&self) {
        // SAFETY: live timer; timer_shutdown_sync may be repeated (Drop does it again).
        unsafe { bindings::rrxe_glue_timer_shutdown(self.raw.as_ptr()) };
    }

    /// Cancels a pending expiry (a running callback may still finish).
    pub(crate) fn cancel(&self) {
        // SAFETY: live timer.
        unsafe { bindings::rrxe_glue_timer_cancel(self.raw.as_ptr()) };
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        // SAFETY: shuts the timer down for good (waits for a running callback), then frees.
        unsafe { bindings::rrxe_glue_timer_free(self.raw.as_ptr()) };
    }
}
