// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Helpers shared by the proto tests (every `tests/*.rs` is a crate of its own and takes
//! them with `mod support;`; `examples/bench.rs` with a `#[path]`): a seeded PRNG, a
//! recording action sink, a mock responder environment, a send WQE, and bringing a QP up to
//! RTS; in [`link`], a simulated link between hosts for READs.
//!
//! The fuzz target bodies (`fuzz/bodies.rs`) keep their own environment and sink: those
//! derive every answer from the fuzz input and fail on purpose, which no test wants.

// Each test crate uses a part of this module.
#![allow(dead_code)]

use rrxe_proto::*;

pub mod link;

/// A deterministic PRNG (splitmix64): the same seed gives the same test.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    /// A number from `lo` to `hi`, both included.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    /// True with probability `p` parts per million.
    pub fn ppm(&mut self, p: u32) -> bool {
        (self.below(1_000_000) as u32) < p
    }
    pub fn fill(&mut self, b: &mut [u8]) {
        for x in b {
            *x = self.next() as u8;
        }
    }
}

/// Records actions; `.1` (if set) decides which placements and transmissions the
/// "driver" cannot carry out (those are not recorded).
#[derive(Default)]
pub struct Sink(
    pub Vec<Action>,
    pub Option<fn(&Action) -> Option<PlaceError>>,
);

std::thread_local! {
    /// The clock every [`Sink`] of this thread reports (`None`: no clock), set by a
    /// simulation as its time advances.
    static CLOCK: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Sets the clock the [`Sink`]s of this thread report, in µs.
pub fn set_clock(now: Option<u64>) {
    CLOCK.with(|c| c.set(now));
}

impl ActionSink for Sink {
    fn push(&mut self, a: Action) {
        self.0.push(a);
    }
    fn now_us(&self) -> Option<u64> {
        CLOCK.with(|c| c.get())
    }
    fn place(&mut self, a: Action) -> Result<(), PlaceError> {
        if let Some(e) = self.1.and_then(|f| f(&a)) {
            return Err(e);
        }
        self.0.push(a);
        Ok(())
    }
    fn transmit(&mut self, p: TxPacket) -> Result<(), PlaceError> {
        self.place(Action::Send(p))
    }
}

impl Sink {
    /// What `f` picks out of the recorded actions, in order.
    pub fn pick<T>(&self, f: impl Fn(&Action) -> Option<T>) -> Vec<T> {
        self.0.iter().filter_map(f).collect()
    }
    /// The packets sent, in order.
    pub fn sent(&self) -> Vec<TxPacket> {
        self.pick(|a| match a {
            Action::Send(p) => Some(*p),
            _ => None,
        })
    }
    /// The send completions, in order.
    pub fn completions(&self) -> Vec<SendCompletion> {
        self.pick(|a| match a {
            Action::SendComplete(c) => Some(*c),
            _ => None,
        })
    }
    /// The receive completions, in order.
    pub fn recv_completions(&self) -> Vec<RecvCompletion> {
        self.pick(|a| match a {
            Action::RecvComplete(c) => Some(*c),
            _ => None,
        })
    }
    /// The QP's affiliated asynchronous events, in order.
    pub fn events(&self) -> Vec<QpEvent> {
        self.pick(|a| match a {
            Action::Event(e) => Some(*e),
            _ => None,
        })
    }
}

/// A responder environment without memory: every key but `bad_rkey` is valid, `recvs`
/// receive WQEs of 4096 bytes are posted, atomics return 101, 102, ...
#[derive(Default)]
pub struct Env {
    pub recvs: u32,
    pub atomics: u32,
    pub bad_rkey: u32,
    /// Access checks fail as "the QP does not enable it".
    pub qp_denied: bool,
    /// This key's memory is not present (on-demand paging): its checks and atomics fail
    /// with `NotPresent` (0: none).
    pub absent_rkey: u32,
    /// Keys invalidated (SEND with Invalidate).
    pub invalidated: Vec<u32>,
    /// XRC: the SRQ numbers of the target QP's XRC domain.
    pub xrc_srqs: Vec<u32>,
    /// XRC: every SRQ number the responder asked for, in order.
    pub selected: Vec<u32>,
}

impl ResponderEnv for Env {
    fn check_access(&mut self, rkey: u32, _: u64, _: u32, _: Access) -> Result<(), AccessError> {
        if self.qp_denied {
            return Err(AccessError::QpDenied);
        }
        if rkey != 0 && rkey == self.absent_rkey {
            return Err(AccessError::NotPresent);
        }
        if rkey == self.bad_rkey {
            Err(AccessError::BadKey)
        } else {
            Ok(())
        }
    }
    fn atomic(&mut self, rkey: u32, _: u64, _: AtomicOp) -> Result<u64, AccessError> {
        if rkey != 0 && rkey == self.absent_rkey {
            return Err(AccessError::NotPresent);
        }
        if rkey == self.bad_rkey {
            return Err(AccessError::BadKey);
        }
        self.atomics += 1;
        Ok(100 + u64::from(self.atomics))
    }
    fn atomic_write(&mut self, _: u32, _: u64, _: u64) -> Result<(), AccessError> {
        Ok(())
    }
    fn recv_head_len(&mut self) -> Option<u32> {
        (self.recvs > 0).then_some(4096)
    }
    fn select_xrc_srq(&mut self, srqn: u32) -> bool {
        self.selected.push(srqn);
        self.xrc_srqs.contains(&srqn)
    }
    fn invalidate(&mut self, rkey: u32) -> Result<(), AccessError> {
        if rkey == self.bad_rkey {
            return Err(AccessError::BadKey);
        }
        self.invalidated.push(rkey);
        Ok(())
    }
}

/// A signaled WQE with no special flags.
pub fn wqe(id: u64, op: SendOp, len: u32) -> SendWqe {
    SendWqe {
        id: WqeId(id),
        op,
        len,
        signaled: true,
        solicited: false,
        fence: false,
        ud: None,
        xrc_srqn: 0,
    }
}

/// Moves a new QP through INIT and RTR to RTS, its actions into `s`.
pub fn to_rts<const S: usize, const R: usize>(
    q: &mut Qp<S, R>,
    s: &mut impl ActionSink,
) -> Result<(), ModifyError> {
    for st in [QpState::Init, QpState::Rtr, QpState::Rts] {
        q.modify(
            &ModifyQp {
                state: Some(st),
                ..Default::default()
            },
            s,
        )?;
    }
    Ok(())
}
