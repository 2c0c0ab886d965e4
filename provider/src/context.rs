// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Context-level logic: validating the kernel's alloc_ucontext answer, the per-context state,
//! and small helpers for what the context's verbs return. Safe Rust; the FFI glue is
//! `abi::entry`.

// Logic only: the FFI layer (`crate::abi`) holds all unsafe code.
#![deny(unsafe_code)]

use core::ffi::c_char;
use core::fmt;

use crate::abi::rrxe::{rrxe_alloc_ucontext_resp, RRXE_UVERBS_ABI_VERSION};

/// Why a context cannot be opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextError {
    /// The kernel answered GET_CONTEXT with another rrxe ABI version (0: it wrote no driver
    /// data at all).
    AbiMismatch { kernel: u32 },
}

impl ContextError {
    /// The errno `ibv_open_device` fails with.
    pub fn errno(&self) -> i32 {
        match self {
            Self::AbiMismatch { .. } => libc::EPROTO,
        }
    }
}

impl fmt::Display for ContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AbiMismatch { kernel } => write!(
                f,
                "kernel rrxe ABI version {kernel}, provider speaks {RRXE_UVERBS_ABI_VERSION}"
            ),
        }
    }
}

/// What the provider keeps per open context (next to libibverbs' `verbs_context`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Context {
    /// The ABI version the kernel confirmed.
    pub abi_version: u32,
}

impl Context {
    /// A context from the driver part of the GET_CONTEXT response.
    pub fn from_ucontext_resp(resp: &rrxe_alloc_ucontext_resp) -> Result<Self, ContextError> {
        if resp.abi_version != RRXE_UVERBS_ABI_VERSION {
            return Err(ContextError::AbiMismatch {
                kernel: resp.abi_version,
            });
        }
        Ok(Self {
            abi_version: resp.abi_version,
        })
    }
}

/// `ibv_device_attr.fw_ver` from the kernel's raw `fw_ver`: major.minor.sub_minor from bits
/// 47..32, 31..16 and 15..0 (the convention rdma_rxe's provider uses too).
pub fn fw_ver_string(raw: u64) -> String {
    let major = (raw >> 32) & 0xffff;
    let minor = (raw >> 16) & 0xffff;
    let sub_minor = raw & 0xffff;
    format!("{major}.{minor}.{sub_minor}")
}

/// Copies `s` into a C `char` array like snprintf: truncated to fit, always NUL-terminated,
/// the rest zeroed. An empty `dst` is left alone.
pub fn copy_c_string(dst: &mut [c_char], s: &str) {
    let Some(room) = dst.len().checked_sub(1) else {
        return;
    };
    let n = s.len().min(room);
    for (d, &b) in dst.iter_mut().zip(&s.as_bytes()[..n]) {
        *d = b as c_char;
    }
    dst[n..].fill(0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_matching_abi_version() {
        let resp = rrxe_alloc_ucontext_resp {
            abi_version: RRXE_UVERBS_ABI_VERSION,
            reserved: 0,
        };
        assert_eq!(
            Context::from_ucontext_resp(&resp),
            Ok(Context { abi_version: 1 })
        );
    }

    #[test]
    fn refuses_other_abi_versions() {
        for v in [0, 2, u32::MAX] {
            let resp = rrxe_alloc_ucontext_resp {
                abi_version: v,
                reserved: 0,
            };
            let err = Context::from_ucontext_resp(&resp).unwrap_err();
            assert_eq!(err, ContextError::AbiMismatch { kernel: v });
            assert_eq!(err.errno(), libc::EPROTO);
            assert!(err.to_string().contains(&v.to_string()));
        }
    }

    #[test]
    fn fw_ver_fields() {
        assert_eq!(fw_ver_string(0), "0.0.0");
        assert_eq!(fw_ver_string(0x0001_0002_0003), "1.2.3");
        assert_eq!(fw_ver_string(u64::MAX), "65535.65535.65535");
    }

    #[test]
    fn c_string_copy_truncates_and_terminates() {
        let mut buf = [0x55 as c_char; 8];
        copy_c_string(&mut buf, "1.2.3");
        assert_eq!(
            &buf[..6],
            &[b'1', b'.', b'2', b'.', b'3', 0].map(|b| b as c_char)
        );
        assert!(buf[6..].iter().all(|&c| c == 0));

        let mut small = [0x55 as c_char; 4];
        copy_c_string(&mut small, "65535.0.0");
        assert_eq!(small, [b'6', b'5', b'5', 0].map(|b| b as c_char));

        let mut none: [c_char; 0] = [];
        copy_c_string(&mut none, "x");
    }
}
