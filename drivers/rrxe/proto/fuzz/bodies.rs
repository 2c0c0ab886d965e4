// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Bodies of the fuzz targets, shared by the cargo-fuzz targets and the
//! stable `tests/fuzz_smoke.rs` runner. Both must never panic.

#![allow(dead_code)]

use rrxe_proto::*;

/// Parse an arbitrary buffer as an IP datagram and as an IB packet.
pub fn parse_packet(data: &[u8]) {
    if let Ok(l) = net::locate_ib(data) {
        let end = l.ib_off.saturating_add(l.ib_len).min(data.len());
        let _ = icrc::verify(&SoftCrc32, &data[..end], l.ip == net::IpVersion::V6);
        if let Some(ib) = data.get(l.ib_off..end) {
            let _ = rrxe_proto::parse_packet(ib);
        }
    }
    let peeked = rrxe_proto::peek_bth(data);
    if let Ok(p) = rrxe_proto::parse_packet(data) {
        // The receive path picks the QP by the peeked BTH: it must be the parsed one.
        assert_eq!(peeked, Ok(p.hdrs.bth));
        let _ = p.payload(data);
        let mut out = [0u8; 128];
        let _ = build_headers(&p.hdrs, p.payload_len, &mut out);
    }
}

struct FuzzEnv {
    knob: u8,
    recvs: u32,
}

impl ResponderEnv for FuzzEnv {
    fn check_access(
        &mut self,
        rkey: u32,
        _va: u64,
        _len: u32,
        _a: Access,
    ) -> Result<(), AccessError> {
        if rkey & 1 == 0 {
            Ok(())
        } else {
            Err(AccessError::BadKey)
        }
    }
    fn atomic(&mut self, rkey: u32, va: u64, _op: AtomicOp) -> Result<u64, AccessError> {
        if rkey & 1 == 0 {
            Ok(va ^ 0x55)
        } else {
            Err(AccessError::NoPermission)
        }
    }
    fn atomic_write(&mut self, rkey: u32, _va: u64, _v: u64) -> Result<(), AccessError> {
        if rkey & 1 == 0 {
            Ok(())
        } else {
            Err(AccessError::OutOfBounds)
        }
    }
    fn invalidate(&mut self, rkey: u32) -> Result<(), AccessError> {
        if rkey & 1 == 0 {
            Ok(())
        } else {
            Err(AccessError::BadKey)
        }
    }
    fn select_xrc_srq(&mut self, srqn: u32) -> bool {
        srqn & 1 == u32::from(self.knob & 1)
    }
    fn recv_head_len(&mut self) -> Option<u32> {
        if self.recvs > 0 {
            Some(u32::from(self.knob) * 37)
        } else {
            None
        }
    }
}

struct CountSink {
    n: usize,
    recv_done: u32,
}
impl ActionSink for CountSink {
    fn push(&mut self, a: Action) {
        self.n += 1;
        if let Action::RecvComplete(_) = a {
            self.recv_done += 1;
        }
    }
    /// Every fifth copy fails, so that the error paths are driven too.
    fn place(&mut self, a: Action) -> Result<(), PlaceError> {
        if self.n % 5 == 4 {
            self.n += 1;
            return Err(if self.n.is_multiple_of(2) {
                PlaceError::Protection
            } else {
                PlaceError::Length
            });
        }
        self.push(a);
        Ok(())
    }
    fn transmit(&mut self, p: TxPacket) -> Result<(), PlaceError> {
        self.place(Action::Send(p))
    }
}

/// Drive a QP (type and attributes from the first bytes) with a stream of
/// packets, timers, posts and polls decoded from `data`.
pub fn responder(data: &[u8]) {
    let Some((&cfgb, mut rest)) = data.split_first() else {
        return;
    };
    let qp_type = match cfgb % 5 {
        0 => QpType::Rc,
        1 => QpType::Uc,
        2 => QpType::Ud,
        3 => QpType::XrcIni,
        _ => QpType::XrcTgt,
    };
    let mtu =
        [Mtu::M256, Mtu::M512, Mtu::M1024, Mtu::M2048, Mtu::M4096][usize::from(cfgb >> 2) % 5];
    let cfg = QpConfig {
        qpn: 0x11,
        qp_type,
        dest_qpn: 0x22,
        qkey: 0x1234,
        mtu,
        sq_psn: Psn::new(0xfffff0),
        rq_psn: Psn::new(0xfffff8),
        timeout: 1 + (cfgb >> 5),
        retry_cnt: cfgb & 7,
        rnr_retry: (cfgb >> 3) & 7,
        max_rd_atomic: cfgb >> 4,
        max_inflight: u32::from(cfgb),
        ..QpConfig::default()
    };
    let mut qp: Qp<8, 4> = Qp::new(cfg);
    let mut sink = CountSink { n: 0, recv_done: 0 };
    let mut env = FuzzEnv {
        knob: cfgb,
        recvs: 4,
    };
    for st in [QpState::Init, QpState::Rtr, QpState::Rts] {
        let _ = qp.modify(
            &ModifyQp {
                state: Some(st),
                ..Default::default()
            },
            &mut sink,
        );
    }
    let mut id = 0u64;
    while let Some((&cmd, r)) = rest.split_first() {
        rest = r;
        match cmd % 8 {
            0..=3 => {
                // A packet: 1 length byte + bytes; fix the destination QP
                // most of the time so the state machines see it.
                let Some((&len, r)) = rest.split_first() else {
                    return;
                };
                let n = usize::from(len).min(r.len());
                let mut pkt = [0u8; 256];
                pkt[..n].copy_from_slice(&r[..n]);
                rest = &r[n..];
                if cmd & 0x10 == 0 && n >= 8 {
                    pkt[5..8].copy_from_slice(&[0, 0, 0x11]);
                    pkt[1] &= 0xf0;
                }
                if let Ok(p) = rrxe_proto::parse_packet(&pkt[..n]) {
                    let _ = qp.on_packet(&p, &mut env, &mut sink);
                }
            }
            4 => {
                let kind = if cmd & 0x10 == 0 {
                    TimerKind::Retransmit
                } else {
                    TimerKind::Rnr
                };
                qp.on_timer(kind, &mut sink);
            }
            5 => {
                let Some((b, r)) = rest.split_first_chunk::<8>() else {
                    return;
                };
                rest = r;
                id += 1;
                let v = u64::from_le_bytes(*b);
                let remote = RemoteAddr {
                    va: v & !0xff,
                    rkey: (v >> 8) as u32,
                };
                let op = match b[0] % 7 {
                    0 => SendOp::Send {
                        imm: None,
                        inv_rkey: None,
                    },
                    1 => SendOp::Write {
                        remote,
                        imm: Some(1),
                    },
                    2 => SendOp::Read { remote },
                    3 => SendOp::CompareSwap {
                        remote,
                        compare: 1,
                        swap: 2,
                    },
                    4 => SendOp::FetchAdd { remote, add: 3 },
                    5 => SendOp::AtomicWrite { remote, value: 4 },
                    _ => SendOp::Flush {
                        remote,
                        sel: 1,
                        plt: 1,
                    },
                };
                let w = SendWqe {
                    id: WqeId(id),
                    op,
                    len: if b[1] & 1 == 0 {
                        8
                    } else {
                        u32::from(b[2]) * u32::from(b[3]) * 7
                    },
                    signaled: true,
                    solicited: false,
                    fence: b[4] & 1 == 1,
                    xrc_srqn: u32::from(b[5]),
                    ud: Some(UdDest {
                        qpn: 0x22,
                        qkey: 0x8000_0000,
                    }),
                };
                let _ = qp.post_send(w, &mut sink);
            }
            6 => {
                let _ = qp.poll_tx(u32::from(cmd >> 3), &mut sink);
            }
            _ => {
                env.recvs = u32::from(cmd >> 4);
                if cmd & 0x80 != 0 {
                    let _ = qp.modify(
                        &ModifyQp {
                            state: Some(QpState::Error),
                            ..Default::default()
                        },
                        &mut sink,
                    );
                }
            }
        }
    }
}

/// Queue sizing from arbitrary requested capabilities (what create_qp/create_srq/create_cq
/// receive from a process): never panics, and what it accepts fits the device and the
/// request.
pub fn caps(data: &[u8]) {
    use rrxe_proto::caps::*;
    let mut w = [0u32; 6];
    for (i, c) in data.chunks(4).take(6).enumerate() {
        let mut b = [0u8; 4];
        b[..c.len()].copy_from_slice(c);
        w[i] = u32::from_le_bytes(b);
    }
    // Mostly near the edges: small values, powers of two and their neighbours, u32::MAX.
    let edge = |v: u32| match v >> 29 {
        0 => v & 0x3f,
        1 => 1u32 << (v & 31),
        2 => (1u32 << (v & 31)).wrapping_sub(1),
        3 => (1u32 << (v & 31)).wrapping_add(1),
        _ => v,
    };
    let dev = DeviceCaps {
        max_wr: 4096,
        max_sge: 32,
        max_inline: 512,
        max_cqe: 65536,
    };
    let f = WqeFormat {
        send_hdr: 72,
        recv_hdr: 16,
        sge: 16,
        min_send_slot: 128,
        min_recv_slot: 32,
        max_slot: 4096,
    };
    let c = QpCaps {
        max_send_wr: edge(w[0]),
        max_recv_wr: edge(w[1]),
        max_send_sge: edge(w[2]),
        max_recv_sge: edge(w[3]),
        max_inline: edge(w[4]),
    };
    if let Ok(l) = user_qp_layout(&c, &dev, &f) {
        assert!(check_qp_caps(&c, &dev).is_ok());
        assert!(l.sq.slots() >= c.max_send_wr && l.sq.slots() <= dev.max_wr);
        assert!(l.rq.slots() >= c.max_recv_wr && l.rq.slots() <= dev.max_wr);
        for q in [l.sq, l.rq] {
            assert!(q.slot_size.is_power_of_two() && q.slot_size <= f.max_slot);
        }
        assert!(l.sq.slot_size >= f.send_hdr + (c.max_send_sge * f.sge).max(c.max_inline));
        assert!(l.rq.slot_size >= f.recv_hdr + c.max_recv_sge.max(1) * f.sge);
    }
    if let Ok(s) = user_srq_shape(c.max_send_wr, c.max_send_sge, &dev, &f) {
        assert!(s.slots() >= c.max_send_wr && s.slots() <= dev.max_wr);
        assert!(s.slot_size >= f.recv_hdr + c.max_send_sge.max(1) * f.sge);
    }
    if let Ok(n) = cq_slots(edge(w[5]), &dev) {
        assert!(n.is_power_of_two() && n >= edge(w[5]) && n <= dev.max_cqe);
    }
}

/// The user WQE decoder on arbitrary slot bytes and limits (what a process writes into its
/// shared send and receive queues): never panics, and what it accepts stays inside the slot
/// and the limits, with the lengths it reports.
pub fn uwqe(data: &[u8]) {
    use rrxe_proto::uabi::*;
    if data.len() < 4 {
        return;
    }
    let (ctl, rest) = data.split_at(4);
    let lim = SendLimits {
        max_sge: u32::from(ctl[0] % 40),
        max_inline: u32::from(u16::from_le_bytes([ctl[1], ctl[2]]) % 1024),
        ud: ctl[3] & 1 != 0,
    };
    // Optionally steer the header towards valid opcodes and small counts so that mutations
    // reach the SGE / inline / union paths; the rest of the bytes stay as given.
    let mut slot = rest.to_vec();
    let steer = ctl[3] >> 1;
    let set32 = |s: &mut [u8], off: usize, v: u32| {
        if let Some(d) = s.get_mut(off..off + 4) {
            d.copy_from_slice(&v.to_ne_bytes());
        }
    };
    let byte = |s: &[u8], off: usize| s.get(off).copied().unwrap_or(0);
    if steer & 1 != 0 {
        let b = byte(&slot, send_wqe::OPCODE);
        set32(&mut slot, send_wqe::OPCODE, u32::from(b % 36));
    }
    if steer & 2 != 0 {
        let b = byte(&slot, send_wqe::NUM_SGE);
        set32(&mut slot, send_wqe::NUM_SGE, u32::from(b % 40));
    }
    if steer & 4 != 0 {
        let b = byte(&slot, send_wqe::INLINE_LEN);
        set32(&mut slot, send_wqe::INLINE_LEN, u32::from(b) * 4);
    }
    if steer & 16 != 0 {
        // FLUSH type and level, mostly valid.
        let at = send_wqe::WR + wr_flush::TYPE;
        let b = byte(&slot, at);
        if let Some(d) = slot.get_mut(at..at + 2) {
            d.copy_from_slice(&[b & 3, (b >> 2) & 1]);
        }
    }
    // The receive header overlaps the send header's opcode: steered in its own copy.
    let mut rslot = rest.to_vec();
    if steer & 8 != 0 {
        let b = byte(&rslot, recv_wqe::NUM_SGE);
        set32(&mut rslot, recv_wqe::NUM_SGE, u32::from(b % 40));
    }
    let rd32 = |s: &[u8], off: usize| u32::from_ne_bytes(s[off..off + 4].try_into().unwrap());
    let rd64 = |s: &[u8], off: usize| u64::from_ne_bytes(s[off..off + 8].try_into().unwrap());
    // Accepted SGEs: inside the slot and the limit, read from where they are, and their
    // total is the exact (no overflow) sum of their lengths.
    let check_sges = |l: &SgeList<'_>, s: &[u8], base: usize, max: u32| {
        assert!(l.count() <= max);
        assert!(base + l.count() as usize * sge::SIZE <= s.len());
        let mut sum: u64 = 0;
        let mut n = 0usize;
        for (i, g) in l.iter().enumerate() {
            let o = base + i * sge::SIZE;
            assert_eq!(g.addr, rd64(s, o + sge::ADDR));
            assert_eq!(g.length, rd32(s, o + sge::LENGTH));
            assert_eq!(g.lkey, rd32(s, o + sge::LKEY));
            sum += u64::from(g.length);
            n += 1;
        }
        assert_eq!(n, l.count() as usize);
        assert_eq!(sum, u64::from(l.total()));
    };

    match decode_send(&slot, &lim) {
        Ok(w) => {
            assert!(slot.len() >= send_wqe::SIZE);
            assert_eq!(w.wr_id, rd64(&slot, send_wqe::WR_ID));
            assert_eq!(w.opcode.raw(), rd32(&slot, send_wqe::OPCODE));
            assert_eq!(w.ex, rd32(&slot, send_wqe::EX));
            assert!(!(lim.ud && w.opcode.is_rc_only()));
            assert_eq!(w.ud.is_some(), lim.ud && w.opcode != WrOpcode::LocalInv);
            let flags = rd32(&slot, send_wqe::SEND_FLAGS);
            assert_eq!(w.flags.signaled, flags & SEND_SIGNALED != 0);
            assert_eq!(w.flags.fence, flags & SEND_FENCE != 0);
            match w.data {
                Data::None => {
                    assert!(w.opcode.is_dataless());
                    assert!(!w.flags.inline && !w.flags.solicited);
                }
                Data::Sges(l) => {
                    assert!(!w.opcode.is_dataless() && !w.flags.inline);
                    assert_eq!(l.count(), rd32(&slot, send_wqe::NUM_SGE));
                    check_sges(&l, &slot, send_wqe::SIZE, lim.max_sge);
                }
                Data::Inline { offset, len } => {
                    assert!(!w.opcode.is_dataless() && w.flags.inline);
                    assert_eq!(offset, send_wqe::SIZE);
                    assert_eq!(len, rd32(&slot, send_wqe::INLINE_LEN));
                    assert!(len <= lim.max_inline);
                    assert!(offset + len as usize <= slot.len());
                }
            }
            if let WrFields::Flush(f) = w.wr {
                assert!(f.typ != 0 && f.typ & !(FLUSH_GLOBAL | FLUSH_PERSISTENT) == 0);
                assert!(f.level == FLUSH_RANGE || f.level == FLUSH_MR);
            }
            let fields_match = matches!(
                (w.opcode, w.wr),
                (
                    WrOpcode::Send
                        | WrOpcode::SendWithImm
                        | WrOpcode::SendWithInv
                        | WrOpcode::LocalInv,
                    WrFields::None
                ) | (
                    WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm | WrOpcode::RdmaRead,
                    WrFields::Rdma(_)
                ) | (
                    WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd,
                    WrFields::Atomic { .. }
                ) | (WrOpcode::AtomicWrite, WrFields::AtomicWrite { .. })
                    | (WrOpcode::BindMw, WrFields::BindMw(_))
                    | (WrOpcode::Flush, WrFields::Flush(_))
            );
            assert!(fields_match, "{:?} with {:?}", w.opcode, w.wr);
        }
        Err(e) => {
            if slot.len() < send_wqe::SIZE {
                assert_eq!(e, WqeError::Short);
            } else if WrOpcode::from_raw(rd32(&slot, send_wqe::OPCODE)).is_none() {
                assert_eq!(e, WqeError::Opcode);
            }
        }
    }

    match decode_recv(&rslot, lim.max_sge) {
        Ok(r) => {
            assert_eq!(r.wr_id, rd64(&rslot, recv_wqe::WR_ID));
            assert_eq!(r.sges.count(), rd32(&rslot, recv_wqe::NUM_SGE));
            check_sges(&r.sges, &rslot, recv_wqe::SIZE, lim.max_sge);
        }
        Err(e) => {
            if rslot.len() < recv_wqe::SIZE {
                assert_eq!(e, WqeError::Short);
            } else {
                assert_ne!(e, WqeError::Short);
            }
        }
    }
}

/// The fault-injection rules file: any bytes, split into lines as the driver splits a
/// write. A rule that parses prints as text that parses back to the same rule, and a set
/// fed those rules and packets drawn from the same bytes never panics.
pub fn fault_rules(data: &[u8]) {
    use core::fmt::Write;
    use rrxe_proto::fault::*;
    let mut set = FaultSet::<4>::new();
    for line in data.split(|&c| c == b'\n') {
        if let Ok(Command::Add(r)) = parse_command(line) {
            let mut buf = [0u8; 2 * MAX_LINE];
            let mut w = SliceWriter::new(&mut buf);
            write!(w, "{r}").unwrap();
            let n = w.len();
            assert_eq!(parse_rule(&buf[..n]), Ok(r));
            let _ = set.add(r);
        }
    }
    for c in data.chunks(8) {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        let v = u64::from_le_bytes(b);
        let p = PacketView {
            qpn: (v & 0xff_ffff) as u32,
            dir: if v & (1 << 24) != 0 { Dir::Tx } else { Dir::Rx },
            class: OpClass::of(Opcode((v >> 32) as u8), Some((v >> 40) as u8)),
            psn: Psn::new(((v >> 40) & 0xff_ffff) as u32),
        };
        let _ = set.decide(&p);
    }
}
