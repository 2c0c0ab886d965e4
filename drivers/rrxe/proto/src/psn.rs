// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! 24-bit packet sequence number arithmetic.
//!
//! PSNs live in a 2^24 circular space. Comparison is done with the usual
//! serial-number rule: `a` is *before* `b` when the forward distance from `a`
//! to `b` is in `1..2^23`. [`Psn::diff`] returns the signed distance in
//! `-2^23..2^23`.

/// Mask of the 24 PSN bits.
pub const PSN_MASK: u32 = 0x00FF_FFFF;
/// Half of the PSN space: the largest window that can be compared unambiguously.
pub const PSN_HALF: u32 = 0x0080_0000;

/// A 24-bit packet sequence number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Psn(u32);

impl Psn {
    /// Creates a PSN, masking `v` to 24 bits.
    pub const fn new(v: u32) -> Psn {
        Psn(v & PSN_MASK)
    }
    /// The raw 24-bit value.
    pub const fn get(self) -> u32 {
        self.0
    }
    /// `self + n` modulo 2^24.
    pub const fn add(self, n: u32) -> Psn {
        Psn(self.0.wrapping_add(n) & PSN_MASK)
    }
    /// `self - n` modulo 2^24.
    pub const fn sub(self, n: u32) -> Psn {
        Psn(self.0.wrapping_sub(n) & PSN_MASK)
    }
    /// The next PSN.
    pub const fn next(self) -> Psn {
        self.add(1)
    }
    /// Signed serial distance `self - other`, in `-2^23..2^23`.
    pub const fn diff(self, other: Psn) -> i32 {
        ((self.0.wrapping_sub(other.0) << 8) as i32) >> 8
    }
    /// Forward distance from `from` to `self` (modulo 2^24, in `0..2^24`).
    pub const fn distance_from(self, from: Psn) -> u32 {
        self.0.wrapping_sub(from.0) & PSN_MASK
    }
    /// `true` when `self` is strictly before `other` in serial order.
    pub const fn before(self, other: Psn) -> bool {
        self.diff(other) < 0
    }
    /// `true` when `self` is strictly after `other` in serial order.
    pub const fn after(self, other: Psn) -> bool {
        self.diff(other) > 0
    }
    /// `true` when `self` lies in the window `[start, start + len)`.
    pub const fn in_window(self, start: Psn, len: u32) -> bool {
        self.distance_from(start) < len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraparound() {
        let a = Psn::new(PSN_MASK);
        assert_eq!(a.next(), Psn::new(0));
        assert_eq!(Psn::new(0).diff(a), 1);
        assert_eq!(a.diff(Psn::new(0)), -1);
        assert!(a.before(Psn::new(5)));
        assert!(Psn::new(5).in_window(a, 7));
        assert!(!Psn::new(6).in_window(a, 7));
        assert_eq!(Psn::new(3).distance_from(a), 4);
        assert_eq!(Psn::new(0).diff(Psn::new(PSN_HALF)), -(PSN_HALF as i32));
        assert_eq!(Psn::new(0x1234_5678).get(), 0x34_5678);
    }
}
