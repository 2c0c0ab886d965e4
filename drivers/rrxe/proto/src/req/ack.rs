// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The completer: ACKs, NAKs and READ/atomic responses (`on_response`), and the
//! retransmit and RNR timers (`on_timer`).

use super::*;

impl<const S: usize> SendQueue<S> {
    /// Completes SEND/WRITE WQEs fully acknowledged by an ACK at `psn`.
    /// Returns (progress, implied_nak).
    fn ack_through<A: ActionSink>(&mut self, psn: Psn, sink: &mut A) -> (bool, bool) {
        let mut progress = false;
        while self.assigned > 0 {
            let Some(e) = self.entry(0).copied() else {
                break;
            };
            if psn.before(self.una) {
                break;
            }
            let last = e.first_psn.add(e.npkts.saturating_sub(1));
            if needs_response(&e.wqe.op) {
                // An ACK covering PSNs whose responses we still expect.
                return (progress, true);
            }
            if !psn.before(last) {
                self.complete_head(WcStatus::Success, sink);
                progress = true;
            } else {
                let n = psn.next();
                if self.una.before(n) {
                    self.una = n;
                    progress = true;
                }
                break;
            }
        }
        if self.send_psn.before(self.una) {
            self.send_psn = self.una;
        }
        (progress, false)
    }

    /// The SEND/WRITE probe an ACK of `psn` answers, one whose PSN the ACK covers, and
    /// whether it went out (sending stopped after it) or still waits to (an ACK of the
    /// originals, late, came first). A READ's probe is answered by its response.
    fn probe_answered(&self, psn: Psn) -> Option<(Probe, bool)> {
        let pr = self.probe?;
        let sent = self.send_psn != pr.psn;
        let read = matches!(self.entry(0), Some(e) if matches!(e.wqe.op, SendOp::Read { .. }));
        (!read && !psn.before(pr.psn)).then_some((pr, sent))
    }

    fn on_progress<A: ActionSink>(&mut self, sink: &mut A) {
        // READ responses that overtook the ones now in are in already.
        self.skip_placed(sink);
        self.retry_left = self.cfg.retry_cnt;
        self.rnr_left = self.cfg.rnr_retry;
        self.rto.on_progress(self.una, || sink.now_us());
        self.nak_guard = None;
        self.gap_since = None;
        if self.una == self.next_psn {
            if self.rto_armed {
                sink.push(Action::CancelTimer(TimerKind::Retransmit));
                self.rto_armed = false;
            }
        } else if !self.rnr_wait {
            self.arm_rto(sink);
        }
    }

    /// A response after `una` arrived while `una`'s has not: it was lost, or only
    /// overtaken on the way (netem's reordering, ECMP). The gap counts as a loss once it
    /// has lasted the reordering window (`reorder_window`; TCP's RACK keeps one too),
    /// checked as responses arrive and by the retransmit timer armed for the window's end;
    /// without a clock, at once. Taking every overtaking response for a loss asked again
    /// for the rest of every outstanding READ each time: 10 to 13 times the responses on a
    /// link that only reorders (`sim_read_loss.rs`).
    fn gap_at_una<A: ActionSink>(&mut self, sink: &mut A) {
        if self.una == self.next_psn {
            return;
        }
        let wnd = self.reorder_window();
        let now = if wnd > 0 { sink.now_us() } else { None };
        let Some(now) = now else {
            self.lost_at_una();
            return;
        };
        match self.gap_since {
            None => {
                self.gap_since = Some(now);
                if !self.rnr_wait {
                    self.arm_timer(wnd, Some(now), sink);
                    self.reorder_check = true;
                }
            }
            Some(t) if now.saturating_sub(t) >= wnd => self.lost_at_una(),
            Some(_) => {}
        }
    }

    /// How long a gap at `una` may be reordering rather than loss (µs): the smoothed round
    /// trip (half of it still took netem's 1 ms reordering for loss now and then, at 2 ms
    /// round trips: `sim_read_loss.rs`); before the first sample, an eighth of the QP's
    /// Local ACK Timeout (8 ms for perftest's 14), since without a window every overtaking
    /// response is a loss, its rewinds void each sample (Karn) and no estimate ever comes.
    fn reorder_window(&self) -> u64 {
        match self.rto.srtt() {
            0 => self.cfg.ack_timeout_usecs().unwrap_or(0) / 8,
            s => s,
        }
    }

    /// A READ response after `una` (`p` at `psn`): placed into its WQE now if it can be,
    /// and remembered, so that it is not needed again (`ahead.rs`). One that cannot be
    /// placed (memory not present, a bad buffer) is left for when it is at `una`, where
    /// the error is acted on.
    fn keep_ahead<A: ActionSink>(&mut self, p: &Packet, psn: Psn, sink: &mut A) {
        self.ahead.advance_to(self.una);
        if p.info.kind != OpKind::ReadResponse || self.ahead.has(psn) {
            return;
        }
        let Some((_, e)) = self.find(psn) else {
            return;
        };
        if !matches!(e.wqe.op, SendOp::Read { .. }) {
            return;
        }
        let Some(place) = self.read_place(&e, psn.distance_from(e.first_psn), p) else {
            return;
        };
        if place.is_some_and(|a| sink.place(a).is_err()) {
            return;
        }
        self.ahead.set(psn);
    }

    /// The placement of `p` as response `k` of READ `e`: `Some(None)` for an empty one,
    /// `None` if `p` cannot be that response (its length, or its position: the WQE's last
    /// response ends the message; chunks and resumed requests end before it does).
    fn read_place(&self, e: &Entry, k: u32, p: &Packet) -> Option<Option<Action>> {
        let mtu = self.cfg.mtu.bytes();
        let last = k.saturating_add(1) == e.npkts;
        let off = k.saturating_mul(mtu);
        let want = if last {
            e.wqe.len.saturating_sub(off)
        } else {
            mtu
        };
        if (last && !matches!(p.info.pos, Position::Last | Position::Only)) || p.payload_len != want
        {
            return None;
        }
        Some((want > 0).then_some(Action::PlaceWqe {
            id: e.wqe.id,
            offset: off,
            src: PktRange {
                off: p.payload_off,
                len: p.payload_len,
            },
        }))
    }

    /// Moves `una` past the READ responses placed while they were ahead of it, completing
    /// each READ WQE whose responses are then all in.
    fn skip_placed<A: ActionSink>(&mut self, sink: &mut A) {
        while self.ahead.any() && self.assigned > 0 {
            let Some(e) = self.entry(0).copied() else {
                break;
            };
            if !matches!(e.wqe.op, SendOp::Read { .. }) {
                break;
            }
            let end = e.first_psn.add(e.npkts);
            while self.una.before(end) && self.ahead.has(self.una) {
                self.una = self.una.next();
            }
            if self.una != end {
                break;
            }
            self.complete_head(WcStatus::Success, sink);
        }
        if self.send_psn.before(self.una) {
            self.send_psn = self.una;
        }
        self.ahead.advance_to(self.una);
    }

    /// Retries after a loss indication at `una` (lost responses / implied NAK).
    fn lost_at_una(&mut self) {
        if self.nak_guard != Some(self.una) {
            self.nak_guard = Some(self.una);
            self.on_loss();
            self.rewind(self.una);
        }
    }

    /// Handles a response packet (ACK / NAK / READ response / atomic ACK).
    pub fn on_response<A: ActionSink>(&mut self, p: &Packet, sink: &mut A) -> RxStatus {
        if !self.started || self.error || !self.cfg.qp_type.reliable() {
            return RxStatus::BadState;
        }
        let psn = p.hdrs.bth.psn;
        if !psn.before(self.next_psn) || psn.before(self.una) {
            return RxStatus::Duplicate;
        }
        let Some(aeth) = p.hdrs.aeth.or(match p.info.kind {
            OpKind::ReadResponse => Some(Aeth {
                syndrome: 0x1f,
                msn: 0,
            }),
            _ => None,
        }) else {
            return RxStatus::Invalid;
        };
        let before = self.una;
        let st = match p.info.kind {
            OpKind::Ack => self.on_ack(psn, aeth, sink),
            OpKind::ReadResponse | OpKind::AtomicAck => {
                if !matches!(aeth.kind(), AethKind::Ack { .. }) {
                    return RxStatus::Invalid;
                }
                self.on_data_response(p, psn, sink)
            }
            _ => RxStatus::Invalid,
        };
        let acked = self.una.distance_from(before);
        if acked > 0 && acked < PSN_HALF {
            self.cwnd.on_acked(acked, self.una, max_window(&self.cfg));
        }
        st
    }

    fn on_ack<A: ActionSink>(&mut self, psn: Psn, aeth: Aeth, sink: &mut A) -> RxStatus {
        let prev = psn.sub(1);
        match aeth.kind() {
            AethKind::Ack { .. } => {
                let probe = self.probe_answered(psn);
                let (progress, implied) = self.ack_through(psn, sink);
                if let Some((pr, sent)) = probe {
                    self.probe = None;
                    // An ACK beyond the probe's PSN, or one covering it before the probe
                    // went out: the originals arrived, late; what is not covered yet is
                    // taken as late too, and sending resumes where it stood. An ACK of the
                    // probe alone (the responder took it as new: the original was lost)
                    // leaves `send_psn` at the new `una`: everything after it goes again,
                    // as after a loss. A packet lost behind a partial ACK (its NAK lost
                    // too) waits for the next timeout; probing again at each partial ACK
                    // instead was slower in `sim_slow`, with 1 % loss too.
                    let late = psn.after(pr.psn) || !sent;
                    self.probe_verdict(late);
                    if late && self.send_psn.before(pr.resume) {
                        self.send_psn = pr.resume;
                    }
                }
                if progress {
                    self.on_progress(sink);
                }
                if implied {
                    // An ACK beyond a READ whose responses are still missing: they were
                    // lost, or the ACK overtook them; the same window as for a response.
                    self.gap_at_una(sink);
                }
                RxStatus::Ok
            }
            AethKind::RnrNak { timer } => {
                self.stats.rnr_naks = self.stats.rnr_naks.wrapping_add(1);
                let (progress, _) = self.ack_through(prev, sink);
                if progress {
                    self.on_progress(sink);
                }
                if psn != self.una {
                    // The RNR'd PSN must be the oldest unacked one.
                    return RxStatus::Invalid;
                }
                if self.rnr_wait {
                    return RxStatus::Duplicate;
                }
                if self.rnr_left == 0 {
                    self.fail(WcStatus::RnrRetryExcErr, sink);
                    return RxStatus::Ok;
                }
                if self.rnr_left != 7 {
                    self.rnr_left -= 1;
                }
                self.rnr_wait = true;
                self.nak_guard = Some(psn);
                self.rewind(psn);
                if self.rto_armed {
                    sink.push(Action::CancelTimer(TimerKind::Retransmit));
                    self.rto_armed = false;
                }
                sink.push(Action::ArmTimer {
                    kind: TimerKind::Rnr,
                    usecs: u64::from(rnr_timer_usecs(timer)),
                });
                RxStatus::Ok
            }
            AethKind::Nak(NakCode::PsnSeqError) => {
                self.stats.seq_naks = self.stats.seq_naks.wrapping_add(1);
                let (progress, _) = self.ack_through(prev, sink);
                if progress {
                    self.on_progress(sink);
                } else if self.nak_guard == Some(psn) || self.rnr_wait {
                    return RxStatus::Duplicate;
                }
                if self.rnr_wait {
                    return RxStatus::Ok;
                }
                self.nak_guard = Some(psn);
                self.on_loss();
                self.rewind(psn);
                RxStatus::Ok
            }
            AethKind::Nak(code) => {
                let (progress, _) = self.ack_through(prev, sink);
                if progress {
                    self.on_progress(sink);
                }
                if psn != self.una {
                    return RxStatus::Invalid;
                }
                let st = match code {
                    NakCode::InvalidRequest => WcStatus::RemInvReqErr,
                    NakCode::RemoteAccess => WcStatus::RemAccessErr,
                    _ => WcStatus::RemOpErr,
                };
                self.fail(st, sink);
                RxStatus::Ok
            }
            AethKind::Reserved => RxStatus::Invalid,
        }
    }

    fn on_data_response<A: ActionSink>(&mut self, p: &Packet, psn: Psn, sink: &mut A) -> RxStatus {
        if psn != self.una {
            let (progress, _) = self.ack_through(psn.sub(1), sink);
            if progress {
                self.on_progress(sink);
            }
            if psn.before(self.una) {
                // A copy of a response placed ahead, which `una` has just passed.
                return RxStatus::Duplicate;
            }
            if psn != self.una {
                // Earlier responses are missing: lost, or overtaken.
                self.keep_ahead(p, psn, sink);
                self.gap_at_una(sink);
                return RxStatus::OutOfSequence;
            }
        }
        let Some(e) = self.entry(0).copied() else {
            return RxStatus::Invalid;
        };
        if self.assigned == 0 || !psn.in_window(e.first_psn, e.npkts) {
            return RxStatus::Invalid;
        }
        let k = psn.distance_from(e.first_psn);
        let pos = p.info.pos;
        // The first response at `una` since a timeout. The probe's own answer is a single
        // packet (Only); a First/Middle/Last one belongs to an earlier request: the
        // responses were late, not lost, so requesting resumes where it stood (once this
        // one is in). An earlier request's single-packet answer is taken for the probe's:
        // then the rest is requested again, as after a loss.
        let resume = match self.probe {
            Some(pr) if pos != Position::Only => Some(pr.resume),
            _ => None,
        };
        match (p.info.kind, e.wqe.op) {
            (OpKind::ReadResponse, SendOp::Read { .. }) => {
                let last = k.saturating_add(1) == e.npkts;
                let Some(place) = self.read_place(&e, k, p) else {
                    return RxStatus::Invalid;
                };
                if let Some(place) = place {
                    // Later responses, while this one waits for its pages, find a gap.
                    if let Some(st) = self.place_response(psn, place, sink) {
                        return st;
                    }
                }
                if last {
                    self.complete_head(WcStatus::Success, sink);
                } else {
                    self.una = psn.next();
                    if self.send_psn.before(self.una) {
                        self.send_psn = self.una;
                    }
                }
            }
            (OpKind::ReadResponse, SendOp::Flush { .. } | SendOp::AtomicWrite { .. }) => {
                if pos != Position::Only || p.payload_len != 0 {
                    return RxStatus::Invalid;
                }
                self.complete_head(WcStatus::Success, sink);
            }
            (OpKind::AtomicAck, SendOp::CompareSwap { .. } | SendOp::FetchAdd { .. }) => {
                let Some(a) = p.hdrs.atomic_ack else {
                    return RxStatus::Invalid;
                };
                let place = Action::AtomicResult {
                    id: e.wqe.id,
                    value: a.orig,
                };
                if let Some(st) = self.place_response(psn, place, sink) {
                    return st;
                }
                self.complete_head(WcStatus::Success, sink);
            }
            _ => return RxStatus::Invalid,
        }
        // The probe is answered (kept until here: a response that cannot be placed yet
        // leaves it to be asked again as it was, see `rewind`). Its own answer (or one
        // taken for it) means the responses were lost.
        if self.probe.take().is_some() {
            self.probe_verdict(resume.is_some());
        }
        if let Some(r) = resume {
            if self.send_psn.before(r) {
                self.send_psn = r;
            }
        }
        self.on_progress(sink);
        if self.ahead.any() && self.una != self.next_psn {
            // Responses are in beyond the new `una`: the gap before them starts now.
            self.gap_at_una(sink);
        }
        RxStatus::Ok
    }

    /// Places a READ response's payload or an atomic's original value: `None` once placed,
    /// else what the caller returns. A placement the driver refuses is LOC_PROT_ERR with
    /// the QP to error (rdma_rxe's do_read and do_atomic; the driver checks the whole
    /// destination first, so nothing was written). Memory being faulted in (on-demand
    /// paging) drops the response, which is asked for again from it once the fault is
    /// done or the retransmit timer fires ([`SendQueue::unplaced`]); a repeated atomic is
    /// answered from the responder's cache, never executed twice.
    fn place_response<A: ActionSink>(
        &mut self,
        psn: Psn,
        place: Action,
        sink: &mut A,
    ) -> Option<RxStatus> {
        match sink.place(place) {
            Ok(()) => None,
            Err(PlaceError::NotPresent) => Some(self.unplaced(psn)),
            Err(_) => {
                self.fail(WcStatus::LocProtErr, sink);
                Some(RxStatus::Ok)
            }
        }
    }

    /// The response at `psn` (= `una`) could not be placed (on-demand paging): dropped;
    /// requesting resumes from it after [`SendQueue::fault_done`].
    fn unplaced(&mut self, psn: Psn) -> RxStatus {
        self.stats.unplaced = self.stats.unplaced.wrapping_add(1);
        self.fault_wait = true;
        self.rewind(psn);
        RxStatus::Busy
    }

    /// Handles a timer expiry.
    pub fn on_timer<A: ActionSink>(&mut self, t: TimerKind, sink: &mut A) {
        if self.error || !self.started {
            return;
        }
        match t {
            TimerKind::Retransmit => {
                if !self.rto_armed {
                    return;
                }
                if let (Some(due), Some(now)) = (self.timer_due, sink.now_us()) {
                    if now < due {
                        // Fired for an earlier arming (the driver handles a firing at its
                        // next run, after packets that may have re-armed the timer), or a
                        // little early by this clock: wait for what is armed now.
                        sink.push(Action::ArmTimer {
                            kind: TimerKind::Retransmit,
                            usecs: due - now,
                        });
                        return;
                    }
                }
                self.rto_armed = false;
                if core::mem::take(&mut self.reorder_check) {
                    // The reordering window of the gap at `una` ran out: a loss, with
                    // no retry consumed; the retransmit timeout runs again from here.
                    if self.gap_since.is_some() && self.una != self.next_psn {
                        self.lost_at_una();
                    }
                    if self.una != self.next_psn && !self.rnr_wait {
                        self.arm_rto(sink);
                    }
                    return;
                }
                // The driver never said a fault was done: retry as after a loss.
                self.fault_wait = false;
                if self.una == self.next_psn || self.rnr_wait {
                    return;
                }
                self.stats.timeouts = self.stats.timeouts.wrapping_add(1);
                if self.retry_left == 0 {
                    self.fail(WcStatus::RetryExcErr, sink);
                    return;
                }
                self.retry_left -= 1;
                self.rto.on_timeout();
                self.nak_guard = None;
                let resume = match self.probe {
                    Some(pr) if pr.resume.after(self.send_psn) => pr.resume,
                    _ => self.send_psn,
                };
                // Before the cut: a probe this drops takes an earlier timeout's undo with
                // it, never this one's.
                self.rewind(self.una);
                self.on_timeout_loss();
                // A READ, SEND or WRITE at `una`: one packet first. Sending everything
                // again on a timeout that only means "late" (packets or responses queued
                // behind other traffic on a slow host, or behind 63 other QPs) multiplies
                // the queue that made them late: a READ's request is answered with up to a
                // chunk of responses, and a window of SEND/WRITE packets goes out again
                // (one benchmark run on the test kernel, nothing lost: 557 timeouts, 18032
                // packets sent again, 17562 of them duplicates at the responder). The
                // answer tells which it was (`on_data_response` for a READ, `on_ack` for
                // the others). Atomics and FLUSH go again whole: they are one packet.
                let head = self.entry(0).map(|e| e.wqe.op);
                if matches!(
                    head,
                    Some(SendOp::Read { .. } | SendOp::Send { .. } | SendOp::Write { .. })
                ) {
                    self.probe = Some(Probe {
                        psn: self.una,
                        resume,
                    });
                } else {
                    // No probe, no answer to tell late from lost: the cut stands.
                    self.cwnd.keep_cut();
                }
            }
            TimerKind::Rnr => {
                self.rnr_wait = false;
            }
        }
    }
}
