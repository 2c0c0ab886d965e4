// SPDX-License-Identifier: GPL-2.0
//! The action sink: applies proto's actions (transmit, place, complete, timers) as they come.

use super::wr::{sge_chunks, Sge, SgeCopy};
use super::{timer_idx, Qp, GRH_LEN, RDMA_NETWORK_IPV4, RDMA_NETWORK_IPV6};
use crate::ah::Av;
use crate::counters::Counter;
use crate::cq::Completion;
use crate::fault::{Dir, FaultAction};
use crate::glue::bindings as b;
use crate::glue::mem::{PayloadCrc, Xfer};
use crate::glue::NetDev;
use crate::ib::{WcOpcode, WcStatus};
use crate::mr::{AccessError, AccessFlags, Fault};
use crate::proto::{self, Action, ActionSink};
use kernel::prelude::*;

/// The received packet an action refers to.
#[derive(Clone, Copy)]
pub(super) struct RxCtx<'a> {
    /// The IB packet (BTH to ICRC): `PktRange`s index into it.
    pub(super) ib: &'a [u8],
    /// The IP header (for the GRH of UD receives).
    pub(super) ip_hdr: &'a [u8],
    pub(super) smac: [u8; 6],
}

/// Applies proto's actions as they come.
pub(super) struct Sink<'a, 'b> {
    pub(super) qp: &'a Qp,
    pub(super) av: Option<Av>,
    pub(super) sport: u16,
    pub(super) ndev: Option<&'a NetDev>,
    pub(super) pkt: Option<RxCtx<'a>>,
    /// What the engine keeps between packets (the route of a connected QP sending to `av`,
    /// the source netdev), each part if it may be used.
    pub(super) kept: crate::net::Kept<'a>,
    /// Where a run's packets wait to leave as one chain ([`crate::net::TxBatch`], owned by
    /// the run, which sends what it holds when dropped); `None`: each packet leaves at once.
    pub(super) batch: Option<&'b mut crate::net::TxBatch<'a>>,
}

impl Sink<'_, '_> {
    /// Sends the packets the batch holds; those lost on the way are counted as
    /// `tx_drops`.
    pub(super) fn flush(&mut self) {
        if let Some(b) = self.batch.as_mut() {
            b.flush();
        }
        self.count_batch();
    }

    /// Counts what the batch reports of the chains it sent: the packets held count as sent
    /// once their chain is, as lost if it was not.
    fn count_batch(&mut self) {
        if let Some(b) = self.batch.as_mut() {
            let lost = core::mem::take(&mut b.lost);
            if lost != 0 {
                self.qp.count(Counter::TxDrops, u64::from(lost));
            }
            let sent = core::mem::take(&mut b.sent_pkts);
            if sent != 0 {
                self.qp.count(Counter::SentPkts, u64::from(sent));
                self.qp
                    .count(Counter::SentBytes, core::mem::take(&mut b.sent_bytes));
            }
            let chains = core::mem::take(&mut b.chains);
            if chains != 0 {
                self.qp.count(Counter::TxChains, u64::from(chains));
            }
        }
    }

    fn pkt_bytes(&self, r: proto::PktRange) -> Option<&[u8]> {
        let p = self.pkt?;
        p.ib.get(r.off as usize..(r.off as usize).checked_add(r.len as usize)?)
    }

    /// Transmits `tx`. `Err` only if its payload cannot be read (a send WQE's gather list,
    /// the MR of a READ response): proto decides what follows. Any other failure is a lost
    /// packet (counted), which the protocol recovers like a loss on the wire.
    fn send(&mut self, tx: &proto::TxPacket) -> Result<(), proto::PlaceError> {
        let qp = self.qp;
        if self.ndev.is_none() {
            qp.count(Counter::TxDrops, 1);
            return Ok(());
        }
        // A UD packet goes where its WQE says: only a connected QP's route is kept.
        let kept = crate::net::Kept {
            route: self.kept.route.filter(|_| tx.ud_wqe.is_none()),
            ..self.kept
        };
        let av = match tx.ud_wqe {
            Some(id) => qp
                .sq
                .lock()
                .get(id.0 as u32)
                .and_then(|w| w.ud.map(|(av, _)| av)),
            None => self.av,
        };
        let Some(av) = av else { return Ok(()) };
        // Fault injection (nothing but one relaxed load without a rule): a dropped packet
        // is lost as on the wire, its payload never read.
        let d = qp.dev.get().data();
        let fault = d
            .faults
            .check(qp.dev.get(), &d.counters, qp.qpn, Dir::Tx, &tx.hdrs);
        if fault == Some(FaultAction::Drop) {
            return Ok(());
        }
        let len = tx.payload.len();
        let mut gather = Ok(());
        let fill = |buf: &mut [u8], crc: &mut PayloadCrc| -> bool {
            match tx.payload {
                proto::Payload::None => true,
                proto::Payload::Inline(v) => {
                    let n = buf.len().min(8);
                    match (buf.get_mut(..n), v.get(..n)) {
                        (Some(d), Some(s)) => proto::copy_exact(d, s),
                        _ => false,
                    }
                }
                proto::Payload::Mr {
                    rkey, va, xrc_srqn, ..
                } => {
                    // The MR was checked when the READ arrived (an XRC target: in the PD of
                    // the SRQ the READ named); it may have gone since.
                    let pd = qp.read_pd(xrc_srqn);
                    let to = Xfer::From { buf, crc, at: 0 };
                    gather = qp.remote_copy(pd, rkey, va, to, AccessFlags::REMOTE_READ);
                    gather.is_ok()
                }
                proto::Payload::Wqe { id, offset, .. } => {
                    let i = id.0 as u32;
                    let mut sges = SgeCopy::new();
                    {
                        let sq = qp.sq.lock();
                        let Some(wr) = sq.get(i) else { return false };
                        if wr.inline {
                            let data = sq.inline(i, wr.len);
                            return match data.get(offset as usize..offset as usize + buf.len()) {
                                Some(s) => proto::copy_exact(buf, s),
                                None => false,
                            };
                        }
                        sges.fill(sq.sges(i, wr.num_sge));
                    }
                    // The MR copy runs outside the ring's interrupts-off lock (the WR's
                    // slot stays ours: it completes only in this engine run or a later one).
                    let mut to = Xfer::From { buf, crc, at: 0 };
                    gather = qp.wr_buffer_copy(sges.sges(), offset, &mut to);
                    gather.is_ok()
                }
            }
        };
        let mut fill = fill;
        let corrupt = fault == Some(FaultAction::Icrc);
        let dev = qp.dev.get();
        // A connected QP's packets may wait in the run's batch; a UD packet, whose
        // destination is its WQE's, leaves at once.
        let mut batch = self.batch.as_deref_mut().filter(|_| tx.ud_wqe.is_none());
        // A batched packet counts as sent when its chain is (`count_batch`).
        let batched = batch.is_some();
        let sport = self.sport;
        let mut send_one =
            |corrupt: bool, fill: &mut dyn FnMut(&mut [u8], &mut PayloadCrc) -> bool| match batch
                .as_mut()
            {
                Some(b) => crate::net::transmit_batched(
                    dev, &av, sport, &tx.hdrs, len, kept, corrupt, fill, b,
                ),
                None => crate::net::transmit(dev, &av, sport, &tx.hdrs, len, kept, corrupt, fill),
            };
        let mut sent = send_one(corrupt, &mut fill);
        if fault == Some(FaultAction::Dup) {
            if let Ok(bytes) = sent {
                // The first copy counted here, the duplicate below like any packet.
                if !batched {
                    qp.count(Counter::SentPkts, 1);
                    qp.count(Counter::SentBytes, u64::from(bytes));
                }
                super::trace_pkt(dev, qp.qpn, true, &tx.hdrs, len);
                sent = send_one(false, &mut fill);
            }
        }
        // A chain this packet sent when it started the next one.
        self.count_batch();
        gather?;
        match sent {
            Ok(bytes) => {
                if !batched {
                    qp.count(Counter::SentPkts, 1);
                    qp.count(Counter::SentBytes, u64::from(bytes));
                }
                super::trace_pkt(dev, qp.qpn, true, &tx.hdrs, len);
            }
            Err(e) => {
                qp.count(Counter::TxDrops, 1);
                crate::glue::dbg(
                    qp.dev.get(),
                    c"transmit failed",
                    u64::from(qp.qpn),
                    e as u64,
                );
            }
        }
        Ok(())
    }

    /// Places bytes into send WQE `id`'s buffer (READ response data, an atomic's result).
    fn place_wqe(
        &self,
        id: proto::WqeId,
        offset: u32,
        data: &[u8],
    ) -> Result<(), proto::PlaceError> {
        let qp = self.qp;
        let i = id.0 as u32;
        let mut sges = SgeCopy::new();
        {
            let sq = qp.sq.lock();
            let wr = sq.get(i).ok_or(proto::PlaceError::Protection)?;
            sges.fill(sq.sges(i, wr.num_sge));
        }
        qp.wr_buffer_copy(sges.sges(), offset, &mut Xfer::To(data))
    }

    /// Places bytes into the receive WQE of the message in progress.
    fn place_recv(&self, offset: u32, data: &[u8]) -> Result<(), proto::PlaceError> {
        let qp = self.qp;
        // proto asked recv_head_len first: a WQE is claimed (else nothing can take the data).
        qp.claim_head().ok_or(proto::PlaceError::Length)?;
        let mut sges = SgeCopy::new();
        {
            let c = qp.claim.lock();
            let cl = c.as_ref().ok_or(proto::PlaceError::Length)?;
            sges.fill(cl.sges.get(..cl.wr.num_sge as usize).unwrap_or(&[]));
        }
        qp.wr_buffer_copy(sges.sges(), offset, &mut Xfer::To(data))
    }

    /// UD: the GRH area of the receive buffer, from the packet's IP header (the IPv6 header,
    /// or the IPv4 header in its last 20 bytes).
    fn place_grh(&self) -> Result<(), proto::PlaceError> {
        let Some(p) = self.pkt else {
            return Err(proto::PlaceError::Length);
        };
        let mut grh = [0u8; GRH_LEN];
        let h = p.ip_hdr;
        let at = GRH_LEN.saturating_sub(h.len());
        if let Some(d) = grh.get_mut(at..at + h.len()) {
            proto::copy_exact(d, h);
        }
        self.place_recv(0, &grh)
    }

    /// Places the bytes of a placement action; the result goes back to proto.
    fn place_action(&mut self, a: &Action) -> Result<(), proto::PlaceError> {
        let qp = self.qp;
        let missing = proto::PlaceError::Length;
        match *a {
            Action::PlaceWqe { id, offset, src } => {
                let data = self.pkt_bytes(src).ok_or(missing)?;
                self.place_wqe(id, offset, data)
            }
            // The CQE consumer reads the original value in host order.
            Action::AtomicResult { id, value } => self.place_wqe(id, 0, &value.to_ne_bytes()),
            Action::PlaceRecv { offset, src } => {
                let data = self.pkt_bytes(src).ok_or(missing)?;
                self.place_recv(offset, data)
            }
            Action::PlaceGrh => self.place_grh(),
            Action::PlaceMr { rkey, va, src } => {
                let data = self.pkt_bytes(src).ok_or(missing)?;
                // Checked at the message's first packet; re-checked here because the MR or
                // window may have been invalidated or deregistered since (rdma_rxe re-looks
                // the rkey up for every packet).
                qp.remote_copy(
                    qp.resp_pd(),
                    rkey,
                    va,
                    Xfer::To(data),
                    AccessFlags::REMOTE_WRITE,
                )
            }
            _ => Ok(()),
        }
    }

    fn recv_complete(&mut self, c: &proto::RecvCompletion) {
        let qp = self.qp;
        let _ = qp.claim_head();
        let Some(cl) = qp.claim.lock().take() else {
            return;
        };
        let wr = cl.wr;
        let mut flags = 0;
        let mut ex = 0;
        if let Some(imm) = c.imm {
            flags |= b::ib_wc_flags_IB_WC_WITH_IMM;
            // The CQE holds immediate data in wire (big-endian) byte order.
            ex = imm.to_be();
        } else if let (Some(k), proto::WcStatus::Success) = (c.inv_rkey, c.status) {
            // proto invalidated the key (ResponderEnv::invalidate) before reporting it: a key
            // that could not be invalidated is never reported (rdma_rxe sets
            // IB_WC_WITH_INVALIDATE only on a successful completion).
            flags |= b::ib_wc_flags_IB_WC_WITH_INVALIDATE;
            ex = k;
        }
        let mut comp = Completion {
            wr_id: wr.wr_id,
            status: WcStatus::from(c.status),
            opcode: match c.kind {
                proto::RecvKind::Send => WcOpcode::Recv,
                proto::RecvKind::WriteImm => WcOpcode::RecvRdmaWithImm,
            },
            byte_len: c.byte_len,
            ex,
            qp_num: qp.qpn,
            src_qp: c.src_qp,
            wc_flags: flags,
            qp_addr: qp.ibqp_addr,
            ..Default::default()
        };
        if qp.kind.is_ud() && c.status == proto::WcStatus::Success {
            if let Some(p) = self.pkt {
                comp.wc_flags |= b::ib_wc_flags_IB_WC_GRH
                    | b::ib_wc_flags_IB_WC_WITH_NETWORK_HDR_TYPE
                    | b::ib_wc_flags_IB_WC_WITH_SMAC;
                comp.network_hdr_type = if p.ip_hdr.len() == 40 {
                    RDMA_NETWORK_IPV6
                } else {
                    RDMA_NETWORK_IPV4
                };
                comp.smac = p.smac;
            }
        }
        qp.complete_recv(&comp, c.solicited);
    }

    fn send_complete(&mut self, c: &proto::SendCompletion) {
        let qp = self.qp;
        let wr = {
            let mut sq = qp.sq.lock();
            let wr = sq.get(c.id.0 as u32);
            sq.done = (c.id.0 as u32).wrapping_add(1);
            wr
        };
        if let Some(wr) = wr {
            qp.complete_send(&wr, WcStatus::from(c.status), c.byte_len);
        }
    }
}

impl ActionSink for Sink<'_, '_> {
    fn place(&mut self, a: Action) -> Result<(), proto::PlaceError> {
        self.place_action(&a)
    }

    fn transmit(&mut self, p: proto::TxPacket) -> Result<(), proto::PlaceError> {
        self.send(&p)
    }

    fn now_us(&self) -> Option<u64> {
        Some(crate::glue::task::now_us())
    }

    fn push(&mut self, a: Action) {
        let qp = self.qp;
        match a {
            // ACKs and NAKs: no payload to read.
            Action::Send(tx) => {
                let _ = self.send(&tx);
            }
            // proto hands placements to `place`, which reports failure; none come here.
            Action::PlaceWqe { .. }
            | Action::AtomicResult { .. }
            | Action::PlaceRecv { .. }
            | Action::PlaceGrh
            | Action::PlaceMr { .. } => {
                let _ = self.place_action(&a);
            }
            Action::SendComplete(c) => self.send_complete(&c),
            Action::RecvComplete(c) => self.recv_complete(&c),
            Action::FlushRecvQueue => qp.flush_recvs(),
            Action::ArmTimer { kind, usecs } => {
                if let Some(t) = qp.timers.get(timer_idx(kind)) {
                    t.arm(usecs);
                }
            }
            Action::CancelTimer(kind) => {
                if let Some(t) = qp.timers.get(timer_idx(kind)) {
                    t.cancel();
                }
            }
            Action::StateChanged(_) => {}
            // Raised once the engine lock is released (`event`).
            Action::Event(e) => qp.note_event(e.into()),
        }
    }
}

impl Qp {
    /// Copies bytes into (or out of) a WR's scatter/gather list at `offset`.
    ///
    /// Every SGE the bytes touch is checked (its lkey in the QP's PD, valid, the range
    /// inside its region, Local Write to place into it), all of them before the first
    /// byte is written when several are written, so nothing is copied unless all pass:
    /// an atomic result or a receive into a bad lkey leaves the buffer untouched
    /// (IBTA: a local protection error). Bytes beyond the list are a length error. A region
    /// deregistered between the check and the copy fails the copy (a protection error with
    /// the earlier SGEs written; the WQE completes in error either way).
    pub(super) fn wr_buffer_copy(
        &self,
        sges: &[Sge],
        offset: u32,
        buf: &mut Xfer<'_>,
    ) -> Result<(), proto::PlaceError> {
        let mrs = &self.dev.get().data().mrs;
        let need = match buf {
            Xfer::To(_) => AccessFlags::LOCAL_WRITE,
            Xfer::From { .. } => AccessFlags::NONE,
        };
        // The QP's PD; an XRC target's receive WQE is in its SRQ's (the QP has no other).
        let pd = self.recv_pd();
        let total = buf.len();
        // The list must hold all of the bytes: a length error before anything is touched.
        let (mut covered, mut chunks) = (0usize, 0usize);
        for (_, _, at, n) in sge_chunks(sges, offset, total) {
            covered = at + n;
            chunks += 1;
        }
        if covered != total {
            return Err(proto::PlaceError::Length);
        }
        // Pass 1: check every SGE before anything is written. Needed only where a later
        // SGE's failure could leave an earlier one's bytes in the consumer's memory: several
        // chunks written into local memory. Reading (transmit) or one chunk has nothing to
        // undo (the copy checks its SGE itself), so a second MR table and region lock per
        // packet is saved there (the table lookup alone was 6.6 % of the sending VM's
        // samples during ib_write_bw on the lockdep kernel).
        if chunks > 1 && matches!(buf, Xfer::To(_)) {
            for (sge, va, _, n) in sge_chunks(sges, offset, total) {
                match mrs.with(sge.lkey, pd, |r| r.check(va, n as u64, need)) {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) | Err(e) => {
                        return Err(self.local_fail(e, sge.lkey, pd, (va, n, need)))
                    }
                }
            }
        }
        // Pass 2: copy (checking each SGE again: the region may have changed since pass 1,
        // and without pass 1 this is the check). On-demand-paging memory may have been
        // unmapped: the copy fails as not present (proto then places it all again, or
        // never counts it).
        for (sge, va, at, n) in sge_chunks(sges, offset, total) {
            let mut chunk = buf.sub(at, n).ok_or(proto::PlaceError::Length)?;
            match mrs.with(sge.lkey, pd, |r| r.copy(va, &mut chunk, need)) {
                Ok(Ok(())) => {}
                Ok(Err(e)) | Err(e) => return Err(self.local_fail(e, sge.lkey, pd, (va, n, need))),
            }
        }
        Ok(())
    }

    /// The placement error of a failed access to a local buffer (lkey `lkey` in PD `pd`):
    /// memory not present asks for its page fault first (see [`Qp::not_present`]).
    fn local_fail(
        &self,
        e: AccessError,
        lkey: u32,
        pd: usize,
        (va, n, need): (u64, usize, AccessFlags),
    ) -> proto::PlaceError {
        match e {
            AccessError::NotPresent => self.absent(Fault {
                key: lkey,
                remote_qpn: None,
                pd,
                va,
                len: n as u64,
                need,
            }),
            _ => proto::PlaceError::Protection,
        }
    }

    /// The placement error of an access that found the memory of `f` not present: asks
    /// for its page fault, or a protection error if that range's last fault failed (see
    /// [`Qp::not_present`]).
    fn absent(&self, f: Fault) -> proto::PlaceError {
        match self.not_present(f) {
            AccessError::NotPresent => proto::PlaceError::NotPresent,
            _ => proto::PlaceError::Protection,
        }
    }

    /// Copies between `buf` and what `rkey` reaches at `va` (a region, or one through a
    /// window), for a remote access of this QP needing `need` (READ responses, WRITE
    /// placement). Any refusal is a protection error for proto to act on.
    pub(super) fn remote_copy(
        &self,
        pd: usize,
        rkey: u32,
        va: u64,
        mut buf: Xfer<'_>,
        need: AccessFlags,
    ) -> Result<(), proto::PlaceError> {
        let range = (va, buf.len() as u64, need);
        let mrs = &self.dev.get().data().mrs;
        match mrs.with_remote(rkey, pd, self.qpn, range, |r| r.copy(va, &mut buf, need)) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(AccessError::NotPresent)) | Err(AccessError::NotPresent) => {
                Err(self.absent(Fault {
                    key: rkey,
                    remote_qpn: Some(self.qpn),
                    pd,
                    va,
                    len: range.1,
                    need,
                }))
            }
            _ => Err(proto::PlaceError::Protection),
        }
    }
}
