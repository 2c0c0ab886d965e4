// SPDX-License-Identifier: GPL-2.0
//! Raw bindings generated at build time by the module's own bindgen rule (see `Kbuild`),
//! narrowed by allowlists to the RDMA core, netdev and rrxe uapi items the driver names.
//! Nothing outside `glue` uses these directly except plain-data attribute structs.
#![allow(
    unreachable_pub,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    dead_code,
    missing_docs,
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    unsafe_op_in_unsafe_fn,
    improper_ctypes
)]

use kernel::ffi;

include!("../rrxe_bindings_gen.rs.inc");
