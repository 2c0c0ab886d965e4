// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! A simulated link between hosts, for READs (`sim_slow.rs`, `sim_read_loss.rs`): RC QP
//! pairs whose requesters (side 0) READ from the responders' (side 1) memory, over one
//! FIFO link per direction that serialises every packet, now and then stalls and, with
//! [`Netem`], loses, reorders and duplicates packets.
//!
//! # The driver's runs
//!
//! With a CPU cost per packet ([`World::cpu_us`]), each side works as `qp/run.rs` does:
//! packets and fired timers wait in the QP until its next run; a run takes up to
//! [`RX_BUDGET`] received packets, then the timers that fired, then one `poll_tx` of
//! [`TX_BUDGET`] packets, and costs the CPU time of the packets it handled; another run
//! follows while work is left. So a responder's READ responses stay queued across runs
//! while requests keep arriving, as on a slow (KASAN) guest. Without (the simple model),
//! every queue is drained at once.

use super::{to_rts, wqe, Rng, Sink};
use rrxe_proto::*;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

pub type TheQp = Qp<64, 16>;
/// The size of the responders' memory.
pub const MEM: usize = 256 * 1024;
const MEM_VA: u64 = 0x5000_0000_0000;
const RKEY: u32 = 0x4242;

/// The driver's budgets (`qp/mod.rs`).
const RX_BUDGET: usize = 64;
const TX_BUDGET: u32 = 64;

/// The responder's memory: a fixed pattern.
struct Mem(Vec<u8>);

impl ResponderEnv for Mem {
    fn check_access(&mut self, rkey: u32, va: u64, len: u32, _: Access) -> Result<(), AccessError> {
        let off = va.checked_sub(MEM_VA).ok_or(AccessError::OutOfBounds)?;
        if rkey != RKEY {
            return Err(AccessError::BadKey);
        }
        if off + u64::from(len) > self.0.len() as u64 {
            return Err(AccessError::OutOfBounds);
        }
        Ok(())
    }
    fn atomic(&mut self, _: u32, _: u64, _: AtomicOp) -> Result<u64, AccessError> {
        Err(AccessError::BadKey)
    }
    fn atomic_write(&mut self, _: u32, _: u64, _: u64) -> Result<(), AccessError> {
        Err(AccessError::BadKey)
    }
    fn recv_head_len(&mut self) -> Option<u32> {
        None
    }
}

/// A recording sink with the simulated clock (`None`: a driver without one).
struct TSink(Sink, Option<u64>);

impl TSink {
    fn new(w: &World) -> Self {
        TSink(Sink::default(), w.clock.then_some(w.now))
    }
}

impl ActionSink for TSink {
    fn push(&mut self, a: Action) {
        self.0.push(a);
    }
    fn now_us(&self) -> Option<u64> {
        self.1
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Link {
    /// Serialisation time of one packet (µs).
    pub per_pkt: u64,
    /// Propagation delay (µs).
    pub delay: u64,
    /// A stall of `stall` µs before a packet, with this probability (ppm).
    pub stall_ppm: u32,
    pub stall: u64,
    /// Faults (`None`: none, and no random numbers drawn for them).
    pub netem: Option<Netem>,
}

/// netem: loss, reordering (the packet skips the link's `delay`) and duplication (ppm).
#[derive(Clone, Copy, Debug)]
pub struct Netem {
    pub loss_ppm: u32,
    pub reorder_ppm: u32,
    pub dup_ppm: u32,
}

/// One QP pair and its READs (or WRITEs).
pub struct Pair {
    /// The requester (0) and the responder (1).
    pub qps: [TheQp; 2],
    /// [side][timer kind]: the generation of the timer armed last.
    timer_gen: [[u64; 2]; 2],
    /// The READs (remote offset, len), WQE ids from 0; or, with `write`, the WRITEs.
    reads: Vec<(usize, u32)>,
    /// The operations are WRITEs of `bufs` to the responder's memory, not READs into them.
    write: bool,
    /// How many of `reads` were posted.
    posted: usize,
    /// The READ destination (WRITE source) buffers by WQE id.
    bufs: Vec<Vec<u8>>,
    pub done: Vec<SendCompletion>,
    /// The run model, [side]: packets waiting for the next run, fired timers, a run
    /// scheduled.
    rxq: [VecDeque<Vec<u8>>; 2],
    fired: [[bool; 2]; 2],
    run_scheduled: [bool; 2],
}

pub struct World {
    rng: Rng,
    pub link: Link,
    pub now: u64,
    seq: u64,
    /// (time, seq, event)
    heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
    events: Vec<Option<Ev>>,
    /// Per direction (0: requester → responder): when the link is free again.
    busy_until: [u64; 2],
    mem: Mem,
    pub pairs: Vec<Pair>,
    /// Packets sent, lost (tail drops included), dropped at a full receiver.
    pub pkts: u64,
    pub lost: u64,
    pub tail_drops: u64,
    /// A receiver that holds at most this many packets (a guest's virtio ring): tail drop.
    pub qlim: Option<u64>,
    /// A fired timer is handled up to this many µs later (0: at once).
    pub late_fire: u64,
    /// Whether the QPs' sinks have a clock: the timeout then follows the round trip
    /// (`req/rtt.rs`); without, it stays at the QP's.
    pub clock: bool,
    /// Trace pair 0 on stderr.
    pub trace: bool,
    /// The driver's runs (module docs): CPU µs per packet handled (0: no run model).
    pub cpu_us: u64,
    /// Per side (one CPU each): when it is free again.
    cpu_free: [u64; 2],
    /// Per side: until when its host does not run it at all ([`World::stall_host`]).
    stalled_until: [u64; 2],
    /// The run model takes fired timers before received packets, as `qp/run.rs` did
    /// before it took the packets first (to compare the two).
    pub timers_first: bool,
}

enum Ev {
    Deliver {
        to: usize,
        pair: usize,
        ib: Vec<u8>,
    },
    Timer {
        pair: usize,
        kind: TimerKind,
        gen: u64,
    },
    /// A timer that fired: the driver's run handles it later (`qp/run.rs`: the fired bit
    /// stays set whatever re-arms the timer meanwhile).
    Fired {
        pair: usize,
        kind: TimerKind,
    },
    /// A run of the driver's QP work (the run model).
    Run {
        side: usize,
        pair: usize,
    },
    /// The host stops running `side` for `len` µs.
    HostStall {
        side: usize,
        len: u64,
    },
}

/// A random first PSN.
pub fn random_psn(rng: &mut Rng) -> Psn {
    Psn::new(rng.next() as u32 & 0xff_ffff)
}

impl World {
    /// A world without QP pairs whose responders' memory is `mem` ([`MEM`] bytes), its
    /// link's random numbers from `rng`; the knobs at their defaults (no tail drop,
    /// timers handled at once, a clock, no trace, no run model).
    pub fn new(rng: Rng, link: Link, mem: Vec<u8>) -> Self {
        World {
            rng,
            link,
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            events: vec![],
            busy_until: [0; 2],
            mem: Mem(mem),
            pairs: vec![],
            pkts: 0,
            lost: 0,
            tail_drops: 0,
            qlim: None,
            late_fire: 0,
            clock: true,
            trace: false,
            cpu_us: 0,
            cpu_free: [0; 2],
            stalled_until: [0; 2],
            timers_first: false,
        }
    }

    /// The run model: from `at` µs, `side`'s host does not run it for `len` µs (a guest
    /// whose vCPU the host did not schedule): packets for it queue, its timers fire, and
    /// its runs wait until the stall ends.
    pub fn stall_host(&mut self, side: usize, at: u64, len: u64) {
        self.schedule(at, Ev::HostStall { side, len });
    }

    /// Adds an RC QP pair (QPNs 0x100 + 2 × its index and the next, in RTS; `psn`: the
    /// requester's and the responder's first PSN, the rest of `cfg` as given) whose
    /// requester is to READ `reads` (remote offset, length), in order.
    pub fn add_pair(
        &mut self,
        psn: [Psn; 2],
        cfg: QpConfig,
        reads: Vec<(usize, u32)>,
    ) -> Result<(), String> {
        self.add_pair_ops(psn, cfg, reads, false)
    }

    /// As [`World::add_pair`], but the requester WRITEs random bytes to `writes` (remote
    /// offset, length: the caller keeps them apart, [`World::check`] compares each).
    pub fn add_write_pair(
        &mut self,
        psn: [Psn; 2],
        cfg: QpConfig,
        writes: Vec<(usize, u32)>,
    ) -> Result<(), String> {
        self.add_pair_ops(psn, cfg, writes, true)
    }

    fn add_pair_ops(
        &mut self,
        psn: [Psn; 2],
        cfg: QpConfig,
        reads: Vec<(usize, u32)>,
        write: bool,
    ) -> Result<(), String> {
        let pair = self.pairs.len();
        let (a, b) = (0x100 + 2 * pair as u32, 0x101 + 2 * pair as u32);
        let [pa, pb] = psn;
        let qp = |qpn, dest_qpn, sq_psn, rq_psn| {
            let mut q = TheQp::new(QpConfig {
                qpn,
                qp_type: QpType::Rc,
                dest_qpn,
                sq_psn,
                rq_psn,
                ..cfg
            });
            to_rts(&mut q, &mut Sink::default()).map_err(|e| format!("modify {e:?}"))?;
            Ok::<_, String>(q)
        };
        let qps = [qp(a, b, pa, pb)?, qp(b, a, pb, pa)?];
        let rng = &mut self.rng;
        self.pairs.push(Pair {
            qps,
            timer_gen: [[0; 2]; 2],
            bufs: reads
                .iter()
                .map(|&(_, len)| {
                    let mut b = vec![0; len as usize];
                    if write {
                        rng.fill(&mut b);
                    }
                    b
                })
                .collect(),
            reads,
            write,
            posted: 0,
            done: vec![],
            rxq: [VecDeque::new(), VecDeque::new()],
            fired: [[false; 2]; 2],
            run_scheduled: [false; 2],
        });
        Ok(())
    }

    /// The requesters' statistics.
    pub fn stats(&self) -> Vec<SqStats> {
        self.pairs
            .iter()
            .map(|p| p.qps[0].send_queue().stats())
            .collect()
    }

    /// Whether every READ completed, in order, with the data of the responder's memory
    /// (every WRITE: with its data in that memory).
    pub fn check(&self) -> Result<(), String> {
        for (pair, p) in self.pairs.iter().enumerate() {
            let want = p.reads.len();
            if p.done.len() != want {
                return Err(format!(
                    "pair {pair}: {} of {want} operations completed",
                    p.done.len()
                ));
            }
            for (i, c) in p.done.iter().enumerate() {
                if c.id != WqeId(i as u64) || c.status != WcStatus::Success {
                    return Err(format!("pair {pair}: completion {i}: {c:?}"));
                }
                let (off, len) = p.reads[i];
                if p.bufs[i][..] != self.mem.0[off..off + len as usize] {
                    return Err(format!("pair {pair}: operation {i} data differs"));
                }
            }
        }
        Ok(())
    }

    fn schedule(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.events.push(Some(ev));
        self.heap
            .push(Reverse((t, self.seq, self.events.len() - 1)));
    }

    fn transmit(&mut self, side: usize, pair: usize, pkt: &TxPacket) {
        let plen = pkt.payload.len() as usize;
        let mut ib = vec![0u8; 64 + plen + 8];
        let hl = build_headers(&pkt.hdrs, plen as u32, &mut ib).expect("build");
        let payload: Vec<u8> = match pkt.payload {
            Payload::None => vec![],
            Payload::Mr { va, len, .. } => {
                let o = (va - MEM_VA) as usize;
                self.mem.0[o..o + len as usize].to_vec()
            }
            Payload::Inline(b) => b.to_vec(),
            Payload::Wqe { id, offset, len } => {
                let b = &self.pairs[pair].bufs[id.0 as usize];
                b[offset as usize..(offset + len) as usize].to_vec()
            }
        };
        ib[hl..hl + plen].copy_from_slice(&payload);
        let pad = (4 - plen % 4) % 4;
        ib.truncate(hl + plen + pad + 4);
        self.pkts += 1;
        let Some(netem) = self.link.netem else {
            self.enqueue(side, pair, ib);
            return;
        };
        if self.rng.ppm(netem.loss_ppm) {
            self.lost += 1;
            return;
        }
        let copies = if self.rng.ppm(netem.dup_ppm) { 2 } else { 1 };
        for _ in 0..copies {
            self.enqueue(side, pair, ib.clone());
        }
    }

    fn enqueue(&mut self, side: usize, pair: usize, ib: Vec<u8>) {
        if let Some(q) = self.qlim {
            if self.busy_until[side].saturating_sub(self.now) / self.link.per_pkt > q {
                self.lost += 1;
                self.tail_drops += 1;
                return;
            }
        }
        let mut start = self.now.max(self.busy_until[side]);
        if self.rng.ppm(self.link.stall_ppm) {
            start += self.link.stall;
        }
        self.busy_until[side] = start + self.link.per_pkt;
        let reordered = match self.link.netem {
            Some(n) => self.rng.ppm(n.reorder_ppm),
            None => false,
        };
        let delay = if reordered { 0 } else { self.link.delay };
        let t = self.busy_until[side] + delay;
        self.schedule(
            t,
            Ev::Deliver {
                to: 1 - side,
                pair,
                ib,
            },
        );
    }

    fn apply(&mut self, side: usize, pair: usize, acts: Vec<Action>, rx: Option<&[u8]>) {
        for a in acts {
            match a {
                Action::Send(p) => self.transmit(side, pair, &p),
                Action::PlaceWqe { id, offset, src } => {
                    let rx = rx.expect("PlaceWqe without a packet");
                    let data = &rx[src.off as usize..(src.off + src.len) as usize];
                    let b = &mut self.pairs[pair].bufs[id.0 as usize];
                    b[offset as usize..offset as usize + data.len()].copy_from_slice(data);
                }
                Action::PlaceMr { va, src, .. } => {
                    let rx = rx.expect("PlaceMr without a packet");
                    let data = &rx[src.off as usize..(src.off + src.len) as usize];
                    let o = (va - MEM_VA) as usize;
                    self.mem.0[o..o + data.len()].copy_from_slice(data);
                }
                Action::SendComplete(c) => self.pairs[pair].done.push(c),
                Action::ArmTimer { kind, usecs } => {
                    let g = &mut self.pairs[pair].timer_gen[side][kind as usize];
                    *g += 1;
                    let gen = *g;
                    assert_eq!(side, 0, "only the requester arms timers");
                    self.schedule(self.now + usecs, Ev::Timer { pair, kind, gen });
                }
                Action::CancelTimer(kind) => {
                    self.pairs[pair].timer_gen[side][kind as usize] += 1;
                }
                _ => {}
            }
        }
    }

    /// Posts the READs still to post while the send queue has room.
    fn post_backlog(&mut self, pair: usize) {
        while let Some(&(off, len)) = self.pairs[pair].reads.get(self.pairs[pair].posted) {
            let remote = RemoteAddr {
                va: MEM_VA + off as u64,
                rkey: RKEY,
            };
            let id = self.pairs[pair].posted as u64;
            let op = if self.pairs[pair].write {
                SendOp::Write { remote, imm: None }
            } else {
                SendOp::Read { remote }
            };
            let w = wqe(id, op, len);
            let mut s = TSink::new(self);
            match self.pairs[pair].qps[0].post_send(w, &mut s) {
                Ok(()) => {
                    self.pairs[pair].posted += 1;
                    self.apply(0, pair, s.0 .0, None);
                }
                Err(PostError::Full) => break,
                Err(e) => panic!("post_send {e:?}"),
            }
        }
    }

    fn pump(&mut self, side: usize, pair: usize) {
        if self.cpu_us > 0 {
            self.kick(side, pair);
            return;
        }
        loop {
            if side == 0 {
                self.post_backlog(pair);
            }
            let mut s = TSink::new(self);
            let more = self.pairs[pair].qps[side].poll_tx(16, &mut s);
            let progressed = !s.0 .0.is_empty();
            self.apply(side, pair, s.0 .0, None);
            if !more && !progressed {
                return;
            }
        }
    }

    /// The run model: schedules the QP's next run if none is.
    fn kick(&mut self, side: usize, pair: usize) {
        if !self.pairs[pair].run_scheduled[side] {
            self.pairs[pair].run_scheduled[side] = true;
            let t = self
                .now
                .max(self.cpu_free[side])
                .max(self.stalled_until[side]);
            self.schedule(t, Ev::Run { side, pair });
        }
    }

    /// The run model: one run of `qp/run.rs` (received packets, timers, transmit).
    fn drive(&mut self, side: usize, pair: usize) -> Result<(), String> {
        if self.now < self.stalled_until[side] {
            // Scheduled before the stall began: it runs when the stall ends.
            self.schedule(self.stalled_until[side], Ev::Run { side, pair });
            return Ok(());
        }
        self.pairs[pair].run_scheduled[side] = false;
        let mut handled = 0u64;
        if self.timers_first {
            self.drive_timers(side, pair);
        }
        for _ in 0..RX_BUDGET {
            let Some(ib) = self.pairs[pair].rxq[side].pop_front() else {
                break;
            };
            self.receive(side, pair, &ib)?;
            handled += 1;
        }
        if !self.timers_first {
            self.drive_timers(side, pair);
        }
        if side == 0 {
            self.post_backlog(pair);
        }
        let mut s = TSink::new(self);
        let more = self.pairs[pair].qps[side].poll_tx(TX_BUDGET, &mut s);
        handled +=
            s.0 .0
                .iter()
                .filter(|a| matches!(a, Action::Send(_)))
                .count() as u64;
        self.apply(side, pair, s.0 .0, None);
        self.cpu_free[side] = self.now + handled.max(1) * self.cpu_us;
        let p = &self.pairs[pair];
        if more || !p.rxq[side].is_empty() || p.fired[side].contains(&true) {
            self.kick(side, pair);
        }
        Ok(())
    }

    /// The run model: a run's step for the timers that fired.
    fn drive_timers(&mut self, side: usize, pair: usize) {
        for id in 0..2 {
            if std::mem::take(&mut self.pairs[pair].fired[side][id]) {
                let kind = if id == 0 {
                    TimerKind::Retransmit
                } else {
                    TimerKind::Rnr
                };
                let mut s = TSink::new(self);
                self.pairs[pair].qps[side].on_timer(kind, &mut s);
                self.apply(side, pair, s.0 .0, None);
            }
        }
    }

    fn receive(&mut self, to: usize, pair: usize, ib: &[u8]) -> Result<(), String> {
        let p = parse_packet(ib).map_err(|e| format!("parse {e:?}"))?;
        let mut s = TSink::new(self);
        let st = self.pairs[pair].qps[to].on_packet(&p, &mut self.mem, &mut s);
        if self.trace && pair == 0 {
            eprintln!(
                "{:>8} rx@{to} {:?} psn {:#x} -> {st:?} una {:#x} q {}",
                self.now,
                p.hdrs.bth.opcode,
                p.hdrs.bth.psn.get(),
                self.pairs[0].qps[0].send_queue().una().get(),
                self.busy_until[1].saturating_sub(self.now)
            );
        }
        self.apply(to, pair, s.0 .0, Some(ib));
        Ok(())
    }

    /// The requester's timer `kind` fired and is handled now (`what` for the trace).
    fn on_timer(&mut self, pair: usize, kind: TimerKind, what: &str) {
        if self.trace && pair == 0 {
            eprintln!(
                "{:>8} {what} una {:#x}",
                self.now,
                self.pairs[0].qps[0].send_queue().una().get()
            );
        }
        let mut s = TSink::new(self);
        self.pairs[pair].qps[0].on_timer(kind, &mut s);
        self.apply(0, pair, s.0 .0, None);
        self.pump(0, pair);
    }

    /// Whether the requester's timer armed as generation `gen` is still armed.
    fn armed(&self, pair: usize, kind: TimerKind, gen: u64) -> bool {
        self.pairs[pair].timer_gen[0][kind as usize] == gen
    }

    /// Runs until no event is left; an error if one would happen after `limit` µs.
    pub fn run(&mut self, limit: u64) -> Result<(), String> {
        for pair in 0..self.pairs.len() {
            self.pump(0, pair);
        }
        while let Some(Reverse((t, _, i))) = self.heap.pop() {
            if t > limit {
                return Err(format!("simulated time limit reached at t={t}"));
            }
            self.now = t;
            match self.events[i].take().expect("event runs once") {
                Ev::Deliver { to, pair, ib } if self.cpu_us > 0 => {
                    self.pairs[pair].rxq[to].push_back(ib);
                    self.kick(to, pair);
                }
                Ev::Deliver { to, pair, ib } => {
                    self.receive(to, pair, &ib)?;
                    self.pump(to, pair);
                }
                Ev::Run { side, pair } => self.drive(side, pair)?,
                Ev::HostStall { side, len } => {
                    self.stalled_until[side] = self.stalled_until[side].max(self.now + len);
                }
                Ev::Timer { pair, kind, gen } if self.late_fire > 0 => {
                    if self.armed(pair, kind, gen) {
                        let d = self.rng.range(0, self.late_fire);
                        self.schedule(self.now + d, Ev::Fired { pair, kind });
                    }
                }
                Ev::Fired { pair, kind } => self.on_timer(pair, kind, "FIRED"),
                Ev::Timer { pair, kind, gen } if self.cpu_us > 0 => {
                    if self.armed(pair, kind, gen) {
                        self.pairs[pair].fired[0][kind as usize] = true;
                        self.kick(0, pair);
                    }
                }
                Ev::Timer { pair, kind, gen } => {
                    if self.armed(pair, kind, gen) {
                        self.on_timer(pair, kind, "TIMEOUT");
                    }
                }
            }
        }
        Ok(())
    }
}
