// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! libibverbs' public types (`<infiniband/verbs.h>` of the target's libibverbs-dev), as
//! generated into [`super::sys`].

pub use super::sys::*;

/// The immediate data (or invalidated rkey) of a work completion: the value of the
/// anonymous `imm_data`/`invalidated_rkey` union of `struct ibv_wc`.
pub fn wc_imm(wc: &ibv_wc) -> u32 {
    // SAFETY: both members of the union are a 32-bit integer, so either reads a valid value.
    unsafe { wc.__bindgen_anon_1.imm_data }
}

/// A work completion's `imm_data`/`invalidated_rkey` union holding `imm`.
pub fn wc_imm_union(imm: u32) -> ibv_wc__bindgen_ty_1 {
    ibv_wc__bindgen_ty_1 { imm_data: imm }
}
