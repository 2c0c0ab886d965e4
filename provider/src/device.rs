//! Device-level logic: how libibverbs recognises an rrxe device, and what the provider keeps
//! per device. Safe Rust; the FFI glue is `abi::entry`.

// Logic only: the FFI layer (`crate::abi`) holds all unsafe code.
#![deny(unsafe_code)]

use core::ffi::CStr;

use crate::abi::rrxe::RRXE_UVERBS_ABI_VERSION;

/// `verbs_device_ops.name`.
pub const PROVIDER_NAME: &CStr = c"rrxe";

/// The modalias pattern of `VERBS_NAME_MATCH("rrxe", NULL)`. rrxe.ko reports
/// `RDMA_DRIVER_UNKNOWN` and its devices have no parent device (so no `device/modalias`), so
/// libibverbs matches them by name: it fnmatch(3)es this against `"rdma_device:N" + ibdev
/// name`, i.e. it accepts rrxe0, rrxe1, ...
pub const NAME_MATCH_MODALIAS: &CStr = c"rdma_device:*Nrrxe*";

/// The uverbs ABI versions (`/sys/class/infiniband_verbs/uverbsN/abi_version`) this
/// provider accepts; libibverbs refuses other devices with a warning before calling us.
pub const MIN_ABI_VERSION: u32 = RRXE_UVERBS_ABI_VERSION;
/// See [`MIN_ABI_VERSION`].
pub const MAX_ABI_VERSION: u32 = RRXE_UVERBS_ABI_VERSION;

/// The string libibverbs matches [`NAME_MATCH_MODALIAS`] against for a device name.
pub fn name_modalias(ibdev_name: &str) -> String {
    format!("rdma_device:N{ibdev_name}")
}

/// Whether libibverbs' name match accepts `ibdev_name` for this provider (what fnmatch of
/// [`NAME_MATCH_MODALIAS`] against [`name_modalias`] decides, without the C library).
pub fn name_matches(ibdev_name: &str) -> bool {
    name_modalias(ibdev_name)
        .strip_prefix("rdma_device:")
        .is_some_and(|rest| rest.contains("Nrrxe"))
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
    fn name_match_accepts_rrxe_devices_only() {
        for name in ["rrxe0", "rrxe1", "rrxe12", "rrxe_test"] {
            assert!(name_matches(name), "{name}");
        }
        for name in ["rxe0", "mlx5_0", "siw0", "xrrxe0", "rrx0", ""] {
            assert!(!name_matches(name), "{name}");
        }
    }

    /// The pure-Rust rule agrees with what libibverbs actually runs: fnmatch(3).
    #[test]
    #[allow(unsafe_code)]
    fn name_match_agrees_with_fnmatch() {
        for name in [
            "rrxe0", "rrxe7", "rxe0", "mlx5_0", "xrrxe0", "rrx0", "Nrrxe", "aNrrxe0",
        ] {
            let value = std::ffi::CString::new(name_modalias(name)).unwrap();
            // SAFETY: both arguments are NUL-terminated strings that outlive the call.
            let rc = unsafe { libc::fnmatch(NAME_MATCH_MODALIAS.as_ptr(), value.as_ptr(), 0) };
            assert_eq!(rc == 0, name_matches(name), "{name}");
        }
    }
}
