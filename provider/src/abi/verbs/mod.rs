//! `#[repr(C)]` mirrors of libibverbs' public types (`<infiniband/verbs.h>`).
//!
//! Source: Debian bookworm's libibverbs-dev 44.0 (`/usr/include/infiniband/verbs.h`), the
//! library this provider runs against. rdma-core 56.1's verbs.h is identical for every type
//! here except `ibv_port_attr`, which 56.1 grows by `active_speed_ex` (see below).
//! `tests/layout.rs` checks every size and offset against the real headers.
//!
//! Function pointers the provider never calls or sets are typed [`OpaqueFn`]: only their size
//! matters here, and a later step gives one its real signature when it starts using it.

use core::ffi::{c_char, c_int, c_uint, c_void};

mod device;
mod ex;
mod objects;
pub use device::*;
pub use ex::*;
pub use objects::*;

/// A function pointer slot whose signature this provider does not use (yet).
pub type OpaqueFn = Option<unsafe extern "C" fn()>;

pub const IBV_SYSFS_NAME_MAX: usize = 64;
pub const IBV_SYSFS_PATH_MAX: usize = 256;
