// SPDX-License-Identifier: GPL-2.0
//! rrxe: a software RoCEv2 RDMA device over any Ethernet netdev.
//!
//! Layers:
//! - [`proto`]: sans-IO RoCEv2 protocol logic, shared with the host test crate;
//! - [`glue`]: the kernel glue, where all `unsafe` lives, exposing safe types;
//! - the safe driver logic on top: [`device`], [`qp`], [`cq`], [`srq`], [`mr`], [`ah`],
//!   [`net`], ...;
//! - [`verbs`]: rrxe's verbs, which glue's entry points call with converted arguments, each
//!   one call into the driver logic.

// The pin-init macros recurse once per field, and Linux 6.12's once per top-level token of
// the field list (looking for a trailing `..Zeroable::zeroed()`): the QP's initialiser,
// which builds each part in its field (`Qp::new`), has over 250.
#![recursion_limit = "512"]
// The safety boundary: `unsafe` only in the glue (allowed below).
#![deny(unsafe_code)]

use kernel::prelude::*;

mod ah;
mod counters;
mod cq;
mod device;
mod fault;
// The glue is where raw kernel interfaces become safe types.
#[allow(unsafe_code)]
mod glue;
mod ib;
mod limits;
mod mad;
mod mcast;
mod mr;
mod net;
#[path = "proto/src/lib.rs"]
#[allow(dead_code, unreachable_pub, missing_docs, unused_imports)]
pub(crate) mod proto;
mod qp;
mod qp_counter;
mod slots;
mod srq;
mod uwqe;
mod verbs;
mod xrc;

module! {
    type: RrxeModule,
    name: "rrxe",
    // The author and version are in rrxe_glue.c (MODULE_AUTHOR, MODULE_VERSION): this
    // macro names the author key differently across kernels.
    description: "Soft-RoCE (RoCEv2) RDMA device written in Rust",
    license: "GPL",
}

struct RrxeModule {
    _registration: glue::Registration,
}

impl kernel::Module for RrxeModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let registration = glue::Registration::new::<verbs::Rrxe, net::Rx>()?;
        pr_info!(
            "rrxe: loaded; add a device with: rdma link add rrxe0 type rrxe netdev <netdev>\n"
        );
        Ok(RrxeModule {
            _registration: registration,
        })
    }
}
