// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The uverbs command ABI (`<rdma/ib_user_verbs.h>` of the target) and rdma-core's command
//! wrappers (`libibverbs/kern-abi.h`: `DECLARE_CMD`), as generated into [`super::sys`], plus
//! `DECLARE_DRV_CMD`'s generic form: a core command or response followed by a driver part.

use core::mem::{align_of, size_of};

pub use super::sys::*;

/// `sizeof(struct ib_uverbs_send_wr)`: the smallest `wqe_size` the kernel accepts in a
/// POST_SEND, even with no work requests.
pub const IB_UVERBS_SEND_WR_SIZE: u32 = size_of::<ib_uverbs_send_wr>() as u32;

/// The alignment `DECLARE_DRV_CMD` requires of a non-extended (write) command and its
/// response (`IBV_ABI_ALIGN`; 8 for extended commands).
pub const IBV_ABI_ALIGN: usize = 4;
/// `IBV_ABI_ALIGN` of extended (`DECLARE_CMD_EX`) commands.
pub const IBV_ABI_ALIGN_EX: usize = 8;

/// `DECLARE_DRV_CMD`'s request: the core command (`IBV_ABI_REQ`) followed by the driver's
/// `drv_payload`, which travels to the kernel as udata in. [`DrvCmd::new`] checks at compile
/// time what kern-abi.h's static_asserts check: no padding between or after the two parts.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DrvCmd<C, P> {
    pub ibv_cmd: C,
    pub drv_payload: P,
}

/// `DECLARE_DRV_CMD`'s response: the core response (`IBV_KABI_RESP`) followed by the
/// driver's `drv_payload` (udata out), with the same no-padding checks as [`DrvCmd`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DrvResp<R, P> {
    pub ibv_resp: R,
    pub drv_payload: P,
}

impl<C: Default, P: Default> DrvCmd<C, P> {
    /// A zeroed command for a write (non-extended) verb.
    pub fn new() -> Self {
        const {
            assert!(
                size_of::<C>().is_multiple_of(align_of::<P>()),
                "Bad kabi req struct length"
            );
            assert!(
                size_of::<Self>() == size_of::<C>() + size_of::<P>(),
                "Bad req size"
            );
            assert!(
                size_of::<Self>().is_multiple_of(IBV_ABI_ALIGN),
                "Bad kabi req alignment"
            );
        }
        Self::default()
    }

    /// Size of the whole command, as passed to `ibv_cmd_*`'s `cmd_size`.
    pub const fn size() -> usize {
        size_of::<Self>()
    }
}

impl<R: Default, P: Default> DrvResp<R, P> {
    /// A zeroed response for a write (non-extended) verb. Zero matters: a kernel that writes
    /// less driver data than the provider expects leaves the rest zero.
    pub fn new() -> Self {
        const {
            assert!(
                size_of::<R>().is_multiple_of(align_of::<P>()),
                "Bad kabi resp struct length"
            );
            assert!(
                size_of::<Self>() == size_of::<R>() + size_of::<P>(),
                "Bad resp size"
            );
            assert!(
                size_of::<Self>().is_multiple_of(IBV_ABI_ALIGN),
                "Bad kabi resp alignment"
            );
        }
        Self::default()
    }

    /// Size of the whole response, as passed to `ibv_cmd_*`'s `resp_size`.
    pub const fn size() -> usize {
        size_of::<Self>()
    }
}
