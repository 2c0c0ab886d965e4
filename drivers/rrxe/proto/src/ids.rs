// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Allocation of the numbers a device hands out, so that another tenant or a peer cannot
//! predict them and a stale one does not soon name a new object:
//!
//! * [`RandomIds`]: numbers drawn uniformly at random among the free ones (QP numbers, XRC
//!   SRQ numbers), in O(1) with no retry loop.
//! * [`FreeQueue`]: slots reused in the order they were freed, only once more than a
//!   quarantine of others are free (memory-key slots; rdma_rxe allocates its MR and MW
//!   indices cyclically, `xa_alloc_cyclic`, for the same reason), in O(1); [`next_tag`]:
//!   the 8-bit tag of a key, never the previous key's tag of the same slot.
//!
//! Like the rest of the crate it allocates nothing and reads no randomness: the caller
//! owns the storage (slices, or the slots a [`Links`] reaches) and passes random words in.
//! Every operation is O(1) and bounded, for use under an interrupts-off lock; only
//! [`RandomIds::new`] walks its storage once, before the set is shared.

use core::ops::DerefMut;

/// A set of numbers `0..len` from which a free one is taken uniformly at random.
///
/// `order` is a permutation of `0..len`: the free numbers are `order[..nfree]`, the taken
/// ones (and the reserved numbers below `first`, which are never free) follow. `pos[n]` is
/// where `n` sits in `order`. Taking swaps the drawn number with the last free one;
/// releasing swaps it back to the end of the free part.
///
/// INVARIANT: `order.len() == pos.len() <= u32::MAX`; `order` is a permutation of
/// `0..len` and `order[pos[n]] == n` for every `n`; `first <= nfree + first <= len`, and no
/// number below `first` is in `order[..nfree]`.
#[derive(Debug)]
pub struct RandomIds<S> {
    order: S,
    pos: S,
    nfree: u32,
    first: u32,
}

/// `r` scaled to `0..n` (Lemire's multiply-shift: one multiplication, no loop; a value is
/// drawn with probability at most `n / 2^32` away from `1 / n`).
fn below(r: u32, n: u32) -> u32 {
    ((u64::from(r) * u64::from(n)) >> 32) as u32
}

impl<S: DerefMut<Target = [u32]>> RandomIds<S> {
    /// A set over `0..order.len()` with every number from `first` on free. `None` when the
    /// two slices differ in length, are longer than `u32::MAX` or shorter than `first`.
    pub fn new(mut order: S, mut pos: S, first: u32) -> Option<Self> {
        let len = u32::try_from(order.len()).ok()?;
        if pos.len() != order.len() || first > len {
            return None;
        }
        // Free numbers first (first..len), then the reserved ones (0..first).
        let nfree = len - first;
        for (k, slot) in order.iter_mut().enumerate() {
            let k = k as u32;
            *slot = if k < nfree { first + k } else { k - nfree };
        }
        for (k, &n) in order.iter().enumerate() {
            *pos.get_mut(n as usize)? = k as u32;
        }
        Some(Self {
            order,
            pos,
            nfree,
            first,
        })
    }

    /// How many numbers are free.
    pub fn free(&self) -> u32 {
        self.nfree
    }

    /// Whether `n` is free (reserved and out-of-range numbers are not).
    pub fn is_free(&self, n: u32) -> bool {
        self.pos.get(n as usize).is_some_and(|&p| p < self.nfree)
    }

    /// Takes a free number chosen by the random word `r`, uniformly among the free ones;
    /// `None` when none is free.
    pub fn take(&mut self, r: u32) -> Option<u32> {
        let last = self.nfree.checked_sub(1)?;
        let k = below(r, self.nfree);
        let n = *self.order.get(k as usize)?;
        self.swap(k, last)?;
        self.nfree = last;
        Some(n)
    }

    /// Gives `n` back. `false` (and nothing changes) when `n` is out of range, reserved or
    /// already free.
    pub fn release(&mut self, n: u32) -> bool {
        if n < self.first {
            return false;
        }
        let Some(&p) = self.pos.get(n as usize) else {
            return false;
        };
        if p < self.nfree || self.swap(p, self.nfree).is_none() {
            return false;
        }
        self.nfree += 1;
        true
    }

    /// Swaps the numbers at positions `a` and `b` of `order`, keeping `pos` in step.
    fn swap(&mut self, a: u32, b: u32) -> Option<()> {
        let na = *self.order.get(a as usize)?;
        let nb = *self.order.get(b as usize)?;
        *self.order.get_mut(a as usize)? = nb;
        *self.order.get_mut(b as usize)? = na;
        *self.pos.get_mut(na as usize)? = b;
        *self.pos.get_mut(nb as usize)? = a;
        Some(())
    }
}

/// "No slot": the end of a [`FreeQueue`]'s chain.
pub const END: u32 = u32::MAX;

/// The links of a [`FreeQueue`], kept by the caller in its free slots.
pub trait Links {
    /// The link stored in slot `i`, if `i` is a free slot.
    fn link(&self, i: u32) -> Option<u32>;
    /// Stores `next` as free slot `i`'s link; `false` if `i` is not a free slot.
    fn set_link(&mut self, i: u32, next: u32) -> bool;
}

/// Free slots in the order they were freed (a FIFO chained through the slots themselves).
///
/// With [`FreeQueue::must_grow`] a table that can still grow adds slots instead of
/// reusing one while no more than a quarantine of slots are free: a slot freed then waits
/// behind at least that many others before it is taken again.
///
/// INVARIANT: `len` slots are chained from `head` (following [`Links::link`]) to `tail`,
/// whose link is [`END`]; `head == tail == END` when `len == 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeQueue {
    head: u32,
    tail: u32,
    len: u32,
}

impl Default for FreeQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl FreeQueue {
    /// An empty queue.
    pub const fn new() -> Self {
        Self {
            head: END,
            tail: END,
            len: 0,
        }
    }

    /// How many slots are free.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether no slot is free.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether a table that may still grow (`can_grow`) should add slots rather than take
    /// one: no more than `quarantine` are free.
    pub fn must_grow(&self, quarantine: u32, can_grow: bool) -> bool {
        can_grow && self.len <= quarantine
    }

    /// Appends free slot `i` (its link is set here). `false`, and nothing changes, if the
    /// links refuse it.
    pub fn push<L: Links + ?Sized>(&mut self, links: &mut L, i: u32) -> bool {
        if i == END || !links.set_link(i, END) {
            return false;
        }
        self.append(links, i, i, 1)
    }

    /// Appends `n` free slots chained from `first` to `last` by the caller (a fresh run of
    /// slots: see [`run_link`]), in O(1). `false`, and nothing changes, for an empty run or
    /// when the links refuse it.
    pub fn append_run<L: Links + ?Sized>(
        &mut self,
        links: &mut L,
        first: u32,
        last: u32,
        n: u32,
    ) -> bool {
        if n == 0 || first == END || links.link(last) != Some(END) {
            return false;
        }
        self.append(links, first, last, n)
    }

    fn append<L: Links + ?Sized>(&mut self, links: &mut L, first: u32, last: u32, n: u32) -> bool {
        let Some(len) = self.len.checked_add(n) else {
            return false;
        };
        if self.len == 0 {
            self.head = first;
        } else if !links.set_link(self.tail, first) {
            return false;
        }
        self.tail = last;
        self.len = len;
        true
    }

    /// Takes the slot freed longest ago. `None` when the queue is empty (or its chain is
    /// broken: the caller's slot was not free, then the queue empties itself rather than
    /// hand out a slot in use).
    pub fn pop<L: Links + ?Sized>(&mut self, links: &L) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let i = self.head;
        let Some(next) = links.link(i) else {
            *self = Self::new();
            return None;
        };
        self.len -= 1;
        if self.len == 0 {
            self.head = END;
            self.tail = END;
        } else {
            self.head = next;
        }
        Some(i)
    }
}

/// The link of slot `i` in a fresh run of `n` slots from `first` chained in order (the
/// next slot, or [`END`] for the run's last).
pub fn run_link(i: u32, first: u32, n: u32) -> u32 {
    match i.checked_add(1) {
        Some(next) if next < first.saturating_add(n) => next,
        _ => END,
    }
}

/// The 8-bit tag of a new key in a slot whose previous key had tag `last` (`None` for a
/// slot never used): uniform among the 255 other values (among all 256 for a fresh slot),
/// from the random word `r`. As rdma_rxe's `rxe_get_next_key`, which draws until the byte
/// differs from the last one; here without a loop. So a key just freed is never the next
/// key of its slot.
pub fn next_tag(last: Option<u8>, r: u32) -> u8 {
    match last {
        Some(l) => l.wrapping_add(1).wrapping_add(below(r, 255) as u8),
        None => r as u8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeSet, VecDeque};
    use std::vec;
    use std::vec::Vec;

    /// A xorshift generator: deterministic random words for the tests.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u32 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 32) as u32
        }
    }

    fn ids(len: usize, first: u32) -> RandomIds<Vec<u32>> {
        RandomIds::new(vec![0; len], vec![0; len], first).unwrap()
    }

    #[test]
    fn random_ids_hand_out_every_free_number_once() {
        let mut s = ids(64, 16);
        assert_eq!(s.free(), 48);
        let mut rng = Rng(1);
        let mut got = BTreeSet::new();
        while let Some(n) = s.take(rng.next()) {
            assert!((16..64).contains(&n), "{n} out of range");
            assert!(got.insert(n), "{n} twice");
        }
        assert_eq!(got.len(), 48);
        assert_eq!(s.take(0), None);
        // Reserved, out-of-range and free numbers are refused.
        assert!(!s.release(0) && !s.release(1) && !s.release(15) && !s.release(64));
        assert!(s.release(40) && !s.release(40));
        assert_eq!(s.take(rng.next()), Some(40));
    }

    #[test]
    fn random_ids_are_not_a_sequence() {
        let mut s = ids(4096, 16);
        let mut rng = Rng(7);
        let v: Vec<u32> = (0..16).map(|_| s.take(rng.next()).unwrap()).collect();
        let steps = v.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(steps < 2, "{v:?}");
    }

    /// Every free number is drawn about equally often: a chi-square test over 20 free
    /// numbers (19 degrees of freedom; 43.8 is the 0.999 quantile).
    #[test]
    fn random_ids_are_uniform_among_the_free() {
        let mut s = ids(40, 2);
        let mut rng = Rng(99);
        // Take 18 at random so the free numbers are scattered, not a range.
        for _ in 0..18 {
            s.take(rng.next()).unwrap();
        }
        let free: Vec<u32> = (0..40).filter(|&n| s.is_free(n)).collect();
        assert_eq!(free.len(), 20);
        let rounds = 40_000;
        let mut count = [0u32; 40];
        for _ in 0..rounds {
            let n = s.take(rng.next()).unwrap();
            count[n as usize] += 1;
            assert!(s.release(n));
        }
        let e = f64::from(rounds) / 20.0;
        let chi: f64 = free
            .iter()
            .map(|&n| (f64::from(count[n as usize]) - e).powi(2) / e)
            .sum();
        assert!(chi < 43.8, "chi-square {chi}: {count:?}");
        assert!((0..40).all(|n| free.contains(&n) || count[n as usize] == 0));
    }

    #[test]
    fn random_ids_refuse_bad_storage() {
        assert!(RandomIds::new(vec![0; 4], vec![0; 5], 0).is_none());
        assert!(RandomIds::new(vec![0; 4], vec![0; 4], 5).is_none());
        let mut s = ids(4, 4);
        assert_eq!(s.take(123), None);
    }

    /// Slots 0..n with an `Option<u32>` link each (None: the slot is in use).
    struct Table(Vec<Option<u32>>);
    impl Links for Table {
        fn link(&self, i: u32) -> Option<u32> {
            *self.0.get(i as usize)?
        }
        fn set_link(&mut self, i: u32, next: u32) -> bool {
            match self.0.get_mut(i as usize) {
                Some(l @ Some(_)) => {
                    *l = Some(next);
                    true
                }
                _ => false,
            }
        }
    }

    /// A table of chunks of 8 slots growing to `max`, slot 0 never used: the allocator the
    /// driver's key table is built on.
    struct Alloc {
        t: Table,
        q: FreeQueue,
        max: u32,
        quarantine: u32,
    }
    impl Alloc {
        const CHUNK: u32 = 8;
        fn new(max: u32, quarantine: u32) -> Self {
            Self {
                t: Table(Vec::new()),
                q: FreeQueue::new(),
                max,
                quarantine,
            }
        }
        fn grow(&mut self) {
            let base = self.t.0.len() as u32;
            let first = base.max(1);
            let n = base + Self::CHUNK - first;
            for i in base..base + Self::CHUNK {
                self.t.0.push(Some(run_link(i, first, n)));
            }
            if base == 0 {
                self.t.0[0] = None;
            }
            assert!(self
                .q
                .append_run(&mut self.t, first, base + Self::CHUNK - 1, n));
        }
        fn take(&mut self) -> Option<u32> {
            while self
                .q
                .must_grow(self.quarantine, (self.t.0.len() as u32) < self.max)
            {
                self.grow();
            }
            let i = self.q.pop(&self.t)?;
            self.t.0[i as usize] = None;
            Some(i)
        }
        fn free(&mut self, i: u32) {
            self.t.0[i as usize] = Some(END);
            assert!(self.q.push(&mut self.t, i));
        }
    }

    #[test]
    fn freed_slot_waits_behind_the_quarantine() {
        let mut a = Alloc::new(64, 20);
        let mut last = Vec::new();
        let first = a.take().unwrap();
        a.free(first);
        // Register and deregister one at a time: the freed slot comes back only after more
        // than `quarantine` others were taken.
        for _ in 0..200 {
            let i = a.take().unwrap();
            assert_ne!(i, 0);
            if let Some(p) = last.iter().rposition(|&x| x == i) {
                assert!(
                    last.len() - p > 20,
                    "slot {i} reused after {}",
                    last.len() - p
                );
            }
            last.push(i);
            a.free(i);
        }
        // The table grew only as far as the quarantine needs (three chunks).
        assert_eq!(a.t.0.len(), 24);
    }

    #[test]
    fn full_table_reuses_what_is_free() {
        let mut a = Alloc::new(16, 100);
        let got: Vec<u32> = core::iter::from_fn(|| a.take()).collect();
        assert_eq!(got, (1..16).collect::<Vec<_>>());
        a.free(5);
        a.free(3);
        assert_eq!(a.take(), Some(5));
        assert_eq!(a.take(), Some(3));
        assert_eq!(a.take(), None);
    }

    #[test]
    fn queue_refuses_slots_in_use_and_broken_chains() {
        let mut t = Table(vec![None, Some(END), Some(END)]);
        let mut q = FreeQueue::new();
        assert!(!q.push(&mut t, 0), "a slot in use is not free");
        assert!(!q.push(&mut t, END));
        assert!(q.push(&mut t, 1) && q.push(&mut t, 2));
        assert_eq!(q.len(), 2);
        // The caller reused slot 1 behind the queue's back: nothing is handed out.
        t.0[1] = None;
        assert_eq!(q.pop(&t), None);
        assert!(q.is_empty());
        assert!(!q.append_run(&mut t, 1, 2, 0));
    }

    #[test]
    fn tags_never_repeat_the_previous_one() {
        let mut rng = Rng(3);
        let mut seen = [0u32; 256];
        for _ in 0..100_000 {
            let last = rng.next() as u8;
            let t = next_tag(Some(last), rng.next());
            assert_ne!(t, last);
            seen[usize::from(t)] += 1;
        }
        assert!(seen.iter().all(|&c| c > 250), "{seen:?}");
        assert_eq!(next_tag(Some(7), 0), 8);
        assert_eq!(next_tag(Some(7), u32::MAX), 6);
        assert_eq!(next_tag(None, 0x1234), 0x34);
    }

    proptest! {
        /// Random take/release sequences against a model set: never a number twice, never
        /// a reserved one, the free count exact.
        #[test]
        fn random_ids_match_a_model(ops in proptest::collection::vec((any::<bool>(), any::<u32>()), 0..400)) {
            let mut s = ids(48, 5);
            let mut taken = BTreeSet::new();
            for (take, r) in ops {
                if take {
                    match s.take(r) {
                        Some(n) => {
                            prop_assert!((5..48).contains(&n));
                            prop_assert!(taken.insert(n));
                        }
                        None => prop_assert_eq!(taken.len(), 43),
                    }
                } else {
                    let n = r % 50;
                    prop_assert_eq!(s.release(n), taken.remove(&n));
                }
                prop_assert_eq!(s.free() as usize, 43 - taken.len());
            }
        }

        /// Random allocate/free sequences against a FIFO model: slots come back in the order
        /// they were freed (fresh slots in index order), and a freed one waits behind the
        /// quarantine while the table can grow.
        #[test]
        fn free_queue_matches_a_fifo(ops in proptest::collection::vec(any::<u16>(), 0..400)) {
            let mut a = Alloc::new(64, 6);
            let mut used: Vec<u32> = Vec::new();
            let mut fifo: VecDeque<u32> = VecDeque::new();
            let mut allocs = 0u32;
            let mut freed_at = vec![None; 64];
            for op in ops {
                if op % 3 != 0 || used.is_empty() {
                    let before = a.t.0.len() as u32;
                    let got = a.take();
                    let after = a.t.0.len() as u32;
                    fifo.extend((before..after).filter(|&i| i != 0));
                    match got {
                        Some(i) => {
                            allocs += 1;
                            prop_assert_eq!(Some(i), fifo.pop_front());
                            if let Some(at) = freed_at[i as usize] {
                                if after < 64 {
                                    prop_assert!(allocs - at > 6);
                                }
                            }
                            prop_assert!(!used.contains(&i));
                            used.push(i);
                        }
                        None => prop_assert_eq!(used.len(), 63),
                    }
                } else {
                    let i = used.swap_remove(usize::from(op) % used.len());
                    a.free(i);
                    fifo.push_back(i);
                    freed_at[i as usize] = Some(allocs);
                }
            }
        }
    }
}
