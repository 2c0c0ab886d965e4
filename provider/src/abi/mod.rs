//! The FFI layer: `#[repr(C)]` mirrors of libibverbs' public and private (provider) ABI and of
//! rrxe's user ABI, the libibverbs imports, and the `extern "C"` entry points libibverbs calls.
//!
//! All of the crate's `unsafe` lives here, each block with a `// SAFETY:` comment. The logic
//! modules (`device`, `context`) are safe Rust on top.
//!
//! Mirrors match: public types, Debian bookworm's libibverbs-dev 44.0 headers (the installed
//! library); private types (driver.h), rdma-core 56.1's source, which has the same
//! `IBVERBS_PRIVATE_34` layout as 44.0 (checked on the 44.0 binary, see `driver`). Field and
//! type names are the C ones so the layout test can name them.

#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

pub mod driver;
pub mod entry;
pub mod ffi;
pub mod objects;
pub mod queue;
pub mod rrxe;
pub mod uverbs;
pub mod verbs;
