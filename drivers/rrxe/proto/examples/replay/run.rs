// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Replaying one QP of a capture through a fresh [`Qp`]: what the capture shows the QP's
//! peer sending is delivered to it, what the QP itself sent is posted to it again as the
//! work requests those packets carried, in capture order and at capture time (timers fire
//! when capture time passes their deadline); every action it takes is reported, and what it
//! sends is compared with what the captured QP sent.
//!
//! What a capture cannot give is assumed: every key is valid and memory is not modelled
//! (placements succeed and READ responses carry no data), the receive queue always has a
//! WQE (`--recvs` limits it), atomics return 0. The QP's attributes are taken from the
//! capture: its type from the opcodes, its peer from the packets it sent, its first PSNs
//! from the first requests each way, its path MTU from the largest full-size payload
//! (options override them).

use rrxe_proto::hdr::parse_packet;
use rrxe_proto::net::locate_ib;
use rrxe_proto::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::pcap::Frame;

type TheQp = Qp<256, 16>;

/// What the replay is asked.
#[derive(Clone, Debug, Default)]
pub struct Opts {
    /// The QP to replay.
    pub qpn: u32,
    /// Its peer (found in the capture if unset).
    pub peer: Option<u32>,
    /// Path MTU (found in the capture if unset).
    pub mtu: Option<Mtu>,
    /// Receive WQEs posted (unlimited if unset).
    pub recvs: Option<u32>,
    /// Retry count and RNR retry count (7 if unset).
    pub retry_cnt: Option<u8>,
    /// Local ACK timeout exponent (14 if unset).
    pub timeout: Option<u8>,
}

/// What the replay did.
#[derive(Debug, Default)]
pub struct Report {
    /// One line an event and an indented line an action.
    pub text: String,
    /// The QP's state at the end.
    pub state: Option<QpState>,
    /// The PSN its responder expects next.
    pub epsn: u32,
    /// (opcode, PSN) of each packet the replayed QP sent, in order.
    pub sent: Vec<(u8, u32)>,
    /// (opcode, PSN) of each packet the captured QP sent, in order.
    pub captured: Vec<(u8, u32)>,
    /// Receive completions (status), in order.
    pub recv_done: Vec<WcStatus>,
    /// Send completions (status), in order.
    pub send_done: Vec<WcStatus>,
    /// The status of each packet delivered, in order.
    pub rx: Vec<RxStatus>,
}

/// A decoded RoCE packet of the capture.
struct Pkt {
    no: usize,
    t_us: u64,
    src: Vec<u8>,
    dst: Vec<u8>,
    ib: Vec<u8>,
    p: Packet,
    icrc_ok: bool,
}

fn decode(f: &Frame, crc: &SoftCrc32) -> Option<Pkt> {
    let l = locate_ib(&f.ip).ok()?;
    let v6 = f.ip.first()? >> 4 == 6;
    let (src, dst) = if v6 {
        (f.ip.get(8..24)?.to_vec(), f.ip.get(24..40)?.to_vec())
    } else {
        (f.ip.get(12..16)?.to_vec(), f.ip.get(16..20)?.to_vec())
    };
    let end = l.ib_off.checked_add(l.ib_len)?;
    let ib = f.ip.get(l.ib_off..end)?.to_vec();
    let p = parse_packet(&ib).ok()?;
    let icrc_ok = icrc::verify(crc, f.ip.get(..end)?, v6);
    Some(Pkt {
        no: f.no,
        t_us: f.t_us,
        src,
        dst,
        ib,
        p,
        icrc_ok,
    })
}

/// A short name of a packet's opcode ("RC SEND_FIRST", "RC ACK").
pub fn op_name(op: u8) -> String {
    let Some(i) = Opcode(op).info() else {
        return format!("opcode 0x{op:02x}");
    };
    let kind = match i.kind {
        OpKind::Send => "SEND",
        OpKind::Write => "WRITE",
        OpKind::ReadRequest => "READ_REQUEST",
        OpKind::ReadResponse => "READ_RESPONSE",
        OpKind::Ack => "ACK",
        OpKind::AtomicAck => "ATOMIC_ACK",
        OpKind::CompareSwap => "COMPARE_SWAP",
        OpKind::FetchAdd => "FETCH_ADD",
        OpKind::Flush => "FLUSH",
        OpKind::AtomicWrite => "ATOMIC_WRITE",
        OpKind::Cnp => "CNP",
    };
    let multi = matches!(i.kind, OpKind::Send | OpKind::Write | OpKind::ReadResponse);
    let pos = match (multi, i.pos) {
        (false, _) => "",
        (true, Position::First) => "_FIRST",
        (true, Position::Middle) => "_MIDDLE",
        (true, Position::Last) => "_LAST",
        (true, Position::Only) => "_ONLY",
    };
    let tr = match i.transport {
        Transport::Rc => "RC",
        Transport::Uc => "UC",
        Transport::Ud => "UD",
        Transport::Xrc => "XRC",
        Transport::Cnp => "",
    };
    format!("{tr} {kind}{pos}").trim().to_string()
}

fn describe(h: &Headers, len: usize) -> String {
    let mut s = format!(
        "{} psn 0x{:06x} qp 0x{:06x}",
        op_name(h.bth.opcode.0),
        h.bth.psn.get(),
        h.bth.dest_qp
    );
    if let Some(a) = h.aeth {
        let _ = match a.kind() {
            AethKind::Ack { .. } => write!(s, " ack msn {}", a.msn),
            AethKind::RnrNak { timer } => write!(s, " RNR NAK timer {timer} msn {}", a.msn),
            AethKind::Nak(c) => write!(s, " NAK {c:?} msn {}", a.msn),
            AethKind::Reserved => write!(s, " reserved syndrome 0x{:02x}", a.syndrome),
        };
    }
    if let Some(r) = h.reth {
        let _ = write!(s, " va 0x{:x} rkey 0x{:x} len {}", r.va, r.rkey, r.len);
    }
    if len > 0 {
        let _ = write!(s, " payload {len}");
    }
    s
}

/// The work request the packets of one message of the captured QP carried.
fn wqe_of(first: &Packet, len: u32, payload: &[u8], id: u64) -> Option<SendWqe> {
    let h = &first.hdrs;
    let remote = |va: u64, rkey: u32| RemoteAddr { va, rkey };
    let op = match first.info.kind {
        OpKind::Send => SendOp::Send {
            imm: h.imm,
            inv_rkey: h.ieth,
        },
        OpKind::Write => {
            let r = h.reth?;
            SendOp::Write {
                remote: remote(r.va, r.rkey),
                imm: h.imm,
            }
        }
        OpKind::ReadRequest => {
            let r = h.reth?;
            SendOp::Read {
                remote: remote(r.va, r.rkey),
            }
        }
        OpKind::CompareSwap => {
            let a = h.atomic?;
            SendOp::CompareSwap {
                remote: remote(a.va, a.rkey),
                compare: a.compare,
                swap: a.swap_add,
            }
        }
        OpKind::FetchAdd => {
            let a = h.atomic?;
            SendOp::FetchAdd {
                remote: remote(a.va, a.rkey),
                add: a.swap_add,
            }
        }
        OpKind::AtomicWrite => {
            let r = h.reth?;
            let v: [u8; 8] = payload.get(..8)?.try_into().ok()?;
            SendOp::AtomicWrite {
                remote: remote(r.va, r.rkey),
                value: u64::from_be_bytes(v),
            }
        }
        OpKind::Flush => {
            let (r, f) = (h.reth?, h.feth?);
            SendOp::Flush {
                remote: remote(r.va, r.rkey),
                sel: f.sel,
                plt: f.plt,
            }
        }
        _ => return None,
    };
    let len = match first.info.kind {
        OpKind::ReadRequest | OpKind::Flush => h.reth?.len,
        OpKind::CompareSwap | OpKind::FetchAdd | OpKind::AtomicWrite => 8,
        _ => len,
    };
    Some(SendWqe {
        id: WqeId(id),
        op,
        len,
        signaled: true,
        solicited: h.bth.se,
        fence: false,
        ud: None,
        xrc_srqn: h.xrceth.unwrap_or(0),
    })
}

/// The PSNs a request of the captured QP uses: 1, or a READ's response count.
fn psns_of(p: &Packet, mtu: u32) -> u32 {
    match (p.info.kind, p.hdrs.reth) {
        (OpKind::ReadRequest, Some(r)) => r.len.div_ceil(mtu).max(1),
        _ => 1,
    }
}

fn mtu_of(pkts: &[&Pkt]) -> Mtu {
    let full = pkts
        .iter()
        .filter(|k| matches!(k.p.info.pos, Position::First | Position::Middle))
        .map(|k| k.ib.len() as u32 - k.p.payload_off - 4 - u32::from(k.p.hdrs.bth.pad))
        .max()
        .unwrap_or(1024);
    [Mtu::M256, Mtu::M512, Mtu::M1024, Mtu::M2048, Mtu::M4096]
        .into_iter()
        .find(|m| m.bytes() >= full)
        .unwrap_or(Mtu::M4096)
}

/// An event of the replay, in capture order.
enum Ev {
    Post(SendWqe, usize),
    Deliver(usize),
}

struct Env {
    recvs: Option<u32>,
}

impl ResponderEnv for Env {
    fn check_access(&mut self, _: u32, _: u64, _: u32, _: Access) -> Result<(), AccessError> {
        Ok(())
    }
    fn atomic(&mut self, _: u32, _: u64, _: AtomicOp) -> Result<u64, AccessError> {
        Ok(0)
    }
    fn atomic_write(&mut self, _: u32, _: u64, _: u64) -> Result<(), AccessError> {
        Ok(())
    }
    fn recv_head_len(&mut self) -> Option<u32> {
        (self.recvs != Some(0)).then_some(1 << 30)
    }
}

struct Sink {
    now: u64,
    acts: Vec<Action>,
}

impl ActionSink for Sink {
    fn push(&mut self, a: Action) {
        self.acts.push(a);
    }
    fn now_us(&self) -> Option<u64> {
        Some(self.now)
    }
    fn place(&mut self, a: Action) -> Result<(), PlaceError> {
        self.acts.push(a);
        Ok(())
    }
    fn transmit(&mut self, p: TxPacket) -> Result<(), PlaceError> {
        self.acts.push(Action::Send(p));
        Ok(())
    }
}

/// The QPs the capture shows packets to: one line each (QP, its host, packets, opcodes).
pub fn list(frames: &[Frame]) -> String {
    let crc = SoftCrc32;
    let mut qps: BTreeMap<(Vec<u8>, u32), (usize, Vec<String>)> = BTreeMap::new();
    for k in frames.iter().filter_map(|f| decode(f, &crc)) {
        let e = qps
            .entry((k.dst.clone(), k.p.hdrs.bth.dest_qp))
            .or_default();
        e.0 += 1;
        let name = op_name(k.p.hdrs.bth.opcode.0);
        if !e.1.contains(&name) {
            e.1.push(name);
        }
    }
    let mut s = String::new();
    for ((host, qpn), (n, ops)) in &qps {
        let _ = writeln!(
            s,
            "QP 0x{qpn:06x} on {}: {n} packets ({})",
            addr(host),
            ops.join(", ")
        );
    }
    if s.is_empty() {
        s.push_str("no RoCE packet in the capture\n");
    }
    s
}

/// Replays QP `o.qpn` of `frames`.
pub fn replay(frames: &[Frame], o: &Opts) -> Result<Report, String> {
    let crc = SoftCrc32;
    let pkts: Vec<Pkt> = frames.iter().filter_map(|f| decode(f, &crc)).collect();
    let to_n: Vec<&Pkt> = pkts
        .iter()
        .filter(|k| k.p.hdrs.bth.dest_qp == o.qpn)
        .collect();
    let first = to_n
        .first()
        .ok_or_else(|| format!("no RoCE packet to QP 0x{:x} in the capture", o.qpn))?;
    let (host, peer_host) = (first.dst.clone(), first.src.clone());
    let back = |k: &&Pkt| k.src == host && k.dst == peer_host;
    let peer = match o.peer {
        Some(m) => m,
        None => {
            let mut qps: Vec<u32> = pkts
                .iter()
                .filter(back)
                .map(|k| k.p.hdrs.bth.dest_qp)
                .collect();
            qps.sort_unstable();
            qps.dedup();
            match qps.as_slice() {
                [m] => *m,
                [] => return Err("the capture shows nothing the QP sent: give --peer".into()),
                _ => {
                    return Err(format!(
                        "the QP's host sent to several QPs of its peer ({qps:x?}): give --peer"
                    ))
                }
            }
        }
    };
    let from_n: Vec<&Pkt> = pkts
        .iter()
        .filter(|k| back(k) && k.p.hdrs.bth.dest_qp == peer)
        .collect();
    let qp_type = match first.p.info.transport {
        Transport::Rc => QpType::Rc,
        Transport::Uc => QpType::Uc,
        Transport::Ud => QpType::Ud,
        t => {
            return Err(format!(
                "replaying a QP of transport {t:?} is not supported"
            ))
        }
    };
    let all: Vec<&Pkt> = to_n.iter().chain(from_n.iter()).copied().collect();
    let mtu = o.mtu.unwrap_or_else(|| mtu_of(&all));
    let first_req = |v: &[&Pkt]| {
        v.iter()
            .find(|k| k.p.info.is_request() && k.icrc_ok)
            .map(|k| k.p.hdrs.bth.psn)
    };
    let cfg = QpConfig {
        qpn: o.qpn,
        qp_type,
        dest_qpn: peer,
        qkey: first.p.hdrs.deth.map_or(0, |d| d.qkey),
        pkey: first.p.hdrs.bth.pkey,
        mtu,
        sq_psn: first_req(&from_n).unwrap_or(Psn::new(0)),
        rq_psn: first_req(&to_n).unwrap_or(Psn::new(0)),
        timeout: o.timeout.unwrap_or(14),
        retry_cnt: o.retry_cnt.unwrap_or(7),
        rnr_retry: o.retry_cnt.unwrap_or(7),
        ..QpConfig::DEFAULT
    };
    let mut r = Report::default();
    let _ = writeln!(
        r.text,
        "QP 0x{:06x} ({:?}) on {}, peer QP 0x{:06x} on {}; MTU {}, first PSNs: sends 0x{:06x}, receives 0x{:06x}",
        o.qpn,
        qp_type,
        addr(&host),
        peer,
        addr(&peer_host),
        mtu.bytes(),
        cfg.sq_psn.get(),
        cfg.rq_psn.get()
    );

    // The captured QP's messages, each posted at its first packet; retransmissions skipped.
    let mut evs: BTreeMap<(usize, u8), Ev> = BTreeMap::new();
    let mut next = cfg.sq_psn;
    let mut msg: Option<(&Packet, u32, Vec<u8>, usize)> = None;
    let mut id = 0u64;
    for k in &from_n {
        r.captured
            .push((k.p.hdrs.bth.opcode.0, k.p.hdrs.bth.psn.get()));
        if !k.p.info.is_request() || !k.icrc_ok || k.p.hdrs.bth.psn != next {
            continue;
        }
        next = next.add(psns_of(&k.p, mtu.bytes()));
        let pay = payload(k);
        if k.p.info.pos.starts() {
            msg = Some((&k.p, 0, pay.to_vec(), k.no));
        }
        if let Some((_, len, _, _)) = msg.as_mut() {
            *len += pay.len() as u32;
        }
        if matches!(k.p.info.pos, Position::Last | Position::Only) {
            if let Some((p, len, pay0, no)) = msg.take() {
                id += 1;
                let w = wqe_of(p, len, &pay0, id)
                    .ok_or_else(|| format!("frame {no}: cannot rebuild its work request"))?;
                evs.insert((no, 0), Ev::Post(w, no));
            }
        }
    }
    for (i, k) in pkts.iter().enumerate() {
        if k.p.hdrs.bth.dest_qp == o.qpn {
            evs.insert((k.no, 1), Ev::Deliver(i));
        }
    }

    let mut qp = TheQp::new(cfg);
    let mut sink = Sink {
        now: first.t_us,
        acts: Vec::new(),
    };
    for st in [QpState::Init, QpState::Rtr, QpState::Rts] {
        qp.modify(
            &ModifyQp {
                state: Some(st),
                ..Default::default()
            },
            &mut sink,
        )
        .map_err(|e| format!("modify to {st:?}: {e:?}"))?;
    }
    sink.acts.clear();
    let t0 = first.t_us.min(from_n.first().map_or(u64::MAX, |k| k.t_us));
    let mut env = Env { recvs: o.recvs };
    let mut timers: BTreeMap<u8, (TimerKind, u64)> = BTreeMap::new();
    for ev in evs.values() {
        let t = match ev {
            Ev::Post(_, no) => pkts.iter().find(|k| k.no == *no).map_or(t0, |k| k.t_us),
            Ev::Deliver(i) => pkts[*i].t_us,
        };
        // Timers due before this event fire first, in deadline order.
        while let Some((&key, &(kind, due))) = timers.iter().min_by_key(|(_, (_, d))| *d) {
            if due > t {
                break;
            }
            timers.remove(&key);
            sink.now = due;
            let _ = writeln!(r.text, "+{:>9} us  {kind:?} timer fires", due - t0);
            qp.on_timer(kind, &mut sink);
            flush(&mut qp, &mut sink, &mut r, &mut timers, &mut env, t0);
        }
        sink.now = t;
        match ev {
            Ev::Post(w, no) => {
                let _ = writeln!(
                    r.text,
                    "+{:>9} us  post WQE {} {:?} len {} (frame {no})",
                    t - t0,
                    w.id.0,
                    w.op,
                    w.len
                );
                if let Err(e) = qp.post_send(*w, &mut sink) {
                    let _ = writeln!(r.text, "              refused: {e:?}");
                }
            }
            Ev::Deliver(i) => {
                let k = &pkts[*i];
                let pay = payload(k).len();
                let _ = write!(
                    r.text,
                    "+{:>9} us  frame {}: {}",
                    t - t0,
                    k.no,
                    describe(&k.p.hdrs, pay)
                );
                if !k.icrc_ok {
                    let _ = writeln!(r.text, " -> dropped: bad ICRC");
                    continue;
                }
                let st = qp.on_packet(&k.p, &mut env, &mut sink);
                let _ = writeln!(r.text, " -> {st:?}");
                r.rx.push(st);
            }
        }
        flush(&mut qp, &mut sink, &mut r, &mut timers, &mut env, t0);
    }
    for (kind, due) in timers.values() {
        let _ = writeln!(
            r.text,
            "end: {kind:?} timer armed for +{} us (not fired: past the capture)",
            due - t0
        );
    }
    r.state = Some(qp.state());
    r.epsn = qp.responder().epsn().get();
    let same = r
        .sent
        .iter()
        .zip(r.captured.iter())
        .take_while(|(a, b)| a == b)
        .count();
    let _ = writeln!(
        r.text,
        "end: state {:?}, responder expects PSN 0x{:06x}; sent {} packets, the capture shows {}: the first {} the same",
        qp.state(),
        r.epsn,
        r.sent.len(),
        r.captured.len(),
        same
    );
    if let Some((a, b)) = r.sent.get(same).zip(r.captured.get(same)) {
        let _ = writeln!(
            r.text,
            "     first difference, packet {}: replay {} psn 0x{:06x}, capture {} psn 0x{:06x}",
            same + 1,
            op_name(a.0),
            a.1,
            op_name(b.0),
            b.1
        );
    }
    Ok(r)
}

fn payload(k: &Pkt) -> &[u8] {
    let end = k.ib.len().saturating_sub(4 + usize::from(k.p.hdrs.bth.pad));
    k.ib.get(k.p.payload_off as usize..end).unwrap_or(&[])
}

fn addr(a: &[u8]) -> String {
    match a.len() {
        4 => format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]),
        _ => a
            .chunks(2)
            .map(|c| format!("{:02x}{:02x}", c[0], c.get(1).copied().unwrap_or(0)))
            .collect::<Vec<_>>()
            .join(":"),
    }
}

/// Runs the QP's transmit side dry and reports what the last event made it do.
fn flush(
    qp: &mut TheQp,
    sink: &mut Sink,
    r: &mut Report,
    timers: &mut BTreeMap<u8, (TimerKind, u64)>,
    env: &mut Env,
    t0: u64,
) {
    while qp.poll_tx(64, sink) {}
    let mut placed = 0u32;
    for a in sink.acts.drain(..) {
        // Consecutive placements are reported as one line, before what follows them.
        if placed > 0
            && !matches!(
                a,
                Action::PlaceRecv { .. } | Action::PlaceMr { .. } | Action::PlaceWqe { .. }
            )
        {
            let _ = writeln!(r.text, "              placed {placed} bytes");
            placed = 0;
        }
        match a {
            Action::Send(p) => {
                r.sent.push((p.hdrs.bth.opcode.0, p.hdrs.bth.psn.get()));
                let _ = writeln!(
                    r.text,
                    "              send {}",
                    describe(&p.hdrs, p.payload.len() as usize)
                );
            }
            Action::PlaceRecv { src, .. }
            | Action::PlaceMr { src, .. }
            | Action::PlaceWqe { src, .. } => placed += src.len,
            Action::ArmTimer { kind, usecs } => {
                timers.insert(kind as u8, (kind, sink.now + usecs));
                let _ = writeln!(
                    r.text,
                    "              arm {kind:?} timer: {usecs} us (due +{} us)",
                    sink.now + usecs - t0
                );
            }
            Action::CancelTimer(kind) => {
                timers.remove(&(kind as u8));
            }
            Action::SendComplete(c) => {
                r.send_done.push(c.status);
                let _ = writeln!(
                    r.text,
                    "              send completion: WQE {} {:?}, {} bytes",
                    c.id.0, c.status, c.byte_len
                );
            }
            Action::RecvComplete(c) => {
                if let Some(n) = env.recvs.as_mut() {
                    *n = n.saturating_sub(1);
                }
                r.recv_done.push(c.status);
                let _ = writeln!(
                    r.text,
                    "              receive completion: {:?}, {} bytes",
                    c.status, c.byte_len
                );
            }
            Action::StateChanged(s) => {
                let _ = writeln!(r.text, "              state: {s:?}");
            }
            Action::Event(e) => {
                let _ = writeln!(r.text, "              event: {e:?}");
            }
            a => {
                let _ = writeln!(r.text, "              {a:?}");
            }
        }
    }
    if placed > 0 {
        let _ = writeln!(r.text, "              placed {placed} bytes");
    }
}
