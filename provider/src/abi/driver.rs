//! `#[repr(C)]` mirrors of libibverbs' provider interface (`libibverbs/driver.h`, private ABI
//! `IBVERBS_PRIVATE_34`).
//!
//! Debian ships no driver.h, so the mirror follows rdma-core 56.1's `libibverbs/driver.h`
//! (`tests/layout.rs` checks every size and offset against it when the source is present).
//! The installed library is rdma-core 44.0 with the same private ABI name; that the layouts
//! agree was verified on the binary: 44.0's `verbs_set_ops` reads all 76 `verbs_context_ops`
//! slots at exactly the offsets 56.1's header gives, in the same order (`tests/layout.rs`,
//! `installed_verbs_set_ops_matches_mirror`, repeats the check on every host).

use core::ffi::{c_char, c_int, c_uint, c_void};

use super::verbs::{
    ibv_ah, ibv_ah_attr, ibv_comp_channel, ibv_context, ibv_cq, ibv_device, ibv_device_attr_ex,
    ibv_mr, ibv_node_type, ibv_pd, ibv_port_attr, ibv_qp, ibv_qp_attr, ibv_qp_init_attr,
    ibv_qp_open_attr, ibv_query_device_ex_input, ibv_recv_wr, ibv_send_wr, ibv_srq, ibv_srq_attr,
    ibv_srq_init_attr, ibv_srq_init_attr_ex, ibv_wc, ibv_xrcd, ibv_xrcd_init_attr, verbs_context,
    OpaqueFn, IBV_SYSFS_NAME_MAX, IBV_SYSFS_PATH_MAX,
};

/// `VERBS_MATCH_SENTINEL`: ends a match table.
pub const VERBS_MATCH_SENTINEL: u8 = 0;
/// `VERBS_MATCH_MODALIAS`: `u.modalias` is an fnmatch(3) pattern.
pub const VERBS_MATCH_MODALIAS: u8 = 2;
/// `VERBS_MATCH_DRIVER_ID`: `u.driver_id` is an `enum rdma_driver_id`.
pub const VERBS_MATCH_DRIVER_ID: u8 = 3;

/// `RDMA_DRIVER_UNKNOWN` of `enum rdma_driver_id`: what rrxe.ko reports.
pub const RDMA_DRIVER_UNKNOWN: u32 = 0;

/// `VERBS_LOG_ERR` for `__verbs_log`.
pub const VERBS_LOG_ERR: u32 = 1;

/// The anonymous union `u` of `struct verbs_match_ent`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union verbs_match_ent_u {
    pub modalias: *const c_char,
    pub driver_id: u64,
}

/// `struct verbs_match_ent`: one entry of a provider's match table.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct verbs_match_ent {
    pub driver_data: *mut c_void,
    pub u: verbs_match_ent_u,
    pub vendor: u16,
    pub device: u16,
    pub kind: u8,
}

/// ccan `struct list_node`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct list_node {
    pub next: *mut list_node,
    pub prev: *mut list_node,
}

/// glibc x86_64 `struct timespec`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct timespec {
    pub tv_sec: i64,
    pub tv_nsec: i64,
}

/// `struct verbs_sysfs_dev`: an rdma device libibverbs found (owned by libibverbs).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct verbs_sysfs_dev {
    pub entry: list_node,
    pub provider_data: *mut c_void,
    pub match_: *const verbs_match_ent,
    pub flags: c_uint,
    pub sysfs_name: [c_char; IBV_SYSFS_NAME_MAX],
    pub sysfs_cdev: u64,
    pub ibdev_name: [c_char; IBV_SYSFS_NAME_MAX],
    pub ibdev_path: [c_char; IBV_SYSFS_PATH_MAX],
    pub modalias: [c_char; 512],
    pub node_guid: u64,
    pub driver_id: u32,
    pub node_type: ibv_node_type,
    pub ibdev_idx: c_int,
    pub num_ports: u32,
    pub abi_ver: u32,
    pub time_created: timespec,
}

/// `struct verbs_device_ops`: what a provider registers with `verbs_register_driver_34`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct verbs_device_ops {
    pub name: *const c_char,
    pub match_min_abi_version: u32,
    pub match_max_abi_version: u32,
    pub match_table: *const verbs_match_ent,
    pub static_providers: *const *const verbs_device_ops,
    pub match_device: Option<unsafe extern "C" fn(*mut verbs_sysfs_dev) -> bool>,
    pub alloc_context:
        Option<unsafe extern "C" fn(*mut ibv_device, c_int, *mut c_void) -> *mut verbs_context>,
    pub import_context: Option<unsafe extern "C" fn(*mut ibv_device, c_int) -> *mut verbs_context>,
    pub alloc_device: Option<unsafe extern "C" fn(*mut verbs_sysfs_dev) -> *mut verbs_device>,
    pub uninit_device: Option<unsafe extern "C" fn(*mut verbs_device)>,
}

/// `struct verbs_device`: must start the provider's device struct. libibverbs owns
/// `refcount`, `entry`, `sysfs` and `core_support`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct verbs_device {
    pub device: ibv_device,
    pub ops: *const verbs_device_ops,
    /// C11 `atomic_int`; only libibverbs touches it.
    pub refcount: c_int,
    pub entry: list_node,
    pub sysfs: *mut verbs_sysfs_dev,
    pub core_support: u64,
}

/// `struct verbs_context_ops`: every op a provider can supply (NULL: libibverbs' dummy op,
/// which fails with EOPNOTSUPP). Kept in driver.h's (sorted) order.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct verbs_context_ops {
    pub advise_mr: Option<
        unsafe extern "C" fn(
            *mut ibv_pd,
            c_int, // enum ibv_advise_mr_advice
            u32,
            *mut super::verbs::ibv_sge,
            u32,
        ) -> c_int,
    >,
    pub alloc_dm: OpaqueFn,
    pub alloc_mw: Option<unsafe extern "C" fn(*mut ibv_pd, c_int) -> *mut super::verbs::ibv_mw>,
    pub alloc_null_mr: OpaqueFn,
    pub alloc_parent_domain: OpaqueFn,
    pub alloc_pd: Option<unsafe extern "C" fn(*mut ibv_context) -> *mut ibv_pd>,
    pub alloc_td: OpaqueFn,
    pub async_event: OpaqueFn,
    pub attach_counters_point_flow: OpaqueFn,
    pub attach_mcast: OpaqueFn,
    pub bind_mw: Option<
        unsafe extern "C" fn(
            *mut ibv_qp,
            *mut super::verbs::ibv_mw,
            *mut super::verbs::ibv_mw_bind,
        ) -> c_int,
    >,
    pub close_xrcd: Option<unsafe extern "C" fn(*mut ibv_xrcd) -> c_int>,
    pub cq_event: OpaqueFn,
    pub create_ah: Option<unsafe extern "C" fn(*mut ibv_pd, *mut ibv_ah_attr) -> *mut ibv_ah>,
    pub create_counters: OpaqueFn,
    pub create_cq: Option<
        unsafe extern "C" fn(*mut ibv_context, c_int, *mut ibv_comp_channel, c_int) -> *mut ibv_cq,
    >,
    pub create_cq_ex: Option<
        unsafe extern "C" fn(
            *mut ibv_context,
            *mut super::verbs::ibv_cq_init_attr_ex,
        ) -> *mut super::verbs::ibv_cq_ex,
    >,
    pub create_flow: OpaqueFn,
    pub create_flow_action_esp: OpaqueFn,
    pub create_qp: Option<unsafe extern "C" fn(*mut ibv_pd, *mut ibv_qp_init_attr) -> *mut ibv_qp>,
    pub create_qp_ex: Option<
        unsafe extern "C" fn(
            *mut ibv_context,
            *mut super::verbs::ibv_qp_init_attr_ex,
        ) -> *mut ibv_qp,
    >,
    pub create_rwq_ind_table: OpaqueFn,
    pub create_srq:
        Option<unsafe extern "C" fn(*mut ibv_pd, *mut ibv_srq_init_attr) -> *mut ibv_srq>,
    pub create_srq_ex:
        Option<unsafe extern "C" fn(*mut ibv_context, *mut ibv_srq_init_attr_ex) -> *mut ibv_srq>,
    pub create_wq: OpaqueFn,
    pub dealloc_mw: Option<unsafe extern "C" fn(*mut super::verbs::ibv_mw) -> c_int>,
    pub dealloc_pd: Option<unsafe extern "C" fn(*mut ibv_pd) -> c_int>,
    pub dealloc_td: OpaqueFn,
    pub dereg_mr: Option<unsafe extern "C" fn(*mut verbs_mr) -> c_int>,
    pub destroy_ah: Option<unsafe extern "C" fn(*mut ibv_ah) -> c_int>,
    pub destroy_counters: OpaqueFn,
    pub destroy_cq: Option<unsafe extern "C" fn(*mut ibv_cq) -> c_int>,
    pub destroy_flow: OpaqueFn,
    pub destroy_flow_action: OpaqueFn,
    pub destroy_qp: Option<unsafe extern "C" fn(*mut ibv_qp) -> c_int>,
    pub destroy_rwq_ind_table: OpaqueFn,
    pub destroy_srq: Option<unsafe extern "C" fn(*mut ibv_srq) -> c_int>,
    pub destroy_wq: OpaqueFn,
    pub detach_mcast: OpaqueFn,
    pub free_context: Option<unsafe extern "C" fn(*mut ibv_context)>,
    pub free_dm: OpaqueFn,
    pub get_srq_num: Option<unsafe extern "C" fn(*mut ibv_srq, *mut u32) -> c_int>,
    pub import_dm: OpaqueFn,
    pub import_mr: OpaqueFn,
    pub import_pd: OpaqueFn,
    pub modify_cq: OpaqueFn,
    pub modify_flow_action_esp: OpaqueFn,
    pub modify_qp: Option<unsafe extern "C" fn(*mut ibv_qp, *mut ibv_qp_attr, c_int) -> c_int>,
    pub modify_qp_rate_limit: OpaqueFn,
    pub modify_srq: Option<unsafe extern "C" fn(*mut ibv_srq, *mut ibv_srq_attr, c_int) -> c_int>,
    pub modify_wq: OpaqueFn,
    pub open_qp:
        Option<unsafe extern "C" fn(*mut ibv_context, *mut ibv_qp_open_attr) -> *mut ibv_qp>,
    pub open_xrcd:
        Option<unsafe extern "C" fn(*mut ibv_context, *mut ibv_xrcd_init_attr) -> *mut ibv_xrcd>,
    pub poll_cq: Option<unsafe extern "C" fn(*mut ibv_cq, c_int, *mut ibv_wc) -> c_int>,
    pub post_recv:
        Option<unsafe extern "C" fn(*mut ibv_qp, *mut ibv_recv_wr, *mut *mut ibv_recv_wr) -> c_int>,
    pub post_send:
        Option<unsafe extern "C" fn(*mut ibv_qp, *mut ibv_send_wr, *mut *mut ibv_send_wr) -> c_int>,
    pub post_srq_ops: OpaqueFn,
    pub post_srq_recv: Option<
        unsafe extern "C" fn(*mut ibv_srq, *mut ibv_recv_wr, *mut *mut ibv_recv_wr) -> c_int,
    >,
    pub query_device_ex: Option<
        unsafe extern "C" fn(
            *mut ibv_context,
            *const ibv_query_device_ex_input,
            *mut ibv_device_attr_ex,
            usize,
        ) -> c_int,
    >,
    pub query_ece: OpaqueFn,
    pub query_port: Option<unsafe extern "C" fn(*mut ibv_context, u8, *mut ibv_port_attr) -> c_int>,
    pub query_qp: Option<
        unsafe extern "C" fn(*mut ibv_qp, *mut ibv_qp_attr, c_int, *mut ibv_qp_init_attr) -> c_int,
    >,
    pub query_qp_data_in_order: OpaqueFn,
    pub query_rt_values: OpaqueFn,
    pub query_srq: Option<unsafe extern "C" fn(*mut ibv_srq, *mut ibv_srq_attr) -> c_int>,
    pub read_counters: OpaqueFn,
    pub reg_dm_mr: OpaqueFn,
    pub reg_dmabuf_mr:
        Option<unsafe extern "C" fn(*mut ibv_pd, u64, usize, u64, c_int, c_int) -> *mut ibv_mr>,
    pub reg_mr:
        Option<unsafe extern "C" fn(*mut ibv_pd, *mut c_void, usize, u64, c_int) -> *mut ibv_mr>,
    pub req_notify_cq: Option<unsafe extern "C" fn(*mut ibv_cq, c_int) -> c_int>,
    pub rereg_mr: Option<
        unsafe extern "C" fn(*mut verbs_mr, c_int, *mut ibv_pd, *mut c_void, usize, c_int) -> c_int,
    >,
    pub resize_cq: Option<unsafe extern "C" fn(*mut ibv_cq, c_int) -> c_int>,
    pub set_ece: OpaqueFn,
    pub unimport_dm: OpaqueFn,
    pub unimport_mr: OpaqueFn,
    pub unimport_pd: OpaqueFn,
}

impl verbs_context_ops {
    /// All ops NULL.
    pub const EMPTY: Self = Self {
        advise_mr: None,
        alloc_dm: None,
        alloc_mw: None,
        alloc_null_mr: None,
        alloc_parent_domain: None,
        alloc_pd: None,
        alloc_td: None,
        async_event: None,
        attach_counters_point_flow: None,
        attach_mcast: None,
        bind_mw: None,
        close_xrcd: None,
        cq_event: None,
        create_ah: None,
        create_counters: None,
        create_cq: None,
        create_cq_ex: None,
        create_flow: None,
        create_flow_action_esp: None,
        create_qp: None,
        create_qp_ex: None,
        create_rwq_ind_table: None,
        create_srq: None,
        create_srq_ex: None,
        create_wq: None,
        dealloc_mw: None,
        dealloc_pd: None,
        dealloc_td: None,
        dereg_mr: None,
        destroy_ah: None,
        destroy_counters: None,
        destroy_cq: None,
        destroy_flow: None,
        destroy_flow_action: None,
        destroy_qp: None,
        destroy_rwq_ind_table: None,
        destroy_srq: None,
        destroy_wq: None,
        detach_mcast: None,
        free_context: None,
        free_dm: None,
        get_srq_num: None,
        import_dm: None,
        import_mr: None,
        import_pd: None,
        modify_cq: None,
        modify_flow_action_esp: None,
        modify_qp: None,
        modify_qp_rate_limit: None,
        modify_srq: None,
        modify_wq: None,
        open_qp: None,
        open_xrcd: None,
        poll_cq: None,
        post_recv: None,
        post_send: None,
        post_srq_ops: None,
        post_srq_recv: None,
        query_device_ex: None,
        query_ece: None,
        query_port: None,
        query_qp: None,
        query_qp_data_in_order: None,
        query_rt_values: None,
        query_srq: None,
        read_counters: None,
        reg_dm_mr: None,
        reg_dmabuf_mr: None,
        reg_mr: None,
        req_notify_cq: None,
        rereg_mr: None,
        resize_cq: None,
        set_ece: None,
        unimport_dm: None,
        unimport_mr: None,
        unimport_pd: None,
    };
}

/// `struct verbs_mr`: `ibv_mr` plus what libibverbs records of it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct verbs_mr {
    pub ibv_mr: super::verbs::ibv_mr,
    pub mr_type: c_int,
    pub access: c_int,
}

/// `enum verbs_qp_mask`.
pub const VERBS_QP_EX: u32 = 1 << 1;

/// `struct verbs_qp`: the union of `ibv_qp` and `ibv_qp_ex` is `qp_ex` here (`ibv_qp` is
/// its first member, `qp_base`). With 44.0's `ibv_qp_ex` (see there), so `comp_mask` sits
/// where the installed libibverbs reads it.
#[repr(C)]
pub struct verbs_qp {
    pub qp_ex: super::verbs::ibv_qp_ex,
    pub comp_mask: u32,
    pub xrcd: *mut c_void,
}

/// `struct verbs_xrcd`: `ibv_xrcd` plus the uverbs handle.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct verbs_xrcd {
    pub xrcd: super::verbs::ibv_xrcd,
    pub comp_mask: u32,
    pub handle: u32,
}

/// `struct verbs_srq`: `ibv_srq` plus what libibverbs records of an extended SRQ (the
/// number of an XRC SRQ among it).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct verbs_srq {
    pub srq: super::verbs::ibv_srq,
    pub srq_type: c_int,
    pub xrcd: *mut verbs_xrcd,
    pub cq: *mut super::verbs::ibv_cq,
    pub srq_num: u32,
}

/// `struct verbs_cq`: the union of `ibv_cq` and `ibv_cq_ex` is `cq_ex` here (`ibv_cq` is
/// its prefix).
#[repr(C)]
pub struct verbs_cq {
    pub cq_ex: super::verbs::ibv_cq_ex,
}
