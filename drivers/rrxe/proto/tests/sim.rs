// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Deterministic network simulator: two QPs over a lossy, reordering,
//! duplicating, corrupting link, checked end to end.
//!
//! `cargo test -p rrxe-proto --test sim` runs 2000 seeds. Environment:
//! `RRXE_SIM_SEEDS=n` (number of seeds), `RRXE_SIM_START=s` (first seed),
//! `RRXE_SIM_SEED=s` (exactly one seed, verbose; add `RRXE_SIM_TRACE=1` for a
//! packet trace).
//!
//! On-demand paging: in half of the seeds of three scenarios (lossy RC, UC, UD) memory is
//! "not present" at random (`World::odp_ppm`): access checks, atomics, placements and
//! gathers fail with `NotPresent` for one packet or one transmit round, and a "fault"
//! event (`Ev::Fault`) a little later tells the QP it is done, as the driver's work item
//! does. The checks are unchanged: every message exactly once and intact.

#![allow(clippy::needless_range_loop)]

use rrxe_proto::icrc;
use rrxe_proto::net::{locate_ib, write_ipv4_udp, IPV4_HDR_LEN, UDP_HDR_LEN};
use rrxe_proto::*;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, VecDeque};

mod support;
use support::{set_clock, to_rts, Rng, Sink};

// ---------------------------------------------------------------- world

type TheQp = Qp<32, 16>;
const MEM: usize = 64 * 1024;
const MEM_VA: u64 = 0x7000_0000_0000;
const ATOMIC_AREA: usize = 0;
const WRITE_AREA: usize = 4096;
const READ_AREA: usize = 40 * 1024;

#[derive(Clone, Copy, Debug, Default)]
struct LinkCfg {
    loss_ppm: u32,
    dup_ppm: u32,
    corrupt_ppm: u32,
    delay_min: u64,
    jitter: u64,
    cut_at: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scenario {
    Lossy,
    Cut,
    BadRkey,
    RnrFinite,
    RnrLateRecv,
    Uc,
    Ud,
}

enum Ev {
    Deliver {
        to: usize,
        frame: Vec<u8>,
    },
    Timer {
        node: usize,
        kind: TimerKind,
        gen: u64,
    },
    PostRecvs {
        node: usize,
    },
    /// On-demand paging: the "page fault" a NotPresent asked for is done.
    Fault {
        node: usize,
    },
}

struct Item {
    t: u64,
    seq: u64,
    ev: Ev,
}
impl PartialEq for Item {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Item {
    fn cmp(&self, o: &Self) -> Ordering {
        (o.t, o.seq).cmp(&(self.t, self.seq)) // min-heap
    }
}

struct Recv {
    id: u64,
    buf: Vec<u8>,
}

struct Node {
    qp: TheQp,
    mem: Vec<u8>,
    rkey: u32,
    recvs: VecDeque<Recv>,
    late_recvs: usize,
    recv_len: u32,
    wqe_bufs: HashMap<u64, Vec<u8>>,
    backlog: VecDeque<SendWqe>,
    send_done: Vec<SendCompletion>,
    recv_done: Vec<(RecvCompletion, Vec<u8>)>,
    timer_gen: [u64; 2],
    addr: [u8; 4],
    error_seen: bool,
    /// The QP's affiliated asynchronous events, in order.
    events: Vec<QpEvent>,
}

struct Env<'a> {
    mem: &'a mut Vec<u8>,
    rkey: u32,
    recvs: &'a VecDeque<Recv>,
    /// On-demand paging: the memory is not present for this packet.
    absent: bool,
}

/// Placements that find their memory not present (on-demand paging).
fn absent_place(a: &Action) -> Option<PlaceError> {
    matches!(
        a,
        Action::PlaceMr { .. }
            | Action::PlaceRecv { .. }
            | Action::PlaceGrh
            | Action::PlaceWqe { .. }
            | Action::AtomicResult { .. }
    )
    .then_some(PlaceError::NotPresent)
}

/// Transmissions whose payload (a gather list, a READ's MR) is not present.
fn absent_payload(a: &Action) -> Option<PlaceError> {
    match a {
        Action::Send(p) if matches!(p.payload, Payload::Wqe { .. } | Payload::Mr { .. }) => {
            Some(PlaceError::NotPresent)
        }
        _ => None,
    }
}

fn mem_off(rkey: u32, my: u32, va: u64, len: u64, size: usize) -> Result<usize, AccessError> {
    if rkey != my {
        return Err(AccessError::BadKey);
    }
    let off = va.checked_sub(MEM_VA).ok_or(AccessError::OutOfBounds)?;
    if off.checked_add(len).is_none_or(|e| e > size as u64) {
        return Err(AccessError::OutOfBounds);
    }
    Ok(off as usize)
}

impl ResponderEnv for Env<'_> {
    fn check_access(
        &mut self,
        rkey: u32,
        va: u64,
        len: u32,
        _a: Access,
    ) -> Result<(), AccessError> {
        mem_off(rkey, self.rkey, va, u64::from(len), self.mem.len())?;
        if self.absent {
            return Err(AccessError::NotPresent);
        }
        Ok(())
    }
    fn atomic(&mut self, rkey: u32, va: u64, op: AtomicOp) -> Result<u64, AccessError> {
        let o = mem_off(rkey, self.rkey, va, 8, self.mem.len())?;
        if self.absent {
            return Err(AccessError::NotPresent);
        }
        let cur = u64::from_le_bytes(self.mem[o..o + 8].try_into().unwrap());
        let new = match op {
            AtomicOp::CompareSwap { compare, swap } => {
                if cur == compare {
                    swap
                } else {
                    cur
                }
            }
            AtomicOp::FetchAdd { add } => cur.wrapping_add(add),
        };
        self.mem[o..o + 8].copy_from_slice(&new.to_le_bytes());
        Ok(cur)
    }
    fn atomic_write(&mut self, rkey: u32, va: u64, value: u64) -> Result<(), AccessError> {
        let o = mem_off(rkey, self.rkey, va, 8, self.mem.len())?;
        if self.absent {
            return Err(AccessError::NotPresent);
        }
        self.mem[o..o + 8].copy_from_slice(&value.to_le_bytes());
        Ok(())
    }
    fn recv_head_len(&mut self) -> Option<u32> {
        self.recvs.front().map(|r| r.buf.len() as u32)
    }
}

/// What the checker expects from one posted WQE.
#[derive(Clone, Debug)]
enum Expect {
    Send {
        data: Vec<u8>,
        imm: Option<u32>,
    },
    Write {
        off: usize,
        data: Vec<u8>,
        imm: Option<u32>,
    },
    Read {
        off: usize,
        len: usize,
    },
    Atomic {
        orig: u64,
    },
    AtomicWrite {
        off: usize,
        value: u64,
    },
    Flush,
}

struct World {
    nodes: [Node; 2],
    rng: Rng,
    now: u64,
    seq: u64,
    heap: BinaryHeap<Item>,
    link: LinkCfg,
    crc: SoftCrc32,
    ud: bool,
    stats_pkts: u64,
    trace: bool,
    /// Whether the QPs' sinks read the simulated clock (every other ten seeds: each scenario both ways).
    clock: bool,
    /// On-demand paging: the chance (ppm) that one packet's or one transmit round's memory
    /// is not present (0: always present).
    odp_ppm: u32,
}

impl World {
    /// On-demand paging: whether the next access finds its memory not present; if so, the
    /// fault that maps it is done a little later.
    fn absent(&mut self, node: usize) -> bool {
        if self.odp_ppm == 0 || !self.rng.ppm(self.odp_ppm) {
            return false;
        }
        let dt = self.rng.range(1, 50);
        self.schedule(dt, Ev::Fault { node });
        true
    }

    fn schedule(&mut self, dt: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Item {
            t: self.now + dt,
            seq: self.seq,
            ev,
        });
    }

    fn transmit(&mut self, from: usize, pkt: &TxPacket) -> Result<(), String> {
        let plen = pkt.payload.len() as usize;
        let hl = build_headers(&pkt.hdrs, plen as u32, &mut [0u8; 64][..])
            .map_err(|e| format!("build {e:?} {pkt:?}"))?;
        let ib_len = hl + plen + ((4 - plen % 4) % 4) + 4;
        let mut frame = vec![0u8; IPV4_HDR_LEN + UDP_HDR_LEN + ib_len];
        let off = IPV4_HDR_LEN + UDP_HDR_LEN;
        build_headers(&pkt.hdrs, plen as u32, &mut frame[off..]).unwrap();
        let n = &self.nodes[from];
        let payload: Vec<u8> = match pkt.payload {
            Payload::None => vec![],
            Payload::Wqe { id, offset, len } => {
                let b = n.wqe_bufs.get(&id.0).ok_or("payload from unknown wqe")?;
                b.get(offset as usize..(offset + len) as usize)
                    .ok_or("wqe payload range")?
                    .to_vec()
            }
            Payload::Mr { rkey, va, len, .. } => {
                let o = mem_off(rkey, n.rkey, va, u64::from(len), n.mem.len())
                    .map_err(|e| format!("mr payload {e:?}"))?;
                n.mem[o..o + len as usize].to_vec()
            }
            Payload::Inline(b) => b.to_vec(),
        };
        frame[off + hl..off + hl + plen].copy_from_slice(&payload);
        let dst = self.nodes[1 - from].addr;
        write_ipv4_udp(
            &mut frame,
            n.addr,
            dst,
            0x02,
            64,
            0xc000 + from as u16,
            ib_len,
        )
        .unwrap();
        icrc::fill(&self.crc, &mut frame, false).unwrap();
        self.stats_pkts += 1;
        if self.trace {
            let h = &pkt.hdrs;
            eprintln!(
                "{:>8} {}->{} {:?} psn {:#x} ack {} len {} aeth {:?}",
                self.now,
                from,
                1 - from,
                h.bth.opcode,
                h.bth.psn.get(),
                h.bth.ack_req,
                plen,
                h.aeth.map(|a| a.kind())
            );
        }
        if self.link.cut_at.is_some_and(|c| self.now >= c) {
            return Ok(());
        }
        let copies = if self.rng.ppm(self.link.dup_ppm) {
            2
        } else {
            1
        };
        for _ in 0..copies {
            if self.rng.ppm(self.link.loss_ppm) {
                continue;
            }
            let mut f = frame.clone();
            if self.rng.ppm(self.link.corrupt_ppm) {
                let bit = self.rng.below(f.len() as u64 * 8) as usize;
                f[bit / 8] ^= 1 << (bit % 8);
            }
            let d = self.link.delay_min + self.rng.below(self.link.jitter + 1);
            self.schedule(
                d,
                Ev::Deliver {
                    to: 1 - from,
                    frame: f,
                },
            );
        }
        Ok(())
    }

    fn apply(&mut self, node: usize, acts: Vec<Action>, rx: Option<&[u8]>) -> Result<(), String> {
        for a in acts {
            match a {
                Action::Send(p) => self.transmit(node, &p)?,
                Action::PlaceWqe { id, offset, src } => {
                    let rx = rx.ok_or("PlaceWqe without packet")?;
                    let data = &rx[src.off as usize..(src.off + src.len) as usize];
                    let b = self.nodes[node]
                        .wqe_bufs
                        .get_mut(&id.0)
                        .ok_or("PlaceWqe unknown wqe")?;
                    b.get_mut(offset as usize..offset as usize + data.len())
                        .ok_or("PlaceWqe out of range")?
                        .copy_from_slice(data);
                }
                Action::AtomicResult { id, value } => {
                    let b = self.nodes[node]
                        .wqe_bufs
                        .get_mut(&id.0)
                        .ok_or("AtomicResult unknown wqe")?;
                    b[..8].copy_from_slice(&value.to_le_bytes());
                }
                Action::PlaceRecv { offset, src } => {
                    let rx = rx.ok_or("PlaceRecv without packet")?;
                    let data = &rx[src.off as usize..(src.off + src.len) as usize];
                    let r = self.nodes[node]
                        .recvs
                        .front_mut()
                        .ok_or("PlaceRecv without recv")?;
                    r.buf
                        .get_mut(offset as usize..offset as usize + data.len())
                        .ok_or("PlaceRecv overflow")?
                        .copy_from_slice(data);
                }
                Action::PlaceGrh => {}
                Action::PlaceMr { rkey, va, src } => {
                    let rx = rx.ok_or("PlaceMr without packet")?;
                    let data = &rx[src.off as usize..(src.off + src.len) as usize];
                    let n = &mut self.nodes[node];
                    let o = mem_off(rkey, n.rkey, va, data.len() as u64, n.mem.len())
                        .map_err(|e| format!("PlaceMr unvalidated {e:?}"))?;
                    n.mem[o..o + data.len()].copy_from_slice(data);
                }
                Action::SendComplete(c) => self.nodes[node].send_done.push(c),
                Action::RecvComplete(c) => {
                    let r = self.nodes[node]
                        .recvs
                        .pop_front()
                        .ok_or("RecvComplete without recv")?;
                    let _ = r.id;
                    self.nodes[node].recv_done.push((c, r.buf));
                }
                Action::FlushRecvQueue => {
                    self.nodes[node].recvs.clear();
                    self.nodes[node].late_recvs = 0;
                }
                Action::ArmTimer { kind, usecs } => {
                    let k = kind as usize;
                    self.nodes[node].timer_gen[k] += 1;
                    let gen = self.nodes[node].timer_gen[k];
                    self.schedule(usecs, Ev::Timer { node, kind, gen });
                }
                Action::CancelTimer(kind) => self.nodes[node].timer_gen[kind as usize] += 1,
                Action::StateChanged(s) => {
                    if s == QpState::Error {
                        self.nodes[node].error_seen = true;
                    }
                }
                Action::Event(e) => self.nodes[node].events.push(e),
            }
        }
        Ok(())
    }

    fn pump(&mut self, node: usize) -> Result<(), String> {
        for _ in 0..100_000 {
            // Feed the backlog into the protocol window.
            while let Some(w) = self.nodes[node].backlog.front().copied() {
                let mut s = Sink::default();
                match self.nodes[node].qp.post_send(w, &mut s) {
                    Ok(()) => {
                        self.nodes[node].backlog.pop_front();
                        self.apply(node, s.0, None)?;
                    }
                    Err(PostError::Full) => break,
                    Err(e) => return Err(format!("post_send {e:?}")),
                }
            }
            let absent = self.absent(node);
            let mut s = Sink(vec![], absent.then_some(absent_payload as fn(&Action) -> _));
            let more = self.nodes[node].qp.poll_tx(8, &mut s);
            let progressed = !s.0.is_empty();
            self.apply(node, s.0, None)?;
            if !more && !progressed {
                return Ok(());
            }
        }
        Err("pump did not settle".into())
    }

    fn deliver(&mut self, to: usize, frame: Vec<u8>) -> Result<(), String> {
        let Ok(l) = locate_ib(&frame) else {
            return Ok(());
        };
        let ip_pkt = &frame[..l.ib_off + l.ib_len];
        if !icrc::verify(&self.crc, ip_pkt, false) {
            return Ok(());
        }
        let ib = &frame[l.ib_off..l.ib_off + l.ib_len];
        let Ok(p) = parse_packet(ib) else {
            return Err("valid ICRC but unparsable packet".into());
        };
        let (absent, absent_places) = (self.absent(to), self.absent(to));
        let n = &mut self.nodes[to];
        let mut s = Sink(
            vec![],
            absent_places.then_some(absent_place as fn(&Action) -> _),
        );
        let mut env = Env {
            mem: &mut n.mem,
            rkey: n.rkey,
            recvs: &n.recvs,
            absent,
        };
        let st = n.qp.on_packet(&p, &mut env, &mut s);
        if self.trace {
            eprintln!(
                "{:>8}   rx@{} {:?} psn {:#x} {:?} -> {:?} ({} actions)",
                self.now,
                to,
                p.hdrs.bth.opcode,
                p.hdrs.bth.psn.get(),
                p.hdrs.aeth.map(|a| a.kind()),
                st,
                s.0.len()
            );
        }
        let ib = ib.to_vec();
        self.apply(to, s.0, Some(&ib))?;
        self.pump(to)
    }

    fn run(&mut self, limit: u64) -> Result<(), String> {
        self.pump(0)?;
        self.pump(1)?;
        let mut steps = 0u64;
        while let Some(it) = self.heap.pop() {
            if it.t > limit {
                return Err(format!("simulated time limit reached at t={}", it.t));
            }
            steps += 1;
            if steps > 2_000_000 {
                return Err("event limit reached".into());
            }
            self.now = it.t;
            if self.clock {
                set_clock(Some(self.now));
            }
            match it.ev {
                Ev::Deliver { to, frame } => self.deliver(to, frame)?,
                Ev::Timer { node, kind, gen } => {
                    if self.nodes[node].timer_gen[kind as usize] == gen {
                        if self.trace {
                            eprintln!("{:>8} timer {:?} @{}", self.now, kind, node);
                        }
                        let mut s = Sink::default();
                        self.nodes[node].qp.on_timer(kind, &mut s);
                        self.apply(node, s.0, None)?;
                        self.pump(node)?;
                    }
                }
                Ev::PostRecvs { node } => {
                    let n = &mut self.nodes[node];
                    for i in 0..n.late_recvs {
                        n.recvs.push_back(Recv {
                            id: 10_000 + i as u64,
                            buf: vec![0; n.recv_len as usize],
                        });
                    }
                    n.late_recvs = 0;
                    self.pump(node)?;
                }
                Ev::Fault { node } => {
                    self.nodes[node].qp.fault_done();
                    self.pump(node)?;
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- workload

struct Plan {
    wqes: Vec<SendWqe>,
    expect: Vec<Expect>,
    bad: Option<usize>,
}

fn gen_plan(rng: &mut Rng, sc: Scenario, mtu: Mtu, peer_rkey: u32, dir: usize, qkey: u32) -> Plan {
    let mut wqes = vec![];
    let mut expect = vec![];
    let mut write_off = WRITE_AREA;
    let mut atomic_model = [0u64; 8];
    let n_ops = rng.range(1, 30) as usize;
    let max_len = (mtu.bytes() as u64) * 3 + 17;
    let remote = |off: usize| RemoteAddr {
        va: MEM_VA + off as u64,
        rkey: peer_rkey,
    };
    for i in 0..n_ops {
        let id = WqeId(((dir as u64) << 32) | i as u64);
        let mut w = SendWqe {
            id,
            op: SendOp::Send {
                imm: None,
                inv_rkey: None,
            },
            len: 0,
            signaled: true,
            solicited: rng.below(4) == 0,
            fence: rng.below(10) == 0,
            ud: None,
            xrc_srqn: 0,
        };
        let kind = match sc {
            Scenario::Uc => rng.below(3),
            Scenario::Ud => 0,
            Scenario::RnrFinite | Scenario::RnrLateRecv => 0,
            _ => rng.below(10),
        };
        let len = match sc {
            Scenario::Ud => rng.below(u64::from(mtu.bytes()) + 1),
            _ if rng.below(8) == 0 => 0,
            _ => rng.below(max_len + 1),
        } as usize;
        let mut data = vec![0u8; len];
        rng.fill(&mut data);
        let imm = if rng.below(3) == 0 {
            Some(rng.next() as u32)
        } else {
            None
        };
        let e = match kind {
            0 => {
                w.op = SendOp::Send {
                    imm,
                    inv_rkey: None,
                };
                w.len = len as u32;
                if sc == Scenario::Ud {
                    w.ud = Some(UdDest {
                        qpn: 0,
                        qkey: if rng.below(5) == 0 { qkey ^ 1 } else { qkey },
                    });
                }
                Expect::Send {
                    data: data.clone(),
                    imm,
                }
            }
            1 | 2 => {
                if write_off + len > READ_AREA {
                    break;
                }
                let imm = if kind == 2 { imm } else { None };
                w.op = SendOp::Write {
                    remote: remote(write_off),
                    imm,
                };
                w.len = len as u32;
                let e = Expect::Write {
                    off: write_off,
                    data: data.clone(),
                    imm,
                };
                write_off += len;
                e
            }
            3 | 4 => {
                let off = READ_AREA + rng.below((MEM - READ_AREA - len) as u64) as usize;
                w.op = SendOp::Read {
                    remote: remote(off),
                };
                w.len = len as u32;
                data = vec![0u8; len];
                Expect::Read { off, len }
            }
            5 | 6 => {
                let slot = rng.below(2) as usize;
                let cur = atomic_model[slot];
                let r = remote(ATOMIC_AREA + slot * 8);
                if kind == 5 {
                    let add = rng.below(1000);
                    w.op = SendOp::FetchAdd { remote: r, add };
                    atomic_model[slot] = cur.wrapping_add(add);
                } else {
                    let compare = if rng.below(2) == 0 { cur } else { cur ^ 1 };
                    let swap = rng.next();
                    w.op = SendOp::CompareSwap {
                        remote: r,
                        compare,
                        swap,
                    };
                    if compare == cur {
                        atomic_model[slot] = swap;
                    }
                }
                w.len = 8;
                data = vec![0u8; 8];
                Expect::Atomic { orig: cur }
            }
            7 => {
                let slot = 2 + rng.below(6) as usize;
                let value = rng.next();
                w.op = SendOp::AtomicWrite {
                    remote: remote(ATOMIC_AREA + slot * 8),
                    value,
                };
                w.len = 8;
                data = vec![0u8; 8];
                Expect::AtomicWrite {
                    off: ATOMIC_AREA + slot * 8,
                    value,
                }
            }
            8 => {
                w.op = SendOp::Flush {
                    remote: remote(WRITE_AREA),
                    sel: 1,
                    plt: 1,
                };
                w.len = 64;
                data = vec![];
                Expect::Flush
            }
            _ => {
                w.op = SendOp::Send {
                    imm,
                    inv_rkey: None,
                };
                w.len = len as u32;
                Expect::Send {
                    data: data.clone(),
                    imm,
                }
            }
        };
        let _ = data;
        wqes.push(w);
        expect.push(e);
    }
    let mut bad = None;
    if sc == Scenario::BadRkey {
        let cands: Vec<usize> = wqes
            .iter()
            .enumerate()
            .filter(|(_, w)| match w.op {
                SendOp::Write { .. } | SendOp::Read { .. } => w.len > 0,
                SendOp::FetchAdd { .. } | SendOp::CompareSwap { .. } => true,
                _ => false,
            })
            .map(|(i, _)| i)
            .collect();
        if !cands.is_empty() {
            let k = cands[rng.below(cands.len() as u64) as usize];
            match &mut wqes[k].op {
                SendOp::Write { remote, .. }
                | SendOp::Read { remote }
                | SendOp::FetchAdd { remote, .. }
                | SendOp::CompareSwap { remote, .. } => remote.rkey ^= 0x5a5a,
                _ => {}
            }
            bad = Some(k);
        }
    }
    Plan { wqes, expect, bad }
}

fn wqe_buf(w: &SendWqe, e: &Expect) -> Vec<u8> {
    match e {
        Expect::Send { data, .. } | Expect::Write { data, .. } => data.clone(),
        _ => vec![0u8; w.len as usize],
    }
}

// ---------------------------------------------------------------- one seed

fn run_seed(seed: u64, verbose: bool) -> Result<(), String> {
    let mut rng = Rng(seed ^ 0x5eed_0000_0000_0000);
    let sc = match seed % 10 {
        0..=3 => Scenario::Lossy,
        4 => Scenario::Cut,
        5 => Scenario::BadRkey,
        6 => Scenario::RnrFinite,
        7 => Scenario::RnrLateRecv,
        8 => Scenario::Uc,
        _ => Scenario::Ud,
    };
    let mtu = [Mtu::M256, Mtu::M512, Mtu::M1024][rng.below(3) as usize];
    let qp_type = match sc {
        Scenario::Uc => QpType::Uc,
        Scenario::Ud => QpType::Ud,
        _ => QpType::Rc,
    };
    let near_wrap = rng.below(3) == 0;
    let mut psn = || {
        if near_wrap {
            Psn::new(0x00ff_ffff - rng.below(40) as u32)
        } else {
            Psn::new(rng.next() as u32)
        }
    };
    let (psn_a, psn_b) = (psn(), psn());
    let qkey = 0x1111_0000 | (seed as u32 & 0xfff);
    let lossy = matches!(
        sc,
        Scenario::Lossy | Scenario::Cut | Scenario::Uc | Scenario::Ud
    );
    let link = LinkCfg {
        loss_ppm: if lossy {
            rng.below(50_000) as u32
        } else if sc == Scenario::BadRkey {
            0
        } else {
            rng.below(20_000) as u32
        },
        dup_ppm: rng.below(30_000) as u32,
        corrupt_ppm: if sc == Scenario::BadRkey {
            0
        } else {
            rng.below(20_000) as u32
        },
        delay_min: rng.range(1, 20),
        jitter: if sc == Scenario::BadRkey {
            0
        } else {
            rng.below(60)
        },
        cut_at: None,
    };
    let mk_cfg = |qpn: u32, dest: u32, sq: Psn, rq: Psn, rng: &mut Rng| QpConfig {
        qpn,
        qp_type,
        dest_qpn: dest,
        qkey,
        mtu,
        sq_psn: sq,
        rq_psn: rq,
        timeout: 8, // ~1 ms
        retry_cnt: 7,
        rnr_retry: match sc {
            Scenario::RnrFinite => rng.below(7) as u8,
            _ => 7,
        },
        min_rnr_timer: rng.range(1, 6) as u8,
        max_rd_atomic: rng.range(1, 16) as u8,
        max_inflight: [4, 32, 256, 1024][rng.below(4) as usize],
        read_chunk: [1, 2, 64][rng.below(3) as usize],
        ..QpConfig::default()
    };
    let cfgs = [
        mk_cfg(0x11, 0x22, psn_a, psn_b, &mut rng),
        mk_cfg(0x22, 0x11, psn_b, psn_a, &mut rng),
    ];
    let mk_node = |i: usize, rng: &mut Rng| {
        let mut mem = vec![0u8; MEM];
        rng.fill(&mut mem[READ_AREA..]);
        Node {
            qp: TheQp::new(cfgs[i]),
            mem,
            rkey: 0x1000 + i as u32,
            recvs: VecDeque::new(),
            late_recvs: 0,
            recv_len: 0,
            wqe_bufs: HashMap::new(),
            backlog: VecDeque::new(),
            send_done: vec![],
            recv_done: vec![],
            timer_gen: [0; 2],
            addr: [10, 0, 0, 1 + i as u8],
            error_seen: false,
            events: vec![],
        }
    };
    let nodes = [mk_node(0, &mut rng), mk_node(1, &mut rng)];
    let mut w = World {
        nodes,
        rng: Rng(seed.wrapping_mul(31) ^ 0xabcdef),
        now: 0,
        seq: 0,
        heap: BinaryHeap::new(),
        link,
        crc: SoftCrc32,
        ud: sc == Scenario::Ud,
        stats_pkts: 0,
        trace: verbose && std::env::var("RRXE_SIM_TRACE").is_ok(),
        clock: (seed / 10) % 2 == 1,
        odp_ppm: 0,
    };
    if matches!(seed % 10, 3 | 8 | 9) && (seed / 10).is_multiple_of(2) {
        w.odp_ppm = rng.range(20_000, 300_000) as u32;
    }
    set_clock(None);
    let _ = w.ud;
    // Bring both QPs up.
    for i in 0..2 {
        to_rts(&mut w.nodes[i].qp, &mut Sink::default()).map_err(|e| format!("modify {e:?}"))?;
    }
    // Workloads. Bidirectional except for error scenarios.
    let bidir = matches!(
        sc,
        Scenario::Lossy | Scenario::Cut | Scenario::Uc | Scenario::Ud
    );
    let mut plans = vec![];
    for dir in 0..2 {
        let peer_rkey = w.nodes[1 - dir].rkey;
        let mut p = gen_plan(&mut rng, sc, mtu, peer_rkey, dir, qkey);
        if dir == 1 && !bidir {
            p.wqes.clear();
            p.expect.clear();
        }
        if sc == Scenario::Ud {
            for wq in &mut p.wqes {
                if let Some(d) = &mut wq.ud {
                    d.qpn = cfgs[1 - dir].qpn;
                }
            }
        }
        plans.push(p);
    }
    for dir in 0..2 {
        let peer = 1 - dir;
        let n_recv = plans[dir]
            .expect
            .iter()
            .filter(|e| matches!(e, Expect::Send { .. } | Expect::Write { imm: Some(_), .. }))
            .count();
        let recv_len = (u64::from(mtu.bytes()) * 3 + 17 + 40) as u32;
        w.nodes[peer].recv_len = recv_len;
        match sc {
            Scenario::RnrFinite => {}
            Scenario::RnrLateRecv => {
                w.nodes[peer].late_recvs = n_recv;
            }
            _ => {
                for i in 0..n_recv + 2 {
                    w.nodes[peer].recvs.push_back(Recv {
                        id: i as u64,
                        buf: vec![0; recv_len as usize],
                    });
                }
            }
        }
        for (wq, e) in plans[dir].wqes.iter().zip(&plans[dir].expect) {
            w.nodes[dir].wqe_bufs.insert(wq.id.0, wqe_buf(wq, e));
            w.nodes[dir].backlog.push_back(*wq);
        }
    }
    if sc == Scenario::RnrLateRecv {
        let t = rng.range(10, 3000);
        w.schedule(t, Ev::PostRecvs { node: 1 });
    }
    if sc == Scenario::Cut {
        w.link.cut_at = Some(rng.range(0, 3000));
    }
    w.run(60_000_000)?;
    if verbose {
        eprintln!(
            "seed {seed}: {sc:?} mtu {:?} link {:?} odp {} ppm pkts {} t={}us ops {}/{}",
            mtu,
            w.link,
            w.odp_ppm,
            w.stats_pkts,
            w.now,
            plans[0].wqes.len(),
            plans[1].wqes.len()
        );
    }
    // ------------------------------------------------------------ checks
    for dir in 0..2 {
        let plan = &plans[dir];
        let me = &w.nodes[dir];
        let peer = &w.nodes[1 - dir];
        let done = &me.send_done;
        if done.len() != plan.wqes.len() {
            return Err(format!(
                "dir {dir}: {} of {} WQEs completed (deadlock?) backlog {} state {:?}",
                done.len(),
                plan.wqes.len(),
                me.backlog.len(),
                me.qp.state()
            ));
        }
        for (i, (c, wq)) in done.iter().zip(&plan.wqes).enumerate() {
            if c.id != wq.id {
                return Err(format!(
                    "dir {dir}: completion {i} out of order: {:?} vs {:?}",
                    c.id, wq.id
                ));
            }
        }
        let statuses: Vec<WcStatus> = done.iter().map(|c| c.status).collect();
        // Both QPs went to RTS before any packet (no Communication Established), and the
        // errors of the other scenarios (retries exceeded on a cut link, RNR retries
        // exceeded) are the requester's, which its completions report: no event.
        if sc != Scenario::BadRkey && !me.events.is_empty() {
            return Err(format!("dir {dir}: unexpected QP events {:?}", me.events));
        }
        // Expected status pattern.
        match sc {
            Scenario::Lossy | Scenario::RnrLateRecv | Scenario::Uc | Scenario::Ud => {
                if let Some(i) = statuses.iter().position(|s| *s != WcStatus::Success) {
                    return Err(format!(
                        "dir {dir}: WQE {i} {:?} failed: {:?}",
                        plan.wqes[i].op, statuses[i]
                    ));
                }
            }
            Scenario::Cut => {
                let ok = statuses
                    .iter()
                    .take_while(|s| **s == WcStatus::Success)
                    .count();
                if ok < statuses.len() {
                    if statuses[ok] != WcStatus::RetryExcErr {
                        return Err(format!("dir {dir}: cut: WQE {ok} got {:?}", statuses[ok]));
                    }
                    if statuses[ok + 1..]
                        .iter()
                        .any(|s| *s != WcStatus::WrFlushErr)
                    {
                        return Err(format!(
                            "dir {dir}: cut: non-flush after error: {statuses:?}"
                        ));
                    }
                }
            }
            Scenario::BadRkey => {
                if dir == 0 {
                    // The responder reports the R_Key violation to its consumer: no receive
                    // WQE completes with it.
                    let want: &[QpEvent] = if plan.bad.is_some() {
                        &[QpEvent::AccessErr]
                    } else {
                        &[]
                    };
                    if peer.events != want {
                        return Err(format!(
                            "dir {dir}: bad rkey: responder events {:?}, want {want:?}",
                            peer.events
                        ));
                    }
                    let k = plan.bad.unwrap_or(usize::MAX);
                    for (i, s) in statuses.iter().enumerate() {
                        let want = match i.cmp(&k) {
                            Ordering::Less => WcStatus::Success,
                            Ordering::Equal => WcStatus::RemAccessErr,
                            Ordering::Greater => WcStatus::WrFlushErr,
                        };
                        if *s != want {
                            return Err(format!(
                                "dir {dir}: bad rkey at {k}: WQE {i} got {s:?} want {want:?}"
                            ));
                        }
                    }
                }
            }
            Scenario::RnrFinite => {
                let first_send = plan.wqes.iter().position(|_| true);
                if let Some(k) = first_send {
                    if statuses[k] != WcStatus::RnrRetryExcErr
                        || statuses[k + 1..].iter().any(|s| *s != WcStatus::WrFlushErr)
                    {
                        return Err(format!("dir {dir}: rnr finite: {statuses:?}"));
                    }
                }
            }
        }
        // Data checks for successful WQEs.
        let mut recv_exp: Vec<(Vec<u8>, Option<u32>, bool)> = vec![];
        for (i, (wq, e)) in plan.wqes.iter().zip(&plan.expect).enumerate() {
            let okc = statuses[i] == WcStatus::Success;
            let buf = &me.wqe_bufs[&wq.id.0];
            match e {
                Expect::Send { data, imm } => {
                    if sc != Scenario::Ud || wq.ud.map(|d| d.qkey) == Some(qkey) {
                        recv_exp.push((data.clone(), *imm, okc));
                    }
                }
                Expect::Write { off, data, imm } => {
                    if okc && sc != Scenario::Uc && peer.mem[*off..off + data.len()] != data[..] {
                        return Err(format!("dir {dir}: WRITE {i} data mismatch at {off}"));
                    }
                    if let Some(im) = imm {
                        recv_exp.push((vec![0xEE; data.len()], Some(*im), okc));
                    }
                }
                Expect::Read { off, len } => {
                    if okc && buf[..*len] != peer.mem[*off..off + len] {
                        return Err(format!("dir {dir}: READ {i} data mismatch (len {len})"));
                    }
                }
                Expect::Atomic { orig } => {
                    if okc && u64::from_le_bytes(buf[..8].try_into().unwrap()) != *orig {
                        return Err(format!(
                            "dir {dir}: atomic {i} returned wrong original value"
                        ));
                    }
                }
                Expect::AtomicWrite { .. } | Expect::Flush => {}
            }
        }
        // The last successful ATOMIC WRITE per slot must be in memory (if
        // nothing later targets the slot).
        let mut last_aw: HashMap<usize, u64> = HashMap::new();
        for (i, e) in plan.expect.iter().enumerate() {
            if let (Expect::AtomicWrite { off, value }, WcStatus::Success) = (e, statuses[i]) {
                last_aw.insert(*off, *value);
            }
        }
        if matches!(sc, Scenario::Lossy) {
            for (off, v) in last_aw {
                if u64::from_le_bytes(peer.mem[off..off + 8].try_into().unwrap()) != v {
                    return Err(format!("dir {dir}: ATOMIC WRITE value missing at {off}"));
                }
            }
        }
        // Receive side: exactly-once in-order (RC), subsequence (UC), membership (UD).
        let got = &peer.recv_done;
        let got_ok: Vec<&(RecvCompletion, Vec<u8>)> = got
            .iter()
            .filter(|(c, _)| c.status == WcStatus::Success)
            .collect();
        let matches = |exp: &(Vec<u8>, Option<u32>, bool), g: &(RecvCompletion, Vec<u8>)| -> bool {
            let (c, b) = g;
            if c.imm != exp.1 {
                return false;
            }
            if exp.0.iter().all(|x| *x == 0xEE) && c.kind == RecvKind::WriteImm {
                return c.byte_len as usize == exp.0.len();
            }
            let base = if sc == Scenario::Ud { 40 } else { 0 };
            c.kind == RecvKind::Send
                && c.byte_len as usize == exp.0.len() + base
                && b[base..base + exp.0.len()] == exp.0[..]
        };
        match sc {
            Scenario::Uc => {
                let mut j = 0;
                for g in &got_ok {
                    while j < recv_exp.len() && !matches(&recv_exp[j], g) {
                        j += 1;
                    }
                    if j == recv_exp.len() {
                        return Err(format!("dir {dir}: UC delivered an unexpected / reordered / duplicated message"));
                    }
                    j += 1;
                }
            }
            Scenario::Ud => {
                for g in &got_ok {
                    if !recv_exp.iter().any(|e| matches(e, g)) {
                        return Err(format!("dir {dir}: UD delivered an unknown message"));
                    }
                }
            }
            _ => {
                // Every successfully completed message was delivered, in
                // order, exactly once; nothing else was delivered.
                let must = recv_exp.iter().filter(|e| e.2).count();
                if got_ok.len() < must || got_ok.len() > recv_exp.len() {
                    return Err(format!(
                        "dir {dir}: {} messages delivered, {} completed OK, {} posted",
                        got_ok.len(),
                        must,
                        recv_exp.len()
                    ));
                }
                for (k, g) in got_ok.iter().enumerate() {
                    if !matches(&recv_exp[k], g) {
                        return Err(format!("dir {dir}: message {k} mismatch / out of order"));
                    }
                }
            }
        }
    }
    Ok(())
}

fn env_u64(k: &str) -> Option<u64> {
    std::env::var(k).ok().and_then(|v| v.parse().ok())
}

#[test]
fn simulate_seeds() {
    if let Some(s) = env_u64("RRXE_SIM_SEED") {
        if let Err(e) = run_seed(s, true) {
            panic!("seed {s} FAILED: {e}");
        }
        return;
    }
    let n = env_u64("RRXE_SIM_SEEDS").unwrap_or(2000);
    let start = env_u64("RRXE_SIM_START").unwrap_or(0);
    let mut failures = vec![];
    for s in start..start + n {
        if let Err(e) = run_seed(s, false) {
            eprintln!("seed {s} FAILED: {e} (reproduce: RRXE_SIM_SEED={s})");
            failures.push(s);
            if failures.len() >= 20 {
                break;
            }
        }
    }
    assert!(failures.is_empty(), "failing seeds: {failures:?}");
}
