// SPDX-License-Identifier: GPL-2.0
//! Receive path: from a UDP datagram on port 4791 to a queue pair (or a counted drop).

use crate::counters::Counter;
use crate::glue::{IbDevRef, SkBuff};

/// UDP header + BTH + ICRC: the shortest possible RoCEv2 datagram.
const MIN_DATAGRAM: usize = 8 + 12 + 4;

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
    let Some((_l3, l4)) = skb.parts() else {
        counters.inc(Counter::RxDropMalformed);
        return;
    };
    if l4.len() < MIN_DATAGRAM {
        counters.inc(Counter::RxDropTruncated);
        return;
    }
    // Queue pairs arrive with the datapath; until then every valid packet has no QP.
    counters.inc(Counter::RxDropNoQp);
}
