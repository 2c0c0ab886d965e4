// SPDX-License-Identifier: GPL-2.0
//! Receive path: from a UDP datagram on port 4791 to a queue pair (or a counted drop).

use crate::counters::{Counter, Counters};
use crate::glue::capture::Copied;
use crate::glue::mem::PayloadCrc;
use crate::glue::{Arrival, IbDevRef, KernelCrc32, Receiver, SkBuff};
use crate::proto::addr::{self, AddrDrop, IpAddrs};
use crate::proto::{self, ParseError};
use crate::qp::{Icrc, Refused};

const IPV4_HDR: usize = 20;
const IPV6_HDR: usize = 40;
const UDP_HDR: usize = 8;
/// UDP header + BTH + ICRC: the shortest possible RoCEv2 datagram.
const MIN_DATAGRAM: usize = UDP_HDR + 12 + 4;

/// rrxe's receive path, which the glue's UDP sockets and local delivery call.
pub(crate) struct Rx;

impl Receiver for Rx {
    fn recv(skb: SkBuff, arrival: Arrival) {
        recv(skb, arrival)
    }
}

/// Handles one received datagram (bottom halves off; must not sleep). One from the wire
/// runs its QP right here; a local one ([`Arrival::Local`], sent inside another QP's run)
/// defers the receiving QP's run to its work, so runs never nest.
fn recv(mut skb: SkBuff, arrival: Arrival) {
    let Some(ndev) = skb.netdev().map(|n| n.hold()) else {
        return;
    };
    // The device it came in on; for a local packet, the sender's.
    let Some(dev) = IbDevRef::by_netdev_or_below(&ndev) else {
        // Not for an rrxe device: dropped (freed) here.
        return;
    };
    if arrival == Arrival::Wire {
        count_rcvd(&dev.data().counters, &skb);
        capture_rx(&dev, &skb, true);
    }
    if skb.linearize().is_err() {
        dev.data().counters.inc(Counter::RxDropNoMem);
        return;
    }
    let Some((ip_pkt, l3_len)) = skb.ip_packet() else {
        dev.data().counters.inc(Counter::RxDropMalformed);
        return;
    };
    // A 20-byte IPv4 or a 40-byte IPv6 header: IP options (or extension headers) are not
    // part of RoCEv2.
    let Some(from) = ip_pkt.get(..l3_len).and_then(IpAddrs::from_ip_header) else {
        dev.data().counters.inc(Counter::RxDropMalformed);
        return;
    };
    let v6 = from.v6;
    // rdma_rxe loops a packet back inside the sending device when its source and
    // destination GIDs are equal (RXE_LOOPBACK_MASK) and takes it without a GID lookup.
    let loopback = arrival == Arrival::Local && from.src == from.dst;
    let (dev, ndev) = if arrival == Arrival::Local && !loopback {
        // Between two addresses of this host: the packet arrives at the device that owns
        // the destination address, which may be another rrxe device than the sender's,
        // just as it would have from the wire.
        let to = ndev
            .local_addr_owner(from.v6, &from.dst)
            .and_then(|nd| Some((IbDevRef::by_netdev_or_below(&nd)?, nd)));
        let Some(to) = to else {
            // No rrxe device there: counted by the sender's device, where it is seen.
            count_rcvd(&dev.data().counters, &skb);
            dev.data().counters.inc(Counter::RxDropDgid);
            return;
        };
        // The sender's capture showed it as sent; another device's shows it as received.
        if !to.0.is(&dev) {
            capture_rx(&to.0, &skb, false);
        }
        to
    } else {
        (dev, ndev)
    };
    let counters = &dev.data().counters;
    if arrival == Arrival::Local {
        count_rcvd(counters, &skb);
    }
    let kept = &dev.data().dgids;
    let ours = |gid: &[u8; 16]| dev.has_roce_gid_kept(kept, gid, &ndev);
    if addr::check_dgid(&from, loopback, ours).is_err() {
        counters.inc(Counter::RxDropDgid);
        return;
    }
    let Some(ib) = ip_pkt.get(l3_len + UDP_HDR..) else {
        counters.inc(Counter::RxDropTruncated);
        return;
    };
    if ib.len() + UDP_HDR < MIN_DATAGRAM {
        counters.inc(Counter::RxDropTruncated);
        return;
    }
    // A packet from the wire is checked here, before its headers are trusted. One from this
    // host (built by our transmit path) is checked by the receiving QP's run, on that QP's
    // CPU: for two QPs of this host on two CPUs, the receiver pays for its ICRC as it
    // would for a packet from the wire, instead of the sender paying for both.
    let icrc = match arrival {
        Arrival::Wire => {
            if !icrc_ok(&dev, ip_pkt, v6) {
                return;
            }
            Icrc::Checked
        }
        Arrival::Local => Icrc::Unchecked { v6 },
    };
    // The BTH names the QP; the QP's run parses the whole packet, once (and counts what
    // only that parse finds wrong: pad, payload length).
    let bth = match proto::peek_bth(ib) {
        Ok(b) => b,
        Err(e) => {
            counters.inc(parse_drop(e));
            return;
        }
    };
    let (qpn, pkey) = (bth.dest_qp, bth.pkey);
    if qpn == proto::mcast::MULTICAST_QPN {
        // To every QP attached to a group of the destination address on the netdev it
        // arrived on (rdma_rxe's rxe_rcv_mcast_pkt); a unicast destination has no group.
        let local = arrival == Arrival::Local;
        dev.data()
            .mcast
            .deliver(&dev, &ndev, skb, icrc, &from, pkey, local);
        return;
    }
    // Which netdev (so which namespace: in shared mode, which pod) the packet arrived on:
    // the receiving QP must be of that netdev or namespace.
    let on = ndev.id();
    // A packet that ends nothing (the FIRST or a MIDDLE packet of a message, no AckReq)
    // waits for the QP's run at the end of this softirq pass, with the rest of the message
    // this pass brings; one that may complete or answer something (a LAST or ONLY packet,
    // an AckReq, every response but a READ's FIRST and MIDDLE) runs the QP now, with what
    // queued before it, so that a round trip does not wait for the pass to end.
    let later = !bth.ack_req
        && bth.opcode.info().is_some_and(|i| {
            matches!(
                i.pos,
                proto::opcode::Position::First | proto::opcode::Position::Middle
            )
        });
    match dev.data().qps.deliver(qpn, skb, icrc, &from, pkey, on) {
        Ok(qp) => match arrival {
            Arrival::Wire if later => qp.run_soon(),
            Arrival::Wire => qp.run_rx(&ndev),
            Arrival::Local => qp.kick(),
        },
        // The skb is freed (as a drop) after the table lock.
        Err((why, _skb)) => counters.inc(refused_counter(why)),
    }
}

/// The drop counter of a packet the QP table refused.
pub(crate) fn refused_counter(why: Refused) -> Counter {
    match why {
        Refused::NoQp => Counter::RxDropNoQp,
        Refused::Backlog => Counter::RxDropBacklog,
        Refused::Netdev => Counter::RxDropNetdev,
        Refused::Addr(AddrDrop::Dgid) => Counter::RxDropDgid,
        Refused::Addr(AddrDrop::SrcAddr) => Counter::RxDropSrcAddr,
        Refused::Addr(AddrDrop::DstAddr) => Counter::RxDropDstAddr,
        Refused::Addr(AddrDrop::NoPath) => Counter::RxDropQpState,
        Refused::Addr(AddrDrop::PKey) => Counter::RxDropPkey,
    }
}

/// Hands a received packet to `dev`'s capture netdev, if one is open, and counts it.
fn capture_rx(dev: &crate::glue::IbDev, skb: &SkBuff, wire: bool) {
    let copied = dev.data().capture.rx(skb, wire);
    count_capture(dev, copied);
}

/// Counts what a capture point did.
fn count_capture(dev: &crate::glue::IbDev, copied: Copied) {
    match copied {
        Copied::No => {}
        Copied::Yes => dev.data().counters.inc(Counter::CapturePkts),
        Copied::NoMem => dev.data().counters.inc(Counter::CaptureNoMem),
    }
}

/// Counts a packet that came in, before any check: `rcvd_pkts`, and its IP datagram in
/// `rcvd_bytes` (as IBA's PortRcvData, which "may include packets containing errors").
/// rdma_rxe counts the same bytes once a packet passed its checks.
fn count_rcvd(counters: &Counters, skb: &SkBuff) {
    counters.inc(Counter::RcvdPkts);
    counters.add(Counter::RcvdBytes, u64::from(skb.ip_len()));
}

/// Whether the ICRC of `ip_pkt` (an IP packet of `dev`) is right; a wrong one is counted
/// and logged, and the caller drops the packet.
pub(crate) fn icrc_ok(dev: &crate::glue::IbDev, ip_pkt: &[u8], v6: bool) -> bool {
    let ok = proto::icrc::verify(&KernelCrc32, ip_pkt, v6);
    if !ok {
        dev.data().counters.inc(Counter::IcrcErrors);
        crate::glue::dbg(dev, c"ICRC error: dropped", ip_pkt.len() as u64, 0);
    }
    ok
}

/// The drop counter of a packet that does not parse.
pub(crate) fn parse_drop(e: ParseError) -> Counter {
    match e {
        ParseError::Truncated => Counter::RxDropTruncated,
        _ => Counter::RxDropMalformed,
    }
}

/// Transmit errors.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TxError {
    /// No memory for the skb (retry later).
    NoMem,
    /// The packet could not be built (headers inconsistent with the payload length).
    Build,
    /// The payload could not be gathered (bad local key/range).
    Payload,
    /// No route to the destination, or the IP layer / qdisc dropped the packet.
    Route,
}

/// Builds and sends one RoCEv2 packet of `dev` to `av`: IP/UDP headers, the IB headers
/// `hdrs`, a payload of `payload_len` bytes written by `fill`, and the ICRC; returns the
/// length of its IP datagram (what `sent_bytes` counts). It leaves
/// through the netdev of its source GID (as rdma_rxe's): the device's netdev, or a pod's
/// macvlan/ipvlan on it in shared mode, so routing, neighbours and the source MAC are the
/// pod's. A source GID that is gone (address removed, pod deleted), or now on another
/// netdev than when the address vector was made (another pod's, with the same address),
/// drops the packet.
pub(crate) fn transmit(
    dev: &crate::glue::IbDev,
    av: &crate::ah::Av,
    sport: u16,
    hdrs: &proto::Headers,
    payload_len: u32,
    kept: Kept<'_>,
    corrupt_icrc: bool,
    fill: impl FnOnce(&mut [u8], &mut PayloadCrc) -> bool,
) -> Result<u32, TxError> {
    let v6 = av.ipv6 != 0;
    let src = crate::glue::NdevId::of_av(av);
    dev.with_gid_netdev(kept.gid, av.sgid_index, v6, &av.sip, src, |ndev| {
        let ib = (hdrs, payload_len, corrupt_icrc);
        build_and_send(dev, ndev, av, sport, ib, kept.route, fill)
    })
    .ok_or(TxError::Route)?
}

/// What a sender keeps between its packets, each part if it may be used.
#[derive(Clone, Copy, Default)]
pub(crate) struct Kept<'a> {
    /// The route to a connected QP's peer (the kernel's `dst_cache`).
    pub(crate) route: Option<&'a crate::glue::RouteCache>,
    /// The netdev of the source GID (`glue::IbDev::with_gid_netdev`).
    pub(crate) gid: Option<&'a core::cell::Cell<crate::glue::GidNetdevCache>>,
}

/// [`transmit`] once the netdev is known.
fn build_and_send(
    dev: &crate::glue::IbDev,
    ndev: &crate::glue::NetDev,
    av: &crate::ah::Av,
    sport: u16,
    ib: (&proto::Headers, u32, bool),
    route: Option<&crate::glue::RouteCache>,
    fill: impl FnOnce(&mut [u8], &mut PayloadCrc) -> bool,
) -> Result<u32, TxError> {
    let (skb, sent) = build(dev, ndev, av, sport, ib, 0, fill)?;
    let dip = crate::ah::dip(av);
    skb.send(av.ipv6 != 0, &av.sip, &dip, route)
        .map_err(|_| TxError::Route)?;
    Ok(sent)
}

/// Builds one packet for [`build_and_send`] or a chain ([`TxBatch`]), its IPv4 header with
/// the identification `ip_id`: the skb and the length of its IP datagram.
fn build(
    dev: &crate::glue::IbDev,
    ndev: &crate::glue::NetDev,
    av: &crate::ah::Av,
    sport: u16,
    (hdrs, payload_len, corrupt_icrc): (&proto::Headers, u32, bool),
    ip_id: u16,
    fill: impl FnOnce(&mut [u8], &mut PayloadCrc) -> bool,
) -> Result<(crate::glue::TxSkb, u32), TxError> {
    let v6 = av.ipv6 != 0;
    let dip = crate::ah::dip(av);
    let l3 = if v6 { IPV6_HDR } else { IPV4_HDR };
    let ib_len = proto::hdr::packet_len(hdrs.bth.opcode, payload_len).ok_or(TxError::Build)?;
    let ip_len = l3 + UDP_HDR + ib_len;
    let sent = u32::try_from(ip_len).map_err(|_| TxError::Build)?;
    let mut skb = crate::glue::TxSkb::alloc(ndev, ip_len, v6).ok_or(TxError::NoMem)?;
    let buf = skb.data();
    let ok = if v6 {
        proto::net::write_ipv6_udp(
            buf,
            av.sip,
            dip,
            av.traffic_class,
            av.flow_label,
            if av.hop_limit == 0 { 64 } else { av.hop_limit },
            sport,
            ib_len,
        )
    } else {
        let mut s = [0u8; 4];
        let mut d = [0u8; 4];
        s.copy_from_slice(&av.sip[..4]);
        d.copy_from_slice(&dip[..4]);
        proto::net::write_ipv4_udp(buf, s, d, av.traffic_class, 64, sport, ib_len).and_then(|n| {
            match ip_id {
                0 => Some(n),
                id => proto::net::set_ipv4_id(buf, id).map(|()| n),
            }
        })
    };
    if ok.is_none() {
        return Err(TxError::Build);
    }
    let ib_off = l3 + UDP_HDR;
    let ib = buf.get_mut(ib_off..).ok_or(TxError::Build)?;
    let hlen = proto::build_headers(hdrs, payload_len, ib).map_err(|_| TxError::Build)?;
    // The ICRC over the headers first; the payload's part is computed by the copy that
    // fills it where that copy can (one read of each byte: `PayloadCrc`), else after it.
    let start = ib_off + hlen;
    let end = start + payload_len as usize;
    let icrc_at = buf.len().checked_sub(4).ok_or(TxError::Build)?;
    let mut icrc = proto::icrc::Icrc::begin(&KernelCrc32, buf, v6).map_err(|_| TxError::Build)?;
    icrc.update(
        buf.get(ib_off + proto::opcode::BTH_LEN..start)
            .ok_or(TxError::Build)?,
    );
    let mut crc = PayloadCrc::new(icrc.register(), crate::glue::mem::table_crc_wanted());
    let payload = buf.get_mut(start..end).ok_or(TxError::Build)?;
    if !fill(payload, &mut crc) {
        return Err(TxError::Payload);
    }
    match crc.covering(payload.len()) {
        Some(reg) => icrc.resume(reg),
        None => icrc.update(payload),
    }
    // The pad, then the ICRC itself.
    icrc.update(buf.get(end..icrc_at).ok_or(TxError::Build)?);
    let at = buf.get_mut(icrc_at..).ok_or(TxError::Build)?;
    if !proto::copy_exact(at, &icrc.finish()) {
        return Err(TxError::Build);
    }
    if corrupt_icrc {
        // Fault injection: one bit of the ICRC flipped, so the receiver drops the packet.
        if let Some(b) = skb.data().last_mut() {
            *b ^= 1;
        }
    }
    // The capture sees the packet as it leaves, the ICRC (even a corrupted one) written;
    // one to a QP of this host too, which never reaches a netdev.
    count_capture(dev, dev.data().capture.tx(&skb));
    Ok((skb, sent))
}

/// Most IB bytes (UDP payloads) one chain carries: with its headers, under the 64 KiB of an
/// IP datagram, which the chain is to the IP layer until it is split.
const CHAIN_BYTES: usize = 60_000;
/// Most packets in one chain.
const CHAIN_SEGS: u16 = 64;

/// The packets a QP's run sends in one go ([`transmit_batched`]), held until the run ends
/// and then sent as one skb (`glue::TxChain`): consecutive packets of one flow (netdev,
/// addresses, UDP ports and kept route), none longer than the first (the stack checks the
/// first against the path MTU; a message's FIRST packet, with its RETH or AETH, is its
/// longest), at most [`CHAIN_SEGS`] and [`CHAIN_BYTES`]. The device driver gets them as one burst: one
/// notification of the device for the chain where each packet made one (under QEMU, a kick
/// that stops the vCPU and wakes the VM's I/O thread), as TCP's segments of one GSO skb. A
/// packet that does not fit sends what is held first, so the order of a QP's packets stays.
pub(crate) struct TxBatch<'a> {
    open: Option<OpenChain<'a>>,
    /// Packets lost when a chain was sent (no route, a full qdisc), for the caller to count.
    pub(crate) lost: u32,
    /// Packets handed to the IP layer in chains sent whole, and their IP bytes, for the
    /// caller to count: a held packet counts as sent only once its chain is.
    pub(crate) sent_pkts: u32,
    pub(crate) sent_bytes: u64,
    /// Chains of two or more packets sent, for the caller to count.
    pub(crate) chains: u32,
}

struct OpenChain<'a> {
    chain: crate::glue::TxChain,
    /// The chain's netdev, which its skbs name (and must outlive them until sent).
    ndev: crate::glue::NetDevRef,
    v6: bool,
    sip: [u8; 16],
    dip: [u8; 16],
    sport: u16,
    route: Option<&'a crate::glue::RouteCache>,
    /// The head's IB length: no packet after it is longer.
    ib_len: usize,
    /// IB bytes held (against [`CHAIN_BYTES`]).
    bytes: usize,
    /// IP bytes held (`sent_bytes` once sent).
    ip_bytes: u64,
}

impl<'a> TxBatch<'a> {
    /// Nothing held.
    pub(crate) const fn new() -> Self {
        TxBatch {
            open: None,
            lost: 0,
            sent_pkts: 0,
            sent_bytes: 0,
            chains: 0,
        }
    }

    /// Sends what is held (nothing: nothing happens).
    pub(crate) fn flush(&mut self) {
        if let Some(o) = self.open.take() {
            let n = u32::from(o.chain.segs());
            if o.chain.send(o.v6, &o.sip, &o.dip, o.route).is_err() {
                self.lost = self.lost.saturating_add(n);
            } else {
                self.sent_pkts = self.sent_pkts.saturating_add(n);
                self.sent_bytes = self.sent_bytes.saturating_add(o.ip_bytes);
                if n > 1 {
                    self.chains = self.chains.saturating_add(1);
                }
            }
            drop(o.ndev);
        }
    }
}

impl Drop for TxBatch<'_> {
    fn drop(&mut self) {
        // Held packets are sent, never lost with their holder; their count is the
        // holder's to take before (`Sink::flush`).
        self.flush();
    }
}

/// [`transmit`] into `batch`: the packet joins the chain held there, or sends that chain
/// and starts one. Returns what [`transmit`] does, for a packet built and held; whether it
/// was sent is known when its chain is: `batch.sent_pkts` or `batch.lost`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn transmit_batched<'a>(
    dev: &crate::glue::IbDev,
    av: &crate::ah::Av,
    sport: u16,
    hdrs: &proto::Headers,
    payload_len: u32,
    kept: Kept<'a>,
    corrupt_icrc: bool,
    fill: impl FnOnce(&mut [u8], &mut PayloadCrc) -> bool,
    batch: &mut TxBatch<'a>,
) -> Result<u32, TxError> {
    let v6 = av.ipv6 != 0;
    let src = crate::glue::NdevId::of_av(av);
    let dip = crate::ah::dip(av);
    let ib_len = proto::hdr::packet_len(hdrs.bth.opcode, payload_len).ok_or(TxError::Build)?;
    dev.with_gid_netdev(kept.gid, av.sgid_index, v6, &av.sip, src, |ndev| {
        let joins = batch.open.as_ref().is_some_and(|o| {
            o.ndev.id() == ndev.id()
                && o.v6 == v6
                && o.sip == av.sip
                && o.dip == dip
                && o.sport == sport
                && same_route(o.route, kept.route)
                && ib_len <= o.ib_len
                && o.chain.segs() < CHAIN_SEGS
                && o.bytes.saturating_add(ib_len) <= CHAIN_BYTES
        });
        if !joins {
            batch.flush();
        }
        let index = batch.open.as_ref().map_or(0, |o| o.chain.segs());
        let ib = (hdrs, payload_len, corrupt_icrc);
        let (skb, sent) = build(dev, ndev, av, sport, ib, index, fill)?;
        match batch.open.as_mut() {
            Some(o) => {
                o.chain.push(skb);
                o.bytes = o.bytes.saturating_add(ib_len);
                o.ip_bytes = o.ip_bytes.saturating_add(u64::from(sent));
            }
            None => {
                batch.open = Some(OpenChain {
                    chain: crate::glue::TxChain::new(skb),
                    ndev: ndev.hold(),
                    v6,
                    sip: av.sip,
                    dip,
                    sport,
                    route: kept.route,
                    ib_len,
                    bytes: ib_len,
                    ip_bytes: u64::from(sent),
                });
            }
        }
        Ok(sent)
    })
    .ok_or(TxError::Route)?
}

/// Whether two kept routes are the same one (or both none).
fn same_route(a: Option<&crate::glue::RouteCache>, b: Option<&crate::glue::RouteCache>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => core::ptr::eq(a, b),
        (None, None) => true,
        _ => false,
    }
}
