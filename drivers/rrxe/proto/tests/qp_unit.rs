// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Focused state-machine tests with hand-injected packets.

use rrxe_proto::hdr::AETH_ACK_UNLIMITED;
use rrxe_proto::*;

mod support;
use support::{to_rts, wqe, Env, Sink};

type Q = Qp<16, 4>;

fn qp(t: QpType, qpn: u32, dest: u32) -> Q {
    qp_with(t, qpn, dest, |_| {})
}

fn qp_with(t: QpType, qpn: u32, dest: u32, tweak: impl FnOnce(&mut QpConfig)) -> Q {
    let mut cfg = QpConfig {
        qpn,
        qp_type: t,
        dest_qpn: dest,
        qkey: 77,
        mtu: Mtu::M256,
        sq_psn: Psn::new(100),
        rq_psn: Psn::new(100),
        retry_cnt: 1,
        rnr_retry: 1,
        min_rnr_timer: 5,
        ..QpConfig::default()
    };
    tweak(&mut cfg);
    let mut q = Q::new(cfg);
    to_rts(&mut q, &mut Sink::default()).unwrap();
    q
}

/// Serialises a TxPacket (payload filled with `fill`) and parses it back.
fn wire(p: &TxPacket, fill: u8) -> (Vec<u8>, Packet) {
    let len = p.payload.len() as usize;
    let mut b = vec![0u8; 64 + len];
    let n = build_packet(&p.hdrs, &vec![fill; len], &mut b).unwrap();
    b.truncate(n);
    let pk = parse_packet(&b).unwrap();
    (b, pk)
}

/// The remote buffer the tests' responders accept (rkey 5).
const REMOTE: RemoteAddr = RemoteAddr {
    va: 0x1000,
    rkey: 5,
};

/// A SEND without immediate data or invalidation; a WRITE without immediate data and a
/// READ, at [`REMOTE`].
const SEND: SendOp = SendOp::Send {
    imm: None,
    inv_rkey: None,
};
const WRITE: SendOp = SendOp::Write {
    remote: REMOTE,
    imm: None,
};
const READ: SendOp = SendOp::Read { remote: REMOTE };

/// A requester `a` (QPN 1) and its responder `b` (QPN 2) of type `t`, both in RTS, and the
/// responder's environment (no receive posted).
fn pair(t: QpType) -> (Q, Q, Env) {
    pair_with(t, |_| {})
}

/// [`pair`] with `tweak` applied to the requester's configuration.
fn pair_with(t: QpType, tweak: impl FnOnce(&mut QpConfig)) -> (Q, Q, Env) {
    let a = qp_with(t, 1, 2, tweak);
    (a, qp(t, 2, 1), Env::default())
}

/// `b`'s answers to `reqs` (packets of its requester), all sent by one poll after them.
fn answers(b: &mut Q, env: &mut Env, reqs: &[TxPacket]) -> Vec<TxPacket> {
    let mut sb = Sink::default();
    for r in reqs {
        let (_, p) = wire(r, 0);
        b.on_packet(&p, env, &mut sb);
    }
    b.poll_tx(100, &mut sb);
    sb.sent()
}

/// The statuses of send completions `c`, in order.
fn statuses(c: &[SendCompletion]) -> Vec<WcStatus> {
    c.iter().map(|c| c.status).collect()
}

/// Carries `pending` from `a` to `b` and `b`'s replies back to `a`, losing nothing, round
/// after round until nothing is in flight (at most 200 rounds, or until a round draws no
/// reply). `each` sees `a` after every reply. Returns `a`'s completions, the rounds and
/// the packets `a` sent meanwhile.
fn exchange(
    a: &mut Q,
    b: &mut Q,
    env: &mut Env,
    mut pending: Vec<TxPacket>,
    mut each: impl FnMut(&Q),
) -> (Vec<SendCompletion>, u32, usize) {
    let (mut done, mut rounds, mut sent) = (vec![], 0, 0);
    while !pending.is_empty() && rounds < 200 {
        rounds += 1;
        for reply in answers(b, env, &std::mem::take(&mut pending)) {
            let mut sa = Sink::default();
            let (_, rp) = wire(&reply, 0);
            a.on_packet(&rp, env, &mut sa);
            a.poll_tx(100, &mut sa);
            let out = sa.sent();
            sent += out.len();
            pending.extend(out);
            done.extend(sa.completions());
            each(a);
        }
    }
    (done, rounds, sent)
}

/// An RC pair whose requester `a` has a window of `window` packets, with an
/// `npkts`-packet WRITE (MTU 256) posted on `a` and polled once: `a`, the responder `b`,
/// the responder's environment and the packets `a` sent.
fn rc_write(window: u32, id: u64, npkts: u32) -> (Q, Q, Env, Vec<TxPacket>) {
    let (mut a, b, env) = pair_with(QpType::Rc, |c| c.max_inflight = window);
    let mut s = Sink::default();
    a.post_send(wqe(id, WRITE, npkts * 256), &mut s).unwrap();
    a.poll_tx(1000, &mut s);
    (a, b, env, s.sent())
}

fn req(op: Opcode, psn: u32, ack: bool, len: usize) -> (Vec<u8>, Packet) {
    let mut h = Headers::new(Bth::new(op, 2, Psn::new(psn)));
    h.bth.ack_req = ack;
    let info = op.info().unwrap();
    use rrxe_proto::opcode::HdrSet;
    if info.hdrs.has(HdrSet::RETH) {
        h.reth = Some(Reth {
            va: 0x1000,
            rkey: 5,
            len: len as u32,
        });
    }
    if info.hdrs.has(HdrSet::ATOMIC) {
        h.atomic = Some(AtomicEth {
            va: 0x1000,
            rkey: 5,
            swap_add: 1,
            compare: 0,
        });
    }
    let pl = if op == Opcode::RC_READ_REQUEST {
        0
    } else {
        len
    };
    let tx = TxPacket {
        hdrs: h,
        payload: if pl == 0 {
            Payload::None
        } else {
            Payload::Inline([0; 8])
        },
        ud_wqe: None,
    };
    let mut b = vec![0u8; 64 + pl];
    let n = build_packet(&tx.hdrs, &vec![1; pl], &mut b).unwrap();
    b.truncate(n);
    let p = parse_packet(&b).unwrap();
    (b, p)
}

fn aeth_of(p: &TxPacket) -> AethKind {
    p.hdrs.aeth.unwrap().kind()
}

#[test]
fn seq_nak_once_then_dup_ack() {
    let mut r = qp(QpType::Rc, 2, 1);
    let mut env = Env {
        recvs: 10,
        ..Default::default()
    };
    let mut s = Sink::default();
    let (_, p) = req(Opcode::RC_SEND_ONLY, 102, true, 4);
    assert_eq!(r.on_packet(&p, &mut env, &mut s), RxStatus::OutOfSequence);
    let (_, p2) = req(Opcode::RC_SEND_ONLY, 103, true, 4);
    assert_eq!(r.on_packet(&p2, &mut env, &mut s), RxStatus::OutOfSequence);
    let sent = s.sent();
    assert_eq!(sent.len(), 1, "one NAK per gap");
    assert_eq!(aeth_of(&sent[0]), AethKind::Nak(NakCode::PsnSeqError));
    assert_eq!(sent[0].hdrs.bth.psn, Psn::new(100));
    let mut s = Sink::default();
    let (_, p) = req(Opcode::RC_SEND_ONLY, 100, true, 4);
    assert_eq!(r.on_packet(&p, &mut env, &mut s), RxStatus::Ok);
    assert!(s
        .0
        .iter()
        .any(|a| matches!(a, Action::RecvComplete(c) if c.byte_len == 4)));
    let mut s = Sink::default();
    assert_eq!(r.on_packet(&p, &mut env, &mut s), RxStatus::Duplicate);
    let sent = s.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].hdrs.bth.psn, Psn::new(100));
    assert_eq!(sent[0].hdrs.aeth.unwrap().syndrome, AETH_ACK_UNLIMITED);
    assert!(
        !s.0.iter().any(|a| matches!(a, Action::RecvComplete(_))),
        "exactly once"
    );
}

#[test]
fn rnr_nak_and_retry_exhaustion() {
    let (mut a, mut b, mut env) = pair(QpType::Rc);
    let mut s = Sink::default();
    a.post_send(wqe(7, SEND, 10), &mut s).unwrap();
    assert!(!a.poll_tx(16, &mut s));
    let tx = s.sent()[0];
    for round in 0..2 {
        let (_, p) = wire(&tx, 0);
        let mut sb = Sink::default();
        assert_eq!(b.on_packet(&p, &mut env, &mut sb), RxStatus::NoRecv);
        let nak = sb.sent()[0];
        assert_eq!(aeth_of(&nak), AethKind::RnrNak { timer: 5 });
        let (_, np) = wire(&nak, 0);
        let mut sa = Sink::default();
        a.on_packet(&np, &mut env, &mut sa);
        if round == 0 {
            assert!(sa.0.contains(&Action::ArmTimer {
                kind: TimerKind::Rnr,
                usecs: 60
            }));
            assert!(!a.poll_tx(16, &mut sa), "nothing sent while waiting");
            assert!(sa.sent().is_empty());
            a.on_timer(TimerKind::Rnr, &mut sa);
            a.poll_tx(16, &mut sa);
            assert_eq!(sa.sent().len(), 1, "retransmitted after RNR timer");
        } else {
            let c = sa.completions();
            assert_eq!(c[0].status, WcStatus::RnrRetryExcErr);
            assert_eq!(a.state(), QpState::Error);
        }
    }
}

#[test]
fn remote_access_error() {
    let (mut a, mut b, mut env) = pair(QpType::Rc);
    env.bad_rkey = 9;
    let mut s = Sink::default();
    for (i, rkey) in [(1u64, 5u32), (2, 9), (3, 5)] {
        let remote = RemoteAddr { va: 0x1000, rkey };
        let op = SendOp::Write { remote, imm: None };
        a.post_send(wqe(i, op, 300), &mut s).unwrap();
    }
    a.poll_tx(100, &mut s);
    let (mut back, mut events_b) = (vec![], vec![]);
    for tx in s.sent() {
        let (_, p) = wire(&tx, 3);
        let mut sb = Sink::default();
        b.on_packet(&p, &mut env, &mut sb);
        back.extend(sb.sent());
        events_b.extend(sb.events());
    }
    assert_eq!(b.state(), QpState::Error);
    assert_eq!(
        aeth_of(back.last().unwrap()),
        AethKind::Nak(NakCode::RemoteAccess)
    );
    assert_eq!(
        events_b,
        [QpEvent::AccessErr],
        "the responder reports the R_Key violation once"
    );
    let mut sa = Sink::default();
    for tx in back {
        let (_, p) = wire(&tx, 0);
        a.on_packet(&p, &mut env, &mut sa);
    }
    assert_eq!(
        statuses(&sa.completions()),
        [
            WcStatus::Success,
            WcStatus::RemAccessErr,
            WcStatus::WrFlushErr
        ]
    );
}

#[test]
fn atomic_replayed_from_cache() {
    let mut b = qp(QpType::Rc, 2, 1);
    let mut env = Env::default();
    let (_, p) = req(Opcode::RC_FETCH_ADD, 100, true, 0);
    let mut s = Sink::default();
    assert_eq!(b.on_packet(&p, &mut env, &mut s), RxStatus::Ok);
    b.poll_tx(8, &mut s);
    let first = s.sent()[0];
    assert_eq!(first.hdrs.atomic_ack.unwrap().orig, 101);
    let mut s = Sink::default();
    assert_eq!(b.on_packet(&p, &mut env, &mut s), RxStatus::Duplicate);
    b.poll_tx(8, &mut s);
    assert_eq!(s.sent()[0].hdrs.atomic_ack.unwrap().orig, 101);
    assert_eq!(env.atomics, 1, "executed exactly once");
}

#[test]
fn duplicate_read_partial_reexecution() {
    let mut b = qp(QpType::Rc, 2, 1);
    let mut env = Env::default();
    let (_, p) = req(Opcode::RC_READ_REQUEST, 100, true, 1000);
    let mut s = Sink::default();
    b.on_packet(&p, &mut env, &mut s);
    b.poll_tx(100, &mut s);
    let ops: Vec<Opcode> = s.sent().iter().map(|t| t.hdrs.bth.opcode).collect();
    assert_eq!(
        ops,
        [
            Opcode::RC_READ_RESPONSE_FIRST,
            Opcode::RC_READ_RESPONSE_MIDDLE,
            Opcode::RC_READ_RESPONSE_MIDDLE,
            Opcode::RC_READ_RESPONSE_LAST
        ]
    );
    assert_eq!(b.responder().epsn(), Psn::new(104));
    // Retry of the tail: PSN 102, va + 512, 488 bytes.
    let mut h = Headers::new(Bth::new(Opcode::RC_READ_REQUEST, 2, Psn::new(102)));
    h.reth = Some(Reth {
        va: 0x1000 + 512,
        rkey: 5,
        len: 488,
    });
    let mut buf = [0u8; 64];
    let n = build_packet(&h, &[], &mut buf).unwrap();
    let dp = parse_packet(&buf[..n]).unwrap();
    let mut s = Sink::default();
    b.on_packet(&dp, &mut env, &mut s);
    b.poll_tx(100, &mut s);
    let sent = s.sent();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].hdrs.bth.psn, Psn::new(102));
    assert_eq!(
        sent[0].payload,
        Payload::Mr {
            rkey: 5,
            va: 0x1000 + 512,
            len: 256,
            xrc_srqn: 0,
        }
    );
    assert_eq!(sent[1].hdrs.bth.opcode, Opcode::RC_READ_RESPONSE_LAST);
}

#[test]
fn retransmit_timeout_then_retry_exceeded() {
    let mut a = qp(QpType::Rc, 1, 2);
    let mut s = Sink::default();
    for i in 0..2 {
        let op = SendOp::Send {
            imm: Some(1),
            inv_rkey: None,
        };
        a.post_send(wqe(i, op, 600), &mut s).unwrap();
    }
    a.poll_tx(100, &mut s);
    assert_eq!(s.sent().len(), 6);
    assert!(s.0.iter().any(|x| matches!(
        x,
        Action::ArmTimer {
            kind: TimerKind::Retransmit,
            ..
        }
    )));
    let mut s = Sink::default();
    a.on_timer(TimerKind::Retransmit, &mut s);
    a.poll_tx(100, &mut s);
    // The probe: the packet at una again, asking for an ACK, and nothing after it until
    // it is answered.
    assert_eq!(s.sent().len(), 1, "the probe alone");
    assert_eq!(s.sent()[0].hdrs.bth.psn, Psn::new(100));
    assert!(s.sent()[0].hdrs.bth.ack_req);
    let mut s = Sink::default();
    a.on_timer(TimerKind::Retransmit, &mut s);
    assert_eq!(
        statuses(&s.completions()),
        [WcStatus::RetryExcErr, WcStatus::WrFlushErr]
    );
    assert!(s.0.contains(&Action::FlushRecvQueue));
    assert_eq!(a.state(), QpState::Error);
    // Posting in error completes with flush error.
    let mut s = Sink::default();
    let unsignaled = SendWqe {
        signaled: false,
        ..wqe(9, SEND, 1)
    };
    a.post_send(unsignaled, &mut s).unwrap();
    assert_eq!(s.completions()[0].status, WcStatus::WrFlushErr);
}

#[test]
fn ud_qkey_and_grh_offset() {
    let mut b = qp(QpType::Ud, 2, 0);
    let mut env = Env {
        recvs: 1,
        ..Default::default()
    };
    let mk = |qkey| {
        let mut h = Headers::new(Bth::new(Opcode::UD_SEND_ONLY, 2, Psn::new(5)));
        h.deth = Some(Deth { qkey, src_qp: 33 });
        let mut buf = vec![0u8; 64];
        let n = build_packet(&h, &[9; 10], &mut buf).unwrap();
        buf.truncate(n);
        parse_packet(&buf).unwrap()
    };
    let mut s = Sink::default();
    assert_eq!(b.on_packet(&mk(78), &mut env, &mut s), RxStatus::BadQkey);
    assert!(s.0.is_empty());
    assert_eq!(b.on_packet(&mk(77), &mut env, &mut s), RxStatus::Ok);
    assert_eq!(s.0[0], Action::PlaceGrh);
    assert_eq!(
        s.0[1],
        Action::PlaceRecv {
            offset: 40,
            src: PktRange { off: 20, len: 10 }
        }
    );
    assert!(matches!(s.0[2], Action::RecvComplete(c) if c.byte_len == 50 && c.src_qp == 33));
}

#[test]
fn ud_takes_multicast_qpn_others_do_not() {
    let mk = |dqpn| {
        let mut h = Headers::new(Bth::new(Opcode::UD_SEND_ONLY, dqpn, Psn::new(5)));
        h.deth = Some(Deth {
            qkey: 77,
            src_qp: 33,
        });
        let mut buf = vec![0u8; 64];
        let n = build_packet(&h, &[9; 10], &mut buf).unwrap();
        buf.truncate(n);
        parse_packet(&buf).unwrap()
    };
    let mut b = qp(QpType::Ud, 2, 0);
    let mut env = Env {
        recvs: 2,
        ..Default::default()
    };
    let mut s = Sink::default();
    let m = rrxe_proto::mcast::MULTICAST_QPN;
    assert_eq!(b.on_packet(&mk(m), &mut env, &mut s), RxStatus::Ok);
    assert!(matches!(s.0[2], Action::RecvComplete(c) if c.byte_len == 50 && c.src_qp == 33));
    // Another QP's number is still refused.
    assert_eq!(b.on_packet(&mk(3), &mut env, &mut s), RxStatus::WrongQp);
    // A connected QP never takes the multicast QPN (wrong transport first, then the QPN).
    let mut uc = qp(QpType::Uc, 2, 0);
    let mut h = Headers::new(Bth::new(Opcode::UC_SEND_ONLY, m, Psn::new(0)));
    h.bth.pkey = 0xffff;
    let mut buf = vec![0u8; 64];
    let n = build_packet(&h, &[1; 4], &mut buf).unwrap();
    buf.truncate(n);
    let mut s = Sink::default();
    assert_eq!(
        uc.on_packet(&parse_packet(&buf).unwrap(), &mut env, &mut s),
        RxStatus::WrongQp
    );
}

#[test]
fn post_validation() {
    let mut uc = qp(QpType::Uc, 1, 2);
    let mut ud = qp(QpType::Ud, 1, 2);
    let mut rc = qp(QpType::Rc, 1, 2);
    let mut s = Sink::default();
    let w = |op, len| wqe(1, op, len);
    let r = RemoteAddr {
        va: 0x1001,
        rkey: 1,
    };
    assert_eq!(
        uc.post_send(w(SendOp::Read { remote: r }, 8), &mut s),
        Err(PostError::InvalidOp)
    );
    assert_eq!(
        rc.post_send(w(SendOp::FetchAdd { remote: r, add: 1 }, 8), &mut s),
        Err(PostError::Misaligned)
    );
    assert_eq!(
        rc.post_send(
            w(
                SendOp::FetchAdd {
                    remote: RemoteAddr { va: 0, rkey: 1 },
                    add: 1
                },
                4
            ),
            &mut s
        ),
        Err(PostError::BadLength)
    );
    assert_eq!(ud.post_send(w(SEND, 8), &mut s), Err(PostError::InvalidOp));
    assert_eq!(
        rc.post_send(
            w(
                SendOp::Send {
                    imm: Some(1),
                    inv_rkey: Some(2)
                },
                8
            ),
            &mut s
        ),
        Err(PostError::InvalidOp)
    );
    for _ in 0..16 {
        rc.post_send(w(SEND, 8), &mut s).unwrap();
    }
    assert_eq!(rc.post_send(w(SEND, 8), &mut s), Err(PostError::Full));
    let mut fresh = Q::new(QpConfig::default());
    assert_eq!(
        fresh.post_send(w(SEND, 8), &mut s),
        Err(PostError::BadState)
    );
    assert_eq!(
        fresh.modify(
            &ModifyQp {
                state: Some(QpState::Rts),
                ..Default::default()
            },
            &mut s
        ),
        Err(ModifyError::InvalidTransition)
    );
}

#[test]
fn large_read_requested_in_chunks() {
    // 10 response packets (MTU 256), chunks of 4: requests for 4, 4 and 2 packets, the
    // next one only once responses of the previous chunk are arriving.
    let (mut a, mut b, mut env) = pair_with(QpType::Rc, |c| c.read_chunk = 4);
    let mut s = Sink::default();
    a.post_send(wqe(7, READ, 2560), &mut s).unwrap();
    a.poll_tx(100, &mut s);
    let first = s.sent();
    assert_eq!(first.len(), 1, "one request for the first chunk only");
    assert_eq!(first[0].hdrs.reth.unwrap().len, 1024);
    // The first chunk's responses, delivered one at a time.
    let mut reqs = vec![(first[0].hdrs.bth.psn, first[0].hdrs.reth.unwrap())];
    let mut pending: Vec<TxPacket> = first;
    let mut done = vec![];
    for _ in 0..100 {
        let Some(r) = pending.first().copied() else {
            break;
        };
        pending.remove(0);
        for resp in answers(&mut b, &mut env, &[r]) {
            let mut sa = Sink::default();
            let (_, rp) = wire(&resp, 9);
            a.on_packet(&rp, &mut env, &mut sa);
            a.poll_tx(100, &mut sa);
            for q in sa.sent() {
                reqs.push((q.hdrs.bth.psn, q.hdrs.reth.unwrap()));
                pending.push(q);
            }
            done.extend(sa.completions());
        }
    }
    let got: Vec<(u32, u64, u32)> = reqs.iter().map(|(p, r)| (p.get(), r.va, r.len)).collect();
    assert_eq!(
        got,
        [(100, 0x1000, 1024), (104, 0x1400, 1024), (108, 0x1800, 512)]
    );
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].status, WcStatus::Success);
}

#[test]
fn long_write_paced_by_the_window() {
    // A 40-packet WRITE (MTU 256) with a window of 8: 8 packets, then one more per ACKed
    // packet, never more than 8 unacknowledged; the responder's ACKs (AckReq every 16
    // packets and on the last) complete it.
    let (mut a, mut b, mut env, pending) = rc_write(8, 3, 40);
    assert_eq!(pending.len(), 8, "a full window, not the whole message");
    // A round with no ACK ends the exchange: then nothing asked for one, and only the
    // retransmit timer would help. The window has to have room for the packet that asks.
    let (done, rounds, more) = exchange(&mut a, &mut b, &mut env, pending, |_| {});
    let sent = 8 + more;
    assert_eq!(
        done.len(),
        1,
        "completed after {rounds} rounds, {sent} packets sent"
    );
    assert_eq!(done[0].status, WcStatus::Success);
    assert_eq!(sent, 40, "no packet sent twice");
}

#[test]
fn seq_nak_halves_the_window_once_and_acks_grow_it_back() {
    // A 64-packet WRITE with a window of 32; packet 4 is lost. The responder NAKs once
    // (sequence error) and drops the rest; the requester resends from 4 with the window
    // halved to 16, and the lossless rest of the transfer grows it again.
    let (mut a, mut b, mut env, first) = rc_write(32, 9, 64);
    assert_eq!(first.len(), 32, "the full window");
    assert_eq!(a.send_queue().cwnd(), 32);

    let mut sb = Sink::default();
    for (i, r) in first.iter().enumerate() {
        if i != 4 {
            let (_, p) = wire(r, 0);
            b.on_packet(&p, &mut env, &mut sb);
        }
    }
    b.poll_tx(1000, &mut sb);
    let replies = sb.sent();
    assert_eq!(replies.len(), 1, "one sequence NAK for the whole episode");

    let mut sa = Sink::default();
    let (_, nak) = wire(&replies[0], 0);
    a.on_packet(&nak, &mut env, &mut sa);
    a.poll_tx(1000, &mut sa);
    let resent = sa.sent();
    assert_eq!(a.send_queue().cwnd(), 16, "halved by the loss");
    assert_eq!(a.send_queue().stats().cwnd_cuts, 1);
    assert_eq!(
        resent.len(),
        16,
        "go-back-N resends only the smaller window"
    );
    assert_eq!(resent[0].hdrs.bth.psn, Psn::new(104));

    // The rest is lossless: everything completes, and the window only grows.
    let mut last_cwnd = a.send_queue().cwnd();
    let (done, rounds, _) = exchange(&mut a, &mut b, &mut env, resent, |a| {
        assert!(a.send_queue().cwnd() >= last_cwnd, "no cut without a loss");
        last_cwnd = a.send_queue().cwnd();
    });
    assert_eq!(done.len(), 1, "completed after {rounds} rounds");
    assert_eq!(done[0].status, WcStatus::Success);
    assert_eq!(a.send_queue().stats().cwnd_cuts, 1, "one episode, one cut");
    assert!(last_cwnd > 16, "ACKs grew the window again ({last_cwnd})");
}

/// The retransmit timeouts `s` armed, in microseconds.
fn rto_arms(s: &Sink) -> Vec<u64> {
    s.0.iter()
        .filter_map(|x| match x {
            Action::ArmTimer {
                kind: TimerKind::Retransmit,
                usecs,
            } => Some(*usecs),
            _ => None,
        })
        .collect()
}

#[test]
fn consecutive_timeouts_back_off_and_progress_resets_the_wait() {
    // Two single-packet SENDs, nothing acknowledged: each timeout doubles the next wait,
    // up to 2^MAX_RTO_BACKOFF times the QP's timeout; an ACK of the first SEND re-arms
    // the timer for the second at the QP's own timeout again.
    let (mut a, mut b, mut env) = pair_with(QpType::Rc, |c| {
        c.retry_cnt = 7;
        c.timeout = 10;
    });
    let mut s = Sink::default();
    for id in 0..2 {
        a.post_send(wqe(id, SEND, 16), &mut s).unwrap();
    }
    a.poll_tx(100, &mut s);
    let first = s.sent();
    assert_eq!(first.len(), 2);
    let t = (4096u64 << 10) / 1000;
    assert_eq!(rto_arms(&s), [t]);
    let mut waits = vec![];
    for _ in 0..5 {
        let mut s = Sink::default();
        a.on_timer(TimerKind::Retransmit, &mut s);
        a.poll_tx(100, &mut s);
        assert_eq!(s.sent().len(), 1, "the probe again, alone");
        waits.extend(rto_arms(&s));
    }
    let cap = t << rrxe_proto::req::MAX_RTO_BACKOFF;
    assert_eq!(waits, [2 * t, 4 * t, cap, cap, cap]);
    assert_eq!(a.send_queue().stats().timeouts, 5);

    // The responder gets the first SEND only and acknowledges it: progress.
    env.recvs = 2;
    let acks = answers(&mut b, &mut env, &first[..1]);
    assert_eq!(acks.len(), 1);
    let mut s = Sink::default();
    let (_, ack) = wire(&acks[0], 0);
    a.on_packet(&ack, &mut env, &mut s);
    assert_eq!(s.completions().len(), 1);
    assert_eq!(rto_arms(&s), [t], "progress: the QP's own timeout again");
}

/// Three single-packet SENDs (PSN 100..102) that `b` receives as `delivered` says, with
/// every ACK it sends lost; then `a`'s retransmit timeout and its probe. Returns the
/// requester, the responder and env, and what `a` sent after the timeout.
fn timeout_probe(delivered: [bool; 3]) -> (Q, Q, Env, Vec<TxPacket>) {
    let (mut a, mut b, mut env) = pair(QpType::Rc);
    env.recvs = 3;
    let mut s = Sink::default();
    for id in 0..3 {
        a.post_send(wqe(id, SEND, 16), &mut s).unwrap();
    }
    a.poll_tx(100, &mut s);
    let first = s.sent();
    assert_eq!(first.len(), 3);
    let got: Vec<TxPacket> = first
        .iter()
        .zip(delivered)
        .filter_map(|(p, d)| d.then_some(*p))
        .collect();
    let _lost_acks = answers(&mut b, &mut env, &got);
    let mut s = Sink::default();
    a.on_timer(TimerKind::Retransmit, &mut s);
    a.poll_tx(100, &mut s);
    (a, b, env, s.sent())
}

#[test]
fn a_late_timeout_costs_one_packet() {
    // Everything arrived, only the ACKs were late (lost here): the probe is a duplicate,
    // the responder re-ACKs all three, and nothing else goes again.
    let (mut a, mut b, mut env, sent) = timeout_probe([true; 3]);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].hdrs.bth.psn, Psn::new(100));
    assert!(sent[0].hdrs.bth.ack_req);
    let acks = answers(&mut b, &mut env, &sent);
    assert_eq!(acks.len(), 1);
    assert_eq!(
        acks[0].hdrs.bth.psn,
        Psn::new(102),
        "a duplicate is re-ACKed at epsn - 1"
    );
    let mut s = Sink::default();
    let (_, ack) = wire(&acks[0], 0);
    a.on_packet(&ack, &mut env, &mut s);
    a.poll_tx(100, &mut s);
    assert_eq!(statuses(&s.completions()), [WcStatus::Success; 3]);
    assert!(s.sent().is_empty(), "nothing sent again");
    assert_eq!(a.send_queue().stats().retransmits, 1);
}

#[test]
fn a_probe_answered_part_way_resumes_where_sending_stood() {
    // The third SEND is still on its way: the probe's ACK covers two, and the third is not
    // sent again; its own ACK completes it.
    let (mut a, mut b, mut env, sent) = timeout_probe([true, true, false]);
    assert_eq!(sent.len(), 1);
    let acks = answers(&mut b, &mut env, &sent);
    let mut s = Sink::default();
    let (_, ack) = wire(&acks[0], 0);
    a.on_packet(&ack, &mut env, &mut s);
    a.poll_tx(100, &mut s);
    assert_eq!(s.completions().len(), 2);
    assert!(
        s.sent().is_empty(),
        "PSN 102 is taken as late: not sent again"
    );
    // The late original (the same packet as first sent) arrives and is acknowledged.
    let mut s0 = Sink::default();
    let mut a2 = qp(QpType::Rc, 1, 2);
    for id in 0..3 {
        a2.post_send(wqe(id, SEND, 16), &mut s0).unwrap();
    }
    a2.poll_tx(100, &mut s0);
    let acks = answers(&mut b, &mut env, &[s0.sent()[2]]);
    let (_, ack) = wire(&acks[0], 0);
    let mut s = Sink::default();
    a.on_packet(&ack, &mut env, &mut s);
    assert_eq!(statuses(&s.completions()), [WcStatus::Success]);
    assert_eq!(a.send_queue().stats().retransmits, 1);
}

#[test]
fn an_ack_before_the_probe_goes_out_ends_the_probe() {
    // The timeout fired, but the originals' late ACK comes in before the driver's next
    // poll sends the probe: the probe is moot, and the queue goes on (it used to keep a
    // stale probe that held every later WQE, with no timer armed: ib_write_bw -q 64 hung).
    let (mut a, mut b, mut env) = pair(QpType::Rc);
    env.recvs = 4;
    let mut s = Sink::default();
    for id in 0..3 {
        a.post_send(wqe(id, SEND, 16), &mut s).unwrap();
    }
    a.poll_tx(100, &mut s);
    let acks = answers(&mut b, &mut env, &s.sent());
    let mut s = Sink::default();
    a.on_timer(TimerKind::Retransmit, &mut s);
    // One ACK for all three (the responder coalesces; here the first two are lost).
    let (_, ack) = wire(acks.last().unwrap(), 0);
    a.on_packet(&ack, &mut env, &mut s);
    assert_eq!(statuses(&s.completions()), [WcStatus::Success; 3]);
    a.post_send(wqe(3, SEND, 16), &mut s).unwrap();
    let mut s = Sink::default();
    a.poll_tx(100, &mut s);
    let psns: Vec<u32> = s.sent().iter().map(|p| p.hdrs.bth.psn.get()).collect();
    assert_eq!(psns, [103], "the next WQE goes out; nothing is sent again");
}

#[test]
fn a_lost_packet_found_by_the_probe_goes_back_n() {
    // The first SEND was lost and the other two dropped out of sequence (their NAK lost
    // too): the probe is the responder's next packet, its ACK covers it alone, and the
    // rest goes again.
    let (mut a, mut b, mut env, sent) = timeout_probe([false, false, false]);
    assert_eq!(sent.len(), 1);
    let acks = answers(&mut b, &mut env, &sent);
    assert_eq!(acks[0].hdrs.bth.psn, Psn::new(100));
    let mut s = Sink::default();
    let (_, ack) = wire(&acks[0], 0);
    a.on_packet(&ack, &mut env, &mut s);
    a.poll_tx(100, &mut s);
    assert_eq!(s.completions().len(), 1);
    let again: Vec<u32> = s.sent().iter().map(|p| p.hdrs.bth.psn.get()).collect();
    assert_eq!(again, [101, 102], "go-back-N after the probe");
}

#[test]
fn a_spurious_timeout_undoes_its_window_cut_and_a_real_one_keeps_it() {
    // Late, not lost: the timeout halves the window, and the probe's ACK (beyond the
    // probe's PSN) proves the timeout spurious and restores it.
    let full = rrxe_proto::QpConfig::default().max_inflight;
    let (mut a, mut b, mut env, sent) = timeout_probe([true; 3]);
    assert_eq!(
        a.send_queue().cwnd(),
        full / 2,
        "a timeout is a loss indication"
    );
    let acks = answers(&mut b, &mut env, &sent);
    let mut s = Sink::default();
    let (_, ack) = wire(&acks[0], 0);
    a.on_packet(&ack, &mut env, &mut s);
    assert_eq!(a.send_queue().cwnd(), full, "the cut is undone");
    let st = a.send_queue().stats();
    assert_eq!((st.cwnd_cuts, st.cwnd_undos), (1, 1));

    // Lost: the probe's ACK covers the probe alone, and the window stays halved.
    let (mut a, mut b, mut env, sent) = timeout_probe([false, false, false]);
    let acks = answers(&mut b, &mut env, &sent);
    let mut s = Sink::default();
    let (_, ack) = wire(&acks[0], 0);
    a.on_packet(&ack, &mut env, &mut s);
    assert_eq!(a.send_queue().cwnd(), full / 2, "a real loss keeps the cut");
    let st = a.send_queue().stats();
    assert_eq!((st.cwnd_cuts, st.cwnd_undos), (1, 0));

    // Still in that episode, a second timeout whose probe finds its packets late must not
    // undo the first, real, cut. The rest (101, 102) goes again and arrives; its ACKs are
    // lost; the timeout probes 101 and the responder's ACK covers 102.
    a.poll_tx(100, &mut s);
    let again = s.sent();
    assert_eq!(again.len(), 2);
    let _lost_acks = answers(&mut b, &mut env, &again);
    let mut s = Sink::default();
    a.on_timer(TimerKind::Retransmit, &mut s);
    a.poll_tx(100, &mut s);
    let probe = s.sent();
    assert_eq!(probe.len(), 1);
    assert_eq!(probe[0].hdrs.bth.psn, Psn::new(101));
    let acks = answers(&mut b, &mut env, &probe);
    let (_, ack) = wire(&acks[0], 0);
    let mut s = Sink::default();
    a.on_packet(&ack, &mut env, &mut s);
    assert_eq!(statuses(&s.completions()), [WcStatus::Success; 2]);
    assert_eq!(
        a.send_queue().cwnd(),
        full / 2,
        "the real loss's cut still stands"
    );
    let st = a.send_queue().stats();
    assert_eq!((st.cwnd_cuts, st.cwnd_undos), (1, 0));
}

#[test]
fn a_read_waits_for_the_read_window_where_a_write_would_not() {
    // Window 1024: a 300-packet WRITE goes out whole, but a READ posted behind it does not
    // start while 300 >= MAX_READ_INFLIGHT PSNs are outstanding; the ACK of the WRITE lets
    // it go.
    let (mut a, mut b, mut env) = pair_with(QpType::Rc, |c| c.max_inflight = 1024);
    let mut s = Sink::default();
    a.post_send(wqe(1, WRITE, 300 * 256), &mut s).unwrap();
    a.post_send(wqe(2, READ, 256), &mut s).unwrap();
    a.poll_tx(1000, &mut s);
    let sent = s.sent();
    assert_eq!(sent.len(), 300, "the WRITE, and no READ request yet");
    const { assert!(300 >= rrxe_proto::req::MAX_READ_INFLIGHT) };
    let (done, _, more) = exchange(&mut a, &mut b, &mut env, sent, |_| {});
    assert_eq!(more, 1, "the READ request, once the WRITE was acknowledged");
    assert_eq!(statuses(&done), [WcStatus::Success, WcStatus::Success]);
}

// ---------------------------------------------------------------------------------------
// Placement errors: the sink reports a copy it could not do, the state machine decides.

/// Feeds `pkts` (requests of `a`) to `b` with sink `sb`, then `b`'s answers back to `a`:
/// (`b`'s actions, `a`'s actions).
fn round_trip(a: &mut Q, b: &mut Q, env: &mut Env, pkts: &[TxPacket], sb: &mut Sink) -> Sink {
    for t in pkts {
        let (_, p) = wire(t, 7);
        b.on_packet(&p, env, sb);
    }
    b.poll_tx(100, sb);
    let mut sa = Sink::default();
    for t in sb.sent() {
        let (_, p) = wire(&t, 0);
        a.on_packet(&p, env, &mut sa);
    }
    sa
}

#[test]
fn recv_into_a_bad_lkey_completes_with_loc_prot_err_and_naks_rem_op_err() {
    let (mut a, mut b, mut env) = pair(QpType::Rc);
    env.recvs = 2;
    let mut s = Sink::default();
    a.post_send(wqe(1, SEND, 600), &mut s).unwrap();
    a.poll_tx(100, &mut s);
    let mut sb = Sink(
        vec![],
        Some(|a| matches!(a, Action::PlaceRecv { .. }).then_some(PlaceError::Protection)),
    );
    let sa = round_trip(&mut a, &mut b, &mut env, &s.sent(), &mut sb);
    let rc = sb.recv_completions();
    assert_eq!(rc.len(), 1, "the receive completes once: {:?}", sb.0);
    assert_eq!(rc[0].status, WcStatus::LocProtErr);
    assert_eq!(rc[0].byte_len, 0);
    let naks = sb.sent();
    assert_eq!(naks.len(), 1);
    assert_eq!(aeth_of(&naks[0]), AethKind::Nak(NakCode::RemoteOperational));
    assert_eq!(
        naks[0].hdrs.bth.psn,
        Psn::new(100),
        "NAK of the FIRST packet"
    );
    assert_eq!(b.state(), QpState::Error);
    assert!(sb.0.contains(&Action::FlushRecvQueue));
    assert_eq!(statuses(&sa.completions()), [WcStatus::RemOpErr]);
    assert_eq!(a.state(), QpState::Error);
}

#[test]
fn recv_too_short_at_placement_is_a_length_error() {
    let mut b = qp(QpType::Rc, 2, 1);
    let mut env = Env {
        recvs: 1,
        ..Default::default()
    };
    let mut sb = Sink(
        vec![],
        Some(|a| matches!(a, Action::PlaceRecv { .. }).then_some(PlaceError::Length)),
    );
    let (_, p) = req(Opcode::RC_SEND_ONLY, 100, true, 8);
    assert_eq!(b.on_packet(&p, &mut env, &mut sb), RxStatus::Invalid);
    assert_eq!(sb.recv_completions()[0].status, WcStatus::LocLenErr);
    assert_eq!(
        aeth_of(&sb.sent()[0]),
        AethKind::Nak(NakCode::InvalidRequest)
    );
    assert_eq!(b.state(), QpState::Error);
    assert!(
        sb.events().is_empty(),
        "the receive's completion reports the error: no event"
    );
}

#[test]
fn write_whose_mr_goes_away_mid_message_is_naked_remote_access() {
    // 4 packets; the MR is valid for the FIRST (the access check passes) and gone from
    // the second on: placement of the MIDDLE at offset 256 fails.
    let (mut a, mut b, mut env, pkts) = rc_write(64, 5, 4);
    assert_eq!(pkts.len(), 4);
    let mut sb = Sink(
        vec![],
        Some(|a| match a {
            Action::PlaceMr { va, .. } if *va >= 0x1000 + 256 => Some(PlaceError::Protection),
            _ => None,
        }),
    );
    let sa = round_trip(&mut a, &mut b, &mut env, &pkts, &mut sb);
    let placed =
        sb.0.iter()
            .filter(|a| matches!(a, Action::PlaceMr { .. }))
            .count();
    assert_eq!(placed, 1, "only the FIRST packet's bytes landed");
    let naks = sb.sent();
    assert_eq!(naks.len(), 1, "one NAK, then nothing: {naks:?}");
    assert_eq!(aeth_of(&naks[0]), AethKind::Nak(NakCode::RemoteAccess));
    assert_eq!(naks[0].hdrs.bth.psn, Psn::new(101));
    assert_eq!(b.state(), QpState::Error);
    assert_eq!(statuses(&sa.completions()), [WcStatus::RemAccessErr]);
}

#[test]
fn uc_write_whose_mr_goes_away_drops_the_rest_of_the_message() {
    let (mut a, mut b, mut env) = pair(QpType::Uc);
    let mut s = Sink::default();
    a.post_send(wqe(1, WRITE, 768), &mut s).unwrap();
    a.post_send(wqe(2, WRITE, 256), &mut s).unwrap();
    a.poll_tx(100, &mut s);
    let pkts = s.sent();
    assert_eq!(pkts.len(), 4);
    let mut sb = Sink(
        vec![],
        Some(|a| match a {
            Action::PlaceMr { va, .. } if *va == 0x1000 + 256 => Some(PlaceError::Protection),
            _ => None,
        }),
    );
    let st: Vec<RxStatus> = pkts
        .iter()
        .map(|t| {
            let (_, p) = wire(t, 1);
            b.on_packet(&p, &mut env, &mut sb)
        })
        .collect();
    assert_eq!(
        st,
        [
            RxStatus::Ok,
            RxStatus::Invalid,
            RxStatus::Invalid,
            RxStatus::Ok
        ],
        "the LAST of the broken message is dropped, the next message lands"
    );
    assert_eq!(b.state(), QpState::Rts);
    assert!(sb.sent().is_empty(), "UC never answers");
}

#[test]
fn send_with_invalidate_of_a_bad_rkey_does_not_report_the_key() {
    for (rkey, ok) in [(0x55u32, true), (9, false)] {
        let (mut a, mut b, mut env) = pair(QpType::Rc);
        env.recvs = 1;
        env.bad_rkey = 9;
        let mut s = Sink::default();
        let op = SendOp::Send {
            imm: None,
            inv_rkey: Some(rkey),
        };
        a.post_send(wqe(1, op, 16), &mut s).unwrap();
        a.poll_tx(100, &mut s);
        let mut sb = Sink::default();
        let sa = round_trip(&mut a, &mut b, &mut env, &s.sent(), &mut sb);
        let rc = sb.recv_completions();
        assert_eq!(rc.len(), 1);
        // Requester: the message was delivered and ACKed either way (rdma_rxe: class J
        // completes the receive in error, then acknowledges).
        assert_eq!(statuses(&sa.completions()), [WcStatus::Success]);
        assert_eq!(aeth_of(&sb.sent()[0]), AethKind::Ack { credits: 31 });
        if ok {
            assert_eq!(rc[0].status, WcStatus::Success);
            assert_eq!(rc[0].inv_rkey, Some(0x55));
            assert_eq!(env.invalidated, [0x55]);
            assert_eq!(b.state(), QpState::Rts);
        } else {
            assert_eq!(rc[0].status, WcStatus::RemInvReqErr);
            assert_eq!(
                rc[0].inv_rkey, None,
                "no WITH_INVALIDATE for a key still open"
            );
            assert!(env.invalidated.is_empty());
            assert_eq!(b.state(), QpState::Error);
        }
    }
}

#[test]
fn read_response_that_cannot_be_placed_completes_with_loc_prot_err() {
    let (mut a, mut b, mut env) = pair(QpType::Rc);
    let mut s = Sink::default();
    a.post_send(wqe(1, READ, 600), &mut s).unwrap();
    a.post_send(wqe(2, SEND, 10), &mut s).unwrap();
    a.poll_tx(100, &mut s);
    let resp: Vec<TxPacket> = answers(&mut b, &mut env, &s.sent())
        .into_iter()
        .filter(|t| t.hdrs.bth.opcode != Opcode::RC_ACKNOWLEDGE)
        .collect();
    assert_eq!(
        resp.len(),
        3,
        "three READ responses (the SEND waits for an RNR: no recv)"
    );
    let mut sa = Sink(
        vec![],
        Some(|a| {
            matches!(a, Action::PlaceWqe { offset: 256, .. }).then_some(PlaceError::Protection)
        }),
    );
    for t in &resp {
        let (_, p) = wire(t, 4);
        a.on_packet(&p, &mut env, &mut sa);
    }
    let placed =
        sa.0.iter()
            .filter(|a| matches!(a, Action::PlaceWqe { .. }))
            .count();
    assert_eq!(placed, 1);
    let st: Vec<(u64, WcStatus)> = sa
        .completions()
        .iter()
        .map(|c| (c.id.0, c.status))
        .collect();
    assert_eq!(st, [(1, WcStatus::LocProtErr), (2, WcStatus::WrFlushErr)]);
    assert_eq!(a.state(), QpState::Error);
}

#[test]
fn atomic_result_that_cannot_be_placed_completes_with_loc_prot_err() {
    let (mut a, mut b, mut env) = pair(QpType::Rc);
    let mut s = Sink::default();
    let fetch_add = SendOp::FetchAdd {
        remote: REMOTE,
        add: 1,
    };
    a.post_send(wqe(1, fetch_add, 8), &mut s).unwrap();
    a.poll_tx(100, &mut s);
    let resp = answers(&mut b, &mut env, &s.sent()[..1]);
    let mut sa = Sink(
        vec![],
        Some(|a| matches!(a, Action::AtomicResult { .. }).then_some(PlaceError::Protection)),
    );
    let (_, p) = wire(&resp[0], 0);
    a.on_packet(&p, &mut env, &mut sa);
    assert!(!sa
        .0
        .iter()
        .any(|a| matches!(a, Action::AtomicResult { .. })));
    assert_eq!(statuses(&sa.completions()), [WcStatus::LocProtErr]);
    assert_eq!(a.state(), QpState::Error);
}

#[test]
fn gather_failure_completes_the_wqe_with_loc_prot_err_in_order() {
    for t in [QpType::Rc, QpType::Uc] {
        let mut a = qp(t, 1, 2);
        let mut s = Sink(
            vec![],
            Some(|a| match a {
                Action::Send(p) if matches!(p.payload, Payload::Wqe { id: WqeId(2), .. }) => {
                    Some(PlaceError::Protection)
                }
                _ => None,
            }),
        );
        for id in 1..=3 {
            a.post_send(wqe(id, SEND, 100), &mut s).unwrap();
        }
        a.poll_tx(100, &mut s);
        assert_eq!(s.sent().len(), 1, "{t:?}: WQE 1 went out, WQE 2 could not");
        let st: Vec<(u64, WcStatus)> = s.completions().iter().map(|c| (c.id.0, c.status)).collect();
        let first = if t == QpType::Rc {
            // Still waiting for its ACK when the QP goes to the error state.
            WcStatus::WrFlushErr
        } else {
            WcStatus::Success
        };
        assert_eq!(
            st,
            [
                (1, first),
                (2, WcStatus::LocProtErr),
                (3, WcStatus::WrFlushErr)
            ],
            "{t:?}"
        );
        assert_eq!(a.state(), QpState::Error);
    }
}

#[test]
fn read_response_whose_mr_goes_away_is_naked_remote_access() {
    let (mut a, mut b, mut env) = pair(QpType::Rc);
    let mut s = Sink::default();
    a.post_send(wqe(1, READ, 600), &mut s).unwrap();
    a.poll_tx(100, &mut s);
    let mut sb = Sink(
        vec![],
        Some(|a| match a {
            Action::Send(p) if matches!(p.payload, Payload::Mr { va, .. } if va > 0x1000) => {
                Some(PlaceError::Protection)
            }
            _ => None,
        }),
    );
    let sa = round_trip(&mut a, &mut b, &mut env, &s.sent(), &mut sb);
    let out = sb.sent();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].hdrs.bth.opcode, Opcode::RC_READ_RESPONSE_FIRST);
    assert_eq!(aeth_of(&out[1]), AethKind::Nak(NakCode::RemoteAccess));
    assert_eq!(
        out[1].hdrs.bth.psn,
        Psn::new(101),
        "the response that could not be built"
    );
    assert_eq!(b.state(), QpState::Error);
    assert_eq!(sb.events(), [QpEvent::AccessErr]);
    assert_eq!(statuses(&sa.completions()), [WcStatus::RemAccessErr]);
}

#[test]
fn ud_recv_that_cannot_be_placed_completes_with_loc_prot_err() {
    let mut b = qp(QpType::Ud, 2, 0);
    let mut env = Env {
        recvs: 1,
        ..Default::default()
    };
    let mut h = Headers::new(Bth::new(Opcode::UD_SEND_ONLY, 2, Psn::new(5)));
    h.deth = Some(Deth {
        qkey: 77,
        src_qp: 33,
    });
    let mut buf = vec![0u8; 64];
    let n = build_packet(&h, &[9; 10], &mut buf).unwrap();
    buf.truncate(n);
    let p = parse_packet(&buf).unwrap();
    let mut sb = Sink(
        vec![],
        Some(|a| matches!(a, Action::PlaceGrh).then_some(PlaceError::Protection)),
    );
    assert_eq!(b.on_packet(&p, &mut env, &mut sb), RxStatus::Invalid);
    let rc = sb.recv_completions();
    assert_eq!((rc[0].status, rc[0].src_qp), (WcStatus::LocProtErr, 33));
    assert!(sb.sent().is_empty());
    assert_eq!(b.state(), QpState::Error);
}

#[test]
fn qp_without_the_access_naks_invalid_request() {
    // READ / WRITE / FLUSH the QP does not enable: an unsupported request (rdma_rxe's
    // check_qp_attr_access), not an R_Key violation.
    for op in [Opcode::RC_READ_REQUEST, Opcode::RC_WRITE_ONLY] {
        let mut b = qp(QpType::Rc, 2, 1);
        let mut env = Env {
            qp_denied: true,
            ..Default::default()
        };
        let mut sb = Sink::default();
        let (_, p) = req(op, 100, true, 8);
        assert_eq!(b.on_packet(&p, &mut env, &mut sb), RxStatus::Invalid);
        assert_eq!(
            aeth_of(&sb.sent()[0]),
            AethKind::Nak(NakCode::InvalidRequest),
            "{op:?}"
        );
        assert_eq!(b.state(), QpState::Error);
        assert_eq!(sb.events(), [QpEvent::ReqErr], "{op:?}");
    }
}

#[test]
fn max_dest_rd_atomic_limits_the_responder() {
    // 0: READ and atomic requests are refused (rdma_rxe: TOO_MANY_RDMA_ATM_REQ).
    for op in [Opcode::RC_READ_REQUEST, Opcode::RC_FETCH_ADD] {
        let mut b = qp_with(QpType::Rc, 2, 1, |c| c.max_dest_rd_atomic = 0);
        let mut env = Env::default();
        let mut sb = Sink::default();
        let (_, p) = req(
            op,
            100,
            true,
            if op == Opcode::RC_FETCH_ADD { 0 } else { 8 },
        );
        assert_eq!(b.on_packet(&p, &mut env, &mut sb), RxStatus::Invalid);
        assert_eq!(
            aeth_of(&sb.sent()[0]),
            AethKind::Nak(NakCode::InvalidRequest),
            "{op:?} {:?}",
            sb.0
        );
    }
    // 1: a second READ while the first one's responses are still queued does not fit.
    let mut b = qp_with(QpType::Rc, 2, 1, |c| c.max_dest_rd_atomic = 1);
    let mut env = Env::default();
    let mut sb = Sink::default();
    let (_, p) = req(Opcode::RC_READ_REQUEST, 100, true, 8);
    assert_eq!(b.on_packet(&p, &mut env, &mut sb), RxStatus::Ok);
    let (_, p) = req(Opcode::RC_READ_REQUEST, 101, true, 8);
    assert_eq!(b.on_packet(&p, &mut env, &mut sb), RxStatus::Invalid);
    // Once answered, its entry is reused.
    let mut b = qp_with(QpType::Rc, 2, 1, |c| c.max_dest_rd_atomic = 1);
    for psn in 100..110 {
        let (_, p) = req(Opcode::RC_READ_REQUEST, psn, true, 8);
        assert_eq!(b.on_packet(&p, &mut env, &mut sb), RxStatus::Ok);
        b.poll_tx(100, &mut sb);
    }
    // More than the reply cache holds is refused by modify.
    let mut q = qp(QpType::Rc, 2, 1);
    let m = ModifyQp {
        max_dest_rd_atomic: Some(5),
        ..Default::default()
    };
    assert_eq!(q.modify(&m, &mut sb), Err(ModifyError::InvalidAttr));
    let m = ModifyQp {
        max_dest_rd_atomic: Some(4),
        ..Default::default()
    };
    assert_eq!(q.modify(&m, &mut sb), Ok(()));
    assert_eq!(q.config().max_dest_rd_atomic, 4);
}

/// A stale duplicate READ (its requester already has every response) makes the responder
/// replay the oldest cache entry; the next new request must still evict that entry, not
/// the younger one a live READ depends on (IBTA 9.4.4: the responder keeps the most
/// recent `max_dest_rd_atomic` requests). Sparing the replaying entry made the live
/// READ's re-request find nothing, forever (`sim_read_loss.rs`, the driver's runs).
#[test]
fn new_read_evicts_the_oldest_entry_even_while_it_replays() {
    let mut b = qp_with(QpType::Rc, 2, 1, |c| c.max_dest_rd_atomic = 2);
    let mut env = Env::default();
    let mut s = Sink::default();
    // READs at 100 (3 packets) and 103 (1 packet), both answered.
    let (_, p100) = req(Opcode::RC_READ_REQUEST, 100, true, 600);
    assert_eq!(b.on_packet(&p100, &mut env, &mut s), RxStatus::Ok);
    let (_, p103) = req(Opcode::RC_READ_REQUEST, 103, true, 8);
    assert_eq!(b.on_packet(&p103, &mut env, &mut s), RxStatus::Ok);
    b.poll_tx(100, &mut s);
    assert_eq!(s.sent().len(), 4);
    // A late duplicate of the first: replayed, its responses queued (not yet sent).
    let mut s = Sink::default();
    assert_eq!(b.on_packet(&p100, &mut env, &mut s), RxStatus::Duplicate);
    // A new READ at 104 takes the oldest entry (100) with its stale replay.
    let (_, p104) = req(Opcode::RC_READ_REQUEST, 104, true, 8);
    assert_eq!(b.on_packet(&p104, &mut env, &mut s), RxStatus::Ok);
    b.poll_tx(100, &mut s);
    let psns: Vec<u32> = s.sent().iter().map(|t| t.hdrs.bth.psn.get()).collect();
    assert_eq!(psns, [104], "the replay of 100 went with its entry");
    // The READ at 103 can still be asked for again.
    let mut s = Sink::default();
    assert_eq!(b.on_packet(&p103, &mut env, &mut s), RxStatus::Duplicate);
    b.poll_tx(100, &mut s);
    let sent = s.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].hdrs.bth.psn, Psn::new(103));
    assert_eq!(sent[0].hdrs.bth.opcode, Opcode::RC_READ_RESPONSE_ONLY);
}

#[test]
fn duplicate_read_whose_mr_went_away_is_naked_remote_access() {
    let mut b = qp(QpType::Rc, 2, 1);
    let mut env = Env::default();
    let (_, p) = req(Opcode::RC_READ_REQUEST, 100, true, 600);
    let mut s = Sink::default();
    assert_eq!(b.on_packet(&p, &mut env, &mut s), RxStatus::Ok);
    b.poll_tx(100, &mut s);
    assert_eq!(s.sent().len(), 3);
    // The responses were lost; the requester retries after the MR was deregistered.
    env.bad_rkey = 5;
    let mut s = Sink::default();
    assert_eq!(b.on_packet(&p, &mut env, &mut s), RxStatus::Invalid);
    let sent = s.sent();
    assert_eq!(sent.len(), 1, "a NAK, no READ response: {sent:?}");
    assert_eq!(aeth_of(&sent[0]), AethKind::Nak(NakCode::RemoteAccess));
    assert_eq!(sent[0].hdrs.bth.psn, Psn::new(100));
    assert_eq!(b.state(), QpState::Error);
}

/// A 4-packet READ from `a` to `b`: returns the request and `b`'s four responses, which
/// the test then delivers late, or never.
fn read_with_late_responses(a: &mut Q, b: &mut Q, env: &mut Env) -> Vec<TxPacket> {
    let resps = read_responses(a, b, env, 1);
    assert_eq!(resps.len(), 4);
    resps
}

/// The requests `a` sends after a retransmit timeout.
fn after_timeout(a: &mut Q) -> Vec<TxPacket> {
    let mut s = Sink::default();
    a.on_timer(TimerKind::Retransmit, &mut s);
    a.poll_tx(100, &mut s);
    a.poll_tx(100, &mut s);
    s.sent()
}

#[test]
fn read_timeout_probes_one_packet_and_resumes_when_responses_were_late() {
    // net-wire's ib_read_bw -q 2 under KASAN: responses queued behind other traffic for
    // longer than the timeout; re-requesting whole chunks on each timeout grew the queue
    // until RetryExcErr, with nothing lost (tests/sim_slow.rs has the whole story).
    let (mut a, mut b, mut env) = pair_with(QpType::Rc, |c| c.retry_cnt = 7);
    let late = read_with_late_responses(&mut a, &mut b, &mut env);
    let full = a.send_queue().cwnd();
    let probe = after_timeout(&mut a);
    assert_eq!(a.send_queue().cwnd(), full / 2);
    assert_eq!(probe.len(), 1, "one probe, nothing behind it");
    assert_eq!(probe[0].hdrs.bth.psn, Psn::new(100));
    assert_eq!(probe[0].hdrs.reth.map(|r| r.len), Some(256));
    // The original responses arrive: late, not lost. Nothing is requested again.
    let mut s = Sink::default();
    for r in &late {
        let (_, p) = wire(r, 7);
        assert_eq!(a.on_packet(&p, &mut env, &mut s), RxStatus::Ok);
        a.poll_tx(100, &mut s);
    }
    assert!(s.sent().is_empty(), "{:?}", s.sent());
    let c = s.completions();
    assert_eq!((c.len(), c[0].status), (1, WcStatus::Success));
    assert_eq!(
        a.send_queue().cwnd(),
        full,
        "a spurious timeout's cut is undone"
    );
    assert_eq!(a.send_queue().stats().cwnd_undos, 1);
    // The probe's own answer, after them, is a duplicate.
    let answer = answers(&mut b, &mut env, &probe[..1]);
    let (_, p) = wire(&answer[0], 7);
    assert_eq!(a.on_packet(&p, &mut env, &mut s), RxStatus::Duplicate);
}

#[test]
fn read_timeout_probe_answered_alone_requests_the_rest_again() {
    // The responses were lost: the probe's single-packet answer comes back first, and the
    // rest of the READ is requested again (go-back-N from there).
    let (mut a, mut b, mut env) = pair_with(QpType::Rc, |c| c.retry_cnt = 7);
    let _lost = read_with_late_responses(&mut a, &mut b, &mut env);
    let probe = after_timeout(&mut a);
    assert_eq!(probe.len(), 1);
    let answer = answers(&mut b, &mut env, &probe[..1]);
    assert_eq!(answer.len(), 1);
    assert_eq!(answer[0].hdrs.bth.opcode, Opcode::RC_READ_RESPONSE_ONLY);
    let mut s = Sink::default();
    let (_, p) = wire(&answer[0], 7);
    assert_eq!(a.on_packet(&p, &mut env, &mut s), RxStatus::Ok);
    a.poll_tx(100, &mut s);
    assert_eq!(a.send_queue().stats().cwnd_undos, 0, "lost: the cut stays");
    let rest = s.sent();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].hdrs.bth.psn, Psn::new(101));
    assert_eq!(rest[0].hdrs.reth.map(|r| r.len), Some(3 * 256));
    // A second timeout before any answer probes again, one packet at `una`.
    let again = after_timeout(&mut a);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].hdrs.bth.psn, Psn::new(101));
    assert_eq!(again[0].hdrs.reth.map(|r| r.len), Some(256));
}

/// The READ's original request is lost, so the responder knows it only from the timeout's
/// one-packet probe. The probe's answer cannot be placed yet (on-demand paging): the
/// requester must ask again with the probe's length; the READ's whole length is more than
/// the responder's reply-cache entry holds, and was refused (dropped) every time until
/// RETRY_EXC_ERR (sim.rs seed 7843 with the reordering window).
#[test]
fn read_probe_answer_not_placed_is_asked_again_as_a_probe() {
    let (mut a, mut b, mut env) = pair_with(QpType::Rc, |c| c.retry_cnt = 7);
    let mut s = Sink::default();
    a.post_send(wqe(1, READ, 4 * 256), &mut s).unwrap();
    a.poll_tx(100, &mut s);
    assert_eq!(s.sent().len(), 1, "the original request (lost)");
    let probe = after_timeout(&mut a);
    assert_eq!(probe[0].hdrs.reth.map(|r| r.len), Some(256));
    let ans = answers(&mut b, &mut env, &probe[..1]);
    assert_eq!(ans.len(), 1);
    // Its destination is being faulted in.
    let mut s = Sink(
        vec![],
        Some(|a| matches!(a, Action::PlaceWqe { .. }).then_some(PlaceError::NotPresent)),
    );
    let (_, p) = wire(&ans[0], 7);
    assert_eq!(a.on_packet(&p, &mut env, &mut s), RxStatus::Busy);
    a.fault_done();
    let mut s = Sink::default();
    a.poll_tx(100, &mut s);
    let again = s.sent();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].hdrs.bth.psn, Psn::new(100));
    assert_eq!(
        again[0].hdrs.reth.map(|r| r.len),
        Some(256),
        "the probe's length"
    );
    let ans = answers(&mut b, &mut env, &again[..1]);
    assert_eq!(ans.len(), 1, "the responder replays it");
    let mut s = Sink::default();
    let (_, p) = wire(&ans[0], 7);
    assert_eq!(a.on_packet(&p, &mut env, &mut s), RxStatus::Ok);
    a.poll_tx(100, &mut s);
    let rest = s.sent();
    assert_eq!(rest[0].hdrs.bth.psn, Psn::new(101));
    assert_eq!(answers(&mut b, &mut env, &rest[..1]).len(), 3);
}

/// A 4-packet READ (MTU 256, timeout 14) from `a`: its request, answered by `b`; the
/// responses are returned for the test to deliver in its own order.
fn read_responses(a: &mut Q, b: &mut Q, env: &mut Env, id: u64) -> Vec<TxPacket> {
    let mut s = Sink::default();
    a.post_send(wqe(id, READ, 4 * 256), &mut s).unwrap();
    a.poll_tx(100, &mut s);
    answers(b, env, &s.sent())
}

/// Reordering: a READ response that overtakes earlier ones is placed at once and not asked
/// for again; the gap before it is a loss only after the reordering window (an eighth of
/// the Local ACK Timeout before any round-trip sample: 8388 us for timeout 14), when a
/// later response comes, or when the timer armed for the window's end fires, which costs
/// no retry. Before, every overtaking response rewound to `una` at once.
#[test]
fn read_response_overtaking_is_kept_and_the_gap_waits_for_the_reordering_window() {
    let (mut a, mut b, mut env) = pair_with(QpType::Rc, |c| c.retry_cnt = 7);
    let deliver = |a: &mut Q, env: &mut Env, r: &TxPacket, t: u64, s: &mut Sink| {
        support::set_clock(Some(t));
        let (_, p) = wire(r, r.hdrs.bth.psn.get() as u8);
        let st = a.on_packet(&p, env, s);
        a.poll_tx(100, s);
        st
    };
    // 1. Only reordered: 1 and 3 overtake 0 and 2.
    let r = read_responses(&mut a, &mut b, &mut env, 1);
    assert_eq!(r.len(), 4);
    let mut s = Sink::default();
    assert_eq!(
        deliver(&mut a, &mut env, &r[1], 1_000, &mut s),
        RxStatus::OutOfSequence
    );
    assert_eq!(
        deliver(&mut a, &mut env, &r[3], 1_010, &mut s),
        RxStatus::OutOfSequence
    );
    assert!(s.0.contains(&Action::ArmTimer {
        kind: TimerKind::Retransmit,
        usecs: 67_108 / 8
    }));
    assert_eq!(
        deliver(&mut a, &mut env, &r[0], 1_500, &mut s),
        RxStatus::Ok
    );
    assert_eq!(
        deliver(&mut a, &mut env, &r[2], 1_600, &mut s),
        RxStatus::Ok
    );
    assert!(s.sent().is_empty(), "nothing asked again: {:?}", s.sent());
    let offsets: Vec<u32> = s.pick(|x| match x {
        Action::PlaceWqe { offset, .. } => Some(*offset),
        _ => None,
    });
    assert_eq!(offsets, [256, 768, 0, 512]);
    let c = s.completions();
    assert_eq!(
        (c.len(), c[0].status, c[0].byte_len),
        (1, WcStatus::Success, 1024)
    );
    assert_eq!(a.send_queue().una(), Psn::new(104));
    // 2. Response 0 lost: the gap is a loss once a later response comes after the window.
    let r = read_responses(&mut a, &mut b, &mut env, 2);
    let mut s = Sink::default();
    let t0 = 100_000;
    deliver(&mut a, &mut env, &r[1], t0, &mut s);
    assert!(s.sent().is_empty(), "within the window");
    deliver(&mut a, &mut env, &r[2], t0 + 8_389, &mut s);
    let again = s.sent();
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].hdrs.bth.psn, Psn::new(104));
    // 3. Response 0 lost, nothing after the gap's first sign: the timer ends the window.
    let (mut a, mut b, _) = pair_with(QpType::Rc, |c| c.retry_cnt = 7);
    let r = read_responses(&mut a, &mut b, &mut env, 3);
    let mut s = Sink::default();
    deliver(&mut a, &mut env, &r[3], 200_000, &mut s);
    assert!(s.sent().is_empty());
    support::set_clock(Some(208_400));
    a.on_timer(TimerKind::Retransmit, &mut s);
    a.poll_tx(100, &mut s);
    let again = s.sent();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].hdrs.bth.psn, Psn::new(100));
    assert_eq!(again[0].hdrs.reth.map(|r| r.len), Some(4 * 256));
    assert_eq!(a.send_queue().stats().timeouts, 0, "no retry consumed");
    support::set_clock(None);
}

/// A copy of a READ response placed ahead arrives after `una` has passed it (through the
/// WRITE between the two READs, implicitly acknowledged): a duplicate, not a gap, and no
/// reordering window starts (it armed a short timer that resent the WRITE after it).
#[test]
fn copy_of_a_response_placed_ahead_is_a_duplicate() {
    let (mut a, mut b, mut env) = pair_with(QpType::Rc, |c| c.retry_cnt = 7);
    let mut s = Sink::default();
    a.post_send(wqe(1, READ, 1024), &mut s).unwrap();
    a.post_send(wqe(2, WRITE, 256), &mut s).unwrap();
    a.post_send(wqe(3, READ, 1024), &mut s).unwrap();
    a.post_send(wqe(4, WRITE, 256), &mut s).unwrap();
    support::set_clock(Some(0));
    a.poll_tx(100, &mut s);
    let r = answers(&mut b, &mut env, &s.sent());
    let at = |psn: u32| *r.iter().find(|p| p.hdrs.bth.psn.get() == psn).unwrap();
    let deliver = |a: &mut Q, env: &mut Env, t: &TxPacket, s: &mut Sink| {
        let (_, p) = wire(t, 3);
        a.on_packet(&p, env, s)
    };
    let mut s = Sink::default();
    support::set_clock(Some(1_000));
    for psn in (105..=108).chain(100..=103) {
        deliver(&mut a, &mut env, &at(psn), &mut s);
    }
    assert_eq!(a.send_queue().una(), Psn::new(104));
    let mut s = Sink::default();
    support::set_clock(Some(1_200));
    assert_eq!(
        deliver(&mut a, &mut env, &at(106), &mut s),
        RxStatus::Duplicate
    );
    let ids: Vec<u64> = s.completions().iter().map(|c| c.id.0).collect();
    assert_eq!(ids, [2, 3], "the WRITE and the READ placed ahead complete");
    assert!(
        !s.0.contains(&Action::ArmTimer {
            kind: TimerKind::Retransmit,
            usecs: 67_108 / 8
        }),
        "no reordering window: {:?}",
        s.0
    );
    support::set_clock(None);
}

/// The driver handles a timer's firing at its next run, after packets that may have armed
/// it again: a firing before the armed deadline waits for it (re-armed for the rest), so
/// the end of a reordering window handled after progress re-armed the retransmit timeout
/// costs no retry (it did: a timeout, a backoff and a window cut).
#[test]
fn a_stale_timer_firing_waits_for_the_armed_deadline() {
    let (mut a, mut b, mut env) = pair_with(QpType::Rc, |c| c.retry_cnt = 7);
    let r = read_responses(&mut a, &mut b, &mut env, 1);
    let mut s = Sink::default();
    support::set_clock(Some(1_000));
    let (_, p) = wire(&r[1], 1);
    assert_eq!(a.on_packet(&p, &mut env, &mut s), RxStatus::OutOfSequence);
    // The gap fills before the window's end; the timer is a retransmit timeout again.
    support::set_clock(Some(1_100));
    let (_, p) = wire(&r[0], 0);
    assert_eq!(a.on_packet(&p, &mut env, &mut s), RxStatus::Ok);
    // The window's firing, handled late.
    let mut s = Sink::default();
    support::set_clock(Some(1_000 + 67_108 / 8));
    a.on_timer(TimerKind::Retransmit, &mut s);
    a.poll_tx(100, &mut s);
    assert!(s.sent().is_empty(), "{:?}", s.sent());
    assert_eq!(a.send_queue().stats().timeouts, 0);
    assert_eq!(
        s.0,
        [Action::ArmTimer {
            kind: TimerKind::Retransmit,
            usecs: 1_100 + 67_108 - (1_000 + 67_108 / 8)
        }]
    );
    // At the deadline, a timeout.
    let mut s = Sink::default();
    support::set_clock(Some(1_100 + 67_108));
    a.on_timer(TimerKind::Retransmit, &mut s);
    a.poll_tx(100, &mut s);
    assert_eq!(a.send_queue().stats().timeouts, 1);
    assert_eq!(s.sent().len(), 1, "the probe");
    support::set_clock(None);
}

/// On-demand paging, responder: a WRITE, READ or atomic whose memory is not present is
/// answered RNR NAK at its PSN with nothing executed and no state changed; the same
/// request once the pages are in is executed as new.
#[test]
fn odp_not_present_request_is_rnr_naked() {
    for op in [
        Opcode::RC_WRITE_ONLY,
        Opcode::RC_READ_REQUEST,
        Opcode::RC_FETCH_ADD,
    ] {
        let mut b = qp(QpType::Rc, 2, 1);
        let mut env = Env {
            absent_rkey: 5,
            ..Default::default()
        };
        let len = if op == Opcode::RC_FETCH_ADD { 0 } else { 8 };
        let (_, p) = req(op, 100, true, len);
        let mut s = Sink::default();
        assert_eq!(
            b.on_packet(&p, &mut env, &mut s),
            RxStatus::NoRecv,
            "{op:?}"
        );
        let sent = s.sent();
        assert_eq!(sent.len(), 1, "{op:?}: one NAK");
        assert_eq!(aeth_of(&sent[0]), AethKind::RnrNak { timer: 5 }, "{op:?}");
        assert_eq!(sent[0].hdrs.bth.psn, Psn::new(100));
        assert!(!s.0.iter().any(|a| matches!(a, Action::PlaceMr { .. })));
        assert_eq!(env.atomics, 0, "{op:?}: the atomic was not executed");
        assert_eq!(
            b.responder().epsn(),
            Psn::new(100),
            "{op:?}: epsn unchanged"
        );
        assert_eq!(b.state(), QpState::Rts, "{op:?}");
        let mut s = Sink::default();
        b.poll_tx(16, &mut s);
        assert!(s.sent().is_empty(), "{op:?}: no response queued");

        env.absent_rkey = 0;
        let mut s = Sink::default();
        assert_eq!(b.on_packet(&p, &mut env, &mut s), RxStatus::Ok, "{op:?}");
        b.poll_tx(16, &mut s);
        let sent = s.sent();
        assert_eq!(sent.len(), 1, "{op:?}: the response");
        assert_eq!(aeth_of(&sent[0]), AethKind::Ack { credits: 31 }, "{op:?}");
        assert_eq!(b.responder().epsn(), Psn::new(101), "{op:?}");
    }
}

/// On-demand paging, responder: a placement that finds its memory gone after the check
/// (pages invalidated mid-message) is never acknowledged: RNR NAK at that packet, the
/// message stays where it was, and the resent packet continues it.
#[test]
fn odp_placement_not_present_mid_write() {
    let mut b = qp(QpType::Rc, 2, 1);
    let mut env = Env::default();
    let (_, mut first) = req(Opcode::RC_WRITE_FIRST, 100, false, 256);
    first.hdrs.reth.as_mut().unwrap().len = 768;
    let (_, middle) = req(Opcode::RC_WRITE_MIDDLE, 101, false, 256);
    let mut s = Sink::default();
    assert_eq!(b.on_packet(&first, &mut env, &mut s), RxStatus::Ok);
    // The FIRST carried the RETH (768 bytes: three packets).
    let mut s = Sink(
        vec![],
        Some(|a| matches!(a, Action::PlaceMr { .. }).then_some(PlaceError::NotPresent)),
    );
    assert_eq!(b.on_packet(&middle, &mut env, &mut s), RxStatus::NoRecv);
    let sent = s.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(aeth_of(&sent[0]), AethKind::RnrNak { timer: 5 });
    assert_eq!(sent[0].hdrs.bth.psn, Psn::new(101));
    assert_eq!(b.responder().epsn(), Psn::new(101));
    assert_eq!(b.state(), QpState::Rts);
    let (_, last) = req(Opcode::RC_WRITE_LAST, 102, true, 256);
    let mut s = Sink::default();
    assert_eq!(b.on_packet(&middle, &mut env, &mut s), RxStatus::Ok);
    assert_eq!(b.on_packet(&last, &mut env, &mut s), RxStatus::Ok);
    let placed = s.pick(|a| match a {
        Action::PlaceMr { va, .. } => Some(*va),
        _ => None,
    });
    assert_eq!(placed, vec![0x1000 + 256, 0x1000 + 512]);
    let sent = s.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].hdrs.bth.psn, Psn::new(102));
    assert_eq!(aeth_of(&sent[0]), AethKind::Ack { credits: 31 });
}

/// On-demand paging, responder: a SEND whose receive buffer is not present is RNR NAKed
/// (RC; no completion, the WQE kept) or dropped (UC; the QP stays usable).
#[test]
fn odp_recv_buffer_not_present() {
    let absent: fn(&Action) -> Option<PlaceError> =
        |a| matches!(a, Action::PlaceRecv { .. }).then_some(PlaceError::NotPresent);
    for t in [QpType::Rc, QpType::Uc] {
        let mut b = qp(t, 2, 1);
        let mut env = Env {
            recvs: 1,
            ..Default::default()
        };
        let op = if t == QpType::Rc {
            Opcode::RC_SEND_ONLY
        } else {
            Opcode::UC_SEND_ONLY
        };
        let (_, p) = req(op, 100, true, 8);
        let mut s = Sink(vec![], Some(absent));
        assert_eq!(b.on_packet(&p, &mut env, &mut s), RxStatus::NoRecv, "{t:?}");
        assert!(s.recv_completions().is_empty(), "{t:?}");
        assert_eq!(b.state(), QpState::Rts, "{t:?}");
        let naks = s.sent();
        if t == QpType::Rc {
            assert_eq!(naks.len(), 1);
            assert_eq!(aeth_of(&naks[0]), AethKind::RnrNak { timer: 5 });
        } else {
            assert!(naks.is_empty());
        }
        let (_, p) = req(op, if t == QpType::Rc { 100 } else { 101 }, true, 8);
        let mut s = Sink::default();
        assert_eq!(b.on_packet(&p, &mut env, &mut s), RxStatus::Ok, "{t:?}");
        let c = s.recv_completions();
        assert_eq!(c.len(), 1, "{t:?}");
        assert_eq!((c[0].status, c[0].byte_len), (WcStatus::Success, 8));
    }
}

/// On-demand paging, requester: a gather list whose pages are not present holds the
/// packet back with no completion and nothing changed; the next poll sends it.
#[test]
fn odp_gather_not_present_waits() {
    let mut a = qp(QpType::Rc, 1, 2);
    let mut s = Sink(
        vec![],
        Some(|a| matches!(a, Action::Send(_)).then_some(PlaceError::NotPresent)),
    );
    a.post_send(wqe(3, SEND, 10), &mut s).unwrap();
    assert!(!a.poll_tx(16, &mut s));
    assert!(s.completions().is_empty());
    assert_eq!(a.state(), QpState::Rts);
    let mut s = Sink::default();
    a.poll_tx(16, &mut s);
    let sent = s.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].hdrs.bth.psn,
        Psn::new(100),
        "the PSN was not used up"
    );
    assert!(s.completions().is_empty());
}

/// On-demand paging, requester: a READ response whose destination is not present is
/// dropped (counted) without completing or failing the WQE; the READ is asked for again
/// once the driver says the fault is done (not before), and completes.
#[test]
fn odp_read_response_not_present_dropped() {
    let (mut a, mut b, mut env) = pair(QpType::Rc);
    let mut s = Sink::default();
    a.post_send(wqe(4, READ, 8), &mut s).unwrap();
    a.poll_tx(16, &mut s);
    let request = s.sent()[0];
    let (_, p) = wire(&request, 0);
    let mut sb = Sink::default();
    assert_eq!(b.on_packet(&p, &mut env, &mut sb), RxStatus::Ok);
    b.poll_tx(16, &mut sb);
    let resp = sb.sent()[0];
    let (_, rp) = wire(&resp, 7);
    let mut sa = Sink(
        vec![],
        Some(|a| matches!(a, Action::PlaceWqe { .. }).then_some(PlaceError::NotPresent)),
    );
    a.on_packet(&rp, &mut env, &mut sa);
    assert!(sa.completions().is_empty());
    assert_eq!(a.state(), QpState::Rts);
    assert_eq!(a.send_queue().stats().unplaced, 1);
    // Nothing is asked for while the fault is taken...
    let mut sa = Sink::default();
    assert!(!a.poll_tx(16, &mut sa));
    assert!(sa.sent().is_empty());
    // ...then the READ goes again at once; the duplicate is answered from the cache.
    a.fault_done();
    a.poll_tx(16, &mut sa);
    let again = sa.sent();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].hdrs.bth.psn, Psn::new(100));
    let (_, p) = wire(&again[0], 0);
    let mut sb = Sink::default();
    b.on_packet(&p, &mut env, &mut sb);
    b.poll_tx(16, &mut sb);
    let (_, rp) = wire(&sb.sent()[0], 7);
    let mut sa = Sink::default();
    a.on_packet(&rp, &mut env, &mut sa);
    let c = sa.completions();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, WcStatus::Success);
}

/// A connected QP `qpn` (to `dest`) of type `t` moved up to `to` (INIT, RTR, RTS), its
/// actions recorded in `s`.
fn qp_at(t: QpType, qpn: u32, dest: u32, to: QpState, s: &mut Sink) -> Q {
    let mut q = Q::new(QpConfig {
        qpn,
        qp_type: t,
        dest_qpn: dest,
        qkey: 77,
        mtu: Mtu::M256,
        sq_psn: Psn::new(100),
        rq_psn: Psn::new(100),
        ..QpConfig::default()
    });
    for st in [QpState::Init, QpState::Rtr, QpState::Rts] {
        q.modify(
            &ModifyQp {
                state: Some(st),
                ..Default::default()
            },
            s,
        )
        .unwrap();
        if st == to {
            break;
        }
    }
    q
}

fn to_state(q: &mut Q, st: QpState, notify: Option<bool>, s: &mut Sink) -> Result<(), ModifyError> {
    q.modify(
        &ModifyQp {
            state: Some(st),
            sqd_notify: notify,
            ..Default::default()
        },
        s,
    )
}

/// Communication Established: a connected QP in RTR reports the first request it takes,
/// once (an RNR NAK counts: the request arrived in sequence), again only after a reset;
/// never in RTS, never for UD, never for a request it drops.
#[test]
fn comm_est_for_the_first_request_taken_in_rtr() {
    for (t, op) in [
        (QpType::Rc, Opcode::RC_SEND_ONLY),
        (QpType::Uc, Opcode::UC_SEND_ONLY),
    ] {
        let mut s = Sink::default();
        let mut b = qp_at(t, 2, 1, QpState::Rtr, &mut s);
        let mut env = Env {
            recvs: 4,
            ..Default::default()
        };
        let mut sb = Sink::default();
        if t == QpType::Rc {
            // Out of sequence: NAKed, not taken.
            let (_, early) = req(op, 105, true, 4);
            b.on_packet(&early, &mut env, &mut sb);
            assert!(sb.events().is_empty(), "out of sequence: {:?}", sb.0);
        }
        for psn in [100, 101] {
            let (_, p) = req(op, psn, true, 4);
            assert_eq!(b.on_packet(&p, &mut env, &mut sb), RxStatus::Ok, "{t:?}");
        }
        assert_eq!(sb.events(), [QpEvent::CommEst], "{t:?}: once");
        // Reset and up to RTR again: a new connection reports it again.
        let mut s = Sink::default();
        to_state(&mut b, QpState::Reset, None, &mut s).unwrap();
        let mut b2 = b;
        for st in [QpState::Init, QpState::Rtr] {
            to_state(&mut b2, st, None, &mut s).unwrap();
        }
        let mut sb = Sink::default();
        let (_, p) = req(op, 100, true, 4);
        b2.on_packet(&p, &mut env, &mut sb);
        assert_eq!(sb.events(), [QpEvent::CommEst], "{t:?}: after a reset");
        // In RTS: none.
        let mut s = Sink::default();
        let mut r = qp_at(t, 2, 1, QpState::Rts, &mut s);
        let mut sb = Sink::default();
        r.on_packet(&p, &mut env, &mut sb);
        assert!(sb.events().is_empty(), "{t:?} in RTS");
    }
    // RC: a SEND without a receive WQE (RNR NAK) is the first request too.
    let mut s = Sink::default();
    let mut b = qp_at(QpType::Rc, 2, 1, QpState::Rtr, &mut s);
    let mut sb = Sink::default();
    let (_, p) = req(Opcode::RC_SEND_ONLY, 100, true, 4);
    assert_eq!(
        b.on_packet(&p, &mut Env::default(), &mut sb),
        RxStatus::NoRecv
    );
    assert_eq!(sb.events(), [QpEvent::CommEst]);
    // UD: none.
    let mut s = Sink::default();
    let mut u = qp_at(QpType::Ud, 2, 0, QpState::Rtr, &mut s);
    let mut h = Headers::new(Bth::new(Opcode::UD_SEND_ONLY, 2, Psn::new(5)));
    h.deth = Some(Deth {
        qkey: 77,
        src_qp: 33,
    });
    let mut buf = vec![0u8; 64];
    let n = build_packet(&h, &[9; 10], &mut buf).unwrap();
    buf.truncate(n);
    let p = parse_packet(&buf).unwrap();
    let mut sb = Sink::default();
    let mut env = Env {
        recvs: 1,
        ..Default::default()
    };
    assert_eq!(u.on_packet(&p, &mut env, &mut sb), RxStatus::Ok);
    assert!(sb.events().is_empty(), "UD");
}

/// An opcode out of sequence (a MIDDLE with no message in progress) is an invalid request
/// no receive WQE reports: Invalid Request Local Work Queue Error.
#[test]
fn an_invalid_request_raises_req_err() {
    let mut b = qp(QpType::Rc, 2, 1);
    let mut env = Env {
        recvs: 1,
        ..Default::default()
    };
    let mut sb = Sink::default();
    let (_, p) = req(Opcode::RC_SEND_MIDDLE, 100, true, 256);
    assert_eq!(b.on_packet(&p, &mut env, &mut sb), RxStatus::Invalid);
    assert_eq!(
        aeth_of(&sb.sent()[0]),
        AethKind::Nak(NakCode::InvalidRequest)
    );
    assert_eq!(sb.events(), [QpEvent::ReqErr]);
    assert!(sb.recv_completions().is_empty());
    // Nothing more once in the error state.
    let mut sb = Sink::default();
    b.on_packet(&p, &mut env, &mut sb);
    assert!(sb.events().is_empty());
}

/// SQD: the messages started finish (their ACKs complete them), a WQE posted after the move
/// waits, SQ Drained follows the last completion when asked for, leaving SQD is refused
/// until then, and back in RTS the held WQE goes out with the next PSN.
#[test]
fn sqd_finishes_what_started_then_reports_drained() {
    let (mut a, mut b, mut env) = pair(QpType::Rc);
    let mut s = Sink::default();
    a.post_send(wqe(1, WRITE, 300), &mut s).unwrap();
    a.poll_tx(100, &mut s);
    let first = s.sent();
    assert_eq!(first.len(), 2);
    let mut s = Sink::default();
    to_state(&mut a, QpState::Sqd, Some(true), &mut s).unwrap();
    assert_eq!(a.state(), QpState::Sqd);
    assert!(a.send_queue().is_draining());
    assert!(s.events().is_empty(), "a WRITE is still unacknowledged");
    a.post_send(wqe(2, WRITE, 16), &mut s).unwrap();
    assert!(!a.poll_tx(100, &mut s), "nothing to send, nothing pending");
    assert!(s.sent().is_empty(), "the WQE posted in SQD waits");
    assert_eq!(
        to_state(&mut a, QpState::Rts, None, &mut s),
        Err(ModifyError::InvalidTransition),
        "still draining"
    );
    assert_eq!(
        to_state(&mut a, QpState::Sqd, None, &mut s),
        Err(ModifyError::InvalidTransition),
        "still draining"
    );
    // The ACK: the WRITE completes, then the queue is drained.
    let mut sa = Sink::default();
    for reply in answers(&mut b, &mut env, &first) {
        let (_, rp) = wire(&reply, 0);
        a.on_packet(&rp, &mut env, &mut sa);
    }
    a.poll_tx(100, &mut sa);
    assert_eq!(statuses(&sa.completions()), [WcStatus::Success]);
    assert_eq!(sa.events(), [QpEvent::SqDrained]);
    assert!(
        sa.0.iter()
            .position(|x| matches!(x, Action::SendComplete(_)))
            < sa.0.iter().position(|x| matches!(x, Action::Event(_))),
        "the event follows the last completion"
    );
    assert!(sa.sent().is_empty(), "the second WRITE still waits");
    assert!(!a.send_queue().is_draining());
    // Back to RTS: the held WRITE goes, with the PSN after the first one's.
    let mut s = Sink::default();
    to_state(&mut a, QpState::Rts, None, &mut s).unwrap();
    a.poll_tx(100, &mut s);
    let sent = s.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].hdrs.bth.psn, Psn::new(102));
    assert!(s.events().is_empty());
}

/// SQD with nothing started: drained at once (SQ Drained in the modify's actions when asked
/// for, none otherwise); the receive side still runs in SQD.
#[test]
fn sqd_with_nothing_started_is_drained_at_once() {
    for notify in [Some(true), Some(false), None] {
        let mut s = Sink::default();
        let mut q = qp_at(QpType::Rc, 2, 1, QpState::Rts, &mut s);
        let mut s = Sink::default();
        to_state(&mut q, QpState::Sqd, notify, &mut s).unwrap();
        let want: &[QpEvent] = if notify == Some(true) {
            &[QpEvent::SqDrained]
        } else {
            &[]
        };
        assert_eq!(s.events(), want, "{notify:?}");
        assert!(!q.send_queue().is_draining());
        let mut env = Env {
            recvs: 1,
            ..Default::default()
        };
        let mut sb = Sink::default();
        let (_, p) = req(Opcode::RC_SEND_ONLY, 100, true, 4);
        assert_eq!(q.on_packet(&p, &mut env, &mut sb), RxStatus::Ok);
        assert_eq!(sb.recv_completions().len(), 1);
        assert!(sb.events().is_empty());
    }
}

/// SQD's drain ends unreported when the QP goes to the error state first.
#[test]
fn sqd_drain_cut_short_by_the_error_state() {
    let (mut a, _b, _env) = pair(QpType::Rc);
    let mut s = Sink::default();
    a.post_send(wqe(1, WRITE, 300), &mut s).unwrap();
    a.poll_tx(100, &mut s);
    to_state(&mut a, QpState::Sqd, Some(true), &mut s).unwrap();
    assert!(a.send_queue().is_draining());
    let mut s = Sink::default();
    to_state(&mut a, QpState::Error, None, &mut s).unwrap();
    assert!(!a.send_queue().is_draining());
    assert_eq!(statuses(&s.completions()), [WcStatus::WrFlushErr]);
    assert!(s.events().is_empty());
}

/// Fault injection's NAK: the responder answers a WRITE with the chosen NAK at its PSN,
/// executes nothing and keeps its state (the retransmitted WRITE is then taken as new); the
/// requester completes with the error the NAK stands for. A UC QP, or a response, gets no
/// answer.
#[test]
fn answer_nak_refuses_a_request_without_changing_the_responder() {
    use rrxe_proto::fault::NakKind;
    let (mut a, mut b, mut env, sent) = rc_write(8, 1, 1);
    let (_, p) = wire(&sent[0], 7);
    let mut sb = Sink::default();
    assert!(b.answer_nak(&p, NakKind::RemoteAccess.syndrome(), &mut sb));
    let nak = sb.sent();
    assert_eq!(nak.len(), 1);
    assert_eq!(nak[0].hdrs.bth.opcode, Opcode::RC_ACKNOWLEDGE);
    assert_eq!(nak[0].hdrs.bth.psn, p.hdrs.bth.psn);
    assert_eq!(nak[0].hdrs.aeth.map(|a| a.syndrome), Some(0x62));
    assert!(sb
        .pick(|x| matches!(x, Action::PlaceMr { .. }).then_some(()))
        .is_empty());
    assert_eq!(b.state(), QpState::Rts);
    // The same WRITE, taken normally afterwards, is new to the responder: placed, ACKed.
    let mut sb = Sink::default();
    assert_eq!(b.on_packet(&p, &mut env, &mut sb), RxStatus::Ok);
    assert!(!sb
        .pick(|x| matches!(x, Action::PlaceMr { .. }).then_some(()))
        .is_empty());
    // The requester that gets the NAK completes with a remote access error.
    let mut sa = Sink::default();
    let (_, np) = wire(&nak[0], 0);
    a.on_packet(&np, &mut env, &mut sa);
    assert_eq!(statuses(&sa.completions()), [WcStatus::RemAccessErr]);
    // Nothing to answer: a UC request, or a response.
    let (mut ua, mut ub, _) = pair(QpType::Uc);
    let mut s = Sink::default();
    ua.post_send(wqe(1, WRITE, 16), &mut s).unwrap();
    ua.poll_tx(10, &mut s);
    let uc = s.sent();
    let (_, up) = wire(&uc[0], 0);
    assert!(!ub.answer_nak(&up, NakKind::PsnSeq.syndrome(), &mut Sink::default()));
    assert!(!a.answer_nak(&np, NakKind::PsnSeq.syndrome(), &mut Sink::default()));
}
