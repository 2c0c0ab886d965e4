// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Runs the fuzz target bodies (fuzz/bodies.rs) on seeded random and
//! structured inputs, so stable CI exercises them without cargo-fuzz.
//! `RRXE_FUZZ_ITERS=n` changes the iteration count (default 100000).

#[path = "../fuzz/bodies.rs"]
mod bodies;

use rrxe_proto::*;

mod support;
use support::Rng;

fn iters() -> u64 {
    std::env::var("RRXE_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

/// A valid packet of a random opcode, so mutations reach deep code.
fn valid_packet(r: &mut Rng, out: &mut Vec<u8>) {
    let ops: Vec<u8> = (0..=255u8)
        .filter(|b| Opcode(*b).info().is_some())
        .collect();
    let op = Opcode(ops[(r.next() % ops.len() as u64) as usize]);
    let info = op.info().unwrap();
    let mut h = Headers::new(Bth::new(
        op,
        0x11,
        Psn::new(0xfffff8u32.wrapping_add((r.next() % 16) as u32)),
    ));
    h.bth.ack_req = r.next() & 1 == 0;
    use rrxe_proto::opcode::HdrSet;
    let s = info.hdrs;
    let v = r.next();
    if s.has(HdrSet::RETH) {
        h.reth = Some(Reth {
            va: v & !7,
            rkey: (v >> 40) as u32 & 0xfe,
            len: (v >> 8) as u32 % 3000,
        });
    }
    if s.has(HdrSet::AETH) {
        h.aeth = Some(Aeth {
            syndrome: (v >> 16) as u8,
            msn: 1,
        });
    }
    if s.has(HdrSet::ATOMIC) {
        h.atomic = Some(AtomicEth {
            va: v & !7,
            rkey: 2,
            swap_add: 1,
            compare: 2,
        });
    }
    if s.has(HdrSet::ATOMIC_ACK) {
        h.atomic_ack = Some(AtomicAckEth { orig: v });
    }
    if s.has(HdrSet::DETH) {
        h.deth = Some(Deth {
            qkey: 0x1234,
            src_qp: 5,
        });
    }
    if s.has(HdrSet::IMMDT) {
        h.imm = Some(7);
    }
    if s.has(HdrSet::IETH) {
        h.ieth = Some(9);
    }
    if s.has(HdrSet::FETH) {
        h.feth = Some(Feth { sel: 1, plt: 1 });
    }
    if s.has(HdrSet::XRCETH) {
        h.xrceth = Some((v >> 24) as u32 & 3);
    }
    let plen = match info.payload {
        opcode::PayloadRule::None => 0,
        opcode::PayloadRule::Exact8 => 8,
        opcode::PayloadRule::Any => [0usize, 256, 512, 100][(v % 4) as usize],
    };
    let mut buf = vec![0u8; 64 + plen];
    let n = build_packet(&h, &vec![0xab; plen], &mut buf).unwrap();
    out.push(n.min(255) as u8);
    out.extend_from_slice(&buf[..n.min(255)]);
}

#[test]
fn smoke_parse_packet() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..iters() {
        let len = (r.next() % 300) as usize;
        let mut d: Vec<u8> = (0..len).map(|_| r.next() as u8).collect();
        bodies::parse_packet(&d);
        // Also a valid packet with a few flipped bytes.
        d.clear();
        valid_packet(&mut r, &mut d);
        for _ in 0..(r.next() % 3) {
            if d.len() > 1 {
                let i = 1 + (r.next() as usize) % (d.len() - 1);
                d[i] ^= r.next() as u8;
            }
        }
        bodies::parse_packet(&d[1..]);
    }
}

#[test]
fn smoke_responder() {
    let mut r = Rng(0x1234_5678_9abc_def1);
    for _ in 0..iters() / 4 {
        let mut d = vec![r.next() as u8];
        for _ in 0..(r.next() % 24) {
            match r.next() % 5 {
                0 | 1 => {
                    d.push((r.next() as u8) & !0x17); // packet command, dest fixed
                    valid_packet(&mut r, &mut d);
                }
                2 => {
                    d.push(5);
                    d.extend((0..8).map(|_| r.next() as u8));
                }
                _ => d.push(r.next() as u8),
            }
        }
        bodies::responder(&d);
        let raw: Vec<u8> = (0..(r.next() % 200)).map(|_| r.next() as u8).collect();
        bodies::responder(&raw);
    }
}

#[test]
fn smoke_caps() {
    let mut r = Rng(0x0bad_cafe_1234_5678);
    for _ in 0..iters() {
        let d: Vec<u8> = (0..(r.next() % 28)).map(|_| r.next() as u8).collect();
        bodies::caps(&d);
    }
}

/// Rule lines: random bytes, and lines made of the rule language's own words.
#[test]
fn smoke_fault_rules() {
    const WORDS: &[&str] = &[
        "qp=",
        "0x12",
        "any",
        "dir=tx",
        "dir=rx",
        "op=",
        "read_resp",
        "send",
        "nak",
        "psn=",
        "1-5",
        "nth=",
        "every=",
        "prob=",
        "1/3",
        "seed=",
        "action=",
        "drop",
        "nak:rnr:",
        "nak:access",
        "delay:",
        "reorder:",
        "count=",
        "7",
        "0",
        "4294967296",
        " ",
        "\n",
        "=",
        "clear",
        "#",
    ];
    let mut r = Rng(0xfa17_0000_5eed_0001);
    for _ in 0..iters() {
        let d: Vec<u8> = if r.next() & 1 == 0 {
            (0..(r.next() % 300)).map(|_| r.next() as u8).collect()
        } else {
            (0..(r.next() % 24))
                .flat_map(|_| WORDS[(r.next() % WORDS.len() as u64) as usize].bytes())
                .collect()
        };
        bodies::fault_rules(&d);
    }
}

/// Slots of every length around the headers and SGE arrays, header fields steered to valid
/// opcodes and small counts (the body's control bytes) about half of the time.
#[test]
fn smoke_uwqe() {
    let mut r = Rng(0x5eed_0f0e_b1f0_0d11);
    for _ in 0..iters() {
        let len = 4 + (r.next() % 700) as usize;
        let mut d: Vec<u8> = (0..len).map(|_| r.next() as u8).collect();
        if r.next() & 1 == 0 {
            d[3] |= 0x3e;
            // SGEs with small lengths (send and receive layouts), so sums are often accepted.
            for base in [4 + 72, 4 + 16] {
                for o in (base..len).step_by(16) {
                    if o + 12 <= len {
                        d[o + 9..o + 12].fill(0);
                    }
                }
            }
        }
        bodies::uwqe(&d);
    }
}
