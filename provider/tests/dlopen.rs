// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The built cdylib loads the way libibverbs loads providers and registers itself.
//!
//! libibverbs' `load_driver()` (rdma-core libibverbs/dynamic_driver.c) turns a `driver NAME`
//! line into `dlopen("libNAME-rdmavN.so", RTLD_NOW)` (N: its private ABI; from its provider
//! directory, then the library path), or, when NAME is an absolute path,
//! `dlopen(NAME + "-rdmavN.so", RTLD_NOW)`. This test builds librrxe.so, copies it to
//! `<tmp>/librrxe-rdmavN.so` (N: the ABI `build.rs` found), and in a child process (this
//! binary again, so nothing else is loaded yet) dlopen()s `<tmp>/librrxe` + "-rdmavN.so" with
//! RTLD_NOW. That resolves every `@IBVERBS_PRIVATE_N` import against the target's
//! libibverbs.so.1 (for a build against another `RRXE_SYSROOT`, the sysroot's, through
//! LD_LIBRARY_PATH; skipped when the host's C library is too old for it) and runs the
//! constructor, which (with RRXE_PROVIDER_DEBUG set) reports that `verbs_register_driver_N`
//! returned.
//!
//! The host has no RDMA device, and libibverbs only reads its driver files when a device
//! exists, so `ibv_devices` cannot exercise this here; the VM tests do.
//!
//! This test must not link the `rrxe` crate itself (its constructor would then run in this
//! process too), so it uses only `libc`.

use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::process::Command;

const CHILD_ENV: &str = "RRXE_DLOPEN_TEST_LIB";
const BEFORE: &str = "rrxe-test: about to dlopen";
/// The private ABI the library was built for (`IBVERBS_PRIVATE_<N>`, from `build.rs`).
const PABI: &str = env!("RRXE_IBVERBS_PABI");

/// Builds the cdylib and returns its path. `cargo test` itself only builds the rlib the
/// tests link, so this runs `cargo build --lib` into a target directory of its own (the outer
/// cargo holds the lock on the main one).
fn built_cdylib() -> PathBuf {
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cdylib-target");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "--lib",
            "-p",
            "rrxe-provider",
            "--target-dir",
        ])
        .arg(&target)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cannot run cargo");
    assert!(status.success(), "cargo build --lib failed");
    target.join("debug/librrxe.so")
}

#[test]
fn cdylib_loads_and_registers_with_libibverbs() {
    let so = built_cdylib();
    assert!(so.is_file(), "{} not built", so.display());
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dlopen");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&so, dir.join(format!("librrxe-rdmav{PABI}.so"))).unwrap();
    // What a `driver <dir>/librrxe` line makes libibverbs open.
    let driver_name = dir.join("librrxe");

    let mut child = Command::new(std::env::current_exe().unwrap());
    let libdir = env!("RRXE_IBVERBS_LIBDIR");
    let foreign = !Path::new(libdir).join("libibverbs.so.1").exists()
        || std::env::var_os("RRXE_SYSROOT").is_some_and(|s| s != "/");
    if foreign {
        child.env("LD_LIBRARY_PATH", libdir);
    }
    let out = child
        .args([
            "--exact",
            "dlopen_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &driver_name)
        .env("RRXE_PROVIDER_DEBUG", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("child stdout:\n{stdout}\nchild stderr:\n{stderr}");
    if foreign && !out.status.success() && (stdout.contains("GLIBC_") || stderr.contains("GLIBC_"))
    {
        println!("SKIP: {libdir}/libibverbs.so.1 needs a newer C library than the host's");
        return;
    }
    assert!(out.status.success(), "child failed");
    assert!(stdout.contains("1 passed"), "child test did not run");
    let before = stderr.find(BEFORE).expect("child did not reach dlopen");
    let registered = stderr
        .find("rrxe: provider registered with libibverbs")
        .expect("constructor did not register the provider");
    assert!(
        registered > before,
        "registration message came before dlopen"
    );
    assert!(!stderr.contains("couldn't load driver"));
}

/// Runs only as the child of the test above.
#[test]
#[ignore = "child process of cdylib_loads_and_registers_with_libibverbs"]
fn dlopen_child() {
    let Some(name) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let path = format!("{}-rdmav{PABI}.so", name.to_str().unwrap());
    let cpath = CString::new(path.clone()).unwrap();
    eprintln!("{BEFORE} {path}");
    // SAFETY: a valid NUL-terminated path; the library's constructor only registers itself.
    let handle = unsafe { libc::dlopen(cpath.as_ptr(), libc::RTLD_NOW) };
    if handle.is_null() {
        // SAFETY: dlerror() returns a valid C string after a failed dlopen().
        let err = unsafe { CStr::from_ptr(libc::dlerror()) };
        panic!("dlopen({path}, RTLD_NOW): {}", err.to_string_lossy());
    }
    // The one symbol the library exports: PROVIDER_DRIVER's `verbs_provider_rrxe`, whose
    // first field is the `const char *name`.
    // SAFETY: `handle` is live; the name is a NUL-terminated literal.
    let ops = unsafe { libc::dlsym(handle, c"verbs_provider_rrxe".as_ptr()) };
    assert!(!ops.is_null(), "verbs_provider_rrxe not exported");
    // SAFETY: `ops` points at a `struct verbs_device_ops`, whose first field is
    // `const char *name`, pointing at a 'static NUL-terminated string.
    let name = unsafe { CStr::from_ptr(*ops.cast::<*const libc::c_char>()) };
    assert_eq!(name.to_str(), Ok("rrxe"));
    // SAFETY: `ops` + 8 is `uint32_t match_min_abi_version, match_max_abi_version`.
    let abi = unsafe { *ops.cast::<u8>().add(8).cast::<[u32; 2]>() };
    assert_eq!(abi, [1, 1]);
    println!("dlopen ok: {path}");
}
