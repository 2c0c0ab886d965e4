// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Property tests: wire roundtrips, PSN laws, segmentation, parser robustness.

use proptest::prelude::*;
use rrxe_proto::hdr::pad_for;
use rrxe_proto::opcode::{HdrSet, PayloadRule};
use rrxe_proto::psn::{PSN_HALF, PSN_MASK};
use rrxe_proto::*;

fn valid_opcodes() -> Vec<u8> {
    (0..=255u8)
        .filter(|b| Opcode(*b).info().is_some())
        .collect()
}

prop_compose! {
    fn arb_headers()(
        op in prop::sample::select(valid_opcodes()),
        se: bool, mig: bool, pkey: u16, fecn: bool, becn: bool,
        qp in 0u32..1 << 24, ack: bool, psn: u32,
        va: u64, rkey: u32, rlen: u32, syn: u8, msn in 0u32..1 << 24,
        swap: u64, cmp: u64, orig: u64, qkey: u32, sqp in 0u32..1 << 24,
        imm: u32, inv: u32, sel in 0u8..4, plt in 0u8..16,
    ) -> Headers {
        let info = Opcode(op).info().unwrap();
        let mut b = Bth::new(Opcode(op), qp, Psn::new(psn));
        b.se = se; b.mig = mig; b.pkey = pkey; b.fecn = fecn; b.becn = becn; b.ack_req = ack;
        let mut h = Headers::new(b);
        let s = info.hdrs;
        if s.has(HdrSet::RETH) { h.reth = Some(Reth { va, rkey, len: rlen }); }
        if s.has(HdrSet::AETH) { h.aeth = Some(Aeth { syndrome: syn, msn }); }
        if s.has(HdrSet::ATOMIC) { h.atomic = Some(AtomicEth { va, rkey, swap_add: swap, compare: cmp }); }
        if s.has(HdrSet::ATOMIC_ACK) { h.atomic_ack = Some(AtomicAckEth { orig }); }
        if s.has(HdrSet::DETH) { h.deth = Some(Deth { qkey, src_qp: sqp }); }
        if s.has(HdrSet::IMMDT) { h.imm = Some(imm); }
        if s.has(HdrSet::IETH) { h.ieth = Some(inv); }
        if s.has(HdrSet::FETH) { h.feth = Some(Feth { sel, plt }); }
        if s.has(HdrSet::XRCETH) { h.xrceth = Some(sqp); }
        h
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn header_roundtrip(h in arb_headers(), plen in 0usize..600, fill: u8) {
        let info = h.bth.opcode.info().unwrap();
        let plen = match info.payload {
            PayloadRule::None => 0,
            PayloadRule::Exact8 => 8,
            PayloadRule::Any => if info.pos.ends() { plen } else { plen & !3 },
        };
        let payload = vec![fill; plen];
        let mut buf = vec![0u8; 700];
        let n = build_packet(&h, &payload, &mut buf).unwrap();
        prop_assert_eq!(n, hdr::packet_len(h.bth.opcode, plen as u32).unwrap());
        let p = parse_packet(&buf[..n]).unwrap();
        let mut want = h;
        want.bth.pad = pad_for(plen as u32);
        prop_assert_eq!(p.hdrs, want);
        prop_assert_eq!(p.payload(&buf[..n]).unwrap(), &payload[..]);
        prop_assert_eq!(p.total_len(), n);
    }

    #[test]
    fn parse_never_panics(data in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = net::locate_ib(&data);
        let _ = icrc::verify(&SoftCrc32, &data, false);
        let _ = icrc::verify(&SoftCrc32, &data, true);
        if let Ok(p) = parse_packet(&data) {
            // Whatever parses rebuilds into something that parses the same.
            let mut out = vec![0u8; data.len() + 8];
            let pl = p.payload(&data).unwrap().to_vec();
            let n = build_packet(&p.hdrs, &pl, &mut out).unwrap();
            let q = parse_packet(&out[..n]).unwrap();
            prop_assert_eq!(q.hdrs, p.hdrs);
            prop_assert_eq!(q.payload_len, p.payload_len);
        }
    }

    #[test]
    fn mutated_valid_packets(h in arb_headers(), flips in prop::collection::vec((0usize..64, any::<u8>()), 1..4), cut in 0usize..80) {
        let info = h.bth.opcode.info().unwrap();
        let plen = if info.payload == PayloadRule::Exact8 { 8 } else { 0 };
        let mut buf = vec![0u8; 100];
        let n = build_packet(&h, &vec![1; plen], &mut buf).unwrap();
        let mut b = buf[..n].to_vec();
        for (i, v) in flips { if let Some(x) = b.get_mut(i) { *x ^= v; } }
        b.truncate(cut.min(b.len()));
        let parsed = parse_packet(&b);
        // The receive path's peek (which picks the QP) agrees with the full parse: the same
        // BTH wherever the parse succeeds, the same error wherever the peek fails.
        match (peek_bth(&b), &parsed) {
            (Ok(bth), Ok(p)) => prop_assert_eq!(bth, p.hdrs.bth),
            (Ok(_), Err(e)) => prop_assert!(!matches!(
                e,
                ParseError::BadVersion(_) | ParseError::UnknownOpcode(_)
            )),
            (Err(e), Err(f)) => prop_assert_eq!(e, *f),
            (Err(e), Ok(_)) => prop_assert!(false, "peek failed ({:?}) where the parse succeeded", e),
        }
    }

    #[test]
    fn psn_laws(a: u32, b: u32, n in 0u32..PSN_HALF) {
        let (a, b) = (Psn::new(a), Psn::new(b));
        prop_assert_eq!(a.add(n).sub(n), a);
        prop_assert_eq!(a.add(n).diff(a), n as i32);
        prop_assert_eq!(a.add(n).distance_from(a), n);
        let d = a.diff(b);
        prop_assert!((-(PSN_HALF as i32)..PSN_HALF as i32).contains(&d));
        if d != -(PSN_HALF as i32) {
            prop_assert_eq!(b.diff(a), -d);
        }
        prop_assert_eq!(a.before(b), d < 0);
        prop_assert_eq!(b.add(d as u32), a);
        prop_assert_eq!(a.in_window(b, n), a.distance_from(b) < n);
        prop_assert!(a.get() <= PSN_MASK);
    }

    #[test]
    fn segmentation_covers_exactly_once(len in 0u32..200_000, m in 0usize..5) {
        let mtu = [Mtu::M256, Mtu::M512, Mtu::M1024, Mtu::M2048, Mtu::M4096][m];
        let segs: Vec<Segment> = Segments::new(len, mtu).collect();
        prop_assert_eq!(segs.len() as u32, mtu.packets(len));
        let mut next = 0u32;
        for (i, s) in segs.iter().enumerate() {
            prop_assert_eq!(s.offset, next);
            prop_assert_eq!(s.index, i as u32);
            prop_assert!(s.len <= mtu.bytes());
            let last = i + 1 == segs.len();
            if !last { prop_assert_eq!(s.len, mtu.bytes()); }
            let want = match (i == 0, last) {
                (true, true) => Position::Only,
                (true, false) => Position::First,
                (false, true) => Position::Last,
                _ => Position::Middle,
            };
            prop_assert_eq!(s.pos, want);
            next += s.len;
        }
        prop_assert_eq!(next, len);
    }

    /// The PMA answers any 256 bytes without panicking: a reply is a GetResp carrying the
    /// request's transaction ID and attribute; anything else leaves the output alone.
    #[test]
    fn pma_answers_any_mad(
        mut req in prop::collection::vec(any::<u8>(), pma::MAD_SIZE),
        method in prop::sample::select(vec![1u8, 2, 3, 5, 6, 7, 0x12, 0x81, 0x86]),
        attr in prop::sample::select(vec![1u16, 0x10, 0x11, 0x12, 0x1d, 0x1e, 0xffff]),
        structured: bool,
    ) {
        if structured {
            req[0] = 1;
            req[1] = pma::CLASS_PERF_MGMT;
            req[2] = 1;
            req[3] = method;
            req[16..18].copy_from_slice(&attr.to_be_bytes());
        }
        let req: [u8; pma::MAD_SIZE] = req.try_into().unwrap();
        let mut out = [0x5au8; pma::MAD_SIZE];
        let counts = pma::PortCounts { xmit_pkts: u64::MAX, ..Default::default() };
        match pma::answer(&req, 1, || counts, &mut out) {
            pma::Verdict::Reply => {
                prop_assert_eq!(out[3], pma::METHOD_GET_RESP);
                prop_assert_eq!(&out[..3], &req[..3]);
                prop_assert_eq!(&out[6..24], &req[6..24]);
            }
            pma::Verdict::PassOn => prop_assert!(out.iter().all(|&b| b == 0x5a)),
        }
    }
}
