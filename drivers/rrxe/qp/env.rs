// SPDX-License-Identifier: GPL-2.0
//! The responder environment: proto's view of memory regions and receive buffers.

use super::Qp;
use crate::mr::{AccessError, AccessFlags, Fault};
use crate::proto::{self, ResponderEnv};
use kernel::prelude::*;

/// The responder's view of memory and receive buffers.
pub(super) struct Env<'a> {
    pub(super) qp: &'a Qp,
    /// Remote access the QP grants.
    pub(super) access: AccessFlags,
}

fn need_bits(a: proto::Access) -> AccessFlags {
    match a {
        proto::Access::RemoteWrite => AccessFlags::REMOTE_WRITE,
        proto::Access::RemoteRead => AccessFlags::REMOTE_READ,
        proto::Access::RemoteAtomic => AccessFlags::REMOTE_ATOMIC,
        proto::Access::Flush => AccessFlags::FLUSH_GLOBAL,
    }
}

fn map_err(e: crate::mr::AccessError) -> proto::AccessError {
    match e {
        crate::mr::AccessError::BadKey => proto::AccessError::BadKey,
        crate::mr::AccessError::OutOfBounds => proto::AccessError::OutOfBounds,
        crate::mr::AccessError::NoPermission => proto::AccessError::NoPermission,
        crate::mr::AccessError::NotPresent => proto::AccessError::NotPresent,
    }
}

impl Env<'_> {
    /// The error proto sees for a failed remote access with `rkey` to `(va, len, need)`:
    /// memory not present asks for its page fault first (see [`Qp::not_present`]).
    fn fail(
        &self,
        e: AccessError,
        rkey: u32,
        (va, len, need): (u64, u64, AccessFlags),
    ) -> proto::AccessError {
        let e = if e == AccessError::NotPresent {
            self.qp.not_present(Fault {
                key: rkey,
                remote_qpn: Some(self.qp.qpn),
                pd: self.qp.resp_pd(),
                va,
                len,
                need,
            })
        } else {
            e
        };
        map_err(e)
    }
}

impl ResponderEnv for Env<'_> {
    fn check_access(
        &mut self,
        rkey: u32,
        va: u64,
        len: u32,
        a: proto::Access,
    ) -> Result<(), proto::AccessError> {
        let need = need_bits(a);
        // The QP itself must enable the remote operation: otherwise it is an unsupported
        // request (rdma_rxe's check_qp_attr_access, an invalid-request NAK).
        if !self.access.contains(need) {
            return Err(proto::AccessError::QpDenied);
        }
        let mrs = &self.qp.dev.get().data().mrs;
        let q = (self.qp.resp_pd(), self.qp.qpn);
        match mrs.with_remote(rkey, q.0, q.1, (va, u64::from(len), need), |r| {
            r.check(va, u64::from(len), need)
        }) {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) | Err(e) => Err(self.fail(e, rkey, (va, u64::from(len), need))),
        }
    }

    fn atomic(
        &mut self,
        rkey: u32,
        va: u64,
        op: proto::AtomicOp,
    ) -> Result<u64, proto::AccessError> {
        if !self.access.contains(AccessFlags::REMOTE_ATOMIC) {
            return Err(proto::AccessError::QpDenied);
        }
        let mrs = &self.qp.dev.get().data().mrs;
        let need = (va, 8, AccessFlags::REMOTE_ATOMIC);
        let r = mrs.with_remote(rkey, self.qp.resp_pd(), self.qp.qpn, need, |r| {
            r.atomic(va, op)
        });
        match r {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) | Err(e) => Err(self.fail(e, rkey, need)),
        }
    }

    fn atomic_write(&mut self, rkey: u32, va: u64, value: u64) -> Result<(), proto::AccessError> {
        if !self.access.contains(AccessFlags::REMOTE_WRITE) {
            return Err(proto::AccessError::QpDenied);
        }
        let mrs = &self.qp.dev.get().data().mrs;
        let need = (va, 8, AccessFlags::REMOTE_WRITE);
        let r = mrs.with_remote(rkey, self.qp.resp_pd(), self.qp.qpn, need, |r| {
            r.atomic_write(va, value)
        });
        match r {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) | Err(e) => Err(self.fail(e, rkey, need)),
        }
    }

    fn recv_head_len(&mut self) -> Option<u32> {
        self.qp.claim_head().map(|w| w.len)
    }

    /// XRC target QPs: an XRC SRQ of the QP's domain (see [`crate::xrc`]).
    fn select_xrc_srq(&mut self, srqn: u32) -> bool {
        self.qp.select_xrc_srq(srqn)
    }

    /// SEND with Invalidate: an FR MR or a type 2B window bound to this QP, in its PD.
    fn invalidate(&mut self, rkey: u32) -> Result<(), proto::AccessError> {
        let mrs = &self.qp.dev.get().data().mrs;
        mrs.invalidate(rkey, self.qp.resp_pd(), Some(self.qp.qpn))
            .map_err(map_err)
    }

    /// FLUSH: the MR must grant each placement type asked for. Memory is coherent here, so
    /// once the request is ordered behind the earlier writes there is nothing to do. With
    /// selectivity "memory region" the VA and length are not used, so only the key and its
    /// access are checked (a requester may send 0 for both).
    fn flush(
        &mut self,
        rkey: u32,
        va: u64,
        len: u32,
        sel: u8,
        plt: u8,
    ) -> Result<(), proto::AccessError> {
        let mut need = AccessFlags::NONE;
        if plt & proto::Feth::PLT_GLOBAL != 0 {
            need = need.union(AccessFlags::FLUSH_GLOBAL);
        }
        if plt & proto::Feth::PLT_PERSISTENT != 0 {
            need = need.union(AccessFlags::FLUSH_PERSISTENT);
        }
        if need.is_empty() {
            return Err(proto::AccessError::NoPermission);
        }
        // The QP must enable each placement type too (rdma_rxe's check_qp_attr_access:
        // FLUSH_GLOBAL / FLUSH_PERSISTENT in the QP's access flags, else an unsupported
        // request, NAKed invalid request).
        if !self.access.contains(need) {
            return Err(proto::AccessError::QpDenied);
        }
        let mrs = &self.qp.dev.get().data().mrs;
        let (pd, qpn) = (self.qp.resp_pd(), self.qp.qpn);
        let r = if sel == proto::Feth::SEL_MR {
            // A window's range would apply: whole-region FLUSH is for MR keys only.
            mrs.with_remote(rkey, pd, qpn, (0, 0, need), |r| r.check_whole(need))
        } else {
            mrs.with_remote(rkey, pd, qpn, (va, u64::from(len), need), |r| {
                r.check_range(va, u64::from(len), need).map(|_| ())
            })
        };
        match r {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) | Err(e) => Err(map_err(e)),
        }
    }
}
