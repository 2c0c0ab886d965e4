// SPDX-License-Identifier: GPL-2.0
//! Queue memory: a header page and `2^log2_slots` slots, in `vmalloc_user` memory that can
//! be mapped into a process (see `include/rdma/rrxe-abi.h`).
//!
//! Userspace may write any byte of a mapped queue at any time. The memory is therefore only
//! ever accessed through atomics (word by word), never through references to plain data,
//! and every value read from it is treated as untrusted by the callers.

use super::bindings;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use kernel::prelude::*;

/// Size of the header page.
pub(crate) const HDR_SIZE: usize = bindings::RRXE_QUEUE_HDR_SIZE as usize;
/// Mappings are made of whole pages of the kernel's page size.
const PAGE: usize = kernel::page::PAGE_SIZE;

/// Largest slot of a queue.
pub(crate) const MAX_SLOT: u32 = 4096;

/// Where the queue's memory came from and who frees it.
enum Owner {
    /// Kernel-only queue: we vfree it.
    Kernel,
    /// Mapped queue: the mmap entry owns the memory; we remove the entry and the core frees
    /// the memory (rrxe_glue_mmap_free) once the last mapping is gone.
    User(NonNull<bindings::rrxe_mmap_entry>),
}

/// A queue's memory.
pub(crate) struct Queue {
    base: NonNull<u8>,
    log2_slots: u32,
    slot_size: u32,
    owner: Owner,
    info: bindings::rrxe_queue_info,
}

// SAFETY: the memory is only accessed through atomics; the owner pointer is only used on drop.
unsafe impl Send for Queue {}
// SAFETY: as above.
unsafe impl Sync for Queue {}

/// The user's mapping context, for queues that userspace maps.
pub(crate) struct UContext(NonNull<bindings::ib_ucontext>);

impl UContext {
    /// The ucontext of a user command; `None` for kernel callers.
    pub(crate) fn from_udata(udata: &super::Udata<'_>) -> Option<Self> {
        // SAFETY: udata is null or the driver udata of a live uverbs command, whose bundle
        // holds the ucontext for the duration of the command.
        NonNull::new(unsafe { bindings::rrxe_glue_udata_ucontext(udata.0) }).map(UContext)
    }
}

impl Queue {
    /// Allocates a zeroed queue of `1 << log2_slots` slots of `slot_size` bytes (a power of
    /// two, at least 8), mappable through `uctx` if given.
    pub(crate) fn new(log2_slots: u32, slot_size: u32, uctx: Option<&UContext>) -> Result<Self> {
        if log2_slots > 20 || slot_size < 8 || !slot_size.is_power_of_two() || slot_size > MAX_SLOT
        {
            return Err(EINVAL);
        }
        let slots_bytes = (slot_size as usize) << log2_slots;
        let size = (HDR_SIZE + slots_bytes + PAGE - 1) & !(PAGE - 1);
        // SAFETY: plain allocation; vmalloc_user zeroes the memory.
        let base = NonNull::new(unsafe { bindings::rrxe_glue_vmalloc_user(size) }.cast::<u8>())
            .ok_or(ENOMEM)?;
        let mut info = bindings::rrxe_queue_info {
            mmap_offset: 0,
            mmap_size: size as u64,
            log2_slots,
            slot_size,
        };
        let owner = match uctx {
            None => Owner::Kernel,
            Some(uctx) => {
                let (mut off, mut err) = (0u64, 0i32);
                // SAFETY: uctx is live for the command; base/size describe our allocation,
                // whose ownership passes to the entry on success.
                let e = unsafe {
                    bindings::rrxe_glue_mmap_entry_insert(
                        uctx.0.as_ptr(),
                        base.as_ptr().cast(),
                        size,
                        &mut off,
                        &mut err,
                    )
                };
                match NonNull::new(e) {
                    Some(e) => {
                        info.mmap_offset = off;
                        Owner::User(e)
                    }
                    None => {
                        // SAFETY: the entry did not take the memory: free it once.
                        unsafe { bindings::rrxe_glue_vfree(base.as_ptr().cast()) };
                        return Err(Error::from_errno(if err < 0 { err } else { -12 }));
                    }
                }
            }
        };
        Ok(Self {
            base,
            log2_slots,
            slot_size,
            owner,
            info,
        })
    }

    /// What userspace needs to map and use the queue.
    pub(crate) fn info(&self) -> bindings::rrxe_queue_info {
        self.info
    }

    /// Number of slots.
    pub(crate) fn slots(&self) -> u32 {
        1 << self.log2_slots
    }

    /// Words (u64) per slot.
    pub(crate) fn slot_words(&self) -> usize {
        self.slot_size as usize / 8
    }

    fn hdr_u32(&self, byte_off: usize) -> &AtomicU32 {
        // SAFETY: byte_off is one of the 4-aligned offsets below HDR_SIZE used by the
        // accessors; the memory lives as long as self and is only accessed atomically.
        unsafe { &*self.base.as_ptr().add(byte_off).cast::<AtomicU32>() }
    }

    /// The producer index.
    pub(crate) fn producer(&self) -> &AtomicU32 {
        self.hdr_u32(core::mem::offset_of!(bindings::rrxe_queue_hdr, producer))
    }

    /// The consumer index.
    pub(crate) fn consumer(&self) -> &AtomicU32 {
        self.hdr_u32(core::mem::offset_of!(bindings::rrxe_queue_hdr, consumer))
    }

    /// The error flag.
    pub(crate) fn error_flag(&self) -> &AtomicU32 {
        self.hdr_u32(core::mem::offset_of!(bindings::rrxe_queue_hdr, error))
    }

    /// The words of the slot of index `idx` (taken modulo the number of slots).
    pub(crate) fn slot(&self, idx: u32) -> &[AtomicU64] {
        let i = (idx & (self.slots() - 1)) as usize;
        let off = HDR_SIZE + i * self.slot_size as usize;
        // SAFETY: i < slots, so [off, off + slot_size) is inside the allocation; off is
        // 8-aligned (HDR_SIZE and slot_size are multiples of 8); access is atomic only.
        unsafe {
            core::slice::from_raw_parts(
                self.base.as_ptr().add(off).cast::<AtomicU64>(),
                self.slot_words(),
            )
        }
    }

    /// Copies a slot into `out` (as many words as both have).
    pub(crate) fn read_slot(&self, idx: u32, out: &mut [u64]) {
        for (o, w) in out.iter_mut().zip(self.slot(idx)) {
            *o = w.load(Ordering::Relaxed);
        }
    }

    /// Copies bytes `[off, off + out.len())` of a slot into `out` (clamped to the slot).
    pub(crate) fn read_slot_bytes(&self, idx: u32, off: usize, out: &mut [u8]) {
        let words = self.slot(idx);
        for (k, b) in out.iter_mut().enumerate() {
            let pos = off + k;
            match words.get(pos / 8) {
                Some(w) => *b = w.load(Ordering::Relaxed).to_ne_bytes()[pos % 8],
                None => break,
            }
        }
    }

    /// Writes `words` into a slot (as many words as both have).
    pub(crate) fn write_slot(&self, idx: u32, words: &[u64]) {
        for (w, v) in self.slot(idx).iter().zip(words) {
            w.store(*v, Ordering::Relaxed);
        }
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        match self.owner {
            // SAFETY: allocated with vmalloc_user in new(), freed once.
            Owner::Kernel => unsafe { bindings::rrxe_glue_vfree(self.base.as_ptr().cast()) },
            // SAFETY: inserted in new(); removing it drops the insertion reference; the
            // memory is freed by mmap_free after the last unmap. We never touch it again.
            Owner::User(e) => unsafe { bindings::rrxe_glue_mmap_entry_remove(e.as_ptr()) },
        }
    }
}
