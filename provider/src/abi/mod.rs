// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The FFI layer: libibverbs' public and private (provider) ABI and rrxe's user ABI as bindgen
//! generates them ([`sys`], from the headers of the libibverbs the build targets: see
//! `build.rs`), the libibverbs imports, and the `extern "C"` entry points libibverbs calls.
//!
//! All of the crate's `unsafe` lives here, each block with a `// SAFETY:` comment. The logic
//! modules (`device`, `context`) are safe Rust on top.
//!
//! `verbs`, `driver`, `uverbs` and `ffi` name the C header each part of [`sys`] comes from
//! (verbs.h; driver.h; ib_user_verbs.h and kern-abi.h; driver.h's functions) and add the few
//! hand-written helpers on top. Public types follow the target's installed libibverbs-dev
//! (verbs.h changes inside one private ABI: `ibv_qp_ex` grew in rdma-core 45, `ibv_port_attr`
//! in 49); private ones the rdma-core source of the same private ABI.

#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

pub mod driver;
pub mod entry;
pub mod ffi;
pub mod objects;
pub mod queue;
pub mod rrxe;
pub mod sys;
pub mod uverbs;
pub mod verbs;
