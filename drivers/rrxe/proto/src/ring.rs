// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Ring indexing with free-running 32-bit counters.
//!
//! Producers and consumers of the driver's work-request rings count posts and completions
//! in `u32`s that wrap. A slot index is the counter modulo the ring size, which is only
//! consistent across the wrap at 2^32 when the size divides 2^32, i.e. is a power of two:
//! with 3 slots, counter 2^32 - 1 maps to slot 0 and the next counter, 0, to slot 0 again,
//! overwriting a WR still outstanding. [`RingIndex`] therefore always has 2^k slots, and a
//! separate capacity (the size the consumer asked for) bounds how many may be outstanding.

/// Slot arithmetic of a ring of 2^k slots with free-running `u32` counters.
///
/// INVARIANT: `mask + 1` is a power of two, and `1 <= cap <= mask + 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingIndex {
    mask: u32,
    cap: u32,
}

/// Largest ring: 2^20 slots (far above any queue rrxe offers).
pub const MAX_RING_SLOTS: u32 = 1 << 20;

impl RingIndex {
    /// A ring that holds up to `cap` outstanding entries (at least 1), in the next power of
    /// two of slots. `None` when `cap` is 0 or above [`MAX_RING_SLOTS`].
    pub fn new(cap: u32) -> Option<Self> {
        if cap == 0 || cap > MAX_RING_SLOTS {
            return None;
        }
        let slots = cap.checked_next_power_of_two()?;
        Some(Self {
            mask: slots - 1,
            cap,
        })
    }

    /// Number of slots (a power of two).
    pub fn slots(self) -> u32 {
        self.mask + 1
    }

    /// How many entries may be outstanding.
    pub fn cap(self) -> u32 {
        self.cap
    }

    /// The slot of counter value `i` (always `< slots()`).
    pub fn slot(self, i: u32) -> usize {
        (i & self.mask) as usize
    }

    /// Entries between consumer `cons` and producer `prod`.
    pub fn used(self, prod: u32, cons: u32) -> u32 {
        prod.wrapping_sub(cons)
    }

    /// Whether no more entries may be produced.
    pub fn full(self, prod: u32, cons: u32) -> bool {
        self.used(prod, cons) >= self.cap
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn sizes() {
        assert_eq!(RingIndex::new(0), None);
        assert_eq!(RingIndex::new(MAX_RING_SLOTS + 1), None);
        assert_eq!(RingIndex::new(u32::MAX), None);
        let r = RingIndex::new(3).unwrap();
        assert_eq!((r.slots(), r.cap()), (4, 3));
        let r = RingIndex::new(4096).unwrap();
        assert_eq!((r.slots(), r.cap()), (4096, 4096));
    }

    /// A producer/consumer pair driven across the 2^32 wrap of both counters: every entry
    /// comes out exactly once, in order, and an outstanding one is never overwritten.
    #[test]
    fn across_the_wrap() {
        for cap in [1u32, 3, 5, 7, 100, 128] {
            let r = RingIndex::new(cap).unwrap();
            let mut slots: Vec<Option<u64>> = vec![None; r.slots() as usize];
            let start = u32::MAX - 3 * r.slots();
            let (mut prod, mut cons) = (start, start);
            let (mut next_in, mut next_out) = (0u64, 0u64);
            let mut step = 0u32;
            while cons.wrapping_sub(start) < 8 * r.slots() {
                // Bursty: produce up to 2 then consume 1, until full, then drain.
                step = step.wrapping_add(1);
                let produce =
                    !r.full(prod, cons) && (!step.is_multiple_of(3) || r.used(prod, cons) == 0);
                if produce {
                    let s = &mut slots[r.slot(prod)];
                    assert!(s.is_none(), "cap {cap}: overwrote an outstanding entry");
                    *s = Some(next_in);
                    next_in += 1;
                    prod = prod.wrapping_add(1);
                } else {
                    let s = slots[r.slot(cons)].take();
                    assert_eq!(s, Some(next_out), "cap {cap}");
                    next_out += 1;
                    cons = cons.wrapping_add(1);
                }
                assert!(r.used(prod, cons) <= cap);
            }
            assert!(prod < start && cons < start, "both counters wrapped");
        }
    }

    /// What the old `i % n` indexing did with a ring of 3: two outstanding counters, one on
    /// each side of the wrap, shared a slot.
    #[test]
    fn modulo_of_a_non_power_of_two_collides_at_the_wrap() {
        let n = 3u32;
        assert_eq!(u32::MAX % n, 0u32 % n);
        let r = RingIndex::new(3).unwrap();
        assert_ne!(r.slot(u32::MAX), r.slot(0));
    }
}
