// SPDX-License-Identifier: GPL-2.0
//! What the `rdma` tool reads of a device, as the RDMA core holds it: the statistics
//! structures of `rdma statistic`.

use super::bindings;
use core::ffi::CStr;
use core::ptr;

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
