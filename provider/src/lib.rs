// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! librrxe-rdmavN.so: the libibverbs userspace provider of rrxe, the Rust soft-RoCE device
//! (N: the private ABI of the libibverbs it is built for, see `build.rs`).
//!
//! libibverbs dlopen()s the library (named by a `driver rrxe` line in /etc/libibverbs.d);
//! an ELF constructor registers [`abi::entry::verbs_provider_rrxe`] with
//! `verbs_register_driver_N`; libibverbs then asks it which devices are rrxe ones (by the
//! `hca_type` sysfs attribute rrxe.ko sets, whatever the device is named),
//! and calls back into `abi::entry` to create devices and contexts.
//!
//! Layout: [`abi`] is the FFI layer (bindgen's C types and imports, entry points; all the
//! `unsafe`);
//! [`device`], [`context`], [`ring`] (the shared-queue protocol), [`wqe`] (entry encoding)
//! and [`wq`] (posting and polling) are the safe logic; `abi::objects` holds the verbs
//! objects as thin shells over them.

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod abi;
pub mod context;
pub mod device;
pub mod ring;
pub mod wq;
pub mod wqe;
