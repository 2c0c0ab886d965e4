// SPDX-License-Identifier: GPL-2.0
//! Fault injection: a device's rules ([`proto::fault`]), the per-packet check the transmit
//! and receive paths make, and the debugfs file `/sys/kernel/debug/rrxe/<dev>/faults` that
//! sets and lists them (docs/fault-injection.md).
//!
//! Without a live rule, a packet costs one relaxed load of [`Faults::present`]. With one,
//! the check takes the rules' lock for one [`proto::fault::FaultSet::decide`]: at most
//! [`fault::MAX_RULES`] rules, a bound no user chooses.

use crate::counters::{Counter, Counters};
use crate::glue::sync::{new_bh_spinlock, BhSpinLock};
use crate::glue::trace::{self, FaultDid};
use crate::glue::IbDev;
use crate::proto;
use crate::proto::fault::{self, Command, FaultSet, PacketView, Rule, SliceWriter};
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::prelude::*;

pub(crate) use crate::proto::fault::{Dir, FaultAction};

/// A device's fault injection rules.
#[pin_data]
pub(crate) struct Faults {
    /// Whether a rule is live: the per-packet paths read it (relaxed) before anything
    /// else. Set under `set`'s lock when a rule is added, cleared there when the last one
    /// retires or the rules are cleared; a check that reads it stale takes the lock and
    /// finds the truth.
    present: AtomicBool,
    /// The rules and their counts, on the heap from the first write on (the set is a few
    /// KiB: not in the device's data, whose initialiser runs on the stack). A bottom-half
    /// lock: taken by a QP's run (process context or the receive softirq, under the QP's
    /// `engine`, for one decision over at most [`fault::MAX_RULES`] rules) and by the
    /// debugfs file (process context, for one listing or one write's update). Nothing is
    /// taken inside it.
    #[pin]
    set: BhSpinLock<Option<KBox<FaultSet>>>,
}

/// An empty set on the heap (its own frame holds the one temporary).
#[inline(never)]
fn new_set() -> Result<KBox<FaultSet>> {
    Ok(KBox::new(FaultSet::new(), GFP_KERNEL)?)
}

impl Faults {
    /// No rules.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Faults {
            present: AtomicBool::new(false),
            set <- new_bh_spinlock!(None, "rrxe_faults"),
        })
    }

    /// What the rules do to the packet of QP `qpn` of device `dev` going `dir` with headers
    /// `hdrs`, if anything (the hit is counted, in the rule and in `fault_hits`, and traced:
    /// `rrxe_fault`).
    #[inline]
    pub(crate) fn check(
        &self,
        dev: &IbDev,
        counters: &Counters,
        qpn: u32,
        dir: Dir,
        hdrs: &proto::Headers,
    ) -> Option<FaultAction> {
        if !self.present.load(Ordering::Relaxed) {
            return None;
        }
        self.check_rules(dev, counters, qpn, dir, hdrs)
    }

    #[cold]
    fn check_rules(
        &self,
        dev: &IbDev,
        counters: &Counters,
        qpn: u32,
        dir: Dir,
        hdrs: &proto::Headers,
    ) -> Option<FaultAction> {
        let view = PacketView {
            qpn,
            dir,
            class: fault::OpClass::of(hdrs.bth.opcode, hdrs.aeth.map(|a| a.syndrome)),
            psn: hdrs.bth.psn,
        };
        let mut guard = self.set.lock();
        let set = Option::as_mut(&mut *guard)?;
        let hit = set.decide(&view);
        if hit.is_some() && !set.any_live() {
            self.present.store(false, Ordering::Relaxed);
        }
        drop(guard);
        let (rule, action) = hit?;
        counters.inc(Counter::FaultHits);
        let did = match action {
            FaultAction::Drop => FaultDid::Drop,
            FaultAction::Dup => FaultDid::Dup,
            FaultAction::Delay(us) => FaultDid::Delay(us),
            FaultAction::Reorder(k) => FaultDid::Reorder(k),
            FaultAction::Icrc => FaultDid::Icrc,
            FaultAction::Nak(k) => FaultDid::Nak(k.syndrome()),
        };
        let (opcode, psn) = (hdrs.bth.opcode.0, hdrs.bth.psn.get());
        trace::fault(dev, rule, qpn, dir == Dir::Rx, opcode, psn, did);
        Some(action)
    }

    /// The listing: one line per rule (`id=N RULE seen=N hits=N live|retired`), in the
    /// order they were added. Stops at the last whole line that fits `out`.
    pub(crate) fn show(&self, out: &mut [u8]) -> usize {
        let mut len = 0;
        let guard = self.set.lock();
        let Some(set) = Option::as_ref(&*guard) else {
            return 0;
        };
        for r in set.rules() {
            let Some(rest) = out.get_mut(len..) else {
                break;
            };
            let mut w = SliceWriter::new(rest);
            if writeln!(w, "{r}").is_err() {
                break;
            }
            len += w.len();
        }
        len
    }

    /// One write of the file: its lines are rules to add, `clear`, blank lines or `#`
    /// comments. All of them are parsed before anything changes: a bad line refuses the
    /// whole write (EINVAL); rules that do not fit the [`fault::MAX_RULES`] slots (after a
    /// `clear` in the same write, if any) refuse it too (ENOSPC, counted in
    /// `fault_rules_refused`).
    pub(crate) fn write(&self, counters: &Counters, text: &[u8]) -> Result {
        // Pass 1: every line parses; the rules to add are those after the last `clear`
        // (the ones before it would be cleared with the rest).
        let mut clear = false;
        let mut n = 0usize;
        let mut start = 0usize;
        for (i, line) in text.split(|&c| c == b'\n').enumerate() {
            match fault::parse_command(line).map_err(|_| EINVAL)? {
                Command::Nothing => {}
                Command::Clear => {
                    clear = true;
                    n = 0;
                    start = i;
                }
                // Held back on receive only: a packet is sent as it is built, from memory
                // its WQE may give back once it is out.
                Command::Add(Rule {
                    action: FaultAction::Delay(_) | FaultAction::Reorder(_),
                    dir: Dir::Tx,
                    ..
                }) => return Err(crate::glue::eopnotsupp()),
                Command::Add(_) => n += 1,
            }
        }
        if n > fault::MAX_RULES {
            counters.add(Counter::FaultRulesRefused, n as u64);
            return Err(ENOSPC);
        }
        // Pass 2, outside the lock: the rules, on the heap (at most MAX_RULES).
        let mut add = KVec::with_capacity(n, GFP_KERNEL)?;
        for line in text.split(|&c| c == b'\n').skip(start) {
            if let Ok(Command::Add(r)) = fault::parse_command(line) {
                add.push(r, GFP_KERNEL)?;
            }
        }
        // The set, made at the first write (outside the lock: it may sleep).
        let fresh = if self.set.lock().is_none() {
            Some(new_set()?)
        } else {
            None
        };
        let mut guard = self.set.lock();
        if guard.is_none() {
            *guard = fresh;
        }
        let Some(set) = Option::as_mut(&mut *guard) else {
            return Err(ENOMEM);
        };
        let free = if clear { fault::MAX_RULES } else { set.free() };
        if add.len() > free {
            drop(guard);
            counters.add(Counter::FaultRulesRefused, add.len() as u64);
            return Err(ENOSPC);
        }
        if clear {
            set.clear();
        }
        // Fits (checked above).
        let _ = set.add_all(add.iter());
        self.present.store(set.any_live(), Ordering::Relaxed);
        Ok(())
    }
}
