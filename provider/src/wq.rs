// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The provider's data path over the shared queues: posting send and receive work requests
//! and polling completions, generic over the queue memory so the host tests run it on heap
//! rings. The FFI shells in `abi::objects` walk the callers' C lists, lock, and call these.

// Logic only: the FFI layer (`crate::abi`) holds all unsafe code.
#![deny(unsafe_code)]

use crate::abi::verbs::ibv_wc;
use crate::ring::{Consumer, Producer, RingError, RingMem};
use crate::wqe::{self, SendLimits, SendWr, Sge, WrError, CQE, MAX_WQE};
use rrxe_proto::uabi;

fn ring_err(e: RingError) -> WrError {
    match e {
        RingError::Full => WrError::Full,
        RingError::TooBig => WrError::TooManySge,
        RingError::Corrupt => WrError::Broken,
    }
}

/// `enum ibv_qp_state`.
pub mod qp_state {
    pub const RESET: u32 = 0;
    pub const INIT: u32 = 1;
    pub const RTR: u32 = 2;
    pub const RTS: u32 = 3;
    pub const SQD: u32 = 4;
    pub const SQE: u32 = 5;
    pub const ERR: u32 = 6;
}

/// A QP's state as far as posting needs it, for a provider that posts without a system call
/// and so never hears the kernel say "not in this state".
///
/// Why the provider's own view is enough: the states that refuse work requests (RESET for
/// receives; RESET, INIT and RTR for sends) are only ever entered through `ibv_modify_qp`
/// (and creation, in RESET): the kernel moves a QP on its own only to SQE or ERROR, and
/// both take work requests (in ERROR they complete flushed). So the state the last
/// successful modify (or query) reported decides exactly as the kernel's would, and a
/// kernel-initiated move to ERROR, which the provider does not see, cannot make posting
/// fail. A state the kernel publishes in the ring header would need a kernel change and
/// decide nothing more.
///
/// The rules are rdma_rxe's: `rxe_post_send` refuses a QP below RTS with EINVAL,
/// `rxe_post_recv` one below INIT (its comment cites IBTA C10-97.2.1); librxe checks the
/// receive side itself for the same reason we do.
#[derive(Debug, Default)]
pub struct QpState(core::sync::atomic::AtomicU32);

impl QpState {
    /// Records the state a successful modify moved the QP to (or a query reported).
    pub fn set(&self, state: u32) {
        self.0.store(state, core::sync::atomic::Ordering::Release);
    }

    /// The state last recorded (RESET for a new QP).
    pub fn get(&self) -> u32 {
        self.0.load(core::sync::atomic::Ordering::Acquire)
    }

    /// Whether the send queue takes work requests: RTS, SQD, SQE and ERROR.
    pub fn check_send(&self) -> Result<(), WrError> {
        use qp_state::*;
        match self.get() {
            RTS | SQD | SQE | ERR => Ok(()),
            _ => Err(WrError::QpState),
        }
    }

    /// Whether receives just posted need the doorbell: in ERROR they are to complete
    /// flushed at once (IBTA; rdma_rxe's kernel `rxe_post_recv` schedules its flush for the
    /// same reason), and the kernel only looks at the receive queue when it runs the QP.
    /// Only a state recorded here is seen: receives posted after a kernel-initiated move to
    /// ERROR that no query reported wait for the next doorbell or modify (as with librxe,
    /// whose receives never reach the kernel).
    pub fn recv_needs_doorbell(&self) -> bool {
        self.get() == qp_state::ERR
    }

    /// Whether the receive queue takes work requests: every state from INIT on.
    pub fn check_recv(&self) -> Result<(), WrError> {
        use qp_state::*;
        match self.get() {
            INIT | RTR | RTS | SQD | SQE | ERR => Ok(()),
            _ => Err(WrError::QpState),
        }
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

    /// Drops what was staged and not published.
    pub fn discard(&mut self) {
        self.ring.discard();
    }
}

/// The work request being built by the `ibv_wr_*` calls: the opcode call starts it, the
/// setters complete it, the next opcode call (or `ibv_wr_complete`) stages it.
#[derive(Clone, Debug, Default)]
struct Building {
    wr: SendWr,
    sges: Vec<Sge>,
    /// `Some` once `set_inline_data(_list)` gave the data (copied: the caller's buffers may be
    /// reused as soon as the call returns).
    inline: Option<Vec<u8>>,
}

/// A batch of send work requests posted through the extended API (`ibv_wr_start`, the
/// opcode calls and setters, `ibv_wr_complete` or `ibv_wr_abort`). Either every request of
/// the batch reaches the queue or none does: the first error is kept and reported by
/// [`WrBatch::complete`], which then drops the batch.
#[derive(Debug, Default)]
pub struct WrBatch {
    active: bool,
    cur: Option<Building>,
    err: Option<WrError>,
}

impl WrBatch {
    fn fail(&mut self, e: WrError) {
        if self.err.is_none() {
            self.err = Some(e);
        }
    }

    /// `ibv_wr_start`.
    pub fn start(&mut self) {
        *self = Self {
            active: true,
            ..Self::default()
        };
    }

    /// Whether a batch is open.
    pub fn active(&self) -> bool {
        self.active
    }

    /// Stages the request being built, if any.
    fn flush<M: RingMem>(&mut self, sq: &mut SendQueue<M>) {
        let Some(b) = self.cur.take() else { return };
        if self.err.is_some() {
            return;
        }
        let r = match &b.inline {
            Some(data) => sq.stage(&b.wr, &[], Some(&[data.as_slice()])),
            None => sq.stage(&b.wr, &b.sges, None),
        };
        if let Err(e) = r {
            self.fail(e);
        }
    }

    /// An opcode call (`ibv_wr_send`, `ibv_wr_rdma_write`, ...): a new request. The
    /// previous one is staged first.
    pub fn begin<M: RingMem>(&mut self, sq: &mut SendQueue<M>, wr: SendWr) {
        if !self.active {
            // Nothing to report it to: ibv_wr_complete of a batch never started fails.
            return;
        }
        self.flush(sq);
        self.cur = Some(Building {
            wr,
            ..Building::default()
        });
    }

    /// Marks the batch failed with `e` (an opcode the QP cannot do).
    pub fn reject(&mut self, e: WrError) {
        if self.active {
            self.fail(e);
            self.cur = None;
        }
    }

    fn current(&mut self) -> Option<&mut Building> {
        if !self.active {
            return None;
        }
        if self.cur.is_none() {
            self.fail(WrError::Sequence);
        }
        self.cur.as_mut()
    }

    /// `ibv_wr_set_sge` / `ibv_wr_set_sge_list`.
    pub fn set_sges(&mut self, sges: &[Sge]) {
        if let Some(b) = self.current() {
            b.sges.clear();
            b.sges.extend_from_slice(sges);
            b.inline = None;
            b.wr.send_flags &= !uabi::SEND_INLINE;
        }
    }

    /// `ibv_wr_set_inline_data` / `ibv_wr_set_inline_data_list`: the bytes are copied now.
    pub fn set_inline(&mut self, pieces: &[&[u8]], max_inline: u32) {
        let total: usize = pieces.iter().map(|p| p.len()).sum();
        if total > max_inline as usize {
            self.fail(WrError::InlineTooLong);
            return;
        }
        if let Some(b) = self.current() {
            let mut v = Vec::with_capacity(total);
            for p in pieces {
                v.extend_from_slice(p);
            }
            b.inline = Some(v);
            b.sges.clear();
            b.wr.send_flags |= uabi::SEND_INLINE;
        }
    }

    /// `ibv_wr_set_xrc_srqn`.
    pub fn set_xrc_srqn(&mut self, srqn: u32) {
        if let Some(b) = self.current() {
            b.wr.xrc_srqn = srqn;
        }
    }

    /// `ibv_wr_set_ud_addr`.
    pub fn set_ud(&mut self, ah_num: u32, remote_qpn: u32, remote_qkey: u32) {
        if let Some(b) = self.current() {
            b.wr.ah_num = ah_num;
            b.wr.remote_qpn = remote_qpn;
            b.wr.remote_qkey = remote_qkey;
        }
    }

    /// `ibv_wr_complete`: stages the last request and publishes the batch (`Ok(true)`: ring
    /// the doorbell), or drops all of it and reports the first error.
    pub fn complete<M: RingMem>(&mut self, sq: &mut SendQueue<M>) -> Result<bool, WrError> {
        if !self.active {
            return Err(WrError::Sequence);
        }
        self.flush(sq);
        let err = self.err;
        *self = Self::default();
        match err {
            Some(e) => {
                sq.discard();
                Err(e)
            }
            None => Ok(sq.publish()),
        }
    }

    /// `ibv_wr_abort`: nothing of the batch is posted.
    pub fn abort<M: RingMem>(&mut self, sq: &mut SendQueue<M>) {
        if self.active {
            sq.discard();
        }
        *self = Self::default();
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

    /// The kernel moved the queue to `mem` (an SRQ resize succeeded, having read every
    /// request posted in the old queue): requests go there from now on, from its producer
    /// index.
    pub fn replace(&mut self, mem: M) {
        self.ring = Producer::new(mem);
    }

    /// The queue the kernel reads is gone and its successor could not be mapped: every
    /// post fails from now on ([`WrError::Broken`]) rather than land where nobody reads.
    pub fn break_queue(&mut self) {
        self.ring
            .mem()
            .error()
            .store(1, core::sync::atomic::Ordering::Release);
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

/// A CQ's ring across resizes: the ring the kernel writes, described by `info`, and mapped
/// unless the mapping failed.
///
/// A successful resize moves the pending completions to a new ring and frees the old one in
/// the kernel: from then on the old mapping is dead (nothing new ever appears in it), so
/// keeping it after the new mapping failed would make the CQ look empty forever. Instead the
/// new ring is remembered and mapped on the next use; until that works, polling fails.
pub struct CqRing<M: RingMem, I> {
    /// `None` only while mapping `info` failed.
    cq: Option<CompletionQueue<M>>,
    /// Where the kernel's current ring is.
    info: I,
}

impl<M: RingMem, I> CqRing<M, I> {
    /// A CQ on `mem`, the mapping of `info`.
    pub fn new(mem: M, info: I) -> Self {
        Self {
            cq: Some(CompletionQueue::new(mem)),
            info,
        }
    }

    /// The mapped ring, mapping it first with `map` if needed.
    pub fn ring<E>(
        &mut self,
        map: impl FnOnce(&I) -> Result<M, E>,
    ) -> Result<&mut CompletionQueue<M>, E> {
        let q = match self.cq.take() {
            Some(q) => q,
            None => CompletionQueue::new(map(&self.info)?),
        };
        Ok(self.cq.insert(q))
    }

    /// The kernel moved the CQ to the ring `info` describes (a resize succeeded). The old
    /// mapping is dropped first (its address space may be what the new one needs), then the
    /// new ring is mapped; if that fails, the error is returned and the next use retries.
    pub fn replace<E>(&mut self, info: I, map: impl FnOnce(&I) -> Result<M, E>) -> Result<(), E> {
        self.cq = None;
        self.info = info;
        self.ring(map).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
            opcode: uabi::WR_SEND,
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

    #[test]
    fn recv_queue_replaced_by_a_resize() {
        let old = HeapRing::new(1, 64, 0);
        let mut q = RecvQueue::new(old.clone(), 1);
        q.stage(1, &[Sge::default()]).unwrap();
        q.stage(2, &[Sge::default()]).unwrap();
        assert_eq!(q.stage(3, &[Sge::default()]), Err(WrError::Full));
        q.publish();
        // The kernel read both and moved the SRQ to a larger, empty queue.
        let new = HeapRing::new(3, 64, 0);
        q.replace(new.clone());
        assert_eq!(q.capacity(), 8);
        for id in 3..11 {
            q.stage(id, &[Sge::default()]).unwrap();
        }
        assert_eq!(q.stage(11, &[Sge::default()]), Err(WrError::Full));
        q.publish();
        assert_eq!(new.producer().load(Ordering::Relaxed), 8);
        assert_eq!(old.producer().load(Ordering::Relaxed), 2);
        // A queue that could not be mapped takes nothing.
        q.break_queue();
        new.consumer().store(8, Ordering::Relaxed);
        assert_eq!(q.stage(12, &[Sge::default()]), Err(WrError::Broken));
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
                uabi::WR_SEND_WITH_IMM,
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

    fn read_slot(mem: &HeapRing, i: u32) -> Vec<u8> {
        let mut b = vec![0u8; mem.slot_size()];
        mem.read_slot(i & (mem.slots() - 1), &mut b);
        b
    }

    #[test]
    fn wr_batch_posts_all_or_nothing() {
        let (mem, mut q) = sq(2);
        let mut b = WrBatch::default();
        // Outside a batch nothing happens and completing fails.
        b.begin(&mut q, SendWr::default());
        assert_eq!(b.complete(&mut q), Err(WrError::Sequence));
        assert!(!b.active());

        b.start();
        let w = SendWr {
            wr_id: 7,
            opcode: uabi::WR_SEND,
            ..Default::default()
        };
        b.begin(&mut q, w);
        b.set_sges(&[Sge {
            addr: 0x1000,
            length: 64,
            lkey: 5,
        }]);
        let w2 = SendWr {
            wr_id: 8,
            opcode: uabi::WR_RDMA_WRITE,
            rkey: 9,
            remote_addr: 0x2000,
            ..Default::default()
        };
        b.begin(&mut q, w2);
        b.set_inline(&[b"ab", b"cd"], 64);
        // Staged, not visible, until complete.
        assert_eq!(mem.producer().load(Ordering::Relaxed), 0);
        assert_eq!(b.complete(&mut q), Ok(true));
        assert_eq!(mem.producer().load(Ordering::Relaxed), 2);
        let s0 = read_slot(&mem, 0);
        assert_eq!(&s0[..8], &7u64.to_ne_bytes());
        assert_eq!(&s0[16..20], &1u32.to_ne_bytes()); // one SGE
        let s1 = read_slot(&mem, 1);
        assert_eq!(&s1[..8], &8u64.to_ne_bytes());
        let flags = u32::from_ne_bytes(s1[12..16].try_into().unwrap());
        assert_ne!(flags & uabi::SEND_INLINE, 0);
        assert_eq!(&s1[20..24], &4u32.to_ne_bytes()); // inline length
        assert_eq!(&s1[wqe::SEND_HDR..wqe::SEND_HDR + 4], b"abcd");

        // A failing request drops the whole batch, and the first error is reported.
        b.start();
        b.begin(&mut q, w);
        b.set_sges(&[Sge::default(); 5]); // the queue takes 4
        b.begin(&mut q, w);
        b.set_inline(&[&[0u8; 65]], 64);
        assert_eq!(b.complete(&mut q), Err(WrError::TooManySge));
        assert_eq!(mem.producer().load(Ordering::Relaxed), 2);
        // The slots are reused by the next batch.
        b.start();
        b.begin(&mut q, w);
        assert_eq!(b.complete(&mut q), Ok(true));
        assert_eq!(mem.producer().load(Ordering::Relaxed), 3);

        // A setter before any opcode, an unsupported opcode, abort.
        b.start();
        b.set_sges(&[]);
        assert_eq!(b.complete(&mut q), Err(WrError::Sequence));
        b.start();
        b.reject(WrError::Unsupported);
        assert_eq!(b.complete(&mut q), Err(WrError::Unsupported));
        b.start();
        b.begin(&mut q, w);
        b.begin(&mut q, w);
        b.abort(&mut q);
        assert_eq!(mem.producer().load(Ordering::Relaxed), 3);
        // A full queue: 4 slots, 3 used by the kernel's view (consumer 0).
        b.start();
        b.begin(&mut q, w);
        b.begin(&mut q, w);
        assert_eq!(b.complete(&mut q), Err(WrError::Full));
        assert_eq!(WrError::Full.errno(), libc::ENOMEM);
        assert_eq!(WrError::Unsupported.errno(), libc::EOPNOTSUPP);
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

    #[test]
    fn qp_state_gates_posting_like_rxe() {
        use qp_state::*;
        let st = QpState::default();
        // A new QP is in RESET: neither queue takes requests.
        assert_eq!(st.get(), RESET);
        assert_eq!(st.check_send(), Err(WrError::QpState));
        assert_eq!(st.check_recv(), Err(WrError::QpState));
        assert_eq!(WrError::QpState.errno(), libc::EINVAL);
        let table = [
            (INIT, false, true),
            (RTR, false, true),
            (RTS, true, true),
            (SQD, true, true),
            (SQE, true, true),
            (ERR, true, true),
            (RESET, false, false),
            (7, false, false),
        ];
        for (state, send, recv) in table {
            st.set(state);
            assert_eq!(st.check_send().is_ok(), send, "send in {state}");
            assert_eq!(st.check_recv().is_ok(), recv, "recv in {state}");
            assert_eq!(
                st.recv_needs_doorbell(),
                state == ERR,
                "doorbell in {state}"
            );
        }
    }

    #[test]
    fn cq_ring_survives_a_failed_mapping() {
        // The ring before the resize, with one completion the caller never polls.
        let old = HeapRing::new(2, 64, 0);
        put_cqe(&old, 0, 7, 0);
        old.producer().store(1, Ordering::Release);
        let mut r: CqRing<HeapRing, u32> = CqRing::new(old.clone(), 1);
        // The kernel moved the completion to a new ring of 8 entries (info 2); mapping it
        // fails: the error comes back, and the dead ring is not polled any more.
        let new = HeapRing::new(3, 64, 0);
        put_cqe(&new, 0, 7, 0);
        put_cqe(&new, 1, 8, 0);
        new.producer().store(2, Ordering::Release);
        assert_eq!(r.replace(2, |_| Err(libc::ENOMEM)), Err(libc::ENOMEM));
        assert_eq!(
            r.ring(|i| {
                assert_eq!(*i, 2, "the new ring is the one mapped");
                Err::<HeapRing, _>(libc::ENOMEM)
            })
            .err(),
            Some(libc::ENOMEM)
        );
        // The next use maps it and sees exactly what the kernel put there.
        let mut wc = [ibv_wc::default(); 4];
        let q = r.ring(|_| Ok::<_, i32>(new.clone())).unwrap();
        assert_eq!(q.capacity(), 8);
        assert_eq!(q.poll(&mut wc), Ok(2));
        assert_eq!((wc[0].wr_id, wc[1].wr_id), (7, 8));
        // Mapped now: `map` is not called again.
        let q = r
            .ring(|_| -> Result<HeapRing, i32> { panic!("mapped twice") })
            .unwrap();
        assert_eq!(q.poll(&mut wc), Ok(0));
        // A replace whose mapping works is used at once.
        let third = HeapRing::new(4, 64, 0);
        put_cqe(&third, 0, 9, 0);
        third.producer().store(1, Ordering::Release);
        assert_eq!(r.replace(3, |_| Ok::<_, i32>(third.clone())), Ok(()));
        let q = r
            .ring(|_| -> Result<HeapRing, i32> { panic!("mapped twice") })
            .unwrap();
        assert_eq!(q.poll(&mut wc), Ok(1));
        assert_eq!(wc[0].wr_id, 9);
    }
}
