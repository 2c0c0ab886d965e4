//! `#[repr(C)]` mirrors of the uverbs command ABI (`<rdma/ib_user_verbs.h>`, Debian
//! bookworm's rdma-core 44.0 copy; 56.1's differs only in enum values) and of rdma-core's
//! command wrappers (`libibverbs/kern-abi.h`: `DECLARE_CMD`, `DECLARE_DRV_CMD`).

use core::mem::{align_of, size_of};

/// `struct ib_uverbs_cmd_hdr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_cmd_hdr {
    pub command: u32,
    pub in_words: u16,
    pub out_words: u16,
}

/// `struct ib_uverbs_get_context` (`driver_data[]` is the flexible tail).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_get_context {
    pub response: u64,
}

/// `struct ib_uverbs_get_context_resp`; the `__aligned_u64 driver_data[]` tail makes it
/// 8-aligned.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_get_context_resp {
    pub async_fd: u32,
    pub num_comp_vectors: u32,
}

/// `struct ib_uverbs_query_port`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_query_port {
    pub response: u64,
    pub port_num: u8,
    pub reserved: [u8; 7],
}

/// `struct ib_uverbs_query_device_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_query_device_resp {
    pub fw_ver: u64,
    pub node_guid: u64,
    pub sys_image_guid: u64,
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub max_qp: u32,
    pub max_qp_wr: u32,
    pub device_cap_flags: u32,
    pub max_sge: u32,
    pub max_sge_rd: u32,
    pub max_cq: u32,
    pub max_cqe: u32,
    pub max_mr: u32,
    pub max_pd: u32,
    pub max_qp_rd_atom: u32,
    pub max_ee_rd_atom: u32,
    pub max_res_rd_atom: u32,
    pub max_qp_init_rd_atom: u32,
    pub max_ee_init_rd_atom: u32,
    pub atomic_cap: u32,
    pub max_ee: u32,
    pub max_rdd: u32,
    pub max_mw: u32,
    pub max_raw_ipv6_qp: u32,
    pub max_raw_ethy_qp: u32,
    pub max_mcast_grp: u32,
    pub max_mcast_qp_attach: u32,
    pub max_total_mcast_qp_attach: u32,
    pub max_ah: u32,
    pub max_fmr: u32,
    pub max_map_per_fmr: u32,
    pub max_srq: u32,
    pub max_srq_wr: u32,
    pub max_srq_sge: u32,
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub phys_port_cnt: u8,
    pub reserved: [u8; 4],
}

/// The anonymous `per_transport_caps` of `struct ib_uverbs_odp_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_odp_per_transport_caps {
    pub rc_odp_caps: u32,
    pub uc_odp_caps: u32,
    pub ud_odp_caps: u32,
}

/// `struct ib_uverbs_odp_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_odp_caps {
    pub general_caps: u64,
    pub per_transport_caps: ib_uverbs_odp_per_transport_caps,
    pub reserved: u32,
}

/// `struct ib_uverbs_rss_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_rss_caps {
    pub supported_qpts: u32,
    pub max_rwq_indirection_tables: u32,
    pub max_rwq_indirection_table_size: u32,
    pub reserved: u32,
}

/// `struct ib_uverbs_tm_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_tm_caps {
    pub max_rndv_hdr_size: u32,
    pub max_num_tags: u32,
    pub flags: u32,
    pub max_ops: u32,
    pub max_sge: u32,
    pub reserved: u32,
}

/// `struct ib_uverbs_cq_moderation_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_cq_moderation_caps {
    pub max_cq_moderation_count: u16,
    pub max_cq_moderation_period: u16,
    pub reserved: u32,
}

/// `struct ib_uverbs_ex_query_device_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_ex_query_device_resp {
    pub base: ib_uverbs_query_device_resp,
    pub comp_mask: u32,
    pub response_length: u32,
    pub odp_caps: ib_uverbs_odp_caps,
    pub timestamp_mask: u64,
    pub hca_core_clock: u64,
    pub device_cap_flags_ex: u64,
    pub rss_caps: ib_uverbs_rss_caps,
    pub max_wq_type_rq: u32,
    pub raw_packet_caps: u32,
    pub tm_caps: ib_uverbs_tm_caps,
    pub cq_moderation_caps: ib_uverbs_cq_moderation_caps,
    pub max_dm_size: u64,
    pub xrc_odp_caps: u32,
    pub reserved: u32,
}

/// `struct ibv_get_context` (`DECLARE_CMD(IB_USER_VERBS_CMD_GET_CONTEXT, ...)`): header plus
/// the kernel request. libibverbs fills both; the provider only supplies the buffer.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_get_context {
    pub hdr: ib_uverbs_cmd_hdr,
    pub core_payload: ib_uverbs_get_context,
}

/// `struct ibv_query_port` (`DECLARE_CMD(IB_USER_VERBS_CMD_QUERY_PORT, ...)`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_query_port {
    pub hdr: ib_uverbs_cmd_hdr,
    pub core_payload: ib_uverbs_query_port,
}

/// `struct empty` of kern-abi.h: a driver command or response with no private data.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct empty {}

/// The alignment `DECLARE_DRV_CMD` requires of a non-extended (write) command and its
/// response (`IBV_ABI_ALIGN`; 8 for extended commands).
pub const IBV_ABI_ALIGN: usize = 4;
/// `IBV_ABI_ALIGN` of extended (`DECLARE_CMD_EX`) commands.
pub const IBV_ABI_ALIGN_EX: usize = 8;

/// `DECLARE_DRV_CMD`'s request: the core command (`IBV_ABI_REQ`) followed by the driver's
/// `drv_payload`, which travels to the kernel as udata in. [`DrvCmd::new`] checks at compile
/// time what kern-abi.h's static_asserts check: no padding between or after the two parts.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DrvCmd<C, P> {
    pub ibv_cmd: C,
    pub drv_payload: P,
}

/// `DECLARE_DRV_CMD`'s response: the core response (`IBV_KABI_RESP`) followed by the
/// driver's `drv_payload` (udata out), with the same no-padding checks as [`DrvCmd`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DrvResp<R, P> {
    pub ibv_resp: R,
    pub drv_payload: P,
}

impl<C: Default, P: Default> DrvCmd<C, P> {
    /// A zeroed command for a write (non-extended) verb.
    pub fn new() -> Self {
        const {
            assert!(
                size_of::<C>().is_multiple_of(align_of::<P>()),
                "Bad kabi req struct length"
            );
            assert!(
                size_of::<Self>() == size_of::<C>() + size_of::<P>(),
                "Bad req size"
            );
            assert!(
                size_of::<Self>().is_multiple_of(IBV_ABI_ALIGN),
                "Bad kabi req alignment"
            );
        }
        Self::default()
    }

    /// Size of the whole command, as passed to `ibv_cmd_*`'s `cmd_size`.
    pub const fn size() -> usize {
        size_of::<Self>()
    }
}

impl<R: Default, P: Default> DrvResp<R, P> {
    /// A zeroed response for a write (non-extended) verb. Zero matters: a kernel that writes
    /// less driver data than the provider expects leaves the rest zero.
    pub fn new() -> Self {
        const {
            assert!(
                size_of::<R>().is_multiple_of(align_of::<P>()),
                "Bad kabi resp struct length"
            );
            assert!(
                size_of::<Self>() == size_of::<R>() + size_of::<P>(),
                "Bad resp size"
            );
            assert!(
                size_of::<Self>().is_multiple_of(IBV_ABI_ALIGN),
                "Bad kabi resp alignment"
            );
        }
        Self::default()
    }

    /// Size of the whole response, as passed to `ibv_cmd_*`'s `resp_size`.
    pub const fn size() -> usize {
        size_of::<Self>()
    }
}

/// `struct ib_uverbs_alloc_pd_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_alloc_pd_resp {
    pub pd_handle: u32,
}

/// `struct ib_uverbs_reg_mr_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_reg_mr_resp {
    pub mr_handle: u32,
    pub lkey: u32,
    pub rkey: u32,
}

/// `struct ib_uverbs_create_cq_resp` (8-aligned by its `__aligned_u64 driver_data[]`).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_create_cq_resp {
    pub cq_handle: u32,
    pub cqe: u32,
}

/// `struct ib_uverbs_resize_cq_resp` (8-aligned like the create response).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_resize_cq_resp {
    pub cqe: u32,
    pub reserved: u32,
}

/// `struct ib_uverbs_create_qp_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_create_qp_resp {
    pub qp_handle: u32,
    pub qpn: u32,
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
    pub reserved: u32,
}

/// `struct ib_uverbs_create_srq_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_create_srq_resp {
    pub srq_handle: u32,
    pub max_wr: u32,
    pub max_sge: u32,
    pub srqn: u32,
}

/// `struct ib_uverbs_create_ah_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_create_ah_resp {
    pub ah_handle: u32,
}

/// `struct ib_uverbs_alloc_mw_resp`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_alloc_mw_resp {
    pub mw_handle: u32,
    pub rkey: u32,
}

/// `struct ib_uverbs_rereg_mr_resp`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_rereg_mr_resp {
    pub lkey: u32,
    pub rkey: u32,
}

/// `struct ib_uverbs_post_send` (without the flexible `send_wr[]`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_post_send {
    pub response: u64,
    pub qp_handle: u32,
    pub wr_count: u32,
    pub sge_count: u32,
    pub wqe_size: u32,
}

/// `struct ib_uverbs_post_send_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_post_send_resp {
    pub bad_wr: u32,
}

/// `struct ib_uverbs_send_wr`, only by size: the smallest `wqe_size` the kernel accepts in
/// a POST_SEND, even with no work requests.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug)]
pub struct ib_uverbs_send_wr {
    pub opaque: [u8; 56],
}
/// `sizeof(struct ib_uverbs_send_wr)`.
pub const IB_UVERBS_SEND_WR_SIZE: u32 = core::mem::size_of::<ib_uverbs_send_wr>() as u32;
/// `IB_USER_VERBS_CMD_POST_SEND` of `enum ib_uverbs_write_cmds`.
pub const IB_USER_VERBS_CMD_POST_SEND: u32 = 28;

/// The POST_SEND write() command with zero work requests: rrxe's doorbell.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_post_send {
    pub hdr: ib_uverbs_cmd_hdr,
    pub core_payload: ib_uverbs_post_send,
}

/// A write (non-extended) command of kern-abi.h whose core request this provider never
/// reads or writes itself (libibverbs fills it): the header and `N` bytes of core payload,
/// 8-aligned as every such `ib_uverbs_*` request with an `__aligned_u64` is. The sizes are
/// checked against kern-abi.h in `tests/layout.rs`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug)]
pub struct OpaqueCmd<const N: usize> {
    pub hdr: ib_uverbs_cmd_hdr,
    pub core_payload: [u8; N],
}

impl<const N: usize> Default for OpaqueCmd<N> {
    fn default() -> Self {
        Self {
            hdr: ib_uverbs_cmd_hdr::default(),
            core_payload: [0; N],
        }
    }
}

/// `struct ibv_alloc_pd`.
pub type ibv_alloc_pd = OpaqueCmd<8>;
/// `struct ibv_reg_mr`.
pub type ibv_reg_mr = OpaqueCmd<40>;
/// `struct ibv_rereg_mr`.
pub type ibv_rereg_mr = OpaqueCmd<48>;
/// `struct ibv_create_cq`.
pub type ibv_create_cq = OpaqueCmd<32>;
/// `struct ibv_resize_cq`.
pub type ibv_resize_cq = OpaqueCmd<16>;
/// `struct ibv_create_qp`.
pub type ibv_create_qp = OpaqueCmd<56>;
/// `struct ibv_query_qp`.
pub type ibv_query_qp = OpaqueCmd<16>;
/// `struct ibv_modify_qp`.
pub type ibv_modify_qp = OpaqueCmd<112>;
/// `struct ibv_create_srq`.
pub type ibv_create_srq = OpaqueCmd<32>;
/// `struct ibv_modify_srq`.
pub type ibv_modify_srq = OpaqueCmd<16>;
/// `struct ibv_query_srq`.
pub type ibv_query_srq = OpaqueCmd<16>;
/// `struct ibv_alloc_mw`.
pub type ibv_alloc_mw = OpaqueCmd<16>;
/// `struct ibv_open_xrcd`.
pub type ibv_open_xrcd = OpaqueCmd<16>;
/// `struct ibv_create_xsrq`.
pub type ibv_create_xsrq = OpaqueCmd<48>;
/// `struct ibv_open_qp`.
pub type ibv_open_qp = OpaqueCmd<32>;

/// `struct ib_uverbs_open_xrcd_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_open_xrcd_resp {
    pub xrcd_handle: u32,
}

/// `struct ib_uverbs_ex_cmd_hdr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_ex_cmd_hdr {
    pub response: u64,
    pub provider_in_words: u16,
    pub provider_out_words: u16,
    pub cmd_hdr_reserved: u32,
}

/// `struct ex_hdr` (kern-abi.h): the header of an extended command.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ex_hdr {
    pub hdr: ib_uverbs_cmd_hdr,
    pub ex_hdr: ib_uverbs_ex_cmd_hdr,
}

/// An extended (`DECLARE_CMD_EX`) command whose core request libibverbs fills: the
/// header and `N` bytes of core payload.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug)]
pub struct OpaqueExCmd<const N: usize> {
    pub hdr: ex_hdr,
    pub core_payload: [u8; N],
}

impl<const N: usize> Default for OpaqueExCmd<N> {
    fn default() -> Self {
        Self {
            hdr: ex_hdr::default(),
            core_payload: [0; N],
        }
    }
}

/// `struct ibv_create_cq_ex`.
pub type ibv_create_cq_ex = OpaqueExCmd<32>;

/// `struct ib_uverbs_ex_create_cq_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_ex_create_cq_resp {
    pub base: ib_uverbs_create_cq_resp,
    pub comp_mask: u32,
    pub response_length: u32,
}
