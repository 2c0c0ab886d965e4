// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The UC responder: no ACKs; a PSN gap abandons the message in progress.

use super::*;

impl<const R: usize> Responder<R> {
    pub(super) fn uc<E: ResponderEnv, A: ActionSink>(
        &mut self,
        p: &Packet,
        env: &mut E,
        sink: &mut A,
    ) -> RxStatus {
        let psn = p.hdrs.bth.psn;
        let d = psn.diff(self.epsn);
        if d < 0 {
            return RxStatus::Duplicate;
        }
        if d > 0 {
            self.cur = Cur::Idle;
        }
        self.epsn = psn.next();
        let info = p.info;
        let pos = info.pos;
        let len = p.payload_len;
        let mtu = self.cfg.mtu.bytes();
        let seq_ok = match (self.cur, info.kind) {
            (Cur::Idle, _) => pos.starts(),
            (Cur::Send { .. }, OpKind::Send) | (Cur::Write { .. }, OpKind::Write) => !pos.starts(),
            _ => false,
        };
        if !seq_ok || (matches!(pos, Position::First | Position::Middle) && len != mtu) || len > mtu
        {
            self.cur = Cur::Idle;
            return RxStatus::Invalid;
        }
        match info.kind {
            OpKind::Send => {
                let (recv_len, off) = match self.cur {
                    Cur::Send { recv_len, off } => (recv_len, off),
                    _ => match env.recv_head_len() {
                        Some(l) => (l, 0),
                        None => {
                            self.cur = Cur::Idle;
                            return RxStatus::NoRecv;
                        }
                    },
                };
                let Some(end) = off.checked_add(len).filter(|e| *e <= recv_len) else {
                    self.cur = Cur::Idle;
                    return RxStatus::Invalid;
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
                    self.cur = Cur::Idle;
                    self.msn = self.msn.wrapping_add(1) & 0x00ff_ffff;
                    sink.push(recv_done(RecvKind::Send, end, p, self.cfg.dest_qpn));
                } else {
                    self.cur = Cur::Send { recv_len, off: end };
                }
            }
            OpKind::Write => {
                let (rkey, va, total, off) = match self.cur {
                    Cur::Write { rkey, va, len, off } => (rkey, va, len, off),
                    _ => {
                        let Some(r) = p.hdrs.reth else {
                            return RxStatus::Invalid;
                        };
                        if r.len > 0
                            && env
                                .check_access(r.rkey, r.va, r.len, Access::RemoteWrite)
                                .is_err()
                        {
                            self.cur = Cur::Idle;
                            return RxStatus::Invalid;
                        }
                        (r.rkey, r.va, r.len, 0)
                    }
                };
                let Some(end) = off
                    .checked_add(len)
                    .filter(|e| *e <= total && (!pos.ends() || *e == total))
                else {
                    self.cur = Cur::Idle;
                    return RxStatus::Invalid;
                };
                if len > 0 {
                    let place = Action::PlaceMr {
                        rkey,
                        va: va.wrapping_add(u64::from(off)),
                        src: range(p),
                    };
                    // An MR invalidated mid-message: the rest of the message is dropped
                    // (rdma_rxe: UC R_Key violation, class D/E, `drop_msg`).
                    if sink.place(place).is_err() {
                        self.cur = Cur::Idle;
                        return RxStatus::Invalid;
                    }
                }
                if pos.ends() {
                    self.cur = Cur::Idle;
                    self.msn = self.msn.wrapping_add(1) & 0x00ff_ffff;
                    if p.hdrs.imm.is_some() {
                        if env.recv_head_len().is_none() {
                            return RxStatus::NoRecv;
                        }
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
            _ => return RxStatus::Invalid,
        }
        RxStatus::Ok
    }
}
