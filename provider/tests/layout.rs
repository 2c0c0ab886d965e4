//! Layout tests: every `#[repr(C)]` mirror in `rrxe::abi` against the C headers it mirrors.
//!
//! For each checked type the test generates a C program that prints `sizeof`, `_Alignof` and
//! the `offsetof` of every field the Rust mirror has (so a field missing on either side fails
//! to compile or to compare), compiles it with `$CC` (default `cc`), runs it and compares
//! with `size_of`/`align_of`/`offset_of!`.
//!
//! * `installed_headers`: public libibverbs types and the uverbs command ABI against the
//!   installed libibverbs-dev (Debian bookworm: rdma-core 44.0), and rrxe's ABI against
//!   `include/rdma/rrxe-abi.h`.
//! * `rdma_core_source`: the private provider ABI (`libibverbs/driver.h`, `kern-abi.h`;
//!   Debian ships neither) against rdma-core's source (56.1: `scripts/rdma-core-src.sh`
//!   fetches it into `~/.cache/rrxe/rdma-core-src`), plus the public types again except
//!   `ibv_port_attr`, which 56.1 grew. Set `RRXE_RDMA_CORE_SRC` to another source tree; the
//!   test skips with a notice when none is found, or fails if `RRXE_REQUIRE_RDMA_CORE_SRC=1`.
//! * `proto_wqe_layout`: the WQE layout constants of the kernel's decoder (`rrxe_proto::uabi`,
//!   which the module also checks against bindgen's layout at compile time) against
//!   `include/rdma/rrxe-abi.h`, so the provider's mirror and the kernel's decoder cannot
//!   disagree with the header without a failing test.
//! * `installed_verbs_set_ops_matches_mirror`: the installed library's own machine code
//!   agrees with our `verbs_context_ops` (no driver.h of 44.0 exists to compare with).

use std::collections::HashMap;
use std::mem::{align_of, offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

use rrxe::abi::driver::*;
use rrxe::abi::rrxe::*;
use rrxe::abi::uverbs::*;
use rrxe::abi::verbs::*;

/// Which headers a type is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Set {
    /// libibverbs public headers: installed 44.0 and rdma-core 56.1 alike.
    Public,
    /// Public, but only as the installed 44.0 defines it.
    InstalledOnly,
    /// driver.h / kern-abi.h / ccan: rdma-core source only.
    Private,
    /// include/rdma/rrxe-abi.h (checked in both programs).
    Rrxe,
}

struct Check {
    set: Set,
    c_type: String,
    size: usize,
    align: usize,
    fields: Vec<(String, usize)>,
}

macro_rules! layout {
    ($set:ident, $t:ident $(as $c:literal)? { $( $($f:ident).+ $(=> $cf:literal)? ),* $(,)? }) => {
        Check {
            set: Set::$set,
            c_type: layout!(@ctype $t $(, $c)?),
            size: size_of::<$t>(),
            align: align_of::<$t>(),
            fields: vec![$( (layout!(@field $($f).+ $(=> $cf)?), offset_of!($t, $($f).+)) ),*],
        }
    };
    (@ctype $t:ident) => { format!("struct {}", stringify!($t)) };
    (@ctype $t:ident, $c:literal) => { String::from($c) };
    (@field $($f:ident).+) => { [$(stringify!($f)),+].join(".") };
    (@field $($f:ident).+ => $cf:literal) => { String::from($cf) };
}

fn checks() -> Vec<Check> {
    vec![
        layout!(Public, _ibv_device_ops { _dummy1, _dummy2 }),
        layout!(
            Public,
            ibv_device {
                _ops,
                node_type,
                transport_type,
                name,
                dev_name,
                dev_path,
                ibdev_path
            }
        ),
        layout!(
            Public,
            ibv_context_ops {
                _compat_query_device,
                _compat_query_port,
                _compat_alloc_pd,
                _compat_dealloc_pd,
                _compat_reg_mr,
                _compat_rereg_mr,
                _compat_dereg_mr,
                alloc_mw,
                bind_mw,
                dealloc_mw,
                _compat_create_cq,
                poll_cq,
                req_notify_cq,
                _compat_cq_event,
                _compat_resize_cq,
                _compat_destroy_cq,
                _compat_create_srq,
                _compat_modify_srq,
                _compat_query_srq,
                _compat_destroy_srq,
                post_srq_recv,
                _compat_create_qp,
                _compat_query_qp,
                _compat_modify_qp,
                _compat_destroy_qp,
                post_send,
                post_recv,
                _compat_create_ah,
                _compat_destroy_ah,
                _compat_attach_mcast,
                _compat_detach_mcast,
                _compat_async_event
            }
        ),
        layout!(
            Public,
            ibv_context {
                device,
                ops,
                cmd_fd,
                async_fd,
                num_comp_vectors,
                mutex,
                abi_compat
            }
        ),
        layout!(Public, verbs_context { query_port, advise_mr, alloc_null_mr, read_counters, attach_counters_point_flow, create_counters, destroy_counters, reg_dm_mr, alloc_dm, free_dm, modify_flow_action_esp, destroy_flow_action, create_flow_action_esp, modify_qp_rate_limit, alloc_parent_domain, dealloc_td, alloc_td, modify_cq, post_srq_ops, destroy_rwq_ind_table, create_rwq_ind_table, destroy_wq, modify_wq, create_wq, query_rt_values, create_cq_ex, priv_ => "priv", query_device_ex, ibv_destroy_flow, ABI_placeholder2, ibv_create_flow, ABI_placeholder1, open_qp, create_qp_ex, get_srq_num, create_srq_ex, open_xrcd, close_xrcd, _ABI_placeholder3, sz, context }),
        layout!(
            Public,
            ibv_device_attr {
                fw_ver,
                node_guid,
                sys_image_guid,
                max_mr_size,
                page_size_cap,
                vendor_id,
                vendor_part_id,
                hw_ver,
                max_qp,
                max_qp_wr,
                device_cap_flags,
                max_sge,
                max_sge_rd,
                max_cq,
                max_cqe,
                max_mr,
                max_pd,
                max_qp_rd_atom,
                max_ee_rd_atom,
                max_res_rd_atom,
                max_qp_init_rd_atom,
                max_ee_init_rd_atom,
                atomic_cap,
                max_ee,
                max_rdd,
                max_mw,
                max_raw_ipv6_qp,
                max_raw_ethy_qp,
                max_mcast_grp,
                max_mcast_qp_attach,
                max_total_mcast_qp_attach,
                max_ah,
                max_fmr,
                max_map_per_fmr,
                max_srq,
                max_srq_wr,
                max_srq_sge,
                max_pkeys,
                local_ca_ack_delay,
                phys_port_cnt
            }
        ),
        layout!(Public, ibv_query_device_ex_input { comp_mask }),
        layout!(
            Public,
            ibv_odp_caps {
                general_caps,
                per_transport_caps
            }
        ),
        layout!(
            Public,
            ibv_tso_caps {
                max_tso,
                supported_qpts
            }
        ),
        layout!(
            Public,
            ibv_rss_caps {
                supported_qpts,
                max_rwq_indirection_tables,
                max_rwq_indirection_table_size,
                rx_hash_fields_mask,
                rx_hash_function
            }
        ),
        layout!(
            Public,
            ibv_packet_pacing_caps {
                qp_rate_limit_min,
                qp_rate_limit_max,
                supported_qpts
            }
        ),
        layout!(
            Public,
            ibv_tm_caps {
                max_rndv_hdr_size,
                max_num_tags,
                flags,
                max_ops,
                max_sge
            }
        ),
        layout!(
            Public,
            ibv_cq_moderation_caps {
                max_cq_count,
                max_cq_period
            }
        ),
        layout!(
            Public,
            ibv_pci_atomic_caps {
                fetch_add,
                swap,
                compare_swap
            }
        ),
        layout!(
            Public,
            ibv_device_attr_ex {
                orig_attr,
                comp_mask,
                odp_caps,
                completion_timestamp_mask,
                hca_core_clock,
                device_cap_flags_ex,
                tso_caps,
                rss_caps,
                max_wq_type_rq,
                packet_pacing_caps,
                raw_packet_caps,
                tm_caps,
                cq_mod_caps,
                max_dm_size,
                pci_atomic_caps,
                xrc_odp_caps,
                phys_port_cnt_ex
            }
        ),
        layout!(
            InstalledOnly,
            ibv_port_attr {
                state,
                max_mtu,
                active_mtu,
                gid_tbl_len,
                port_cap_flags,
                max_msg_sz,
                bad_pkey_cntr,
                qkey_viol_cntr,
                pkey_tbl_len,
                lid,
                sm_lid,
                lmc,
                max_vl_num,
                sm_sl,
                subnet_timeout,
                init_type_reply,
                active_width,
                active_speed,
                phys_state,
                link_layer,
                flags,
                port_cap_flags2
            }
        ),
        layout!(
            Public,
            ib_uverbs_cmd_hdr {
                command,
                in_words,
                out_words
            }
        ),
        layout!(Public, ib_uverbs_get_context { response }),
        layout!(
            Public,
            ib_uverbs_get_context_resp {
                async_fd,
                num_comp_vectors
            }
        ),
        layout!(
            Public,
            ib_uverbs_query_port {
                response,
                port_num,
                reserved
            }
        ),
        layout!(
            Public,
            ib_uverbs_query_device_resp {
                fw_ver,
                node_guid,
                sys_image_guid,
                max_mr_size,
                page_size_cap,
                vendor_id,
                vendor_part_id,
                hw_ver,
                max_qp,
                max_qp_wr,
                device_cap_flags,
                max_sge,
                max_sge_rd,
                max_cq,
                max_cqe,
                max_mr,
                max_pd,
                max_qp_rd_atom,
                max_ee_rd_atom,
                max_res_rd_atom,
                max_qp_init_rd_atom,
                max_ee_init_rd_atom,
                atomic_cap,
                max_ee,
                max_rdd,
                max_mw,
                max_raw_ipv6_qp,
                max_raw_ethy_qp,
                max_mcast_grp,
                max_mcast_qp_attach,
                max_total_mcast_qp_attach,
                max_ah,
                max_fmr,
                max_map_per_fmr,
                max_srq,
                max_srq_wr,
                max_srq_sge,
                max_pkeys,
                local_ca_ack_delay,
                phys_port_cnt,
                reserved
            }
        ),
        layout!(
            Public,
            ib_uverbs_odp_caps {
                general_caps,
                per_transport_caps,
                reserved
            }
        ),
        layout!(
            Public,
            ib_uverbs_rss_caps {
                supported_qpts,
                max_rwq_indirection_tables,
                max_rwq_indirection_table_size,
                reserved
            }
        ),
        layout!(
            Public,
            ib_uverbs_tm_caps {
                max_rndv_hdr_size,
                max_num_tags,
                flags,
                max_ops,
                max_sge,
                reserved
            }
        ),
        layout!(
            Public,
            ib_uverbs_cq_moderation_caps {
                max_cq_moderation_count,
                max_cq_moderation_period,
                reserved
            }
        ),
        layout!(
            Public,
            ib_uverbs_ex_query_device_resp {
                base,
                comp_mask,
                response_length,
                odp_caps,
                timestamp_mask,
                hca_core_clock,
                device_cap_flags_ex,
                rss_caps,
                max_wq_type_rq,
                raw_packet_caps,
                tm_caps,
                cq_moderation_caps,
                max_dm_size,
                xrc_odp_caps,
                reserved
            }
        ),
        layout!(Private, ibv_get_context { hdr, core_payload }),
        layout!(Private, ibv_query_port { hdr, core_payload }),
        layout!(
            Private,
            verbs_match_ent {
                driver_data,
                u,
                vendor,
                device,
                kind
            }
        ),
        layout!(Private, verbs_sysfs_dev { entry, provider_data, match_ => "match", flags, sysfs_name, sysfs_cdev, ibdev_name, ibdev_path, modalias, node_guid, driver_id, node_type, ibdev_idx, num_ports, abi_ver, time_created }),
        layout!(
            Private,
            verbs_device_ops {
                name,
                match_min_abi_version,
                match_max_abi_version,
                match_table,
                static_providers,
                match_device,
                alloc_context,
                import_context,
                alloc_device,
                uninit_device
            }
        ),
        layout!(
            Private,
            verbs_device {
                device,
                ops,
                refcount,
                entry,
                sysfs,
                core_support
            }
        ),
        layout!(
            Private,
            verbs_context_ops {
                advise_mr,
                alloc_dm,
                alloc_mw,
                alloc_null_mr,
                alloc_parent_domain,
                alloc_pd,
                alloc_td,
                async_event,
                attach_counters_point_flow,
                attach_mcast,
                bind_mw,
                close_xrcd,
                cq_event,
                create_ah,
                create_counters,
                create_cq,
                create_cq_ex,
                create_flow,
                create_flow_action_esp,
                create_qp,
                create_qp_ex,
                create_rwq_ind_table,
                create_srq,
                create_srq_ex,
                create_wq,
                dealloc_mw,
                dealloc_pd,
                dealloc_td,
                dereg_mr,
                destroy_ah,
                destroy_counters,
                destroy_cq,
                destroy_flow,
                destroy_flow_action,
                destroy_qp,
                destroy_rwq_ind_table,
                destroy_srq,
                destroy_wq,
                detach_mcast,
                free_context,
                free_dm,
                get_srq_num,
                import_dm,
                import_mr,
                import_pd,
                modify_cq,
                modify_flow_action_esp,
                modify_qp,
                modify_qp_rate_limit,
                modify_srq,
                modify_wq,
                open_qp,
                open_xrcd,
                poll_cq,
                post_recv,
                post_send,
                post_srq_ops,
                post_srq_recv,
                query_device_ex,
                query_ece,
                query_port,
                query_qp,
                query_qp_data_in_order,
                query_rt_values,
                query_srq,
                read_counters,
                reg_dm_mr,
                reg_dmabuf_mr,
                reg_mr,
                req_notify_cq,
                rereg_mr,
                resize_cq,
                set_ece,
                unimport_dm,
                unimport_mr,
                unimport_pd
            }
        ),
        layout!(
            Rrxe,
            rrxe_queue_hdr {
                producer,
                pad0,
                consumer,
                pad1,
                error,
                pad2
            }
        ),
        layout!(
            Rrxe,
            rrxe_queue_info {
                mmap_offset,
                mmap_size,
                log2_slots,
                slot_size
            }
        ),
        layout!(Rrxe, rrxe_sge { addr, length, lkey }),
        layout!(
            Rrxe,
            rrxe_send_wqe {
                wr_id,
                opcode,
                send_flags,
                num_sge,
                inline_len,
                ex,
                xrc_remote_srqn,
                wr
            }
        ),
        layout!(
            Rrxe,
            rrxe_recv_wqe {
                wr_id,
                num_sge,
                reserved
            }
        ),
        layout!(
            Rrxe,
            rrxe_alloc_ucontext_resp {
                abi_version,
                reserved
            }
        ),
        layout!(Rrxe, rrxe_create_cq_resp { cq }),
        layout!(Rrxe, rrxe_resize_cq_resp { cq }),
        layout!(
            Rrxe,
            rrxe_create_qp_resp {
                sq,
                rq,
                max_inline,
                reserved
            }
        ),
        layout!(
            Rrxe,
            rrxe_create_srq_resp {
                rq,
                srq_num,
                reserved
            }
        ),
        layout!(Rrxe, rrxe_modify_srq_cmd { reserved }),
        layout!(Rrxe, rrxe_create_ah_resp { ah_num, reserved }),
        layout!(Public, pthread_mutex_t as "pthread_mutex_t" {}),
        layout!(Public, ibv_odp_caps {
            per_transport_caps.rc_odp_caps => "per_transport_caps.rc_odp_caps",
            per_transport_caps.ud_odp_caps => "per_transport_caps.ud_odp_caps",
        }),
        layout!(Public, ib_uverbs_odp_caps {
            per_transport_caps.rc_odp_caps => "per_transport_caps.rc_odp_caps",
            per_transport_caps.ud_odp_caps => "per_transport_caps.ud_odp_caps",
        }),
        layout!(Private, list_node { next, prev }),
        layout!(Public, timespec { tv_sec, tv_nsec }),
        layout!(Private, verbs_match_ent {
            u.modalias => "u.modalias",
            u.driver_id => "u.driver_id",
        }),
        layout!(
            Private,
            urrxe_get_context {
                ibv_cmd,
                drv_payload
            }
        ),
        layout!(
            Private,
            urrxe_get_context_resp {
                ibv_resp,
                drv_payload
            }
        ),
        layout!(Public, pthread_cond_t as "pthread_cond_t" {}),
        layout!(Public, ibv_pd { context, handle }),
        layout!(
            Public,
            ibv_mr {
                context,
                pd,
                addr,
                length,
                handle,
                lkey,
                rkey
            }
        ),
        layout!(
            Public,
            ibv_comp_channel {
                context,
                fd,
                refcnt
            }
        ),
        layout!(
            Public,
            ibv_cq {
                context,
                channel,
                cq_context,
                handle,
                cqe,
                mutex,
                cond,
                comp_events_completed,
                async_events_completed
            }
        ),
        layout!(
            Public,
            ibv_srq {
                context,
                srq_context,
                pd,
                handle,
                mutex,
                cond,
                events_completed
            }
        ),
        layout!(
            Public,
            ibv_qp {
                context,
                qp_context,
                pd,
                send_cq,
                recv_cq,
                srq,
                handle,
                qp_num,
                state,
                qp_type,
                mutex,
                cond,
                events_completed
            }
        ),
        layout!(
            Public,
            ibv_ah {
                context,
                pd,
                handle
            }
        ),
        layout!(Public, ibv_mw { context, pd, rkey, handle, type_ => "type" }),
        layout!(
            Public,
            ibv_mw_bind {
                wr_id,
                send_flags,
                bind_info
            }
        ),
        layout!(Public, ibv_sge { addr, length, lkey }),
        layout!(
            Public,
            ibv_mw_bind_info {
                mr,
                addr,
                length,
                mw_access_flags
            }
        ),
        layout!(Public, ibv_send_wr {
            wr_id, next, sg_list, num_sge, opcode, send_flags,
            imm => "imm_data",
            wr.rdma.remote_addr => "wr.rdma.remote_addr",
            wr.rdma.rkey => "wr.rdma.rkey",
            wr.atomic.remote_addr => "wr.atomic.remote_addr",
            wr.atomic.compare_add => "wr.atomic.compare_add",
            wr.atomic.swap => "wr.atomic.swap",
            wr.atomic.rkey => "wr.atomic.rkey",
            wr.ud.ah => "wr.ud.ah",
            wr.ud.remote_qpn => "wr.ud.remote_qpn",
            wr.ud.remote_qkey => "wr.ud.remote_qkey",
            qp_type => "qp_type.xrc.remote_srqn",
            ext.bind_mw.mw => "bind_mw.mw",
            ext.bind_mw.rkey => "bind_mw.rkey",
            ext.bind_mw.bind_info => "bind_mw.bind_info",
            ext.tso.hdr => "tso.hdr",
            ext.tso.hdr_sz => "tso.hdr_sz",
            ext.tso.mss => "tso.mss",
        }),
        layout!(
            Public,
            ibv_recv_wr {
                wr_id,
                next,
                sg_list,
                num_sge
            }
        ),
        layout!(Public, ibv_wc {
            wr_id, status, opcode, vendor_err, byte_len, imm => "imm_data", qp_num, src_qp,
            wc_flags, pkey_index, slid, sl, dlid_path_bits
        }),
        layout!(
            Public,
            ibv_qp_cap {
                max_send_wr,
                max_recv_wr,
                max_send_sge,
                max_recv_sge,
                max_inline_data
            }
        ),
        layout!(
            Public,
            ibv_qp_init_attr {
                qp_context,
                send_cq,
                recv_cq,
                srq,
                cap,
                qp_type,
                sq_sig_all
            }
        ),
        layout!(
            Public,
            ibv_srq_attr {
                max_wr,
                max_sge,
                srq_limit
            }
        ),
        layout!(Public, ibv_srq_init_attr { srq_context, attr }),
        layout!(Public, ibv_xrcd { context }),
        layout!(
            Public,
            ibv_xrcd_init_attr {
                comp_mask,
                fd,
                oflags
            }
        ),
        layout!(
            Public,
            ibv_tm_cap {
                max_num_tags,
                max_ops
            }
        ),
        layout!(
            Public,
            ibv_srq_init_attr_ex {
                srq_context,
                attr,
                comp_mask,
                srq_type,
                pd,
                xrcd,
                cq,
                tm_cap
            }
        ),
        layout!(
            Public,
            ibv_qp_open_attr {
                comp_mask,
                qp_num,
                xrcd,
                qp_context,
                qp_type
            }
        ),
        layout!(Public, ib_uverbs_open_xrcd_resp { xrcd_handle }),
        constant(Set::Public, "IBV_QPT_XRC_SEND", IBV_QPT_XRC_SEND as u64),
        constant(Set::Public, "IBV_QPT_XRC_RECV", IBV_QPT_XRC_RECV as u64),
        constant(Set::Public, "IBV_SRQT_BASIC", IBV_SRQT_BASIC as u64),
        constant(Set::Public, "IBV_SRQT_XRC", IBV_SRQT_XRC as u64),
        constant(
            Set::Public,
            "IBV_SRQ_INIT_ATTR_TYPE",
            IBV_SRQ_INIT_ATTR_TYPE as u64,
        ),
        constant(
            Set::Public,
            "IBV_SRQ_INIT_ATTR_PD",
            IBV_SRQ_INIT_ATTR_PD as u64,
        ),
        constant(
            Set::Public,
            "IBV_SRQ_INIT_ATTR_XRCD",
            IBV_SRQ_INIT_ATTR_XRCD as u64,
        ),
        constant(
            Set::Public,
            "IBV_SRQ_INIT_ATTR_CQ",
            IBV_SRQ_INIT_ATTR_CQ as u64,
        ),
        constant(
            Set::Public,
            "IBV_QP_INIT_ATTR_XRCD",
            IBV_QP_INIT_ATTR_XRCD as u64,
        ),
        layout!(Public, ib_uverbs_alloc_pd_resp { pd_handle }),
        layout!(
            Public,
            ib_uverbs_reg_mr_resp {
                mr_handle,
                lkey,
                rkey
            }
        ),
        layout!(Public, ib_uverbs_create_cq_resp { cq_handle, cqe }),
        layout!(Public, ib_uverbs_resize_cq_resp { cqe, reserved }),
        layout!(
            Public,
            ib_uverbs_create_qp_resp {
                qp_handle,
                qpn,
                max_send_wr,
                max_recv_wr,
                max_send_sge,
                max_recv_sge,
                max_inline_data,
                reserved
            }
        ),
        layout!(
            Public,
            ib_uverbs_create_srq_resp {
                srq_handle,
                max_wr,
                max_sge,
                srqn
            }
        ),
        layout!(Public, ib_uverbs_create_ah_resp { ah_handle }),
        layout!(Public, ib_uverbs_alloc_mw_resp { mw_handle, rkey }),
        layout!(Public, ib_uverbs_rereg_mr_resp { lkey, rkey }),
        layout!(
            Public,
            ib_uverbs_post_send {
                response,
                qp_handle,
                wr_count,
                sge_count,
                wqe_size
            }
        ),
        layout!(Public, ib_uverbs_post_send_resp { bad_wr }),
        layout!(Public, ib_uverbs_send_wr {}),
        // Constants, as the size of a char array.
        Check {
            set: Set::Public,
            c_type: "char[IB_USER_VERBS_CMD_POST_SEND]".into(),
            size: IB_USER_VERBS_CMD_POST_SEND as usize,
            align: 1,
            fields: vec![],
        },
        constant(
            Set::Public,
            "IBV_QP_INIT_ATTR_PD",
            IBV_QP_INIT_ATTR_PD as u64,
        ),
        constant(
            Set::Public,
            "IBV_QP_INIT_ATTR_CREATE_FLAGS",
            IBV_QP_INIT_ATTR_CREATE_FLAGS as u64,
        ),
        constant(
            Set::Public,
            "IBV_QP_INIT_ATTR_SEND_OPS_FLAGS",
            IBV_QP_INIT_ATTR_SEND_OPS_FLAGS as u64,
        ),
        constant(
            Set::Public,
            "IBV_QP_EX_WITH_RDMA_WRITE",
            IBV_QP_EX_WITH_RDMA_WRITE,
        ),
        constant(
            Set::Public,
            "IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM",
            IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
        ),
        constant(Set::Public, "IBV_QP_EX_WITH_SEND", IBV_QP_EX_WITH_SEND),
        constant(
            Set::Public,
            "IBV_QP_EX_WITH_SEND_WITH_IMM",
            IBV_QP_EX_WITH_SEND_WITH_IMM,
        ),
        constant(
            Set::Public,
            "IBV_QP_EX_WITH_RDMA_READ",
            IBV_QP_EX_WITH_RDMA_READ,
        ),
        constant(
            Set::Public,
            "IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP",
            IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
        ),
        constant(
            Set::Public,
            "IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD",
            IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
        ),
        constant(
            Set::Public,
            "IBV_QP_EX_WITH_LOCAL_INV",
            IBV_QP_EX_WITH_LOCAL_INV,
        ),
        constant(
            Set::Public,
            "IBV_QP_EX_WITH_BIND_MW",
            IBV_QP_EX_WITH_BIND_MW,
        ),
        constant(
            Set::Public,
            "IBV_QP_EX_WITH_SEND_WITH_INV",
            IBV_QP_EX_WITH_SEND_WITH_INV,
        ),
        constant(
            Set::Public,
            "IBV_CQ_INIT_ATTR_MASK_FLAGS",
            IBV_CQ_INIT_ATTR_MASK_FLAGS as u64,
        ),
        constant(
            Set::Public,
            "IBV_CREATE_CQ_ATTR_SINGLE_THREADED",
            IBV_CREATE_CQ_ATTR_SINGLE_THREADED as u64,
        ),
        constant(
            Set::Public,
            "IBV_WC_EX_WITH_BYTE_LEN",
            IBV_WC_EX_WITH_BYTE_LEN,
        ),
        constant(Set::Public, "IBV_WC_EX_WITH_IMM", IBV_WC_EX_WITH_IMM),
        constant(Set::Public, "IBV_WC_EX_WITH_QP_NUM", IBV_WC_EX_WITH_QP_NUM),
        constant(Set::Public, "IBV_WC_EX_WITH_SRC_QP", IBV_WC_EX_WITH_SRC_QP),
        constant(Set::Public, "IBV_WC_EX_WITH_SLID", IBV_WC_EX_WITH_SLID),
        constant(Set::Public, "IBV_WC_EX_WITH_SL", IBV_WC_EX_WITH_SL),
        constant(
            Set::Public,
            "IBV_WC_EX_WITH_DLID_PATH_BITS",
            IBV_WC_EX_WITH_DLID_PATH_BITS,
        ),
        constant(Set::Private, "VERBS_QP_EX", VERBS_QP_EX as u64),
        layout!(Private, ibv_post_send { hdr, core_payload }),
        layout!(Private, ibv_alloc_pd as "struct ibv_alloc_pd" { hdr, core_payload }),
        layout!(Private, ibv_reg_mr as "struct ibv_reg_mr" { hdr, core_payload }),
        layout!(Private, ibv_rereg_mr as "struct ibv_rereg_mr" { hdr, core_payload }),
        layout!(Private, ibv_create_cq as "struct ibv_create_cq" { hdr, core_payload }),
        layout!(Private, ibv_resize_cq as "struct ibv_resize_cq" { hdr, core_payload }),
        layout!(Private, ibv_create_qp as "struct ibv_create_qp" { hdr, core_payload }),
        layout!(Private, ibv_query_qp as "struct ibv_query_qp" { hdr, core_payload }),
        layout!(Private, ibv_modify_qp as "struct ibv_modify_qp" { hdr, core_payload }),
        layout!(Private, ibv_create_srq as "struct ibv_create_srq" { hdr, core_payload }),
        layout!(Private, ibv_modify_srq as "struct ibv_modify_srq" { hdr, core_payload }),
        layout!(Private, ibv_query_srq as "struct ibv_query_srq" { hdr, core_payload }),
        layout!(Private, ibv_alloc_mw as "struct ibv_alloc_mw" { hdr, core_payload }),
        layout!(Private, ibv_open_xrcd as "struct ibv_open_xrcd" { hdr, core_payload }),
        layout!(Private, ibv_create_xsrq as "struct ibv_create_xsrq" { hdr, core_payload }),
        layout!(Private, ibv_open_qp as "struct ibv_open_qp" { hdr, core_payload }),
        layout!(
            Private,
            verbs_xrcd {
                xrcd,
                comp_mask,
                handle
            }
        ),
        layout!(
            Private,
            verbs_srq {
                srq,
                srq_type,
                xrcd,
                cq,
                srq_num
            }
        ),
        layout!(
            Private,
            verbs_mr {
                ibv_mr,
                mr_type,
                access
            }
        ),
        layout!(
            Private,
            urrxe_create_cq_resp {
                ibv_resp,
                drv_payload
            }
        ),
        layout!(
            Private,
            urrxe_resize_cq_resp {
                ibv_resp,
                drv_payload
            }
        ),
        layout!(
            Private,
            urrxe_create_qp_resp {
                ibv_resp,
                drv_payload
            }
        ),
        layout!(
            Private,
            urrxe_create_srq_resp {
                ibv_resp,
                drv_payload
            }
        ),
        layout!(
            Private,
            urrxe_create_ah_resp {
                ibv_resp,
                drv_payload
            }
        ),
        layout!(Public, ibv_data_buf { addr, length }),
        layout!(
            Public,
            ibv_rx_hash_conf {
                rx_hash_function,
                rx_hash_key_len,
                rx_hash_key,
                rx_hash_fields_mask
            }
        ),
        layout!(
            Public,
            ibv_qp_init_attr_ex {
                qp_context,
                send_cq,
                recv_cq,
                srq,
                cap,
                qp_type,
                sq_sig_all,
                comp_mask,
                pd,
                xrcd,
                create_flags,
                max_tso_header,
                rwq_ind_tbl,
                rx_hash_conf,
                source_qpn,
                send_ops_flags
            }
        ),
        layout!(
            Public,
            ibv_cq_init_attr_ex {
                cqe,
                cq_context,
                channel,
                comp_vector,
                wc_flags,
                comp_mask,
                flags,
                parent_domain
            }
        ),
        layout!(Public, ibv_poll_cq_attr { comp_mask }),
        layout!(Public, ibv_wc_tm_info { tag, priv_ => "priv" }),
        layout!(
            Public,
            ibv_cq_ex {
                context,
                channel,
                cq_context,
                handle,
                cqe,
                mutex,
                cond,
                comp_events_completed,
                async_events_completed,
                comp_mask,
                status,
                wr_id,
                start_poll,
                next_poll,
                end_poll,
                read_opcode,
                read_vendor_err,
                read_byte_len,
                read_imm_data,
                read_qp_num,
                read_src_qp,
                read_wc_flags,
                read_slid,
                read_sl,
                read_dlid_path_bits,
                read_completion_ts,
                read_cvlan,
                read_flow_tag,
                read_tm_info,
                read_completion_wallclock_ns
            }
        ),
        // 44.0's ibv_qp_ex (56.1 appends wr_flush): the library the provider runs with.
        layout!(
            InstalledOnly,
            ibv_qp_ex {
                qp_base,
                comp_mask,
                wr_id,
                wr_flags,
                wr_atomic_cmp_swp,
                wr_atomic_fetch_add,
                wr_bind_mw,
                wr_local_inv,
                wr_rdma_read,
                wr_rdma_write,
                wr_rdma_write_imm,
                wr_send,
                wr_send_imm,
                wr_send_inv,
                wr_send_tso,
                wr_set_ud_addr,
                wr_set_xrc_srqn,
                wr_set_inline_data,
                wr_set_inline_data_list,
                wr_set_sge,
                wr_set_sge_list,
                wr_start,
                wr_complete,
                wr_abort,
                wr_atomic_write
            }
        ),
        layout!(Private, verbs_cq { cq_ex }),
        layout!(Private, ibv_create_cq_ex as "struct ibv_create_cq_ex" { hdr, core_payload }),
        layout!(
            Public,
            ib_uverbs_ex_cmd_hdr {
                response,
                provider_in_words,
                provider_out_words,
                cmd_hdr_reserved
            }
        ),
        layout!(
            Public,
            ib_uverbs_ex_create_cq_resp {
                base,
                comp_mask,
                response_length
            }
        ),
        layout!(
            Private,
            urrxe_create_cq_ex_resp {
                ibv_resp,
                drv_payload
            }
        ),
        layout!(Rrxe, rrxe_send_wqe {
            ex.imm_data => "ex.imm_data",
            ex.invalidate_rkey => "ex.invalidate_rkey",
            wr.rdma.remote_addr => "wr.rdma.remote_addr",
            wr.rdma.rkey => "wr.rdma.rkey",
            wr.atomic.remote_addr => "wr.atomic.remote_addr",
            wr.atomic.compare_add => "wr.atomic.compare_add",
            wr.atomic.swap => "wr.atomic.swap",
            wr.atomic.rkey => "wr.atomic.rkey",
            wr.ud.ah_num => "wr.ud.ah_num",
            wr.ud.remote_qpn => "wr.ud.remote_qpn",
            wr.ud.remote_qkey => "wr.ud.remote_qkey",
            wr.bind_mw.addr => "wr.bind_mw.addr",
            wr.bind_mw.length => "wr.bind_mw.length",
            wr.bind_mw.mw_rkey => "wr.bind_mw.mw_rkey",
            wr.bind_mw.mr_lkey => "wr.bind_mw.mr_lkey",
            wr.bind_mw.access => "wr.bind_mw.access",
            wr.raw => "wr.raw",
        }),
        // The union members by their own names (what bindgen gives the kernel).
        layout!(
            Rrxe,
            rrxe_send_wqe_ex as "union rrxe_send_wqe_ex" {
                imm_data,
                invalidate_rkey
            }
        ),
        layout!(
            Rrxe,
            rrxe_send_wqe_wr as "union rrxe_send_wqe_wr" {
                rdma,
                atomic,
                ud,
                bind_mw,
                flush,
                raw
            }
        ),
        layout!(
            Rrxe,
            rrxe_wr_rdma {
                remote_addr,
                rkey,
                reserved
            }
        ),
        layout!(
            Rrxe,
            rrxe_wr_atomic {
                remote_addr,
                compare_add,
                swap,
                rkey,
                reserved
            }
        ),
        layout!(
            Rrxe,
            rrxe_wr_ud {
                ah_num,
                remote_qpn,
                remote_qkey,
                reserved
            }
        ),
        layout!(
            Rrxe,
            rrxe_wr_bind_mw {
                addr,
                length,
                mw_rkey,
                mr_lkey,
                access,
                reserved
            }
        ),
        layout!(
            Rrxe,
            rrxe_wr_flush {
                remote_addr,
                length,
                rkey,
                type_ => "type",
                level,
                reserved
            }
        ),
    ]
}

/// `rrxe_proto::uabi`'s constants as layout checks of the C structures they describe.
fn proto_checks() -> Vec<Check> {
    use rrxe_proto::uabi::*;
    let w = send_wqe::WR;
    let f = |name: &str, off: usize| (name.to_string(), off);
    let c = |name: &str, v: u64| constant(Set::Rrxe, &format!("1 + {name}"), v + 1);
    vec![
        Check {
            set: Set::Rrxe,
            c_type: "struct rrxe_sge".into(),
            size: sge::SIZE,
            align: 8,
            fields: vec![
                f("addr", sge::ADDR),
                f("length", sge::LENGTH),
                f("lkey", sge::LKEY),
            ],
        },
        Check {
            set: Set::Rrxe,
            c_type: "struct rrxe_send_wqe".into(),
            size: send_wqe::SIZE,
            align: 8,
            fields: vec![
                f("wr_id", send_wqe::WR_ID),
                f("opcode", send_wqe::OPCODE),
                f("send_flags", send_wqe::SEND_FLAGS),
                f("num_sge", send_wqe::NUM_SGE),
                f("inline_len", send_wqe::INLINE_LEN),
                f("ex", send_wqe::EX),
                f("ex.imm_data", send_wqe::EX),
                f("ex.invalidate_rkey", send_wqe::EX),
                f("xrc_remote_srqn", send_wqe::XRC_REMOTE_SRQN),
                f("wr", w),
                f("wr.raw", w),
                f("wr.raw[39]", w + send_wqe::WR_SIZE - 1),
                f("wr.rdma.remote_addr", w + wr_rdma::REMOTE_ADDR),
                f("wr.rdma.rkey", w + wr_rdma::RKEY),
                f("wr.atomic.remote_addr", w + wr_atomic::REMOTE_ADDR),
                f("wr.atomic.compare_add", w + wr_atomic::COMPARE_ADD),
                f("wr.atomic.swap", w + wr_atomic::SWAP),
                f("wr.atomic.rkey", w + wr_atomic::RKEY),
                f("wr.ud.ah_num", w + wr_ud::AH_NUM),
                f("wr.ud.remote_qpn", w + wr_ud::REMOTE_QPN),
                f("wr.ud.remote_qkey", w + wr_ud::REMOTE_QKEY),
                f("wr.bind_mw.addr", w + wr_bind_mw::ADDR),
                f("wr.bind_mw.length", w + wr_bind_mw::LENGTH),
                f("wr.bind_mw.mw_rkey", w + wr_bind_mw::MW_RKEY),
                f("wr.bind_mw.mr_lkey", w + wr_bind_mw::MR_LKEY),
                f("wr.bind_mw.access", w + wr_bind_mw::ACCESS),
                f("wr.flush.remote_addr", w + wr_flush::REMOTE_ADDR),
                f("wr.flush.length", w + wr_flush::LENGTH),
                f("wr.flush.rkey", w + wr_flush::RKEY),
                f("wr.flush.type", w + wr_flush::TYPE),
                f("wr.flush.level", w + wr_flush::LEVEL),
            ],
        },
        Check {
            set: Set::Rrxe,
            c_type: "struct rrxe_recv_wqe".into(),
            size: recv_wqe::SIZE,
            align: 8,
            fields: vec![f("wr_id", recv_wqe::WR_ID), f("num_sge", recv_wqe::NUM_SGE)],
        },
        c("RRXE_WR_RDMA_WRITE", WR_RDMA_WRITE.into()),
        c("RRXE_WR_RDMA_WRITE_WITH_IMM", WR_RDMA_WRITE_WITH_IMM.into()),
        c("RRXE_WR_SEND", WR_SEND.into()),
        c("RRXE_WR_SEND_WITH_IMM", WR_SEND_WITH_IMM.into()),
        c("RRXE_WR_RDMA_READ", WR_RDMA_READ.into()),
        c("RRXE_WR_ATOMIC_CMP_AND_SWP", WR_ATOMIC_CMP_AND_SWP.into()),
        c(
            "RRXE_WR_ATOMIC_FETCH_AND_ADD",
            WR_ATOMIC_FETCH_AND_ADD.into(),
        ),
        c("RRXE_WR_LOCAL_INV", WR_LOCAL_INV.into()),
        c("RRXE_WR_BIND_MW", WR_BIND_MW.into()),
        c("RRXE_WR_SEND_WITH_INV", WR_SEND_WITH_INV.into()),
        c("RRXE_WR_ATOMIC_WRITE", WR_ATOMIC_WRITE.into()),
        c("RRXE_WR_FLUSH", WR_FLUSH.into()),
        c("RRXE_SEND_FENCE", SEND_FENCE.into()),
        c("RRXE_SEND_SIGNALED", SEND_SIGNALED.into()),
        c("RRXE_SEND_SOLICITED", SEND_SOLICITED.into()),
        c("RRXE_SEND_INLINE", SEND_INLINE.into()),
        c("RRXE_FLUSH_GLOBAL", FLUSH_GLOBAL.into()),
        c("RRXE_FLUSH_PERSISTENT", FLUSH_PERSISTENT.into()),
        c("RRXE_FLUSH_RANGE", FLUSH_RANGE.into()),
        c("RRXE_FLUSH_MR", FLUSH_MR.into()),
    ]
}

/// The kernel decoder's layout (`rrxe_proto::uabi`) against rrxe's own header only (no
/// libibverbs headers needed).
#[test]
fn proto_wqe_layout() {
    let all = proto_checks();
    let sel: Vec<&Check> = all.iter().collect();
    let args = vec![format!("-I{}", repo_include().display())];
    match c_layout(&tmp("layout-proto"), RRXE_PREAMBLE, &sel, &args) {
        Ok(c) => {
            let n = compare("rrxe-abi.h", &c, &sel);
            println!("rrxe_proto::uabi: {n} sizes/offsets/values match rrxe-abi.h");
        }
        Err(e) => println!("SKIP proto_wqe_layout: {e}"),
    }
}

/// driver.h's `verbs_qp` is a union of `ibv_qp`/`ibv_qp_ex` then `comp_mask` and `xrcd`;
/// 44.0 ships no driver.h and 56.1's `ibv_qp_ex` is longer, so its layout is checked here
/// from the installed `ibv_qp_ex` (compared with the header in `installed_headers`).
#[test]
fn verbs_qp_follows_installed_qp_ex() {
    assert_eq!(offset_of!(verbs_qp, qp_ex), 0);
    assert_eq!(offset_of!(verbs_qp, comp_mask), size_of::<ibv_qp_ex>());
    assert_eq!(
        offset_of!(verbs_qp, xrcd),
        (size_of::<ibv_qp_ex>() + 4).next_multiple_of(8)
    );
    assert_eq!(size_of::<verbs_qp>(), offset_of!(verbs_qp, xrcd) + 8);
}

/// A constant, checked as the size of a char array of that many elements.
fn constant(set: Set, name: &str, value: u64) -> Check {
    Check {
        set,
        c_type: format!("char[{name}]"),
        size: value as usize,
        align: 1,
        fields: vec![],
    }
}

/// The C program printing the layout of `checks` after `preamble`.
fn c_program(preamble: &str, checks: &[&Check]) -> String {
    let mut c = String::from(preamble);
    c.push_str("\n#include <stddef.h>\n#include <stdio.h>\nint main(void)\n{\n");
    for ch in checks {
        let t = &ch.c_type;
        c.push_str(&format!(
            "\tprintf(\"{t}|size %zu\\n\", sizeof({t}));\n\tprintf(\"{t}|align %zu\\n\", _Alignof({t}));\n"
        ));
        for (f, _) in &ch.fields {
            c.push_str(&format!(
                "\tprintf(\"{t}|.{f} %zu\\n\", offsetof({t}, {f}));\n"
            ));
        }
    }
    c.push_str("\treturn 0;\n}\n");
    c
}

/// Compiles and runs the program for `checks`; Err(reason) when the toolchain is missing.
fn c_layout(
    dir: &Path,
    preamble: &str,
    checks: &[&Check],
    args: &[String],
) -> Result<HashMap<String, usize>, String> {
    std::fs::create_dir_all(dir).unwrap();
    let src = dir.join("layout.c");
    let exe = dir.join("layout");
    std::fs::write(&src, c_program(preamble, checks)).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-std=gnu11", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {cc}: {e}"))?;
    assert!(
        out.status.success(),
        "compiling {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success());
    Ok(String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect())
}

/// Compares; returns how many values were checked.
fn compare(what: &str, c: &HashMap<String, usize>, checks: &[&Check]) -> usize {
    let mut bad = Vec::new();
    let mut n = 0;
    for ch in checks {
        let t = &ch.c_type;
        let mut want = vec![
            (format!("{t}|size"), ch.size),
            (format!("{t}|align"), ch.align),
        ];
        want.extend(ch.fields.iter().map(|(f, o)| (format!("{t}|.{f}"), *o)));
        for (k, rust) in want {
            n += 1;
            match c.get(&k) {
                Some(&cv) if cv == rust => {}
                other => bad.push(format!("{k}: C {other:?}, Rust {rust}")),
            }
        }
        println!("{what}: {t}: size {} ok", ch.size);
    }
    assert!(
        bad.is_empty(),
        "{what}: layout mismatches:\n{}",
        bad.join("\n")
    );
    n
}

fn repo_include() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../include")
}

fn tmp(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

const RRXE_PREAMBLE: &str = "#include <rdma/rrxe-abi.h>\n";

#[test]
fn installed_headers() {
    if !Path::new("/usr/include/infiniband/verbs.h").exists() {
        println!("SKIP installed_headers: /usr/include/infiniband/verbs.h missing (install libibverbs-dev)");
        return;
    }
    let all = checks();
    let sel: Vec<&Check> = all
        .iter()
        .filter(|c| matches!(c.set, Set::Public | Set::InstalledOnly | Set::Rrxe))
        .filter(|c| c.c_type != "struct list_node")
        .collect();
    let preamble =
        format!("#include <infiniband/verbs.h>\n#include <rdma/ib_user_verbs.h>\n{RRXE_PREAMBLE}");
    let args = vec![format!("-I{}", repo_include().display())];
    match c_layout(&tmp("layout-installed"), &preamble, &sel, &args) {
        Ok(c) => {
            let n = compare("installed", &c, &sel);
            println!(
                "installed headers: {n} sizes/alignments/offsets of {} types match",
                sel.len()
            );
        }
        Err(e) => println!("SKIP installed_headers: {e}"),
    }
}

/// The rdma-core source tree to check against, if any.
fn rdma_core_src() -> Option<PathBuf> {
    let has = |p: &Path| p.join("libibverbs/driver.h").is_file();
    if let Some(p) = std::env::var_os("RRXE_RDMA_CORE_SRC") {
        let p = PathBuf::from(p);
        return has(&p).then_some(p);
    }
    let cache = std::env::var_os("RRXE_CACHE")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
                .map(|c| c.join("rrxe"))
        })?;
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(cache.join("rdma-core-src"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| has(p))
        .collect();
    dirs.sort();
    dirs.pop()
}

fn skip_or_fail(test: &str, why: &str) {
    let msg = format!("SKIP {test}: {why}");
    if std::env::var_os("RRXE_REQUIRE_RDMA_CORE_SRC").is_some_and(|v| v == "1") {
        panic!("{msg} (RRXE_REQUIRE_RDMA_CORE_SRC=1)");
    }
    println!("{msg}");
    eprintln!("{msg}");
}

/// The minimal include tree driver.h needs from an rdma-core source: the libibverbs headers
/// under infiniband/, the generated kernel-abi/ib_user_verbs.h (buildlib/make_abi_structs.py
/// turns each kernel struct into a `_STRUCT_x` macro), an empty config.h, and -I for the
/// source root (ccan/, util/) and kernel-headers/ (rdma/*.h).
fn rdma_core_include_args(src: &Path, dir: &Path) -> Result<Vec<String>, String> {
    let inc = dir.join("inc");
    let _ = std::fs::remove_dir_all(&inc);
    std::fs::create_dir_all(inc.join("infiniband")).unwrap();
    std::fs::create_dir_all(inc.join("kernel-abi")).unwrap();
    for h in [
        "verbs.h",
        "verbs_api.h",
        "kern-abi.h",
        "cmd_ioctl.h",
        "driver.h",
    ] {
        std::fs::copy(
            src.join("libibverbs").join(h),
            inc.join("infiniband").join(h),
        )
        .unwrap();
    }
    std::fs::copy(
        src.join("kernel-headers/rdma/ib_user_ioctl_verbs.h"),
        inc.join("infiniband/ib_user_ioctl_verbs.h"),
    )
    .unwrap();
    std::fs::write(
        inc.join("config.h"),
        "/* rrxe layout test: nothing needed */\n",
    )
    .unwrap();
    let py = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(&py)
        .arg(src.join("buildlib/make_abi_structs.py"))
        .arg(src.join("kernel-headers/rdma/ib_user_verbs.h"))
        .arg(inc.join("kernel-abi/ib_user_verbs.h"))
        .output()
        .map_err(|e| format!("cannot run {py} for make_abi_structs.py: {e}"))?;
    assert!(
        out.status.success(),
        "make_abi_structs.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // rdma-core runs every provider's kernel ABI header through the same script; our
    // DECLARE_DRV_CMD needs `_STRUCT_rrxe_alloc_ucontext_resp` from it.
    let out = Command::new(&py)
        .arg(src.join("buildlib/make_abi_structs.py"))
        .arg(repo_include().join("rdma/rrxe-abi.h"))
        .arg(inc.join("kernel-abi/rrxe-abi.h"))
        .output()
        .map_err(|e| format!("cannot run {py} for make_abi_structs.py: {e}"))?;
    assert!(
        out.status.success(),
        "make_abi_structs.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(vec![
        format!("-I{}", inc.display()),
        format!("-I{}", src.display()),
        format!("-I{}", src.join("kernel-headers").display()),
        format!("-I{}", repo_include().display()),
    ])
}

#[test]
fn rdma_core_source() {
    let Some(src) = rdma_core_src() else {
        skip_or_fail(
            "rdma_core_source",
            "no rdma-core source (run scripts/rdma-core-src.sh or set RRXE_RDMA_CORE_SRC); \
             driver.h layouts NOT checked",
        );
        return;
    };
    let version = src.file_name().unwrap().to_string_lossy().into_owned();
    if version != "rdma-core-56.1" {
        println!("note: mirrors follow rdma-core-56.1; checking against {version}");
    }
    let dir = tmp("layout-rdma-core");
    let args = match rdma_core_include_args(&src, &dir) {
        Ok(a) => a,
        Err(e) => return skip_or_fail("rdma_core_source", &e),
    };
    let all = checks();
    let sel: Vec<&Check> = all.iter().filter(|c| c.set != Set::InstalledOnly).collect();
    let preamble = format!(
        "#include <infiniband/driver.h>\n{RRXE_PREAMBLE}#include <kernel-abi/rrxe-abi.h>\n\
         DECLARE_DRV_CMD(urrxe_get_context, IB_USER_VERBS_CMD_GET_CONTEXT, empty,\n\
         \t\trrxe_alloc_ucontext_resp);\n\
         DECLARE_DRV_CMD(urrxe_create_cq, IB_USER_VERBS_CMD_CREATE_CQ, empty, rrxe_create_cq_resp);\n\
         DECLARE_DRV_CMD(urrxe_create_cq_ex, IB_USER_VERBS_EX_CMD_CREATE_CQ, empty, rrxe_create_cq_resp);\n\
         DECLARE_DRV_CMD(urrxe_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ, empty, rrxe_resize_cq_resp);\n\
         DECLARE_DRV_CMD(urrxe_create_qp, IB_USER_VERBS_CMD_CREATE_QP, empty, rrxe_create_qp_resp);\n\
         DECLARE_DRV_CMD(urrxe_create_srq, IB_USER_VERBS_CMD_CREATE_SRQ, empty, rrxe_create_srq_resp);\n\
         DECLARE_DRV_CMD(urrxe_create_ah, IB_USER_VERBS_CMD_CREATE_AH, empty, rrxe_create_ah_resp);\n"
    );
    match c_layout(&dir, &preamble, &sel, &args) {
        Ok(c) => {
            let n = compare(&version, &c, &sel);
            println!(
                "{version}: {n} sizes/alignments/offsets of {} types match",
                sel.len()
            );
        }
        Err(e) => skip_or_fail("rdma_core_source", &e),
    }
}

/// The libibverbs.so.1 this test process has mapped (the crate links it).
fn mapped_libibverbs() -> Option<PathBuf> {
    // Make sure the library is really loaded: reference one of its symbols.
    let _keep = rrxe::abi::ffi::verbs_set_ops as *const () as usize;
    std::fs::read_to_string("/proc/self/maps")
        .ok()?
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("/libibverbs.so"))
        .map(PathBuf::from)
}

/// `verbs_set_ops` is, for each op, `if (ops->name) { priv->ops.name = ...; ... }`: a load
/// from the ops table followed by a NULL test. Returns the offsets of those loads, in order.
fn verbs_set_ops_loads(lib: &Path) -> Result<Vec<usize>, String> {
    let objdump = |args: &[&str]| -> Result<String, String> {
        let out = Command::new("objdump")
            .args(args)
            .arg(lib)
            .output()
            .map_err(|e| format!("cannot run objdump: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "objdump failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let syms = objdump(&["-T"])?;
    let line = syms
        .lines()
        .find(|l| l.split_whitespace().last() == Some("verbs_set_ops"))
        .ok_or("verbs_set_ops not in the dynamic symbol table")?;
    let cols: Vec<&str> = line.split_whitespace().collect();
    let start = u64::from_str_radix(cols[0], 16).map_err(|e| e.to_string())?;
    let len = u64::from_str_radix(cols[cols.len() - 3], 16).map_err(|e| e.to_string())?;
    let asm = objdump(&[
        "-d",
        "--no-show-raw-insn",
        &format!("--start-address={start:#x}"),
        &format!("--stop-address={:#x}", start + len),
    ])?;
    let insns: Vec<(String, String)> = asm
        .lines()
        .filter_map(|l| {
            // "  12563:\tmov    (%rsi),%rsi"
            let insn = l.split_once(":\t")?.1;
            let (op, args) = insn.split_once(char::is_whitespace).unwrap_or((insn, ""));
            Some((op.to_string(), args.trim().to_string()))
        })
        .collect();
    let mut loads = Vec::new();
    for (i, (op, args)) in insns.iter().enumerate() {
        // mov [0xOFF](%base),%reg ... test %reg,%reg (the compiler may schedule a few
        // unrelated instructions in between, none of which writes %reg).
        let Some((src, dst)) = args.split_once(',') else {
            continue;
        };
        if op != "mov" || !dst.starts_with('%') {
            continue;
        }
        let tested = insns[i + 1..]
            .iter()
            .take(4)
            .take_while(|(_, a)| !a.ends_with(&format!(",{dst}")) || a == &format!("{dst},{dst}"))
            .any(|(o, a)| o == "test" && a == &format!("{dst},{dst}"));
        if !tested {
            continue;
        }
        let Some((off, _base)) = src.split_once('(') else {
            continue;
        };
        let off = match off.strip_prefix("0x") {
            Some(hex) => usize::from_str_radix(hex, 16).map_err(|e| e.to_string())?,
            None if off.is_empty() => 0,
            None => continue,
        };
        loads.push(off);
    }
    Ok(loads)
}

#[test]
fn installed_verbs_set_ops_matches_mirror() {
    let test = "installed_verbs_set_ops_matches_mirror";
    let Some(lib) = mapped_libibverbs() else {
        println!("SKIP {test}: libibverbs.so not mapped");
        return;
    };
    let loads = match verbs_set_ops_loads(&lib) {
        Ok(l) if l.len() >= 10 => l,
        Ok(l) => {
            return println!(
                "SKIP {test}: found only {} op loads in {}",
                l.len(),
                lib.display()
            )
        }
        Err(e) => return println!("SKIP {test}: {e}"),
    };
    // Every slot of our verbs_context_ops is read exactly once, and nothing beyond it.
    let slots = size_of::<verbs_context_ops>() / size_of::<usize>();
    let mut sorted = loads.clone();
    sorted.sort_unstable();
    let expect: Vec<usize> = (0..slots).map(|i| i * size_of::<usize>()).collect();
    assert_eq!(
        sorted,
        expect,
        "{}: verbs_set_ops reads other ops slots than our {slots}-entry verbs_context_ops",
        lib.display()
    );
    println!(
        "{}: verbs_set_ops reads all {slots} verbs_context_ops slots",
        lib.display()
    );

    // With the source at hand, also check which op sits at each slot: dummy_ops.c copies
    // them in a known order (SET_OP(vctx, advise_mr); ...).
    let Some(src) = rdma_core_src() else {
        return println!("note {test}: no rdma-core source; op names per slot not checked");
    };
    let dummy = std::fs::read_to_string(src.join("libibverbs/dummy_ops.c")).unwrap();
    let body = dummy.split("void verbs_set_ops(").nth(1).unwrap();
    let order: Vec<&str> = body
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("SET_") && (l.contains("(vctx,") || l.contains("(ctx,")))
        .map(|l| l.trim_end_matches(");").rsplit([',', ' ']).next().unwrap())
        .collect();
    let all = checks();
    let ops = all
        .iter()
        .find(|c| c.c_type == "struct verbs_context_ops")
        .unwrap();
    let by_name: HashMap<&str, usize> = ops.fields.iter().map(|(f, o)| (f.as_str(), *o)).collect();
    let want: Vec<usize> = order.iter().map(|n| by_name[n]).collect();
    assert_eq!(
        loads,
        want,
        "op order of {} vs {}",
        lib.display(),
        src.display()
    );
    println!(
        "{}: each slot holds the op our mirror names there",
        lib.display()
    );
}
