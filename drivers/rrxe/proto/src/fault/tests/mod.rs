// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Unit and property tests of the fault injection rules.

use super::*;
use core::fmt::Write;
use proptest::prelude::*;
use std::string::ToString;
use std::vec;
use std::vec::Vec;

fn rule(s: &str) -> Rule {
    parse_rule(s.as_bytes()).unwrap()
}

fn pkt(qpn: u32, dir: Dir, class: OpClass, psn: u32) -> PacketView {
    PacketView {
        qpn,
        dir,
        class,
        psn: Psn::new(psn),
    }
}

#[test]
fn parses_the_example() {
    let r = rule("qp=0x12 dir=rx op=read_resp nth=3 action=drop count=1");
    assert_eq!(
        r,
        Rule {
            qp: Some(0x12),
            dir: Dir::Rx,
            op: Some(OpClass::ReadResp),
            psn: None,
            select: Select::Nth(3),
            seed: 0,
            action: FaultAction::Drop,
            count: Some(1),
        }
    );
    assert_eq!(
        r.to_string(),
        "qp=0x12 dir=rx op=read_resp nth=3 action=drop count=1"
    );
}

#[test]
fn refuses_bad_rules() {
    let bad: &[(&str, RuleError)] = &[
        ("dir=rx", RuleError::Missing),
        ("action=drop", RuleError::Missing),
        ("dir=up action=drop", RuleError::BadValue),
        ("dir=rx dir=tx action=drop", RuleError::Repeated),
        ("qp=1 qp=any dir=rx action=drop", RuleError::Repeated),
        ("dir=rx action=drop nth=0", RuleError::BadValue),
        ("dir=rx action=drop nth=1 every=2", RuleError::Repeated),
        ("dir=rx action=drop prob=3/2", RuleError::BadValue),
        ("dir=rx action=drop prob=1/0", RuleError::BadValue),
        ("dir=rx action=drop seed=4", RuleError::Conflict),
        ("dir=tx action=nak:access", RuleError::Conflict),
        ("dir=rx op=ack action=nak:access", RuleError::Conflict),
        ("dir=rx action=nak:rnr:32", RuleError::BadValue),
        ("dir=rx action=nak:rnr", RuleError::BadValue),
        ("dir=rx action=nak:seq:1", RuleError::BadValue),
        ("dir=rx action=delay:0", RuleError::BadValue),
        ("dir=rx action=delay:1000001", RuleError::BadValue),
        ("dir=rx action=reorder:9", RuleError::BadValue),
        ("dir=rx action=drop:1", RuleError::BadValue),
        ("dir=rx action=drop qp=0x1000000", RuleError::BadValue),
        ("dir=rx action=drop psn=1-0x1000000", RuleError::BadValue),
        ("dir=rx action=drop count=0", RuleError::BadValue),
        ("dir=rx action=drop count=4294967296", RuleError::BadValue),
        ("dir=rx action=drop colour=red", RuleError::UnknownKey),
        ("dir=rx action=drop junk", RuleError::UnknownKey),
        ("dir=rx action=drop op=reads", RuleError::BadValue),
    ];
    for (s, e) in bad {
        assert_eq!(parse_rule(s.as_bytes()), Err(*e), "{s}");
    }
    let long = [b'x'; MAX_LINE + 1];
    assert_eq!(parse_command(&long), Err(RuleError::TooLong));
}

#[test]
fn commands() {
    assert_eq!(parse_command(b"  "), Ok(Command::Nothing));
    assert_eq!(parse_command(b"# a comment"), Ok(Command::Nothing));
    assert_eq!(parse_command(b" clear\t"), Ok(Command::Clear));
    assert!(matches!(
        parse_command(b"dir=tx action=drop"),
        Ok(Command::Add(_))
    ));
}

#[test]
fn nth_picks_only_the_nth_and_retires() {
    let mut s = FaultSet::<4>::new();
    s.add(rule("qp=5 dir=rx op=read_resp nth=3 action=drop count=1"))
        .unwrap();
    let mut hits = Vec::new();
    for i in 0..10 {
        // Other QPs, directions and classes are not counted.
        assert_eq!(s.decide(&pkt(6, Dir::Rx, OpClass::ReadResp, i)), None);
        assert_eq!(s.decide(&pkt(5, Dir::Tx, OpClass::ReadResp, i)), None);
        assert_eq!(s.decide(&pkt(5, Dir::Rx, OpClass::Ack, i)), None);
        if s.decide(&pkt(5, Dir::Rx, OpClass::ReadResp, i)).is_some() {
            hits.push(i);
        }
    }
    assert_eq!(hits, [2]);
    let r = s.rules().next().unwrap();
    assert_eq!((r.seen, r.hits, r.live()), (3, 1, false));
    assert!(!s.any_live());
}

#[test]
fn every_and_count() {
    let mut s = FaultSet::<4>::new();
    s.add(rule("dir=tx every=2 action=dup count=3")).unwrap();
    let hits: Vec<u32> = (0..20)
        .filter(|&i| s.decide(&pkt(1, Dir::Tx, OpClass::Send, i)).is_some())
        .collect();
    assert_eq!(hits, [1, 3, 5]);
    assert_eq!(s.rules().next().unwrap().seen, 6);
}

#[test]
fn psn_range_wraps() {
    let r = rule("dir=tx psn=0xfffffe-1 action=drop");
    let inside = |p| r.filters(&pkt(0, Dir::Tx, OpClass::Write, p));
    assert!(inside(0xfffffe) && inside(0xffffff) && inside(0) && inside(1));
    assert!(!inside(2) && !inside(0xfffffd));
    let one = rule("dir=tx psn=7 action=drop");
    assert!(one.filters(&pkt(0, Dir::Tx, OpClass::Write, 7)));
    assert!(!one.filters(&pkt(0, Dir::Tx, OpClass::Write, 8)));
}

#[test]
fn first_picking_rule_wins() {
    let mut s = FaultSet::<4>::new();
    s.add(rule("dir=tx action=drop count=1")).unwrap();
    s.add(rule("dir=tx action=dup count=1")).unwrap();
    let p = pkt(1, Dir::Tx, OpClass::Send, 0);
    assert_eq!(s.decide(&p), Some((1, FaultAction::Drop)));
    assert_eq!(s.decide(&p), Some((2, FaultAction::Dup)));
    assert_eq!(s.decide(&p), None);
    let seen: Vec<u64> = s.rules().map(|r| r.seen).collect();
    // The second rule did not see the packet the first one hit.
    assert_eq!(seen, [1, 1]);
}

#[test]
fn full_set_refuses_all_or_nothing() {
    let mut s = FaultSet::<2>::new();
    let r = rule("dir=tx action=drop");
    assert_eq!(s.add_all([r, r, r].iter()), Err(AddError::Full));
    assert_eq!(s.rules().count(), 0);
    assert_eq!(s.add_all([r, r].iter()), Ok(1));
    assert_eq!(s.add(r), Err(AddError::Full));
    s.clear();
    assert_eq!(s.add(r), Ok(1));
}

#[test]
fn classes() {
    assert_eq!(OpClass::of(Opcode::RC_SEND_ONLY, None), OpClass::Send);
    assert_eq!(OpClass::of(Opcode::UC_WRITE_FIRST, None), OpClass::Write);
    assert_eq!(OpClass::of(Opcode::RC_READ_REQUEST, None), OpClass::ReadReq);
    assert_eq!(
        OpClass::of(Opcode::RC_READ_RESPONSE_MIDDLE, None),
        OpClass::ReadResp
    );
    assert_eq!(OpClass::of(Opcode::RC_FETCH_ADD, None), OpClass::Atomic);
    assert_eq!(
        OpClass::of(Opcode::RC_ACKNOWLEDGE, Some(0x1f)),
        OpClass::Ack
    );
    assert_eq!(
        OpClass::of(Opcode::RC_ACKNOWLEDGE, Some(0x2e)),
        OpClass::Nak
    );
    assert_eq!(
        OpClass::of(Opcode::RC_ACKNOWLEDGE, Some(0x62)),
        OpClass::Nak
    );
    assert_eq!(
        OpClass::of(Opcode::RC_ATOMIC_ACKNOWLEDGE, Some(0)),
        OpClass::Ack
    );
    assert_eq!(OpClass::of(Opcode(0x81), None), OpClass::Cnp);
    assert_eq!(OpClass::of(Opcode(0xff), None), OpClass::Other);
}

#[test]
fn nak_syndromes() {
    assert_eq!(NakKind::Rnr(14).syndrome(), 0x2e);
    assert_eq!(NakKind::PsnSeq.syndrome(), 0x60);
    assert_eq!(NakKind::InvalidRequest.syndrome(), 0x61);
    assert_eq!(NakKind::RemoteAccess.syndrome(), 0x62);
    assert_eq!(NakKind::RemoteOp.syndrome(), 0x63);
}

#[test]
fn listing_fits_and_stops_when_full() {
    let mut s = FaultSet::<1>::new();
    s.add(rule("qp=0xffffff dir=rx op=read_req psn=16777215-16777215 prob=4294967295/4294967295 seed=18446744073709551615 action=nak:rnr:31 count=4294967295")).unwrap();
    let mut buf = [0u8; 4096];
    let mut w = SliceWriter::new(&mut buf);
    writeln!(w, "{}", s.rules().next().unwrap()).unwrap();
    // The longest possible line stays well under MAX_LINE + the counters.
    assert!(w.len() < MAX_LINE + 80, "{}", w.len());
    let mut small = [0u8; 8];
    let mut w = SliceWriter::new(&mut small);
    assert!(write!(w, "{}", s.rules().next().unwrap()).is_err());
    assert!(w.len() <= 8);
}

fn arb_rule() -> impl Strategy<Value = Rule> {
    let class = prop_oneof![
        Just(OpClass::Send),
        Just(OpClass::Write),
        Just(OpClass::ReadReq),
        Just(OpClass::ReadResp),
        Just(OpClass::Atomic),
        Just(OpClass::Ack),
        Just(OpClass::Nak),
        Just(OpClass::Cnp),
    ];
    let select = prop_oneof![
        Just(Select::All),
        (1u32..10).prop_map(Select::Nth),
        (1u32..10).prop_map(Select::Every),
        (1u32..100, 0u32..100).prop_map(|(d, n)| Select::Prob {
            num: n % (d + 1),
            den: d
        }),
    ];
    let action = prop_oneof![
        Just(FaultAction::Drop),
        Just(FaultAction::Dup),
        Just(FaultAction::Icrc),
        (1u32..=MAX_DELAY_US).prop_map(FaultAction::Delay),
        (1u8..=MAX_REORDER).prop_map(FaultAction::Reorder),
    ];
    (
        proptest::option::of(0u32..0x0100_0000),
        any::<bool>(),
        proptest::option::of(class),
        proptest::option::of((0u32..0x0100_0000, 0u32..0x0100_0000)),
        select,
        any::<u64>(),
        action,
        proptest::option::of(1u32..100),
    )
        .prop_map(|(qp, tx, op, psn, select, seed, action, count)| Rule {
            qp,
            dir: if tx { Dir::Tx } else { Dir::Rx },
            op,
            psn: psn.map(|(a, b)| (Psn::new(a), Psn::new(b))),
            select,
            seed: if matches!(select, Select::Prob { .. }) {
                seed
            } else {
                0
            },
            action,
            count,
        })
}

fn run(s: &mut FaultSet<4>, pkts: &[(u32, bool, u8, u32)]) -> Vec<Option<(u32, FaultAction)>> {
    pkts.iter()
        .map(|&(q, tx, c, psn)| {
            let class = CLASS_NAMES[usize::from(c) % CLASS_NAMES.len()].1;
            let dir = if tx { Dir::Tx } else { Dir::Rx };
            s.decide(&pkt(q % 4, dir, class, psn & 0x00ff_ffff))
        })
        .collect()
}

proptest! {
    #[test]
    fn parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_command(&bytes);
    }

    #[test]
    fn parser_never_panics_on_words(words in proptest::collection::vec(
        prop_oneof![
            Just("qp=".to_string()), Just("dir=".to_string()), Just("op=".to_string()),
            Just("psn=".to_string()), Just("nth=".to_string()), Just("prob=".to_string()),
            Just("action=nak:".to_string()), Just("action=".to_string()),
            Just("count=".to_string()), Just("seed=".to_string()),
            "[a-z0-9:/x=-]{0,12}",
        ], 0..12)) {
        let _ = parse_command(words.join(" ").as_bytes());
    }

    #[test]
    fn text_round_trips(r in arb_rule()) {
        let text = r.to_string();
        prop_assert!(text.len() <= MAX_LINE);
        prop_assert_eq!(parse_rule(text.as_bytes()), Ok(r));
    }

    #[test]
    fn same_seed_same_decisions(
        rules in proptest::collection::vec(arb_rule(), 1..4),
        pkts in proptest::collection::vec((any::<u32>(), any::<bool>(), any::<u8>(), any::<u32>()), 0..300),
    ) {
        let mut a = FaultSet::<4>::new();
        let mut b = FaultSet::<4>::new();
        a.add_all(rules.iter()).unwrap();
        b.add_all(rules.iter()).unwrap();
        prop_assert_eq!(run(&mut a, &pkts), run(&mut b, &pkts));
        let ca: Vec<_> = a.rules().map(|r| (r.seen, r.hits)).collect();
        let cb: Vec<_> = b.rules().map(|r| (r.seen, r.hits)).collect();
        prop_assert_eq!(ca, cb);
    }

    #[test]
    fn hits_never_exceed_count(r in arb_rule(),
        pkts in proptest::collection::vec((any::<u32>(), any::<bool>(), any::<u8>(), any::<u32>()), 0..300)) {
        let mut s = FaultSet::<4>::new();
        s.add(r).unwrap();
        let hits = run(&mut s, &pkts).iter().filter(|d| d.is_some()).count() as u64;
        let st = s.rules().next().unwrap();
        prop_assert_eq!(st.hits, hits);
        prop_assert!(st.hits <= st.seen);
        if let Some(c) = r.count {
            prop_assert!(hits <= u64::from(c));
        }
    }

    #[test]
    fn prob_rate_is_near(num in 0u32..=16, seed in any::<u64>()) {
        let mut s = FaultSet::<1>::new();
        s.add(Rule { select: Select::Prob { num, den: 16 }, seed, ..rule("dir=tx action=drop") }).unwrap();
        let n = 4096u64;
        for i in 0..n {
            s.decide(&pkt(0, Dir::Tx, OpClass::Send, i as u32));
        }
        let hits = s.rules().next().unwrap().hits;
        let want = n * u64::from(num) / 16;
        // Within 6 standard deviations (at most 6 * 32) of the expectation.
        prop_assert!(hits.abs_diff(want) <= 192, "{} vs {}", hits, want);
        if num == 0 { prop_assert_eq!(hits, 0); }
        if num == 16 { prop_assert_eq!(hits, n); }
    }
}
