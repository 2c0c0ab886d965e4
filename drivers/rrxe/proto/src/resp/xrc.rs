// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The XRC target responder: the RC responder, with the receive queue (and the protection
//! domain of its memory checks) chosen per request by the XRCETH.

use super::*;

impl<const R: usize> Responder<R> {
    /// An XRC request: the SRQ its XRCETH names must be an XRC SRQ of the QP's domain (the
    /// driver checks, [`ResponderEnv::select_xrc_srq`]); then it is an RC request. An
    /// in-sequence request naming another SRQ is NAKed "invalid request" and the QP enters
    /// the error state, as any RC invalid request (the IBTA's XRC SRQ validation: an SRQ of
    /// another XRC domain is an invalid request). A duplicate or out-of-sequence request
    /// needs no SRQ and is handled as RC's (re-ACK, PSN sequence NAK), so a message whose
    /// ACK was lost is still acknowledged after its SRQ is gone; only a duplicate READ,
    /// re-executed, needs the SRQ's PD and fails its key check without it.
    pub(super) fn xrc<E: ResponderEnv, A: ActionSink>(
        &mut self,
        p: &Packet,
        env: &mut E,
        sink: &mut A,
    ) -> RxStatus {
        // Every XRC request opcode carries an XRCETH (the opcode table); `parse_packet`
        // filled it in.
        let Some(srqn) = p.hdrs.xrceth else {
            return RxStatus::Invalid;
        };
        self.xrc_srqn = srqn;
        let psn = p.hdrs.bth.psn;
        if !env.select_xrc_srq(srqn) && psn == self.epsn {
            return self.fatal(psn, NakCode::InvalidRequest, sink);
        }
        self.rc(p, env, sink)
    }
}
