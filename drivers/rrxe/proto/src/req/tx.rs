// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The requester: which packet goes out next (`poll_tx`: PSN assignment, the windows, the
//! fence, READ chunks) and how it is built.

use super::*;

impl<const S: usize> SendQueue<S> {
    /// Emits up to `*left` request packets (decrementing it). Returns `true`
    /// if more could be sent right away.
    pub fn poll_tx<A: ActionSink>(&mut self, left: &mut u32, sink: &mut A) -> bool {
        if self.error || !self.started || self.rnr_wait || self.fault_wait {
            return false;
        }
        let rc = self.cfg.qp_type.reliable();
        if matches!(self.probe, Some(pr) if pr.psn.before(self.una)) {
            // Its PSN is acknowledged: nothing is left to ask (a stale probe would hold the
            // queue below with no timer armed to end it). Nothing in this loop moves `una`
            // of an RC queue, so once per poll is enough.
            self.drop_probe();
        }
        loop {
            if *left == 0 {
                return self.has_tx_work();
            }
            if matches!(self.probe, Some(pr) if pr.psn != self.send_psn) {
                // The probe is out; nothing more until it is answered (`on_timer`).
                return false;
            }
            if self.send_psn == self.next_psn {
                if self.hold {
                    // SQD: the started WQEs are all sent; the next one waits for RTS.
                    return false;
                }
                let Some(e) = self.entry(self.assigned).copied() else {
                    return false;
                };
                if rc {
                    let inflight = self.next_psn.distance_from(self.una);
                    let win = if matches!(e.wqe.op, SendOp::Read { .. }) {
                        self.window().min(MAX_READ_INFLIGHT)
                    } else {
                        self.window()
                    };
                    if inflight >= win || inflight.saturating_add(e.npkts) >= PSN_HALF {
                        return false;
                    }
                    let nr = needs_response(&e.wqe.op);
                    if nr && self.rd_atomic >= u32::from(self.cfg.max_rd_atomic.max(1)) {
                        return false;
                    }
                    if e.wqe.fence && self.rd_atomic > 0 {
                        return false;
                    }
                    if nr {
                        self.rd_atomic += 1;
                    }
                }
                let first = self.next_psn;
                if let Some(m) = self.entry_mut(self.assigned) {
                    m.first_psn = first;
                }
                self.next_psn = first.add(e.npkts);
                self.assigned += 1;
            }
            let Some((i, e)) = self.find(self.send_psn) else {
                // Cannot happen; resynchronise instead of looping.
                self.send_psn = self.next_psn;
                return false;
            };
            let k = self.send_psn.distance_from(e.first_psn);
            let read = matches!(e.wqe.op, SendOp::Read { .. });
            if k > 0 && read && !self.may_request_chunk() {
                // Wait for responses of the previous chunk (they call poll_tx again).
                return false;
            }
            // The window holds inside a message too: a multi-packet SEND or WRITE does not
            // go out in one burst (an 8 MiB one is 8192 packets, far more than a transmit
            // queue holds). READs are paced by their chunks.
            if !read && self.window_full() {
                return false;
            }
            let (mut pkt, next, last) = self.build(&e, k);
            if self.cfg.qp_type == QpType::XrcIni {
                // XRC: the RC request with its XRC opcode and the XRCETH naming the
                // remote SRQ (IBTA 9.2). Every RC request opcode built here has one.
                let h = &mut pkt.hdrs;
                h.bth.opcode = h.bth.opcode.rc_to_xrc().unwrap_or(Opcode::XRC_SEND_ONLY);
                h.xrceth = Some(e.wqe.xrc_srqn & 0x00ff_ffff);
            }
            // Ask for an ACK when the window is full after this packet (the ACK reopens
            // it), and on a timeout's probe (its ACK tells lost from late, `on_ack`).
            let window_full = !read && next.distance_from(self.una) >= self.window();
            let probe = matches!(self.probe, Some(pr) if pr.psn == self.send_psn);
            if rc && (window_full || probe) {
                pkt.hdrs.bth.ack_req = true;
            }
            if let Err(e) = sink.transmit(pkt) {
                // The gather list cannot be read (see the module docs).
                let status = match e {
                    PlaceError::Protection => WcStatus::LocProtErr,
                    PlaceError::Length => WcStatus::LocLenErr,
                    // Its pages are being faulted in (on-demand paging): the packet waits,
                    // nothing changed; the driver runs the QP again once they are in.
                    PlaceError::NotPresent => return false,
                };
                self.fail_at(i, status, sink);
                return false;
            }
            *left -= 1;
            if self.send_psn.before(self.high_psn) {
                self.stats.retransmits = self.stats.retransmits.wrapping_add(1);
            } else if rc {
                self.rto.on_new_packet(self.send_psn, || sink.now_us());
            }
            if next.after(self.high_psn) {
                self.high_psn = next;
            }
            self.send_psn = next;
            if rc {
                if !self.rto_armed {
                    self.arm_rto(sink);
                }
            } else if last && i == 0 {
                self.complete_head(WcStatus::Success, sink);
                self.una = self.send_psn;
            }
        }
    }

    /// Whether the next chunk of a READ (at `send_psn`) may be requested now.
    fn may_request_chunk(&self) -> bool {
        let ahead = self.send_psn.distance_from(self.una);
        ahead == 0
            || (ahead < self.read_chunk()
                && self.rd_atomic < u32::from(self.cfg.max_rd_atomic.max(1)))
    }

    fn read_chunk(&self) -> u32 {
        self.cfg.read_chunk.clamp(1, PSN_HALF - 1)
    }

    fn bth(&self, op: Opcode, psn: Psn) -> Bth {
        let mut b = Bth::new(op, self.cfg.dest_qpn, psn);
        b.pkey = self.cfg.pkey;
        b
    }

    /// Builds packet `k` of entry `e`: (packet, next send PSN, is last packet).
    fn build(&self, e: &Entry, k: u32) -> (TxPacket, Psn, bool) {
        let psn = e.first_psn.add(k);
        let w = &e.wqe;
        let mtu = self.cfg.mtu;
        let tr = match self.cfg.qp_type {
            // XRC requests are RC requests until `poll_tx` adds the XRC parts.
            QpType::Rc | QpType::XrcIni | QpType::XrcTgt => Transport::Rc,
            QpType::Uc => Transport::Uc,
            QpType::Ud => Transport::Ud,
        };
        let one = |op: Opcode| Headers::new(self.bth(op, psn));
        let after = e.first_psn.add(e.npkts);
        match w.op {
            SendOp::Send { .. } | SendOp::Write { .. } => {
                let segs = Segments::new(w.len, mtu);
                let seg = segs.get(k).unwrap_or(Segment {
                    offset: 0,
                    len: 0,
                    pos: Position::Only,
                    index: 0,
                });
                let ends = seg.pos.ends();
                let (kind, imm, inv, reth) = match w.op {
                    SendOp::Send { imm, inv_rkey } => (OpKind::Send, imm, inv_rkey, None),
                    SendOp::Write { remote, imm } => (
                        OpKind::Write,
                        imm,
                        None,
                        Some(Reth {
                            va: remote.va,
                            rkey: remote.rkey,
                            len: w.len,
                        }),
                    ),
                    _ => (OpKind::Send, None, None, None),
                };
                let imm = if ends { imm } else { None };
                let inv = if ends { inv } else { None };
                let op = Opcode::compose(tr, kind, seg.pos, imm.is_some(), inv.is_some())
                    .unwrap_or(Opcode::RC_SEND_ONLY);
                let mut h = one(op);
                h.bth.se = w.solicited && ends;
                h.bth.ack_req = tr == Transport::Rc && (ends || k % ACK_EVERY == ACK_EVERY - 1);
                if seg.pos.starts() {
                    h.reth = reth;
                }
                h.imm = imm;
                h.ieth = inv;
                if let (Transport::Ud, Some(d)) = (tr, w.ud) {
                    h.bth.dest_qp = d.qpn & 0x00ff_ffff;
                    let qkey = if d.qkey & 0x8000_0000 != 0 {
                        self.cfg.qkey
                    } else {
                        d.qkey
                    };
                    h.deth = Some(Deth {
                        qkey,
                        src_qp: self.cfg.qpn,
                    });
                }
                let payload = if seg.len == 0 {
                    Payload::None
                } else {
                    Payload::Wqe {
                        id: w.id,
                        offset: seg.offset,
                        len: seg.len,
                    }
                };
                let pkt = TxPacket {
                    hdrs: h,
                    payload,
                    ud_wqe: if tr == Transport::Ud {
                        Some(w.id)
                    } else {
                        None
                    },
                };
                (pkt, psn.next(), ends)
            }
            SendOp::Read { remote } => {
                let off = k.saturating_mul(mtu.bytes()).min(w.len);
                // This request's responses: to the end of chunk k / read_chunk (chunks
                // are fixed from the first PSN, so a resumed request always lies within
                // one original request and the responder can replay it).
                let c = self.read_chunk();
                let end = (k / c).saturating_add(1).saturating_mul(c).min(e.npkts);
                let probe = matches!(self.probe, Some(pr) if pr.psn == psn);
                let pkts = if probe {
                    1
                } else {
                    end.saturating_sub(k).max(1)
                };
                let len = (w.len - off).min(pkts.saturating_mul(mtu.bytes()));
                let next = if k.saturating_add(pkts) >= e.npkts {
                    after
                } else {
                    psn.add(pkts)
                };
                let mut h = one(Opcode::RC_READ_REQUEST);
                h.bth.ack_req = true;
                h.reth = Some(Reth {
                    va: remote.va.wrapping_add(u64::from(off)),
                    rkey: remote.rkey,
                    len,
                });
                (
                    TxPacket {
                        hdrs: h,
                        payload: Payload::None,
                        ud_wqe: None,
                    },
                    next,
                    true,
                )
            }
            SendOp::CompareSwap {
                remote,
                compare,
                swap,
            } => {
                let mut h = one(Opcode::RC_COMPARE_SWAP);
                h.bth.ack_req = true;
                h.atomic = Some(AtomicEth {
                    va: remote.va,
                    rkey: remote.rkey,
                    swap_add: swap,
                    compare,
                });
                (simple(h, Payload::None), after, true)
            }
            SendOp::FetchAdd { remote, add } => {
                let mut h = one(Opcode::RC_FETCH_ADD);
                h.bth.ack_req = true;
                h.atomic = Some(AtomicEth {
                    va: remote.va,
                    rkey: remote.rkey,
                    swap_add: add,
                    compare: 0,
                });
                (simple(h, Payload::None), after, true)
            }
            SendOp::AtomicWrite { remote, value } => {
                let mut h = one(Opcode::RC_ATOMIC_WRITE);
                h.bth.ack_req = true;
                h.reth = Some(Reth {
                    va: remote.va,
                    rkey: remote.rkey,
                    len: 8,
                });
                (simple(h, Payload::Inline(value.to_be_bytes())), after, true)
            }
            SendOp::Flush { remote, sel, plt } => {
                let mut h = one(Opcode::RC_FLUSH);
                h.bth.ack_req = true;
                h.feth = Some(Feth { sel, plt });
                h.reth = Some(Reth {
                    va: remote.va,
                    rkey: remote.rkey,
                    len: w.len,
                });
                (simple(h, Payload::None), after, true)
            }
        }
    }
}

fn simple(h: Headers, payload: Payload) -> TxPacket {
    TxPacket {
        hdrs: h,
        payload,
        ud_wqe: None,
    }
}
