// SPDX-License-Identifier: GPL-2.0
//! Work-request rings: scatter/gather elements, the driver's form of send and receive
//! WRs, and the ring that holds them between the posters and the engine.

use super::{MAX_INLINE, MAX_QP_WR, MAX_SGE};
use crate::ah::Av;
use crate::ib::{WcOpcode, WrOpcode};
use crate::proto;
use kernel::alloc::KVVec;
use kernel::prelude::*;

/// One scatter/gather element.
#[derive(Clone, Copy, Default)]
pub(crate) struct Sge {
    /// Address (kernel VA for DMA MRs, IOVA for user/FR MRs).
    pub(crate) addr: u64,
    /// Length.
    pub(crate) len: u32,
    /// Local key.
    pub(crate) lkey: u32,
}

/// What a send WR does.
#[derive(Clone, Copy)]
pub(crate) enum SendKind {
    /// A transport operation handed to proto.
    Transport(proto::SendOp),
    /// Fast-register an MR with the pages recorded by `ib_map_mr_sg`.
    RegMr(crate::mr::FastReg),
    /// Invalidate an MR key or a type 2B window's rkey.
    LocalInv {
        /// The key.
        key: u32,
    },
    /// Bind a memory window (user QPs).
    BindMw(crate::mr::BindReq),
    /// A malformed user WQE: completes with a local QP operation error and moves the QP
    /// to the error state.
    Invalid,
}

/// The transport operation and completion opcode of a send work request. `opcode` is an
/// `ib_wr_opcode` ([`WrOpcode`]: its transport values are those of the rrxe ABI too); `ex` holds the immediate data in wire order or the rkey to invalidate.
pub(crate) fn transport_op(
    opcode: u32,
    ex: u32,
    rdma: proto::RemoteAddr,
    atomic: proto::RemoteAddr,
    compare_add: u64,
    swap: u64,
) -> Option<(proto::SendOp, WcOpcode)> {
    use proto::SendOp;
    // Immediate data is stored in wire (big-endian) byte order; proto takes its value.
    let imm = u32::from_be(ex);
    Some(match WrOpcode::from_raw(opcode)? {
        WrOpcode::Send => (
            SendOp::Send {
                imm: None,
                inv_rkey: None,
            },
            WcOpcode::Send,
        ),
        WrOpcode::SendWithImm => (
            SendOp::Send {
                imm: Some(imm),
                inv_rkey: None,
            },
            WcOpcode::Send,
        ),
        WrOpcode::SendWithInv => (
            SendOp::Send {
                imm: None,
                inv_rkey: Some(ex),
            },
            WcOpcode::Send,
        ),
        WrOpcode::RdmaWrite => (
            SendOp::Write {
                remote: rdma,
                imm: None,
            },
            WcOpcode::RdmaWrite,
        ),
        WrOpcode::RdmaWriteWithImm => (
            SendOp::Write {
                remote: rdma,
                imm: Some(imm),
            },
            WcOpcode::RdmaWrite,
        ),
        WrOpcode::RdmaRead => (SendOp::Read { remote: rdma }, WcOpcode::RdmaRead),
        WrOpcode::AtomicCmpAndSwp => (
            SendOp::CompareSwap {
                remote: atomic,
                compare: compare_add,
                swap,
            },
            WcOpcode::CompSwap,
        ),
        WrOpcode::AtomicFetchAndAdd => (
            SendOp::FetchAdd {
                remote: atomic,
                add: compare_add,
            },
            WcOpcode::FetchAdd,
        ),
        _ => return None,
    })
}

/// A posted send work request, as the driver keeps it.
#[derive(Clone, Copy)]
pub(crate) struct SendWr {
    /// Consumer's id.
    pub(crate) wr_id: u64,
    /// Operation.
    pub(crate) kind: SendKind,
    /// The opcode of its completion.
    pub(crate) wc_opcode: WcOpcode,
    /// Total local length.
    pub(crate) len: u32,
    /// Signaled completion.
    pub(crate) signaled: bool,
    /// Solicited event.
    pub(crate) solicited: bool,
    /// Fence.
    pub(crate) fence: bool,
    /// Inline data (copied at post time) instead of SGEs.
    pub(crate) inline: bool,
    /// SGEs in use.
    pub(crate) num_sge: u32,
    /// UD: destination.
    pub(crate) ud: Option<(Av, proto::UdDest)>,
    /// XRC send QPs: the remote XRC SRQ (24 bits).
    pub(crate) xrc_srqn: u32,
}

/// A posted receive work request.
#[derive(Clone, Copy, Default)]
pub(crate) struct RecvWr {
    /// Consumer's id.
    pub(crate) wr_id: u64,
    /// SGEs in use.
    pub(crate) num_sge: u32,
    /// Sum of SGE lengths.
    pub(crate) len: u32,
}

/// The receive WQE a QP took from its receive queue for the message in progress.
#[derive(Clone, Copy)]
pub(crate) struct Claim {
    /// The WQE.
    pub(crate) wr: RecvWr,
    /// Its SGEs (the first `wr.num_sge`).
    pub(crate) sges: [Sge; MAX_SGE as usize],
}

/// A ring of work requests with their SGEs (and inline bytes) in flat arrays.
///
/// The counters run freely and wrap at 2^32; [`proto::RingIndex`] keeps the slot of a
/// counter consistent across the wrap (2^k slots) and bounds the outstanding WRs by the
/// size the consumer asked for.
pub(crate) struct WrRing<T: Copy> {
    pub(super) wrs: KVVec<Option<T>>,
    pub(super) sges: KVVec<Sge>,
    pub(super) inline: KVVec<u8>,
    /// INVARIANT: `wrs` has `ix.slots()` entries, `sges` `max_sge` per slot and `inline`
    /// `max_inline` per slot.
    pub(super) ix: proto::RingIndex,
    pub(super) max_sge: usize,
    pub(super) max_inline: usize,
    /// Next to post.
    pub(super) prod: u32,
    /// Next to hand to the engine (sends only).
    pub(super) fed: u32,
    /// Next to complete.
    pub(super) done: u32,
    /// User QPs: next slot of the shared queue to read.
    pub(super) ucons: u32,
}

impl<T: Copy> WrRing<T> {
    /// A ring for up to `cap` outstanding WRs (1..=MAX_QP_WR; callers checked the range).
    pub(crate) fn new(cap: u32, max_sge: u32, max_inline: u32) -> Result<Self> {
        if cap > MAX_QP_WR || max_sge > MAX_SGE || max_inline > MAX_INLINE {
            return Err(EINVAL);
        }
        let ix = proto::RingIndex::new(cap).ok_or(EINVAL)?;
        // Charged to the creating process's memory cgroup: a user QP's rings are sized by
        // the process (up to MB each).
        let gfp = GFP_KERNEL_ACCOUNT;
        let n = ix.slots() as usize;
        let mut wrs = KVVec::with_capacity(n, gfp)?;
        wrs.extend_with(n, None, gfp)?;
        let ns = n * max_sge as usize;
        let mut sges = KVVec::with_capacity(ns, gfp)?;
        sges.extend_with(ns, Sge::default(), gfp)?;
        let mut inline = KVVec::new();
        if max_inline > 0 {
            let ni = n * max_inline as usize;
            inline = KVVec::with_capacity(ni, gfp)?;
            inline.extend_with(ni, 0u8, gfp)?;
        }
        Ok(Self {
            wrs,
            sges,
            inline,
            ix,
            max_sge: max_sge as usize,
            max_inline: max_inline as usize,
            prod: 0,
            fed: 0,
            done: 0,
            ucons: 0,
        })
    }

    pub(super) fn idx(&self, i: u32) -> usize {
        self.ix.slot(i)
    }

    /// User queues: the consumer index in the queue shared with the process (entries
    /// before it were copied into this ring).
    pub(crate) fn user_consumer(&self) -> u32 {
        self.ucons
    }

    pub(crate) fn full(&self) -> bool {
        self.ix.full(self.prod, self.done)
    }

    /// WRs posted and not yet taken.
    pub(crate) fn len(&self) -> u32 {
        self.ix.used(self.prod, self.done)
    }

    /// Most WRs the ring holds.
    pub(crate) fn cap(&self) -> u32 {
        self.ix.cap()
    }

    /// User queues: the next entry of the shared queue to read is `i` (a new queue).
    pub(crate) fn set_user_consumer(&mut self, i: u32) {
        self.ucons = i;
    }

    /// A resize: moves the newest WR (and its SGEs) of this ring in front of the oldest of
    /// `dst`, which must have room and the same number of SGEs per WR; false when this ring
    /// is empty or `dst` cannot take it. Moving from the back to the front keeps the order:
    /// what is left here, then what `dst` holds.
    pub(crate) fn move_last_to_front(&mut self, dst: &mut WrRing<T>) -> bool {
        if self.done == self.prod || dst.full() || dst.max_sge != self.max_sge {
            return false;
        }
        let from = self.prod.wrapping_sub(1);
        let to = dst.done.wrapping_sub(1);
        let (fi, ti) = (self.idx(from), dst.idx(to));
        let (s, d) = (fi * self.max_sge, ti * dst.max_sge);
        let (Some(src), Some(out)) = (
            self.sges.get(s..s + self.max_sge),
            dst.sges.get_mut(d..d + dst.max_sge),
        ) else {
            return false;
        };
        // Element by element: copy_from_slice's length-mismatch panic path is a call objtool
        // reports as falling through (the lengths are equal here).
        for (o, s) in out.iter_mut().zip(src) {
            *o = *s;
        }
        let Some(slot) = dst.wrs.get_mut(ti) else {
            return false;
        };
        let Some(wr) = self.wrs.get_mut(fi).and_then(Option::take) else {
            return false;
        };
        *slot = Some(wr);
        dst.done = to;
        self.prod = from;
        true
    }

    pub(super) fn get(&self, i: u32) -> Option<T> {
        self.wrs.get(self.idx(i)).copied().flatten()
    }
}

impl WrRing<RecvWr> {
    /// Moves the oldest posted WQE with its SGEs into `dst` (in place: no large
    /// temporaries); returns it and how many remain posted.
    pub(crate) fn pop_into(&mut self, dst: &mut Option<Claim>) -> Option<(RecvWr, u32)> {
        if self.done == self.prod {
            return None;
        }
        let wr = self.get(self.done)?;
        let cl = dst.insert(Claim {
            wr,
            sges: [Sge::default(); MAX_SGE as usize],
        });
        for (d, s) in cl.sges.iter_mut().zip(self.sges(self.done, wr.num_sge)) {
            *d = *s;
        }
        self.done = self.done.wrapping_add(1);
        Some((wr, self.prod.wrapping_sub(self.done)))
    }
}

impl<T: Copy> WrRing<T> {
    pub(super) fn sges(&self, i: u32, n: u32) -> &[Sge] {
        let s = self.idx(i) * self.max_sge;
        let n = (n as usize).min(self.max_sge);
        self.sges.get(s..s + n).unwrap_or(&[])
    }

    pub(super) fn inline(&self, i: u32, n: u32) -> &[u8] {
        let s = self.idx(i) * self.max_inline;
        let n = (n as usize).min(self.max_inline);
        self.inline.get(s..s + n).unwrap_or(&[])
    }

    /// Stores a WR at `prod` and advances it. The caller checked `full()`.
    pub(crate) fn push(&mut self, wr: T, sges: &[Sge], inline: Option<&[u8]>) -> Result {
        if sges.len() > self.max_sge {
            return Err(EINVAL);
        }
        let i = self.idx(self.prod);
        let s = i * self.max_sge;
        for (d, v) in self
            .sges
            .get_mut(s..s + sges.len())
            .ok_or(EINVAL)?
            .iter_mut()
            .zip(sges)
        {
            *d = *v;
        }
        if let Some(data) = inline {
            if data.len() > self.max_inline {
                return Err(EINVAL);
            }
            let s = i * self.max_inline;
            let dst = self.inline.get_mut(s..s + data.len()).ok_or(EINVAL)?;
            if !proto::copy_exact(dst, data) {
                return Err(EINVAL);
            }
        }
        *self.wrs.get_mut(i).ok_or(EINVAL)? = Some(wr);
        self.prod = self.prod.wrapping_add(1);
        Ok(())
    }
}

/// The pieces of `total` bytes starting `offset` bytes into a scatter/gather list: for each
/// SGE they touch, `(sge, address, position in the bytes, length)`. Stops at the end of the
/// list, so the pieces cover less than `total` when the list is too short.
pub(super) fn sge_chunks(
    sges: &[Sge],
    offset: u32,
    total: usize,
) -> impl Iterator<Item = (&Sge, u64, usize, usize)> + '_ {
    let mut off = offset;
    let mut done = 0usize;
    sges.iter().filter_map(move |sge| {
        if done == total {
            return None;
        }
        if off >= sge.len {
            off -= sge.len;
            return None;
        }
        let n = core::cmp::min((sge.len - off) as usize, total - done);
        let piece = (sge, sge.addr.wrapping_add(u64::from(off)), done, n);
        done += n;
        off = 0;
        Some(piece)
    })
}

/// SGEs a [`SgeCopy`] holds without touching its full-size array (perftest's WRs name one).
const FEW_SGES: usize = 4;

/// A WR's SGE list copied out of its ring (at most [`MAX_SGE`]), so that the MR accesses that
/// follow run after the ring's interrupts-off lock is released (the MR table's locks are
/// bottom-half locks). Made for every packet that carries a WR's data (sent, placed, or
/// read back): a list of up to [`FEW_SGES`] is copied into a small array, and only a longer
/// one initialises the full [`MAX_SGE`] array (512 bytes).
pub(super) struct SgeCopy {
    few: [Sge; FEW_SGES],
    many: Option<[Sge; MAX_SGE as usize]>,
    n: usize,
}

impl SgeCopy {
    /// An empty copy, made where it is used (it is filled in place, never moved: a move
    /// would copy the full array's bytes too).
    pub(super) fn new() -> Self {
        SgeCopy {
            few: [Sge::default(); FEW_SGES],
            many: None,
            n: 0,
        }
    }

    /// Copies `src`'s first [`MAX_SGE`] SGEs, in place of what was copied before.
    pub(super) fn fill(&mut self, src: &[Sge]) {
        let src = src.get(..MAX_SGE as usize).unwrap_or(src);
        self.n = src.len();
        if src.len() <= FEW_SGES {
            for (d, s) in self.few.iter_mut().zip(src) {
                *d = *s;
            }
            self.many = None;
        } else {
            let many = self.many.get_or_insert([Sge::default(); MAX_SGE as usize]);
            for (d, s) in many.iter_mut().zip(src) {
                *d = *s;
            }
        }
    }

    /// The SGEs copied.
    pub(super) fn sges(&self) -> &[Sge] {
        match &self.many {
            Some(m) => m.get(..self.n).unwrap_or(&[]),
            None => self.few.get(..self.n).unwrap_or(&[]),
        }
    }
}
