// SPDX-License-Identifier: GPL-2.0
//! What the `rdma` tool reads of a device, as the RDMA core holds it: the statistics
//! structures of `rdma statistic` (port counters and per-QP counter objects, `struct
//! rdma_counter`) and the driver attributes of `rdma resource show -dd`.

use super::{bindings, IbDev};
use core::ffi::CStr;
use core::marker::PhantomData;
use core::ptr::{self, NonNull};
use kernel::prelude::*;

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

/// EMSGSIZE: the message is full (the dump goes on in the next one).
fn emsgsize() -> Error {
    Error::from_errno(-(kernel::bindings::EMSGSIZE as i32))
}

/// The driver attributes of one `rdma resource` entry being dumped (the
/// `RDMA_NLDEV_ATTR_DRIVER` nest of its netlink message), filled by name.
pub(crate) struct NlDriverAttrs<'a> {
    msg: NonNull<bindings::sk_buff>,
    _msg: PhantomData<&'a mut bindings::sk_buff>,
}

impl NlDriverAttrs<'_> {
    /// Opens the nest in `msg` and runs `fill` on it; closes it if `fill` succeeds, takes
    /// it back out otherwise. `Err(emsgsize())` when the message is full (the core then
    /// continues the dump in another message).
    ///
    /// # Safety
    /// `msg` is the netlink message the core is building for a `fill_res_*_entry` op,
    /// exclusively ours for the call.
    pub(super) unsafe fn fill(
        msg: *mut bindings::sk_buff,
        fill: impl FnOnce(&mut NlDriverAttrs<'_>) -> Result,
    ) -> Result {
        let msg = NonNull::new(msg).ok_or(EINVAL)?;
        // SAFETY: the caller's message.
        let nest = unsafe { bindings::rrxe_glue_nl_driver_begin(msg.as_ptr()) };
        if nest.is_null() {
            return Err(emsgsize());
        }
        let mut attrs = NlDriverAttrs {
            msg,
            _msg: PhantomData,
        };
        let r = fill(&mut attrs);
        // SAFETY: the nest just opened in the same message, closed or cancelled once.
        unsafe {
            match r {
                Ok(()) => bindings::rrxe_glue_nl_driver_end(msg.as_ptr(), nest),
                Err(_) => bindings::rrxe_glue_nl_driver_cancel(msg.as_ptr(), nest),
            }
        }
        r
    }

    /// Adds `name value` (decimal).
    pub(crate) fn u32(&mut self, name: &CStr, value: u32) -> Result {
        // SAFETY: our message (see `fill`); name is NUL-terminated and copied.
        let err = unsafe {
            bindings::rdma_nl_put_driver_u32(self.msg.as_ptr(), name.as_ptr().cast(), value)
        };
        if err != 0 {
            return Err(emsgsize());
        }
        Ok(())
    }

    /// Adds `name value` (decimal, 64 bits).
    pub(crate) fn u64(&mut self, name: &CStr, value: u64) -> Result {
        // SAFETY: as in `u32`.
        let err = unsafe {
            bindings::rdma_nl_put_driver_u64(self.msg.as_ptr(), name.as_ptr().cast(), value)
        };
        if err != 0 {
            return Err(emsgsize());
        }
        Ok(())
    }
}
