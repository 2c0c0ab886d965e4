// SPDX-License-Identifier: GPL-2.0
//! The port's management datagrams: the Performance Management Agent (PerfMgt), which
//! `perfquery` and `ports/1/counters/` in sysfs read, answered from the device's counters
//! by [`proto::pma`]. rdma_rxe does the same (`rxe_mad.c`).

use crate::counters::Counter;
use crate::glue::{IbDev, MadResult, MAD_SIZE};
use crate::proto::pma;

const _: () = assert!(MAD_SIZE == pma::MAD_SIZE);

/// rrxe's one port.
const PORT: u32 = 1;

/// `process_mad`: the MAD `req` at `port`, a response in `out` if it is the PMA's.
pub(crate) fn process(
    dev: &IbDev,
    port: u32,
    req: &[u8; MAD_SIZE],
    out: &mut [u8; MAD_SIZE],
) -> MadResult {
    // rdma_rxe: a port it does not have is a failure.
    if port != PORT {
        return MadResult::Failure;
    }
    match pma::answer(req, PORT as u8, || port_counts(dev), out) {
        pma::Verdict::Reply => MadResult::Reply,
        pma::Verdict::PassOn => MadResult::PassOn,
    }
}

/// The device's counters, as the PMA reports them: all of the port's traffic (the QPs
/// bound to per-QP counter objects too).
fn port_counts(dev: &IbDev) -> pma::PortCounts {
    let c = &dev.data().counters;
    pma::PortCounts {
        xmit_bytes: c.get(Counter::SentBytes),
        rcv_bytes: c.get(Counter::RcvdBytes),
        xmit_pkts: c.get(Counter::SentPkts),
        rcv_pkts: c.get(Counter::RcvdPkts),
        link_downed: c.get(Counter::LinkDowned),
        // IBA's PortRcvErrors: "packets containing an error" (a bad ICRC, too short,
        // malformed headers); what a QP refuses is not an error of the packet.
        rcv_errors: c
            .get(Counter::IcrcErrors)
            .saturating_add(c.get(Counter::RxDropTruncated))
            .saturating_add(c.get(Counter::RxDropMalformed)),
        // PortXmitDiscards: "outbound packets discarded by the port".
        xmit_discards: c.get(Counter::TxDrops),
    }
}
