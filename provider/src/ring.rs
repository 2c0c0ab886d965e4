// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The shared-queue protocol of `include/rdma/rrxe-abi.h`, as safe logic over any memory
//! that implements [`RingMem`]: the mmap'd queues in production (`abi::queue`), a heap
//! buffer in the tests.
//!
//! A queue has `2^log2_slots` slots of `slot_size` bytes and two free-running 32-bit
//! counters in its header page: `producer` (written only by the producing side) and
//! `consumer` (written only by the consuming side). Slot `i & mask` belongs to the producer
//! while `producer - consumer < slots` says it is free, and to the consumer once the producer
//! published an index past it. The producer writes a slot, then release-stores `producer`;
//! the consumer acquire-loads `producer` before it reads slots, and release-stores `consumer`
//! after it is done with them, which is what lets the producer reuse them.
//!
//! Each side keeps its own index privately and only publishes it; the other side's index is
//! read from shared memory and bounded: a peer index that claims more than a full queue is
//! reported as [`RingError::Corrupt`] instead of being trusted.

// Logic only: the FFI layer (`crate::abi`) holds all unsafe code.
#![deny(unsafe_code)]

use core::sync::atomic::{AtomicU32, Ordering};

/// Memory holding one queue: its header counters and its slots.
pub trait RingMem {
    /// Number of slots (a power of two).
    fn slots(&self) -> u32;
    /// Bytes per slot.
    fn slot_size(&self) -> usize;
    /// The header's `producer` counter.
    fn producer(&self) -> &AtomicU32;
    /// The header's `consumer` counter.
    fn consumer(&self) -> &AtomicU32;
    /// The header's `error` word (non-zero: the kernel moved the queue's owner to error).
    fn error(&self) -> &AtomicU32;
    /// Copies `src` (at most `slot_size` bytes) to the start of slot `slot` (`< slots`).
    fn write_slot(&self, slot: u32, src: &[u8]);
    /// Copies the start of slot `slot` (`< slots`) into `dst` (at most `slot_size` bytes).
    fn read_slot(&self, slot: u32, dst: &mut [u8]);
}

/// Why a ring operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingError {
    /// No free slot (producer) / nothing to consume (consumer is never an error).
    Full,
    /// The entry does not fit in a slot.
    TooBig,
    /// The peer's index is impossible (more than a full queue apart from ours).
    Corrupt,
}

/// The producing side of a queue (SQ, RQ, SRQ in userspace).
pub struct Producer<M: RingMem> {
    mem: M,
    /// Next index to write; published indices are all below it.
    prod: u32,
    /// Index last published to the header.
    published: u32,
}

impl<M: RingMem> Producer<M> {
    /// A producer that starts at the header's current producer index (zero for a new queue).
    pub fn new(mem: M) -> Self {
        let prod = mem.producer().load(Ordering::Relaxed);
        Self {
            mem,
            prod,
            published: prod,
        }
    }

    /// The memory.
    pub fn mem(&self) -> &M {
        &self.mem
    }

    /// Free slots now (counting entries staged but not yet published as used).
    pub fn free(&self) -> Result<u32, RingError> {
        let cons = self.mem.consumer().load(Ordering::Acquire);
        let used = self.prod.wrapping_sub(cons);
        if used > self.mem.slots() {
            return Err(RingError::Corrupt);
        }
        Ok(self.mem.slots() - used)
    }

    /// Writes `entry` into the next free slot without publishing it.
    pub fn stage(&mut self, entry: &[u8]) -> Result<(), RingError> {
        if entry.len() > self.mem.slot_size() {
            return Err(RingError::TooBig);
        }
        if self.free()? == 0 {
            return Err(RingError::Full);
        }
        let slot = self.prod & (self.mem.slots() - 1);
        self.mem.write_slot(slot, entry);
        self.prod = self.prod.wrapping_add(1);
        Ok(())
    }

    /// Makes every staged entry visible to the consumer. Returns how many were published.
    pub fn publish(&mut self) -> u32 {
        let n = self.prod.wrapping_sub(self.published);
        if n != 0 {
            self.mem.producer().store(self.prod, Ordering::Release);
            self.published = self.prod;
        }
        n
    }

    /// Drops every staged entry (nothing was visible to the consumer).
    pub fn discard(&mut self) {
        self.prod = self.published;
    }

    /// Whether the kernel marked the queue's owner as failed.
    pub fn in_error(&self) -> bool {
        self.mem.error().load(Ordering::Acquire) != 0
    }
}

/// The consuming side of a queue (CQ in userspace).
pub struct Consumer<M: RingMem> {
    mem: M,
    /// Next index to read.
    cons: u32,
}

impl<M: RingMem> Consumer<M> {
    /// A consumer that starts at the header's current consumer index.
    pub fn new(mem: M) -> Self {
        let cons = mem.consumer().load(Ordering::Relaxed);
        Self { mem, cons }
    }

    /// The memory.
    pub fn mem(&self) -> &M {
        &self.mem
    }

    /// Entries ready to read.
    pub fn ready(&self) -> Result<u32, RingError> {
        let prod = self.mem.producer().load(Ordering::Acquire);
        let n = prod.wrapping_sub(self.cons);
        if n > self.mem.slots() {
            return Err(RingError::Corrupt);
        }
        Ok(n)
    }

    /// Copies the oldest unread entry into `dst` without releasing its slot; `false` when
    /// there is none. Call [`Self::ready`] first.
    pub fn peek(&self, dst: &mut [u8]) {
        let slot = self.cons & (self.mem.slots() - 1);
        self.mem.read_slot(slot, dst);
    }

    /// Marks the entry [`Self::peek`] read as consumed (not yet published).
    pub fn advance(&mut self) {
        self.cons = self.cons.wrapping_add(1);
    }

    /// Publishes the consumer index, returning the consumed slots to the producer.
    pub fn publish(&self) {
        self.mem.consumer().store(self.cons, Ordering::Release);
    }

    /// Whether the kernel marked the queue as failed (e.g. a CQ overflow).
    pub fn in_error(&self) -> bool {
        self.mem.error().load(Ordering::Acquire) != 0
    }
}

/// A heap-backed [`RingMem`] for tests and simulations: the same protocol, no kernel.
pub mod heap {
    use super::RingMem;
    use core::sync::atomic::AtomicU32;
    use std::sync::{Arc, Mutex};

    /// A queue in ordinary memory; clones share it (one producer and one consumer each hold
    /// a clone).
    #[derive(Clone)]
    pub struct HeapRing {
        inner: Arc<Inner>,
    }

    struct Inner {
        producer: AtomicU32,
        consumer: AtomicU32,
        error: AtomicU32,
        slot_size: usize,
        slots: Vec<Mutex<Vec<u8>>>,
    }

    impl HeapRing {
        /// A queue of `2^log2_slots` slots of `slot_size` bytes, counters at `start`.
        pub fn new(log2_slots: u32, slot_size: usize, start: u32) -> Self {
            Self {
                inner: Arc::new(Inner {
                    producer: AtomicU32::new(start),
                    consumer: AtomicU32::new(start),
                    error: AtomicU32::new(0),
                    slot_size,
                    slots: (0..1u32 << log2_slots)
                        .map(|_| Mutex::new(vec![0; slot_size]))
                        .collect(),
                }),
            }
        }
    }

    impl RingMem for HeapRing {
        fn slots(&self) -> u32 {
            self.inner.slots.len() as u32
        }
        fn slot_size(&self) -> usize {
            self.inner.slot_size
        }
        fn producer(&self) -> &AtomicU32 {
            &self.inner.producer
        }
        fn consumer(&self) -> &AtomicU32 {
            &self.inner.consumer
        }
        fn error(&self) -> &AtomicU32 {
            &self.inner.error
        }
        fn write_slot(&self, slot: u32, src: &[u8]) {
            let mut s = self.inner.slots[slot as usize]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            s[..src.len()].copy_from_slice(src);
        }
        fn read_slot(&self, slot: u32, dst: &mut [u8]) {
            let s = self.inner.slots[slot as usize]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let n = dst.len();
            dst.copy_from_slice(&s[..n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::heap::HeapRing;
    use super::*;
    use std::thread;

    #[test]
    fn empty_full_and_wraparound() {
        // Start near the u32 wrap so the counters wrap during the test.
        let mem = HeapRing::new(2, 16, u32::MAX - 5);
        let mut p = Producer::new(mem.clone());
        let mut c = Consumer::new(mem.clone());
        assert_eq!(c.ready(), Ok(0));
        assert_eq!(p.free(), Ok(4));
        for round in 0u8..10 {
            for i in 0..4u8 {
                p.stage(&[round, i]).unwrap();
            }
            assert_eq!(p.stage(&[0]), Err(RingError::Full));
            // Staged entries are invisible until published.
            assert_eq!(c.ready(), Ok(0));
            assert_eq!(p.publish(), 4);
            assert_eq!(p.publish(), 0);
            assert_eq!(c.ready(), Ok(4));
            for i in 0..4u8 {
                let mut b = [0u8; 2];
                c.peek(&mut b);
                assert_eq!(b, [round, i]);
                c.advance();
            }
            // Not yet released: still full for the producer.
            assert_eq!(p.free(), Ok(0));
            c.publish();
            assert_eq!(p.free(), Ok(4));
            assert_eq!(c.ready(), Ok(0));
        }
    }

    #[test]
    fn oversized_entry_refused() {
        let mut p = Producer::new(HeapRing::new(1, 8, 0));
        assert_eq!(p.stage(&[0; 9]), Err(RingError::TooBig));
        assert_eq!(p.stage(&[0; 8]), Ok(()));
    }

    #[test]
    fn corrupt_peer_index_detected() {
        let mem = HeapRing::new(2, 8, 0);
        let p = Producer::new(mem.clone());
        let c = Consumer::new(mem.clone());
        // A consumer index "ahead" of the producer by more than the queue.
        mem.consumer().store(100, Ordering::Relaxed);
        assert_eq!(p.free(), Err(RingError::Corrupt));
        mem.producer().store(4, Ordering::Relaxed);
        mem.consumer().store(0, Ordering::Relaxed);
        assert_eq!(c.ready(), Ok(4));
        mem.producer().store(5, Ordering::Relaxed);
        assert_eq!(c.ready(), Err(RingError::Corrupt));
        mem.producer().store(u32::MAX, Ordering::Relaxed);
        assert_eq!(c.ready(), Err(RingError::Corrupt));
    }

    #[test]
    fn error_word_is_reported() {
        let mem = HeapRing::new(1, 8, 0);
        let p = Producer::new(mem.clone());
        let c = Consumer::new(mem.clone());
        assert!(!p.in_error() && !c.in_error());
        mem.error().store(1, Ordering::Release);
        assert!(p.in_error() && c.in_error());
    }

    /// A producer and a consumer thread pass 30k numbered entries through a small queue:
    /// every entry arrives once, in order, intact.
    #[test]
    fn concurrent_producer_consumer() {
        const N: u64 = 30_000;
        let mem = HeapRing::new(3, 16, u32::MAX - 1000);
        let pm = mem.clone();
        let producer = thread::spawn(move || {
            let mut p = Producer::new(pm);
            let mut next = 0u64;
            while next < N {
                let mut batch = 0;
                while next < N && batch < 3 {
                    let mut e = [0u8; 16];
                    e[..8].copy_from_slice(&next.to_le_bytes());
                    e[8..].copy_from_slice(&(!next).to_le_bytes());
                    match p.stage(&e) {
                        Ok(()) => {
                            next += 1;
                            batch += 1;
                        }
                        Err(RingError::Full) => break,
                        Err(e) => panic!("{e:?}"),
                    }
                }
                p.publish();
                thread::yield_now();
            }
        });
        let mut c = Consumer::new(mem);
        let mut expect = 0u64;
        while expect < N {
            let n = c.ready().unwrap();
            for _ in 0..n {
                let mut e = [0u8; 16];
                c.peek(&mut e);
                let v = u64::from_le_bytes(e[..8].try_into().unwrap());
                let w = u64::from_le_bytes(e[8..].try_into().unwrap());
                assert_eq!((v, w), (expect, !expect));
                c.advance();
                expect += 1;
            }
            c.publish();
            if n == 0 {
                thread::yield_now();
            }
        }
        producer.join().unwrap();
        assert_eq!(c.ready(), Ok(0));
    }
}
