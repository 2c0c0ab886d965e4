// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Device-level logic: how the provider recognises an rrxe device, and what the provider keeps
//! per device. Safe Rust; the FFI glue is `abi::entry`.

// Logic only: the FFI layer (`crate::abi`) holds all unsafe code.
#![deny(unsafe_code)]

use core::ffi::CStr;
use std::io::Read;
use std::path::Path;

use crate::abi::rrxe::RRXE_UVERBS_ABI_VERSION;

/// `verbs_device_ops.name`.
pub const PROVIDER_NAME: &CStr = c"rrxe";

/// The uverbs ABI versions (`/sys/class/infiniband_verbs/uverbsN/abi_version`) this
/// provider accepts; libibverbs refuses other devices with a warning before calling us.
pub const MIN_ABI_VERSION: u32 = RRXE_UVERBS_ABI_VERSION;
/// See [`MIN_ABI_VERSION`].
pub const MAX_ABI_VERSION: u32 = RRXE_UVERBS_ABI_VERSION;

/// The sysfs attribute rrxe.ko gives each of its devices (`hca_type_show` in
/// drivers/rrxe/rrxe_glue.c), read from the device's `/sys/class/infiniband/NAME` directory.
pub const HCA_TYPE_ATTR: &str = "hca_type";
/// What [`HCA_TYPE_ATTR`] reads on an rrxe device (without the newline).
pub const HCA_TYPE: &[u8] = b"rrxe";

/// Whether an `hca_type` attribute's content names an rrxe device: exactly `"rrxe"`, with or
/// without the newline sysfs adds.
pub fn hca_type_is_rrxe(content: &[u8]) -> bool {
    content.strip_suffix(b"\n").unwrap_or(content) == HCA_TYPE
}

/// Whether the RDMA device whose sysfs directory is `ibdev_path` is an rrxe device.
///
/// This is the provider's `match_device`, and the only test: rrxe.ko reports
/// `RDMA_DRIVER_UNKNOWN` (no driver id to match) and its devices have no parent device (no
/// `device/modalias`), and a device name proves nothing, since `rdma link add NAME` and
/// `rdma dev set OLD name NEW` name a device anything (and an rdma_rxe device may be called
/// rrxe0). A device without the attribute (any other driver) is not ours.
///
/// What this cannot settle: an rrxe device given a name librxe's name match takes (`rxe*`)
/// goes to whichever provider libibverbs tries first (it tries them in load order, and
/// librxe accepts rrxe's uverbs ABI version 1 on 64-bit hosts), and librxe then fails to
/// open it. Only a driver id of rrxe's own, matched before any name, would settle that.
pub fn is_rrxe_device(ibdev_path: &Path) -> bool {
    let Ok(f) = std::fs::File::open(ibdev_path.join(HCA_TYPE_ATTR)) else {
        return false;
    };
    // A sysfs attribute is at most a page; ours is 5 bytes. Read a little more than that,
    // so that a longer value is seen to differ.
    let mut buf = Vec::with_capacity(16);
    if f.take(16).read_to_end(&mut buf).is_err() {
        return false;
    }
    hca_type_is_rrxe(&buf)
}

/// Why a device is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceError {
    /// The kernel device speaks another rrxe ABI version.
    AbiVersion(u32),
}

/// What the provider keeps per rrxe device (for the life of libibverbs' device list entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    /// The device's uverbs ABI version, from sysfs.
    pub abi_version: u32,
}

impl Device {
    /// A device whose sysfs `abi_version` is `abi_version`.
    pub fn new(abi_version: u32) -> Result<Self, DeviceError> {
        if (MIN_ABI_VERSION..=MAX_ABI_VERSION).contains(&abi_version) {
            Ok(Self { abi_version })
        } else {
            Err(DeviceError::AbiVersion(abi_version))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_only_our_abi_version() {
        assert_eq!(Device::new(1), Ok(Device { abi_version: 1 }));
        assert_eq!(Device::new(0), Err(DeviceError::AbiVersion(0)));
        assert_eq!(Device::new(2), Err(DeviceError::AbiVersion(2)));
    }

    #[test]
    fn hca_type_content() {
        assert!(hca_type_is_rrxe(b"rrxe\n"));
        assert!(hca_type_is_rrxe(b"rrxe"));
        for v in [
            &b""[..],
            b"\n",
            b"rxe\n",
            b"rrxe0\n",
            b"rrxe\n\n",
            b" rrxe\n",
            b"MT4115\n",
            b"RRXE\n",
        ] {
            assert!(!hca_type_is_rrxe(v), "{v:?}");
        }
    }

    /// A fake `/sys/class/infiniband/NAME` directory with the given `hca_type` (or none).
    fn fake_ibdev(name: &str, hca_type: Option<&[u8]>) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("rrxe-match-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("node_type"), b"1: CA\n").unwrap();
        if let Some(v) = hca_type {
            std::fs::write(dir.join(HCA_TYPE_ATTR), v).unwrap();
        }
        dir
    }

    #[test]
    fn matches_by_attribute_not_by_name() {
        // Any name, as long as the attribute says rrxe.
        for name in ["rrxe0", "roce0", "tenant_a", "rxe0"] {
            let dir = fake_ibdev(name, Some(b"rrxe\n"));
            assert!(is_rrxe_device(&dir), "{name}");
            std::fs::remove_dir_all(&dir).unwrap();
        }
        // An rdma_rxe device (no attribute) called rrxe0, or another driver's hca_type.
        let dir = fake_ibdev("rrxe0-rxe", None);
        assert!(!is_rrxe_device(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
        let dir = fake_ibdev("rrxe1-mlx", Some(b"MT4115\n"));
        assert!(!is_rrxe_device(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
        // A long value that starts like ours.
        let dir = fake_ibdev("rrxe2-long", Some(b"rrxe\nrrxe rrxe rrxe rrxe\n"));
        assert!(!is_rrxe_device(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
        // No directory at all (the device went away).
        assert!(!is_rrxe_device(Path::new("/nonexistent/rrxe-match")));
    }
}
