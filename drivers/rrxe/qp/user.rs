// SPDX-License-Identifier: GPL-2.0
//! User QPs: intake of the work queues shared with a process (validated copies into the
//! driver's rings).

use super::wr::{RecvWr, SendKind, SendWr, Sge, WrRing};
use super::{Qp, UserRings, MAX_SGE};
use crate::glue::sync::IrqSpinLock;
use crate::glue::Queue;
use crate::ib::WcOpcode;
use core::sync::atomic::Ordering;
use kernel::prelude::*;

/// Whether a queue shared with a process may have entries for `ring`: its producer index
/// moved past the ring's `ucons` and the ring has room. Every run of a user QP asks (for
/// each received packet too): this check costs a lock and a load, where a pull zeroes
/// about a kilobyte of stack for its copies first.
fn may_pull<T: Copy>(q: &Queue, ring: &IrqSpinLock<WrRing<T>>) -> bool {
    let r = ring.lock();
    !r.full() && q.producer().load(Ordering::Acquire) != r.ucons
}

impl Qp {
    /// User QPs: copies new entries of the shared send queue into the driver's ring,
    /// validating each. Stops when the ring is full (continued at the next run).
    pub(super) fn pull_user_sq(&self) {
        let Some(u) = &self.user else { return };
        if may_pull(&u.sq, &self.sq) {
            self.pull_user_sq_entries(u);
        }
    }

    #[inline(never)]
    fn pull_user_sq_entries(&self, u: &UserRings) {
        let lim = crate::uwqe::SendLimits {
            max_sge: self.max_send_sge,
            max_inline: self.max_inline,
            ud: self.kind.is_ud(),
            ahs: &self.dev.get().data().ahs,
            pd: self.pd,
        };
        let slot_len = (u.sq.slot_words() * 8)
            .min(crate::uwqe::SEND_HDR + MAX_SGE as usize * crate::uwqe::SGE);
        let mut bytes = [0u8; crate::uwqe::SEND_HDR + MAX_SGE as usize * crate::uwqe::SGE];
        let mut sges = [Sge::default(); MAX_SGE as usize];
        loop {
            let mut sq = self.sq.lock();
            if sq.full() {
                return;
            }
            let prod = u.sq.producer().load(Ordering::Acquire);
            let avail = prod.wrapping_sub(sq.ucons);
            if avail == 0 {
                return;
            }
            if avail > u.sq.slots() {
                // A producer index no valid process writes: stop reading this queue.
                drop(sq);
                self.set_error_async();
                return;
            }
            let i = sq.ucons;
            // One copy out of the shared slot; everything below reads the copy.
            let Some(hdr) = bytes.get_mut(..slot_len) else {
                return;
            };
            u.sq.read_slot_bytes(i, 0, hdr);
            let decoded = crate::uwqe::decode_send(hdr, &lim, &mut sges);
            let r = match decoded {
                Some(us) => {
                    let n = us.wr.num_sge as usize;
                    let at = sq.prod;
                    let r = sq.push(us.wr, sges.get(..n).unwrap_or(&[]), None);
                    // Inline data goes straight from the shared slot into the ring's copy.
                    if let (Ok(()), Some((off, len))) = (&r, us.inline) {
                        let (s0, max) = (sq.idx(at) * sq.max_inline, sq.max_inline);
                        if let Some(d) = sq.inline.get_mut(s0..s0 + len.min(max)) {
                            u.sq.read_slot_bytes(i, off, d);
                        }
                    }
                    r
                }
                None => {
                    let mut id = [0u8; 8];
                    id.copy_from_slice(hdr.get(..8).unwrap_or(&[0; 8]));
                    let bad = SendWr {
                        wr_id: u64::from_ne_bytes(id),
                        kind: SendKind::Invalid,
                        wc_opcode: WcOpcode::Send,
                        len: 0,
                        signaled: true,
                        solicited: false,
                        fence: false,
                        inline: false,
                        num_sge: 0,
                        ud: None,
                        xrc_srqn: 0,
                    };
                    sq.push(bad, &[], None)
                }
            };
            if r.is_err() {
                return;
            }
            sq.ucons = sq.ucons.wrapping_add(1);
            u.sq.consumer().store(sq.ucons, Ordering::Release);
        }
    }

    /// User QPs: copies new receive WQEs of the shared receive queue into the driver's ring.
    pub(super) fn pull_user_rq(&self) {
        let Some(u) = &self.user else { return };
        // All of them (at most the ring's size): the QP takes its receive WQEs from its own
        // ring only, never pulling on the way (see `Qp::claim_head`). Each WQE is copied
        // under the ring's lock alone; only `engine` (bottom halves off) spans the loop.
        if pull_recv_queue(&u.rq, &self.rq, self.max_recv_sge, u32::MAX).is_err() {
            self.set_error_async();
        }
    }

    /// Moves the QP to the error state from the work (a corrupt user queue).
    pub(super) fn set_error_async(&self) {
        crate::glue::dbg(
            self.dev.get(),
            c"user queue corrupt: QP to error",
            u64::from(self.qpn),
            0,
        );
        self.want_error.store(true, Ordering::Release);
        if let Some(u) = &self.user {
            u.sq.error_flag().store(1, Ordering::Release);
        }
    }
}

/// Copies up to `batch` new receive WQEs of a queue shared with a process into a driver
/// ring, validating each; stops when the ring is full. Each WQE is read, checked and
/// pushed under the ring's lock on its own (the caller holds no interrupts-off lock), so
/// no interrupts-off section spans more than one WQE. `Err` when the queue is corrupt (its
/// producer index or an entry): the caller moves its owner to the error state.
fn pull_recv_queue(
    q: &Queue,
    ring: &IrqSpinLock<WrRing<RecvWr>>,
    max_sge: u32,
    batch: u32,
) -> Result<(), ()> {
    if !may_pull(q, ring) {
        return Ok(());
    }
    pull_recv_entries(q, ring, max_sge, batch)
}

#[inline(never)]
fn pull_recv_entries(
    q: &Queue,
    ring: &IrqSpinLock<WrRing<RecvWr>>,
    max_sge: u32,
    batch: u32,
) -> Result<(), ()> {
    let mut buf = RecvPullBuf::new();
    for _ in 0..batch {
        if !pull_one_recv(q, &mut ring.lock(), max_sge, &mut buf)? {
            return Ok(());
        }
    }
    Ok(())
}

/// The copies [`pull_one_recv`] makes of a user receive WQE (about a kilobyte: made once
/// per batch).
pub(crate) struct RecvPullBuf {
    bytes: [u8; crate::uwqe::RECV_HDR + MAX_SGE as usize * crate::uwqe::SGE],
    sges: [Sge; MAX_SGE as usize],
}

impl RecvPullBuf {
    pub(crate) fn new() -> Self {
        Self {
            bytes: [0; crate::uwqe::RECV_HDR + MAX_SGE as usize * crate::uwqe::SGE],
            sges: [Sge::default(); MAX_SGE as usize],
        }
    }
}

/// Copies the next new receive WQE of the shared queue `q` into `rq` (the caller holds
/// `rq`'s lock: one WQE read, checked and pushed). `Ok(false)` when there is none or `rq`
/// is full; `Err` when the queue is corrupt (its producer index or the entry).
pub(crate) fn pull_one_recv(
    q: &Queue,
    rq: &mut WrRing<RecvWr>,
    max_sge: u32,
    buf: &mut RecvPullBuf,
) -> Result<bool, ()> {
    if rq.full() {
        return Ok(false);
    }
    let prod = q.producer().load(Ordering::Acquire);
    let avail = prod.wrapping_sub(rq.ucons);
    if avail == 0 {
        return Ok(false);
    }
    if avail > q.slots() {
        return Err(());
    }
    let slot_len =
        (q.slot_words() * 8).min(crate::uwqe::RECV_HDR + MAX_SGE as usize * crate::uwqe::SGE);
    let i = rq.ucons;
    let wqe = buf.bytes.get_mut(..slot_len).ok_or(())?;
    q.read_slot_bytes(i, 0, wqe);
    let (wr_id, n, len) = crate::uwqe::decode_recv(wqe, max_sge, &mut buf.sges).ok_or(())?;
    let wr = RecvWr {
        wr_id,
        num_sge: n,
        len,
    };
    if rq
        .push(wr, buf.sges.get(..n as usize).unwrap_or(&[]), None)
        .is_err()
    {
        return Ok(false);
    }
    rq.ucons = rq.ucons.wrapping_add(1);
    q.consumer().store(rq.ucons, Ordering::Release);
    Ok(true)
}
