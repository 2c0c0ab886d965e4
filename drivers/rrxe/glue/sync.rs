// SPDX-License-Identifier: GPL-2.0
//! A spinlock that disables local interrupts while held (`spin_lock_irqsave`).
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
