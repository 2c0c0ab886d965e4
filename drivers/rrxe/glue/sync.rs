// SPDX-License-Identifier: GPL-2.0
//! Spinlocks the kernel crate of 6.12 lacks: one that disables local interrupts while held
//! (`spin_lock_irqsave`), one that disables bottom halves (`spin_lock_bh`).
//!
//! Completion queues and queue pairs are touched from process context (verbs calls),
//! softirq (packet receive, timers) and by kernel consumers that may poll from any context,
//! so their locks must keep interrupts off. The kernel crate of 6.12 only offers plain
//! spinlocks; this is a [`Backend`] for its generic [`Lock`].
//!
//! And [`RcuArc`]: an `Arc` published for readers that take no lock (RCU), which the
//! kernel crate of 6.12 has no module for.

use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::sync::lock::{Backend, Lock};
use kernel::sync::{Arc, ArcBorrow};

/// The backend: `spinlock_t` with the saved interrupt flags as guard state.
pub(crate) struct IrqSpinLockBackend;

/// A spinlock taken with interrupts disabled. Create with [`new_irq_spinlock!`].
pub(crate) type IrqSpinLock<T> = Lock<T, IrqSpinLockBackend>;

// SAFETY: the lock is a real spinlock_t initialised with __spin_lock_init; lock/unlock pair
// spin_lock_irqsave/spin_unlock_irqrestore with the flags saved by lock, which provides
// mutual exclusion.
unsafe impl Backend for IrqSpinLockBackend {
    type State = kernel::bindings::spinlock_t;
    type GuardState = kernel::ffi::c_ulong;

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const kernel::ffi::c_char,
        key: *mut kernel::bindings::lock_class_key,
    ) {
        // SAFETY: the caller guarantees ptr is valid for writes and name/key live forever.
        unsafe { kernel::bindings::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: the caller guarantees the lock was initialised.
        unsafe { super::bindings::rrxe_glue_spin_lock_irqsave(ptr.cast()) }
    }

    unsafe fn unlock(ptr: *mut Self::State, flags: &Self::GuardState) {
        // SAFETY: the caller owns the lock; flags come from the matching lock().
        unsafe { super::bindings::rrxe_glue_spin_unlock_irqrestore(ptr.cast(), *flags) }
    }

    #[cfg(rrxe_have_lock_backend_try_lock)]
    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState> {
        let mut flags = 0;
        // SAFETY: the caller guarantees the lock was initialised; flags is a local.
        unsafe { super::bindings::rrxe_glue_spin_trylock_irqsave(ptr.cast(), &mut flags) }
            .then_some(flags)
    }

    #[cfg(rrxe_have_lock_backend_assert_is_held)]
    unsafe fn assert_is_held(ptr: *mut Self::State) {
        // SAFETY: the caller guarantees the lock was initialised.
        unsafe { super::bindings::rrxe_glue_spin_assert_held(ptr.cast()) }
    }
}

/// Creates an [`IrqSpinLock`] initialiser with its own lockdep class.
macro_rules! new_irq_spinlock {
    ($inner:expr, $name:literal) => {
        $crate::glue::sync::IrqSpinLock::new(
            $inner,
            kernel::c_str!($name),
            kernel::static_lock_class!(),
        )
    };
}
pub(crate) use new_irq_spinlock;

/// The backend of [`BhSpinLock`]: `spinlock_t` taken with bottom halves disabled.
pub(crate) struct BhSpinLockBackend;

/// A spinlock taken with softirqs disabled on the local CPU (`spin_lock_bh`). For state
/// used from process context and softirq but never from hard interrupts, where the holder
/// may transmit packets (which needs interrupts on). Create with [`new_bh_spinlock!`].
pub(crate) type BhSpinLock<T> = Lock<T, BhSpinLockBackend>;

// SAFETY: the lock is a real spinlock_t initialised with __spin_lock_init; lock/unlock pair
// spin_lock_bh/spin_unlock_bh, which provides mutual exclusion.
unsafe impl Backend for BhSpinLockBackend {
    type State = kernel::bindings::spinlock_t;
    type GuardState = ();

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const kernel::ffi::c_char,
        key: *mut kernel::bindings::lock_class_key,
    ) {
        // SAFETY: the caller guarantees ptr is valid for writes and name/key live forever.
        unsafe { kernel::bindings::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: the caller guarantees the lock was initialised.
        unsafe { super::bindings::rrxe_glue_spin_lock_bh(ptr.cast()) }
    }

    unsafe fn unlock(ptr: *mut Self::State, _: &Self::GuardState) {
        // SAFETY: the caller owns the lock, taken by lock() above.
        unsafe { super::bindings::rrxe_glue_spin_unlock_bh(ptr.cast()) }
    }

    #[cfg(rrxe_have_lock_backend_try_lock)]
    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState> {
        // SAFETY: the caller guarantees the lock was initialised.
        unsafe { super::bindings::rrxe_glue_spin_trylock_bh(ptr.cast()) }.then_some(())
    }

    #[cfg(rrxe_have_lock_backend_assert_is_held)]
    unsafe fn assert_is_held(ptr: *mut Self::State) {
        // SAFETY: the caller guarantees the lock was initialised.
        unsafe { super::bindings::rrxe_glue_spin_assert_held(ptr.cast()) }
    }
}

/// Creates a [`BhSpinLock`] initialiser with its own lockdep class.
macro_rules! new_bh_spinlock {
    ($inner:expr, $name:literal) => {
        $crate::glue::sync::BhSpinLock::new(
            $inner,
            kernel::c_str!($name),
            kernel::static_lock_class!(),
        )
    };
}
pub(crate) use new_bh_spinlock;

/// Waits until every CPU has left the read-side sections (and bottom-half-disabled regions,
/// softirq included) that were running when it was called. Process context only.
pub(crate) fn synchronize_rcu() {
    // SAFETY: no preconditions beyond process context, which the callers guarantee.
    unsafe { super::bindings::rrxe_glue_synchronize_rcu() }
}

/// A slot holding an `Arc<T>` or nothing, read without a lock: [`RcuArc::get`] clones what
/// it holds inside an RCU read-side section. Writers (publish, take) must be serialised by
/// the caller (its own lock). What [`RcuArc::take`] removes comes back as a [`Retired`],
/// which hands out or drops that reference only after a grace period, so that a reader
/// that loaded the pointer before the removal has cloned it by then.
///
/// INVARIANT: `ptr` is null or comes from `Arc::into_raw`, and the slot owns that reference
/// until `take` moves it into a `Retired`.
pub(crate) struct RcuArc<T> {
    ptr: AtomicPtr<T>,
}

// SAFETY: the slot is an `Arc<T>` shared between CPUs: as `Arc<T>` is Send and Sync when T
// is Send + Sync.
unsafe impl<T: Send + Sync> Send for RcuArc<T> {}
// SAFETY: as above; `get` clones on any CPU, which `Arc<T>: Sync` allows.
unsafe impl<T: Send + Sync> Sync for RcuArc<T> {}

impl<T> RcuArc<T> {
    /// An empty slot.
    pub(crate) const fn new() -> Self {
        // INVARIANT: null.
        RcuArc {
            ptr: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    /// A new reference to what the slot holds, if anything. Any context.
    pub(crate) fn get(&self) -> Option<Arc<T>> {
        let _rcu = super::net::RcuRead::lock();
        let p = self.ptr.load(Ordering::Acquire);
        if p.is_null() {
            return None;
        }
        // p's reference is still counted: the slot owns it, or a Retired that `take` made
        // since, and a Retired drops it only after a grace period that began after the
        // pointer left the slot, so after this read-side section (begun before our load).
        // SAFETY: p came from Arc::into_raw (INVARIANT) and is counted (above); the borrow
        // lives only until the clone below.
        let b = unsafe { ArcBorrow::from_raw(p) };
        Some(b.into())
    }

    /// Stores `v`; returns what the slot held (retired). Callers serialise publish and take.
    pub(crate) fn publish(&self, v: Arc<T>) -> Retired<T> {
        // INVARIANT: the pointer comes from Arc::into_raw; its reference is the slot's now.
        let old = self.ptr.swap(Arc::into_raw(v).cast_mut(), Ordering::AcqRel);
        Retired::of(old)
    }

    /// Empties the slot; returns what it held (retired). Callers serialise publish and take.
    pub(crate) fn take(&self) -> Retired<T> {
        Retired::of(self.ptr.swap(core::ptr::null_mut(), Ordering::AcqRel))
    }
}

impl<T> Drop for RcuArc<T> {
    fn drop(&mut self) {
        let p = *self.ptr.get_mut();
        if !p.is_null() {
            // SAFETY: the slot's own reference (INVARIANT); `&mut self`: no reader can reach
            // the slot any more (a reader borrows it, so it cannot outlive the slot).
            drop(unsafe { Arc::from_raw(p) });
        }
    }
}

/// A reference an [`RcuArc`] gave up: lockless readers may still be cloning it until a grace
/// period has passed. [`Retired::wait`] waits for one and hands the reference out; dropped
/// unwaited, it waits too (both: process context only, they sleep).
///
/// INVARIANT: `ptr` is null or a pointer from `Arc::into_raw` whose reference this owns.
pub(crate) struct Retired<T> {
    ptr: *const T,
}

impl<T> Retired<T> {
    fn of(p: *mut T) -> Self {
        Retired { ptr: p }
    }

    /// Nothing retired.
    pub(crate) const fn none() -> Self {
        // INVARIANT: null.
        Retired {
            ptr: core::ptr::null(),
        }
    }

    /// Waits for a grace period (always, even if nothing was retired: no reader that began
    /// before the removal is still running afterwards), then hands out the reference.
    /// Process context only.
    pub(crate) fn wait(mut self) -> Option<Arc<T>> {
        synchronize_rcu();
        let p = core::mem::replace(&mut self.ptr, core::ptr::null());
        // SAFETY: the reference this owned (INVARIANT), a grace period after it left its slot.
        (!p.is_null()).then(|| unsafe { Arc::from_raw(p) })
    }
}

impl<T> Drop for Retired<T> {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            synchronize_rcu();
            // SAFETY: the reference this owns (INVARIANT), a grace period after it left its
            // slot.
            drop(unsafe { Arc::from_raw(self.ptr) });
        }
    }
}
