// SPDX-License-Identifier: GPL-2.0
//! Deferred work (a `work_struct` on the high-priority workqueue, or on the bottom-half one)
//! and timers (`timer_list`), each calling a method of a context object.
//!
//! Lifetime rule, enforced by construction: a [`Work`] or [`Timer`] is created unbound (it
//! runs nothing) and bound by [`new_arc_bound`] to the `Arc`-held context `T` it is a field
//! of, so the context outlives it; dropping it waits for a running callback. Owners must
//! stop every source that re-queues work (timers first, then work) before dropping the
//! context — see `Drop` order notes where they are used.

use super::bindings;
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;

/// The monotonic clock in µs (`ktime_get`; any context but NMI).
pub(crate) fn now_us() -> u64 {
    // SAFETY: ktime_get_ns has no preconditions outside NMI context, where rrxe never runs.
    unsafe { super::bindings::rrxe_glue_ktime_get_ns() / 1000 }
}

/// The CPU this code runs on now: a hint, possibly stale once read (any context).
pub(crate) fn this_cpu() -> u32 {
    // SAFETY: no precondition; raw_smp_processor_id in any context.
    unsafe { bindings::rrxe_glue_this_cpu() }
}

/// Whether this code runs as a softirq (`in_serving_softirq`: the receive path, a
/// bottom-half work item, a timer; not a process that merely has bottom halves off).
pub(crate) fn in_softirq() -> bool {
    // SAFETY: no precondition; reads this CPU's preempt count.
    unsafe { bindings::rrxe_glue_in_serving_softirq() }
}

/// What a [`Work`] runs.
pub(crate) trait WorkTarget: Sync {
    /// Runs the deferred work of a [`Work::new`] item (process context).
    fn run_work(&self);

    /// Runs the deferred work of a [`Work::new_bh`] item (softirq context: must not sleep).
    fn run_bh_work(&self) {}
}

/// What a [`Timer`] runs (softirq context: must not sleep).
pub(crate) trait TimerTarget: Sync {
    /// The timer expired.
    fn run_timer(&self, id: usize);
}

/// The context a source runs, once bound. Heap-allocated so that its address, the C
/// side's callback argument, stays put while the [`Work`] or [`Timer`] moves.
type Target = KBox<AtomicPtr<c_void>>;

fn new_target() -> Result<Target> {
    Ok(KBox::new(
        AtomicPtr::new(core::ptr::null_mut()),
        GFP_KERNEL,
    )?)
}

/// The bound context of a callback's argument, if any.
///
/// # Safety
/// `ctx` is the [`Target`] of a live [`Work`] or [`Timer`] of `T`.
unsafe fn bound<'a, T>(ctx: *mut c_void) -> Option<&'a T> {
    // SAFETY: the Target outlives the C object whose callback passes it (contract).
    let p = unsafe { &*ctx.cast::<AtomicPtr<c_void>>() }.load(Ordering::Acquire);
    // SAFETY: INVARIANT of `bind`: a non-null target is the `T` that owns the source,
    // alive while the source exists (dropping the source waits for this callback).
    unsafe { p.cast::<T>().as_ref() }
}

/// A work item of context `T`.
pub(crate) struct Work<T> {
    raw: NonNull<bindings::rrxe_work>,
    // Dropped after `raw` is freed (Drop::drop runs before the fields are dropped).
    target: Target,
    _t: PhantomData<fn(&T)>,
}

// SAFETY: queue_work/cancel_work_sync may be called from any thread; the target is an atomic.
unsafe impl<T> Send for Work<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Work<T> {}

unsafe extern "C" fn work_trampoline<T: WorkTarget>(ctx: *mut c_void) {
    // SAFETY: ctx is the Target of the Work whose callback this is, alive while it exists.
    if let Some(t) = unsafe { bound::<T>(ctx) } {
        t.run_work();
    }
}

unsafe extern "C" fn bh_work_trampoline<T: WorkTarget>(ctx: *mut c_void) {
    // SAFETY: ctx is the Target of the Work whose callback this is, alive while it exists.
    if let Some(t) = unsafe { bound::<T>(ctx) } {
        t.run_bh_work();
    }
}

impl<T: WorkTarget> Work<T> {
    /// An unbound work item, queued with [`Work::queue_on`], running `T::run_work`:
    /// queueing it runs nothing until [`new_arc_bound`] binds it.
    pub(crate) fn new() -> Result<Self> {
        Self::with(work_trampoline::<T>, false)
    }

    /// An unbound bottom-half work item, queued with [`Work::queue_bh`], running
    /// `T::run_bh_work` in softirq context: queueing it runs nothing until
    /// [`new_arc_bound`] binds it.
    pub(crate) fn new_bh() -> Result<Self> {
        Self::with(bh_work_trampoline::<T>, true)
    }

    fn with(f: unsafe extern "C" fn(*mut c_void), bh: bool) -> Result<Self> {
        let target = new_target()?;
        let p = core::ptr::from_ref::<AtomicPtr<c_void>>(&target)
            .cast_mut()
            .cast();
        // SAFETY: plain allocation; the trampoline (one of the two above) matches T and its
        // argument, the target, lives as long as the work item.
        let w = unsafe {
            if bh {
                bindings::rrxe_glue_work_new_bh(Some(f), p)
            } else {
                bindings::rrxe_glue_work_new(Some(f), p)
            }
        };
        let raw = NonNull::new(w).ok_or(ENOMEM)?;
        Ok(Work {
            raw,
            target,
            _t: PhantomData,
        })
    }
}

impl<T> Work<T> {
    /// Waits for a running instance and cancels a queued one. Process context only.
    pub(crate) fn cancel_sync(&self) {
        // SAFETY: live work item.
        unsafe { bindings::rrxe_glue_work_cancel_sync(self.raw.as_ptr()) };
    }

    /// Queues the work to run on CPU `cpu` (a [`this_cpu`] value), or on this CPU if that
    /// one is not online; no-op if already queued. A work item queued while it runs
    /// elsewhere runs again there, after (the workqueue never runs one item twice at once).
    pub(crate) fn queue_on(&self, cpu: u32) {
        // SAFETY: live work item; the helper accepts any CPU number (it checks it).
        unsafe { bindings::rrxe_glue_work_queue_on(self.raw.as_ptr(), cpu) };
    }

    /// Queues a [`Work::new_bh`] item on this CPU's bottom-half workqueue: it runs once the
    /// softirq pass that queued it ends (bottom halves off: the receive softirq). No-op if
    /// already queued.
    pub(crate) fn queue_bh(&self) {
        // SAFETY: live work item; queue_work on system_bh_wq takes any context.
        unsafe { bindings::rrxe_glue_work_queue_bh(self.raw.as_ptr()) };
    }
}

impl<T> Drop for Work<T> {
    fn drop(&mut self) {
        // SAFETY: waits for a running callback, then frees; never used again.
        unsafe { bindings::rrxe_glue_work_free(self.raw.as_ptr()) };
    }
}

/// A timer of context `T`.
pub(crate) struct Timer<T> {
    raw: NonNull<bindings::rrxe_timer>,
    // Dropped after `raw` is freed.
    target: Target,
    _t: PhantomData<fn(&T)>,
}

// SAFETY: mod_timer/timer_delete may be called from any thread; the target is an atomic.
unsafe impl<T> Send for Timer<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Timer<T> {}

unsafe extern "C" fn timer_trampoline<T: TimerTarget>(ctx: *mut c_void, id: kernel::ffi::c_ulong) {
    // SAFETY: ctx is the Target of the Timer whose callback this is, alive while it exists.
    if let Some(t) = unsafe { bound::<T>(ctx) } {
        t.run_timer(id as usize);
    }
}

impl<T: TimerTarget> Timer<T> {
    /// An unbound timer running `ctx.run_timer(id)` once [`new_arc_bound`] binds it; until
    /// then its expiry runs nothing.
    pub(crate) fn new(id: usize) -> Result<Self> {
        let target = new_target()?;
        let p = core::ptr::from_ref::<AtomicPtr<c_void>>(&target)
            .cast_mut()
            .cast();
        // SAFETY: plain allocation; the trampoline matches T and its argument, the target,
        // lives as long as the timer.
        let t = unsafe { bindings::rrxe_glue_timer_new(Some(timer_trampoline::<T>), p, id as _) };
        let raw = NonNull::new(t).ok_or(ENOMEM)?;
        Ok(Timer {
            raw,
            target,
            _t: PhantomData,
        })
    }
}

impl<T> Timer<T> {
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

impl<T> Drop for Timer<T> {
    fn drop(&mut self) {
        // SAFETY: shuts the timer down for good (waits for a running callback), then frees.
        unsafe { bindings::rrxe_glue_timer_free(self.raw.as_ptr()) };
    }
}

/// Whether `field` (of `n` bytes) lies inside `t`'s memory.
fn inside<T, F>(t: &T, field: &F) -> bool {
    let base = core::ptr::from_ref(t) as usize;
    let at = core::ptr::from_ref(field) as usize;
    at >= base && at + core::mem::size_of::<F>() <= base + core::mem::size_of::<T>()
}

/// Allocates an `Arc<T>` initialised by `init`, then binds the work item and timers that
/// `sources` picks out of it: from then on they run `T`'s callbacks. They must be fields of
/// `T` (EINVAL otherwise, and the new `T` is dropped). Never inlined: `init` runs in this
/// frame, and an initialiser that builds large fields in place (`Qp::new`'s) must not add
/// its temporaries to its caller's frame.
#[inline(never)]
pub(crate) fn new_arc_bound<T, const M: usize, const N: usize>(
    init: impl PinInit<T, Error>,
    sources: impl for<'a> FnOnce(&'a T) -> ([&'a Work<T>; M], &'a [Timer<T>; N]),
) -> Result<Arc<T>>
where
    T: WorkTarget + TimerTarget,
{
    let arc = Arc::pin_init(init, GFP_KERNEL)?;
    let t: &T = &arc;
    let (works, timers) = sources(t);
    if !works.iter().all(|w| inside(t, *w)) || !inside(t, timers) {
        return Err(EINVAL);
    }
    let target = core::ptr::from_ref(t).cast_mut().cast::<c_void>();
    // INVARIANT: each source lies inside `T`, pinned in the Arc: it is dropped (waiting for
    // its running callback) before `T`'s memory is freed, so the target outlives every
    // callback that reads it.
    for w in works {
        w.target.store(target, Ordering::Release);
    }
    for tm in timers {
        tm.target.store(target, Ordering::Release);
    }
    Ok(arc)
}
