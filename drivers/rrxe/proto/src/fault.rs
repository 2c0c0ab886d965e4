// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Fault injection rules: their text form, the parser, and the matcher that decides, packet
//! by packet, which rule (if any) hits it and what it does.
//!
//! A rule is one line of `key=value` words (docs/fault-injection.md):
//!
//! ```text
//! qp=0x12 dir=rx op=read_resp nth=3 action=drop count=1
//! ```
//!
//! * where: `qp=N` (the QP of this device that sends the packet, for `dir=tx`, or receives
//!   it, for `dir=rx`; default `any`), `dir=tx|rx` (required), `op=CLASS` (default `any`;
//!   see [`OpClass`]), `psn=A` or `psn=A-B` (inclusive, 24-bit, may wrap);
//! * which of the packets that pass those filters: every one (default), `nth=N` (only the
//!   Nth), `every=N` (the Nth, 2Nth, ...), or `prob=N/D` with `seed=S` (each with
//!   probability N/D, drawn from a generator seeded with S: the same seed and the same
//!   packets give the same choices on every run);
//! * what: `action=drop`, `dup`, `delay:US`, `reorder:K`, `icrc`, or a NAK answered in place
//!   of the request (`dir=rx` only): `nak:rnr:T` (RNR NAK with encoded timer T),
//!   `nak:seq`, `nak:access`, `nak:op`, `nak:inv`;
//! * for how long: `count=N` hits, then the rule retires (default: it never retires).
//!
//! The matcher ([`FaultSet`]) holds at most a fixed number of rules; each keeps the
//! packets it saw and its hits. A packet is offered to the live rules in the order they
//! were added: each rule whose filters it passes counts it as seen, and the first rule
//! that picks it hits it; later rules do not see it. No I/O, no clock, no allocation: the
//! driver asks [`FaultSet::decide`] for each packet and applies the answer.

use super::hdr::{Aeth, AethKind, NakCode};
use super::opcode::{OpKind, Opcode};
use super::psn::Psn;
use core::fmt;

/// The most rules a device holds at once (live and retired: retired rules stay listed, with
/// their counts, until cleared). A rule beyond it is refused.
pub const MAX_RULES: usize = 8;
/// The longest `delay:US` (one second).
pub const MAX_DELAY_US: u32 = 1_000_000;
/// The most packets a `reorder:K` rule lets pass a held packet.
pub const MAX_REORDER: u8 = 8;
/// The longest rule line accepted.
pub const MAX_LINE: usize = 256;

/// Which way a packet goes, seen from the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Sent by a QP of the device.
    Tx,
    /// Received by a QP of the device.
    Rx,
}

/// The opcode classes a rule can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpClass {
    /// SEND (every variant and transport).
    Send,
    /// RDMA WRITE (every variant and transport).
    Write,
    /// RDMA READ request.
    ReadReq,
    /// RDMA READ response (first, middle, last, only).
    ReadResp,
    /// ATOMIC CompareSwap and FetchAdd requests.
    Atomic,
    /// ACKNOWLEDGE with an ACK syndrome, and ATOMIC ACKNOWLEDGE.
    Ack,
    /// ACKNOWLEDGE with an RNR NAK or NAK syndrome.
    Nak,
    /// RoCEv2 congestion notification packet.
    Cnp,
    /// Anything else (FLUSH, ATOMIC WRITE): matched only by `op=any`.
    Other,
}

/// The text names of the classes, in the order of [`OpClass`].
const CLASS_NAMES: [(&str, OpClass); 8] = [
    ("send", OpClass::Send),
    ("write", OpClass::Write),
    ("read_req", OpClass::ReadReq),
    ("read_resp", OpClass::ReadResp),
    ("atomic", OpClass::Atomic),
    ("ack", OpClass::Ack),
    ("nak", OpClass::Nak),
    ("cnp", OpClass::Cnp),
];

impl OpClass {
    /// The class of a packet with `opcode` and, for an ACKNOWLEDGE, its AETH syndrome.
    pub fn of(opcode: Opcode, aeth_syndrome: Option<u8>) -> OpClass {
        let Some(info) = opcode.info() else {
            return OpClass::Other;
        };
        match info.kind {
            OpKind::Send => OpClass::Send,
            OpKind::Write => OpClass::Write,
            OpKind::ReadRequest => OpClass::ReadReq,
            OpKind::ReadResponse => OpClass::ReadResp,
            OpKind::CompareSwap | OpKind::FetchAdd => OpClass::Atomic,
            OpKind::AtomicAck => OpClass::Ack,
            OpKind::Ack => match aeth_syndrome.map(|s| {
                Aeth {
                    syndrome: s,
                    msn: 0,
                }
                .kind()
            }) {
                Some(AethKind::Ack { .. }) | None => OpClass::Ack,
                Some(_) => OpClass::Nak,
            },
            OpKind::Cnp => OpClass::Cnp,
            OpKind::Flush | OpKind::AtomicWrite => OpClass::Other,
        }
    }

    /// Whether a requester sends this class (a responder may answer it with a NAK).
    pub const fn is_request(self) -> bool {
        matches!(
            self,
            OpClass::Send | OpClass::Write | OpClass::ReadReq | OpClass::Atomic
        )
    }

    fn name(self) -> &'static str {
        for (n, c) in CLASS_NAMES {
            if c as u8 == self as u8 {
                return n;
            }
        }
        "other"
    }
}

/// Which of the packets that pass a rule's filters it picks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Select {
    /// Every one.
    All,
    /// Only the Nth (N >= 1).
    Nth(u32),
    /// The Nth, 2Nth, 3Nth, ... (N >= 1).
    Every(u32),
    /// Each with probability `num / den` (0 < den, num <= den), drawn from the rule's
    /// generator.
    Prob {
        /// Numerator.
        num: u32,
        /// Denominator.
        den: u32,
    },
}

/// The NAK a rule answers a request with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NakKind {
    /// RNR NAK with this encoded timer (0..=31, IBTA table 45).
    Rnr(u8),
    /// NAK, PSN sequence error.
    PsnSeq,
    /// NAK, remote access error.
    RemoteAccess,
    /// NAK, remote operational error.
    RemoteOp,
    /// NAK, invalid request.
    InvalidRequest,
}

impl NakKind {
    /// The AETH syndrome byte of this NAK.
    pub const fn syndrome(self) -> u8 {
        Aeth::syndrome_of(match self {
            NakKind::Rnr(t) => AethKind::RnrNak { timer: t },
            NakKind::PsnSeq => AethKind::Nak(NakCode::PsnSeqError),
            NakKind::RemoteAccess => AethKind::Nak(NakCode::RemoteAccess),
            NakKind::RemoteOp => AethKind::Nak(NakCode::RemoteOperational),
            NakKind::InvalidRequest => AethKind::Nak(NakCode::InvalidRequest),
        })
    }
}

/// What a rule does to a packet it hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultAction {
    /// The packet is lost.
    Drop,
    /// The packet goes (or is taken) twice.
    Dup,
    /// The packet goes this many microseconds later (1..=[`MAX_DELAY_US`]).
    Delay(u32),
    /// The packet goes after the next K packets of its QP in its direction
    /// (1..=[`MAX_REORDER`]).
    Reorder(u8),
    /// The packet's ICRC is corrupted (one bit flipped): the receiver drops it as a
    /// bad-ICRC packet.
    Icrc,
    /// The request is not executed; the responder answers it with this NAK instead.
    Nak(NakKind),
}

/// One rule, as parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The QP, or every QP of the device.
    pub qp: Option<u32>,
    /// Transmit or receive.
    pub dir: Dir,
    /// The opcode class, or any.
    pub op: Option<OpClass>,
    /// An inclusive PSN range (`first`, `last`), walking forward from `first` (it may wrap).
    pub psn: Option<(Psn, Psn)>,
    /// Which of the filtered packets it picks.
    pub select: Select,
    /// The seed of the generator of `prob=` (ignored by the other selections).
    pub seed: u64,
    /// What it does.
    pub action: FaultAction,
    /// Hits before it retires; `None`: never.
    pub count: Option<u32>,
}

/// A packet, as the matcher sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketView {
    /// The QP of this device that sends or receives it.
    pub qpn: u32,
    /// Which way it goes.
    pub dir: Dir,
    /// Its class.
    pub class: OpClass,
    /// Its PSN.
    pub psn: Psn,
}

impl Rule {
    /// Whether `p` passes this rule's filters (QP, direction, class, PSN range).
    pub fn filters(&self, p: &PacketView) -> bool {
        if self.dir != p.dir {
            return false;
        }
        if self.qp.is_some_and(|q| q != p.qpn) {
            return false;
        }
        if self.op.is_some_and(|c| c != p.class) {
            return false;
        }
        match self.psn {
            Some((first, last)) => p.psn.distance_from(first) <= last.distance_from(first),
            None => true,
        }
    }
}

/// One rule and what it has done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleState {
    /// Its number in the device (from 1, never reused until the set is cleared).
    pub id: u32,
    /// The rule.
    pub rule: Rule,
    /// Packets that passed its filters while it was live.
    pub seen: u64,
    /// Packets it hit.
    pub hits: u64,
    /// The state of its generator.
    rng: u64,
}

impl RuleState {
    /// Whether the rule still acts (it has hits left).
    pub fn live(&self) -> bool {
        self.rule.count.is_none_or(|c| self.hits < u64::from(c))
    }

    /// Counts `p` (which passed the filters) and says whether the rule picks it.
    fn pick(&mut self) -> bool {
        self.seen = self.seen.saturating_add(1);
        match self.rule.select {
            Select::All => true,
            Select::Nth(n) => self.seen == u64::from(n),
            Select::Every(n) => n != 0 && self.seen.is_multiple_of(u64::from(n)),
            Select::Prob { num, den } => {
                let x = splitmix64(&mut self.rng);
                // x / 2^64 < num / den, without division: x * den < num * 2^64.
                ((u128::from(x) * u128::from(den)) >> 64) < u128::from(num)
            }
        }
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny generator whose whole state is one u64,
/// so a seed fixes every draw.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Why a rule was not added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddError {
    /// [`MAX_RULES`] rules are held already.
    Full,
}

/// A device's rules.
#[derive(Clone, Debug)]
pub struct FaultSet<const N: usize = MAX_RULES> {
    rules: [Option<RuleState>; N],
    next_id: u32,
}

impl<const N: usize> Default for FaultSet<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> FaultSet<N> {
    /// No rules.
    pub const fn new() -> Self {
        Self {
            rules: [None; N],
            next_id: 1,
        }
    }

    /// Adds `rule` after the others; its id.
    pub fn add(&mut self, rule: Rule) -> Result<u32, AddError> {
        self.add_all([rule].iter())
    }

    /// Adds every rule of `rules`, in order, or none of them if they do not all fit; the id
    /// of the first.
    pub fn add_all<'a>(
        &mut self,
        rules: impl Iterator<Item = &'a Rule> + Clone,
    ) -> Result<u32, AddError> {
        if rules.clone().count() > self.free() {
            return Err(AddError::Full);
        }
        let first = self.next_id;
        let mut it = rules;
        for slot in self.rules.iter_mut().filter(|s| s.is_none()) {
            let Some(r) = it.next() else { break };
            *slot = Some(RuleState {
                id: self.next_id,
                rule: *r,
                seen: 0,
                hits: 0,
                rng: r.seed,
            });
            self.next_id = self.next_id.wrapping_add(1);
        }
        self.compact();
        Ok(first)
    }

    /// Free slots.
    pub fn free(&self) -> usize {
        self.rules.iter().filter(|s| s.is_none()).count()
    }

    /// Keeps the rules in the order they were added (by id), the free slots last.
    fn compact(&mut self) {
        // Insertion sort on at most N entries.
        for i in 1..N {
            let mut j = i;
            while j > 0 {
                let (a, b) = (self.rules.get(j - 1).copied(), self.rules.get(j).copied());
                let swap = match (a, b) {
                    (Some(None), Some(Some(_))) => true,
                    (Some(Some(x)), Some(Some(y))) => x.id > y.id,
                    _ => false,
                };
                if !swap {
                    break;
                }
                self.rules.swap(j - 1, j);
                j -= 1;
            }
        }
    }

    /// Removes every rule; ids start again from 1.
    pub fn clear(&mut self) {
        // In place: no set-sized temporary (the kernel's stack is small).
        for r in self.rules.iter_mut() {
            *r = None;
        }
        self.next_id = 1;
    }

    /// Whether any rule is live (the driver's per-packet flag).
    pub fn any_live(&self) -> bool {
        self.rules.iter().flatten().any(RuleState::live)
    }

    /// The rules, live and retired, in the order they were added.
    pub fn rules(&self) -> impl Iterator<Item = &RuleState> {
        self.rules.iter().flatten()
    }

    /// Offers `p` to the live rules in order: each whose filters it passes counts it; the
    /// first that picks it counts a hit and its action is returned (with the rule's id).
    /// Bounded by `N`.
    pub fn decide(&mut self, p: &PacketView) -> Option<(u32, FaultAction)> {
        for r in self.rules.iter_mut().flatten() {
            if !r.live() || !r.rule.filters(p) {
                continue;
            }
            if r.pick() {
                r.hits = r.hits.saturating_add(1);
                return Some((r.id, r.rule.action));
            }
        }
        None
    }
}

/// Why a rule line was refused (the driver answers EINVAL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    /// Longer than [`MAX_LINE`].
    TooLong,
    /// A word that is not `key=value`, or an unknown key.
    UnknownKey,
    /// A key given twice.
    Repeated,
    /// A value that does not parse or is out of its range.
    BadValue,
    /// `dir=` or `action=` missing.
    Missing,
    /// Keys that do not go together (two selections, a NAK on transmit or on a response).
    Conflict,
}

/// One command of the rules file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// An empty line or a `#` comment.
    Nothing,
    /// `clear`: remove every rule.
    Clear,
    /// A rule to add.
    Add(Rule),
}

/// Parses one line of the rules file (without its newline).
pub fn parse_command(line: &[u8]) -> Result<Command, RuleError> {
    if line.len() > MAX_LINE {
        return Err(RuleError::TooLong);
    }
    let t = trim(line);
    if t.is_empty() || t.first() == Some(&b'#') {
        return Ok(Command::Nothing);
    }
    if t == b"clear" {
        return Ok(Command::Clear);
    }
    parse_rule(t).map(Command::Add)
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    s.get(start..end).unwrap_or(&[])
}

/// Parses a rule (see the module's documentation).
pub fn parse_rule(line: &[u8]) -> Result<Rule, RuleError> {
    if line.len() > MAX_LINE {
        return Err(RuleError::TooLong);
    }
    let mut qp = None;
    let mut dir = None;
    let mut op = None;
    let mut psn = None;
    let mut select = None;
    let mut seed = None;
    let mut action = None;
    let mut count = None;
    fn set<T>(slot: &mut Option<T>, v: T) -> Result<(), RuleError> {
        if slot.is_some() {
            return Err(RuleError::Repeated);
        }
        *slot = Some(v);
        Ok(())
    }
    let mut seen_qp = false;
    let mut seen_op = false;
    for word in line
        .split(|c| c.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
    {
        let eq = word
            .iter()
            .position(|&c| c == b'=')
            .ok_or(RuleError::UnknownKey)?;
        let key = word.get(..eq).ok_or(RuleError::UnknownKey)?;
        let val = word.get(eq + 1..).ok_or(RuleError::BadValue)?;
        match key {
            b"qp" => {
                if seen_qp {
                    return Err(RuleError::Repeated);
                }
                seen_qp = true;
                qp = if val == b"any" {
                    None
                } else {
                    let n = num_u32(val)?;
                    if n > 0x00ff_ffff {
                        return Err(RuleError::BadValue);
                    }
                    Some(n)
                };
            }
            b"dir" => set(
                &mut dir,
                match val {
                    b"tx" => Dir::Tx,
                    b"rx" => Dir::Rx,
                    _ => return Err(RuleError::BadValue),
                },
            )?,
            b"op" => {
                if seen_op {
                    return Err(RuleError::Repeated);
                }
                seen_op = true;
                op = if val == b"any" {
                    None
                } else {
                    Some(
                        CLASS_NAMES
                            .iter()
                            .find(|(n, _)| n.as_bytes() == val)
                            .map(|&(_, c)| c)
                            .ok_or(RuleError::BadValue)?,
                    )
                };
            }
            b"psn" => {
                let (a, b) = match val.iter().position(|&c| c == b'-') {
                    Some(d) => (
                        num_u32(val.get(..d).unwrap_or(&[]))?,
                        num_u32(val.get(d + 1..).unwrap_or(&[]))?,
                    ),
                    None => {
                        let a = num_u32(val)?;
                        (a, a)
                    }
                };
                if a > 0x00ff_ffff || b > 0x00ff_ffff {
                    return Err(RuleError::BadValue);
                }
                set(&mut psn, (Psn::new(a), Psn::new(b)))?;
            }
            b"nth" => set(&mut select, Select::Nth(nonzero(num_u32(val)?)?))?,
            b"every" => set(&mut select, Select::Every(nonzero(num_u32(val)?)?))?,
            b"prob" => {
                let d = val
                    .iter()
                    .position(|&c| c == b'/')
                    .ok_or(RuleError::BadValue)?;
                let num = num_u32(val.get(..d).unwrap_or(&[]))?;
                let den = nonzero(num_u32(val.get(d + 1..).unwrap_or(&[]))?)?;
                if num > den {
                    return Err(RuleError::BadValue);
                }
                set(&mut select, Select::Prob { num, den })?;
            }
            b"seed" => set(&mut seed, num_u64(val)?)?,
            b"action" => set(&mut action, parse_action(val)?)?,
            b"count" => set(&mut count, nonzero(num_u32(val)?)?)?,
            _ => return Err(RuleError::UnknownKey),
        }
    }
    let dir = dir.ok_or(RuleError::Missing)?;
    let action = action.ok_or(RuleError::Missing)?;
    if let FaultAction::Nak(_) = action {
        // A NAK answers a request the responder received.
        if dir != Dir::Rx || op.is_some_and(|c| !c.is_request()) {
            return Err(RuleError::Conflict);
        }
    }
    let select = select.unwrap_or(Select::All);
    if seed.is_some() && !matches!(select, Select::Prob { .. }) {
        return Err(RuleError::Conflict);
    }
    Ok(Rule {
        qp,
        dir,
        op,
        psn,
        select,
        seed: seed.unwrap_or(0),
        action,
        count,
    })
}

fn parse_action(v: &[u8]) -> Result<FaultAction, RuleError> {
    let mut parts = v.splitn(3, |&c| c == b':');
    let name = parts.next().unwrap_or(&[]);
    let a = parts.next();
    let b = parts.next();
    let none = |x: Option<&[u8]>| {
        if x.is_none() {
            Ok(())
        } else {
            Err(RuleError::BadValue)
        }
    };
    let arg = |x: Option<&[u8]>| x.ok_or(RuleError::BadValue).and_then(num_u32);
    Ok(match name {
        b"drop" => {
            none(a)?;
            FaultAction::Drop
        }
        b"dup" => {
            none(a)?;
            FaultAction::Dup
        }
        b"icrc" => {
            none(a)?;
            FaultAction::Icrc
        }
        b"delay" => {
            none(b)?;
            let us = arg(a)?;
            if us == 0 || us > MAX_DELAY_US {
                return Err(RuleError::BadValue);
            }
            FaultAction::Delay(us)
        }
        b"reorder" => {
            none(b)?;
            let k = arg(a)?;
            if k == 0 || k > u32::from(MAX_REORDER) {
                return Err(RuleError::BadValue);
            }
            FaultAction::Reorder(k as u8)
        }
        b"nak" => {
            let kind = a.ok_or(RuleError::BadValue)?;
            if kind != b"rnr" {
                none(b)?;
            }
            FaultAction::Nak(match kind {
                b"rnr" => {
                    let t = arg(b)?;
                    if t > 31 {
                        return Err(RuleError::BadValue);
                    }
                    NakKind::Rnr(t as u8)
                }
                b"seq" => NakKind::PsnSeq,
                b"access" => NakKind::RemoteAccess,
                b"op" => NakKind::RemoteOp,
                b"inv" => NakKind::InvalidRequest,
                _ => return Err(RuleError::BadValue),
            })
        }
        _ => return Err(RuleError::BadValue),
    })
}

fn nonzero(n: u32) -> Result<u32, RuleError> {
    if n == 0 {
        Err(RuleError::BadValue)
    } else {
        Ok(n)
    }
}

fn num_u32(s: &[u8]) -> Result<u32, RuleError> {
    u32::try_from(num_u64(s)?).map_err(|_| RuleError::BadValue)
}

/// A decimal or `0x` hexadecimal number.
fn num_u64(s: &[u8]) -> Result<u64, RuleError> {
    let (digits, radix) = match s {
        [b'0', b'x' | b'X', rest @ ..] => (rest, 16u64),
        _ => (s, 10u64),
    };
    if digits.is_empty() || digits.len() > 20 {
        return Err(RuleError::BadValue);
    }
    let mut v: u64 = 0;
    for &c in digits {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' if radix == 16 => c - b'a' + 10,
            b'A'..=b'F' if radix == 16 => c - b'A' + 10,
            _ => return Err(RuleError::BadValue),
        };
        v = v
            .checked_mul(radix)
            .and_then(|v| v.checked_add(u64::from(d)))
            .ok_or(RuleError::BadValue)?;
    }
    Ok(v)
}

/// The canonical text of a rule: what the rules file lists, and what [`parse_rule`] reads
/// back into the same rule.
impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.qp {
            Some(q) => write!(f, "qp={q:#x}")?,
            None => f.write_str("qp=any")?,
        }
        f.write_str(match self.dir {
            Dir::Tx => " dir=tx",
            Dir::Rx => " dir=rx",
        })?;
        write!(f, " op={}", self.op.map_or("any", OpClass::name))?;
        if let Some((a, b)) = self.psn {
            write!(f, " psn={}-{}", a.get(), b.get())?;
        }
        match self.select {
            Select::All => {}
            Select::Nth(n) => write!(f, " nth={n}")?,
            Select::Every(n) => write!(f, " every={n}")?,
            Select::Prob { num, den } => write!(f, " prob={num}/{den} seed={}", self.seed)?,
        }
        f.write_str(" action=")?;
        match self.action {
            FaultAction::Drop => f.write_str("drop")?,
            FaultAction::Dup => f.write_str("dup")?,
            FaultAction::Icrc => f.write_str("icrc")?,
            FaultAction::Delay(us) => write!(f, "delay:{us}")?,
            FaultAction::Reorder(k) => write!(f, "reorder:{k}")?,
            FaultAction::Nak(k) => match k {
                NakKind::Rnr(t) => write!(f, "nak:rnr:{t}")?,
                NakKind::PsnSeq => f.write_str("nak:seq")?,
                NakKind::RemoteAccess => f.write_str("nak:access")?,
                NakKind::RemoteOp => f.write_str("nak:op")?,
                NakKind::InvalidRequest => f.write_str("nak:inv")?,
            },
        }
        if let Some(c) = self.count {
            write!(f, " count={c}")?;
        }
        Ok(())
    }
}

/// How a rule is listed: `id=N RULE seen=N hits=N live|retired`.
impl fmt::Display for RuleState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "id={} {} seen={} hits={} {}",
            self.id,
            self.rule,
            self.seen,
            self.hits,
            if self.live() { "live" } else { "retired" }
        )
    }
}

/// A [`fmt::Write`] into a byte buffer that stops (and reports an error) when full.
pub struct SliceWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> SliceWriter<'a> {
    /// Writes from the start of `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, len: 0 }
    }

    /// Bytes written.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl fmt::Write for SliceWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        if !super::copy_exact(dst, s.as_bytes()) {
            return Err(fmt::Error);
        }
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
