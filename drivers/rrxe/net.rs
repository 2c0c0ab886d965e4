// SPDX-License-Identifier: GPL-2.0
//! Receive path: from a UDP datagram on port 4791 to a queue pair (or a counted drop).

use crate::counters::Counter;
use crate::glue::{IbDevRef, KernelCrc32, SkBuff};
use crate::proto::{self, ParseError};

const IPV4_HDR: usize = 20;
const IPV6_HDR: usize = 40;
const UDP_HDR: usize = 8;
/// UDP header + BTH + ICRC: the shortest possible RoCEv2 datagram.
const MIN_DATAGRAM: usize = UDP_HDR + 12 + 4;

/// Handles one received datagram (softirq context; must not sleep).
pub(crate) fn recv(mut skb: SkBuff) {
    let Some(dev) = skb.netdev().and_then(IbDevRef::by_netdev) else {
        // Not for an rrxe device: dropped (freed) here.
        return;
    };
    let counters = &dev.data().counters;
    counters.inc(Counter::RcvdPkts);
    if skb.linearize().is_err() {
        counters.inc(Counter::RxDropNoMem);
        return;
    }
    let Some((ip_pkt, l3_len)) = skb.ip_packet() else {
        counters.inc(Counter::RxDropMalformed);
        return;
    };
    // IP options (or extension headers) are not part of RoCEv2.
    let v6 = match l3_len {
        IPV4_HDR => false,
        IPV6_HDR => true,
        _ => {
            counters.inc(Counter::RxDropMalformed);
            return;
        }
    };
    let Some(ib) = ip_pkt.get(l3_len + UDP_HDR..) else {
        counters.inc(Counter::RxDropTruncated);
        return;
    };
    if ib.len() + UDP_HDR < MIN_DATAGRAM {
        counters.inc(Counter::RxDropTruncated);
        return;
    }
    if !proto::icrc::verify(&KernelCrc32, ip_pkt, v6) {
        counters.inc(Counter::IcrcErrors);
        return;
    }
    let _pkt = match proto::parse_packet(ib) {
        Ok(p) => p,
        Err(ParseError::Truncated) => {
            counters.inc(Counter::RxDropTruncated);
            return;
        }
        Err(_) => {
            counters.inc(Counter::RxDropMalformed);
            return;
        }
    };
    // Queue pairs arrive with the datapath; until then every valid packet has no QP.
    counters.inc(Counter::RxDropNoQp);
}
