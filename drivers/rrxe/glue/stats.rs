// SPDX-License-Identifier: GPL-2.0
//! What the `rdma` tool reads of a device, as the RDMA core holds it: the statistics
//! structures of `rdma statistic` (port counters and per-QP counter objects, `struct
//! rdma_counter`).

use super::{bindings, IbDev};
use core::ffi::CStr;
use core::marker::PhantomData;
use core::ptr::{self, NonNull};

/// `rdma statistic` descriptors for `N` counters.
pub(crate) struct StatDescs<const N: usize>([bindings::rdma_stat_desc; N]);

// SAFETY: immutable after compile-time construction; the pointers are to 'static C strings.
unsafe impl<const N: usize> Sync for StatDescs<N> {}

impl<const N: usize> StatDescs<N> {
    /// Descriptors named `names` (`N` of them).
    pub(crate) const fn new(names: &'static [&'static CStr]) -> Self {
        assert!(names.len() == N);
        let mut d = [bindings::rdma_stat_desc {
            name: ptr::null(),
            flags: 0,
            priv_: ptr::null(),
        }; N];
        let mut i = 0;
        while i < N {
            d[i].name = names[i].as_ptr().cast();
            i += 1;
        }
        StatDescs(d)
    }

    /// A stats structure for these counters; the core owns (and frees) it.
    pub(crate) fn alloc(&'static self) -> *mut bindings::rdma_hw_stats {
        // SAFETY: self is 'static and has N entries.
        unsafe { bindings::rrxe_glue_alloc_hw_stats(self.0.as_ptr(), N as i32) }
    }

    /// As [`StatDescs::alloc`], with the counters `shown` refuses hidden from the
    /// structure's readers (its `is_disabled` bits): a per-QP counter object shows only
    /// what a QP counts of its own.
    pub(crate) fn alloc_shown(
        &'static self,
        shown: impl Fn(usize) -> bool,
    ) -> *mut bindings::rdma_hw_stats {
        let stats = self.alloc();
        if !stats.is_null() {
            for i in (0..N).filter(|&i| !shown(i)) {
                // SAFETY: a structure just allocated, ours until returned; the helper
                // bounds-checks the index.
                unsafe { bindings::rrxe_glue_hw_stats_hide(stats, i as i32) };
            }
        }
        stats
    }
}

/// Writes `values` into a stats structure of [`StatDescs::alloc`].
///
/// # Safety
/// `stats` is live (the core's `get_hw_stats` argument).
pub(crate) unsafe fn set_hw_stats(
    stats: *mut bindings::rdma_hw_stats,
    values: impl Iterator<Item = u64>,
) {
    for (i, v) in values.enumerate() {
        // SAFETY: stats is live (contract); the helper bounds-checks the index.
        unsafe { bindings::rrxe_glue_hw_stats_set(stats, i as i32, v) };
    }
}

/// A per-QP counter object of the core (`struct rdma_counter`), during one of its ops.
///
/// # Invariants
/// The pointer is a live counter of an rrxe device, and the caller of the op holds it
/// exclusively for `'a`: the core calls `counter_bind_qp`, `counter_unbind_qp` and
/// `counter_update_stats` with the counter's mutex held, and `counter_dealloc` once its
/// last reference is gone. Its values (`stats`) were allocated by `counter_alloc_stats`
/// before it was first bound.
pub(crate) struct RdmaCounter<'a>(NonNull<bindings::rdma_counter>, PhantomData<&'a ()>);

impl<'a> RdmaCounter<'a> {
    /// # Safety
    /// `ptr` satisfies the type invariant for `'a`.
    pub(super) unsafe fn from_raw(ptr: *mut bindings::rdma_counter) -> Option<Self> {
        Some(RdmaCounter(NonNull::new(ptr)?, PhantomData))
    }

    pub(super) fn as_ptr(&self) -> *mut bindings::rdma_counter {
        self.0.as_ptr()
    }

    /// The device it counts for.
    pub(crate) fn dev(&self) -> &'a IbDev {
        // SAFETY: a live counter of an rrxe device (invariant); its device outlives it.
        unsafe { IbDev::from_raw(bindings::rrxe_glue_counter_device(self.as_ptr())) }
    }

    /// Its number (`cntn`), 0 until the driver gives it one at its first bind.
    pub(crate) fn id(&self) -> u32 {
        // SAFETY: live (invariant).
        unsafe { bindings::rrxe_glue_counter_id(self.as_ptr()) }
    }

    /// Gives it its number (unique among the device's counters; not 0).
    pub(crate) fn set_id(&self, id: u32) {
        // SAFETY: live and ours for the op (invariant).
        unsafe { bindings::rrxe_glue_counter_set_id(self.as_ptr(), id) }
    }

    /// Adds `delta` to its value at `index` (an index of the port's counters).
    pub(crate) fn add(&self, index: usize, delta: u64) {
        let Ok(i) = i32::try_from(index) else { return };
        // SAFETY: live and ours for the op (invariant); the helper bounds-checks the index
        // against the values allocated before the first bind.
        unsafe { bindings::rrxe_glue_counter_add(self.as_ptr(), i, delta) }
    }
}
