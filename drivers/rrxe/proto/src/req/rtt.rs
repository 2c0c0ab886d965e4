// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The retransmit timeout of an RC send queue: the QP's Local ACK Timeout as the floor, a
//! round-trip estimate above it, and exponential backoff on consecutive timeouts.
//!
//! The IBTA's Local ACK Timeout is a minimum ("at least"); rdma_rxe waits exactly that
//! long. When responses queue behind other traffic for longer than that (a slow host, a
//! TCG guest under KASAN, many QPs sharing one transmit queue), a fixed timeout fires while
//! nothing is lost, every timeout re-requests data that is already on its way, and those
//! duplicates lengthen the queue further, until `retry_cnt` timeouts in a row end the QP
//! in `RetryExcErr`. So the timeout follows the measured round trip, as TCP's does
//! (RFC 6298): `srtt + 4 * rttvar`, never below the QP's timeout, with Karn's rule (no
//! sample from a retransmitted packet). Progress clears the backoff (see `on_progress`).
//!
//! Samples need a clock: `ActionSink::now_us`. Without one
//! (the default), no sample is taken and the timeout is the QP's.

use super::Psn;

/// Consecutive timeouts double the retransmit timeout at most this many times.
pub const MAX_RTO_BACKOFF: u8 = 3;
/// The estimate never asks for more than this (µs) before backoff: a peer that is gone is
/// still reported within `retry_cnt` such waits.
pub const MAX_RTO_ESTIMATE_US: u64 = 2_000_000;

/// Round-trip state of one send queue.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rto {
    /// Smoothed round trip (µs); 0 until the first sample.
    srtt: u64,
    /// Round-trip variation (µs).
    rttvar: u64,
    /// The packet being timed: its PSN and when it was first sent.
    sample: Option<(Psn, u64)>,
    /// Timeouts since the last progress.
    pub(crate) backoff: u8,
}

impl Rto {
    /// No sample yet, no backoff.
    pub(crate) const NEW: Rto = Rto {
        srtt: 0,
        rttvar: 0,
        sample: None,
        backoff: 0,
    };

    /// Forgets everything (a new connection).
    pub(crate) fn reset(&mut self) {
        *self = Rto::NEW;
    }

    /// The smoothed round trip in µs (0 before the first sample).
    pub(crate) const fn srtt(&self) -> u64 {
        self.srtt
    }

    /// A request packet `psn` went out for the first time, `now()` ago: time it unless
    /// another one is being timed (the clock is read only then: this runs per packet).
    pub(crate) fn on_new_packet(&mut self, psn: Psn, now: impl FnOnce() -> Option<u64>) {
        if self.sample.is_none() {
            if let Some(t) = now() {
                self.sample = Some((psn, t));
            }
        }
    }

    /// Packets may be sent again (a timeout or a NAK): a response could now answer either
    /// copy, so the running sample is void (Karn).
    pub(crate) fn on_retransmit(&mut self) {
        self.sample = None;
    }

    /// A timeout: the next wait doubles (up to [`MAX_RTO_BACKOFF`] times).
    pub(crate) fn on_timeout(&mut self) {
        self.sample = None;
        if self.backoff < MAX_RTO_BACKOFF {
            self.backoff += 1;
        }
    }

    /// Everything before `una` is acknowledged at `now`: progress clears the backoff, and
    /// completes the sample if it covers the timed packet.
    ///
    /// TCP keeps its backoff until a fresh sample (Karn); here progress clears it, as it
    /// resets the retry counter: with the QP's timeout as the floor (537 ms from rdma_cm,
    /// 67 ms from perftest) a kept backoff can make each loss cost seconds (while it was
    /// kept, kverbs-rrxe-loss's 256 KiB WRITE under netem's 5 % missed its 20 s once, on a
    /// loaded machine: not proven to be the cause), and the spurious timeouts Karn guards
    /// against are what the READ probe and the estimate already prevent. The clock is
    /// read only when the timed packet is covered.
    pub(crate) fn on_progress(&mut self, una: Psn, now: impl FnOnce() -> Option<u64>) {
        self.backoff = 0;
        let Some((psn, t)) = self.sample else { return };
        if una.before(psn.next()) {
            return;
        }
        let Some(now) = now() else { return };
        self.sample = None;
        // A clock that went backwards gives no sample.
        let Some(r) = now.checked_sub(t) else { return };
        let r = r.min(MAX_RTO_ESTIMATE_US);
        if self.srtt == 0 {
            self.srtt = r.max(1);
            self.rttvar = r / 2;
        } else {
            let err = self.srtt.abs_diff(r);
            self.rttvar = self.rttvar - self.rttvar / 4 + err / 4;
            self.srtt = self.srtt - self.srtt / 8 + r / 8;
        }
        self.backoff = 0;
    }

    /// The wait before the next timeout, given the QP's Local ACK Timeout `base` (µs).
    pub(crate) fn timeout(&self, base: u64) -> u64 {
        let est = if self.srtt == 0 {
            0
        } else {
            self.srtt
                .saturating_add(self.rttvar.saturating_mul(4))
                .min(MAX_RTO_ESTIMATE_US)
        };
        base.max(est) << self.backoff.min(MAX_RTO_BACKOFF)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_is_the_qp_timeout_and_backoff_doubles() {
        let mut r = Rto::NEW;
        assert_eq!(r.timeout(1000), 1000);
        for n in 1..=MAX_RTO_BACKOFF {
            r.on_timeout();
            assert_eq!(r.timeout(1000), 1000 << n);
        }
        r.on_timeout();
        assert_eq!(r.timeout(1000), 1000 << MAX_RTO_BACKOFF);
    }

    #[test]
    fn samples_raise_the_timeout_and_progress_clears_backoff() {
        let mut r = Rto::NEW;
        r.on_new_packet(Psn::new(10), || Some(1_000));
        r.on_timeout();
        // Karn: the timed packet was sent again; its ACK gives no sample.
        r.on_progress(Psn::new(11), || Some(9_000));
        assert_eq!((r.srtt(), r.backoff), (0, 0));
        r.on_new_packet(Psn::new(11), || Some(10_000));
        r.on_new_packet(Psn::new(12), || Some(10_001)); // one sample at a time
        r.on_progress(Psn::new(11), || Some(14_000)); // does not cover PSN 11 yet
        assert_eq!(r.srtt(), 0);
        r.on_progress(Psn::new(13), || Some(18_000));
        assert_eq!((r.srtt(), r.backoff), (8_000, 0));
        assert_eq!(r.timeout(1000), 8_000 + 4 * 4_000);
        assert_eq!(r.timeout(100_000), 100_000);
    }

    #[test]
    fn without_a_clock_progress_clears_backoff() {
        let mut r = Rto::NEW;
        r.on_new_packet(Psn::new(1), || None);
        r.on_timeout();
        r.on_progress(Psn::new(2), || None);
        assert_eq!((r.srtt(), r.backoff, r.timeout(500)), (0, 0, 500));
    }

    #[test]
    fn psn_wrap_and_huge_samples_stay_in_range() {
        let mut r = Rto::NEW;
        r.on_new_packet(Psn::new(0x00ff_ffff), || Some(0));
        r.on_progress(Psn::new(0), || Some(u64::MAX));
        assert_eq!(r.srtt(), MAX_RTO_ESTIMATE_US);
        for _ in 0..10 {
            r.on_timeout();
        }
        assert_eq!(
            r.timeout(u64::from(u32::MAX)),
            u64::from(u32::MAX) << MAX_RTO_BACKOFF
        );
        // A clock that goes backwards is ignored.
        r.on_new_packet(Psn::new(5), || Some(100));
        r.on_progress(Psn::new(6), || Some(50));
        assert_eq!(r.srtt(), MAX_RTO_ESTIMATE_US);
    }
}
