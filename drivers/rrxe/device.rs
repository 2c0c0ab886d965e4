// SPDX-License-Identifier: GPL-2.0
//! Device and port logic: what an rrxe device reports and how it follows its netdev.
//! Safe code only; the kernel objects are reached through [`crate::glue`].

use crate::ah::AhTable;
use crate::counters::{Counter, Counters};
use crate::fault::Faults;
use crate::glue::bindings as b;
use crate::glue::capture::Capture;
use crate::glue::debugfs::DebugDir;
use crate::glue::odp::OdpBudget;
use crate::glue::{DgidCache, GidGeneration, IbDev, IbDevRef, NetDev, Udata};
use crate::limits::{Limits, Obj};
use crate::mcast::McastTable;
use crate::mr::MrTable;
use crate::qp::QpTable;
use crate::qp_counter::CounterSets;
use crate::xrc::XrcSrqTable;
use kernel::prelude::*;
use kernel::sync::Arc;

/// Per-device driver state (grows with the datapath).
///
/// # Locking
/// Each table has its own lock, documented on it ([`MrTable`], [`AhTable`], [`QpTable`],
/// [`XrcSrqTable`], [`CounterSets`], a mutex with nothing nested in it, [`McastTable`]); the
/// QP locks are in [`crate::qp::Qp`]'s `# Locking` section, the CQ's and SRQ's on their
/// fields. Across objects, outermost first: a QP's `engine` (bottom halves off) → the MR
/// table's window → region → `staged`, or a QP's `rx` (the QP table's lookup takes no
/// lock, RCU), or a QP ring
/// lock → the AH table or an SRQ's ring, or a CQ's lock, or (an XRC target QP, possibly in
/// its `claim`) the XRC table → an SRQ's ring or a CQ's lock; the multicast table's `ctl` →
/// its `groups` (never held across another lock).
/// A QP's `engine` → the fault rules' lock ([`Faults`]; nothing is taken inside it).
/// Bottom-half locks (QP `engine`, MR window and region) are never taken under an
/// interrupts-off lock; every interrupts-off lock is held for a bounded, allocation-free
/// section whose length no user chooses (docs/architecture.md lists each).
#[pin_data]
pub(crate) struct DeviceData {
    /// The device's debugfs directory (`rrxe/<dev>/`), made when the device is enabled.
    /// First, so that it is dropped (its files removed, their operations finished) before
    /// the state they show.
    pub(crate) debugfs: DebugDir,
    /// The capture netdev (`rrxe0cap`, made by the `capture` file): second, so that it is
    /// removed after the file that makes it, before anything else goes.
    #[pin]
    pub(crate) capture: Capture,
    /// Fault injection rules (its `faults` file).
    #[pin]
    pub(crate) faults: Faults,
    /// Counters for `rdma statistic`.
    pub(crate) counters: Counters,
    /// The per-QP counter objects (`rdma statistic qp`) and what they were given.
    #[pin]
    pub(crate) qp_counters: CounterSets,
    /// Live objects per kind, against the advertised maxima.
    pub(crate) limits: Limits,
    /// Registered memory regions.
    #[pin]
    pub(crate) mrs: MrTable,
    /// Address handles of user contexts.
    #[pin]
    pub(crate) ahs: AhTable,
    /// Queue pairs by number.
    #[pin]
    pub(crate) qps: QpTable,
    /// XRC SRQs by number.
    #[pin]
    pub(crate) xrc_srqs: XrcSrqTable,
    /// Multicast groups and their QPs.
    #[pin]
    pub(crate) mcast: McastTable,
    /// The port's GID-table generation: moved by every GID the core adds or deletes
    /// ([`gid_changed`]), read by each transmit to know whether the source netdev it kept
    /// is still that of its GID (`glue::IbDev::with_gid_netdev`). Atomic, no lock.
    pub(crate) gid_gen: GidGeneration,
    /// The destination GIDs received packets were found to have, kept under `gid_gen`
    /// (`glue::IbDev::has_roce_gid_kept`). Lock-free.
    pub(crate) dgids: DgidCache,
}

/// Entries in the port's GID table (the core fills them from the netdev's addresses).
const GID_TABLE_LEN: i32 = 1024;
/// Size of a management datagram (IB_MGMT_MAD_SIZE).
const MGMT_MAD_SIZE: u32 = 256;
/// The one partition key, full membership default partition.
const DEFAULT_PKEY: u16 = 0xffff;
/// Largest message.
const MAX_MSG_SIZE: u32 = 1 << 31;
/// IEEE OUI-less vendor id used by software RDMA devices.
const VENDOR_ID: u32 = 0x00ff_ffff;

/// Headers that sit between the Ethernet payload and the RDMA payload in the worst case
/// (IPv6 + UDP + BTH + the largest extended header + ICRC), as the core's `iboe_get_mtu`.
const ROCE_OVERHEAD: u32 = 40 + 8 + 12 + 28 + 4;

/// The largest IB MTU that fits into an Ethernet MTU.
pub(crate) fn ib_mtu_for(eth_mtu: u32) -> b::ib_mtu {
    let room = eth_mtu.saturating_sub(ROCE_OVERHEAD);
    match room {
        4096.. => b::ib_mtu_IB_MTU_4096,
        2048.. => b::ib_mtu_IB_MTU_2048,
        1024.. => b::ib_mtu_IB_MTU_1024,
        512.. => b::ib_mtu_IB_MTU_512,
        _ => b::ib_mtu_IB_MTU_256,
    }
}

/// `rdma link add NAME type rrxe netdev NDEV`: checks the request; returns the new
/// device's data (glue creates and registers the device).
pub(crate) fn newlink(name: &CStr, ndev: &NetDev) -> Result<impl PinInit<DeviceData>> {
    if !ndev.is_ether() {
        pr_err!(
            "rrxe: cannot add {}: {} is not an Ethernet device\n",
            name,
            ndev.name()
        );
        return Err(EINVAL);
    }
    if let Some(dev) = IbDevRef::by_netdev(ndev) {
        pr_err!(
            "rrxe: cannot add {}: {} already has {}\n",
            name,
            ndev.name(),
            dev.name()
        );
        return Err(EEXIST);
    }
    if IbDevRef::name_exists(name) {
        pr_err!(
            "rrxe: cannot add {}: an RDMA device of that name exists\n",
            name
        );
        return Err(EEXIST);
    }
    // Where the netdev is, the device receives: its namespace's sockets first (a bind
    // failure is this command's error); and where its upper devices are (shared mode: a
    // pod's macvlan or ipvlan receives what is addressed to the pod), logged on failure.
    crate::glue::open_sockets(ndev)?;
    ndev.for_each_upper(|up| {
        let _ = crate::glue::open_sockets(up);
    });
    let qps = QpTable::new()?;
    let xrc_srqs = XrcSrqTable::new()?;
    let mrs = MrTable::new()?;
    let ahs = AhTable::new()?;
    let mcast = McastTable::new()?;
    Ok(pin_init!(DeviceData {
        debugfs: DebugDir::new(),
        capture <- Capture::new(),
        faults <- Faults::new(),
        counters: Counters::new(),
        qp_counters <- CounterSets::new(),
        limits: Limits::new(),
        mrs <- mrs,
        ahs <- ahs,
        qps <- qps,
        xrc_srqs <- xrc_srqs,
        mcast <- mcast,
        gid_gen: GidGeneration::new(),
        dgids: DgidCache::new(),
    }))
}

/// Called by the core once the device is registered, and again after each move to another
/// network namespace (`rdma dev set NAME netns NS`, exclusive mode): report the port state.
///
/// A device works in the namespace of its netdev (sockets, routes, addresses are there), so
/// it may only be moved where its netdev already is (move the netdev first, as sriov-cni
/// before rdma-cni does). A move elsewhere is refused here, the one place the core asks the
/// driver: the command fails with EINVAL and the device stays disabled (invisible to verbs)
/// in that namespace until it is moved back or its netdev follows and it is moved again.
/// Returning to init_net is always accepted: that is where the core brings a device back
/// when its namespace dies, before that namespace's netdevs are moved or removed.
pub(crate) fn enable(dev: &IbDev) -> Result {
    let ndev = dev.netdev().ok_or(ENODEV)?;
    if !dev.in_netns_of(&ndev) && !dev.in_init_net() {
        pr_err!(
            "rrxe: {} cannot work in a network namespace without its netdev {}: move {} there first\n",
            dev.name(),
            ndev.name(),
            ndev.name()
        );
        return Err(EINVAL);
    }
    // No sockets opened here: newlink opened them, and a netdev that moves gets them in its
    // new namespace (NETDEV_REGISTER). When a namespace dies, the core brings the device
    // back while its netdev is still in the dying namespace, which takes no new sockets.
    dev.data().debugfs.create(dev);
    pr_info!("rrxe: {} added on {}\n", dev.name(), ndev.name());
    dev.port_event(port_event_for(&ndev));
    Ok(())
}

fn port_event_for(ndev: &NetDev) -> b::ib_event_type {
    if ndev.is_oper_up() {
        b::ib_event_type_IB_EVENT_PORT_ACTIVE
    } else {
        b::ib_event_type_IB_EVENT_PORT_ERR
    }
}

/// Netdev notifier: the port follows its netdev.
pub(crate) fn netdev_event(event: core::ffi::c_ulong, ndev: &NetDev) {
    let Ok(event) = u32::try_from(event) else {
        return;
    };
    let Some(dev) = IbDevRef::by_netdev(ndev) else {
        // Shared mode: a macvlan or ipvlan of a device's netdev, registered in (or moved
        // to) a pod's namespace, or brought up there: the pod's sockets deliver to the
        // device what is addressed to the pod.
        if (event == b::netdev_cmd_NETDEV_REGISTER || event == b::netdev_cmd_NETDEV_UP)
            && IbDevRef::by_netdev_or_below(ndev).is_some()
        {
            let _ = crate::glue::open_sockets(ndev);
        }
        return;
    };
    match event {
        // Moving to another namespace (`ip link set DEV netns NS`): the device follows its
        // netdev, as a hardware RoCE device does; it receives there once that namespace
        // has its sockets (NETDEV_REGISTER below, sent in the new namespace).
        b::netdev_cmd_NETDEV_UNREGISTER if ndev.is_moving_netns() => {}
        b::netdev_cmd_NETDEV_UNREGISTER => {
            pr_info!("rrxe: {} removed with {}\n", dev.name(), ndev.name());
            dev.unregister_queued();
        }
        b::netdev_cmd_NETDEV_REGISTER => {
            // Logged by open_sockets; the device keeps working wherever it can.
            let _ = crate::glue::open_sockets(ndev);
        }
        b::netdev_cmd_NETDEV_UP | b::netdev_cmd_NETDEV_DOWN | b::netdev_cmd_NETDEV_CHANGE => {
            let ev = port_event_for(ndev);
            if ev == b::ib_event_type_IB_EVENT_PORT_ERR {
                dev.data().counters.inc(Counter::LinkDowned);
            }
            dev.port_event(ev);
        }
        // The MTU is read from the netdev at every query: nothing to store.
        _ => {}
    }
}

/// Device attributes (`ibv_query_device`, and the core's copy in `ib_device.attrs`).
pub(crate) fn query_device(dev: &IbDev, attr: &mut b::ib_device_attr, udata: &Udata<'_>) -> Result {
    if udata.inlen() != 0 || udata.outlen() != 0 {
        return Err(EINVAL);
    }
    *attr = b::ib_device_attr::default();
    attr.sys_image_guid = dev.node_guid();
    attr.max_mr_size = u64::MAX;
    // Any power-of-two page size from the kernel's own up (FRMR blocks, ib_umem pages).
    attr.page_size_cap = !(kernel::page::PAGE_SIZE as u64 - 1) & 0xffff_ffff;
    attr.vendor_id = VENDOR_ID;
    attr.kernel_cap_flags = u64::from(
        b::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG | b::ib_kernel_cap_flags_IBK_ON_DEMAND_PAGING,
    );
    // On-demand paging (crate::mr::odp), explicit and implicit, for RC sends, receives
    // (also through an SRQ), RDMA WRITE, READ and atomics, as tests/user/odp.c and
    // odp_srq.c show; UD sends (odp_ud.c); not UC or XRC (the same code paths, untested).
    attr.odp_caps.general_caps = u64::from(
        b::ib_odp_general_cap_bits_IB_ODP_SUPPORT
            | b::ib_odp_general_cap_bits_IB_ODP_SUPPORT_IMPLICIT,
    );
    attr.odp_caps.per_transport_caps.rc_odp_caps = b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SEND
        | b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_RECV
        | b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_WRITE
        | b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_READ
        | b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_ATOMIC
        | b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SRQ_RECV
        // FLUSH checks only the range and the rights, which need no page; ATOMIC WRITE
        // stores through the same faulting path as the other atomics (RNR NAK, then the
        // fault): both work on ODP regions as they are, as rdma_rxe 7.x advertises them.
        | crate::glue::ODP_SUPPORT_FLUSH_ATOMIC_WRITE;
    // UD: sends from ODP memory (the sender waits for the fault, as RC's). Not receives:
    // a datagram whose buffer is not present is dropped (UD is unreliable), as mlx5
    // offers UD ODP for sends only.
    attr.odp_caps.per_transport_caps.ud_odp_caps = b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SEND;
    attr.max_pkeys = 1;
    attr.local_ca_ack_delay = 15;
    // The "firmware" version (ibv_devinfo's fw_ver, sysfs fw_ver): the module's version.
    attr.fw_ver = crate::glue::module_version_raw();
    // The object maxima, enforced by crate::limits.
    attr.max_pd = Obj::Pd.max() as _;
    attr.max_mr = Obj::Mr.max() as _;
    attr.max_mw = Obj::Mw.max() as _;
    attr.max_cq = Obj::Cq.max() as _;
    attr.max_cqe = crate::cq::MAX_CQE as _;
    attr.max_fast_reg_page_list_len = 512;
    attr.max_ah = Obj::Ah.max() as _;
    attr.max_qp = Obj::Qp.max() as _;
    attr.max_qp_wr = crate::qp::MAX_QP_WR as _;
    attr.max_send_sge = crate::qp::MAX_SGE as _;
    attr.max_recv_sge = crate::qp::MAX_SGE as _;
    attr.max_sge_rd = crate::qp::MAX_SGE as _;
    attr.max_srq = Obj::Srq.max() as _;
    attr.max_srq_wr = crate::qp::MAX_QP_WR as _;
    attr.max_srq_sge = crate::qp::MAX_SGE as _;
    attr.max_qp_rd_atom = crate::qp::MAX_RD_ATOMIC as _;
    attr.max_qp_init_rd_atom = crate::qp::MAX_INIT_RD_ATOMIC as _;
    attr.max_res_rd_atom = 16 * 1024;
    attr.atomic_cap = b::ib_atomic_cap_IB_ATOMIC_HCA;
    // The responder serves ATOMIC WRITE and FLUSH (global visibility: memory is coherent),
    // and user QPs post ATOMIC WRITE. SRQs resize (`srq::modify`), as rdma_rxe's.
    attr.device_cap_flags = (b::ib_device_cap_flags_IB_DEVICE_RC_RNR_NAK_GEN
        | b::ib_device_cap_flags_IB_DEVICE_SRQ_RESIZE
        | b::ib_device_cap_flags_IB_DEVICE_SYS_IMAGE_GUID
        | b::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS
        | b::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW
        | b::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW_TYPE_2B
        | b::ib_device_cap_flags_IB_DEVICE_ATOMIC_WRITE
        | b::ib_device_cap_flags_IB_DEVICE_FLUSH_GLOBAL
        | b::ib_device_cap_flags_IB_DEVICE_XRC) as u64;
    // UD multicast (crate::mcast), with rdma_rxe's limits.
    attr.max_mcast_grp = crate::proto::mcast::MAX_GROUPS as _;
    attr.max_mcast_qp_attach = crate::proto::mcast::MAX_QP_ATTACH as _;
    attr.max_total_mcast_qp_attach = crate::proto::mcast::MAX_TOTAL_ATTACH as _;
    attr.max_pi_fast_reg_page_list_len = 0;
    Ok(())
}

/// Port attributes, derived from the netdev at every call.
pub(crate) fn query_port(dev: &IbDev, port: u32, attr: &mut b::ib_port_attr) -> Result {
    if port != 1 {
        return Err(EINVAL);
    }
    let ndev = dev.netdev().ok_or(ENODEV)?;
    let up = ndev.is_oper_up();
    attr.state = if up {
        b::ib_port_state_IB_PORT_ACTIVE
    } else {
        b::ib_port_state_IB_PORT_DOWN
    };
    attr.phys_state = if up {
        b::ib_port_phys_state_IB_PORT_PHYS_STATE_LINK_UP as u8
    } else {
        b::ib_port_phys_state_IB_PORT_PHYS_STATE_DISABLED as u8
    };
    attr.max_mtu = b::ib_mtu_IB_MTU_4096;
    attr.active_mtu = ib_mtu_for(ndev.mtu());
    attr.gid_tbl_len = GID_TABLE_LEN;
    attr.port_cap_flags = b::ib_port_capability_mask_bits_IB_PORT_CM_SUP;
    attr.max_msg_sz = MAX_MSG_SIZE;
    attr.pkey_tbl_len = 1;
    attr.max_vl_num = 1;
    dev.eth_speed(attr);
    Ok(())
}

/// What never changes about a port.
pub(crate) fn port_immutable(_dev: &IbDev, port: u32, imm: &mut b::ib_port_immutable) -> Result {
    if port != 1 {
        return Err(EINVAL);
    }
    imm.pkey_tbl_len = 1;
    imm.gid_tbl_len = GID_TABLE_LEN;
    imm.core_cap_flags = b::RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
    imm.max_mad_size = MGMT_MAD_SIZE;
    Ok(())
}

/// The core is adding a GID to the port (the op runs before the entry is stored) or has
/// marked one deleted (before it drops the entry's netdev): every kept source netdev is
/// looked up again before its next use.
pub(crate) fn gid_changed(dev: &IbDev) {
    dev.data().gid_gen.bump();
}

/// The partition table: one default key.
pub(crate) fn query_pkey(_dev: &IbDev, port: u32, index: u16) -> Result<u16> {
    if port != 1 || index != 0 {
        return Err(EINVAL);
    }
    Ok(DEFAULT_PKEY)
}

/// What a user context carries.
pub(crate) struct UctxData {
    /// What its on-demand-paging MRs cover, against `odp_max_bytes` (shared with each ODP
    /// MR, which gives its part back when it goes, maybe after the context).
    pub(crate) odp: Arc<OdpBudget>,
}

/// A user context: tells the provider which ABI this kernel speaks.
pub(crate) fn alloc_ucontext(_dev: &IbDev, udata: &mut Udata<'_>) -> Result<UctxData> {
    let data = UctxData {
        odp: OdpBudget::new()?,
    };
    if udata.is_user() {
        let resp = b::rrxe_alloc_ucontext_resp {
            abi_version: b::RRXE_UVERBS_ABI_VERSION,
            reserved: 0,
        };
        udata.respond(&resp)?;
    }
    Ok(data)
}
