// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! What the responder asks of the driver ([`ResponderEnv`]): access checks on remote keys,
//! atomics, the receive queue's head.

/// Remote access kinds checked by the responder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// RDMA WRITE target.
    RemoteWrite,
    /// RDMA READ source.
    RemoteRead,
    /// Atomic target.
    RemoteAtomic,
    /// FLUSH target.
    Flush,
}

/// Memory access failure reported by the driver (a remote-access-error NAK, except
/// [`AccessError::QpDenied`]: an invalid-request NAK).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessError {
    /// Unknown / invalid rkey or wrong PD.
    BadKey,
    /// Range outside the region.
    OutOfBounds,
    /// Region does not grant the access.
    NoPermission,
    /// The QP's own access flags do not enable the operation (rdma_rxe's
    /// `check_qp_attr_access`: an unsupported operation, NAKed as an invalid request).
    QpDenied,
    /// The key and range are valid but some of the memory is not mapped yet (an
    /// on-demand-paging region whose pages must be faulted in, which the driver has
    /// started): an RC responder answers RNR NAK and changes no state, so that the
    /// requester's RNR retry finds the pages present (as mlx5 answers a responder page
    /// fault); UC and UD drop the message.
    NotPresent,
}

/// Atomic operation performed by the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    /// `if *p == compare { *p = swap }`.
    CompareSwap {
        /// Compare.
        compare: u64,
        /// Swap.
        swap: u64,
    },
    /// `*p += add`.
    FetchAdd {
        /// Addend.
        add: u64,
    },
}

/// What the responder needs from the driver: MR validation, atomics, and the
/// receive queue head. Implemented over the driver's MR table and RQ/SRQ.
pub trait ResponderEnv {
    /// Validates `[va, va+len)` of MR `rkey` for `access`.
    fn check_access(
        &mut self,
        rkey: u32,
        va: u64,
        len: u32,
        access: Access,
    ) -> Result<(), AccessError>;
    /// Performs an 8-byte atomic at `va` of MR `rkey` and returns the
    /// original value (validating access itself).
    fn atomic(&mut self, rkey: u32, va: u64, op: AtomicOp) -> Result<u64, AccessError>;
    /// Atomically writes 8 bytes (`value`) at `va` of MR `rkey`.
    fn atomic_write(&mut self, rkey: u32, va: u64, value: u64) -> Result<(), AccessError>;
    /// Length of the head receive WQE, or `None` if none is posted.
    fn recv_head_len(&mut self) -> Option<u32>;
    /// XRC target QPs, before each request: makes the SRQ `srqn` (the request's XRCETH)
    /// the receive queue of [`ResponderEnv::recv_head_len`] and its protection domain the
    /// one the key checks use. `false` when there is no such SRQ, it is not an XRC SRQ, or
    /// it belongs to another XRC domain than the QP: the request is NAKed "invalid
    /// request". Default: refuses.
    fn select_xrc_srq(&mut self, srqn: u32) -> bool {
        let _ = srqn;
        false
    }
    /// Invalidates `rkey` for a SEND with Invalidate (an MR or a type 2 window of the
    /// QP's PD). Default: succeeds.
    fn invalidate(&mut self, rkey: u32) -> Result<(), AccessError> {
        let _ = rkey;
        Ok(())
    }
    /// Performs a FLUSH of the range. Default: access check only.
    fn flush(&mut self, rkey: u32, va: u64, len: u32, sel: u8, plt: u8) -> Result<(), AccessError> {
        let _ = (sel, plt);
        self.check_access(rkey, va, len, Access::Flush)
    }
}
