// SPDX-License-Identifier: GPL-2.0
//! Per-QP counters, `rdma statistic qp`: the core's counter objects and the QPs bound to
//! them.
//!
//! A QP counts its own events ([`Counter::PER_QP`]) in [`Qp::stats`] from its creation,
//! as the device counts them. Binding it to a counter object (automatically, by the rule
//! `rdma statistic qp set link rrxe0/1 auto ...` sets, or by `rdma statistic qp bind`)
//! marks where its counts stand; each update of the object adds what the QP counted since
//! the mark to the object's values and moves the mark. So an object shows the events of
//! its QPs while they were bound to it, and keeps them when they leave, as a hardware
//! queue counter does (mlx5's q counters, which the core's counter API was made for).
//!
//! The core shows a port's counter (`rdma statistic show link`, `hw_counters/`) as the
//! driver's value plus the values of the port's counter objects, live ones and freed ones
//! (kept in the port's history): the driver's value is that of the QPs bound to no object.
//! So what the objects were given is subtracted from what the driver reports
//! ([`CounterSets::unbound`]). The PerfMgt agent (`crate::mad`) reads the device's totals.

use crate::counters::{Counter, Counters, NUM_COUNTERS};
use crate::glue::RdmaCounter;
use crate::qp::{Qp, MAX_QP};
use kernel::alloc::AllocError;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

/// Counter objects a device holds at most. Each one holds a bound QP from its first bind
/// until the core frees it after its last unbind, so with at most [`MAX_QP`] QPs this is
/// not reached; a bind beyond it fails with ENOSPC.
const MAX_SETS: usize = MAX_QP;

/// A QP bound to a counter object.
struct Member {
    /// The QP's own counts.
    stats: Arc<Counters>,
    /// Where its [`Counter::PER_QP`] counts stood at the last update (at its bind at
    /// first), in that order.
    marks: [u64; Counter::PER_QP.len()],
}

/// A counter object: its number (`cntn`) and its QPs (slots: a QP that leaves frees one).
struct Set {
    id: u32,
    members: KVec<Option<Member>>,
}

/// A device's counter objects (slots, as the members) and the next number to try.
struct Sets {
    sets: KVec<Option<Set>>,
    next_id: u32,
}

/// A device's counter objects.
#[pin_data]
pub(crate) struct CounterSets {
    /// The objects. A mutex, taken in process context only: by the core's counter ops,
    /// each called with its object's mutex held (taken outside this one). Nothing nests in
    /// it; inside, the QPs' counts are read (atomics).
    #[pin]
    inner: Mutex<Sets>,
    /// What the objects were given, all of them since the device came up: the part of
    /// each device counter the core shows through them.
    given: Counters,
}

impl CounterSets {
    /// No objects.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(CounterSets {
            inner <- kernel::new_mutex!(
                Sets {
                    sets: KVec::new(),
                    next_id: 1,
                },
                "rrxe_qp_counters"
            ),
            given: Counters::new(),
        })
    }

    /// The device's counters less what the objects were given, in [`Counter::NAMES`]
    /// order: the values the driver reports for the port (the core adds the objects').
    /// An update may give an object counts the device's total (read first) does not have
    /// yet: the difference stops at zero.
    pub(crate) fn unbound<'a>(&'a self, totals: &'a Counters) -> impl Iterator<Item = u64> + 'a {
        totals
            .values()
            .zip(self.given.values())
            .map(|(t, g)| t.saturating_sub(g))
    }

    /// `counter_bind_qp`: `qp` counts in `counter` from now on. A new object (number 0) gets
    /// a number here, and loses it again if the bind fails (the core then frees it without
    /// `counter_dealloc`).
    pub(crate) fn bind(&self, counter: &RdmaCounter<'_>, qp: &Qp) -> Result {
        let mut s = self.inner.lock();
        let new = counter.id() == 0;
        if new {
            if s.sets.iter().flatten().count() >= MAX_SETS {
                return Err(ENOSPC);
            }
            let id = s.fresh_id();
            let set = Set {
                id,
                members: KVec::new(),
            };
            put(&mut s.sets, set)?;
            counter.set_id(id);
        }
        let id = counter.id();
        let member = Member {
            stats: qp.stats.clone(),
            marks: marks(&qp.stats),
        };
        let pushed = match s.find(id) {
            Some(set) => put(&mut set.members, member),
            None => Err(AllocError),
        };
        if pushed.is_err() {
            if new {
                s.remove(id);
                counter.set_id(0);
            }
            return Err(ENOMEM);
        }
        Ok(())
    }

    /// `counter_unbind_qp`: what `qp` counted since the last update goes to `counter`, then
    /// the QP leaves it.
    pub(crate) fn unbind(&self, counter: &RdmaCounter<'_>, qp: &Qp) {
        let mut s = self.inner.lock();
        let Some(set) = s.find(counter.id()) else {
            return;
        };
        let slot = set
            .members
            .iter_mut()
            .find(|m| m.as_ref().is_some_and(|m| Arc::ptr_eq(&m.stats, &qp.stats)));
        if let Some(slot) = slot {
            if let Some(m) = slot.as_mut() {
                self.give(m, counter);
            }
            *slot = None;
        }
    }

    /// `counter_update_stats`: what each of `counter`'s QPs counted since the last update
    /// goes to it.
    pub(crate) fn update(&self, counter: &RdmaCounter<'_>) -> Result {
        let mut s = self.inner.lock();
        let set = s.find(counter.id()).ok_or(EINVAL)?;
        for m in set.members.iter_mut().flatten() {
            self.give(m, counter);
        }
        Ok(())
    }

    /// `counter_dealloc`: `counter` is freed (the core updated it one last time and has
    /// unbound its QPs).
    pub(crate) fn dealloc(&self, counter: &RdmaCounter<'_>) {
        let id = counter.id();
        if id != 0 {
            self.inner.lock().remove(id);
        }
    }

    /// Adds what `m` counted since its marks to `counter`'s values and to what the
    /// objects were given, and moves the marks.
    fn give(&self, m: &mut Member, counter: &RdmaCounter<'_>) {
        for (&c, mark) in Counter::PER_QP.iter().zip(m.marks.iter_mut()) {
            let now = m.stats.get(c);
            let n = now.wrapping_sub(*mark);
            if n != 0 {
                counter.add(c as usize, n);
                self.given.add(c, n);
                *mark = now;
            }
        }
    }
}

impl Sets {
    /// A number no object has (not 0), the next one after the last given out.
    fn fresh_id(&mut self) -> u32 {
        loop {
            let id = self.next_id;
            self.next_id = self.next_id.checked_add(1).unwrap_or(1);
            if !self.sets.iter().flatten().any(|s| s.id == id) {
                return id;
            }
        }
    }

    /// The object numbered `id`.
    fn find(&mut self, id: u32) -> Option<&mut Set> {
        self.sets.iter_mut().flatten().find(|s| s.id == id)
    }

    /// Frees the slot of the object numbered `id` (and its members').
    fn remove(&mut self, id: u32) {
        if let Some(slot) = self
            .sets
            .iter_mut()
            .find(|s| s.as_ref().is_some_and(|s| s.id == id))
        {
            *slot = None;
        }
    }
}

/// Puts `x` into a free slot of `v`, or a new one.
fn put<T>(v: &mut KVec<Option<T>>, x: T) -> Result<(), AllocError> {
    match v.iter_mut().find(|s| s.is_none()) {
        Some(slot) => {
            *slot = Some(x);
            Ok(())
        }
        None => v.push(Some(x), GFP_KERNEL),
    }
}

/// Where `stats`' [`Counter::PER_QP`] counts stand.
fn marks(stats: &Counters) -> [u64; Counter::PER_QP.len()] {
    let mut m = [0; Counter::PER_QP.len()];
    for (v, &c) in m.iter_mut().zip(Counter::PER_QP) {
        *v = stats.get(c);
    }
    m
}

// Every per-QP counter is a device counter (an index of the port's values).
const _: () = assert!(Counter::PER_QP.len() <= NUM_COUNTERS);
