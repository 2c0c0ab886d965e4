// SPDX-License-Identifier: GPL-2.0
//! Address handles: the address vector a UD send (or an RC/UC QP) sends to.

use crate::glue::bindings::{self as b, rrxe_kav};
use crate::glue::obj::{Created, NewObj};
use crate::glue::sync::{new_irq_spinlock, IrqSpinLock};
use crate::glue::{IbDev, Udata};
use crate::limits;
use kernel::alloc::KVVec;
use kernel::prelude::*;

/// An address vector (IPs, MAC, GRH fields).
pub(crate) type Av = rrxe_kav;

/// The path an RC/UC QP with address vector `av` takes packets from: the addresses it sends
/// from and to.
pub(crate) fn path(av: &Av) -> crate::proto::addr::Path {
    crate::proto::addr::Path {
        v6: av.ipv6 != 0,
        local: av.sip,
        remote: av.dip,
    }
}

/// Most user address handles per device.
pub(crate) const MAX_AH: usize = 1 << 15;

struct Slots {
    /// (PD identity, AV); index 0 unused.
    slots: KVVec<Option<(usize, Av)>>,
}

/// Address handles of user contexts, by the number userspace names them with.
#[pin_data]
pub(crate) struct AhTable {
    /// The slots. IRQs off: `insert` and `remove` (user create_ah/destroy_ah, process
    /// context; the slot vector grows outside it) and `get` (a QP's engine run decoding a
    /// user UD WQE, process context or softirq, nested in the QP's `sq` lock). Innermost.
    #[pin]
    inner: IrqSpinLock<Slots>,
}

impl AhTable {
    /// An empty table.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(AhTable {
            inner <- new_irq_spinlock!(Slots { slots: KVVec::new() }, "rrxe_ah_table"),
        })
    }

    /// Adds an AV of PD `pd`; returns its number (> 0).
    pub(crate) fn insert(&self, pd: usize, av: Av) -> Result<u32> {
        loop {
            let len = {
                let mut s = self.inner.lock();
                if let Some((i, slot)) = s
                    .slots
                    .iter_mut()
                    .enumerate()
                    .skip(1)
                    .find(|(_, e)| e.is_none())
                {
                    *slot = Some((pd, av));
                    return Ok(i as u32);
                }
                s.slots.len()
            };
            if len >= MAX_AH {
                return Err(ENOMEM);
            }
            let want = core::cmp::max(16, len * 2).min(MAX_AH);
            let mut bigger: KVVec<Option<(usize, Av)>> = KVVec::with_capacity(want, GFP_KERNEL)?;
            bigger.extend_with(want, None, GFP_KERNEL)?;
            let mut s = self.inner.lock();
            if s.slots.len() == len {
                for (d, e) in bigger.iter_mut().zip(s.slots.iter()) {
                    *d = *e;
                }
                core::mem::swap(&mut s.slots, &mut bigger);
            }
        }
    }

    /// Removes AH `num`.
    pub(crate) fn remove(&self, num: u32) {
        if let Some(e) = self.inner.lock().slots.get_mut(num as usize) {
            *e = None;
        }
    }

    /// The AV of AH `num`, if it exists and belongs to PD `pd`.
    pub(crate) fn get(&self, num: u32, pd: usize) -> Option<Av> {
        match self.inner.lock().slots.get(num as usize) {
            Some(Some((p, av))) if *p == pd => Some(*av),
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
