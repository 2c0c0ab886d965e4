// SPDX-License-Identifier: GPL-2.0
//! QP attributes: modify_qp and query_qp.

use super::sink::Sink;
use super::{Engine, Qp, MAX_INIT_RD_ATOMIC};
use crate::ah::Av;
use crate::glue::bindings as b;
use crate::mr::AccessFlags;
use crate::proto;
use core::sync::atomic::Ordering;
use kernel::prelude::*;

/// Attributes reported back by query_qp.
#[derive(Clone, Copy, Default)]
pub(crate) struct QpAttrs {
    /// IB QP state (`ib_qp_state`).
    pub(crate) state: u32,
    /// Path MTU (`ib_mtu`).
    pub(crate) path_mtu: u32,
    /// Q_Key.
    pub(crate) qkey: u32,
    /// Receive PSN.
    pub(crate) rq_psn: u32,
    /// Send PSN.
    pub(crate) sq_psn: u32,
    /// Destination QPN.
    pub(crate) dest_qpn: u32,
    /// The remote access the QP grants (IB_QP_ACCESS_FLAGS).
    pub(crate) access: AccessFlags,
    /// Timeout.
    pub(crate) timeout: u8,
    /// Retry count.
    pub(crate) retry_cnt: u8,
    /// RNR retry.
    pub(crate) rnr_retry: u8,
    /// Min RNR timer.
    pub(crate) min_rnr_timer: u8,
    /// Max outstanding RD/atomic (initiator).
    pub(crate) max_rd_atomic: u8,
    /// Max outstanding RD/atomic (responder).
    pub(crate) max_dest_rd_atomic: u8,
    /// SQD: a WQE the send queue started is not complete yet.
    pub(crate) sq_draining: bool,
    /// Address vector.
    pub(crate) av: Option<Av>,
}

/// A modify_qp request, decoded from `ib_qp_attr` + mask by the glue.
#[derive(Default)]
pub(crate) struct ModifyArgs {
    /// New IB state.
    pub(crate) state: Option<u32>,
    /// Address vector.
    pub(crate) av: Option<Av>,
    /// Path MTU (`ib_mtu`).
    pub(crate) path_mtu: Option<u32>,
    /// Destination QPN.
    pub(crate) dest_qpn: Option<u32>,
    /// Q_Key.
    pub(crate) qkey: Option<u32>,
    /// Send PSN.
    pub(crate) sq_psn: Option<u32>,
    /// Receive PSN.
    pub(crate) rq_psn: Option<u32>,
    /// Timeout.
    pub(crate) timeout: Option<u8>,
    /// Retry count.
    pub(crate) retry_cnt: Option<u8>,
    /// RNR retry.
    pub(crate) rnr_retry: Option<u8>,
    /// Min RNR timer.
    pub(crate) min_rnr_timer: Option<u8>,
    /// Max outstanding RD/atomic (initiator).
    pub(crate) max_rd_atomic: Option<u8>,
    /// Max outstanding RD/atomic (responder).
    pub(crate) max_dest_rd_atomic: Option<u8>,
    /// The remote access the QP grants (IB_QP_ACCESS_FLAGS).
    pub(crate) access: Option<AccessFlags>,
    /// The move to SQD reports SQ Drained (IB_QP_EN_SQD_ASYNC_NOTIFY).
    pub(crate) sqd_notify: Option<bool>,
}

impl Qp {
    /// Applies a modify_qp request.
    pub(crate) fn modify(&self, m: &ModifyArgs) -> Result {
        // Before the engine lock: the core's netdev lock must not nest in a softirq-safe one.
        let ndev = self.dev.get().netdev();
        let mut eng = self.engine.lock();
        let mut pm = proto::ModifyQp::default();
        if let Some(s) = m.state {
            pm.state = Some(match s {
                b::ib_qp_state_IB_QPS_RESET => proto::QpState::Reset,
                b::ib_qp_state_IB_QPS_INIT => proto::QpState::Init,
                b::ib_qp_state_IB_QPS_RTR => proto::QpState::Rtr,
                b::ib_qp_state_IB_QPS_RTS => proto::QpState::Rts,
                b::ib_qp_state_IB_QPS_SQD => proto::QpState::Sqd,
                b::ib_qp_state_IB_QPS_ERR => proto::QpState::Error,
                _ => return Err(crate::glue::eopnotsupp()),
            });
        }
        // Everything is validated by proto.modify below before any of it is kept: the new
        // attributes are built in a copy, committed only on success (rdma_rxe checks all
        // attributes in rxe_qp_chk_attr before rxe_qp_from_attr applies them).
        let mut attrs = eng.attrs;
        let mut sport = eng.sport;
        if let Some(mtu) = m.path_mtu {
            let asked = proto::Mtu::from_ib(mtu as u8).ok_or(EINVAL)?;
            // Not above what the netdev carries now: a larger path MTU would make packets
            // the link drops (the netdev's MTU minus the RoCEv2 headers, as the port's
            // active MTU). A later MTU change does not move the QP, as for hardware.
            let port = ndev
                .as_deref()
                .map(|n| crate::device::ib_mtu_for(n.mtu()))
                .unwrap_or(mtu);
            let ib = mtu.min(port);
            pm.mtu = Some(proto::Mtu::from_ib(ib as u8).unwrap_or(asked));
            attrs.path_mtu = ib;
        }
        if let Some(v) = m.dest_qpn {
            pm.dest_qpn = Some(v);
            attrs.dest_qpn = v;
            sport = proto::net::udp_sport(self.qpn, v);
        }
        if let Some(v) = m.qkey {
            pm.qkey = Some(v);
            attrs.qkey = v;
        }
        if let Some(v) = m.sq_psn {
            pm.sq_psn = Some(proto::Psn::new(v));
            attrs.sq_psn = v;
        }
        if let Some(v) = m.rq_psn {
            pm.rq_psn = Some(proto::Psn::new(v));
            attrs.rq_psn = v;
        }
        if let Some(v) = m.timeout {
            pm.timeout = Some(v);
            attrs.timeout = v;
        }
        if let Some(v) = m.retry_cnt {
            pm.retry_cnt = Some(v);
            attrs.retry_cnt = v;
        }
        if let Some(v) = m.rnr_retry {
            pm.rnr_retry = Some(v);
            attrs.rnr_retry = v;
        }
        if let Some(v) = m.min_rnr_timer {
            pm.min_rnr_timer = Some(v);
            attrs.min_rnr_timer = v;
        }
        if let Some(v) = m.max_rd_atomic {
            // Not above what query_device offers (rdma_rxe refuses more than its
            // max_qp_rd_atom too).
            if u32::from(v) > MAX_INIT_RD_ATOMIC {
                return Err(EINVAL);
            }
            pm.max_rd_atomic = Some(v.max(1));
            attrs.max_rd_atomic = v;
        }
        if let Some(v) = m.max_dest_rd_atomic {
            pm.max_dest_rd_atomic = Some(v);
            attrs.max_dest_rd_atomic = v;
        }
        if let Some(v) = m.access {
            if !v.within(AccessFlags::QP_SUPPORTED) {
                return Err(EINVAL);
            }
            attrs.access = v;
        }
        if let Some(av) = m.av {
            attrs.av = Some(av);
        }
        // The IBTA's "enable SQD affiliated asynchronous event": SQ Drained only when asked
        // for (mlx4 and mlx5 honour it; rdma_rxe raises the event either way).
        pm.sqd_notify = m.sqd_notify;
        let Engine { proto, .. } = &mut *eng;
        let state_was = proto.state();
        let cwnd_was = proto.send_queue().cwnd();
        let mut sink = Sink {
            qp: self,
            av: attrs.av,
            sport,
            ndev: ndev.as_deref(),
            pkt: None,
            // The address vector may be changing here: no kept route (nor source netdev:
            // it would be right, but this is no datapath).
            kept: Default::default(),
            batch: None,
        };
        proto.modify(&pm, &mut sink).map_err(|_| EINVAL)?;
        eng.attrs = attrs;
        eng.sport = sport;
        if let Some(av) = m.av {
            // The kept route led to the old destination.
            if let Some(r) = eng.route.as_mut() {
                r.reset();
            }
            // Packets are taken from the path they are sent to (kept with the other
            // attributes, once the change is accepted), and only as they arrive on the
            // netdev the QP sends from.
            let origin = super::Origin::Netdev(crate::glue::NdevId::of_av(&av));
            let mut rx = self.rx.lock();
            rx.path = Some(crate::ah::path(&av));
            if !self.kind.is_ud() {
                self.origin.set(origin);
            }
        }
        let proto = &eng.proto;
        let dev = self.dev.get();
        if proto.state() != state_was {
            crate::glue::trace::qp_state(
                dev,
                self.qpn,
                super::ib_state(state_was),
                super::ib_state(proto.state()),
            );
        }
        let cwnd = proto.send_queue().cwnd();
        if cwnd != cwnd_was {
            let why = crate::glue::trace::CwndReason::Reset;
            crate::glue::trace::cwnd(dev, self.qpn, cwnd_was, cwnd, why);
        }
        let err = proto.state() == proto::QpState::Error;
        let was = self.in_error.swap(err, Ordering::AcqRel);
        if err {
            self.flush_unfed_sends();
            self.flush_recvs();
            if !was {
                self.entered_error();
            }
        }
        if proto.state() == proto::QpState::Reset {
            self.reset_rings();
            // A new connection starts with no page fault waiting or remembered as failed,
            // and no packet of the old one held back by a fault rule.
            self.reset_faults();
            eng.held = super::run::Held::default();
        }
        drop(eng);
        // SQ Drained (a move to SQD with nothing in progress), Last WQE Reached: the handler
        // may call back into the QP (`ib_drain_qp` waits for the latter right after its
        // modify to the error state).
        self.raise_events();
        self.kick();
        Ok(())
    }

    pub(super) fn reset_rings(&self) {
        {
            let mut sq = self.sq.lock();
            sq.prod = 0;
            sq.fed = 0;
            sq.done = 0;
        }
        *self.claim.lock() = None;
        let mut rq = self.rq.lock();
        rq.prod = 0;
        rq.done = 0;
    }
}
