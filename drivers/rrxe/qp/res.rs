// SPDX-License-Identifier: GPL-2.0
//! What `rdma resource show qp -dd` shows of a QP besides the core's attributes (its state,
//! type, `sq-psn` and `rq-psn` as last set): where its requester and responder are, its
//! congestion window, round-trip estimate and retransmit timeout, and its own counts.

use super::Qp;
use crate::counters::Counter;
use crate::glue::NlDriverAttrs;
use kernel::prelude::*;

/// The protocol state shown, copied under the engine lock.
struct Detail {
    next_psn: u32,
    una_psn: u32,
    inflight: u32,
    cwnd: u32,
    srtt_us: u64,
    rto_us: Option<u64>,
    epsn: u32,
    msn: u32,
    sq: crate::proto::SqStats,
}

impl Qp {
    /// Fills the QP's driver attributes (process context: a netlink dump).
    pub(crate) fn fill_res(&self, a: &mut NlDriverAttrs<'_>) -> Result {
        let d = {
            let e = self.engine.lock();
            let sq = e.proto.send_queue();
            let rsp = e.proto.responder();
            Detail {
                next_psn: sq.next_psn().get(),
                una_psn: sq.una().get(),
                inflight: sq.next_psn().distance_from(sq.una()),
                cwnd: sq.cwnd(),
                srtt_us: sq.srtt_us(),
                rto_us: sq.rto_us(),
                epsn: rsp.epsn().get(),
                msn: rsp.msn(),
                sq: sq.stats(),
            }
        };
        // Requester: the next PSN it assigns, the oldest one not yet acknowledged, and the
        // PSNs in between; the congestion window (packets) and the round trip it measured
        // (0 before a sample), with the retransmit timeout that follows (none without a
        // Local ACK Timeout).
        a.u32(c"sq_next_psn", d.next_psn)?;
        a.u32(c"sq_una_psn", d.una_psn)?;
        a.u32(c"sq_inflight", d.inflight)?;
        a.u32(c"cwnd", d.cwnd)?;
        a.u64(c"srtt_us", d.srtt_us)?;
        if let Some(rto) = d.rto_us {
            a.u64(c"rto_us", rto)?;
        }
        // Responder: the PSN it expects next and its message sequence number.
        a.u32(c"rq_epsn", d.epsn)?;
        a.u32(c"rq_msn", d.msn)?;
        // The requester's recovery since the QP was created.
        a.u64(c"retransmits", d.sq.retransmits)?;
        a.u64(c"retransmit_timeouts", d.sq.timeouts)?;
        a.u64(c"seq_naks_rcvd", d.sq.seq_naks)?;
        a.u64(c"rnr_naks_rcvd", d.sq.rnr_naks)?;
        a.u64(c"cwnd_cuts", d.sq.cwnd_cuts)?;
        // The QP's traffic since it was created.
        for c in [
            Counter::SentPkts,
            Counter::RcvdPkts,
            Counter::SentBytes,
            Counter::RcvdBytes,
        ] {
            if let Some(name) = Counter::NAMES.get(c as usize) {
                a.u64(name, self.stats.get(c))?;
            }
        }
        Ok(())
    }
}
