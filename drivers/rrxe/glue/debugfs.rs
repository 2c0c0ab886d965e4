// SPDX-License-Identifier: GPL-2.0
//! debugfs: each device's directory `/sys/kernel/debug/rrxe/<dev>/`, its `faults` file
//! and its `capture` file (`rrxe_glue_debugfs.c`). The text of `faults` is the driver's:
//! reads and writes go to the [`Verbs`] methods `faults_show` and `faults_write`; `capture`
//! shows and sets the device's capture netdev ([`super::capture::Capture`], which the
//! driver keeps: [`Verbs::capture`]).

use super::bindings;
use super::{IbDev, Verbs};
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};

/// A device's debugfs directory, removed (with its files) when dropped.
pub(crate) struct DebugDir(AtomicPtr<bindings::dentry>);

impl DebugDir {
    /// No directory yet.
    pub(crate) const fn new() -> Self {
        Self(AtomicPtr::new(ptr::null_mut()))
    }

    /// Creates `rrxe/<dev>/` with its files, named after the device's name now (a later
    /// rename does not move it). Once: later calls do nothing. Without debugfs (or on
    /// failure) there is no directory, as the kernel's debugfs convention has it.
    pub(crate) fn create(&self, dev: &IbDev) {
        if !self.0.load(Ordering::Acquire).is_null() {
            return;
        }
        // SAFETY: dev is a registered rrxe device (its `dev` has its name), alive for the
        // borrow; the files keep its pointer, and `self` (in the device's data) removes
        // them before the device's memory goes (Drop below, run by dealloc_driver).
        let dir = unsafe { bindings::rrxe_glue_debugfs_add(dev.as_ptr()) };
        if dir.is_null() {
            return;
        }
        if self
            .0
            .compare_exchange(ptr::null_mut(), dir, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // SAFETY: `dir` was just made by rrxe_glue_debugfs_add and is known to nobody.
            unsafe { bindings::rrxe_glue_debugfs_remove(dir) };
        }
    }
}

impl Drop for DebugDir {
    fn drop(&mut self) {
        let dir = *self.0.get_mut();
        if !dir.is_null() {
            // SAFETY: made by rrxe_glue_debugfs_add and removed only here. It waits for
            // the file operations in progress, so none uses the device after this.
            unsafe { bindings::rrxe_glue_debugfs_remove(dir) };
        }
    }
}

/// Registers the functions behind the files and creates `rrxe/` (module init).
pub(super) fn init<V: Verbs>() {
    let fns = bindings::rrxe_debugfs_fns {
        faults_show: Some(faults_show::<V>),
        faults_write: Some(faults_write::<V>),
        capture_show: Some(capture_show::<V>),
        capture_write: Some(capture_write::<V>),
    };
    // SAFETY: plain registration of functions of this module (copied by the C side), which
    // outlive every file (removed with their devices before module exit's `exit`).
    unsafe { bindings::rrxe_glue_debugfs_init(&fns) }
}

/// Removes `rrxe/` (module exit, once every device is gone).
pub(super) fn exit() {
    // SAFETY: after init; the device directories were removed with their devices.
    unsafe { bindings::rrxe_glue_debugfs_exit() }
}

/// A read's device and output buffer.
///
/// # Safety
/// `ib` is the device whose directory holds the file (DebugDir::create), alive while the
/// file exists; `buf` is the C side's kmalloc'd buffer of `len` bytes, ours for the call.
unsafe fn show_args<'a>(
    ib: *mut bindings::ib_device,
    buf: *mut kernel::ffi::c_char,
    len: usize,
) -> (&'a IbDev, &'a mut [u8]) {
    // SAFETY: the caller's contract.
    unsafe {
        (
            IbDev::from_raw(ib),
            core::slice::from_raw_parts_mut(buf.cast::<u8>(), len),
        )
    }
}

/// A write's device and text.
///
/// # Safety
/// As for [`show_args`]; `buf` holds the `len` bytes copied from the writer.
unsafe fn write_args<'a>(
    ib: *mut bindings::ib_device,
    buf: *const kernel::ffi::c_char,
    len: usize,
) -> (&'a IbDev, &'a [u8]) {
    // SAFETY: the caller's contract.
    unsafe {
        (
            IbDev::from_raw(ib),
            core::slice::from_raw_parts(buf.cast::<u8>(), len),
        )
    }
}

/// A write's answer to the C side: 0 or a negative errno.
fn write_result(r: kernel::error::Result) -> kernel::ffi::c_int {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Reads `faults`: the driver writes the text into `buf`.
unsafe extern "C" fn faults_show<V: Verbs>(
    ib: *mut bindings::ib_device,
    buf: *mut kernel::ffi::c_char,
    len: usize,
) -> usize {
    // SAFETY: the C side calls with the file's device and its buffer (show_args).
    let (dev, out) = unsafe { show_args(ib, buf, len) };
    V::faults_show(dev, out).min(len)
}

/// Writes `faults`: the driver takes the text; 0 or a negative errno.
unsafe extern "C" fn faults_write<V: Verbs>(
    ib: *mut bindings::ib_device,
    buf: *const kernel::ffi::c_char,
    len: usize,
) -> kernel::ffi::c_int {
    // SAFETY: the C side calls with the file's device and the written bytes (write_args).
    let (dev, text) = unsafe { write_args(ib, buf, len) };
    write_result(V::faults_write(dev, text))
}

/// Reads `capture`: the capture netdev's name.
unsafe extern "C" fn capture_show<V: Verbs>(
    ib: *mut bindings::ib_device,
    buf: *mut kernel::ffi::c_char,
    len: usize,
) -> usize {
    // SAFETY: as in faults_show.
    let (dev, out) = unsafe { show_args(ib, buf, len) };
    V::capture(dev).show(out).min(len)
}

/// Writes `capture`: `1` creates the capture netdev, `0` removes it; 0 or a negative errno.
unsafe extern "C" fn capture_write<V: Verbs>(
    ib: *mut bindings::ib_device,
    buf: *const kernel::ffi::c_char,
    len: usize,
) -> kernel::ffi::c_int {
    // SAFETY: as in faults_write.
    let (dev, text) = unsafe { write_args(ib, buf, len) };
    write_result(V::capture(dev).write(dev, text))
}
