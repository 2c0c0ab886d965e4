// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! XRC: an initiator QP's requests carry the XRC opcodes and the XRCETH of each WQE, a
//! target QP answers as RC does from the SRQ the XRCETH names, and refuses SRQs outside
//! its XRC domain with an invalid-request NAK.

use rrxe_proto::opcode::Transport;
use rrxe_proto::*;

mod support;
use support::{to_rts, wqe, Env, Sink};

type Q = Qp<16, 4>;

fn qp(t: QpType, qpn: u32, dest: u32) -> Q {
    let cfg = QpConfig {
        qpn,
        qp_type: t,
        dest_qpn: dest,
        mtu: Mtu::M256,
        sq_psn: Psn::new(100),
        rq_psn: Psn::new(100),
        retry_cnt: 1,
        rnr_retry: 1,
        ..QpConfig::default()
    };
    let mut q = Q::new(cfg);
    to_rts(&mut q, &mut Sink::default()).unwrap();
    q
}

fn wire(p: &TxPacket) -> Packet {
    let len = p.payload.len() as usize;
    let mut b = vec![0u8; 64 + len];
    let n = build_packet(&p.hdrs, &vec![0x5a; len], &mut b).unwrap();
    b.truncate(n);
    parse_packet(&b).unwrap()
}

/// Posts `w` on the initiator `ini` and carries packets both ways until nothing moves:
/// the initiator's completions, the target's receive completions, every request and
/// every response.
fn run(
    ini: &mut Q,
    tgt: &mut Q,
    env: &mut Env,
    w: SendWqe,
) -> (
    Vec<SendCompletion>,
    Vec<RecvCompletion>,
    Vec<TxPacket>,
    Vec<TxPacket>,
) {
    let mut s = Sink::default();
    ini.post_send(w, &mut s).unwrap();
    ini.poll_tx(100, &mut s);
    let (mut done, mut recvs, mut reqs, mut resps) = (vec![], vec![], vec![], vec![]);
    let mut pending = s.sent();
    for _ in 0..50 {
        if pending.is_empty() {
            break;
        }
        let mut st = Sink::default();
        for r in pending.drain(..) {
            tgt.on_packet(&wire(&r), env, &mut st);
            reqs.push(r);
        }
        tgt.poll_tx(100, &mut st);
        recvs.extend(st.recv_completions());
        for reply in st.sent() {
            let mut si = Sink::default();
            ini.on_packet(&wire(&reply), env, &mut si);
            ini.poll_tx(100, &mut si);
            pending.extend(si.sent());
            done.extend(si.completions());
            resps.push(reply);
        }
    }
    (done, recvs, reqs, resps)
}

fn xrc_wqe(id: u64, op: SendOp, len: u32, srqn: u32) -> SendWqe {
    let mut w = wqe(id, op, len);
    w.xrc_srqn = srqn;
    w
}

const SEND: SendOp = SendOp::Send {
    imm: None,
    inv_rkey: None,
};

#[test]
fn send_names_the_srq_in_every_request() {
    let (mut ini, mut tgt) = (qp(QpType::XrcIni, 1, 2), qp(QpType::XrcTgt, 2, 1));
    let mut env = Env {
        recvs: 1,
        xrc_srqs: vec![0x42],
        ..Env::default()
    };
    // Three packets at MTU 256; the SRQ number is masked to 24 bits.
    let w = xrc_wqe(7, SEND, 600, 0x0100_0042);
    let (done, recvs, reqs, resps) = run(&mut ini, &mut tgt, &mut env, w);
    let ops: Vec<u8> = reqs.iter().map(|p| p.hdrs.bth.opcode.0).collect();
    assert_eq!(ops, [0xa0, 0xa1, 0xa2]);
    assert!(reqs.iter().all(|p| p.hdrs.xrceth == Some(0x42)));
    assert_eq!(env.selected, [0x42; 3]);
    assert!(!resps.is_empty());
    for r in &resps {
        assert_eq!(r.hdrs.bth.opcode, Opcode::XRC_ACKNOWLEDGE);
        assert_eq!(r.hdrs.xrceth, None);
    }
    assert_eq!(recvs.len(), 1);
    assert_eq!(
        (recvs[0].status, recvs[0].byte_len),
        (WcStatus::Success, 600)
    );
    assert_eq!(done.len(), 1);
    assert_eq!((done[0].id, done[0].status), (WqeId(7), WcStatus::Success));
}

#[test]
fn read_and_atomic_answered_with_xrc_responses() {
    let (mut ini, mut tgt) = (qp(QpType::XrcIni, 1, 2), qp(QpType::XrcTgt, 2, 1));
    let mut env = Env {
        xrc_srqs: vec![9],
        ..Env::default()
    };
    let remote = RemoteAddr {
        va: 0x1000,
        rkey: 5,
    };
    let (done, _, reqs, resps) = run(
        &mut ini,
        &mut tgt,
        &mut env,
        xrc_wqe(1, SendOp::Read { remote }, 300, 9),
    );
    assert_eq!(reqs[0].hdrs.bth.opcode, Opcode::XRC_READ_REQUEST);
    let ops: Vec<u8> = resps.iter().map(|p| p.hdrs.bth.opcode.0).collect();
    assert_eq!(ops, [0xad, 0xaf]); // XRC READ RESPONSE FIRST, LAST
    assert_eq!(done[0].status, WcStatus::Success);
    assert_eq!(done[0].byte_len, 300);
    let fa = SendOp::FetchAdd { remote, add: 1 };
    let (done, _, reqs, resps) = run(&mut ini, &mut tgt, &mut env, xrc_wqe(2, fa, 8, 9));
    assert_eq!(reqs[0].hdrs.bth.opcode.0, 0xb4);
    assert_eq!(resps[0].hdrs.bth.opcode.0, 0xb2);
    assert_eq!(done[0].status, WcStatus::Success);
}

#[test]
fn srq_of_another_domain_is_an_invalid_request() {
    let (mut ini, mut tgt) = (qp(QpType::XrcIni, 1, 2), qp(QpType::XrcTgt, 2, 1));
    let mut env = Env {
        recvs: 1,
        xrc_srqs: vec![0x42],
        ..Env::default()
    };
    let (done, recvs, _, resps) = run(&mut ini, &mut tgt, &mut env, xrc_wqe(3, SEND, 8, 0x43));
    assert_eq!(env.selected, [0x43]);
    assert!(recvs.is_empty());
    assert_eq!(resps.len(), 1);
    assert_eq!(resps[0].hdrs.bth.opcode, Opcode::XRC_ACKNOWLEDGE);
    assert_eq!(
        resps[0].hdrs.aeth.unwrap().kind(),
        AethKind::Nak(NakCode::InvalidRequest)
    );
    assert_eq!(done[0].status, WcStatus::RemInvReqErr);
    assert_eq!(tgt.state(), QpState::Error);
    assert_eq!(ini.state(), QpState::Error);
}

#[test]
fn each_half_takes_only_its_direction() {
    let (mut ini, mut tgt) = (qp(QpType::XrcIni, 1, 2), qp(QpType::XrcTgt, 2, 1));
    let mut rc = qp(QpType::Rc, 2, 1);
    let mut env = Env {
        recvs: 1,
        xrc_srqs: vec![1],
        ..Env::default()
    };
    let mut s = Sink::default();
    ini.post_send(xrc_wqe(1, SEND, 8, 1), &mut s).unwrap();
    ini.poll_tx(10, &mut s);
    let req = wire(&s.sent()[0]);
    assert_eq!(req.info.transport, Transport::Xrc);
    // A request reaches neither an initiator nor an RC QP.
    let mut ini2 = qp(QpType::XrcIni, 2, 1);
    let mut x = Sink::default();
    assert_eq!(
        ini2.on_packet(&req, &mut env, &mut x),
        RxStatus::WrongTransport
    );
    assert_eq!(
        rc.on_packet(&req, &mut env, &mut x),
        RxStatus::WrongTransport
    );
    // The target answers; the answer does not reach a target QP.
    assert_eq!(tgt.on_packet(&req, &mut env, &mut x), RxStatus::Ok);
    let ack = wire(&x.sent()[0]);
    let mut tgt2 = qp(QpType::XrcTgt, 1, 2);
    assert_eq!(
        tgt2.on_packet(&ack, &mut env, &mut x),
        RxStatus::WrongTransport
    );
    // An RC request does not reach a target QP.
    let mut rs = Sink::default();
    let mut rc_ini = qp(QpType::Rc, 1, 2);
    rc_ini.post_send(wqe(1, SEND, 8), &mut rs).unwrap();
    rc_ini.poll_tx(10, &mut rs);
    let rc_req = wire(&rs.sent()[0]);
    let mut tgt3 = qp(QpType::XrcTgt, 2, 1);
    assert_eq!(
        tgt3.on_packet(&rc_req, &mut env, &mut x),
        RxStatus::WrongTransport
    );
}

#[test]
fn posting_rules() {
    let (mut ini, mut tgt) = (qp(QpType::XrcIni, 1, 2), qp(QpType::XrcTgt, 2, 1));
    let mut s = Sink::default();
    // A target QP has no send queue.
    assert_eq!(
        tgt.post_send(wqe(1, SEND, 8), &mut s),
        Err(PostError::InvalidOp)
    );
    let remote = RemoteAddr { va: 0, rkey: 1 };
    // FLUSH and ATOMIC WRITE have no XRC opcodes.
    let flush = SendOp::Flush {
        remote,
        sel: 0,
        plt: 1,
    };
    assert_eq!(
        ini.post_send(wqe(2, flush, 8), &mut s),
        Err(PostError::InvalidOp)
    );
    let aw = SendOp::AtomicWrite { remote, value: 1 };
    assert_eq!(
        ini.post_send(wqe(3, aw, 8), &mut s),
        Err(PostError::InvalidOp)
    );
    // SEND with Invalidate and atomics are XRC operations.
    let inv = SendOp::Send {
        imm: None,
        inv_rkey: Some(4),
    };
    assert_eq!(ini.post_send(wqe(4, inv, 8), &mut s), Ok(()));
    let cs = SendOp::CompareSwap {
        remote,
        compare: 0,
        swap: 1,
    };
    assert_eq!(ini.post_send(wqe(5, cs, 8), &mut s), Ok(()));
}

#[test]
fn read_response_reads_in_the_srq_the_read_named() {
    let (mut ini, mut tgt) = (qp(QpType::XrcIni, 1, 2), qp(QpType::XrcTgt, 2, 1));
    let mut env = Env {
        recvs: 1,
        xrc_srqs: vec![9, 10],
        ..Env::default()
    };
    let remote = RemoteAddr {
        va: 0x1000,
        rkey: 5,
    };
    let mut s = Sink::default();
    ini.post_send(xrc_wqe(1, SendOp::Read { remote }, 100, 9), &mut s)
        .unwrap();
    ini.post_send(xrc_wqe(2, SEND, 8, 10), &mut s).unwrap();
    ini.poll_tx(10, &mut s);
    let reqs = s.sent();
    assert_eq!(reqs.len(), 2);
    // Both requests are handled before the READ response goes out.
    let mut st = Sink::default();
    for r in &reqs {
        assert_eq!(tgt.on_packet(&wire(r), &mut env, &mut st), RxStatus::Ok);
    }
    tgt.poll_tx(10, &mut st);
    let mrs: Vec<u32> = st
        .sent()
        .iter()
        .filter_map(|p| match p.payload {
            Payload::Mr { xrc_srqn, .. } => Some(xrc_srqn),
            _ => None,
        })
        .collect();
    assert_eq!(mrs, [9]);
    assert_eq!(env.selected, [9, 10]);
}

#[test]
fn duplicate_is_acknowledged_after_its_srq_is_gone() {
    let (mut ini, mut tgt) = (qp(QpType::XrcIni, 1, 2), qp(QpType::XrcTgt, 2, 1));
    let mut env = Env {
        recvs: 1,
        xrc_srqs: vec![7],
        ..Env::default()
    };
    let mut s = Sink::default();
    ini.post_send(xrc_wqe(1, SEND, 8, 7), &mut s).unwrap();
    ini.poll_tx(10, &mut s);
    let req = wire(&s.sent()[0]);
    let mut st = Sink::default();
    assert_eq!(tgt.on_packet(&req, &mut env, &mut st), RxStatus::Ok);
    assert_eq!(st.recv_completions().len(), 1);
    // The ACK is lost and the SRQ destroyed; the retransmitted SEND is re-acknowledged.
    env.xrc_srqs.clear();
    let mut sd = Sink::default();
    assert_eq!(tgt.on_packet(&req, &mut env, &mut sd), RxStatus::Duplicate);
    let acks = sd.sent();
    assert_eq!(acks.len(), 1);
    assert_eq!(acks[0].hdrs.bth.opcode, Opcode::XRC_ACKNOWLEDGE);
    assert_eq!(
        acks[0].hdrs.aeth.unwrap().kind(),
        AethKind::Ack { credits: 31 }
    );
    assert!(sd.recv_completions().is_empty());
    assert_ne!(tgt.state(), QpState::Error);
    // A new request naming it is refused.
    let mut s2 = Sink::default();
    ini.post_send(xrc_wqe(2, SEND, 8, 7), &mut s2).unwrap();
    ini.poll_tx(10, &mut s2);
    let next = s2
        .sent()
        .into_iter()
        .find(|p| p.hdrs.xrceth.is_some())
        .unwrap();
    let mut sn = Sink::default();
    assert_eq!(
        tgt.on_packet(&wire(&next), &mut env, &mut sn),
        RxStatus::Invalid
    );
    assert_eq!(
        sn.sent()[0].hdrs.aeth.unwrap().kind(),
        AethKind::Nak(NakCode::InvalidRequest)
    );
}
