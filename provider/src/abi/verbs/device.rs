//! The device, its context and their attributes.

use super::*;

/// `enum ibv_node_type` (C enums are `int` on this ABI).
pub type ibv_node_type = c_int;
/// `enum ibv_transport_type`.
pub type ibv_transport_type = c_int;

/// `struct _ibv_device_ops`: two slots libibverbs asserts are NULL.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct _ibv_device_ops {
    pub _dummy1: OpaqueFn,
    pub _dummy2: OpaqueFn,
}

/// `struct ibv_device`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_device {
    pub _ops: _ibv_device_ops,
    pub node_type: ibv_node_type,
    pub transport_type: ibv_transport_type,
    pub name: [c_char; IBV_SYSFS_NAME_MAX],
    pub dev_name: [c_char; IBV_SYSFS_NAME_MAX],
    pub dev_path: [c_char; IBV_SYSFS_PATH_MAX],
    pub ibdev_path: [c_char; IBV_SYSFS_PATH_MAX],
}

/// `struct ibv_context_ops`: the legacy op table inside `ibv_context`. libibverbs
/// (`verbs_set_ops`) fills it; the provider never writes it directly.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_context_ops {
    pub _compat_query_device: OpaqueFn,
    pub _compat_query_port: OpaqueFn,
    pub _compat_alloc_pd: OpaqueFn,
    pub _compat_dealloc_pd: OpaqueFn,
    pub _compat_reg_mr: OpaqueFn,
    pub _compat_rereg_mr: OpaqueFn,
    pub _compat_dereg_mr: OpaqueFn,
    pub alloc_mw: OpaqueFn,
    pub bind_mw: OpaqueFn,
    pub dealloc_mw: OpaqueFn,
    pub _compat_create_cq: OpaqueFn,
    pub poll_cq: OpaqueFn,
    pub req_notify_cq: OpaqueFn,
    pub _compat_cq_event: OpaqueFn,
    pub _compat_resize_cq: OpaqueFn,
    pub _compat_destroy_cq: OpaqueFn,
    pub _compat_create_srq: OpaqueFn,
    pub _compat_modify_srq: OpaqueFn,
    pub _compat_query_srq: OpaqueFn,
    pub _compat_destroy_srq: OpaqueFn,
    pub post_srq_recv: OpaqueFn,
    pub _compat_create_qp: OpaqueFn,
    pub _compat_query_qp: OpaqueFn,
    pub _compat_modify_qp: OpaqueFn,
    pub _compat_destroy_qp: OpaqueFn,
    pub post_send: OpaqueFn,
    pub post_recv: OpaqueFn,
    pub _compat_create_ah: OpaqueFn,
    pub _compat_destroy_ah: OpaqueFn,
    pub _compat_attach_mcast: OpaqueFn,
    pub _compat_detach_mcast: OpaqueFn,
    pub _compat_async_event: OpaqueFn,
}

/// glibc x86_64 `pthread_mutex_t` (40 bytes, 8-aligned). libibverbs initialises it.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug)]
pub struct pthread_mutex_t {
    pub opaque: [u8; 40],
}

/// `struct ibv_context`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_context {
    pub device: *mut ibv_device,
    pub ops: ibv_context_ops,
    pub cmd_fd: c_int,
    pub async_fd: c_int,
    pub num_comp_vectors: c_int,
    pub mutex: pthread_mutex_t,
    pub abi_compat: *mut c_void,
}

/// `struct verbs_context`: the extended context; `context` must be last. The provider's own
/// context struct embeds it (see `abi::entry::RrxeContext`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct verbs_context {
    pub query_port: OpaqueFn,
    pub advise_mr: OpaqueFn,
    pub alloc_null_mr: OpaqueFn,
    pub read_counters: OpaqueFn,
    pub attach_counters_point_flow: OpaqueFn,
    pub create_counters: OpaqueFn,
    pub destroy_counters: OpaqueFn,
    pub reg_dm_mr: OpaqueFn,
    pub alloc_dm: OpaqueFn,
    pub free_dm: OpaqueFn,
    pub modify_flow_action_esp: OpaqueFn,
    pub destroy_flow_action: OpaqueFn,
    pub create_flow_action_esp: OpaqueFn,
    pub modify_qp_rate_limit: OpaqueFn,
    pub alloc_parent_domain: OpaqueFn,
    pub dealloc_td: OpaqueFn,
    pub alloc_td: OpaqueFn,
    pub modify_cq: OpaqueFn,
    pub post_srq_ops: OpaqueFn,
    pub destroy_rwq_ind_table: OpaqueFn,
    pub create_rwq_ind_table: OpaqueFn,
    pub destroy_wq: OpaqueFn,
    pub modify_wq: OpaqueFn,
    pub create_wq: OpaqueFn,
    pub query_rt_values: OpaqueFn,
    pub create_cq_ex: OpaqueFn,
    /// `struct verbs_ex_private *priv` (libibverbs-internal).
    pub priv_: *mut c_void,
    pub query_device_ex: OpaqueFn,
    pub ibv_destroy_flow: OpaqueFn,
    pub ABI_placeholder2: OpaqueFn,
    pub ibv_create_flow: OpaqueFn,
    pub ABI_placeholder1: OpaqueFn,
    pub open_qp: OpaqueFn,
    pub create_qp_ex: OpaqueFn,
    pub get_srq_num: OpaqueFn,
    pub create_srq_ex: OpaqueFn,
    pub open_xrcd: OpaqueFn,
    pub close_xrcd: OpaqueFn,
    pub _ABI_placeholder3: u64,
    pub sz: usize,
    pub context: ibv_context,
}

/// `struct ibv_device_attr`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_device_attr {
    pub fw_ver: [c_char; 64],
    pub node_guid: u64,
    pub sys_image_guid: u64,
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub max_qp: c_int,
    pub max_qp_wr: c_int,
    pub device_cap_flags: c_uint,
    pub max_sge: c_int,
    pub max_sge_rd: c_int,
    pub max_cq: c_int,
    pub max_cqe: c_int,
    pub max_mr: c_int,
    pub max_pd: c_int,
    pub max_qp_rd_atom: c_int,
    pub max_ee_rd_atom: c_int,
    pub max_res_rd_atom: c_int,
    pub max_qp_init_rd_atom: c_int,
    pub max_ee_init_rd_atom: c_int,
    pub atomic_cap: c_int,
    pub max_ee: c_int,
    pub max_rdd: c_int,
    pub max_mw: c_int,
    pub max_raw_ipv6_qp: c_int,
    pub max_raw_ethy_qp: c_int,
    pub max_mcast_grp: c_int,
    pub max_mcast_qp_attach: c_int,
    pub max_total_mcast_qp_attach: c_int,
    pub max_ah: c_int,
    pub max_fmr: c_int,
    pub max_map_per_fmr: c_int,
    pub max_srq: c_int,
    pub max_srq_wr: c_int,
    pub max_srq_sge: c_int,
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub phys_port_cnt: u8,
}

/// `struct ibv_query_device_ex_input`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_query_device_ex_input {
    pub comp_mask: u32,
}

/// The anonymous `per_transport_caps` of `struct ibv_odp_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_odp_per_transport_caps {
    pub rc_odp_caps: u32,
    pub uc_odp_caps: u32,
    pub ud_odp_caps: u32,
}

/// `struct ibv_odp_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_odp_caps {
    pub general_caps: u64,
    pub per_transport_caps: ibv_odp_per_transport_caps,
}

/// `struct ibv_tso_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_tso_caps {
    pub max_tso: u32,
    pub supported_qpts: u32,
}

/// `struct ibv_rss_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_rss_caps {
    pub supported_qpts: u32,
    pub max_rwq_indirection_tables: u32,
    pub max_rwq_indirection_table_size: u32,
    pub rx_hash_fields_mask: u64,
    pub rx_hash_function: u8,
}

/// `struct ibv_packet_pacing_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_packet_pacing_caps {
    pub qp_rate_limit_min: u32,
    pub qp_rate_limit_max: u32,
    pub supported_qpts: u32,
}

/// `struct ibv_tm_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_tm_caps {
    pub max_rndv_hdr_size: u32,
    pub max_num_tags: u32,
    pub flags: u32,
    pub max_ops: u32,
    pub max_sge: u32,
}

/// `struct ibv_cq_moderation_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_cq_moderation_caps {
    pub max_cq_count: u16,
    pub max_cq_period: u16,
}

/// `struct ibv_pci_atomic_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_pci_atomic_caps {
    pub fetch_add: u16,
    pub swap: u16,
    pub compare_swap: u16,
}

/// `struct ibv_device_attr_ex`. The provider may be handed a pointer to a bare
/// `ibv_device_attr` (`attr_size == size_of::<ibv_device_attr>()`), so code must never form a
/// reference to a whole `ibv_device_attr_ex` from a libibverbs pointer.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_device_attr_ex {
    pub orig_attr: ibv_device_attr,
    pub comp_mask: u32,
    pub odp_caps: ibv_odp_caps,
    pub completion_timestamp_mask: u64,
    pub hca_core_clock: u64,
    pub device_cap_flags_ex: u64,
    pub tso_caps: ibv_tso_caps,
    pub rss_caps: ibv_rss_caps,
    pub max_wq_type_rq: u32,
    pub packet_pacing_caps: ibv_packet_pacing_caps,
    pub raw_packet_caps: u32,
    pub tm_caps: ibv_tm_caps,
    pub cq_mod_caps: ibv_cq_moderation_caps,
    pub max_dm_size: u64,
    pub pci_atomic_caps: ibv_pci_atomic_caps,
    pub xrc_odp_caps: u32,
    pub phys_port_cnt_ex: u32,
}

/// `struct ibv_port_attr` as libibverbs 44 (the installed library) defines it: 52 bytes.
/// rdma-core 56.1 appends `uint32_t active_speed_ex` (56 bytes). The provider only passes the
/// library's pointer through to `ibv_cmd_query_port`, which fills whichever layout the running
/// library has, so the difference never reaches provider code.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_port_attr {
    pub state: c_int,
    pub max_mtu: c_int,
    pub active_mtu: c_int,
    pub gid_tbl_len: c_int,
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub pkey_tbl_len: u16,
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub max_vl_num: u8,
    pub sm_sl: u8,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub phys_state: u8,
    pub link_layer: u8,
    pub flags: u8,
    pub port_cap_flags2: u16,
}

/// glibc x86_64 `pthread_cond_t` (48 bytes, 8-aligned). libibverbs initialises it.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug)]
pub struct pthread_cond_t {
    pub opaque: [u8; 48],
}
