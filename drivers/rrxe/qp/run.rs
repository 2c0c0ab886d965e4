// SPDX-License-Identifier: GPL-2.0
//! Posting work requests, the received-packet ring, and the run loop that drives
//! [`proto::Qp`] with all of it.

use super::env::Env;
use super::sink::{RxCtx, Sink};
use super::table::Refused;
use super::wr::{RecvWr, SendKind, SendWr, Sge};
use super::{
    ib_state, timer_kind, Engine, ProtoQp, Qp, QpKind, RX_BUDGET, TX_BUDGET, TX_WAIT_TIMER,
    TX_WAIT_US,
};
use crate::counters::Counter;
use crate::cq::Completion;
use crate::fault::{Dir, FaultAction};
use crate::glue::{NetDev, SkBuff};
use crate::ib::{WcOpcode, WcStatus};
use crate::proto;
use core::cell::Cell;
use core::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use kernel::prelude::*;

/// Received packets waiting for the work.
pub(super) struct RxRing {
    pub(super) skbs: KVec<Option<(SkBuff, Icrc)>>,
    pub(super) head: usize,
    pub(super) len: usize,
    /// RC/UC: the path (address vector) packets must come from, set by modify; checked as
    /// they are queued.
    pub(super) path: Option<proto::addr::Path>,
}

impl RxRing {
    /// An empty ring of `RX_RING` slots, no path.
    pub(super) fn new() -> Result<RxRing> {
        let mut skbs = KVec::with_capacity(super::RX_RING, GFP_KERNEL)?;
        for _ in 0..super::RX_RING {
            skbs.push(None, GFP_KERNEL)?;
        }
        Ok(RxRing {
            skbs,
            head: 0,
            len: 0,
            path: None,
        })
    }
}

/// A received packet held back by a fault rule: `delay:US` until a time, `reorder:K` until K
/// more packets of the QP have been taken from its ring. A QP holds one at most; a packet
/// such a rule hits while another is held goes on at once (its hit counted all the same,
/// in `fault_hits` and the rule's `hits`). Under the QP's `engine`; a held packet is freed
/// with the QP or when it is reset (it belongs to the old connection), and one released in
/// the error state is dropped by the state check like any packet.
#[derive(Default)]
pub(super) struct Held {
    pkt: Option<(SkBuff, Icrc)>,
    /// `reorder`: packets still to pass before it goes.
    after: u32,
    /// `delay`: when it goes (`glue::task::now_us`); 0 for `reorder`.
    due_us: u64,
}

impl Held {
    /// Holds `pkt` (none is held) as `action` says.
    fn hold(&mut self, mut pkt: (SkBuff, Icrc), action: FaultAction) {
        // It may be kept long (`reorder` with no later packet): nothing of the stack's with
        // it, such as a conntrack entry that would stall its namespace's deletion.
        pkt.0.release_refs();
        let (after, due_us) = match action {
            FaultAction::Reorder(k) => (u32::from(k), 0),
            FaultAction::Delay(us) => {
                (0, crate::glue::task::now_us().saturating_add(u64::from(us)))
            }
            _ => (0, 0),
        };
        *self = Held {
            pkt: Some(pkt),
            after,
            due_us,
        };
    }

    /// The held packet if its time has come.
    fn take_due(&mut self) -> Option<(SkBuff, Icrc)> {
        if self.is_due() {
            self.pkt.take()
        } else {
            None
        }
    }

    /// A packet is held and its time has come.
    fn is_due(&self) -> bool {
        self.pkt.is_some()
            && if self.due_us != 0 {
                crate::glue::task::now_us() >= self.due_us
            } else {
                self.after == 0
            }
    }

    /// Another packet was taken from the ring.
    fn passed(&mut self) {
        if self.pkt.is_some() && self.due_us == 0 {
            self.after = self.after.saturating_sub(1);
        }
    }

    /// Microseconds until a delayed packet is due (`None`: nothing delayed).
    fn wait_us(&self) -> Option<u64> {
        (self.pkt.is_some() && self.due_us != 0).then(|| {
            self.due_us
                .saturating_sub(crate::glue::task::now_us())
                .max(1)
        })
    }
}

/// The netdev or network namespace a QP takes packets from: what isolates the pods of a
/// shared device, whose GID table holds every pod's addresses (two pods may have the same
/// ones). rdma_rxe checks addresses only (`check_addr`); the kernel delivers to a socket
/// only what arrives in the socket's namespace, and so does rrxe to a QP.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Origin {
    /// Anywhere: the GSI QP (QP1 serves every namespace; the RDMA CM sorts its MADs by the
    /// GID they name), a kernel consumer's UD QP (its creating task's namespace says
    /// nothing about its user), and a connected QP before it has a path (refused by the
    /// address check).
    Any,
    /// A user UD QP: the namespace of the process that created it, as a socket's.
    Netns(crate::glue::NetnsId),
    /// A connected QP (RC, UC, XRC): the netdev of its source GID, set with its path. The
    /// GID table lookup of the destination (`rxe_chk_dgid`) already found the packet's
    /// destination GID on the netdev it arrived on; this makes it the QP's own entry.
    Netdev(crate::glue::NdevId),
}

impl Origin {
    /// Whether a packet that arrived on `on` may reach the QP: two compares.
    fn admits(self, on: crate::glue::NdevId) -> bool {
        match self {
            Origin::Any => true,
            Origin::Netns(n) => n == on.netns(),
            Origin::Netdev(d) => d == on,
        }
    }
}

/// A QP's [`Origin`], in two atomics so that a new QP's is written in place (`Qp::new` has
/// the module's largest stack frame, and the `rx` lock's value is copied there). Written
/// (create, modify) and read (`enqueue_rx`) under the QP's `rx` lock, which orders them:
/// the atomics only make it shareable. `ifindex` says which kind it is.
pub(super) struct OriginCell {
    net: AtomicU64,
    /// [`ORIGIN_ANY`], [`ORIGIN_NETNS`] or a netdev's ifindex (an `i32`).
    ifindex: AtomicI64,
}

const ORIGIN_ANY: i64 = i64::MIN;
const ORIGIN_NETNS: i64 = i64::MIN + 1;

impl OriginCell {
    /// [`Origin::Any`].
    pub(super) const fn new() -> Self {
        OriginCell {
            net: AtomicU64::new(0),
            ifindex: AtomicI64::new(ORIGIN_ANY),
        }
    }

    /// Sets it; the caller holds the QP's `rx` lock.
    pub(super) fn set(&self, o: Origin) {
        let (net, ifindex) = match o {
            Origin::Any => (0, ORIGIN_ANY),
            Origin::Netns(n) => (n.to_raw(), ORIGIN_NETNS),
            Origin::Netdev(d) => {
                let (net, i) = d.to_raw();
                (net, i64::from(i))
            }
        };
        self.net.store(net, Ordering::Relaxed);
        self.ifindex.store(ifindex, Ordering::Relaxed);
    }

    /// Reads it; the caller holds the QP's `rx` lock.
    fn get(&self) -> Origin {
        let net = self.net.load(Ordering::Relaxed);
        match self.ifindex.load(Ordering::Relaxed) {
            ORIGIN_ANY => Origin::Any,
            ORIGIN_NETNS => Origin::Netns(crate::glue::NetnsId::from_raw(net)),
            i => match i32::try_from(i) {
                Ok(i) => Origin::Netdev(crate::glue::NdevId::from_raw(net, i)),
                // Never stored.
                Err(_) => Origin::Any,
            },
        }
    }
}

/// Whether a received packet's ICRC was checked before it was queued.
#[derive(Clone, Copy)]
pub(crate) enum Icrc {
    /// Checked by the receive path (a packet from the wire).
    Checked,
    /// To be checked by the QP's run: a packet between QPs of this host, so that the
    /// receiving QP's CPU pays for it, not the sender's (see [`Qp::kick`]).
    Unchecked {
        /// An IPv6 packet.
        v6: bool,
    },
}

impl Qp {
    /// Whether the kernel may take work requests for this QP from a WR list (kernel QPs) or
    /// must refuse them (user QPs). A user QP's list arrives through `ib_uverbs_post_send`
    /// or `ib_uverbs_post_recv`: the process chose every SGE address and length, so none of
    /// it may be read as kernel memory. Its only way in is the shared ring plus the doorbell
    /// (an empty list). rdma_rxe ignores such a list on its send side; rrxe refuses it with
    /// EINVAL (as rxe does for a list it cannot take) and counts it.
    pub(crate) fn accept_kernel_wrs(&self) -> Result {
        if self.user.is_some() {
            self.dev.get().data().counters.inc(Counter::UserWrRefused);
            return Err(EINVAL);
        }
        // An XRC target QP has no queues; a kernel send WR cannot name an XRC SRQ.
        if self.kind.is_xrc() {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Posts a send WR of a kernel consumer (any context). `inline` holds the data of an
    /// inline send.
    pub(crate) fn post_send(&self, wr: SendWr, sges: &[Sge], inline: Option<&[u8]>) -> Result {
        self.accept_kernel_wrs()?;
        {
            let mut sq = self.sq.lock();
            if sq.full() {
                return Err(ENOMEM);
            }
            sq.push(wr, sges, inline)?;
        }
        self.note_owner_cpu();
        self.kick();
        Ok(())
    }

    /// The user's doorbell (a post_send with no work requests, process context): read the
    /// shared send queue and transmit now, in the caller's time slice.
    pub(crate) fn doorbell(&self) {
        self.note_owner_cpu();
        if self.user.is_some() {
            self.run();
        } else {
            self.kick();
        }
    }

    /// Handles newly queued received packets now (receive softirq), transmitting on `ndev`,
    /// the device they arrived on: for a packet that may complete or answer something (see
    /// `net::recv`), with every packet queued before it.
    pub(crate) fn run_rx(&self, ndev: &NetDev) {
        self.run_on(Some(ndev));
    }

    /// Handles newly queued received packets (receive softirq) once this softirq's pass
    /// is over: a bottom-half work item on this CPU, so the packets one NAPI poll hands the
    /// QP are handled by one run (one engine lock, one check of the queues and timers, one
    /// transmit pass) instead of a run each.
    pub(crate) fn run_soon(&self) {
        if !self.dead.load(Ordering::Acquire) {
            self.rx_work.queue_bh();
        }
    }

    /// Posts a receive WR of a kernel consumer (any context).
    pub(crate) fn post_recv(&self, wr: RecvWr, sges: &[Sge]) -> Result {
        self.accept_kernel_wrs()?;
        if self.srq.is_some() {
            return Err(EINVAL);
        }
        {
            let mut rq = self.rq.lock();
            if rq.full() {
                return Err(ENOMEM);
            }
            rq.push(wr, sges, None)?;
        }
        if self.in_error.load(Ordering::Acquire) {
            self.kick();
        }
        Ok(())
    }

    /// Where the QP takes packets from (read under its `rx` lock).
    pub(crate) fn origin(&self) -> Origin {
        let _rx = self.rx.lock();
        self.origin.get()
    }

    /// Sets where the QP takes packets from (under its `rx` lock).
    pub(super) fn set_origin(&self, o: Origin) {
        let _rx = self.rx.lock();
        self.origin.set(o);
    }

    /// Queues a received packet for this QP (softirq) for the next run, which the caller
    /// starts, if the QP takes it from where it comes: `on` (the netdev it arrived on) is
    /// the QP's [`Origin`], and `from` (its IP addresses) and `pkey` pass
    /// [`proto::addr::check_qp`]. A refused skb comes back with the reason.
    pub(super) fn enqueue_rx(
        &self,
        skb: SkBuff,
        icrc: Icrc,
        from: &proto::addr::IpAddrs,
        pkey: u16,
        on: crate::glue::NdevId,
    ) -> Result<(), (Refused, SkBuff)> {
        if self.dead.load(Ordering::Acquire) {
            return Err((Refused::Backlog, skb));
        }
        {
            let mut rx = self.rx.lock();
            // First: a packet of another pod is not this QP's at all, whatever it holds.
            if !self.origin.get().admits(on) {
                return Err((Refused::Netdev, skb));
            }
            let connected = !self.kind.is_ud();
            if let Err(e) = proto::addr::check_qp(connected, from, rx.path.as_ref(), pkey) {
                return Err((Refused::Addr(e), skb));
            }
            if rx.len >= rx.skbs.len() {
                return Err((Refused::Backlog, skb));
            }
            let n = rx.skbs.len();
            let i = (rx.head + rx.len) % n;
            if let Some(slot) = rx.skbs.get_mut(i) {
                *slot = Some((skb, icrc));
            }
            rx.len += 1;
        }
        Ok(())
    }

    pub(super) fn rx_pop(&self) -> Option<(SkBuff, Icrc)> {
        let mut rx = self.rx.lock();
        if rx.len == 0 {
            return None;
        }
        let n = rx.skbs.len();
        let h = rx.head;
        rx.head = (h + 1) % n;
        rx.len -= 1;
        rx.skbs.get_mut(h).and_then(Option::take)
    }

    pub(super) fn complete_send(&self, wr: &SendWr, status: WcStatus, byte_len: u32) {
        if status != WcStatus::Success {
            crate::glue::trace::comp_err(
                self.dev.get(),
                self.qpn,
                wr.wr_id,
                status as u32,
                wr.wc_opcode as u32,
                false,
            );
        }
        if status != WcStatus::Success || wr.signaled || self.sig_all {
            let c = Completion {
                wr_id: wr.wr_id,
                status,
                opcode: wr.wc_opcode,
                byte_len,
                qp_num: self.qpn,
                qp_addr: self.ibqp_addr,
                ..Default::default()
            };
            if let Some(cq) = &self.send_cq {
                cq.complete(&c, false);
            }
        }
    }

    /// Completes send WRs never handed to proto with WR_FLUSH_ERR (QP in error).
    pub(super) fn flush_unfed_sends(&self) {
        loop {
            let wr = {
                let mut sq = self.sq.lock();
                if sq.fed == sq.prod {
                    break;
                }
                let wr = sq.get(sq.fed);
                sq.fed = sq.fed.wrapping_add(1);
                sq.done = sq.fed;
                wr
            };
            if let Some(wr) = wr {
                self.complete_send(&wr, WcStatus::WrFlushErr, 0);
            }
        }
    }

    /// The receive WQE for the message in progress: the one already taken, or the next
    /// one of the receive queue.
    pub(super) fn claim_head(&self) -> Option<RecvWr> {
        if let Some(cl) = &*self.claim.lock() {
            return Some(cl.wr);
        }
        let mut events = crate::srq::SrqEvents::default();
        // A user SRQ's new WQEs are copied into its ring first, without the claim lock: a
        // bounded batch, each WQE under the SRQ ring's lock on its own. (`claim` is only
        // taken under `engine`, which this run holds: it is still empty below.)
        match (&self.srq, self.kind) {
            (Some(srq), _) => srq.pull(&mut events),
            (None, QpKind::XrcTgt) => self.xrc_pull(&mut events),
            _ => {}
        }
        let wr = {
            let mut c = self.claim.lock();
            if let Some(cl) = &*c {
                return Some(cl.wr);
            }
            match (&self.srq, self.kind) {
                (Some(srq), _) => srq.take_into(&mut c, &mut events),
                (None, QpKind::XrcTgt) => self.xrc_take(&mut c, &mut events),
                // An XRC initiator has no receive queue.
                (None, QpKind::XrcIni) => None,
                (None, _) => self.rq.lock().pop_into(&mut c).map(|(wr, _)| wr),
            }
        };
        // SRQ events go to the consumer's handler without the claim lock (interrupts off).
        if let Some(srq) = &self.srq {
            srq.raise(events);
        }
        self.xrc_raise(events);
        wr
    }

    pub(super) fn flush_recv(&self, wr: &RecvWr) {
        let c = Completion {
            wr_id: wr.wr_id,
            status: WcStatus::WrFlushErr,
            opcode: WcOpcode::Recv,
            qp_num: self.qpn,
            qp_addr: self.ibqp_addr,
            ..Default::default()
        };
        self.complete_recv(&c, false);
    }

    /// Completes every posted receive (and the one in progress) with WR_FLUSH_ERR.
    pub(super) fn flush_recvs(&self) {
        let held = self.claim.lock().take();
        if let Some(cl) = held {
            self.flush_recv(&cl.wr);
        }
        if self.srq.is_some() || self.kind.is_xrc() {
            // The SRQ's other WQEs belong to the other QPs; XRC QPs have no receive queue.
            return;
        }
        loop {
            let wr = {
                let mut rq = self.rq.lock();
                if rq.done == rq.prod {
                    break;
                }
                let wr = rq.get(rq.done);
                rq.done = rq.done.wrapping_add(1);
                wr
            };
            if let Some(wr) = wr {
                self.flush_recv(&wr);
            }
        }
    }

    /// Drives the engine with everything that arrived (process context), transmitting on
    /// the port's netdev.
    pub(super) fn run(&self) {
        if self.dead.load(Ordering::Acquire) {
            return;
        }
        let ndev = self.dev.get().netdev();
        self.run_on(ndev.as_deref());
    }

    /// Drives the engine with everything that arrived (process context or softirq).
    pub(super) fn run_on(&self, ndev: Option<&NetDev>) {
        let mut eng = self.engine.lock();
        if self.dead.load(Ordering::Acquire) {
            return;
        }
        let counters = &self.dev.get().data().counters;
        let Engine {
            proto,
            attrs,
            sport,
            seen,
            route,
            gid,
            held,
        } = &mut *eng;
        let gid = gid.as_deref_mut().map(Cell::from_mut);
        // What the run may move, for the trace events at its end (two loads).
        let state_was = proto.state();
        let cwnd_was = proto.send_queue().cwnd();
        // Dropped after the sink (it sends what it holds when dropped; the sink flushes it).
        let mut batch = crate::net::TxBatch::new();
        let mut sink = Sink {
            qp: self,
            av: attrs.av,
            sport: *sport,
            ndev,
            pkt: None,
            kept: crate::net::Kept {
                route: route.as_ref(),
                gid: gid.as_deref(),
            },
            batch: Some(&mut batch),
        };

        // 0. What a user process posted.
        self.pull_user_rq();
        self.pull_user_sq();
        if self.want_error.swap(false, Ordering::AcqRel) && proto.state() != proto::QpState::Error {
            // A queue of the QP is unusable and no WQE can carry the error: a Local Work
            // Queue Catastrophic Error.
            let m = proto::ModifyQp {
                state: Some(proto::QpState::Error),
                ..Default::default()
            };
            let _ = proto.modify(&m, &mut sink);
            self.note_event(super::event::QpEvent::Fatal);
        }

        // 1. Received packets, before the timers that fired: a retransmit timer and the
        // ACK that answers it can come in one run (a guest whose vCPU the host did not
        // run for longer than the QP's timeout finds both pending when it runs again, the
        // timer's softirq first), and a timer taken first counts a timeout, sends a probe
        // and cuts the window for a packet that was acknowledged. Taken after them, it
        // finds the timer re-armed or stopped by the ACK (`on_timer`'s deadline check).
        // The timers wait for at most RX_BUDGET packets.
        let mut env = Env {
            qp: self,
            access: attrs.access,
        };
        for _ in 0..RX_BUDGET {
            // A packet a fault rule held back goes first once its time has come (the rule
            // acted on it already); then the ring.
            let (mut skb, icrc, released) = match held.take_due() {
                Some((skb, icrc)) => (skb, icrc, true),
                None => {
                    let Some((skb, icrc)) = self.rx_pop() else {
                        break;
                    };
                    held.passed();
                    // Counted by the device when it came in; the QP's own count starts here.
                    self.count_own(Counter::RcvdPkts, 1);
                    self.count_own(Counter::RcvdBytes, u64::from(skb.ip_len()));
                    (skb, icrc, false)
                }
            };
            let smac = skb.smac();
            let _ = skb.linearize();
            let Some((ip_pkt, l3)) = skb.ip_packet() else {
                continue;
            };
            if let Icrc::Unchecked { v6 } = icrc {
                if !crate::net::icrc_ok(self.dev.get(), ip_pkt, v6) {
                    continue;
                }
            }
            let Some(ib) = ip_pkt.get(l3 + 8..) else {
                continue;
            };
            // The one full parse of the packet (the receive path read only its BTH).
            let pkt = match proto::parse_packet(ib) {
                Ok(p) => p,
                Err(e) => {
                    counters.inc(crate::net::parse_drop(e));
                    continue;
                }
            };
            super::trace_pkt(self.dev.get(), self.qpn, false, &pkt.hdrs, pkt.payload_len);
            let mut psink = Sink {
                qp: self,
                av: sink.av,
                sport: sink.sport,
                ndev: sink.ndev,
                pkt: Some(RxCtx {
                    ib,
                    ip_hdr: ip_pkt.get(..l3).unwrap_or(&[]),
                    smac,
                }),
                kept: sink.kept,
                batch: None,
            };
            // Fault injection: one relaxed load without a rule.
            let faults = &self.dev.get().data().faults;
            let fault = if released {
                None
            } else {
                faults.check(self.dev.get(), counters, self.qpn, Dir::Rx, &pkt.hdrs)
            };
            let st = match fault {
                None => proto.on_packet(&pkt, &mut env, &mut psink),
                // Held back: later, or behind the next packets (one at a time).
                Some(a @ (FaultAction::Delay(_) | FaultAction::Reorder(_)))
                    if held.pkt.is_none() =>
                {
                    held.hold((skb, Icrc::Checked), a);
                    continue;
                }
                Some(FaultAction::Delay(_) | FaultAction::Reorder(_)) => {
                    proto.on_packet(&pkt, &mut env, &mut psink)
                }
                // Lost, as on the wire.
                Some(FaultAction::Drop) => continue,
                // As a packet whose ICRC check failed.
                Some(FaultAction::Icrc) => {
                    self.count(Counter::IcrcErrors, 1);
                    continue;
                }
                // Taken twice: the second is the duplicate a link can deliver.
                Some(FaultAction::Dup) => {
                    let first = proto.on_packet(&pkt, &mut env, &mut psink);
                    let again = proto.on_packet(&pkt, &mut env, &mut psink);
                    self.count_rx(again);
                    first
                }
                // Refused with the rule's NAK, not executed (a packet nobody may NAK,
                // such as a response, is dropped).
                Some(FaultAction::Nak(k)) => {
                    proto.answer_nak(&pkt, k.syndrome(), &mut psink);
                    continue;
                }
            };
            self.count_rx(st);
            // A handled packet (a duplicate answered too) is consumed; the rest are freed
            // as drops, which the kernel's drop monitors see (`skb:kfree_skb`).
            if matches!(st, proto::RxStatus::Ok | proto::RxStatus::Duplicate) {
                skb.consume();
            }
        }

        // 2. Timers. They send nothing themselves: a timeout's probe or retransmissions
        // leave in step 4's `poll_tx`, after the ACKs and NAKs the packets above made
        // (those went out as each packet was taken).
        let fired = self.fired.swap(0, Ordering::AcqRel);
        for id in 0..2 {
            if fired & (1 << id) != 0 {
                proto.on_timer(timer_kind(id), &mut sink);
            }
        }

        // A delayed packet wakes the QP when it is due (the transmit-wait timer: its expiry
        // only runs the QP; a transmit wait below may arm it sooner, and that run arms it
        // again for what is left).
        if let Some(us) = held.wait_us() {
            if let Some(t) = self.timers.get(TX_WAIT_TIMER) {
                t.arm(us);
            }
        }

        // 3. New send WRs, in order. In SQD, proto queues transport WRs without starting
        // them; a WR the driver itself would complete (a local operation, or one proto
        // refuses) waits for RTS too.
        let sqd = proto.state() == proto::QpState::Sqd;
        loop {
            let (idx, wr, sge_len) = {
                let sq = self.sq.lock();
                if sq.fed == sq.prod {
                    break;
                }
                (sq.fed, sq.get(sq.fed), sq.done)
            };
            let Some(wr) = wr else { break };
            let _ = sge_len;
            match wr.kind {
                SendKind::Transport(op) => {
                    let w = proto::SendWqe {
                        id: proto::WqeId(u64::from(idx)),
                        op,
                        len: wr.len,
                        signaled: true,
                        solicited: wr.solicited,
                        fence: wr.fence,
                        ud: wr.ud.map(|(_, d)| d),
                        xrc_srqn: wr.xrc_srqn,
                    };
                    match proto.post_send(w, &mut sink) {
                        Ok(()) => {}
                        Err(proto::PostError::Full) => break,
                        Err(_) => {
                            // Invalid for the QP's state or type: complete it in order.
                            if sqd || !proto.send_queue().is_empty() {
                                break;
                            }
                            self.complete_send(&wr, WcStatus::LocQpOpErr, 0);
                            let mut sq = self.sq.lock();
                            sq.done = sq.done.wrapping_add(1);
                        }
                    }
                    let mut sq = self.sq.lock();
                    sq.fed = sq.fed.wrapping_add(1);
                }
                SendKind::Invalid => {
                    if sqd || !proto.send_queue().is_empty() {
                        break;
                    }
                    crate::glue::dbg(
                        self.dev.get(),
                        c"malformed user send WQE: QP to error",
                        u64::from(self.qpn),
                        wr.wr_id,
                    );
                    self.complete_send(&wr, WcStatus::LocQpOpErr, 0);
                    {
                        let mut sq = self.sq.lock();
                        sq.fed = sq.fed.wrapping_add(1);
                        sq.done = sq.done.wrapping_add(1);
                    }
                    // The process wrote garbage into its queue: later posts fail at once.
                    if let Some(u) = &self.user {
                        u.sq.error_flag().store(1, Ordering::Release);
                    }
                    let m = proto::ModifyQp {
                        state: Some(proto::QpState::Error),
                        ..Default::default()
                    };
                    let _ = proto.modify(&m, &mut sink);
                }
                SendKind::RegMr(_) | SendKind::LocalInv { .. } | SendKind::BindMw(_) => {
                    // Local operations complete in order: wait for the transport ones.
                    if sqd || !proto.send_queue().is_empty() {
                        break;
                    }
                    let mrs = &self.dev.get().data().mrs;
                    let ok = match wr.kind {
                        SendKind::RegMr(fr) => mrs.fast_reg(&fr, self.pd).is_ok(),
                        SendKind::LocalInv { key } => mrs.invalidate(key, self.pd, None).is_ok(),
                        SendKind::BindMw(req) => mrs.bind(&req, self.pd, self.qpn).is_ok(),
                        SendKind::Transport(_) | SendKind::Invalid => false,
                    };
                    let st = match (ok, wr.kind) {
                        (true, _) => WcStatus::Success,
                        (false, SendKind::BindMw(_)) => WcStatus::MwBindErr,
                        (false, _) => WcStatus::LocProtErr,
                    };
                    self.complete_send(&wr, st, 0);
                    let mut sq = self.sq.lock();
                    sq.fed = sq.fed.wrapping_add(1);
                    sq.done = sq.done.wrapping_add(1);
                }
            }
        }

        // A page fault was taken since the last run: a response dropped for it is asked
        // for again.
        if self.fault_done.swap(false, Ordering::AcqRel) {
            proto.fault_done();
        }

        // 4. Transmit, no faster than the device's queues drain. A full qdisc drops what it
        // is given: a lost message on UC, a go-back-N round on RC (on the benchmark's
        // kernel without debugging, a quarter of all packets sent were retransmissions).
        // A QP that finds the queues half full leaves the rest for its transmit-wait timer
        // rather than spinning on its work. rdma_rxe bounds the packets in flight per QP
        // instead (RXE_INFLIGHT_SKBS_PER_QP_HIGH). The ACKs and NAKs that the packets above
        // made went out unpaced; READ responses and deferred ACKs wait here with requests.
        let room = ndev.map_or(TX_BUDGET, |n| n.tx_room().min(TX_BUDGET));
        let more = proto.poll_tx(room, &mut sink);
        // The run's packets leave, one chain a flow (net::TxBatch).
        sink.flush();
        drop(sink);
        drop(batch);
        let tx_wait = more && room < TX_BUDGET;
        if tx_wait {
            counters.inc(Counter::TxWaits);
            if let Some(t) = self.timers.get(TX_WAIT_TIMER) {
                t.arm(TX_WAIT_US);
            }
        }

        // The send queue's event counts since the last run go to the device's counters and
        // the QP's.
        let now = proto.send_queue().stats();
        for (counter, now, before) in [
            (Counter::Retransmits, now.retransmits, seen.retransmits),
            (Counter::RnrNaksRcvd, now.rnr_naks, seen.rnr_naks),
            (Counter::SeqNaksRcvd, now.seq_naks, seen.seq_naks),
            (Counter::RetransmitTimeouts, now.timeouts, seen.timeouts),
            (Counter::CwndCuts, now.cwnd_cuts, seen.cwnd_cuts),
            (Counter::CwndUndos, now.cwnd_undos, seen.cwnd_undos),
            (Counter::OdpUnplaced, now.unplaced, seen.unplaced),
        ] {
            let n = now.wrapping_sub(before);
            if n != 0 {
                self.count(counter, n);
            }
        }
        self.trace_run(proto, seen, &now, state_was, cwnd_was);
        *seen = now;

        if proto.state() == proto::QpState::Error {
            let was = self.in_error.swap(true, Ordering::AcqRel);
            self.flush_unfed_sends();
            self.flush_recvs();
            if !was {
                self.entered_error();
            }
        }
        let pending_rx = self.rx.lock().len > 0 || held.is_due();
        drop(eng);
        self.raise_events();
        if (more && !tx_wait) || self.fired.load(Ordering::Acquire) != 0 {
            self.kick();
        } else if pending_rx {
            // Packets beyond this run's budget: in softirq context the bottom-half run takes
            // them (a worker thread would wait behind the softirqs that keep queueing more,
            // and the QP's receive ring overflow), else the work item.
            if crate::glue::in_softirq() {
                self.run_soon();
            } else {
                self.kick();
            }
        }
    }
}

impl Qp {
    /// The trace events of what a run did, from what it moved: a state change
    /// (`rrxe_qp_state`), retransmissions and the timeouts behind them (`rrxe_retransmit`,
    /// one event a run), the congestion window's net change over the run (`rrxe_cwnd`,
    /// the reason from the send queue's counts: an undo, a cut by a timeout or by a loss,
    /// else growth). Without any of these a run costs the compares, no call.
    fn trace_run(
        &self,
        proto: &ProtoQp,
        seen: &proto::SqStats,
        now: &proto::SqStats,
        state_was: proto::QpState,
        cwnd_was: u32,
    ) {
        let dev = self.dev.get();
        let state = proto.state();
        if state != state_was {
            crate::glue::trace::qp_state(dev, self.qpn, ib_state(state_was), ib_state(state));
        }
        let sq = proto.send_queue();
        let timeouts = now.timeouts.wrapping_sub(seen.timeouts);
        let resent = now.retransmits.wrapping_sub(seen.retransmits);
        if timeouts != 0 || resent != 0 {
            crate::glue::trace::retransmit(
                dev,
                self.qpn,
                timeouts as u32,
                sq.una().get(),
                sq.next_psn().get(),
                resent as u32,
                sq.rto_us().unwrap_or(0),
            );
        }
        let cwnd = sq.cwnd();
        if cwnd != cwnd_was {
            use crate::glue::trace::CwndReason;
            let why = if now.cwnd_undos != seen.cwnd_undos {
                CwndReason::Undo
            } else if now.cwnd_cuts != seen.cwnd_cuts {
                if timeouts != 0 {
                    CwndReason::Timeout
                } else {
                    CwndReason::Loss
                }
            } else if cwnd > cwnd_was {
                CwndReason::Grow
            } else {
                CwndReason::Reset
            };
            crate::glue::trace::cwnd(dev, self.qpn, cwnd_was, cwnd, why);
        }
    }

    /// Counts what `on_packet` said of a received packet, in the device's and the QP's
    /// counters.
    fn count_rx(&self, st: proto::RxStatus) {
        let event = match st {
            proto::RxStatus::Ok => None,
            proto::RxStatus::Duplicate => Some(Counter::DuplicateRequests),
            proto::RxStatus::OutOfSequence => Some(Counter::SeqErrors),
            proto::RxStatus::NoRecv => Some(Counter::RnrNaksSent),
            proto::RxStatus::BadState => Some(Counter::RxDropQpState),
            proto::RxStatus::WrongTransport
            | proto::RxStatus::WrongQp
            | proto::RxStatus::BadQkey => Some(Counter::RxDropQpMismatch),
            proto::RxStatus::Invalid => Some(Counter::RxInvalidRequest),
            proto::RxStatus::Busy => Some(Counter::RxDropBusy),
        };
        if let Some(c) = event {
            self.count(c, 1);
        }
    }
}
