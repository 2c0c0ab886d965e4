// SPDX-License-Identifier: GPL-2.0
//! A table of numbered slots that grows in fixed chunks, with O(1) allocation, lookup and
//! release, for tables kept under an interrupts-off lock (memory keys, user address
//! handles).
//!
//! The slots live in chunks of [`CHUNK`]; a directory with room for every chunk the table
//! may ever have is allocated up front, so adding a chunk under the lock is one pointer
//! store, and no slot is ever copied. Free slots are chained into a FIFO
//! ([`proto::ids::FreeQueue`]): a slot freed is reused after those freed before it, and
//! while the table may still grow and no more than its quarantine of slots are free, a new
//! chunk is added instead ([`Take::Grow`]), so a freed number waits behind at least that
//! many others. Slot 0 is never handed out. Each free slot remembers the tag (the low byte
//! of a key) it had, for [`proto::ids::next_tag`].

use crate::proto::ids::{run_link, FreeQueue, Links, END};
use kernel::alloc::KVVec;
use kernel::prelude::*;

/// Slots per chunk.
pub(crate) const CHUNK: usize = 256;

/// One slot.
enum Slot<T> {
    /// Free: the next free slot in the queue ([`END`] for none) and the tag of the last
    /// object that had it (`None` for a slot never used).
    Free { next: u32, tag: Option<u8> },
    /// Taken by [`SlotTable::take`], not yet filled.
    Reserved,
    /// In use.
    Used(T),
}

/// What [`SlotTable::take`] found.
pub(crate) enum Take {
    /// Slot `index` is reserved for the caller; the last tag it had.
    Slot { index: u32, tag: Option<u8> },
    /// Add a chunk first: allocate [`SlotTable::chunk`]`(base)` without the lock, then
    /// [`SlotTable::add_chunk`] and take again.
    Grow { base: u32 },
    /// Every slot is in use and the table is at its size limit.
    Full,
}

/// A chunk of fresh slots, allocated outside the table's lock.
pub(crate) struct Chunk<T> {
    slots: KVVec<Slot<T>>,
    base: u32,
}

/// Numbered slots of `T` (see the module's doc).
///
/// INVARIANT: every chunk has [`CHUNK`] slots and chunk `c` holds slots
/// `c * CHUNK .. (c + 1) * CHUNK`; `chunks.capacity() >= max_chunks`; `free` chains exactly
/// the free slots other than slot 0.
pub(crate) struct SlotTable<T> {
    chunks: KVec<KVVec<Slot<T>>>,
    free: FreeQueue,
    max_chunks: usize,
    quarantine: u32,
}

impl<T> SlotTable<T> {
    /// An empty table for up to `max` slots (rounded up to whole chunks); a slot freed is
    /// not reused while fewer than `quarantine` others are free and the table may grow.
    /// Process context (allocates the chunk directory).
    pub(crate) fn new(max: usize, quarantine: u32) -> Result<Self> {
        let max_chunks = max.div_ceil(CHUNK).max(1);
        if max_chunks
            .checked_mul(CHUNK)
            .is_none_or(|n| n > END as usize)
        {
            return Err(EINVAL);
        }
        Ok(Self {
            chunks: KVec::with_capacity(max_chunks, GFP_KERNEL)?,
            free: FreeQueue::new(),
            max_chunks,
            quarantine,
        })
    }

    /// Reserves a slot (O(1)), or says why not. The caller fills it with
    /// [`SlotTable::fill`].
    pub(crate) fn take(&mut self) -> Take {
        let can_grow = self.chunks.len() < self.max_chunks;
        if self.free.must_grow(self.quarantine, can_grow) {
            return Take::Grow {
                base: (self.chunks.len() * CHUNK) as u32,
            };
        }
        let Some(index) = self.free.pop(&Chain(&mut self.chunks)) else {
            return Take::Full;
        };
        match self.slot_mut(index) {
            Some(s @ Slot::Free { .. }) => {
                let Slot::Free { tag, .. } = core::mem::replace(s, Slot::Reserved) else {
                    return Take::Full;
                };
                Take::Slot { index, tag }
            }
            // Unreachable by the invariant (the queue chains free slots only).
            _ => Take::Full,
        }
    }

    /// Fresh slots `base..base + CHUNK`, chained in order, allocated with `GFP_KERNEL`
    /// (process context, no lock held).
    pub(crate) fn chunk(base: u32) -> Result<Chunk<T>> {
        let mut slots = KVVec::with_capacity(CHUNK, GFP_KERNEL)?;
        let first = base.max(1);
        let n = base + CHUNK as u32 - first;
        for i in base..base + CHUNK as u32 {
            slots.push(
                Slot::Free {
                    next: run_link(i, first, n),
                    tag: None,
                },
                GFP_KERNEL,
            )?;
        }
        if base == 0 {
            if let Some(s) = slots.get_mut(0) {
                *s = Slot::Reserved;
            }
        }
        Ok(Chunk { slots, base })
    }

    /// Adds `c` if it is the next chunk (O(1): the directory has room); hands it back
    /// otherwise (another thread grew the table meanwhile), to be dropped outside the lock.
    pub(crate) fn add_chunk(&mut self, c: Chunk<T>) -> Result<(), Chunk<T>> {
        let base = (self.chunks.len() * CHUNK) as u32;
        if c.base != base || self.chunks.len() >= self.max_chunks {
            return Err(c);
        }
        // The directory was sized for every chunk, so the push below allocates nothing and
        // cannot fail (checked first: a failed push would drop the chunk under the lock).
        if self.chunks.len() >= self.chunks.capacity() {
            return Err(c);
        }
        let first = base.max(1);
        let last = base + CHUNK as u32 - 1;
        if let Err(e) = self.chunks.push(c.slots, GFP_ATOMIC) {
            // Unreachable (capacity checked above).
            let _ = e;
            return Ok(());
        }
        let _ = self
            .free
            .append_run(&mut Chain(&mut self.chunks), first, last, last + 1 - first);
        Ok(())
    }

    /// Puts `v` into slot `index`, which [`SlotTable::take`] reserved; hands `v` back if it
    /// was not reserved.
    pub(crate) fn fill(&mut self, index: u32, v: T) -> Result<(), T> {
        match self.slot_mut(index) {
            Some(s @ Slot::Reserved) if index != 0 => {
                *s = Slot::Used(v);
                Ok(())
            }
            _ => Err(v),
        }
    }

    /// How many slots the table has now (in use or not).
    pub(crate) fn slots(&self) -> usize {
        self.chunks.len() * CHUNK
    }

    /// The object in slot `index`.
    pub(crate) fn get(&self, index: u32) -> Option<&T> {
        match self.slot(index)? {
            Slot::Used(v) => Some(v),
            _ => None,
        }
    }

    /// Empties slot `index` and queues it as free, remembering `tag`; returns its object,
    /// for the caller to drop outside the lock.
    pub(crate) fn remove(&mut self, index: u32, tag: Option<u8>) -> Option<T> {
        let s = self.slot_mut(index)?;
        if !matches!(s, Slot::Used(_)) {
            return None;
        }
        let Slot::Used(v) = core::mem::replace(s, Slot::Reserved) else {
            return None;
        };
        self.release(index, tag);
        Some(v)
    }

    /// Queues reserved slot `index` as free.
    fn release(&mut self, index: u32, tag: Option<u8>) {
        if let Some(s) = self.slot_mut(index) {
            *s = Slot::Free { next: END, tag };
        }
        let _ = self.free.push(&mut Chain(&mut self.chunks), index);
    }

    fn slot(&self, index: u32) -> Option<&Slot<T>> {
        slot_of(&self.chunks, index)
    }

    fn slot_mut(&mut self, index: u32) -> Option<&mut Slot<T>> {
        slot_of_mut(&mut self.chunks, index)
    }
}

fn slot_of<T>(chunks: &[KVVec<Slot<T>>], index: u32) -> Option<&Slot<T>> {
    let i = index as usize;
    chunks.get(i / CHUNK)?.get(i % CHUNK)
}

fn slot_of_mut<T>(chunks: &mut [KVVec<Slot<T>>], index: u32) -> Option<&mut Slot<T>> {
    let i = index as usize;
    chunks.get_mut(i / CHUNK)?.get_mut(i % CHUNK)
}

/// The free queue's links, stored in the free slots.
struct Chain<'a, T>(&'a mut KVec<KVVec<Slot<T>>>);

impl<T> Links for Chain<'_, T> {
    fn link(&self, i: u32) -> Option<u32> {
        match slot_of(self.0, i)? {
            Slot::Free { next, .. } => Some(*next),
            _ => None,
        }
    }

    fn set_link(&mut self, i: u32, to: u32) -> bool {
        match slot_of_mut(self.0, i) {
            Some(Slot::Free { next, .. }) => {
                *next = to;
                true
            }
            _ => false,
        }
    }
}
