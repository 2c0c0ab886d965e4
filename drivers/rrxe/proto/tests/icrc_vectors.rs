// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! ICRC known vectors and an independent re-derivation.

use rrxe_proto::icrc;
use rrxe_proto::net::{locate_ib, write_ipv4_udp, write_ipv6_udp};
use rrxe_proto::*;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// A CNP captured from a Mellanox ConnectX-4 Lx (hardware-generated ICRC),
/// as published in scapy's RoCE regression tests (IP header onwards).
#[test]
fn connectx4_cnp_capture() {
    let frame = hex("45c2 003c 718c 4000 4011 9161 0a00 1101 0a00 1201
         0000 12b7 0028 0000
         8100 ffff 4000 0118 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         82fd 002a");
    let l = locate_ib(&frame).unwrap();
    assert_eq!((l.ib_off, l.ib_len), (28, 32));
    assert_eq!(
        icrc::compute(&SoftCrc32, &frame, false).unwrap(),
        [0x82, 0xfd, 0x00, 0x2a]
    );
    assert!(icrc::verify(&SoftCrc32, &frame, false));
    let p = parse_packet(&frame[28..]).unwrap();
    assert_eq!(p.hdrs.bth.opcode, Opcode::CNP);
    assert!(p.hdrs.bth.becn && !p.hdrs.bth.fecn);
    assert_eq!(p.hdrs.bth.dest_qp, 0x118);
    assert_eq!(p.payload_len, 0);
    // Masked fields do not change the ICRC; covered ones do.
    let mut f = frame.clone();
    f[1] = 0; // TOS
    f[8] = 1; // TTL
    f[10] = 0; // IP checksum
    f[26] = 0x12; // UDP checksum
    f[32] = 0x00; // BTH FECN/BECN/resv6
    assert!(icrc::verify(&SoftCrc32, &f, false));
    let mut g = frame.clone();
    g[35] ^= 1; // dest QP
    assert!(!icrc::verify(&SoftCrc32, &g, false));
}

/// The UC SEND ONLY example of scapy's RoCE tests (ICRC 0x78f353f3).
#[test]
fn scapy_uc_send_only() {
    let mut frame = vec![0u8; 64];
    write_ipv4_udp(
        &mut frame,
        [192, 168, 0, 7],
        [192, 168, 0, 7],
        0x01,
        64,
        49152,
        36,
    )
    .unwrap();
    frame[4..6].copy_from_slice(&1144u16.to_be_bytes()); // IP id (covered)
    let mut h = Headers::new(Bth::new(Opcode::UC_SEND_ONLY, 211, Psn::new(13_571_856)));
    h.bth.mig = true;
    let payload = b"F0\x81\x8b\xe2\x895\xd9\x0e\x9a\x95PT\x01\xbe\x88^P";
    let n = build_packet(&h, payload, &mut frame[28..]).unwrap();
    assert_eq!(n, 36);
    assert_eq!(frame[29], 0x60); // migreq + pad 2
    assert_eq!(
        icrc::compute(&SoftCrc32, &frame, false).unwrap(),
        [0x78, 0xf3, 0x53, 0xf3]
    );
}

// ---- independent derivation: bitwise CRC over an explicitly masked copy

fn bitwise_crc(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let m = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & m);
        }
    }
    !crc
}

fn reference_icrc(frame: &[u8], v6: bool) -> [u8; 4] {
    let iplen = if v6 { 40 } else { 20 };
    let mut mask = vec![0u8; frame.len() - 4];
    if v6 {
        mask[0] = 0x0f;
        mask[1] = 0xff;
        mask[2] = 0xff;
        mask[3] = 0xff;
        mask[7] = 0xff;
    } else {
        mask[1] = 0xff;
        mask[8] = 0xff;
        mask[10] = 0xff;
        mask[11] = 0xff;
    }
    mask[iplen + 6] = 0xff;
    mask[iplen + 7] = 0xff;
    mask[iplen + 8 + 4] = 0xff;
    let mut buf = vec![0xffu8; 8];
    buf.extend(
        frame[..frame.len() - 4]
            .iter()
            .zip(&mask)
            .map(|(b, m)| b | m),
    );
    bitwise_crc(&buf).to_le_bytes()
}

#[test]
fn matches_independent_reference() {
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..300 {
        let v6 = i % 2 == 1;
        let plen = (rnd() % 300) as usize;
        let ops = [
            Opcode::RC_SEND_ONLY,
            Opcode::RC_WRITE_ONLY,
            Opcode::UD_SEND_ONLY_IMM,
        ];
        let op = ops[(rnd() % 3) as usize];
        let mut h = Headers::new(Bth::new(op, rnd() as u32, Psn::new(rnd() as u32)));
        h.bth.fecn = rnd() % 2 == 0;
        h.bth.becn = rnd() % 2 == 0;
        if op == Opcode::RC_WRITE_ONLY {
            h.reth = Some(Reth {
                va: rnd(),
                rkey: rnd() as u32,
                len: plen as u32,
            });
        }
        if op == Opcode::UD_SEND_ONLY_IMM {
            h.deth = Some(Deth {
                qkey: rnd() as u32,
                src_qp: rnd() as u32 & 0xffffff,
            });
            h.imm = Some(rnd() as u32);
        }
        let payload: Vec<u8> = (0..plen).map(|_| rnd() as u8).collect();
        let mut ib = vec![0u8; 64 + plen];
        let n = build_packet(&h, &payload, &mut ib).unwrap();
        ib.truncate(n);
        let hl = if v6 { 48 } else { 28 };
        let mut frame = vec![0u8; hl + n];
        if v6 {
            write_ipv6_udp(
                &mut frame,
                [7; 16],
                [9; 16],
                rnd() as u8,
                rnd() as u32,
                rnd() as u8,
                rnd() as u16,
                n,
            )
            .unwrap();
        } else {
            write_ipv4_udp(
                &mut frame,
                [1, 2, 3, 4],
                [5, 6, 7, 8],
                rnd() as u8,
                rnd() as u8,
                rnd() as u16,
                n,
            )
            .unwrap();
        }
        frame[hl..].copy_from_slice(&ib);
        let want = reference_icrc(&frame, v6);
        assert_eq!(icrc::compute(&SoftCrc32, &frame, v6).unwrap(), want);
        icrc::fill(&SoftCrc32, &mut frame, v6).unwrap();
        assert!(icrc::verify(&SoftCrc32, &frame, v6));
        // Streaming over arbitrary fragments gives the same result.
        let iplen = hl - 8;
        let mut s = if v6 {
            icrc::Icrc::begin_v6(&SoftCrc32, &frame[..40], &frame[40..48], &frame[48..60]).unwrap()
        } else {
            icrc::Icrc::begin_v4(&SoftCrc32, &frame[..20], &frame[20..28], &frame[28..40]).unwrap()
        };
        let body = &frame[iplen + 8 + 12..frame.len() - 4];
        let cut = (rnd() as usize) % (body.len() + 1);
        s.update(&body[..cut]);
        s.update(&body[cut..]);
        assert_eq!(s.finish(), want);
        // As the driver builds a packet: the headers through `begin`, a middle part
        // through the raw register continued by another engine, the rest fed again.
        let mut s = icrc::Icrc::begin(&SoftCrc32, &frame, v6).unwrap();
        let cut2 = cut + (rnd() as usize) % (body.len() - cut + 1);
        s.update(&body[..cut]);
        s.resume(rrxe_proto::crc::crc32_update(
            s.register(),
            &body[cut..cut2],
        ));
        s.update(&body[cut2..]);
        assert_eq!(s.finish(), want);
    }
}
