// SPDX-License-Identifier: GPL-2.0
//! Spinlocks the kernel crate of 6.12 lacks: one that disables local interrupts while held
//! (`spin_lock_irqsave`), one that disables bottom halves (`spin_lock_bh`).
//!
//! Completion queues and queue pairs are touched from process context (verbs calls),
//! softirq (packet receive, timers) and by kernel consumers that may poll from any context,
//! so their locks must keep interrupts off. The kernel crate of 6.12 only offers plain
//! spinlocks; this is a [`Backend`] for its generic [`Lock`].

use kernel::sync::lock::{Backend, Lock};

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
