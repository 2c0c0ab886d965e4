// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The port's Performance Management Agent (IBA vol. 1, 16.1): the answer to a PerfMgt
//! management datagram, built from the port's counters.
//!
//! The RDMA core hands a driver every MAD that reaches the port's GSI QP (`process_mad`,
//! first refusal) and asks it for the PerfMgt attributes behind
//! `/sys/class/infiniband/DEV/ports/N/counters/`. [`answer`] decides what to do with one
//! MAD: PerfMgt `Get` of ClassPortInfo, PortCounters and PortCountersExtended are
//! answered from [`PortCounts`]; any other `Get` or `Set` of the class gets a response
//! whose status says what is unsupported; everything else (other classes, responses,
//! traps) is not ours and goes on to the core's MAD agents ([`Verdict::PassOn`]): the
//! connection manager's MADs take that way. rdma_rxe answers the same three attributes
//! (`rxe_mad.c`), with the reply's header zeroed; here the response carries the
//! request's transaction ID, so an answer to a MAD from the wire reaches its asker.
//!
//! A MAD comes from the wire: every field is checked before it is used; the input is a
//! fixed 256-byte buffer and nothing here indexes past it or panics.

/// Bytes in an IB MAD (`IB_MGMT_MAD_SIZE`).
pub const MAD_SIZE: usize = 256;
/// Bytes of the common MAD header (`IB_MGMT_MAD_HDR`).
const HDR: usize = 24;
/// Where a PerfMgt attribute starts: after the header and 40 reserved bytes
/// (`struct ib_pma_mad`).
const DATA: usize = HDR + 40;

/// `IB_MGMT_BASE_VERSION`.
const BASE_VERSION: u8 = 1;
/// The PerfMgt class version this agent speaks.
const CLASS_VERSION: u8 = 1;
/// `IB_MGMT_CLASS_PERF_MGMT`.
pub const CLASS_PERF_MGMT: u8 = 0x04;
/// `IB_MGMT_METHOD_GET`.
pub const METHOD_GET: u8 = 0x01;
/// `IB_MGMT_METHOD_SET`.
pub const METHOD_SET: u8 = 0x02;
/// `IB_MGMT_METHOD_GET_RESP`.
pub const METHOD_GET_RESP: u8 = 0x81;

/// ClassPortInfo (`IB_PMA_CLASS_PORT_INFO`).
pub const ATTR_CLASS_PORT_INFO: u16 = 0x0001;
/// PortCounters (`IB_PMA_PORT_COUNTERS`).
pub const ATTR_PORT_COUNTERS: u16 = 0x0012;
/// PortCountersExtended (`IB_PMA_PORT_COUNTERS_EXT`).
pub const ATTR_PORT_COUNTERS_EXT: u16 = 0x001D;

/// MAD status (IBA 13.4.7, `IB_MGMT_MAD_STATUS_*`): the base or class version is not
/// supported.
pub const STATUS_BAD_VERSION: u16 = 0x0004;
/// The method is not supported by the class.
pub const STATUS_UNSUPPORTED_METHOD: u16 = 0x0008;
/// The method is not supported for the attribute, or the attribute is unknown.
pub const STATUS_UNSUPPORTED_METHOD_ATTRIB: u16 = 0x000c;
/// An attribute field holds a value the agent does not accept (a PortSelect of another
/// port).
pub const STATUS_INVALID_ATTRIB_VALUE: u16 = 0x001c;

/// ClassPortInfo CapabilityMask bit 9 (`IB_PMA_CLASS_CAP_EXT_WIDTH`): PortCountersExtended
/// is supported, with its unicast and multicast packet counters.
pub const CAP_EXT_WIDTH: u16 = 1 << 9;
/// ClassPortInfo RespTimeValue: 4.096 µs × 2^18 (about one second), the IBA's default.
const RESP_TIME_VALUE: u32 = 18;
/// PortSelect 0xFF: all ports (AllPortSelect); on a one-port device, that port.
const ALL_PORTS: u8 = 0xff;

/// What the port has counted since it came up, as the PMA reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCounts {
    /// Octets sent: each packet's IP datagram (IP header to ICRC).
    pub xmit_bytes: u64,
    /// Octets received, counted as `xmit_bytes`.
    pub rcv_bytes: u64,
    /// Packets sent.
    pub xmit_pkts: u64,
    /// Packets received.
    pub rcv_pkts: u64,
    /// Times the link went down.
    pub link_downed: u64,
    /// Packets received with an error in them (PortRcvErrors).
    pub rcv_errors: u64,
    /// Packets that could not be sent (PortXmitDiscards).
    pub xmit_discards: u64,
}

/// What the caller does with a MAD after [`answer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The response is in the output buffer: send it (`IB_MAD_RESULT_SUCCESS |
    /// IB_MAD_RESULT_REPLY`).
    Reply,
    /// Not for the PMA: the MAD goes on to the core's agents (`IB_MAD_RESULT_SUCCESS`).
    /// The output buffer is untouched.
    PassOn,
}

/// Answers the MAD `req` arriving at port `port` (1-based), with the counters `counts`
/// gives (called only when an answer needs them), into `out`.
pub fn answer(
    req: &[u8; MAD_SIZE],
    port: u8,
    counts: impl FnOnce() -> PortCounts,
    out: &mut [u8; MAD_SIZE],
) -> Verdict {
    let [base_version, class, class_version, method, ..] = *req;
    if base_version != BASE_VERSION || class != CLASS_PERF_MGMT {
        return Verdict::PassOn;
    }
    // Only Get and Set are answered with an error status; a response is never answered,
    // and the class has no other request the PMA would take (the MAD layer answers an
    // unclaimed Get or Set itself, as "unsupported").
    if method != METHOD_GET && method != METHOD_SET {
        return Verdict::PassOn;
    }
    let attr = be16(req, 16);
    let status = if class_version != CLASS_VERSION {
        STATUS_BAD_VERSION
    } else if method != METHOD_GET {
        // No Set: the counters are not cleared by a manager.
        STATUS_UNSUPPORTED_METHOD
    } else {
        match attr {
            ATTR_CLASS_PORT_INFO => 0,
            ATTR_PORT_COUNTERS | ATTR_PORT_COUNTERS_EXT => {
                let sel = req.get(DATA + 1).copied().unwrap_or(0);
                if sel == port || sel == ALL_PORTS {
                    0
                } else {
                    STATUS_INVALID_ATTRIB_VALUE
                }
            }
            _ => STATUS_UNSUPPORTED_METHOD_ATTRIB,
        }
    };
    *out = [0; MAD_SIZE];
    // The response repeats the request's header (its class, version, transaction ID,
    // attribute and modifier), as a GetResp with the status.
    if let (Some(o), Some(i)) = (out.get_mut(..HDR), req.get(..HDR)) {
        o.copy_from_slice(i);
    }
    put8(out, 3, METHOD_GET_RESP);
    put16(out, 4, status);
    if status != 0 {
        return Verdict::Reply;
    }
    match attr {
        ATTR_CLASS_PORT_INFO => class_port_info(out),
        ATTR_PORT_COUNTERS => port_counters(req, &counts(), out),
        _ => port_counters_ext(req, &counts(), out),
    }
    Verdict::Reply
}

/// ClassPortInfo (IBA 13.4.8.1): versions, CapabilityMask, RespTimeValue; no redirection,
/// no traps.
fn class_port_info(out: &mut [u8; MAD_SIZE]) {
    put8(out, DATA, BASE_VERSION);
    put8(out, DATA + 1, CLASS_VERSION);
    put16(out, DATA + 2, CAP_EXT_WIDTH);
    // CapabilityMask2 (27 bits, none set) and RespTimeValue (5 bits).
    put32(out, DATA + 4, RESP_TIME_VALUE);
}

/// PortCounters (IBA 16.1.3.5, `struct ib_pma_portcounters`). Its counters are narrow;
/// "instead of overflowing, they shall stop at all ones": each saturates. PortXmitData and
/// PortRcvData count in units of four octets.
fn port_counters(req: &[u8; MAD_SIZE], c: &PortCounts, out: &mut [u8; MAD_SIZE]) {
    echo_select(req, out);
    put8(out, DATA + 7, sat(c.link_downed, 0xff) as u8);
    put16(out, DATA + 8, sat(c.rcv_errors, 0xffff) as u16);
    put16(out, DATA + 14, sat(c.xmit_discards, 0xffff) as u16);
    put32(out, DATA + 24, sat(c.xmit_bytes / 4, 0xffff_ffff) as u32);
    put32(out, DATA + 28, sat(c.rcv_bytes / 4, 0xffff_ffff) as u32);
    put32(out, DATA + 32, sat(c.xmit_pkts, 0xffff_ffff) as u32);
    put32(out, DATA + 36, sat(c.rcv_pkts, 0xffff_ffff) as u32);
}

/// PortCountersExtended (IBA 16.1.4.11, `struct ib_pma_portcounters_ext`): 64-bit
/// counters. Every packet rrxe sends or receives is unicast (it joins no multicast
/// group), so the unicast counters are the packet counters and the multicast ones zero.
fn port_counters_ext(req: &[u8; MAD_SIZE], c: &PortCounts, out: &mut [u8; MAD_SIZE]) {
    echo_select(req, out);
    put64(out, DATA + 8, c.xmit_bytes / 4);
    put64(out, DATA + 16, c.rcv_bytes / 4);
    put64(out, DATA + 24, c.xmit_pkts);
    put64(out, DATA + 32, c.rcv_pkts);
    put64(out, DATA + 40, c.xmit_pkts);
    put64(out, DATA + 48, c.rcv_pkts);
}

/// PortSelect and CounterSelect are part of the attribute: the response repeats them.
fn echo_select(req: &[u8; MAD_SIZE], out: &mut [u8; MAD_SIZE]) {
    for i in DATA + 1..DATA + 4 {
        put8(out, i, req.get(i).copied().unwrap_or(0));
    }
}

/// `v`, or `max` if it is larger (a counter that stops at all ones).
fn sat(v: u64, max: u64) -> u64 {
    v.min(max)
}

fn be16(b: &[u8; MAD_SIZE], at: usize) -> u16 {
    match b.get(at..at + 2) {
        Some(&[h, l]) => u16::from_be_bytes([h, l]),
        _ => 0,
    }
}

fn put8(b: &mut [u8; MAD_SIZE], at: usize, v: u8) {
    put(b, at, &[v]);
}

fn put16(b: &mut [u8; MAD_SIZE], at: usize, v: u16) {
    put(b, at, &v.to_be_bytes());
}

fn put32(b: &mut [u8; MAD_SIZE], at: usize, v: u32) {
    put(b, at, &v.to_be_bytes());
}

fn put64(b: &mut [u8; MAD_SIZE], at: usize, v: u64) {
    put(b, at, &v.to_be_bytes());
}

fn put(b: &mut [u8; MAD_SIZE], at: usize, v: &[u8]) {
    if let Some(d) = at.checked_add(v.len()).and_then(|end| b.get_mut(at..end)) {
        d.copy_from_slice(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PerfMgt Get of `attr` for PortSelect `port`, transaction ID 0x1122_3344_5566_7788.
    fn get(attr: u16, port: u8) -> [u8; MAD_SIZE] {
        let mut m = [0u8; MAD_SIZE];
        m[0] = BASE_VERSION;
        m[1] = CLASS_PERF_MGMT;
        m[2] = CLASS_VERSION;
        m[3] = METHOD_GET;
        m[8..16].copy_from_slice(&0x1122_3344_5566_7788u64.to_be_bytes());
        m[16..18].copy_from_slice(&attr.to_be_bytes());
        m[DATA + 1] = port;
        m
    }

    fn counts() -> PortCounts {
        PortCounts {
            xmit_bytes: 4 * 1000 + 3,
            rcv_bytes: 4 * 2000,
            xmit_pkts: 30,
            rcv_pkts: 40,
            link_downed: 2,
            rcv_errors: 5,
            xmit_discards: 6,
        }
    }

    fn run(req: &[u8; MAD_SIZE]) -> (Verdict, [u8; MAD_SIZE]) {
        let mut out = [0xAAu8; MAD_SIZE];
        let v = answer(req, 1, counts, &mut out);
        (v, out)
    }

    fn u64_at(b: &[u8], at: usize) -> u64 {
        u64::from_be_bytes(b[at..at + 8].try_into().unwrap())
    }

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn response_header_echoes_the_request() {
        let (v, out) = run(&get(ATTR_CLASS_PORT_INFO, 0));
        assert_eq!(v, Verdict::Reply);
        assert_eq!(&out[..3], &[BASE_VERSION, CLASS_PERF_MGMT, CLASS_VERSION]);
        assert_eq!(out[3], METHOD_GET_RESP);
        assert_eq!(&out[4..6], &[0, 0]);
        assert_eq!(u64_at(&out, 8), 0x1122_3344_5566_7788);
        assert_eq!(&out[16..18], &ATTR_CLASS_PORT_INFO.to_be_bytes());
    }

    #[test]
    fn class_port_info_declares_extended_counters() {
        let (_, out) = run(&get(ATTR_CLASS_PORT_INFO, 0));
        assert_eq!(out[DATA], 1);
        assert_eq!(out[DATA + 1], 1);
        assert_eq!(
            u16::from_be_bytes([out[DATA + 2], out[DATA + 3]]),
            CAP_EXT_WIDTH
        );
        assert_eq!(u32_at(&out, DATA + 4) & 0x1f, 18);
        assert!(out[DATA + 8..].iter().all(|&b| b == 0));
    }

    #[test]
    fn port_counters_extended_encodes_the_values() {
        let (v, out) = run(&get(ATTR_PORT_COUNTERS_EXT, 1));
        assert_eq!(v, Verdict::Reply);
        assert_eq!(out[DATA + 1], 1);
        assert_eq!(u64_at(&out, DATA + 8), 1000);
        assert_eq!(u64_at(&out, DATA + 16), 2000);
        assert_eq!(u64_at(&out, DATA + 24), 30);
        assert_eq!(u64_at(&out, DATA + 32), 40);
        assert_eq!(u64_at(&out, DATA + 40), 30);
        assert_eq!(u64_at(&out, DATA + 48), 40);
        assert_eq!(u64_at(&out, DATA + 56), 0);
        assert_eq!(u64_at(&out, DATA + 64), 0);
    }

    #[test]
    fn port_counters_encodes_and_saturates() {
        let (_, out) = run(&get(ATTR_PORT_COUNTERS, 1));
        assert_eq!(out[DATA + 7], 2);
        assert_eq!(&out[DATA + 8..DATA + 10], &[0, 5]);
        assert_eq!(&out[DATA + 14..DATA + 16], &[0, 6]);
        assert_eq!(u32_at(&out, DATA + 24), 1000);
        assert_eq!(u32_at(&out, DATA + 28), 2000);
        assert_eq!(u32_at(&out, DATA + 32), 30);
        assert_eq!(u32_at(&out, DATA + 36), 40);
        let big = PortCounts {
            xmit_bytes: u64::MAX,
            rcv_bytes: 4 * 0x1_0000_0000,
            xmit_pkts: 0x1_0000_0000,
            rcv_pkts: u64::MAX,
            link_downed: 256,
            rcv_errors: 70000,
            xmit_discards: u64::MAX,
        };
        let mut out = [0u8; MAD_SIZE];
        answer(&get(ATTR_PORT_COUNTERS, 1), 1, || big, &mut out);
        assert_eq!(out[DATA + 7], 0xff);
        assert_eq!(&out[DATA + 8..DATA + 10], &[0xff, 0xff]);
        assert_eq!(&out[DATA + 14..DATA + 16], &[0xff, 0xff]);
        for at in [24, 28, 32, 36] {
            assert_eq!(u32_at(&out, DATA + at), u32::MAX, "offset {at}");
        }
        // The extended counters do not saturate below 64 bits.
        answer(&get(ATTR_PORT_COUNTERS_EXT, 1), 1, || big, &mut out);
        assert_eq!(u64_at(&out, DATA + 16), 0x1_0000_0000);
    }

    #[test]
    fn all_port_select_is_this_port() {
        let (v, out) = run(&get(ATTR_PORT_COUNTERS_EXT, 0xff));
        assert_eq!(v, Verdict::Reply);
        assert_eq!(&out[4..6], &[0, 0]);
        assert_eq!(u64_at(&out, DATA + 24), 30);
    }

    #[test]
    fn errors_are_answered_with_a_status_and_no_data() {
        let mut set = get(ATTR_PORT_COUNTERS, 1);
        set[3] = METHOD_SET;
        let mut version = get(ATTR_PORT_COUNTERS, 1);
        version[2] = 2;
        for (req, status) in [
            (get(0x0010, 1), STATUS_UNSUPPORTED_METHOD_ATTRIB),
            (get(0xffff, 1), STATUS_UNSUPPORTED_METHOD_ATTRIB),
            (get(ATTR_PORT_COUNTERS, 2), STATUS_INVALID_ATTRIB_VALUE),
            (get(ATTR_PORT_COUNTERS_EXT, 0), STATUS_INVALID_ATTRIB_VALUE),
            (set, STATUS_UNSUPPORTED_METHOD),
            (version, STATUS_BAD_VERSION),
        ] {
            let mut out = [0xAAu8; MAD_SIZE];
            let v = answer(&req, 1, || panic!("counters read for an error"), &mut out);
            assert_eq!(v, Verdict::Reply);
            assert_eq!(out[3], METHOD_GET_RESP);
            assert_eq!(u16::from_be_bytes([out[4], out[5]]), status);
            assert_eq!(u64_at(&out, 8), 0x1122_3344_5566_7788);
            assert!(out[HDR..].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn other_mads_pass_on_untouched() {
        let mut cm = get(0x0010, 1);
        cm[1] = 0x07; // the CM class
        let mut resp = get(ATTR_PORT_COUNTERS, 1);
        resp[3] = METHOD_GET_RESP;
        let mut trap = get(ATTR_PORT_COUNTERS, 1);
        trap[3] = 0x05;
        let mut base = get(ATTR_PORT_COUNTERS, 1);
        base[0] = 0x80; // OPA
        for req in [cm, resp, trap, base, [0u8; MAD_SIZE], [0xffu8; MAD_SIZE]] {
            let mut out = [0xAAu8; MAD_SIZE];
            let v = answer(&req, 1, || panic!("counters read"), &mut out);
            assert_eq!(v, Verdict::PassOn);
            assert!(out.iter().all(|&b| b == 0xAA));
        }
    }
}
