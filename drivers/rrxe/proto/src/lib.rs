// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! # rrxe-proto: a sans-IO RoCEv2 protocol core
//!
//! This crate is the protocol engine of rrxe, a software RoCEv2 RDMA device.
//! It performs no I/O, reads no clock, allocates nothing and contains no
//! `unsafe`. The same sources are compiled as a module of the Linux kernel
//! driver (`#[path = "proto/src/lib.rs"] pub mod proto;`, with
//! `--cfg rrxe_kernel`), so every function is panic-free on any input.
//!
//! * [`hdr`], [`opcode`]: IBTA transport headers and the RC/UC/UD/CNP opcode
//!   table, with checked parse / build.
//! * [`net`]: the IPv4 / IPv6 / UDP headers of a RoCEv2 datagram; [`addr`]: the address
//!   and P_Key checks a received packet passes before it reaches a QP.
//! * [`crc`], [`icrc`]: CRC-32 and the RoCEv2 invariant CRC.
//! * [`fault`]: fault injection rules (text form, parser, seeded matcher).
//! * [`caps`]: range checks and sizing of the queues a consumer asks for.
//! * [`ids`]: QP numbers drawn at random, memory-key slots reused first-freed-first
//!   after a quarantine, key tags.
//! * [`mcast`]: multicast GIDs, their MAC and IPv4 group, the QPs attached to a group and
//!   a device's multicast limits.
//! * [`uabi`]: the work queue entries of rrxe's user ABI, with their checked decoding.
//! * [`pma`]: the Performance Management Agent's answers (PerfMgt MADs) from the port's counters.
//! * [`psn`]: 24-bit PSN arithmetic; [`seg`]: PMTU segmentation; [`ring`]: ring slots
//!   of free-running counters.
//! * [`qp`], [`req`], [`resp`]: the per-QP requester, completer and responder
//!   state machines (events in, actions out).
#![cfg_attr(not(rrxe_kernel), no_std)]
#![cfg_attr(not(rrxe_kernel), forbid(unsafe_code))]
#![cfg_attr(not(rrxe_kernel), warn(missing_docs, unreachable_pub))]

#[cfg(test)]
extern crate std;

pub mod addr;
pub mod caps;
pub mod crc;
pub mod fault;
pub mod hdr;
pub mod icrc;
pub mod ids;
pub mod mcast;
pub mod net;
pub mod opcode;
pub mod pma;
pub mod psn;
pub mod qp;
pub mod req;
pub mod resp;
pub mod ring;
pub mod seg;
pub mod uabi;

pub use crc::{Crc32, SoftCrc32};
pub use hdr::{
    build_headers, build_packet, parse_packet, peek_bth, Aeth, AethKind, AtomicAckEth, AtomicEth,
    Bth, BuildError, Deth, Feth, Headers, NakCode, Packet, ParseError, Reth,
};
pub use opcode::{OpKind, Opcode, OpcodeInfo, Position, Transport};
pub use psn::Psn;
pub use qp::{
    Access, AccessError, Action, ActionBuf, ActionSink, AtomicOp, Event, ModifyError, ModifyQp,
    Payload, PktRange, PlaceError, PostError, Qp, QpConfig, QpError, QpEvent, QpState, QpType,
    RecvCompletion, RecvKind, RemoteAddr, ResponderEnv, RxStatus, SendCompletion, SendOp, SendWqe,
    TimerKind, TxPacket, UdDest, WcStatus, WqeId,
};
pub use req::SqStats;
pub use ring::RingIndex;
pub use seg::{Mtu, Segment, Segments};

/// `dst.copy_from_slice(src)` without its panic path (a kernel BUG): copies and returns
/// `true` when the lengths are equal, copies nothing and returns `false` otherwise.
pub fn copy_exact<T: Copy>(dst: &mut [T], src: &[T]) -> bool {
    if dst.len() != src.len() {
        return false;
    }
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s;
    }
    true
}
