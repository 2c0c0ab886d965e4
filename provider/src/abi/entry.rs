// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The provider's entry points: the `verbs_device_ops` registered with libibverbs from an
//! ELF constructor (what rdma-core's `PROVIDER_DRIVER()` does), and the `extern "C"`
//! callbacks libibverbs makes, each a thin shell that converts pointers and calls the safe
//! logic in `crate::device` / `crate::context`.

use core::ffi::{c_int, c_void, CStr};
use core::mem::{offset_of, size_of};
use core::ptr;
use core::sync::atomic::{AtomicBool, Ordering};
use std::os::unix::ffi::OsStrExt;

use super::driver::{
    verbs_context_ops, verbs_device, verbs_device_ops, verbs_match_ent,
    verbs_match_ent__bindgen_ty_1, verbs_sysfs_dev, RDMA_DRIVER_UNKNOWN, VERBS_LOG_ERR,
    VERBS_MATCH_SENTINEL,
};
use super::ffi;
use super::objects;
use super::rrxe::{urrxe_get_context, urrxe_get_context_resp};
use super::uverbs::{ib_uverbs_ex_query_device_resp, ibv_query_port};
use super::verbs::{
    ibv_context, ibv_device, ibv_device_attr, ibv_device_attr_ex, ibv_port_attr,
    ibv_query_device_ex_input, verbs_context,
};
use crate::context::{self, Context};
use crate::device::{self, Device};

/// The provider's device: libibverbs' `verbs_device` first (libibverbs hands us back
/// `&vdev` / `&vdev.device`), then ours.
#[repr(C)]
pub struct RrxeDevice {
    pub vdev: verbs_device,
    pub dev: Device,
}

/// The provider's context, allocated by `_verbs_init_and_alloc_context` (calloc) and freed
/// by [`rrxe_free_context`] (free). `vctx` is first, like every rdma-core provider's.
#[repr(C)]
pub struct RrxeContext {
    pub vctx: verbs_context,
    /// Written once GET_CONTEXT succeeded; dropped in [`rrxe_free_context`].
    pub ctx: Context,
}

/// Makes a table of raw pointers usable as a `static` (they only point at other statics).
#[repr(transparent)]
pub struct SyncStatic<T>(pub T);
// SAFETY: the wrapped values are immutable and only point at immutable statics ('static
// string literals and tables); sharing them between threads is sound.
unsafe impl<T> Sync for SyncStatic<T> {}

/// An empty match table (`{ {} }`): libibverbs runs its table matches (driver id, name,
/// modalias) and then calls [`rrxe_match_device`], which alone decides. No entry could
/// help: rrxe.ko reports `RDMA_DRIVER_UNKNOWN`, which libibverbs never matches by id, its
/// devices have no parent (no modalias), and a name match (`VERBS_NAME_MATCH("rrxe")`, used
/// before) loses every device given another name. The table stays non-NULL for libibverbs
/// versions that walk it unconditionally.
pub static MATCH_TABLE: SyncStatic<[verbs_match_ent; 1]> = SyncStatic([verbs_match_ent {
    driver_data: ptr::null_mut(),
    u: verbs_match_ent__bindgen_ty_1 { driver_id: 0 },
    vendor: 0,
    device: 0,
    kind: VERBS_MATCH_SENTINEL as u8,
}]);

/// What the provider registers with libibverbs. Exported under the name rdma-core's
/// `PROVIDER_DRIVER(rrxe, ...)` gives it, `verbs_provider_rrxe`.
#[no_mangle]
pub static verbs_provider_rrxe: SyncStatic<verbs_device_ops> = SyncStatic(verbs_device_ops {
    name: device::PROVIDER_NAME.as_ptr(),
    match_min_abi_version: device::MIN_ABI_VERSION,
    match_max_abi_version: device::MAX_ABI_VERSION,
    match_table: MATCH_TABLE.0.as_ptr(),
    static_providers: ptr::null_mut(),
    match_device: Some(rrxe_match_device),
    alloc_context: Some(rrxe_alloc_context),
    import_context: None,
    alloc_device: Some(rrxe_alloc_device),
    uninit_device: Some(rrxe_uninit_device),
});

/// All ops NULL.
// SAFETY: every field of `verbs_context_ops` is an `Option` of a function pointer, for which
// all-zero bytes are `None`.
const NO_OPS: verbs_context_ops = unsafe { core::mem::zeroed() };

/// The context ops; everything else stays libibverbs' dummy (EOPNOTSUPP).
pub static CONTEXT_OPS: verbs_context_ops = verbs_context_ops {
    query_device_ex: Some(rrxe_query_device_ex),
    query_port: Some(rrxe_query_port),
    free_context: Some(rrxe_free_context),
    alloc_pd: Some(objects::pd::alloc_pd),
    dealloc_pd: Some(objects::pd::dealloc_pd),
    reg_mr: Some(objects::mr::reg_mr),
    advise_mr: Some(objects::mr::advise_mr),
    reg_dmabuf_mr: Some(objects::mr::reg_dmabuf_mr),
    dereg_mr: Some(objects::mr::dereg_mr),
    create_cq: Some(objects::cq::create_cq),
    create_cq_ex: Some(objects::cq::create_cq_ex),
    resize_cq: Some(objects::cq::resize_cq),
    rereg_mr: Some(objects::mr::rereg_mr),
    poll_cq: Some(objects::cq::poll_cq),
    req_notify_cq: Some(objects::cq::req_notify_cq),
    destroy_cq: Some(objects::cq::destroy_cq),
    create_qp: Some(objects::qp::create_qp),
    create_qp_ex: Some(objects::qp::create_qp_ex),
    query_qp: Some(objects::qp::query_qp),
    modify_qp: Some(objects::qp::modify_qp),
    destroy_qp: Some(objects::qp::destroy_qp),
    attach_mcast: Some(objects::qp::attach_mcast),
    detach_mcast: Some(objects::qp::detach_mcast),
    post_send: Some(objects::post::post_send),
    post_recv: Some(objects::post::post_recv),
    create_srq: Some(objects::srq::create_srq),
    modify_srq: Some(objects::srq::modify_srq),
    query_srq: Some(objects::srq::query_srq),
    destroy_srq: Some(objects::srq::destroy_srq),
    post_srq_recv: Some(objects::srq::post_srq_recv),
    create_srq_ex: Some(objects::srq::create_srq_ex),
    get_srq_num: Some(objects::srq::get_srq_num),
    open_xrcd: Some(objects::xrcd::open_xrcd),
    close_xrcd: Some(objects::xrcd::close_xrcd),
    open_qp: Some(objects::qp::open_qp),
    create_ah: Some(objects::ah::create_ah),
    destroy_ah: Some(objects::ah::destroy_ah),
    alloc_mw: Some(objects::mw::alloc_mw),
    dealloc_mw: Some(objects::mw::dealloc_mw),
    bind_mw: Some(objects::mw::bind_mw),
    ..NO_OPS
};

/// Set once the constructor has registered the provider.
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// Whether this library's constructor has run and registered the provider.
pub fn registered() -> bool {
    REGISTERED.load(Ordering::Acquire)
}

/// `PROVIDER_DRIVER()`'s constructor: runs when libibverbs dlopen()s the library (and at
/// start-up of any program the rlib is linked into, e.g. the unit tests).
extern "C" fn rrxe_register_driver() {
    // SAFETY: `verbs_provider_rrxe` is a 'static, fully initialised `verbs_device_ops` whose
    // pointers reference 'static data; libibverbs keeps the pointer for the process' life.
    unsafe { ffi::verbs_register_driver(&verbs_provider_rrxe.0) };
    REGISTERED.store(true, Ordering::Release);
    if std::env::var_os("RRXE_PROVIDER_DEBUG").is_some() {
        eprintln!(
            "rrxe: provider registered with libibverbs (verbs_register_driver_{}, rdma-core {})",
            super::sys::RRXE_IBVERBS_PABI,
            super::sys::RRXE_RDMA_CORE_VERSION
        );
    }
}

#[used]
#[link_section = ".init_array"]
static RRXE_REGISTER_DRIVER: extern "C" fn() = rrxe_register_driver;

/// Sets the calling thread's errno.
fn set_errno(err: c_int) {
    // SAFETY: __errno_location() returns the calling thread's errno slot, always valid.
    unsafe { *libc::__errno_location() = err };
}

/// Logs through libibverbs' logger (shown with `VERBS_LOG_LEVEL>=1`).
///
/// # Safety
/// `vctx` must point to an initialised `verbs_context`.
unsafe fn log_err(vctx: *mut verbs_context, msg: &str) {
    let Ok(msg) = std::ffi::CString::new(format!("rrxe: {msg}\n")) else {
        return;
    };
    // SAFETY: the caller guarantees `vctx`; the format is a literal "%s" with one
    // NUL-terminated string argument that outlives the call.
    unsafe { ffi::__verbs_log(vctx, VERBS_LOG_ERR, c"%s".as_ptr(), msg.as_ptr()) };
}

/// `verbs_device_ops.match_device`: whether the device libibverbs found in sysfs is an rrxe
/// device, by its `hca_type` attribute (see [`device::is_rrxe_device`]). libibverbs (init.c
/// `match_device()`, rdma-core 44 and 56 alike) calls it for every device not claimed by
/// driver id, after its table match, and takes its answer over the table's.
unsafe extern "C" fn rrxe_match_device(sysfs_dev: *mut verbs_sysfs_dev) -> bool {
    // SAFETY: libibverbs passes a valid sysfs device that it owns for this call; only the
    // path array is read.
    let path = unsafe { &(*sysfs_dev).ibdev_path };
    let bytes: Vec<u8> = path.iter().map(|&c| c as u8).collect();
    let Ok(path) = CStr::from_bytes_until_nul(&bytes) else {
        return false;
    };
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path.to_bytes()));
    let ours = device::is_rrxe_device(path);
    if std::env::var_os("RRXE_PROVIDER_DEBUG").is_some() {
        // The provider's version, as the module's (modinfo, ibv_devinfo's fw_ver).
        eprintln!(
            "rrxe: librrxe {}: match_device {}: {}",
            env!("CARGO_PKG_VERSION"),
            path.display(),
            ours
        );
    }
    ours
}

/// `verbs_device_ops.alloc_device`: a device libibverbs matched to us.
unsafe extern "C" fn rrxe_alloc_device(sysfs_dev: *mut verbs_sysfs_dev) -> *mut verbs_device {
    // SAFETY: libibverbs passes a valid sysfs device that it owns for this call.
    let abi_ver = unsafe { (*sysfs_dev).abi_ver };
    let Ok(dev) = Device::new(abi_ver) else {
        set_errno(libc::EPROTO);
        return ptr::null_mut();
    };
    let rdev = Box::new(RrxeDevice {
        // SAFETY: `verbs_device` is plain data (integers, arrays, raw and optional function
        // pointers), for which all-zero is valid; libibverbs expects it zeroed (calloc).
        vdev: unsafe { core::mem::zeroed() },
        dev,
    });
    let rdev = Box::into_raw(rdev);
    // SAFETY: `rdev` is a valid, uniquely owned allocation; `vdev` is its first field.
    unsafe { ptr::addr_of_mut!((*rdev).vdev) }
}

/// `verbs_device_ops.uninit_device`: the last reference to the device is gone.
unsafe extern "C" fn rrxe_uninit_device(vdev: *mut verbs_device) {
    // SAFETY: every `verbs_device` handed to libibverbs was `vdev`, the first field of a
    // `Box<RrxeDevice>` leaked in `rrxe_alloc_device`; libibverbs calls this once.
    drop(unsafe { Box::from_raw(vdev.cast::<RrxeDevice>()) });
}

/// `verbs_device_ops.alloc_context`: `ibv_open_device`.
unsafe extern "C" fn rrxe_alloc_context(
    ibdev: *mut ibv_device,
    cmd_fd: c_int,
    _private_data: *mut c_void,
) -> *mut verbs_context {
    // What verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, vctx, RDMA_DRIVER_UNKNOWN)
    // expands to: the struct size and the member's offset passed as a pointer.
    // SAFETY: `ibdev` and `cmd_fd` come straight from libibverbs; size and offset describe
    // `RrxeContext`, whose `vctx` is a `verbs_context`.
    let rctx = unsafe {
        ffi::_verbs_init_and_alloc_context(
            ibdev,
            cmd_fd,
            size_of::<RrxeContext>(),
            ptr::without_provenance_mut(offset_of!(RrxeContext, vctx)),
            RDMA_DRIVER_UNKNOWN,
        )
    }
    .cast::<RrxeContext>();
    if rctx.is_null() {
        return ptr::null_mut(); // libibverbs set errno and closed cmd_fd
    }
    // SAFETY: `rctx` is a zeroed allocation of `RrxeContext` with an initialised `vctx`.
    let vctx = unsafe { ptr::addr_of_mut!((*rctx).vctx) };

    let mut cmd = urrxe_get_context::new();
    let mut resp = urrxe_get_context_resp::new();
    // The pointers are taken from the whole structs: libibverbs reads/writes the driver
    // payload behind the core part (kern-abi.h's DECLARE_DRV_CMD layout).
    // SAFETY: `vctx` is initialised; `cmd`/`resp` are live buffers of the sizes passed.
    let ret = unsafe {
        ffi::cmd_get_context(
            vctx,
            ptr::addr_of_mut!(cmd).cast(),
            urrxe_get_context::size(),
            ptr::addr_of_mut!(resp).cast(),
            urrxe_get_context_resp::size(),
        )
    };
    let result = if ret != 0 {
        Err(ret)
    } else {
        Context::from_ucontext_resp(&resp.drv_payload).map_err(|e| {
            // SAFETY: `vctx` is initialised.
            unsafe { log_err(vctx, &format!("GET_CONTEXT: {e}")) };
            e.errno()
        })
    };
    match result {
        Ok(ctx) => {
            // SAFETY: `ctx` is uninitialised (zeroed) memory inside the live allocation;
            // `write` does not drop the old bytes. `CONTEXT_OPS` is 'static.
            unsafe {
                ptr::addr_of_mut!((*rctx).ctx).write(ctx);
                ffi::verbs_set_ops(vctx, &CONTEXT_OPS);
            }
            vctx
        }
        Err(err) => {
            // SAFETY: undo `_verbs_init_and_alloc_context` (closes cmd_fd, drops the device
            // reference), then free its calloc'd block; `ctx` was never written, so there is
            // nothing to drop.
            unsafe {
                ffi::verbs_uninit_context(vctx);
                libc::free(rctx.cast());
            }
            set_errno(err);
            ptr::null_mut()
        }
    }
}

/// The `RrxeContext` an `ibv_context` of ours belongs to.
///
/// # Safety
/// `ibctx` must be the `vctx.context` of a live `RrxeContext` (every context libibverbs
/// hands to our ops is one we created in `rrxe_alloc_context`).
unsafe fn to_rctx(ibctx: *mut ibv_context) -> *mut RrxeContext {
    // SAFETY: per the contract, subtracting the field offset stays inside the allocation.
    unsafe {
        ibctx
            .byte_sub(offset_of!(RrxeContext, vctx) + offset_of!(verbs_context, context))
            .cast()
    }
}

/// `free_context`: `ibv_close_device`.
unsafe extern "C" fn rrxe_free_context(ibctx: *mut ibv_context) {
    // SAFETY: `ibctx` is one of our contexts (see `to_rctx`), fully set up since only a
    // successful `rrxe_alloc_context` installs this op; libibverbs calls it once.
    unsafe {
        let rctx = to_rctx(ibctx);
        ptr::drop_in_place(ptr::addr_of_mut!((*rctx).ctx));
        ffi::verbs_uninit_context(ptr::addr_of_mut!((*rctx).vctx));
        libc::free(rctx.cast());
    }
}

/// `query_device_ex` (also serves `ibv_query_device`, with `attr_size` of a bare
/// `ibv_device_attr`).
unsafe extern "C" fn rrxe_query_device_ex(
    ibctx: *mut ibv_context,
    input: *const ibv_query_device_ex_input,
    attr: *mut ibv_device_attr_ex,
    attr_size: usize,
) -> c_int {
    let mut resp = ib_uverbs_ex_query_device_resp::default();
    let mut resp_size = size_of::<ib_uverbs_ex_query_device_resp>();
    // SAFETY: all pointers come from libibverbs as given; `resp`/`resp_size` are live.
    let ret = unsafe {
        ffi::ibv_cmd_query_device_any(ibctx, input, attr, attr_size, &mut resp, &mut resp_size)
    };
    if ret != 0 {
        return ret;
    }
    let fw_ver = context::fw_ver_string(resp.base.fw_ver);
    // SAFETY: ibv_cmd_query_device_any succeeded, so `attr_size >= sizeof(ibv_device_attr)`
    // and `attr` points to at least that many writable bytes; `orig_attr` is at offset 0.
    // Only the `fw_ver` array is borrowed, never the (possibly shorter) whole struct.
    let fw = unsafe { &mut *ptr::addr_of_mut!((*attr.cast::<ibv_device_attr>()).fw_ver) };
    context::copy_c_string(fw, &fw_ver);
    0
}

/// `query_port`: `ibv_query_port` (libibverbs supplies a full-size `ibv_port_attr`).
unsafe extern "C" fn rrxe_query_port(
    ibctx: *mut ibv_context,
    port_num: u8,
    attr: *mut ibv_port_attr,
) -> c_int {
    let mut cmd = ibv_query_port::default();
    // SAFETY: pointers come from libibverbs as given; `cmd` is a live buffer of that size.
    unsafe { ffi::ibv_cmd_query_port(ibctx, port_num, attr, &mut cmd, size_of::<ibv_query_port>()) }
}

/// The provider name as a Rust string (for messages and tests).
pub fn provider_name() -> &'static str {
    let name: &CStr = device::PROVIDER_NAME;
    name.to_str().unwrap_or("rrxe")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructor_registered_the_provider() {
        // The unit-test binary links this crate, so its .init_array entry ran at start-up.
        assert!(registered());
    }

    #[test]
    fn ops_describe_rrxe() {
        let ops = &verbs_provider_rrxe.0;
        // SAFETY: `name` points at a 'static NUL-terminated literal.
        let name = unsafe { CStr::from_ptr(ops.name) };
        assert_eq!(name.to_str(), Ok("rrxe"));
        assert_eq!(provider_name(), "rrxe");
        assert_eq!(
            (ops.match_min_abi_version, ops.match_max_abi_version),
            (1, 1)
        );
        assert!(ops.alloc_device.is_some() && ops.uninit_device.is_some());
        assert!(ops.alloc_context.is_some());
        assert!(ops.import_context.is_none() && ops.match_device.is_some());
        // Only the sentinel: the match is `match_device`'s alone.
        assert_eq!(MATCH_TABLE.0.len(), 1);
        assert_eq!(u32::from(MATCH_TABLE.0[0].kind), VERBS_MATCH_SENTINEL);
        assert_eq!(ops.match_table, MATCH_TABLE.0.as_ptr());
    }

    #[test]
    fn context_ops_cover_the_data_path() {
        let o = &CONTEXT_OPS;
        assert!(o.query_device_ex.is_some() && o.query_port.is_some());
        assert!(o.free_context.is_some());
        assert!(o.alloc_pd.is_some() && o.reg_mr.is_some() && o.create_cq.is_some());
        assert!(o.reg_dmabuf_mr.is_some() && o.dereg_mr.is_some());
        assert!(o.create_qp.is_some() && o.post_send.is_some() && o.post_recv.is_some());
        assert!(o.poll_cq.is_some() && o.req_notify_cq.is_some());
        assert!(o.create_srq.is_some() && o.post_srq_recv.is_some() && o.create_ah.is_some());
        assert!(o.open_xrcd.is_some() && o.close_xrcd.is_some() && o.open_qp.is_some());
        assert!(o.create_srq_ex.is_some() && o.get_srq_num.is_some());
    }

    #[test]
    fn get_context_command_sizes() {
        // The kernel sees no udata in and exactly 8 bytes of udata out.
        assert_eq!(urrxe_get_context::size(), 16);
        assert_eq!(urrxe_get_context_resp::size(), 16);
        assert_eq!(
            offset_of!(urrxe_get_context_resp, drv_payload),
            size_of::<super::super::uverbs::ib_uverbs_get_context_resp>()
        );
    }

    #[test]
    fn match_device_reads_hca_type_under_ibdev_path() {
        let dir = std::env::temp_dir().join(format!("rrxe-entry-match-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // SAFETY: a zeroed sysfs device is plain data; only `ibdev_path` is read.
        let mut sysfs: verbs_sysfs_dev = unsafe { core::mem::zeroed() };
        let p = dir.as_os_str().as_bytes();
        for (d, s) in sysfs.ibdev_path.iter_mut().zip(p) {
            *d = *s as core::ffi::c_char;
        }
        // SAFETY: `sysfs` is a live, valid `verbs_sysfs_dev` with a NUL-terminated path.
        let call = |s: &mut verbs_sysfs_dev| unsafe { rrxe_match_device(s) };
        assert!(!call(&mut sysfs), "no hca_type: not ours");
        std::fs::write(dir.join("hca_type"), b"rrxe\n").unwrap();
        assert!(call(&mut sysfs));
        std::fs::write(dir.join("hca_type"), b"MT4115\n").unwrap();
        assert!(!call(&mut sysfs));
        // A path filling the whole array (no NUL) is refused, not read past.
        sysfs.ibdev_path.fill(b'a' as core::ffi::c_char);
        assert!(!call(&mut sysfs));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn device_alloc_and_uninit_roundtrip() {
        // SAFETY: a zeroed sysfs device is plain data; only `abi_ver` is read.
        let mut sysfs: verbs_sysfs_dev = unsafe { core::mem::zeroed() };
        sysfs.abi_ver = 1;
        // SAFETY: `sysfs` is a live, valid `verbs_sysfs_dev`.
        let vdev = unsafe { rrxe_alloc_device(&mut sysfs) };
        assert!(!vdev.is_null());
        // SAFETY: `vdev` came from rrxe_alloc_device and is released exactly once.
        unsafe {
            assert_eq!((*vdev.cast::<RrxeDevice>()).dev.abi_version, 1);
            rrxe_uninit_device(vdev);
        }
        sysfs.abi_ver = 2;
        // SAFETY: as above.
        assert!(unsafe { rrxe_alloc_device(&mut sysfs) }.is_null());
    }
}
