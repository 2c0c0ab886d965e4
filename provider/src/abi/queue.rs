// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! A shared queue mapped from the kernel (`mmap(cmd_fd, mmap_offset)`), as a
//! [`crate::ring::RingMem`]. The geometry the kernel reported is checked against the
//! mapping before any slot is touched, so every slot access stays inside it.

use core::ffi::c_int;
use core::ptr::{self, NonNull};
use core::sync::atomic::AtomicU32;

use super::rrxe::{rrxe_queue_info, RRXE_QUEUE_HDR_SIZE};
use crate::ring::RingMem;

/// Header offsets of the counters (`struct rrxe_queue_hdr`).
const OFF_PRODUCER: usize = 0;
const OFF_CONSUMER: usize = 64;
const OFF_ERROR: usize = 128;

/// Why a queue could not be mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// The kernel's description is inconsistent (sizes, alignment).
    Geometry,
    /// mmap failed with this errno.
    Mmap(i32),
}

/// One mapped queue; unmapped on drop.
pub struct MappedQueue {
    base: NonNull<u8>,
    len: usize,
    slots: u32,
    slot_size: usize,
}

// SAFETY: the mapping is plain shared memory; all accesses go through atomics (header) or
// byte copies into/out of slots whose ownership the ring protocol (and the owner object's
// mutex) serialises. Moving or sharing the handle between threads is sound.
unsafe impl Send for MappedQueue {}
// SAFETY: as above.
unsafe impl Sync for MappedQueue {}

impl MappedQueue {
    /// Checks `info` and maps the queue from `cmd_fd`.
    pub fn map(cmd_fd: c_int, info: &rrxe_queue_info) -> Result<Self, MapError> {
        let slots = 1u64
            .checked_shl(info.log2_slots)
            .filter(|_| info.log2_slots < 24)
            .ok_or(MapError::Geometry)?;
        let slot_size = u64::from(info.slot_size);
        if slot_size < 16 || !slot_size.is_power_of_two() {
            return Err(MapError::Geometry);
        }
        let need = RRXE_QUEUE_HDR_SIZE as u64 + slots * slot_size;
        if info.mmap_size < need || info.mmap_size > (1 << 32) {
            return Err(MapError::Geometry);
        }
        let len = usize::try_from(info.mmap_size).map_err(|_| MapError::Geometry)?;
        let offset = libc::off_t::try_from(info.mmap_offset).map_err(|_| MapError::Geometry)?;
        // SAFETY: a fresh shared mapping of the kernel's queue at an address the kernel
        // picks; no existing Rust object is affected.
        let p = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                cmd_fd,
                offset,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(MapError::Mmap(
                std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO),
            ));
        }
        Ok(Self {
            base: NonNull::new(p.cast()).ok_or(MapError::Mmap(libc::EIO))?,
            len,
            slots: slots as u32,
            slot_size: slot_size as usize,
        })
    }

    fn counter(&self, off: usize) -> &AtomicU32 {
        // SAFETY: `off` is one of the header offsets, 4-aligned and inside the mapping's
        // first page (page-aligned base), which lives as long as `self`; the kernel and we
        // only ever access these words atomically.
        unsafe { AtomicU32::from_ptr(self.base.as_ptr().add(off).cast()) }
    }

    fn slot_ptr(&self, slot: u32, n: usize) -> *mut u8 {
        assert!(slot < self.slots && n <= self.slot_size);
        let off = RRXE_QUEUE_HDR_SIZE + slot as usize * self.slot_size;
        debug_assert!(off + n <= self.len);
        // SAFETY: `off + n <= len` by `map`'s geometry check and the assert above.
        unsafe { self.base.as_ptr().add(off) }
    }
}

impl RingMem for MappedQueue {
    fn slots(&self) -> u32 {
        self.slots
    }
    fn slot_size(&self) -> usize {
        self.slot_size
    }
    fn producer(&self) -> &AtomicU32 {
        self.counter(OFF_PRODUCER)
    }
    fn consumer(&self) -> &AtomicU32 {
        self.counter(OFF_CONSUMER)
    }
    fn error(&self) -> &AtomicU32 {
        self.counter(OFF_ERROR)
    }
    fn write_slot(&self, slot: u32, src: &[u8]) {
        let dst = self.slot_ptr(slot, src.len());
        // SAFETY: `dst..dst+len` is inside the mapping; the slot is the producer's (ring
        // protocol), so nobody reads it concurrently; `src` is ordinary memory.
        unsafe { ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
    }
    fn read_slot(&self, slot: u32, dst: &mut [u8]) {
        let src = self.slot_ptr(slot, dst.len());
        // SAFETY: inside the mapping; the slot was published to us and the kernel does not
        // write it again until we release it.
        unsafe { ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), dst.len()) };
    }
}

impl Drop for MappedQueue {
    fn drop(&mut self) {
        // SAFETY: the mapping was created in `map` with this length and nothing borrows it
        // past `self`.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}
