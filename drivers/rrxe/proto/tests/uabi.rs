// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Unit tests of `rrxe_proto::uabi`: the decoding of each opcode's send WQE and of receive
//! WQEs, and the refusal of malformed ones (with the reason).

use rrxe_proto::uabi::*;
use rrxe_proto::{RemoteAddr, UdDest};

const RC: SendLimits = SendLimits {
    max_sge: 4,
    max_inline: 64,
    ud: false,
};
const UD: SendLimits = SendLimits { ud: true, ..RC };

/// A 256-byte send slot with the given header fields.
fn slot(opcode: u32, flags: u32, num_sge: u32, inline_len: u32, ex: u32) -> Vec<u8> {
    let mut s = vec![0u8; 256];
    put64(&mut s, send_wqe::WR_ID, 0x1122_3344_5566_7788);
    put32(&mut s, send_wqe::OPCODE, opcode);
    put32(&mut s, send_wqe::SEND_FLAGS, flags);
    put32(&mut s, send_wqe::NUM_SGE, num_sge);
    put32(&mut s, send_wqe::INLINE_LEN, inline_len);
    put32(&mut s, send_wqe::EX, ex);
    s
}

fn put32(s: &mut [u8], off: usize, v: u32) {
    s[off..off + 4].copy_from_slice(&v.to_ne_bytes());
}

fn put64(s: &mut [u8], off: usize, v: u64) {
    s[off..off + 8].copy_from_slice(&v.to_ne_bytes());
}

fn put_sge(s: &mut [u8], base: usize, i: usize, addr: u64, len: u32, lkey: u32) {
    let o = base + i * sge::SIZE;
    put64(s, o + sge::ADDR, addr);
    put32(s, o + sge::LENGTH, len);
    put32(s, o + sge::LKEY, lkey);
}

fn sges(d: &Data<'_>) -> Vec<Sge> {
    match d {
        Data::Sges(l) => l.iter().collect(),
        _ => panic!("no SGEs: {d:?}"),
    }
}

const W: usize = send_wqe::WR;

#[test]
fn opcode_values_round_trip() {
    for v in 0..64 {
        if let Some(op) = WrOpcode::from_raw(v) {
            assert_eq!(op.raw(), v);
        }
    }
    let known = (0..64).filter(|v| WrOpcode::from_raw(*v).is_some()).count();
    assert_eq!(known, 12);
    assert_eq!(WrOpcode::from_raw(10), None);
    assert_eq!(WrOpcode::from_raw(u32::MAX), None);
}

#[test]
fn send_with_sges() {
    let mut s = slot(WR_SEND, SEND_SIGNALED | SEND_SOLICITED, 2, 999, 0);
    put_sge(&mut s, 72, 0, 0x1000, 100, 7);
    put_sge(&mut s, 72, 1, 0x2000, 28, 8);
    let w = decode_send(&s, &RC).unwrap();
    assert_eq!(w.wr_id, 0x1122_3344_5566_7788);
    assert_eq!(w.opcode, WrOpcode::Send);
    assert_eq!(
        w.flags,
        SendFlags {
            fence: false,
            signaled: true,
            solicited: true,
            inline: false
        }
    );
    assert_eq!(w.wr, WrFields::None);
    assert_eq!(w.ud, None);
    assert_eq!(w.data.len(), 128);
    assert_eq!(
        sges(&w.data),
        [
            Sge {
                addr: 0x1000,
                length: 100,
                lkey: 7
            },
            Sge {
                addr: 0x2000,
                length: 28,
                lkey: 8
            }
        ]
    );
}

#[test]
fn send_with_imm_and_inv_keep_ex() {
    let s = slot(WR_SEND_WITH_IMM, 0, 0, 0, 0x1234_5678);
    let w = decode_send(&s, &RC).unwrap();
    assert_eq!(
        (w.opcode, w.ex, w.data.len()),
        (WrOpcode::SendWithImm, 0x1234_5678, 0)
    );
    let s = slot(WR_SEND_WITH_INV, SEND_FENCE, 0, 0, 0x77);
    let w = decode_send(&s, &RC).unwrap();
    assert_eq!(
        (w.opcode, w.ex, w.flags.fence),
        (WrOpcode::SendWithInv, 0x77, true)
    );
}

#[test]
fn inline_send() {
    let s = slot(WR_SEND, SEND_INLINE, 99, 64, 0);
    let w = decode_send(&s, &RC).unwrap();
    assert!(w.flags.inline);
    assert_eq!(
        w.data,
        Data::Inline {
            offset: 72,
            len: 64
        }
    );
    // Over max_inline, and past the end of the slot.
    let s = slot(WR_SEND, SEND_INLINE, 0, 65, 0);
    assert_eq!(decode_send(&s, &RC), Err(WqeError::InlineTooLong));
    let big = SendLimits {
        max_inline: u32::MAX,
        ..RC
    };
    let s = slot(WR_SEND, SEND_INLINE, 0, 256 - 72 + 1, 0);
    assert_eq!(decode_send(&s, &big), Err(WqeError::InlineOutside));
    let s = slot(WR_SEND, SEND_INLINE, 0, u32::MAX, 0);
    assert_eq!(decode_send(&s, &big), Err(WqeError::InlineOutside));
    let s = slot(WR_SEND, SEND_INLINE, 0, 256 - 72, 0);
    assert_eq!(decode_send(&s, &big).unwrap().data.len(), 184);
}

#[test]
fn rdma_write_and_read() {
    for (raw, op) in [
        (WR_RDMA_WRITE, WrOpcode::RdmaWrite),
        (WR_RDMA_WRITE_WITH_IMM, WrOpcode::RdmaWriteWithImm),
        (WR_RDMA_READ, WrOpcode::RdmaRead),
    ] {
        let mut s = slot(raw, 0, 1, 0, 5);
        put64(&mut s, W + wr_rdma::REMOTE_ADDR, 0xdead_0000);
        put32(&mut s, W + wr_rdma::RKEY, 0x4242);
        put_sge(&mut s, 72, 0, 0x10, 4096, 3);
        let w = decode_send(&s, &RC).unwrap();
        assert_eq!(w.opcode, op);
        assert_eq!(
            w.wr,
            WrFields::Rdma(RemoteAddr {
                va: 0xdead_0000,
                rkey: 0x4242
            })
        );
        assert_eq!(w.data.len(), 4096);
    }
}

#[test]
fn atomics() {
    for (raw, op) in [
        (WR_ATOMIC_CMP_AND_SWP, WrOpcode::AtomicCmpAndSwp),
        (WR_ATOMIC_FETCH_AND_ADD, WrOpcode::AtomicFetchAndAdd),
    ] {
        let mut s = slot(raw, SEND_SIGNALED, 1, 0, 0);
        put64(&mut s, W + wr_atomic::REMOTE_ADDR, 0x8000);
        put64(&mut s, W + wr_atomic::COMPARE_ADD, 11);
        put64(&mut s, W + wr_atomic::SWAP, 22);
        put32(&mut s, W + wr_atomic::RKEY, 0x99);
        put_sge(&mut s, 72, 0, 0x10, 8, 3);
        let w = decode_send(&s, &RC).unwrap();
        assert_eq!(w.opcode, op);
        assert_eq!(
            w.wr,
            WrFields::Atomic {
                remote: RemoteAddr {
                    va: 0x8000,
                    rkey: 0x99
                },
                compare_add: 11,
                swap: 22
            }
        );
        assert_eq!(w.data.len(), 8);
    }
}

#[test]
fn atomic_write_is_dataless_and_keeps_the_bytes() {
    let mut s = slot(WR_ATOMIC_WRITE, SEND_INLINE | SEND_SOLICITED, 100, 100, 0);
    put64(&mut s, W + wr_atomic::REMOTE_ADDR, 0x8008);
    put32(&mut s, W + wr_atomic::RKEY, 0x55);
    s[W + wr_atomic::COMPARE_ADD..W + wr_atomic::COMPARE_ADD + 8]
        .copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let w = decode_send(&s, &RC).unwrap();
    assert_eq!(
        w.wr,
        WrFields::AtomicWrite {
            remote: RemoteAddr {
                va: 0x8008,
                rkey: 0x55
            },
            value: [1, 2, 3, 4, 5, 6, 7, 8]
        }
    );
    // num_sge / inline_len are ignored, and so are SOLICITED and INLINE.
    assert_eq!(w.data, Data::None);
    assert!(!w.flags.inline && !w.flags.solicited);
    assert_eq!(decode_send(&s, &UD), Err(WqeError::Opcode));
}

#[test]
fn local_inv() {
    let s = slot(WR_LOCAL_INV, SEND_SIGNALED | SEND_FENCE, 1000, 0, 0xabcd);
    for lim in [RC, UD] {
        let w = decode_send(&s, &lim).unwrap();
        assert_eq!(
            (w.opcode, w.ex, w.wr, w.data, w.ud),
            (WrOpcode::LocalInv, 0xabcd, WrFields::None, Data::None, None)
        );
        assert!(w.flags.signaled && w.flags.fence);
    }
}

#[test]
fn bind_mw() {
    let mut s = slot(WR_BIND_MW, SEND_SIGNALED, 0, 0, 0);
    put64(&mut s, W + wr_bind_mw::ADDR, 0x1000);
    put64(&mut s, W + wr_bind_mw::LENGTH, 1 << 40);
    put32(&mut s, W + wr_bind_mw::MW_RKEY, 0x1234_5601);
    put32(&mut s, W + wr_bind_mw::MR_LKEY, 0x77);
    put32(&mut s, W + wr_bind_mw::ACCESS, 6);
    let w = decode_send(&s, &RC).unwrap();
    assert_eq!(
        w.wr,
        WrFields::BindMw(BindMw {
            addr: 0x1000,
            length: 1 << 40,
            mw_rkey: 0x1234_5601,
            mr_lkey: 0x77,
            access: 6
        })
    );
    assert_eq!(w.data, Data::None);
    assert_eq!(decode_send(&s, &UD), Err(WqeError::Opcode));
}

#[test]
fn flush() {
    let mut s = slot(WR_FLUSH, 0, 0, 0, 0);
    put64(&mut s, W + wr_flush::REMOTE_ADDR, 0x4000);
    put32(&mut s, W + wr_flush::LENGTH, 512);
    put32(&mut s, W + wr_flush::RKEY, 0x31);
    for (typ, level, ok) in [
        (FLUSH_GLOBAL, FLUSH_RANGE, true),
        (FLUSH_PERSISTENT, FLUSH_MR, true),
        (FLUSH_GLOBAL | FLUSH_PERSISTENT, FLUSH_RANGE, true),
        (0, FLUSH_RANGE, false),
        (4, FLUSH_RANGE, false),
        (FLUSH_GLOBAL | 0x80, FLUSH_MR, false),
        (FLUSH_GLOBAL, 2, false),
        (FLUSH_GLOBAL, 0xff, false),
    ] {
        s[W + wr_flush::TYPE] = typ;
        s[W + wr_flush::LEVEL] = level;
        let r = decode_send(&s, &RC);
        if ok {
            assert_eq!(
                r.unwrap().wr,
                WrFields::Flush(Flush {
                    remote: RemoteAddr {
                        va: 0x4000,
                        rkey: 0x31
                    },
                    length: 512,
                    typ,
                    level
                })
            );
        } else {
            assert_eq!(r, Err(WqeError::FlushArgs), "type {typ} level {level}");
        }
    }
    s[W + wr_flush::TYPE] = FLUSH_GLOBAL;
    s[W + wr_flush::LEVEL] = FLUSH_RANGE;
    assert_eq!(decode_send(&s, &UD), Err(WqeError::Opcode));
}

#[test]
fn ud_destination_by_ah_number() {
    let mut s = slot(WR_SEND_WITH_IMM, SEND_SIGNALED, 0, 0, 9);
    put32(&mut s, W + wr_ud::AH_NUM, 17);
    put32(&mut s, W + wr_ud::REMOTE_QPN, 0x12);
    put32(&mut s, W + wr_ud::REMOTE_QKEY, 0x8000_0000);
    let w = decode_send(&s, &UD).unwrap();
    assert_eq!(
        w.ud,
        Some(Ud {
            ah_num: 17,
            dest: UdDest {
                qpn: 0x12,
                qkey: 0x8000_0000
            }
        })
    );
    assert_eq!(decode_send(&s, &RC).unwrap().ud, None);
}

#[test]
fn malformed_sends() {
    // Unknown opcodes.
    for op in [10, 31, 34, u32::MAX] {
        assert_eq!(
            decode_send(&slot(op, 0, 0, 0, 0), &RC),
            Err(WqeError::Opcode)
        );
    }
    // A slot shorter than the header, at every length.
    let s = slot(WR_LOCAL_INV, 0, 0, 0, 0);
    for n in 0..72 {
        assert_eq!(decode_send(&s[..n], &RC), Err(WqeError::Short));
    }
    assert!(decode_send(&s[..72], &RC).is_ok());
    // Too many SGEs, SGEs past the slot's end, and a length sum over 2^32 - 1.
    assert_eq!(
        decode_send(&slot(WR_SEND, 0, 5, 0, 0), &RC),
        Err(WqeError::TooManySge)
    );
    assert_eq!(
        decode_send(&slot(WR_SEND, 0, u32::MAX, 0, 0), &RC),
        Err(WqeError::TooManySge)
    );
    let many = SendLimits {
        max_sge: u32::MAX,
        ..RC
    };
    assert_eq!(
        decode_send(&slot(WR_SEND, 0, u32::MAX, 0, 0), &many),
        Err(WqeError::SgeOutside)
    );
    let s = slot(WR_SEND, 0, 4, 0, 0);
    assert_eq!(decode_send(&s[..72 + 63], &RC), Err(WqeError::SgeOutside));
    assert!(decode_send(&s[..72 + 64], &RC).is_ok());
    let mut s = slot(WR_SEND, 0, 2, 0, 0);
    put_sge(&mut s, 72, 0, 0, u32::MAX, 1);
    put_sge(&mut s, 72, 1, 0, 1, 1);
    assert_eq!(decode_send(&s, &RC), Err(WqeError::LengthOverflow));
    put_sge(&mut s, 72, 1, 0, 0, 1);
    assert_eq!(decode_send(&s, &RC).unwrap().data.len(), u32::MAX);
}

#[test]
fn recv() {
    let mut s = vec![0u8; 64];
    put64(&mut s, recv_wqe::WR_ID, 42);
    put32(&mut s, recv_wqe::NUM_SGE, 3);
    put_sge(&mut s, 16, 0, 0xa, 1, 1);
    put_sge(&mut s, 16, 1, 0xb, 2, 2);
    put_sge(&mut s, 16, 2, 0xc, 3, 3);
    let r = decode_recv(&s, 3).unwrap();
    assert_eq!((r.wr_id, r.sges.count(), r.sges.total()), (42, 3, 6));
    let l: Vec<Sge> = r.sges.iter().collect();
    assert_eq!(
        l[2],
        Sge {
            addr: 0xc,
            length: 3,
            lkey: 3
        }
    );
    assert_eq!(decode_recv(&s, 2), Err(WqeError::TooManySge));
    assert_eq!(decode_recv(&s[..63], 3), Err(WqeError::SgeOutside));
    assert_eq!(decode_recv(&s[..15], 3), Err(WqeError::Short));
    put32(&mut s, recv_wqe::NUM_SGE, 0);
    let r = decode_recv(&s[..16], 0).unwrap();
    assert_eq!(
        (r.sges.count(), r.sges.total(), r.sges.iter().count()),
        (0, 0, 0)
    );
    put32(&mut s, recv_wqe::NUM_SGE, 2);
    put_sge(&mut s, 16, 0, 0, u32::MAX, 1);
    assert_eq!(decode_recv(&s, 3), Err(WqeError::LengthOverflow));
}
