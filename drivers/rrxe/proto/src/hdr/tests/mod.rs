// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Known packets and malformed ones.

use super::super::opcode::Opcode;
use super::super::psn::Psn;
use super::*;

#[test]
fn known_send_only_packet() {
    // RC SEND ONLY, SE, pkey ffff, dest qp 0x000011, ackreq, psn 0x123456,
    // 5 payload bytes -> pad 3.
    let pkt: [u8; 12 + 5 + 3 + 4] = [
        0x04, 0xb0, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11, 0x80, 0x12, 0x34, 0x56, b'h', b'e', b'l',
        b'l', b'o', 0, 0, 0, 0xaa, 0xbb, 0xcc, 0xdd,
    ];
    let p = parse_packet(&pkt).unwrap();
    assert_eq!(p.hdrs.bth.opcode, Opcode::RC_SEND_ONLY);
    assert!(p.hdrs.bth.se);
    assert_eq!(p.hdrs.bth.pad, 3);
    assert_eq!(p.hdrs.bth.dest_qp, 0x11);
    assert!(p.hdrs.bth.ack_req);
    assert_eq!(p.hdrs.bth.psn, Psn::new(0x123456));
    assert_eq!(p.payload(&pkt), Some(&b"hello"[..]));
    assert_eq!(p.icrc, [0xaa, 0xbb, 0xcc, 0xdd]);
    let mut out = [0u8; 64];
    let n = build_packet(&p.hdrs, b"hello", &mut out).unwrap();
    assert_eq!(n, pkt.len());
    assert_eq!(&out[..n - 4], &pkt[..n - 4]);
}

#[test]
fn known_write_and_ack() {
    let mut h = Headers::new(Bth::new(Opcode::RC_WRITE_ONLY_IMM, 0xabcdef, Psn::new(7)));
    h.reth = Some(Reth {
        va: 0x0102_0304_0506_0708,
        rkey: 0x1122_3344,
        len: 0,
    });
    h.imm = Some(0xdead_beef);
    let mut out = [0u8; 64];
    let n = build_packet(&h, &[], &mut out).unwrap();
    assert_eq!(
        &out[..n],
        &[
            0x0b, 0x00, 0xff, 0xff, 0x00, 0xab, 0xcd, 0xef, 0x00, 0x00, 0x00, 0x07, 1, 2, 3, 4, 5,
            6, 7, 8, 0x11, 0x22, 0x33, 0x44, 0, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0
        ]
    );
    let mut a = Headers::new(Bth::new(Opcode::RC_ACKNOWLEDGE, 1, Psn::new(2)));
    a.aeth = Some(Aeth {
        syndrome: Aeth::syndrome_of(AethKind::RnrNak { timer: 12 }),
        msn: 0x10203,
    });
    let n = build_packet(&a, &[], &mut out).unwrap();
    assert_eq!(&out[12..16], &[0x2c, 0x01, 0x02, 0x03]);
    let p = parse_packet(&out[..n]).unwrap();
    assert_eq!(p.hdrs.aeth.unwrap().kind(), AethKind::RnrNak { timer: 12 });
}

#[test]
fn xrc_send_and_write() {
    // XRC SEND ONLY with immediate to SRQ 0x123456: BTH | XRCETH | ImmDt | payload.
    let mut h = Headers::new(Bth::new(Opcode(0xa5), 0x11, Psn::new(3)));
    h.xrceth = Some(0xab12_3456); // the reserved byte is written as 0
    h.imm = Some(0x0102_0304);
    let mut out = [0u8; 64];
    let n = build_packet(&h, b"abcd", &mut out).unwrap();
    assert_eq!(n, 12 + 4 + 4 + 4 + 4);
    assert_eq!(&out[12..20], &[0, 0x12, 0x34, 0x56, 1, 2, 3, 4]);
    let p = parse_packet(&out[..n]).unwrap();
    assert_eq!(p.hdrs.xrceth, Some(0x12_3456));
    assert_eq!(p.hdrs.imm, Some(0x0102_0304));
    assert_eq!(p.payload(&out[..n]), Some(&b"abcd"[..]));
    // The reserved byte is ignored on receive.
    out[12] = 0xff;
    assert_eq!(
        parse_packet(&out[..n]).unwrap().hdrs.xrceth,
        Some(0x12_3456)
    );
    // XRCETH comes before the RETH.
    let mut w = Headers::new(Bth::new(Opcode(0xaa), 1, Psn::new(0)));
    w.xrceth = Some(7);
    w.reth = Some(Reth {
        va: 0x10,
        rkey: 0x20,
        len: 0,
    });
    let n = build_packet(&w, &[], &mut out).unwrap();
    assert_eq!(&out[12..16], &[0, 0, 0, 7]);
    assert_eq!(&out[16..24], &[0, 0, 0, 0, 0, 0, 0, 0x10]);
    assert_eq!(parse_packet(&out[..n]).unwrap().hdrs, w);
    // An XRC request without its XRCETH, an RC request with one, an XRC ACK with one.
    let mut miss = w;
    miss.xrceth = None;
    assert_eq!(
        build_packet(&miss, &[], &mut out),
        Err(BuildError::MissingHeader)
    );
    let mut rc = Headers::new(Bth::new(Opcode::RC_SEND_ONLY, 1, Psn::new(0)));
    rc.xrceth = Some(1);
    assert_eq!(
        build_packet(&rc, &[], &mut out),
        Err(BuildError::UnexpectedHeader)
    );
    let mut ack = Headers::new(Bth::new(Opcode::XRC_ACKNOWLEDGE, 1, Psn::new(0)));
    ack.aeth = Some(Aeth::default());
    let n = build_packet(&ack, &[], &mut out).unwrap();
    assert_eq!(n, 12 + 4 + 4);
    ack.xrceth = Some(1);
    assert_eq!(
        build_packet(&ack, &[], &mut out),
        Err(BuildError::UnexpectedHeader)
    );
    // Truncated inside the XRCETH.
    let n = build_packet(&h, &[], &mut out).unwrap();
    assert_eq!(parse_packet(&out[..n - 5]), Err(ParseError::Truncated));
    // The largest header: XRC CompareSwap.
    let mut cs = Headers::new(Bth::new(Opcode::XRC_COMPARE_SWAP, 1, Psn::new(0)));
    cs.xrceth = Some(1);
    cs.atomic = Some(AtomicEth::default());
    assert_eq!(build_headers(&cs, 0, &mut out), Ok(MAX_HDR_LEN));
}

#[test]
fn malformed() {
    let mut good = [0u8; 64];
    let h = Headers::new(Bth::new(Opcode::RC_SEND_MIDDLE, 1, Psn::new(0)));
    let n = build_packet(&h, &[1, 2, 3, 4], &mut good).unwrap();
    assert!(parse_packet(&good[..n]).is_ok());
    assert_eq!(parse_packet(&good[..11]), Err(ParseError::Truncated));
    assert_eq!(parse_packet(&good[..15]), Err(ParseError::Truncated));
    let mut b = good;
    b[1] |= 1;
    assert_eq!(parse_packet(&b[..n]), Err(ParseError::BadVersion(1)));
    let mut b = good;
    b[0] = 0x15;
    assert_eq!(parse_packet(&b[..n]), Err(ParseError::UnknownOpcode(0x15)));
    let mut b = good;
    b[1] |= 0x10; // pad on a middle packet
    assert_eq!(parse_packet(&b[..n]), Err(ParseError::BadPad));
    // ACK with payload
    let mut a = Headers::new(Bth::new(Opcode::RC_ACKNOWLEDGE, 1, Psn::new(0)));
    a.aeth = Some(Aeth::default());
    let n = build_packet(&a, &[], &mut good).unwrap();
    let mut big = [0u8; 64];
    big[..n - 4].copy_from_slice(&good[..n - 4]);
    assert_eq!(
        parse_packet(&big[..n + 4]),
        Err(ParseError::UnexpectedPayload)
    );
    // atomic write with 4 bytes
    let mut aw = Headers::new(Bth::new(Opcode::RC_ATOMIC_WRITE, 1, Psn::new(0)));
    aw.reth = Some(Reth::default());
    assert_eq!(
        build_packet(&aw, &[0; 4], &mut good),
        Err(BuildError::BadPayloadLength)
    );
    let n = build_packet(&aw, &[0; 8], &mut good).unwrap();
    assert!(parse_packet(&good[..n]).is_ok());
    assert_eq!(
        parse_packet(&good[..n - 4]),
        Err(ParseError::BadPayloadLength)
    );
    // header mismatch on build
    let mut bad = Headers::new(Bth::new(Opcode::RC_SEND_ONLY, 1, Psn::new(0)));
    bad.reth = Some(Reth::default());
    assert_eq!(
        build_packet(&bad, &[], &mut good),
        Err(BuildError::UnexpectedHeader)
    );
    let miss = Headers::new(Bth::new(Opcode::RC_READ_REQUEST, 1, Psn::new(0)));
    assert_eq!(
        build_packet(&miss, &[], &mut good),
        Err(BuildError::MissingHeader)
    );
    assert_eq!(
        build_packet(&h, &[0; 60], &mut good),
        Err(BuildError::BufferTooSmall)
    );
}
