// SPDX-License-Identifier: GPL-2.0
//! Per-device counters, shown by `rdma statistic show link rrxe0/1`, and the part of them a
//! QP keeps of its own ([`Counter::PER_QP`], `rdma statistic qp`, see [`crate::qp_counter`]).

use core::ffi::CStr;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;

macro_rules! counters {
    ($($(#[doc = $doc:literal])* $name:ident = $cname:literal,)*) => {
        /// One device counter.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        pub(crate) enum Counter {
            $($(#[doc = $doc])* $name,)*
        }

        impl Counter {
            /// The counters' names, in order, as `rdma statistic` shows them.
            pub(crate) const NAMES: &'static [&'static CStr] = &[$($cname,)*];
        }
    };
}

counters! {
    /// RoCEv2 packets sent.
    SentPkts = c"sent_pkts",
    /// RoCEv2 packets received (before validation).
    RcvdPkts = c"rcvd_pkts",
    /// Octets sent: each packet's IP datagram, IP header to ICRC (rdma_rxe counts
    /// `skb->len` in `rxe_xmit_packet`, once its IP and UDP headers are pushed: the same
    /// bytes).
    SentBytes = c"sent_bytes",
    /// Octets received, counted as `sent_bytes` (rdma_rxe: `skb->len -
    /// skb_network_offset(skb)` in `rxe_rcv`), of every packet `rcvd_pkts` counts.
    RcvdBytes = c"rcvd_bytes",
    /// Packets sent again after a timeout or a NAK.
    Retransmits = c"retransmits",
    /// Retransmission timeouts (each one resends from the oldest unacknowledged packet).
    RetransmitTimeouts = c"retransmit_timeouts",
    /// Times a QP's congestion window was halved (once per loss episode).
    CwndCuts = c"cwnd_cuts",
    /// Cuts undone: the retransmit timeout that made one proved spurious (its probe was
    /// answered by the originals, late, not lost).
    CwndUndos = c"cwnd_undos",
    /// RNR NAKs sent.
    RnrNaksSent = c"rnr_naks_sent",
    /// RNR NAKs received.
    RnrNaksRcvd = c"rnr_naks_rcvd",
    /// Duplicate requests received.
    DuplicateRequests = c"duplicate_request",
    /// PSN sequence errors (NAK sent).
    SeqErrors = c"out_of_seq_request",
    /// PSN sequence error NAKs received (the peer missed a request packet; go-back-N from
    /// the PSN it names).
    SeqNaksRcvd = c"seq_naks_rcvd",
    /// Packets dropped for a bad ICRC.
    IcrcErrors = c"rx_icrc_errors",
    /// Packets dropped: shorter than their headers.
    RxDropTruncated = c"rx_drop_truncated",
    /// Packets dropped: malformed headers. A bad version or opcode is found before the QP
    /// is looked up; a bad pad or payload length by the QP's parse (so such a packet to no
    /// QP counts in `rx_drop_no_qp`).
    RxDropMalformed = c"rx_drop_malformed",
    /// Packets dropped: no such queue pair.
    RxDropNoQp = c"rx_drop_no_qp",
    /// Multicast packets (destination QPN 0xFFFFFF) received for a group of the device,
    /// each delivered to every QP attached to it.
    McastRcvd = c"rcvd_mcast_pkts",
    /// Multicast packets dropped: the device has no QP attached to their group.
    RxDropMcastNoGroup = c"rx_drop_mcast_no_group",
    /// Multicast attachments refused (ENOMEM) at a limit: `max_mcast_grp`,
    /// `max_mcast_qp_attach` or `max_total_mcast_qp_attach`.
    McastAttachRefused = c"mcast_attach_refused",
    /// Packets dropped: the QP's state does not accept them.
    RxDropQpState = c"rx_drop_qp_state",
    /// Packets dropped: transport, QP number or Q_Key does not match the QP.
    RxDropQpMismatch = c"rx_drop_qp_mismatch",
    /// Packets dropped: the destination address is not one of the port's GIDs (rdma_rxe's
    /// `rxe_chk_dgid`).
    RxDropDgid = c"rx_drop_dgid",
    /// Packets dropped: an RC/UC QP's packet from another source address (or IP version)
    /// than the QP's path (rdma_rxe's `check_addr`).
    RxDropSrcAddr = c"rx_drop_src_addr",
    /// Packets dropped: an RC/UC QP's packet to another of our addresses than the one the
    /// QP sends from (rdma_rxe's `check_addr`).
    RxDropDstAddr = c"rx_drop_dst_addr",
    /// Packets dropped: the P_Key does not match the port's (rdma_rxe's `check_keys`).
    RxDropPkey = c"rx_drop_pkey",
    /// Requests refused as invalid for the QP (an invalid-request NAK for RC).
    RxInvalidRequest = c"rx_invalid_request",
    /// Packets dropped: responder resources busy.
    RxDropBusy = c"rx_drop_busy",
    /// Packets dropped: could not linearise (memory).
    RxDropNoMem = c"rx_drop_no_mem",
    /// Packets dropped: the QP's receive backlog was full (it could not keep up).
    RxDropBacklog = c"rx_drop_qp_backlog",
    /// Packets that could not be sent (no memory, no route, bad local buffer).
    TxDrops = c"tx_drops",
    /// Runs that left packets for later because the device's transmit queues were half
    /// full (the QP's transmit-wait timer resumes it).
    TxWaits = c"tx_waits",
    /// Chains of two or more packets of one flow sent as one skb (`net::TxBatch`): the
    /// device driver took each as one burst.
    TxChains = c"tx_chains",
    /// Work-request lists a process handed to a user QP or SRQ through the kernel's
    /// post_send/post_recv/post_srq_recv commands: refused (EINVAL), nothing read.
    UserWrRefused = c"user_wr_refused",
    /// Link down events.
    LinkDowned = c"link_downed",
    /// On-demand-paging page faults handled (ranges of an ODP region mapped because an
    /// access found them not present).
    OdpFaults = c"odp_page_faults",
    /// On-demand-paging page faults that failed (the memory is not mapped in the process):
    /// the next access to the range fails as an access error.
    OdpFaultErrors = c"odp_page_fault_errors",
    /// READ responses and atomic acknowledgements dropped because their on-demand-paging
    /// destination was not present (asked for again by the retransmission logic).
    OdpUnplaced = c"odp_unplaced_responses",
    /// On-demand-paging memory refused because the user context's ODP MRs would cover
    /// more than `odp_max_bytes` (an explicit registration, ENOMEM, or an implicit MR's
    /// child, whose fault then fails).
    OdpBoundRefused = c"odp_bound_refused",
    /// Children of implicit ODP MRs made (one per 2 MiB chunk, kept once a fault in it
    /// succeeded).
    OdpChildrenMade = c"odp_children_made",
    /// Children of implicit ODP MRs released because an invalidation of their whole range
    /// (munmap, say) emptied them.
    OdpChildrenReaped = c"odp_children_reaped",
    /// Packets a fault injection rule acted on (debugfs `rrxe/<dev>/faults`).
    FaultHits = c"fault_hits",
    /// Fault injection rules refused because the device holds its maximum
    /// (`proto::fault::MAX_RULES`).
    FaultRulesRefused = c"fault_rules_refused",
    /// Packets dropped: they arrived on another netdev than the one of the QP's source GID
    /// (RC, UC, XRC), or in another network namespace than the one a user UD QP was created
    /// in. In shared mode: a packet for another pod's QP, even with the same addresses or
    /// Q_Key.
    RxDropNetdev = c"rx_drop_netdev",
    /// Frames handed to the taps of the device's capture netdev (one per packet sent or
    /// received while a tap is open; docs/capture.md).
    CapturePkts = c"capture_pkts",
    /// Frames not handed to the capture netdev's taps: no memory for the copy.
    CaptureNoMem = c"capture_no_mem",
}

/// The number of counters.
pub(crate) const NUM_COUNTERS: usize = Counter::NAMES.len();

impl Counter {
    /// The counters of events a QP counts of its own as well (its packets and bytes, its
    /// retransmissions and timeouts, the NAKs it sends and receives): what `rdma statistic
    /// qp` shows of the QPs bound to a counter object.
    pub(crate) const PER_QP: &'static [Counter] = &[
        Counter::SentPkts,
        Counter::RcvdPkts,
        Counter::SentBytes,
        Counter::RcvdBytes,
        Counter::Retransmits,
        Counter::RetransmitTimeouts,
        Counter::CwndCuts,
        Counter::RnrNaksSent,
        Counter::RnrNaksRcvd,
        Counter::DuplicateRequests,
        Counter::SeqErrors,
        Counter::SeqNaksRcvd,
        Counter::TxDrops,
    ];

    /// [`Counter::PER_QP`] as a bit per counter (looked up per packet).
    const PER_QP_BITS: u128 = {
        let mut bits = 0u128;
        let mut i = 0;
        while i < Self::PER_QP.len() {
            bits |= 1 << Self::PER_QP[i] as usize;
            i += 1;
        }
        bits
    };

    /// Whether a QP counts this of its own ([`Counter::PER_QP`]).
    pub(crate) const fn per_qp(self) -> bool {
        Self::index_per_qp(self as usize)
    }

    /// Whether the counter at `index` (of [`Counter::NAMES`]) is one of [`Counter::PER_QP`].
    pub(crate) const fn index_per_qp(index: usize) -> bool {
        index < 128 && Self::PER_QP_BITS >> index & 1 != 0
    }
}

// A bit per counter in `PER_QP_BITS`.
const _: () = assert!(NUM_COUNTERS <= 128);

/// A device's counters.
pub(crate) struct Counters([AtomicU64; NUM_COUNTERS]);

impl Counters {
    /// All zero.
    pub(crate) const fn new() -> Self {
        Self([const { AtomicU64::new(0) }; NUM_COUNTERS])
    }

    /// All zero, on the heap.
    pub(crate) fn new_arc() -> Result<Arc<Self>> {
        Ok(Arc::new(Self::new(), GFP_KERNEL)?)
    }

    /// Counts one event.
    pub(crate) fn inc(&self, c: Counter) {
        self.add(c, 1);
    }

    /// Counts `n` events.
    pub(crate) fn add(&self, c: Counter, n: u64) {
        if let Some(a) = self.0.get(c as usize) {
            a.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The current value of `c`.
    pub(crate) fn get(&self, c: Counter) -> u64 {
        self.0
            .get(c as usize)
            .map_or(0, |a| a.load(Ordering::Relaxed))
    }

    /// The current values, in [`Counter::NAMES`] order.
    pub(crate) fn values(&self) -> impl Iterator<Item = u64> + '_ {
        self.0.iter().map(|a| a.load(Ordering::Relaxed))
    }
}
