// SPDX-License-Identifier: GPL-2.0
//! The MR and MW verbs' policy: registration (DMA, user, fast-registration), re-registration,
//! the page list `ib_map_mr_sg` records, deregistration, and window allocation.

use super::{check_dmabuf_access, check_user_access, dmabuf_region, odp_implicit_region};
use super::{check_user_range, dma_region, fast_region, user_extent};
use super::{odp_region, user_region};
use super::{AccessFlags, Region};
use crate::counters::Counter;
use crate::glue::bindings as b;
use crate::glue::dmabuf::DmabufMap;
use crate::glue::mem::Umem;
use crate::glue::obj::{new_boxed, Created, NewObj, PageSink};
use crate::glue::odp::{OdpBudget, OdpImplicit, OdpUmem};
use crate::glue::sync::{new_irq_spinlock, IrqSpinLock};
use crate::glue::IbDev;
use crate::limits;
use kernel::prelude::*;
use kernel::sync::Arc;

/// What an `ib_mr` carries for us: the page list of a fast-registration MR.
#[pin_data]
pub(crate) struct MrData {
    /// The pages `ib_map_mr_sg` recorded. IRQs off: `map_mr_sg` and its page callback (the
    /// consumer's context), and a REG_MR `post_send` (any context), which stages the list
    /// into the MR table inside it (the table's `inner`, then the region's `staged`, both
    /// interrupts-off locks).
    #[pin]
    fr: IrqSpinLock<FrPages>,
}

/// Pages recorded by `ib_map_mr_sg` for the next REG_MR work request.
struct FrPages {
    /// Kernel virtual address of each page (capacity = max_num_sg, never reallocated).
    pages: KVec<u64>,
    /// Entries of `pages` in use.
    n: usize,
}

/// Largest fast-registration page list.
const MAX_FR_PAGES: u32 = 512;

impl PageSink for MrData {
    fn reset(&self) {
        self.fr.lock().n = 0;
    }

    fn set_page(&self, addr: u64) -> Result {
        let mut fr = self.fr.lock();
        let n = fr.n;
        let slot = fr.pages.get_mut(n).ok_or(ENOMEM)?;
        *slot = addr;
        fr.n = n + 1;
        Ok(())
    }
}

impl MrData {
    /// At REG_MR post time: loads the recorded pages into fast-registration region `key`
    /// of PD `pd` (EINVAL if it is not one).
    pub(crate) fn load(&self, dev: &IbDev, key: u32, pd: usize) -> Result {
        let pages = self.fr.lock();
        let list = pages.pages.get(..pages.n).ok_or(EINVAL)?;
        dev.data()
            .mrs
            .fast_reg_load(key, pd, list)
            .map_err(|_| EINVAL)
    }
}

/// Allocates the MR object, registers `region` in the device's table and returns the
/// `ib_mr`, under one unit of the device's MR limit.
fn new_mr(dev: &IbDev, region: Region, fr_cap: usize) -> Result<*mut b::ib_mr> {
    dev.data().limits.counted(limits::Obj::Mr, || {
        let mut pages = KVec::with_capacity(fr_cap, GFP_KERNEL)?;
        pages.extend_with(fr_cap, 0u64, GFP_KERNEL)?;
        let data = try_pin_init!(MrData {
            fr <- new_irq_spinlock!(FrPages { pages, n: 0 }, "rrxe_fr_pages"),
        }? Error);
        new_boxed::<b::ib_mr>(data, |ib| {
            let key = dev.data().mrs.insert(region)?;
            ib.lkey = key;
            ib.rkey = key;
            Ok(())
        })
    })
}

/// `get_dma_mr`: all of kernel memory for a kernel consumer of PD `pd`.
pub(crate) fn get_dma(dev: &IbDev, pd: usize, access: AccessFlags) -> Result<*mut b::ib_mr> {
    new_mr(dev, dma_region(pd, access)?, 0)
}

/// `reg_user_mr`: `length` bytes of the process at `start`, pinned (or on demand, its
/// user context's ODP budget `odp`), seen at `iova`.
pub(crate) fn reg_user(
    dev: &IbDev,
    pd: usize,
    (start, length, iova): (u64, u64, u64),
    access: AccessFlags,
    odp: Option<&Arc<OdpBudget>>,
) -> Result<*mut b::ib_mr> {
    let region = user_mr_region(dev, pd, (start, length, iova), access, odp)?;
    new_mr(dev, region, 0)
}

/// The region of a user registration (pinned, or on-demand paging for
/// `IBV_ACCESS_ON_DEMAND`, within the user context's budget `odp`), not yet in the table.
fn user_mr_region(
    dev: &IbDev,
    pd: usize,
    (start, length, iova): (u64, u64, u64),
    access: AccessFlags,
    odp: Option<&Arc<OdpBudget>>,
) -> Result<Region> {
    check_user_access(access)?;
    check_user_range(start, length, iova)?;
    if access.contains(AccessFlags::ON_DEMAND) {
        // On demand needs the caller's process and context: a kernel caller has neither.
        let budget = odp.ok_or(EINVAL)?;
        // Implicit ODP: the whole address space (start 0, length U64_MAX), seen at IOVA 0
        // only (mlx5 refuses another IOVA with EINVAL too). Its children take their part
        // of the budget as faults make them.
        if start == 0 && length == u64::MAX {
            if iova != 0 {
                return Err(EINVAL);
            }
            let mem = OdpImplicit::new(dev, access.bits() as i32, budget.clone())?;
            return odp_implicit_region(pd, access, mem);
        }
        // Past the context's bound: ENOMEM (what the memory would have answered), before
        // anything is allocated.
        let span = OdpBudget::span(start, length).ok_or(EINVAL)?;
        let Some(charge) = OdpBudget::take(budget, span) else {
            dev.data().counters.inc(Counter::OdpBoundRefused);
            return Err(ENOMEM);
        };
        let umem = OdpUmem::get(dev, start, length, access.bits() as i32, charge)?;
        odp_region(pd, access, iova, length, umem)
    } else {
        let umem = Umem::get(dev, start, length, access.bits() as i32)?;
        user_region(pd, access, iova, length, umem)
    }
}

/// `reg_user_mr_dmabuf`: a user MR over `[offset, offset + length)` of the dma-buf `fd`, at
/// `iova`. The core (UVERBS_METHOD_REG_DMABUF_MR) has checked the access flags against its
/// list and that `offset` and `iova` agree within a page; both are checked again here.
pub(crate) fn reg_dmabuf(
    dev: &IbDev,
    pd: usize,
    (offset, length, iova): (u64, u64, u64),
    fd: i32,
    access: AccessFlags,
) -> Result<*mut b::ib_mr> {
    check_dmabuf_access(access)?;
    check_user_range(offset, length, iova)?;
    let map = DmabufMap::get(dev, fd, offset, length)?;
    let r = dmabuf_region(pd, access, iova, length, map)?;
    new_mr(dev, r, 0)
}

/// `IB_MR_REREG_*`.
const REREG_TRANS: i32 = 1;
const REREG_PD: i32 = 2;
const REREG_ACCESS: i32 = 4;

/// What `rereg_user_mr` asks.
pub(crate) struct Rereg<'a> {
    /// IB_MR_REREG_* flags.
    pub(crate) flags: i32,
    /// New user address, length and IOVA (IB_MR_REREG_TRANS).
    pub(crate) start: u64,
    /// See `start`.
    pub(crate) length: u64,
    /// See `start`.
    pub(crate) iova: u64,
    /// New access flags (IB_MR_REREG_ACCESS).
    pub(crate) access: AccessFlags,
    /// The new PD (IB_MR_REREG_PD, or the current one).
    pub(crate) pd: usize,
    /// The ODP budget of the command's user context (`None` for a kernel caller).
    pub(crate) odp: Option<&'a Arc<OdpBudget>>,
}

/// `rereg_user_mr` of MR `key` in PD `old_pd`, always in place (`None`: the core keeps the
/// MR object and its keys, and records a new PD, IOVA and length itself). A new translation
/// or new access flags make a new region (pinned again) that takes the old one's place
/// under the same lkey and rkey, as mlx5 re-registers: a peer holding the rkey then has
/// the new rights, no more and no less. A PD change alone moves the region.
pub(crate) fn rereg_user(
    dev: &IbDev,
    key: u32,
    old_pd: usize,
    r: &Rereg<'_>,
) -> Result<Option<*mut b::ib_mr>> {
    let mrs = &dev.data().mrs;
    let Ok(Some((cur_access, cur_iova, cur_len, cur_start))) =
        mrs.with(key, old_pd, |r| user_extent(r))
    else {
        return Err(EINVAL);
    };
    // A region with windows bound to it keeps its PD, access and translation: the IBTA's
    // reregistration, like deregistration, refuses a region in use by windows (rdma_rxe
    // refuses to deregister one with EINVAL).
    if mrs.has_bound_windows(key) {
        return Err(EINVAL);
    }
    if r.flags & (REREG_TRANS | REREG_ACCESS) != 0 {
        let access = if r.flags & REREG_ACCESS != 0 {
            r.access
        } else {
            cur_access
        };
        let (start, length, iova) = if r.flags & REREG_TRANS != 0 {
            (r.start, r.length, r.iova)
        } else {
            (cur_start, cur_len, cur_iova)
        };
        // The old region keeps its part of the ODP budget until it is replaced.
        let new = user_mr_region(dev, r.pd, (start, length, iova), access, r.odp)?;
        // The old region's memory is released here, in process context, outside every lock.
        drop(mrs.replace(key, old_pd, new)?);
        return Ok(None);
    }
    if r.flags & REREG_PD != 0 && mrs.set_pd(key, old_pd, r.pd).is_err() {
        return Err(EINVAL);
    }
    Ok(None)
}

/// `alloc_mr`: a fast-registration MR for up to `max_num_sg` pages.
pub(crate) fn alloc_fast(
    dev: &IbDev,
    pd: usize,
    mr_type: b::ib_mr_type,
    max_num_sg: u32,
) -> Result<*mut b::ib_mr> {
    if mr_type != b::ib_mr_type_IB_MR_TYPE_MEM_REG {
        return Err(EINVAL);
    }
    if max_num_sg == 0 || max_num_sg > MAX_FR_PAGES {
        return Err(EINVAL);
    }
    let r = fast_region(pd, max_num_sg as usize)?;
    new_mr(dev, r, max_num_sg as usize)
}

/// `dereg_mr`, before the MR object is freed: unreachable from the datapath from here
/// on; its memory is released here, in process context.
pub(crate) fn dereg(dev: &IbDev, key: u32) {
    drop(dev.data().mrs.remove(key));
}

/// `dereg_mr`, once the object is freed: gives back the unit of the device's limit.
pub(crate) fn deregistered(dev: &IbDev) {
    dev.data().limits.put(limits::Obj::Mr);
}

/// `alloc_mw`: a type 1 or type 2B window in the MW's PD, under one unit of the device's
/// MW limit; its rkey goes into the object.
pub(crate) fn alloc_mw(mut mw: NewObj<'_, b::ib_mw>) -> Result<Created<'_, b::ib_mw>> {
    let dev = mw.dev();
    dev.data().limits.counted(limits::Obj::Mw, || {
        let (pd, ty) = (mw.ib().pd as usize, mw.ib().type_);
        let type2 = match ty {
            b::ib_mw_type_IB_MW_TYPE_1 => false,
            b::ib_mw_type_IB_MW_TYPE_2 => true,
            _ => return Err(EINVAL),
        };
        let key = dev.data().mrs.insert_window(pd, type2)?;
        mw.ib_mut().rkey = key;
        Ok(mw.init_value(()))
    })
}

/// `dealloc_mw` of window `key` (the rkey given at allocation, whose slot is the window's
/// whatever binds did to the tag).
pub(crate) fn dealloc_mw(dev: &IbDev, key: u32) {
    dev.data().mrs.remove_window(key);
    dev.data().limits.put(limits::Obj::Mw);
}
