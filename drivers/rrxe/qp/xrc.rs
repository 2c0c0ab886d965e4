// SPDX-License-Identifier: GPL-2.0
//! An XRC target QP's receive side: the XRC SRQ each request names (proto's
//! [`ResponderEnv::select_xrc_srq`](crate::proto::ResponderEnv::select_xrc_srq)), its
//! receive WQEs, its CQ and its PD. The SRQ is looked up in the device's XRC table for each
//! use and never kept (see [`crate::xrc`]): one destroyed meanwhile is simply not found.
//! For every other QP these are the QP's own receive queue, receive CQ and PD.

use super::{Claim, Qp, RecvWr};
use crate::cq::Completion;
use crate::srq::SrqEvents;
use core::sync::atomic::Ordering;

impl Qp {
    /// XRC target: makes SRQ `srqn` (a request's XRCETH, untrusted) the one the request
    /// uses, if it is an XRC SRQ of the QP's domain (under `engine`).
    pub(super) fn select_xrc_srq(&self, srqn: u32) -> bool {
        let Some(xrcd) = self.xrc else {
            return false;
        };
        let found = self
            .dev
            .get()
            .data()
            .xrc_srqs
            .with(srqn, xrcd, |_| ())
            .is_some();
        self.xrc_sel
            .store(if found { srqn } else { 0 }, Ordering::Relaxed);
        found
    }

    /// The PD of the remote keys requests name: an XRC target's selected SRQ's (none if it
    /// is gone: identity 0 is no PD's), every other QP's own.
    pub(super) fn resp_pd(&self) -> usize {
        self.xrc_pd(self.xrc_sel.load(Ordering::Relaxed))
    }

    /// The PD of the local keys of the receive WQE in progress (see [`Qp::resp_pd`]).
    pub(super) fn recv_pd(&self) -> usize {
        self.xrc_pd(self.xrc_claimed.load(Ordering::Relaxed))
    }

    /// The PD of a READ response's key: for an XRC target the PD of the SRQ the READ named
    /// (`xrc_srqn`, proto's [`Payload::Mr`](crate::proto::Payload::Mr)), which need not be
    /// the one the latest request named.
    pub(super) fn read_pd(&self, xrc_srqn: u32) -> usize {
        self.xrc_pd(xrc_srqn)
    }

    /// An XRC target's SRQ `n`'s PD (0, no PD's, if it is gone); another QP's own PD.
    fn xrc_pd(&self, n: u32) -> usize {
        let Some(xrcd) = self.xrc else {
            return self.pd;
        };
        self.dev
            .get()
            .data()
            .xrc_srqs
            .with(n, xrcd, |s| s.xrc().map_or(0, |x| x.pd))
            .unwrap_or(0)
    }

    /// XRC target: copies a bounded batch of the selected SRQ's new user WQEs into its ring
    /// ([`Srq::pull`](crate::srq::Srq::pull), under `engine` and the XRC table's lock, not
    /// `claim`); the SRQ's events are recorded in `events`.
    pub(super) fn xrc_pull(&self, events: &mut SrqEvents) {
        let Some(xrcd) = self.xrc else { return };
        let n = self.xrc_sel.load(Ordering::Relaxed);
        let _ = self
            .dev
            .get()
            .data()
            .xrc_srqs
            .with(n, xrcd, |s| s.pull(events));
    }

    /// XRC target: takes the next receive WQE of the selected SRQ into `dst` (under
    /// `engine` and `claim`); the SRQ's events are recorded in `events`.
    pub(super) fn xrc_take(
        &self,
        dst: &mut Option<Claim>,
        events: &mut SrqEvents,
    ) -> Option<RecvWr> {
        let xrcd = self.xrc?;
        let n = self.xrc_sel.load(Ordering::Relaxed);
        let wr = self
            .dev
            .get()
            .data()
            .xrc_srqs
            .with(n, xrcd, |s| s.take_into(dst, events))??;
        self.xrc_claimed.store(n, Ordering::Relaxed);
        Some(wr)
    }

    /// XRC target: raises the events [`Qp::xrc_take`] recorded (no interrupts-off lock of
    /// the QP held). The handler runs under the XRC table's lock, which keeps the SRQ from
    /// going meanwhile: with interrupts off, as hardware drivers call it from their
    /// interrupt handlers.
    pub(super) fn xrc_raise(&self, events: SrqEvents) {
        if let Some(xrcd) = self.xrc {
            let n = self.xrc_sel.load(Ordering::Relaxed);
            let _ = self
                .dev
                .get()
                .data()
                .xrc_srqs
                .with(n, xrcd, |s| s.raise(events));
        }
    }

    /// Posts a receive completion: into the receive CQ, or an XRC target's into the CQ of
    /// the SRQ the WQE came from (dropped if that SRQ is gone, with its CQ).
    pub(super) fn complete_recv(&self, c: &Completion, solicited: bool) {
        if c.status != crate::ib::WcStatus::Success {
            crate::glue::trace::comp_err(
                self.dev.get(),
                self.qpn,
                c.wr_id,
                c.status as u32,
                c.opcode as u32,
                true,
            );
        }
        match (self.xrc, &self.recv_cq) {
            (Some(xrcd), _) => {
                let n = self.xrc_claimed.load(Ordering::Relaxed);
                let _ = self.dev.get().data().xrc_srqs.with(n, xrcd, |s| {
                    if let Some(x) = s.xrc() {
                        x.cq.complete(c, solicited);
                    }
                });
            }
            (None, Some(cq)) => cq.complete(c, solicited),
            (None, None) => {}
        }
    }
}
