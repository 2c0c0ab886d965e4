// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Micro-benchmarks: `cargo run --release -p rrxe-proto --example bench`.
//! Prints ns/op and MB/s for header build / parse, CRC-32 and ICRC, and packets/s of the
//! whole transmit path a driver runs per packet (segmentation by the requester, headers,
//! payload copy, IPv4/UDP, ICRC): a protocol-core regression shows here without VMs.

use rrxe_proto::icrc;
use rrxe_proto::net::write_ipv4_udp;
use rrxe_proto::*;
use std::hint::black_box;
use std::time::Instant;

#[path = "../tests/support/mod.rs"]
mod support;

fn bench(name: &str, bytes_per_op: usize, mut f: impl FnMut()) {
    // Calibrate to ~0.3 s.
    let mut iters = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        let el = t.elapsed().as_secs_f64();
        if el > 0.3 {
            let ns = el * 1e9 / iters as f64;
            let mbs = if bytes_per_op > 0 {
                format!(
                    "{:>10.1} MB/s",
                    bytes_per_op as f64 * iters as f64 / el / 1e6
                )
            } else {
                String::new()
            };
            println!("{name:<36} {ns:>10.1} ns/op {mbs}");
            return;
        }
        iters *= 2;
    }
}

fn main() {
    let mut h = Headers::new(Bth::new(Opcode::RC_WRITE_FIRST, 0x1234, Psn::new(7)));
    h.reth = Some(Reth {
        va: 0xdead_beef_0000,
        rkey: 0x42,
        len: 1 << 20,
    });
    let mut hdr = [0u8; 64];
    bench("build_headers (RC WRITE FIRST)", 28, || {
        black_box(build_headers(black_box(&h), 1024, &mut hdr).unwrap());
    });

    for plen in [0usize, 1024, 4096] {
        let mut pkt = vec![0u8; 64 + plen];
        let n = build_packet(&h, &vec![7u8; plen], &mut pkt).unwrap();
        pkt.truncate(n);
        bench(
            &format!("parse_packet ({plen} B payload, hdr MB/s)"),
            28,
            || {
                black_box(parse_packet(black_box(&pkt)).unwrap());
            },
        );
    }

    for len in [64usize, 1024, 4096] {
        let data = vec![0x5au8; len];
        bench(&format!("crc32 software ({len} B)"), len, || {
            black_box(crc::crc32(black_box(&data)));
        });
    }

    for plen in [0usize, 1024, 4096] {
        let mut h2 = Headers::new(Bth::new(Opcode::RC_SEND_ONLY, 0x1234, Psn::new(7)));
        h2.bth.ack_req = true;
        let ib_len = hdr::packet_len(h2.bth.opcode, plen as u32).unwrap();
        let mut frame = vec![0u8; 28 + ib_len];
        write_ipv4_udp(
            &mut frame,
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            0,
            64,
            0xc000,
            ib_len,
        )
        .unwrap();
        build_packet(&h2, &vec![1u8; plen], &mut frame[28..]).unwrap();
        let total = frame.len();
        bench(
            &format!("icrc fill+verify ({total} B frame)"),
            2 * total,
            || {
                icrc::fill(&SoftCrc32, black_box(&mut frame), false).unwrap();
                assert!(icrc::verify(&SoftCrc32, black_box(&frame), false));
            },
        );
    }

    // Requester packet generation rate (headers only, no copying).
    #[derive(Default)]
    struct Count(u64);
    impl ActionSink for Count {
        fn push(&mut self, a: Action) {
            if let Action::Send(p) = a {
                black_box(p);
                self.0 += 1;
            }
        }
    }
    let cfg = QpConfig {
        qpn: 1,
        dest_qpn: 2,
        mtu: Mtu::M4096,
        max_inflight: 1 << 20,
        ..QpConfig::default()
    };
    bench("requester: 1 MiB WRITE -> 256 packets", 0, || {
        let mut q: Qp<4, 4> = Qp::new(cfg);
        let mut s = Count::default();
        support::to_rts(&mut q, &mut s).unwrap();
        q.post_send(
            support::wqe(
                1,
                SendOp::Write {
                    remote: RemoteAddr { va: 0, rkey: 1 },
                    imm: None,
                },
                1 << 20,
            ),
            &mut s,
        )
        .unwrap();
        while q.poll_tx(64, &mut s) {}
        assert_eq!(s.0, 256);
    });

    // The whole per-packet transmit path: the requester segments a 64 KiB WRITE, and each
    // packet gets its headers, its payload copied in, IPv4/UDP and the ICRC (software
    // CRC-32 here; the kernel uses its own crc32_le). What the driver adds on top is the
    // skb, the route and the netdev.
    let payload = vec![0xa5u8; 64 * 1024];
    for mtu in [Mtu::M1024, Mtu::M4096] {
        let cfg = QpConfig { mtu, ..cfg };
        let npkts = u64::from(mtu.packets(64 * 1024));
        let mut frame = vec![0u8; 28 + 64 + mtu.bytes() as usize + 8];
        struct Frames<'a> {
            frame: &'a mut Vec<u8>,
            payload: &'a [u8],
            n: u64,
        }
        impl ActionSink for Frames<'_> {
            fn push(&mut self, a: Action) {
                let Action::Send(p) = a else { return };
                let Payload::Wqe { offset, len, .. } = p.payload else {
                    return;
                };
                let data = &self.payload[offset as usize..(offset + len) as usize];
                let ib_len = hdr::packet_len(p.hdrs.bth.opcode, len).unwrap();
                let f = &mut self.frame[..28 + ib_len];
                write_ipv4_udp(f, [10, 0, 0, 1], [10, 0, 0, 2], 0, 64, 0xc000, ib_len).unwrap();
                build_packet(&p.hdrs, data, &mut f[28..]).unwrap();
                icrc::fill(&SoftCrc32, f, false).unwrap();
                black_box(&f);
                self.n += 1;
            }
        }
        let name = format!("tx path: 64 KiB WRITE, {} B MTU", mtu.bytes());
        let t = Instant::now();
        let mut pkts = 0u64;
        while t.elapsed().as_secs_f64() < 0.5 {
            let mut q: Qp<4, 4> = Qp::new(cfg);
            let mut s = Frames {
                frame: &mut frame,
                payload: &payload,
                n: 0,
            };
            support::to_rts(&mut q, &mut s).unwrap();
            let w = SendOp::Write {
                remote: RemoteAddr { va: 0, rkey: 1 },
                imm: None,
            };
            q.post_send(support::wqe(1, w, 64 * 1024), &mut s).unwrap();
            while q.poll_tx(64, &mut s) {}
            assert_eq!(s.n, npkts);
            pkts += s.n;
        }
        let el = t.elapsed().as_secs_f64();
        let gbps = pkts as f64 * f64::from(mtu.bytes()) * 8.0 / el / 1e9;
        println!(
            "{name:<36} {:>10.0} pkt/s {gbps:>8.2} Gb/s payload",
            pkts as f64 / el
        );
    }
}
