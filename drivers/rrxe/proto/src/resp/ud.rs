// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The UD responder: SEND ONLY packets, Q_Key checked, data after the GRH area.

use super::*;

impl<const R: usize> Responder<R> {
    pub(super) fn ud<E: ResponderEnv, A: ActionSink>(
        &mut self,
        p: &Packet,
        env: &mut E,
        sink: &mut A,
    ) -> RxStatus {
        let Some(deth) = p.hdrs.deth else {
            return RxStatus::Invalid;
        };
        if p.info.kind != OpKind::Send || p.info.pos != Position::Only {
            return RxStatus::Invalid;
        }
        // Each QP's own Q_Key, for a multicast copy too (IBTA 10.2.4; rdma_rxe's
        // check_keys, per attached QP in rxe_rcv_mcast_pkt).
        if deth.qkey != self.cfg.qkey {
            return RxStatus::BadQkey;
        }
        let len = p.payload_len;
        if len > self.cfg.mtu.bytes() {
            return RxStatus::Invalid;
        }
        let Some(recv_len) = env.recv_head_len() else {
            return RxStatus::NoRecv;
        };
        let total = len.saturating_add(UD_GRH_LEN);
        if total > recv_len {
            return RxStatus::Invalid;
        }
        let psn = p.hdrs.bth.psn;
        let mut placed = sink.place(Action::PlaceGrh);
        if len > 0 && placed.is_ok() {
            placed = sink.place(Action::PlaceRecv {
                offset: UD_GRH_LEN,
                src: range(p),
            });
        }
        if let Err(e) = placed {
            return self.recv_failed(psn, e, RecvKind::Send, deth.src_qp, sink);
        }
        sink.push(recv_done(RecvKind::Send, total, p, deth.src_qp));
        RxStatus::Ok
    }
}
