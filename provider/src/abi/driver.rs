// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! libibverbs' provider interface (`libibverbs/driver.h` of the rdma-core source with the
//! target's private ABI), as generated into [`super::sys`]: `verbs_device_ops`,
//! `verbs_context_ops`, `verbs_qp`/`verbs_cq`/`verbs_srq`/`verbs_mr`/`verbs_xrcd`.

pub use super::sys::*;
