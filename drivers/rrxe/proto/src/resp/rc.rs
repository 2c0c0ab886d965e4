// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The RC responder: in-sequence requests (checks, then execution), duplicates (re-ACK,
//! READ re-execution, replayed atomic responses) and RNR NAKs.

use super::*;

impl<const R: usize> Responder<R> {
    pub(super) fn rc<E: ResponderEnv, A: ActionSink>(
        &mut self,
        p: &Packet,
        env: &mut E,
        sink: &mut A,
    ) -> RxStatus {
        let psn = p.hdrs.bth.psn;
        let d = psn.diff(self.epsn);
        if d > 0 {
            if !self.nak_sent {
                self.nak_sent = true;
                let syn = Aeth::syndrome_of(AethKind::Nak(NakCode::PsnSeqError));
                self.emit_ack(self.epsn, syn, sink);
            }
            return RxStatus::OutOfSequence;
        }
        if d < 0 {
            return self.duplicate(p, env, sink);
        }
        let info = p.info;
        let pos = info.pos;
        let len = p.payload_len;
        let mtu = self.cfg.mtu.bytes();
        let seq_ok = match (self.cur, info.kind) {
            (Cur::Idle, _) => pos.starts(),
            (Cur::Send { .. }, OpKind::Send) | (Cur::Write { .. }, OpKind::Write) => !pos.starts(),
            _ => false,
        };
        if !seq_ok {
            return self.fatal(psn, NakCode::InvalidRequest, sink);
        }
        if (matches!(pos, Position::First | Position::Middle) && len != mtu) || len > mtu {
            return self.fatal(psn, NakCode::InvalidRequest, sink);
        }
        match info.kind {
            OpKind::Send => {
                let (recv_len, off) = match self.cur {
                    Cur::Send { recv_len, off } => (recv_len, off),
                    _ => match env.recv_head_len() {
                        Some(l) => (l, 0),
                        None => return self.rnr(psn, sink),
                    },
                };
                let end = match off.checked_add(len) {
                    Some(e) if e <= recv_len => e,
                    _ => {
                        sink.push(recv_error(
                            WcStatus::LocLenErr,
                            RecvKind::Send,
                            self.cfg.dest_qpn,
                        ));
                        return self.nak_to_error(psn, NakCode::InvalidRequest, sink);
                    }
                };
                if len > 0 {
                    let place = Action::PlaceRecv {
                        offset: off,
                        src: range(p),
                    };
                    if let Err(e) = sink.place(place) {
                        return self.recv_failed(psn, e, RecvKind::Send, self.cfg.dest_qpn, sink);
                    }
                }
                if pos.ends() {
                    self.msn = self.msn.wrapping_add(1) & 0x00ff_ffff;
                    self.cur = Cur::Idle;
                    // SEND with Invalidate: the key is invalidated before the completion
                    // says so. If it cannot be (unknown key, another PD, a bound type 1
                    // window, an MR with windows bound), the receive completes with
                    // RemInvReqErr and without the key, so the consumer does not take the
                    // MR for closed, and the QP enters the error state after acknowledging
                    // the message (rdma_rxe: RESPST_ERR_INVALIDATE_RKEY, "class J").
                    let inv_failed = match p.hdrs.ieth {
                        Some(k) => env.invalidate(k).is_err(),
                        None => false,
                    };
                    sink.push(Action::RecvComplete(RecvCompletion {
                        status: if inv_failed {
                            WcStatus::RemInvReqErr
                        } else {
                            WcStatus::Success
                        },
                        kind: RecvKind::Send,
                        byte_len: end,
                        imm: p.hdrs.imm,
                        inv_rkey: if inv_failed { None } else { p.hdrs.ieth },
                        src_qp: self.cfg.dest_qpn,
                        solicited: p.hdrs.bth.se,
                    }));
                    if inv_failed {
                        self.epsn = psn.next();
                        if p.hdrs.bth.ack_req {
                            // Now: nothing is transmitted once the QP is in error.
                            sink.push(Action::Send(self.ack_packet(psn, AETH_ACK_UNLIMITED)));
                        }
                        self.error = true;
                        return RxStatus::Ok;
                    }
                } else {
                    self.cur = Cur::Send { recv_len, off: end };
                }
            }
            OpKind::Write => {
                let imm = p.hdrs.imm.is_some();
                if imm && env.recv_head_len().is_none() {
                    return self.rnr(psn, sink);
                }
                let (rkey, va, total, off) = match self.cur {
                    Cur::Write { rkey, va, len, off } => (rkey, va, len, off),
                    _ => {
                        let Some(r) = p.hdrs.reth else {
                            return self.fatal(psn, NakCode::InvalidRequest, sink);
                        };
                        if r.len > 0 {
                            if let Err(e) =
                                env.check_access(r.rkey, r.va, r.len, Access::RemoteWrite)
                            {
                                return self.access_nak(psn, e, sink);
                            }
                        }
                        (r.rkey, r.va, r.len, 0)
                    }
                };
                let end = match off.checked_add(len) {
                    Some(e) if e <= total && (!pos.ends() || e == total) => e,
                    _ => return self.fatal(psn, NakCode::InvalidRequest, sink),
                };
                if len > 0 {
                    let place = Action::PlaceMr {
                        rkey,
                        va: va.wrapping_add(u64::from(off)),
                        src: range(p),
                    };
                    // The MR was valid at the FIRST packet; it may have been invalidated or
                    // deregistered since: an R_Key violation, IBTA class C (rdma_rxe
                    // re-checks the rkey on every packet: RESPST_ERR_RKEY_VIOLATION).
                    // Pages of an on-demand-paging MR unmapped since the check: RNR NAK at
                    // this packet, the message's state unchanged (never acknowledged).
                    match sink.place(place) {
                        Ok(()) => {}
                        Err(PlaceError::NotPresent) => return self.rnr(psn, sink),
                        Err(_) => {
                            self.cur = Cur::Idle;
                            return self.fatal(psn, NakCode::RemoteAccess, sink);
                        }
                    }
                }
                if pos.ends() {
                    self.msn = self.msn.wrapping_add(1) & 0x00ff_ffff;
                    self.cur = Cur::Idle;
                    if imm {
                        sink.push(recv_done(RecvKind::WriteImm, total, p, self.cfg.dest_qpn));
                    }
                } else {
                    self.cur = Cur::Write {
                        rkey,
                        va,
                        len: total,
                        off: end,
                    };
                }
            }
            OpKind::ReadRequest => {
                let Some(r) = p.hdrs.reth else {
                    return self.fatal(psn, NakCode::InvalidRequest, sink);
                };
                let n = self.cfg.mtu.packets(r.len);
                if r.len > MAX_MSG_LEN {
                    return self.fatal(psn, NakCode::InvalidRequest, sink);
                }
                let Some(slot) = self.alloc_reply() else {
                    return self.fatal(psn, NakCode::InvalidRequest, sink);
                };
                if r.len > 0 {
                    if let Err(e) = env.check_access(r.rkey, r.va, r.len, Access::RemoteRead) {
                        return self.access_nak(psn, e, sink);
                    }
                }
                let seq = self.next_seq();
                if let Some(s) = self.replies.get_mut(slot) {
                    *s = Some(Reply {
                        kind: ReplyKind::Read {
                            rkey: r.rkey,
                            xrc_srqn: self.xrc_srqn,
                        },
                        first_psn: psn,
                        npkts: n,
                        exec_psn: psn,
                        exec_va: r.va,
                        exec_len: r.len,
                        exec_n: n,
                        next_k: 0,
                        pending: true,
                        orig_done: false,
                        seq,
                        age: seq,
                    });
                }
                self.msn = self.msn.wrapping_add(1) & 0x00ff_ffff;
                self.epsn = psn.add(n);
                self.nak_sent = false;
                self.pending_ack = None;
                return RxStatus::Ok;
            }
            OpKind::CompareSwap | OpKind::FetchAdd | OpKind::AtomicWrite | OpKind::Flush => {
                let Some(slot) = self.alloc_reply() else {
                    return self.fatal(psn, NakCode::InvalidRequest, sink);
                };
                let kind = match info.kind {
                    OpKind::CompareSwap | OpKind::FetchAdd => {
                        let Some(a) = p.hdrs.atomic else {
                            return self.fatal(psn, NakCode::InvalidRequest, sink);
                        };
                        if a.va & 7 != 0 {
                            return self.fatal(psn, NakCode::InvalidRequest, sink);
                        }
                        let op = if info.kind == OpKind::CompareSwap {
                            AtomicOp::CompareSwap {
                                compare: a.compare,
                                swap: a.swap_add,
                            }
                        } else {
                            AtomicOp::FetchAdd { add: a.swap_add }
                        };
                        match env.atomic(a.rkey, a.va, op) {
                            Ok(orig) => ReplyKind::Atomic { orig },
                            Err(e) => return self.access_nak(psn, e, sink),
                        }
                    }
                    OpKind::AtomicWrite => {
                        let (Some(r), Some(v)) = (p.hdrs.reth, p.atomic_write) else {
                            return self.fatal(psn, NakCode::InvalidRequest, sink);
                        };
                        if r.va & 7 != 0 || r.len != 8 {
                            return self.fatal(psn, NakCode::InvalidRequest, sink);
                        }
                        if let Err(e) = env.atomic_write(r.rkey, r.va, v) {
                            return self.access_nak(psn, e, sink);
                        }
                        ReplyKind::Empty
                    }
                    _ => {
                        let (Some(r), Some(f)) = (p.hdrs.reth, p.hdrs.feth) else {
                            return self.fatal(psn, NakCode::InvalidRequest, sink);
                        };
                        if let Err(e) = env.flush(r.rkey, r.va, r.len, f.sel, f.plt) {
                            return self.access_nak(psn, e, sink);
                        }
                        ReplyKind::Empty
                    }
                };
                let seq = self.next_seq();
                if let Some(s) = self.replies.get_mut(slot) {
                    *s = Some(Reply {
                        kind,
                        first_psn: psn,
                        npkts: 1,
                        exec_psn: psn,
                        exec_va: 0,
                        exec_len: 0,
                        exec_n: 1,
                        next_k: 0,
                        pending: true,
                        orig_done: false,
                        seq,
                        age: seq,
                    });
                }
                self.msn = self.msn.wrapping_add(1) & 0x00ff_ffff;
                self.epsn = psn.next();
                self.nak_sent = false;
                self.pending_ack = None;
                return RxStatus::Ok;
            }
            _ => return self.fatal(psn, NakCode::InvalidRequest, sink),
        }
        self.epsn = psn.next();
        self.nak_sent = false;
        if p.hdrs.bth.ack_req {
            self.emit_ack(psn, AETH_ACK_UNLIMITED, sink);
        }
        RxStatus::Ok
    }

    pub(super) fn rnr<A: ActionSink>(&mut self, psn: Psn, sink: &mut A) -> RxStatus {
        let syn = Aeth::syndrome_of(AethKind::RnrNak {
            timer: self.cfg.min_rnr_timer,
        });
        self.nak_sent = true;
        self.emit_ack(psn, syn, sink);
        RxStatus::NoRecv
    }

    fn duplicate<E: ResponderEnv, A: ActionSink>(
        &mut self,
        p: &Packet,
        env: &mut E,
        sink: &mut A,
    ) -> RxStatus {
        let psn = p.hdrs.bth.psn;
        match p.info.kind {
            OpKind::Send | OpKind::Write => {
                self.emit_ack(self.epsn.sub(1), AETH_ACK_UNLIMITED, sink);
                RxStatus::Duplicate
            }
            OpKind::ReadRequest => {
                if self.any_pending() {
                    return RxStatus::Busy;
                }
                let Some(r) = p.hdrs.reth else {
                    return RxStatus::Invalid;
                };
                let mtu = self.cfg.mtu;
                let seq = self.next_seq();
                let found = self.replies.iter_mut().flatten().find(|e| {
                    matches!(e.kind, ReplyKind::Read { .. }) && psn.in_window(e.first_psn, e.npkts)
                });
                let Some(e) = found else {
                    return RxStatus::Duplicate;
                };
                let n = mtu.packets(r.len);
                let k = psn.distance_from(e.first_psn);
                let ReplyKind::Read { rkey, .. } = e.kind else {
                    return RxStatus::Invalid;
                };
                // Re-executed as the duplicate names it (an XRC target: its SRQ's PD).
                e.kind = ReplyKind::Read {
                    rkey,
                    xrc_srqn: self.xrc_srqn,
                };
                if k.saturating_add(n) > e.npkts || r.rkey != rkey {
                    return RxStatus::Invalid;
                }
                let (va, len) = (r.va, r.len);
                e.exec_psn = psn;
                e.exec_va = va;
                e.exec_len = len;
                e.exec_n = n;
                e.next_k = 0;
                e.pending = true;
                e.seq = seq;
                if len > 0 {
                    if let Err(err) = env.check_access(rkey, va, len, Access::RemoteRead) {
                        e.pending = false;
                        if err == AccessError::NotPresent {
                            // Being faulted in: dropped, the requester asks again.
                            return RxStatus::Duplicate;
                        }
                        // The MR went away (invalidated, deregistered) since the original
                        // request: an R_Key violation, as for the original (rdma_rxe's
                        // duplicate READ goes through read_reply → RESPST_ERR_RKEY_VIOLATION).
                        e.pending = false;
                        return self.access_nak(psn, err, sink);
                    }
                }
                RxStatus::Duplicate
            }
            OpKind::CompareSwap | OpKind::FetchAdd | OpKind::AtomicWrite | OpKind::Flush => {
                if self.any_pending() {
                    return RxStatus::Busy;
                }
                let seq = self.next_seq();
                let want_atomic = matches!(p.info.kind, OpKind::CompareSwap | OpKind::FetchAdd);
                if let Some(e) = self.replies.iter_mut().flatten().find(|e| {
                    e.first_psn == psn && matches!(e.kind, ReplyKind::Atomic { .. }) == want_atomic
                }) {
                    e.pending = true;
                    e.next_k = 0;
                    e.seq = seq;
                }
                RxStatus::Duplicate
            }
            _ => RxStatus::Invalid,
        }
    }
}
