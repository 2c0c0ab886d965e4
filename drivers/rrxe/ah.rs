// SPDX-License-Identifier: GPL-2.0
//! Address handles: the address vector a UD send (or an RC/UC QP) sends to.

use crate::glue::bindings::{self as b, rrxe_kav};
use crate::glue::obj::{Created, NewObj};
use crate::glue::sync::{new_irq_spinlock, IrqSpinLock};
use crate::glue::{IbDev, Udata};
use crate::limits;
use crate::slots::{SlotTable, Take};
use kernel::prelude::*;

/// An address vector (IPs, MAC, GRH fields).
pub(crate) type Av = rrxe_kav;

/// The path an RC/UC QP with address vector `av` takes packets from: the addresses it sends
/// from and to.
pub(crate) fn path(av: &Av) -> crate::proto::addr::Path {
    crate::proto::addr::Path {
        v6: av.ipv6 != 0,
        local: av.sip,
        remote: dip(av),
    }
}

/// The destination IP address of `av` (IPv4: the first 4 bytes, the rest zero), from its
/// destination GID: the GID itself for IPv6, its last 4 bytes for IPv4 (an IPv4-mapped
/// GID, `::ffff:a.b.c.d`). Not kept in the AV, which holds its source netdev instead
/// within the size it had: a QP's attributes hold one, and `Qp::new`'s stack frame is the
/// module's largest.
pub(crate) fn dip(av: &Av) -> [u8; 16] {
    if av.ipv6 != 0 {
        return av.dgid;
    }
    let g = &av.dgid;
    [
        g[12], g[13], g[14], g[15], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ]
}

/// A user's address vector (create_ah, modify_qp's path) must send from a GID whose
/// netdev is in the caller's network namespace: in shared mode every pod sees every pod's
/// GIDs (the core does not filter the table by namespace), and one that used another's
/// would send and receive as that pod, through its netdev. The core checks nothing of
/// the kind for verbs, nor does rdma_rxe; the RDMA CM refuses a GID whose netdev is not in
/// the id's namespace with ENODEV (`cma_validate_port`, drivers/infiniband/core/cma.c),
/// and so does this. Kernel consumers are not checked: their verbs run in whatever task
/// the ULP calls from (a CM event's worker), and the CM checked their GID already.
pub(crate) fn check_caller_netns(av: &Av) -> Result {
    match crate::glue::current_netns() {
        Some(n) if n == crate::glue::NdevId::of_av(av).netns() => Ok(()),
        _ => Err(ENODEV),
    }
}

/// Most user address handles per device.
pub(crate) const MAX_AH: usize = 1 << 15;

/// Address handles of user contexts, by the number userspace names them with.
#[pin_data]
pub(crate) struct AhTable {
    /// (PD identity, AV) by number; number 0 unused. IRQs off, O(1) (a [`SlotTable`]: no
    /// scan, growth by one chunk allocated outside it): `insert` and `remove` (user
    /// create_ah/destroy_ah, process context) and `get` (a QP's engine run decoding a user
    /// UD WQE, process context or softirq, nested in the QP's `sq` lock). Innermost.
    #[pin]
    inner: IrqSpinLock<SlotTable<(usize, Av)>>,
}

impl AhTable {
    /// An empty table (process context: allocates its chunk directory).
    pub(crate) fn new() -> Result<impl PinInit<Self>> {
        let slots = SlotTable::new(MAX_AH, 0)?;
        Ok(pin_init!(AhTable {
            inner <- new_irq_spinlock!(slots, "rrxe_ah_table"),
        }))
    }

    /// Adds an AV of PD `pd`; returns its number (> 0). Numbers are reused in the order
    /// they were freed. The loop ends as [`crate::mr`]'s key table's does: each round takes
    /// a number, fails, or finds the table grown by a chunk.
    pub(crate) fn insert(&self, pd: usize, av: Av) -> Result<u32> {
        loop {
            let took = self.inner.lock().take();
            match took {
                Take::Slot { index, .. } => {
                    let filled = self.inner.lock().fill(index, (pd, av));
                    // Unreachable by `take`'s reservation.
                    return filled.map(|()| index).map_err(|_| EINVAL);
                }
                Take::Grow { base } => {
                    let chunk = SlotTable::chunk(base)?;
                    let unused = self.inner.lock().add_chunk(chunk);
                    // Another thread's chunk came first: ours is freed here, unlocked.
                    drop(unused);
                }
                Take::Full => return Err(ENOMEM),
            }
        }
    }

    /// Removes AH `num`.
    pub(crate) fn remove(&self, num: u32) {
        let _ = self.inner.lock().remove(num, None);
    }

    /// The AV of AH `num`, if it exists and belongs to PD `pd`.
    pub(crate) fn get(&self, num: u32, pd: usize) -> Option<Av> {
        match self.inner.lock().get(num) {
            Some((p, av)) if *p == pd => Some(*av),
            _ => None,
        }
    }
}

/// What an `ib_ah` carries for us.
pub(crate) struct AhData {
    /// The address vector.
    pub(crate) av: Av,
    /// Its number in the device's user AH table (0 for kernel AHs).
    pub(crate) num: u32,
}

/// `create_ah` (and `create_user_ah`) with the AV converted from the core's attribute,
/// under one unit of the device's AH limit: a user AH gets a number in the device's AH
/// table, which goes back in the response.
pub(crate) fn create<'a>(
    obj: NewObj<'a, b::ib_ah>,
    av: Result<Av>,
    udata: &mut Udata<'_>,
) -> Result<Created<'a, b::ib_ah>> {
    let dev = obj.dev();
    dev.data().limits.counted(limits::Obj::Ah, || {
        let av = av?;
        let pd = obj.ib().pd as usize;
        let mut num = 0;
        if udata.is_user() {
            check_caller_netns(&av)?;
            num = dev.data().ahs.insert(pd, av)?;
            let resp = b::rrxe_create_ah_resp {
                ah_num: num,
                reserved: 0,
            };
            if let Err(e) = udata.respond(&resp) {
                dev.data().ahs.remove(num);
                return Err(e);
            }
        }
        // Plain data, initialised by value.
        Ok(obj.init_value(AhData { av, num }))
    })
}

/// `destroy_ah` of AH `num` (0 for a kernel AH).
pub(crate) fn destroy(dev: &IbDev, num: u32) {
    if num != 0 {
        dev.data().ahs.remove(num);
    }
    dev.data().limits.put(limits::Obj::Ah);
}
