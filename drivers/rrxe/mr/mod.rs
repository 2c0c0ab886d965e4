// SPDX-License-Identifier: GPL-2.0
//! Memory regions and memory windows: the key table and access checks.
//!
//! Files: `access` (the access flags and their checks), `region` (one region's checks and
//! copies, constructors), `odp` (page faults of on-demand-paging regions), `window`
//! (binding and unbinding windows), `fastreg` (REG_MR and invalidation), `reg` (the MR and
//! MW verbs' policy); this file: the key table.
//!
//! Each device has one table of registered regions and windows, indexed by `key >> 8`; the
//! low 8 bits are a per-registration tag so a stale key does not reach a newer region in the
//! same slot. A window (type 1 or 2B) is a remote view of part of a region: its rkey leads
//! to the window, which must be bound (and, for type 2B, bound to the QP using it); the
//! access is then checked against the window and made through the region.
//! The datapath resolves a key and accesses the memory under the table lock, so a region
//! that was deregistered (removed from the table) can no longer be reached, and its memory
//! (pinned pages) is released afterwards by the deregistering thread, in process context.

pub(crate) mod access;
mod fastreg;
mod odp;
mod reg;
mod region;
mod window;

pub(crate) use access::{check_access_flags, check_dmabuf_access, check_user_access, AccessFlags};
pub(crate) use fastreg::FastReg;
pub(crate) use odp::{advise, Fault};
pub(crate) use region::{
    check_user_range, dma_region, dmabuf_region, fast_region, odp_implicit_region, odp_region,
    user_extent, user_region, writes, AccessError, Region, Remote,
};
pub(crate) use window::{BindReq, Window};

pub(crate) use reg::{
    alloc_fast, alloc_mw, dealloc_mw, dereg, deregistered, get_dma, reg_dmabuf, reg_user,
    rereg_user, MrData, Rereg,
};

use crate::glue::mem::Backing;
use crate::glue::sync::{new_bh_spinlock, new_irq_spinlock, BhSpinLock, IrqSpinLock};
use crate::slots::{SlotTable, Take};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;

/// A registered region in the table, with its own locks.
#[pin_data]
struct MrCell {
    /// The region. Taken with bottom halves off (process context and the QP engine, in
    /// process context or softirq) for each access to it, so copies run with interrupts
    /// on; never nested in another region's lock; may nest in a window's.
    #[pin]
    region: BhSpinLock<Region>,
    /// The page list of the next fast registration, staged by post_send (any context,
    /// hence IRQs off) and moved into the region when the REG_MR work request executes.
    /// Nests inside `region`.
    #[pin]
    staged: IrqSpinLock<Staged>,
}

/// Pages staged for a fast registration.
struct Staged {
    /// The region's PD (a fast-registration region never changes PD).
    pd: usize,
    /// Room for the region's largest page list (allocated at alloc_mr).
    pages: KVec<u64>,
    /// Entries of `pages` in use.
    n: usize,
}

/// A memory window in the table, with its own lock.
#[pin_data]
struct MwCell {
    /// The window. Taken with bottom halves off to use, bind or unbind it; a region's lock
    /// or the table lock may be taken inside it, never the other way round.
    #[pin]
    window: BhSpinLock<Window>,
}

/// What a slot holds: a reference to the object, so that an access locks only that object
/// and the table lock is held just long enough to find it.
#[derive(Clone)]
enum Entry {
    Mr(Arc<MrCell>),
    Mw(Arc<MwCell>),
}

/// The random low 8 bits of a key in a slot whose previous key had tag `last`: uniform
/// among the values other than `last`, as rdma_rxe draws them (rxe_get_next_key), so a key
/// is neither guessable from the keys a tenant was given nor the key just freed.
fn key_tag(last: Option<u8>) -> u32 {
    u32::from(crate::proto::ids::next_tag(last, crate::glue::random_u32()))
}

/// A device's memory regions and windows, by key.
///
/// Keys are `slot << 8 | tag`. Slots are reused in the order they were freed, and only
/// while more than [`MR_KEY_QUARANTINE`] others are free (else the table grows, up to
/// [`MAX_MR`] slots): a key's slot comes back no sooner than that many registrations later
/// (rdma_rxe allocates its indices cyclically for the same reason), and then with a tag
/// other than its last one. So a stale key of a PD never reaches the next registrations.
///
/// # Locking
/// `inner` (the slots; IRQs off, any context: post_send stages fast registrations
/// through it) is held only to find, insert or remove an entry, or to add a chunk of slots
/// allocated before: O(1), no copy and no scan under it, and no other lock of the table is
/// taken inside it. Each region and window has its own bottom-half lock, held for one
/// access (check and copy, with interrupts on): callers must not hold an interrupts-off
/// lock. Nesting, outermost first: window →
/// region → the region's `staged`; the table lock is taken and released on its own. An
/// on-demand-paging region's memory has its own bottom-half locks, inside the region's:
/// region → an implicit region's `children` → a umem's lock (`glue::odp`), held for one
/// copy; its page faults take none of the table's locks while they map (`mr::odp`).
#[pin_data]
pub(crate) struct MrTable {
    #[pin]
    inner: IrqSpinLock<SlotTable<Entry>>,
    /// Identity of the next registration (never reused, unlike keys: a window's binding
    /// names the region by it, so a later region under the same key is not reached).
    next_id: AtomicU64,
    /// Windows in the table: `unbind_qp` visits the slots only when there are some.
    windows: AtomicU32,
}

/// Slots of the key table (slot 0 unused).
pub(crate) const MAX_MR: usize = 1 << 16;
/// Most memory regions per device (`max_mr`).
pub(crate) const MAX_REGIONS: u32 = 0x7fff;
/// Most memory windows per device (`max_mw`). Regions and windows share the key table,
/// which has room for both maxima at once.
pub(crate) const MAX_WINDOWS: u32 = 0x7fff;
const _: () = assert!(((MAX_REGIONS + MAX_WINDOWS) as usize) < MAX_MR);
/// Free key slots a freed one waits behind before it is reused, while the table may grow
/// (the table then has at least this many slots more than it has live regions and
/// windows: 5 chunks of 256 slots, a few kilobytes, at the first registration).
pub(crate) const MR_KEY_QUARANTINE: u32 = 1024;

impl MrTable {
    /// An empty table (process context: allocates its chunk directory).
    pub(crate) fn new() -> Result<impl PinInit<Self>> {
        let slots = SlotTable::new(MAX_MR, MR_KEY_QUARANTINE)?;
        Ok(pin_init!(MrTable {
            inner <- new_irq_spinlock!(slots, "rrxe_mr_table"),
            next_id: AtomicU64::new(1),
            windows: AtomicU32::new(0),
        }))
    }

    /// Adds a region and returns its key (used as both lkey and rkey).
    pub(crate) fn insert(&self, mut region: Region) -> Result<u32> {
        region.id = self.next_id.fetch_add(1, Ordering::Relaxed);
        region.windows = 0;
        let pages = match &region.backing {
            Backing::KernelPages { pages, .. } => pages.len(),
            _ => 0,
        };
        let mut staged = KVec::with_capacity(pages, GFP_KERNEL)?;
        staged.extend_with(pages, 0u64, GFP_KERNEL)?;
        let staged = Staged {
            pd: region.pd,
            pages: staged,
            n: 0,
        };
        let cell = Arc::pin_init(
            pin_init!(MrCell {
                region <- new_bh_spinlock!(region, "rrxe_mr_region"),
                staged <- new_irq_spinlock!(staged, "rrxe_mr_staged"),
            }),
            GFP_KERNEL,
        )?;
        self.insert_entry(Entry::Mr(cell))
    }

    /// Puts `entry` in a free slot under a fresh key (its object is not reachable before:
    /// the key is written into it first). A chunk of slots the table needs is allocated
    /// outside the lock (allocation may sleep); the loop ends because each round takes a
    /// slot, fails, or finds the table grown by a chunk (by this thread or another), which
    /// happens at most `MAX_MR / CHUNK` times.
    fn insert_entry(&self, entry: Entry) -> Result<u32> {
        loop {
            let took = self.inner.lock().take();
            match took {
                Take::Slot { index, tag } => {
                    // The slot is reserved and still empty: ours. The key goes into the
                    // object before it becomes reachable, with no table lock held (the
                    // order is window → table → region).
                    let key = (index << 8) | key_tag(tag);
                    match &entry {
                        Entry::Mr(c) => {
                            let mut r = c.region.lock();
                            r.lkey = key;
                            r.rkey = key;
                        }
                        Entry::Mw(c) => c.window.lock().rkey = key,
                    }
                    let filled = self.inner.lock().fill(index, entry);
                    // Unreachable by `take`'s reservation; the entry is dropped unlocked.
                    return filled.map(|()| key).map_err(|_| EINVAL);
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

    /// The entry in the slot of `key` (whatever its tag), cloned out of the table.
    fn entry(&self, key: u32) -> Option<Entry> {
        self.inner.lock().get(key >> 8).cloned()
    }

    /// The region cell in the slot of `key`, whatever its tag.
    fn region_cell(&self, key: u32) -> Option<Arc<MrCell>> {
        match self.entry(key)? {
            Entry::Mr(c) => Some(c),
            Entry::Mw(_) => None,
        }
    }

    /// The window cell in the slot of `key`, whatever its tag.
    fn window_cell(&self, key: u32) -> Option<Arc<MwCell>> {
        match self.entry(key)? {
            Entry::Mw(c) => Some(c),
            Entry::Mr(_) => None,
        }
    }

    /// Empties slot `i`, returning what it held; `key` is the key it had last (its tag is
    /// not the next one's).
    fn take_slot(&self, i: u32, key: u32) -> Option<Entry> {
        self.inner.lock().remove(i, Some(key as u8))
    }

    /// Removes the region in the slot of `key` (whatever its current tag: a consumer may
    /// have changed the key with ib_update_fast_reg_key), returning it so the caller
    /// releases its memory in process context.
    ///
    /// An access that found the region before holds its lock while it runs, so the region
    /// is taken out of its cell only once that access is over; later ones see an invalid,
    /// empty region. Windows bound to it can no longer reach it (their binding names the
    /// region's identity, which no later region has).
    pub(crate) fn remove(&self, key: u32) -> Option<Region> {
        let idx = key >> 8;
        match self.entry(key)? {
            Entry::Mr(_) => {}
            Entry::Mw(_) => return None,
        }
        let Entry::Mr(cell) = self.take_slot(idx, key)? else {
            return None;
        };
        let mut r = cell.region.lock();
        Some(core::mem::replace(&mut *r, Region::gone()))
    }

    /// Moves the region of `key` from PD `pd` to PD `new_pd` (re-registration).
    pub(crate) fn set_pd(&self, key: u32, pd: usize, new_pd: usize) -> Result<(), AccessError> {
        let c = self.region_cell(key).ok_or(AccessError::BadKey)?;
        let mut r = c.region.lock();
        if r.lkey != key || r.pd != pd || r.id == 0 {
            return Err(AccessError::BadKey);
        }
        r.pd = new_pd;
        c.staged.lock().pd = new_pd;
        Ok(())
    }

    /// Puts `new` in place of the region of `key` in PD `pd` (re-registration with a new
    /// translation or new access flags), keeping the keys: an lkey or rkey handed out before
    /// reaches the new region, with its rights. Returns the old region, whose memory the
    /// caller releases in process context. An access that found the old region holds its
    /// lock while it runs, so the swap waits for it; later ones see the new one. The new
    /// region gets a new identity, so a window bound to the old one cannot reach it; a
    /// region with bound windows is refused (EINVAL, as before the swap: see `rereg_user`).
    /// `new` is dropped on failure, here, in process context.
    pub(crate) fn replace(&self, key: u32, pd: usize, mut new: Region) -> Result<Region> {
        let c = self.region_cell(key).ok_or(EINVAL)?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut r = c.region.lock();
        if r.lkey != key || r.pd != pd || r.id == 0 || r.windows != 0 {
            return Err(EINVAL);
        }
        new.id = id;
        new.windows = 0;
        new.lkey = r.lkey;
        new.rkey = r.rkey;
        let new_pd = new.pd;
        let old = core::mem::replace(&mut *r, new);
        c.staged.lock().pd = new_pd;
        drop(r);
        Ok(old)
    }

    /// Runs `f` on the region of `key` in PD `pd`, under the region's lock (local keys, and
    /// the owner's own operations; windows are not regions).
    pub(crate) fn with<R>(
        &self,
        key: u32,
        pd: usize,
        f: impl FnOnce(&mut Region) -> R,
    ) -> Result<R, AccessError> {
        let c = self.region_cell(key).ok_or(AccessError::BadKey)?;
        let mut r = c.region.lock();
        if r.lkey != key || r.pd != pd || r.id == 0 {
            return Err(AccessError::BadKey);
        }
        Ok(f(&mut r))
    }

    /// Runs `f` on the region a remote access with `rkey` reaches, for QP `qpn` of PD `pd`,
    /// under the region's lock (and the window's, for a window's rkey). An rkey of a window
    /// checks `[va, va + len)` and `need` against the window first (which must be bound,
    /// and bound to `qpn` for type 2B); `f` then sees the region with the window's rights.
    /// The region must be in the QP's PD either way: a region moved to another PD (rereg)
    /// after a window was bound is no longer reachable through that window.
    pub(crate) fn with_remote<R>(
        &self,
        rkey: u32,
        pd: usize,
        qpn: u32,
        (va, len, need): (u64, u64, AccessFlags),
        f: impl FnOnce(&Remote<'_>) -> R,
    ) -> Result<R, AccessError> {
        let mw = match self.entry(rkey).ok_or(AccessError::BadKey)? {
            Entry::Mr(c) => {
                let r = c.region.lock();
                if r.rkey != rkey || r.pd != pd || r.id == 0 {
                    return Err(AccessError::BadKey);
                }
                return Ok(f(&Remote {
                    region: &r,
                    granted: r.access,
                }));
            }
            Entry::Mw(c) => c,
        };
        // The window stays locked while the region is used: an unbind or invalidation
        // waits for this access to end, and none starts after it.
        let w = mw.window.lock();
        if w.rkey != rkey || w.pd != pd {
            return Err(AccessError::BadKey);
        }
        let b = w.bound.ok_or(AccessError::BadKey)?;
        if b.qpn.is_some_and(|q| q != qpn) {
            return Err(AccessError::BadKey);
        }
        if !b.access.contains(need) {
            return Err(AccessError::NoPermission);
        }
        let off = va.checked_sub(b.va).ok_or(AccessError::OutOfBounds)?;
        if off.checked_add(len).is_none_or(|end| end > b.len) {
            return Err(AccessError::OutOfBounds);
        }
        let c = self.region_cell(b.mr_key).ok_or(AccessError::BadKey)?;
        let r = c.region.lock();
        if r.id != b.mr_id || r.lkey != b.mr_key || r.pd != pd {
            return Err(AccessError::BadKey);
        }
        let out = f(&Remote {
            region: &r,
            granted: b.access,
        });
        drop(r);
        drop(w);
        Ok(out)
    }
}
