// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! READ responses that arrived ahead of `una` and were placed already.
//!
//! A response that overtakes earlier ones (reordering on the path, or an earlier one lost)
//! is placed into its WQE at once (its PSN fixes its offset) and remembered here, so that
//! when the responses before it arrive `una` moves past it instead of asking for it again.
//! Nothing here decides what is lost: see `SendQueue::gap_at_una`.

use super::Psn;

/// How far past its base the map reaches, in PSNs: [`super::MAX_READ_INFLIGHT`], the most a
/// READ keeps outstanding beyond `una` when it starts (a response further ahead is simply
/// not kept).
pub(crate) const SPAN: u32 = 256;
const WORDS: usize = (SPAN / 64) as usize;

/// A bitmap of PSNs `base + 1 .. base + SPAN`: bit `d` set means the READ response at
/// `base + d` is placed.
///
/// INVARIANT: `base` is never after the send queue's `una` (`una` only moves forward, and
/// the map is re-based at it before a response is kept and after `una` moves past kept
/// ones), so a set bit names a PSN at or after `base`; `skip_placed` reads it with `una`
/// ahead of `base`, within `SPAN`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ahead {
    base: Psn,
    bits: [u64; WORDS],
}

impl Ahead {
    /// An empty map based at `base`.
    pub(crate) const fn new(base: Psn) -> Self {
        Ahead {
            base,
            bits: [0; WORDS],
        }
    }

    /// Forgets every bit; the map is based at `base`.
    pub(crate) fn clear(&mut self, base: Psn) {
        *self = Ahead::new(base);
    }

    /// Whether any response is remembered.
    pub(crate) fn any(&self) -> bool {
        self.bits.iter().any(|w| *w != 0)
    }

    /// Re-bases the map at `una` (which only moves forward): bits for PSNs before it go.
    pub(crate) fn advance_to(&mut self, una: Psn) {
        let d = una.distance_from(self.base);
        if d == 0 {
            return;
        }
        if d >= SPAN {
            // Past everything kept (or, impossibly, backwards): nothing left to keep.
            self.clear(una);
            return;
        }
        // Shift right by d bits across the words (d < SPAN).
        let (words, bits) = ((d / 64) as usize, d % 64);
        let mut out = [0u64; WORDS];
        for (i, o) in out.iter_mut().enumerate() {
            let lo = self.bits.get(i + words).copied().unwrap_or(0);
            let hi = self.bits.get(i + words + 1).copied().unwrap_or(0);
            *o = if bits == 0 {
                lo
            } else {
                (lo >> bits) | (hi << (64 - bits))
            };
        }
        self.bits = out;
        self.base = una;
    }

    fn slot(&self, psn: Psn) -> Option<(usize, u64)> {
        let d = psn.distance_from(self.base);
        if d == 0 || d >= SPAN {
            return None;
        }
        Some(((d / 64) as usize, 1u64 << (d % 64)))
    }

    /// Remembers the response at `psn`; `false` if `psn` is outside the map (not kept).
    pub(crate) fn set(&mut self, psn: Psn) -> bool {
        let Some((w, m)) = self.slot(psn) else {
            return false;
        };
        match self.bits.get_mut(w) {
            Some(x) => {
                *x |= m;
                true
            }
            None => false,
        }
    }

    /// Whether the response at `psn` is remembered.
    pub(crate) fn has(&self, psn: Psn) -> bool {
        self.slot(psn)
            .and_then(|(w, m)| self.bits.get(w).map(|x| x & m != 0))
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_has_and_advance() {
        let mut a = Ahead::new(Psn::new(0xff_fff0));
        assert!(!a.any());
        assert!(
            !a.set(Psn::new(0xff_fff0)),
            "the base itself is una: never kept"
        );
        for p in [0xff_fff1, 0xff_ffff, 0x00_0000, 0x00_0042, 0x00_00ef] {
            assert!(a.set(Psn::new(p)));
        }
        assert!(!a.set(Psn::new(0x00_00f0)), "SPAN past the base");
        assert!(a.has(Psn::new(0x00_0000)) && !a.has(Psn::new(0x00_0001)));
        a.advance_to(Psn::new(0xff_ffff));
        assert!(!a.has(Psn::new(0xff_fff1)), "before the new base");
        assert!(!a.has(Psn::new(0xff_ffff)), "the base is una");
        assert!(a.has(Psn::new(0x00_0000)) && a.has(Psn::new(0x00_0042)));
        assert!(a.has(Psn::new(0x00_00ef)));
        a.advance_to(Psn::new(0x00_0042));
        assert!(a.has(Psn::new(0x00_00ef)) && !a.has(Psn::new(0x00_0000)));
        a.advance_to(Psn::new(0x00_0200));
        assert!(!a.any());
    }

    #[test]
    fn shifts_by_every_amount() {
        for d in 1..SPAN {
            let mut a = Ahead::new(Psn::new(7));
            for k in 1..SPAN {
                a.set(Psn::new(7 + k));
            }
            a.advance_to(Psn::new(7 + d));
            for k in 1..SPAN {
                let p = Psn::new(7 + d + k);
                assert_eq!(a.has(p), d + k < SPAN, "d {d} k {k}");
            }
        }
    }
}
