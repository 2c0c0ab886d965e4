//! The provider's data path over the shared queues: posting send and receive work requests
//! and polling completions, generic over the queue memory so the host tests run it on heap
//! rings. The FFI shells in `abi::objects` walk the callers' C lists, lock, and call these.

// Logic only: the FFI layer (`crate::abi`) holds all unsafe code.
#![deny(unsafe_code)]

use crate::abi::verbs::ibv_wc;
use crate::ring::{Consumer, Producer, RingError, RingMem};
use crate::wqe::{self, SendLimits, SendWr, Sge, WrError, CQE, MAX_WQE};

fn ring_err(e: RingError) -> WrError {
    match e {
        RingError::Full => WrError::Full,
        RingError::TooBig => WrError::TooManySge,
        RingError::Corrupt => WrError::Broken,
    }
}

/// A QP's send queue.
pub struct SendQueue<M: RingMem> {
    ring: Producer<M>,
    lim: SendLimits,
}

impl<M: RingMem> SendQueue<M> {
    /// A send queue on `mem`, for a QP with these limits (`slot_size` is taken from `mem`).
    pub fn new(mem: M, mut lim: SendLimits) -> Self {
        lim.slot_size = mem.slot_size().min(MAX_WQE);
        Self {
            ring: Producer::new(mem),
            lim,
        }
    }

    /// The limits work requests are checked against.
    pub fn limits(&self) -> &SendLimits {
        &self.lim
    }

    /// Validates and stages one work request (not yet visible to the kernel).
    pub fn stage(
        &mut self,
        wr: &SendWr,
        sges: &[Sge],
        inline: Option<&[&[u8]]>,
    ) -> Result<(), WrError> {
        if self.ring.in_error() {
            return Err(WrError::Broken);
        }
        let mut buf = [0u8; MAX_WQE];
        let n = wqe::encode_send(wr, sges, inline, &self.lim, &mut buf)?;
        self.ring.stage(&buf[..n]).map_err(ring_err)
    }

    /// Publishes what was staged; returns whether anything was (the caller then rings the
    /// doorbell).
    pub fn publish(&mut self) -> bool {
        self.ring.publish() != 0
    }
}

/// A receive queue (a QP's RQ or an SRQ).
pub struct RecvQueue<M: RingMem> {
    ring: Producer<M>,
    max_sge: u32,
}

impl<M: RingMem> RecvQueue<M> {
    /// A receive queue on `mem` taking up to `max_sge` SGEs per request.
    pub fn new(mem: M, max_sge: u32) -> Self {
        Self {
            ring: Producer::new(mem),
            max_sge,
        }
    }

    /// Most SGEs per request.
    pub fn max_sge(&self) -> u32 {
        self.max_sge
    }

    /// Slots in the queue.
    pub fn capacity(&self) -> u32 {
        self.ring.mem().slots()
    }

    /// Validates and stages one receive request.
    pub fn stage(&mut self, wr_id: u64, sges: &[Sge]) -> Result<(), WrError> {
        if self.ring.in_error() {
            return Err(WrError::Broken);
        }
        let mut buf = [0u8; MAX_WQE];
        let slot = self.ring.mem().slot_size();
        let n = wqe::encode_recv(wr_id, sges, self.max_sge, slot, &mut buf)?;
        self.ring.stage(&buf[..n]).map_err(ring_err)
    }

    /// Makes the staged requests visible (receive queues need no doorbell).
    pub fn publish(&mut self) {
        self.ring.publish();
    }
}

/// A completion queue's consumer side.
pub struct CompletionQueue<M: RingMem> {
    ring: Consumer<M>,
}

/// Polling a CQ the kernel broke (overflow) or whose producer index is impossible.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqBroken;

impl<M: RingMem> CompletionQueue<M> {
    /// A CQ on `mem`.
    pub fn new(mem: M) -> Self {
        Self {
            ring: Consumer::new(mem),
        }
    }

    /// Entries the CQ holds.
    pub fn capacity(&self) -> u32 {
        self.ring.mem().slots()
    }

    /// Moves up to `out.len()` completions into `out`; returns how many.
    pub fn poll(&mut self, out: &mut [ibv_wc]) -> Result<usize, CqBroken> {
        let ready = match self.ring.ready() {
            Ok(n) => n as usize,
            Err(_) => return Err(CqBroken),
        };
        let n = ready.min(out.len());
        if n == 0 {
            return if self.ring.in_error() {
                Err(CqBroken)
            } else {
                Ok(0)
            };
        }
        for wc in out.iter_mut().take(n) {
            let mut b = [0u8; CQE];
            self.ring.peek(&mut b);
            *wc = wqe::decode_cqe(&b);
            self.ring.advance();
        }
        self.ring.publish();
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::rrxe::{RRXE_WR_SEND, RRXE_WR_SEND_WITH_IMM};
    use crate::ring::heap::HeapRing;
    use crate::wqe::Transport;
    use core::sync::atomic::Ordering;

    fn sq(log2: u32) -> (HeapRing, SendQueue<HeapRing>) {
        let mem = HeapRing::new(log2, 256, 0);
        let q = SendQueue::new(
            mem.clone(),
            SendLimits {
                transport: Transport::Rc,
                max_sge: 4,
                max_inline: 64,
                slot_size: 0,
            },
        );
        (mem, q)
    }

    #[test]
    fn send_queue_stages_then_publishes() {
        let (mem, mut q) = sq(1);
        assert_eq!(q.limits().slot_size, 256);
        let wr = SendWr {
            opcode: RRXE_WR_SEND,
            ..Default::default()
        };
        q.stage(&wr, &[Sge::default()], None).unwrap();
        assert_eq!(mem.producer().load(Ordering::Relaxed), 0);
        q.stage(&wr, &[], None).unwrap();
        assert_eq!(q.stage(&wr, &[], None), Err(WrError::Full));
        assert!(q.publish());
        assert!(!q.publish());
        assert_eq!(mem.producer().load(Ordering::Relaxed), 2);
        // A bad request stages nothing.
        mem.consumer().store(2, Ordering::Relaxed);
        let bad = SendWr {
            opcode: 99,
            ..Default::default()
        };
        assert_eq!(q.stage(&bad, &[], None), Err(WrError::Opcode));
        assert!(!q.publish());
        // The kernel put the QP in error: nothing more is accepted.
        mem.error().store(1, Ordering::Relaxed);
        assert_eq!(q.stage(&wr, &[], None), Err(WrError::Broken));
        assert_eq!(WrError::Broken.errno(), libc::EIO);
    }

    #[test]
    fn recv_queue_limits() {
        let mem = HeapRing::new(2, 64, 0);
        let mut q = RecvQueue::new(mem.clone(), 3);
        assert_eq!(q.capacity(), 4);
        // 64-byte slots hold a header and 3 SGEs.
        q.stage(1, &[Sge::default(); 3]).unwrap();
        assert_eq!(q.stage(2, &[Sge::default(); 4]), Err(WrError::TooManySge));
        q.publish();
        assert_eq!(mem.producer().load(Ordering::Relaxed), 1);
    }

    fn put_cqe(mem: &HeapRing, idx: u32, wr_id: u64, opcode: u32) {
        let mut b = [0u8; 64];
        b[..8].copy_from_slice(&wr_id.to_ne_bytes());
        b[12..16].copy_from_slice(&opcode.to_ne_bytes());
        mem.write_slot(idx & (mem.slots() - 1), &b);
    }

    #[test]
    fn cq_poll_in_order_and_partial() {
        let mem = HeapRing::new(2, 64, u32::MAX - 1);
        let mut cq = CompletionQueue::new(mem.clone());
        let mut wc = [ibv_wc::default(); 3];
        assert_eq!(cq.poll(&mut wc), Ok(0));
        let start = u32::MAX - 1;
        for i in 0..4u32 {
            put_cqe(
                &mem,
                start.wrapping_add(i),
                100 + u64::from(i),
                RRXE_WR_SEND_WITH_IMM,
            );
        }
        mem.producer()
            .store(start.wrapping_add(4), Ordering::Release);
        assert_eq!(cq.poll(&mut wc), Ok(3));
        assert_eq!(
            wc.iter().map(|w| w.wr_id).collect::<Vec<_>>(),
            [100, 101, 102]
        );
        assert_eq!(
            mem.consumer().load(Ordering::Relaxed),
            start.wrapping_add(3)
        );
        assert_eq!(cq.poll(&mut wc), Ok(1));
        assert_eq!(wc[0].wr_id, 103);
        assert_eq!(cq.poll(&mut wc), Ok(0));
        // Producer index beyond a full queue: broken, nothing consumed.
        mem.producer()
            .store(start.wrapping_add(100), Ordering::Release);
        assert_eq!(cq.poll(&mut wc), Err(CqBroken));
        assert_eq!(
            mem.consumer().load(Ordering::Relaxed),
            start.wrapping_add(4)
        );
    }

    #[test]
    fn cq_error_reported_once_drained() {
        let mem = HeapRing::new(1, 64, 0);
        let mut cq = CompletionQueue::new(mem.clone());
        put_cqe(&mem, 0, 1, 0);
        mem.producer().store(1, Ordering::Release);
        mem.error().store(1, Ordering::Release);
        let mut wc = [ibv_wc::default(); 4];
        // What is there is still delivered, then the error.
        assert_eq!(cq.poll(&mut wc), Ok(1));
        assert_eq!(cq.poll(&mut wc), Err(CqBroken));
    }
}
