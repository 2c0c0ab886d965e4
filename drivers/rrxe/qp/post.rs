// SPDX-License-Identifier: GPL-2.0
//! The post verbs: a kernel consumer's WR lists decoded into the driver's WRs (SGEs,
//! opcodes, UD destinations, inline data, fast registration), and a user QP's doorbell.

use super::create::QpHandle;
use super::{transport_op, RecvWr, SendKind, SendWr, Sge, MAX_INLINE, MAX_SGE};
use crate::glue::bindings as b;
use crate::glue::obj::Obj;
use crate::glue::wr::{RecvWrView, SendWrView, WrList};
use crate::ib::{WcOpcode, WrOpcode};
use crate::mr::AccessFlags;
use crate::proto::{RemoteAddr, UdDest};
use kernel::prelude::*;

/// IB_SEND_* flags.
const SEND_FENCE: u32 = 1;
const SEND_SIGNALED: u32 = 2;
const SEND_SOLICITED: u32 = 4;
const SEND_INLINE: u32 = 8;

/// `post_send`: an empty list is a user QP's doorbell (new entries in the shared send
/// queue); a kernel QP's list is posted WR by WR. A user QP's list is refused before any
/// of it is read.
pub(crate) fn post_send(qp: &Obj<'_, b::ib_qp>, list: WrList<'_, b::ib_send_wr>) -> Result {
    let h = qp.data();
    if list.is_empty() {
        h.qp.doorbell();
        return Ok(());
    }
    if let Err(e) = h.qp.accept_kernel_wrs() {
        return Err(list.refuse(e));
    }
    list.post_each(|wr| post_one_send(qp, wr))
}

/// `post_recv` (see [`post_send`]; an empty list does nothing).
pub(crate) fn post_recv(qp: &Obj<'_, b::ib_qp>, list: WrList<'_, b::ib_recv_wr>) -> Result {
    let h = qp.data();
    if list.is_empty() {
        return Ok(());
    }
    if let Err(e) = h.qp.accept_kernel_wrs() {
        return Err(list.refuse(e));
    }
    post_recv_list(list, h.caps.max_recv_sge, |w, s| h.qp.post_recv(w, s))
}

/// The driver's SGEs of a kernel WR, and their total length (EINVAL on overflow).
fn sges_of(raw: &[b::ib_sge], out: &mut [Sge; MAX_SGE as usize]) -> Result<u32> {
    let mut len: u32 = 0;
    for (d, s) in out.iter_mut().zip(raw) {
        *d = Sge {
            addr: s.addr,
            len: s.length,
            lkey: s.lkey,
        };
        len = len.checked_add(s.length).ok_or(EINVAL)?;
    }
    Ok(len)
}

/// Turns one kernel send WR into the driver's form and posts it.
fn post_one_send(qp: &Obj<'_, b::ib_qp>, wr: &b::ib_send_wr) -> Result {
    let h: &QpHandle = qp.data();
    let mut v = SendWrView::new(wr, qp.ib());
    let raw = v.sges(h.caps.max_send_sge)?;
    let n = raw.len();
    let mut sges = [Sge::default(); MAX_SGE as usize];
    let len = sges_of(raw, &mut sges)?;
    let k = v.k;
    let remote = RemoteAddr {
        va: k.remote_addr,
        rkey: k.rkey,
    };
    let (kind, wc) = match WrOpcode::from_raw(k.opcode) {
        Some(WrOpcode::LocalInv) => (SendKind::LocalInv { key: k.ex }, WcOpcode::LocalInv),
        Some(WrOpcode::RegMr) => {
            let mr = v.reg_mr().ok_or(EINVAL)?;
            let ibmr = mr.ib();
            let fr = crate::mr::FastReg {
                cur_key: ibmr.lkey,
                new_key: k.reg_key,
                access: AccessFlags::from_raw(k.reg_access),
                iova: ibmr.iova,
                length: ibmr.length,
                page_size: ibmr.page_size,
            };
            let pd = qp.ib().pd as usize;
            mr.data().load(qp.dev(), fr.cur_key, pd)?;
            (SendKind::RegMr(fr), WcOpcode::RegMr)
        }
        _ => {
            let (op, wc) = transport_op(k.opcode, k.ex, remote, remote, k.compare_add, k.swap)
                .ok_or(EINVAL)?;
            (SendKind::Transport(op), wc)
        }
    };
    let mut ud = None;
    if h.qp.kind.is_ud() {
        let (ah, qpn, qkey) = v.ud()?;
        ud = Some((ah.data().av, UdDest { qpn, qkey }));
    }
    let inline = k.send_flags & SEND_INLINE != 0 && matches!(kind, SendKind::Transport(_));
    let mut data = [0u8; MAX_INLINE as usize];
    let inline_data = if inline {
        if len > h.caps.max_inline_data {
            return Err(EINVAL);
        }
        let at = v.copy_inline(raw, &mut data)?;
        data.get(..at)
    } else {
        None
    };
    let w = SendWr {
        wr_id: k.wr_id,
        kind,
        wc_opcode: wc,
        len,
        signaled: k.send_flags & SEND_SIGNALED != 0,
        solicited: k.send_flags & SEND_SOLICITED != 0,
        fence: k.send_flags & SEND_FENCE != 0,
        inline,
        num_sge: if inline { 0 } else { n as u32 },
        ud,
        // Kernel WRs name no XRC SRQ: XRC QPs refuse kernel WR lists (accept_kernel_wrs).
        xrc_srqn: 0,
    };
    h.qp.post_send(w, sges.get(..n).unwrap_or(&[]), inline_data)
}

/// Posts a kernel receive WR list WR by WR to `post` (a QP's receive queue or an SRQ).
pub(crate) fn post_recv_list(
    list: WrList<'_, b::ib_recv_wr>,
    max_sge: u32,
    post: impl Fn(RecvWr, &[Sge]) -> Result,
) -> Result {
    list.post_each(|w| {
        let raw = w.sges(max_sge)?;
        let n = raw.len();
        let mut sges = [Sge::default(); MAX_SGE as usize];
        let len = sges_of(raw, &mut sges)?;
        post(
            RecvWr {
                wr_id: w.id(),
                num_sge: n as u32,
                len,
            },
            sges.get(..n).unwrap_or(&[]),
        )
    })
}
