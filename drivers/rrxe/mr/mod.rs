// SPDX-License-Identifier: GPL-2.0
//! Memory regions and memory windows: the key table and access checks.
//!
//! Each device has one table of registered regions and windows, indexed by `key >> 8`; the
//! low 8 bits are a per-registration tag so a stale key does not reach a newer region in the
//! same slot. A window (type 1 or 2B) is a remote view of part of a region: its rkey leads
//! to the window, which must be bound (and, for type 2B, bound to the QP using it); the
//! access is then checked against the window and made through the region.
//! The datapath resolves a key and accesses the memory under the table lock, so a region
//! that was deregistered (removed from the table) can no longer be reached, and its memory
//! (pinned pages) is released afterwards by the deregistering thread, in process context.

mod reg;

pub(crate) use reg::{
    alloc_fast, alloc_mw, dealloc_mw, dereg, deregistered, get_dma, reg_user, rereg_user, MrData,
    Rereg,
};

use crate::glue::mem::{Backing, Umem, Xfer};
use crate::glue::sync::{new_bh_spinlock, new_irq_spinlock, BhSpinLock, IrqSpinLock};
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::alloc::KVVec;
use kernel::prelude::*;
use kernel::sync::Arc;

/// IB_ACCESS_* flags.
pub(crate) mod access {
    /// Local write (receive into, READ response into, atomic result into).
    pub(crate) const LOCAL_WRITE: u32 = 1;
    /// Remote RDMA WRITE.
    pub(crate) const REMOTE_WRITE: u32 = 2;
    /// Remote RDMA READ.
    pub(crate) const REMOTE_READ: u32 = 4;
    /// Remote atomics.
    pub(crate) const REMOTE_ATOMIC: u32 = 8;
    /// Memory window binding.
    pub(crate) const MW_BIND: u32 = 16;
    /// Zero-based virtual addresses.
    pub(crate) const ZERO_BASED: u32 = 32;
    /// Relaxed ordering (a hint; accepted).
    pub(crate) const RELAXED_ORDERING: u32 = 1 << 20;
    /// FLUSH to global visibility.
    pub(crate) const FLUSH_GLOBAL: u32 = 1 << 8;
    /// FLUSH to persistence.
    pub(crate) const FLUSH_PERSISTENT: u32 = 1 << 9;
    /// The optional flags (IB_ACCESS_OPTIONAL, bits 20..=29): hints a device may ignore,
    /// accepted as rdma_rxe accepts them.
    pub(crate) const OPTIONAL: u32 = 0x3ff0_0000;
    /// The flags a QP's access may hold (as rdma_rxe's RXE_ACCESS_SUPPORTED_QP, less
    /// on-demand paging, which rrxe does not offer): any other bit is refused by modify_qp.
    pub(crate) const QP_SUPPORTED: u32 = LOCAL_WRITE
        | REMOTE_WRITE
        | REMOTE_READ
        | REMOTE_ATOMIC
        | MW_BIND
        | FLUSH_GLOBAL
        | FLUSH_PERSISTENT
        | OPTIONAL;
    /// Every flag rrxe supports.
    pub(crate) const SUPPORTED: u32 = OPTIONAL
        | LOCAL_WRITE
        | REMOTE_WRITE
        | REMOTE_READ
        | REMOTE_ATOMIC
        | MW_BIND
        | ZERO_BASED
        | RELAXED_ORDERING
        | FLUSH_GLOBAL
        | FLUSH_PERSISTENT;
}

/// Why an access was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AccessError {
    /// No region has this key (or it is in another PD, or not valid).
    BadKey,
    /// Outside the region.
    OutOfBounds,
    /// The region does not grant the access.
    NoPermission,
}

/// A registered region.
pub(crate) struct Region {
    /// The PD (its address, as an identity).
    pub(crate) pd: usize,
    /// IB_ACCESS_* flags.
    pub(crate) access: u32,
    /// First virtual address.
    pub(crate) iova: u64,
    /// Length in bytes.
    pub(crate) length: u64,
    /// Local key.
    pub(crate) lkey: u32,
    /// Remote key (same slot; equal to lkey).
    pub(crate) rkey: u32,
    /// False for a fast-registration MR until a REG_MR work request makes it valid, and
    /// after a LOCAL_INV.
    pub(crate) valid: bool,
    /// The memory.
    pub(crate) backing: Backing,
    /// Identity in the device's table (set at insertion, never reused; 0: not in a table,
    /// or removed from it).
    pub(crate) id: u64,
    /// Windows bound to it.
    pub(crate) windows: u32,
}

impl Region {
    /// A region not yet in a table (no key, no identity, no windows).
    fn unkeyed(
        pd: usize,
        access: u32,
        iova: u64,
        length: u64,
        valid: bool,
        backing: Backing,
    ) -> Self {
        Region {
            pd,
            access,
            iova,
            length,
            lkey: 0,
            rkey: 0,
            valid,
            backing,
            id: 0,
            windows: 0,
        }
    }

    /// What is left in a table cell once its region was removed: invalid, empty, no key.
    fn gone() -> Region {
        Region::unkeyed(0, 0, 0, 0, false, Backing::KernelVa)
    }

    /// Checks `[va, va + len)` for `need` (IB_ACCESS_* bits; 0 for a local read) and
    /// returns the byte offset of `va` in the region.
    pub(crate) fn check(&self, va: u64, len: u64, need: u32) -> Result<u64, AccessError> {
        self.check_as(self.access, va, len, need)
    }

    /// [`Region::check`] with the rights `granted` (the region's own, or those of a window
    /// bound to it) in place of the region's access flags.
    fn check_as(&self, granted: u32, va: u64, len: u64, need: u32) -> Result<u64, AccessError> {
        if !self.valid {
            return Err(AccessError::BadKey);
        }
        if granted & need != need {
            return Err(AccessError::NoPermission);
        }
        let base = if self.access & access::ZERO_BASED != 0 {
            0
        } else {
            self.iova
        };
        let off = va.checked_sub(base).ok_or(AccessError::OutOfBounds)?;
        let end = off.checked_add(len).ok_or(AccessError::OutOfBounds)?;
        if end > self.length {
            return Err(AccessError::OutOfBounds);
        }
        Ok(match self.backing {
            // A DMA MR's offsets are kernel virtual addresses.
            Backing::KernelVa => va,
            _ => off,
        })
    }

    fn check_whole_as(&self, granted: u32, need: u32) -> Result<(), AccessError> {
        if !self.valid {
            return Err(AccessError::BadKey);
        }
        if granted & need != need {
            return Err(AccessError::NoPermission);
        }
        Ok(())
    }

    /// Copies between `buf` and `va` after checking access.
    pub(crate) fn copy(&self, va: u64, buf: &mut Xfer<'_>, need: u32) -> Result<(), AccessError> {
        self.copy_as(self.access, va, buf, need)
    }

    fn copy_as(
        &self,
        granted: u32,
        va: u64,
        buf: &mut Xfer<'_>,
        need: u32,
    ) -> Result<(), AccessError> {
        let off = self.check_as(granted, va, buf.len() as u64, need)?;
        self.backing
            .copy(off, buf)
            .map_err(|_| AccessError::OutOfBounds)
    }

    fn atomic_as(
        &self,
        granted: u32,
        va: u64,
        op: crate::proto::AtomicOp,
    ) -> Result<u64, AccessError> {
        if va % 8 != 0 {
            return Err(AccessError::OutOfBounds);
        }
        let off = self.check_as(granted, va, 8, access::REMOTE_ATOMIC)?;
        self.backing
            .atomic(off, |a| match op {
                crate::proto::AtomicOp::CompareSwap { compare, swap } => {
                    match a.compare_exchange(compare, swap, Ordering::SeqCst, Ordering::SeqCst) {
                        Ok(v) | Err(v) => v,
                    }
                }
                crate::proto::AtomicOp::FetchAdd { add } => a.fetch_add(add, Ordering::SeqCst),
            })
            .map_err(|_| AccessError::OutOfBounds)
    }

    fn atomic_write_as(&self, granted: u32, va: u64, value: u64) -> Result<(), AccessError> {
        if va % 8 != 0 {
            return Err(AccessError::OutOfBounds);
        }
        let off = self.check_as(granted, va, 8, access::REMOTE_WRITE)?;
        let v = u64::from_ne_bytes(value.to_be_bytes());
        self.backing
            .atomic(off, |a| a.store(v, Ordering::SeqCst))
            .map_err(|_| AccessError::OutOfBounds)
    }
}

/// A region as one remote access reaches it: through its own rkey, with the region's
/// access flags, or through a bound memory window, with the window's. IBTA: a window grants
/// remote rights of its own; the region under it needs only Local Write (for remote write
/// and atomics) and the MW Bind right, checked when the window was bound.
pub(crate) struct Remote<'a> {
    region: &'a Region,
    granted: u32,
}

impl Remote<'_> {
    /// As [`Region::check`], with the rights of this access path.
    pub(crate) fn check(&self, va: u64, len: u64, need: u32) -> Result<u64, AccessError> {
        self.region.check_as(self.granted, va, len, need)
    }

    /// As [`Region::check_whole`], with the rights of this access path.
    pub(crate) fn check_whole(&self, need: u32) -> Result<(), AccessError> {
        self.region.check_whole_as(self.granted, need)
    }

    /// As [`Region::copy`], with the rights of this access path.
    pub(crate) fn copy(&self, va: u64, buf: &mut Xfer<'_>, need: u32) -> Result<(), AccessError> {
        self.region.copy_as(self.granted, va, buf, need)
    }

    /// As [`Region::atomic`], with the rights of this access path.
    pub(crate) fn atomic(&self, va: u64, op: crate::proto::AtomicOp) -> Result<u64, AccessError> {
        self.region.atomic_as(self.granted, va, op)
    }

    /// As [`Region::atomic_write`], with the rights of this access path.
    pub(crate) fn atomic_write(&self, va: u64, value: u64) -> Result<(), AccessError> {
        self.region.atomic_write_as(self.granted, va, value)
    }
}

/// A memory window.
pub(crate) struct Window {
    /// The PD (its address, as an identity).
    pub(crate) pd: usize,
    /// Type 2B (bound by work requests to one QP, invalidated by LOCAL_INV or SEND with
    /// invalidate) rather than type 1.
    pub(crate) type2: bool,
    /// The current rkey (same slot; the tag changes with each bind).
    pub(crate) rkey: u32,
    /// What it is bound to; `None` while unbound (free).
    pub(crate) bound: Option<Binding>,
}

/// A window's binding.
#[derive(Clone, Copy)]
pub(crate) struct Binding {
    /// The region's key.
    pub(crate) mr_key: u32,
    /// The region's identity (its key may be reused by a later region).
    pub(crate) mr_id: u64,
    /// First address of the window (in the region's address space).
    pub(crate) va: u64,
    /// Length in bytes.
    pub(crate) len: u64,
    /// Remote IB_ACCESS_* flags it grants.
    pub(crate) access: u32,
    /// Type 2B: the QP it is bound to.
    pub(crate) qpn: Option<u32>,
}

/// A BIND_MW work request.
#[derive(Clone, Copy)]
pub(crate) struct BindReq {
    /// The rkey the window gets (its slot identifies the window).
    pub(crate) new_rkey: u32,
    /// The region to bind to.
    pub(crate) mr_lkey: u32,
    /// First address.
    pub(crate) va: u64,
    /// Length (0 unbinds a type 1 window).
    pub(crate) len: u64,
    /// IB_ACCESS_* flags of the window.
    pub(crate) access: u32,
}

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

/// Slots of the table; index 0 is never used (key 0 is invalid).
///
/// INVARIANT: `free[..nfree]` holds exactly the indices `1..slots.len()` whose slot is
/// `None` (a stack), and `free.len() == slots.len()`.
struct Slots {
    slots: KVVec<Option<Entry>>,
    free: KVVec<u32>,
    nfree: usize,
}

impl Slots {
    fn pop_free(&mut self) -> Option<u32> {
        let n = self.nfree.checked_sub(1)?;
        let i = *self.free.get(n)?;
        self.nfree = n;
        Some(i)
    }

    fn push_free(&mut self, i: u32) {
        if let Some(f) = self.free.get_mut(self.nfree) {
            *f = i;
            self.nfree += 1;
        }
    }
}

/// The low 8 bits of a new key: random for each registration, as rdma_rxe draws them
/// (rxe_get_next_key), so a key is not guessable from the keys a tenant was given.
fn key_tag() -> u32 {
    crate::glue::random_u32() & 0xff
}

/// A device's memory regions and windows, by key.
///
/// # Locking
/// `inner` (the slot vector; IRQs off, any context: post_send stages fast registrations
/// through it) is held only to find, insert or remove an entry: O(1), no copy and no scan
/// under it, and no other lock of the table is taken inside it. Each region and window has
/// its own bottom-half lock, held for one access (check and copy, with interrupts on):
/// callers must not hold an interrupts-off lock. Nesting, outermost first: window →
/// region → the region's `staged`; the table lock is taken and released on its own.
#[pin_data]
pub(crate) struct MrTable {
    #[pin]
    inner: IrqSpinLock<Slots>,
    /// Identity of the next registration (never reused, unlike keys: a window's binding
    /// names the region by it, so a later region under the same key is not reached).
    next_id: AtomicU64,
}

/// Slots of the key table (slot 0 unused).
pub(crate) const MAX_MR: usize = 1 << 16;
/// Most memory regions per device (`max_mr`).
pub(crate) const MAX_REGIONS: u32 = 0x7fff;
/// Most memory windows per device (`max_mw`). Regions and windows share the key table,
/// which has room for both maxima at once.
pub(crate) const MAX_WINDOWS: u32 = 0x7fff;
const _: () = assert!(((MAX_REGIONS + MAX_WINDOWS) as usize) < MAX_MR);

impl MrTable {
    /// An empty table.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(MrTable {
            inner <- new_irq_spinlock!(
                Slots {
                    slots: KVVec::new(),
                    free: KVVec::new(),
                    nfree: 0,
                },
                "rrxe_mr_table"
            ),
            next_id: AtomicU64::new(1),
        })
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

    /// Adds an unbound window of PD `pd` and returns its rkey.
    pub(crate) fn insert_window(&self, pd: usize, type2: bool) -> Result<u32> {
        let cell = Arc::pin_init(
            pin_init!(MwCell {
                window <- new_bh_spinlock!(
                    Window {
                        pd,
                        type2,
                        rkey: 0,
                        bound: None,
                    },
                    "rrxe_mr_window"
                ),
            }),
            GFP_KERNEL,
        )?;
        self.insert_entry(Entry::Mw(cell))
    }

    /// Puts `entry` in a free slot under a fresh key (its object is not reachable before:
    /// the key is written into it first). The slot vector grows outside the lock
    /// (allocation may sleep).
    fn insert_entry(&self, entry: Entry) -> Result<u32> {
        loop {
            let tag = key_tag();
            let (reserved, need_grow) = {
                let mut s = self.inner.lock();
                (s.pop_free(), s.slots.len())
            };
            if let Some(i) = reserved {
                // The slot is off the free list and still empty: ours. The key goes into the
                // object before it becomes reachable, with no table lock held (the order is
                // window → table → region).
                let key = (i << 8) | tag;
                match &entry {
                    Entry::Mr(c) => {
                        let mut r = c.region.lock();
                        r.lkey = key;
                        r.rkey = key;
                    }
                    Entry::Mw(c) => c.window.lock().rkey = key,
                }
                let mut s = self.inner.lock();
                return match s.slots.get_mut(i as usize) {
                    Some(slot) => {
                        *slot = Some(entry);
                        Ok(key)
                    }
                    // Unreachable by the invariant.
                    None => Err(EINVAL),
                };
            }
            if need_grow >= MAX_MR {
                return Err(ENOMEM);
            }
            // Grow by doubling into new vectors, then swap them in if nobody else did.
            let want = core::cmp::max(16, need_grow * 2).min(MAX_MR);
            let mut bigger: KVVec<Option<Entry>> = KVVec::with_capacity(want, GFP_KERNEL)?;
            bigger.extend_with(want, None, GFP_KERNEL)?;
            let mut free: KVVec<u32> = KVVec::with_capacity(want, GFP_KERNEL)?;
            free.extend_with(want, 0, GFP_KERNEL)?;
            let mut s = self.inner.lock();
            let unused_free = if s.slots.len() == need_grow {
                for (dst, src) in bigger.iter_mut().zip(s.slots.iter_mut()) {
                    *dst = src.take();
                }
                core::mem::swap(&mut s.slots, &mut bigger);
                // The free list was empty (that is why the table grows): the new indices,
                // highest first so that the lowest is taken first.
                let old = core::mem::replace(&mut s.free, free);
                s.nfree = 0;
                for i in (need_grow.max(1)..want).rev() {
                    s.push_free(i as u32);
                }
                old
            } else {
                free
            };
            drop(s);
            drop(unused_free);
            // The old (now empty) vectors, or the unused new ones, are freed here, outside
            // the lock.
        }
    }

    /// The entry in the slot of `key` (whatever its tag), cloned out of the table.
    fn entry(&self, key: u32) -> Option<Entry> {
        self.inner.lock().slots.get((key >> 8) as usize)?.clone()
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

    /// Empties slot `i`, returning what it held.
    fn take_slot(&self, i: u32) -> Option<Entry> {
        let mut s = self.inner.lock();
        let e = s.slots.get_mut(i as usize)?.take()?;
        s.push_free(i);
        Some(e)
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
        let Entry::Mr(cell) = self.take_slot(idx)? else {
            return None;
        };
        let mut r = cell.region.lock();
        Some(core::mem::replace(&mut *r, Region::gone()))
    }

    /// Removes the window in the slot of `key` (dealloc_mw). False if there is none.
    pub(crate) fn remove_window(&self, key: u32) -> bool {
        if self.window_cell(key).is_none() {
            return false;
        }
        let Some(Entry::Mw(cell)) = self.take_slot(key >> 8) else {
            return false;
        };
        let old = cell.window.lock().bound.take();
        if let Some(b) = old {
            self.release_binding(&b);
        }
        true
    }

    /// A binding ended: its region counts one window less (if it still exists).
    fn release_binding(&self, b: &Binding) {
        if let Some(c) = self.region_cell(b.mr_key) {
            let mut r = c.region.lock();
            if r.id == b.mr_id {
                r.windows = r.windows.saturating_sub(1);
            }
        }
    }

    /// Whether `b` still leads to its region.
    fn binding_live(&self, b: &Binding) -> bool {
        self.region_cell(b.mr_key)
            .is_some_and(|c| c.region.lock().id == b.mr_id)
    }

    /// Whether a window is bound to the region of `key`.
    pub(crate) fn has_bound_windows(&self, key: u32) -> bool {
        self.region_cell(key).is_some_and(|c| {
            let r = c.region.lock();
            r.lkey == key && r.windows > 0
        })
    }

    /// Type 2B windows bound to QP `qpn` become unbound (the QP is destroyed; its number
    /// will be reused). Process context: visits every slot, each under its own short lock
    /// (no long section with interrupts off).
    pub(crate) fn unbind_qp(&self, qpn: u32) {
        let n = self.inner.lock().slots.len();
        for i in 1..n {
            let Some(cell) = self.window_cell((i as u32) << 8) else {
                continue;
            };
            let old = {
                let mut w = cell.window.lock();
                if w.bound.is_some_and(|b| b.qpn == Some(qpn)) {
                    w.bound.take()
                } else {
                    None
                }
            };
            if let Some(b) = old {
                self.release_binding(&b);
            }
        }
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
        (va, len, need): (u64, u64, u32),
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
        if b.access & need != need {
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

    /// Executes a BIND_MW work request of QP `qpn` in PD `pd`.
    pub(crate) fn bind(&self, req: &BindReq, pd: usize, qpn: u32) -> Result<(), AccessError> {
        const WINDOW_ACCESS: u32 =
            access::REMOTE_READ | access::REMOTE_WRITE | access::REMOTE_ATOMIC;
        if req.access & !WINDOW_ACCESS != 0 {
            return Err(AccessError::NoPermission);
        }
        let mw = self.window_cell(req.new_rkey).ok_or(AccessError::BadKey)?;
        let mut w = mw.window.lock();
        if w.pd != pd {
            return Err(AccessError::BadKey);
        }
        // A type 2B window is bound only from the free state (a binding whose region was
        // deregistered counts as free), and to a new key.
        if w.type2 {
            let bound = w.bound.is_some_and(|b| self.binding_live(&b));
            if bound || w.rkey == req.new_rkey {
                return Err(AccessError::NoPermission);
            }
        }
        let binding = if req.len == 0 && !w.type2 {
            None
        } else {
            let c = self.region_cell(req.mr_lkey).ok_or(AccessError::BadKey)?;
            let mut r = c.region.lock();
            if r.lkey != req.mr_lkey || r.pd != pd || r.id == 0 {
                return Err(AccessError::BadKey);
            }
            if !r.valid || r.access & access::MW_BIND == 0 || r.access & access::ZERO_BASED != 0 {
                return Err(AccessError::NoPermission);
            }
            // Remote write and atomic through a window need local write on the region.
            if req.access & (access::REMOTE_WRITE | access::REMOTE_ATOMIC) != 0
                && r.access & access::LOCAL_WRITE == 0
            {
                return Err(AccessError::NoPermission);
            }
            let off = req.va.checked_sub(r.iova).ok_or(AccessError::OutOfBounds)?;
            if off.checked_add(req.len).is_none_or(|end| end > r.length) {
                return Err(AccessError::OutOfBounds);
            }
            r.windows = r.windows.saturating_add(1);
            Some(Binding {
                mr_key: req.mr_lkey,
                mr_id: r.id,
                va: req.va,
                len: req.len,
                access: req.access,
                qpn: w.type2.then_some(qpn),
            })
        };
        w.rkey = req.new_rkey;
        let old = core::mem::replace(&mut w.bound, binding);
        drop(w);
        if let Some(b) = old {
            self.release_binding(&b);
        }
        Ok(())
    }
}

/// Refuses IB_ACCESS_* flags rrxe does not implement (e.g. on-demand paging).
pub(crate) fn check_access_flags(flags: u32) -> Result {
    if flags & !access::SUPPORTED != 0 {
        return Err(crate::glue::eopnotsupp());
    }
    // Remote write and atomic need local write (IBA o10-35.2.1).
    if flags & (access::REMOTE_WRITE | access::REMOTE_ATOMIC) != 0
        && flags & access::LOCAL_WRITE == 0
    {
        return Err(EINVAL);
    }
    Ok(())
}

/// Refuses a user registration's range before anything is pinned: empty, or wrapping
/// around the address space at its user address or at its IOVA (as ib_umem_get and
/// rdma_rxe refuse them).
pub(crate) fn check_user_range(start: u64, length: u64, iova: u64) -> Result {
    if length == 0 || start.checked_add(length).is_none() || iova.checked_add(length).is_none() {
        return Err(EINVAL);
    }
    Ok(())
}

/// A DMA MR of a kernel consumer: all of kernel memory.
pub(crate) fn dma_region(pd: usize, flags: u32) -> Result<Region> {
    check_access_flags(flags)?;
    Ok(Region::unkeyed(
        pd,
        flags,
        0,
        u64::MAX,
        true,
        Backing::KernelVa,
    ))
}

/// A user MR over pinned pages.
pub(crate) fn user_region(
    pd: usize,
    flags: u32,
    iova: u64,
    length: u64,
    umem: Umem,
) -> Result<Region> {
    if length == 0 || iova.checked_add(length).is_none() {
        return Err(EINVAL);
    }
    Ok(Region::unkeyed(
        pd,
        flags,
        iova,
        length,
        true,
        Backing::User(umem),
    ))
}

/// What a re-registration needs of a user region: its access flags, iova, length and the
/// user address it was registered at. `None` for other regions.
pub(crate) fn user_extent(r: &Region) -> Option<(u32, u64, u64, u64)> {
    match &r.backing {
        Backing::User(u) => Some((r.access, r.iova, r.length, u.address())),
        _ => None,
    }
}

/// A fast-registration MR: invalid until a REG_MR work request; room for `max_pages`.
pub(crate) fn fast_region(pd: usize, max_pages: usize) -> Result<Region> {
    Ok(Region::unkeyed(
        pd,
        0,
        0,
        0,
        false,
        Backing::KernelPages {
            pages: {
                let mut v = KVec::with_capacity(max_pages, GFP_KERNEL)?;
                v.extend_with(max_pages, 0u64, GFP_KERNEL)?;
                v
            },
            npages: 0,
            page_size: kernel::page::PAGE_SIZE as u32,
            first_off: 0,
        },
    ))
}

/// A fast registration, as a REG_MR work request carries it.
#[derive(Clone, Copy)]
pub(crate) struct FastReg {
    /// The MR's key when the WR was posted.
    pub(crate) cur_key: u32,
    /// The key it gets (same slot, new tag).
    pub(crate) new_key: u32,
    /// IB_ACCESS_* flags.
    pub(crate) access: u32,
    /// First address.
    pub(crate) iova: u64,
    /// Length.
    pub(crate) length: u64,
    /// Page size.
    pub(crate) page_size: u32,
}

impl MrTable {
    /// At post time: loads the page list of the next registration into the (invalid)
    /// fast-registration region `key` (no allocation: capacity was reserved at alloc_mr).
    pub(crate) fn fast_reg_load(
        &self,
        key: u32,
        pd: usize,
        pages: &[u64],
    ) -> Result<(), AccessError> {
        let c = self.region_cell(key).ok_or(AccessError::BadKey)?;
        let mut st = c.staged.lock();
        if st.pd != pd {
            return Err(AccessError::BadKey);
        }
        let dst = st
            .pages
            .get_mut(..pages.len())
            .ok_or(AccessError::OutOfBounds)?;
        if !crate::proto::copy_exact(dst, pages) {
            return Err(AccessError::OutOfBounds);
        }
        st.n = pages.len();
        Ok(())
    }

    /// Executes a REG_MR work request: the region becomes valid under its new key.
    pub(crate) fn fast_reg(&self, fr: &FastReg, pd: usize) -> Result<(), AccessError> {
        if fr.new_key >> 8 != fr.cur_key >> 8 || fr.page_size == 0 {
            return Err(AccessError::BadKey);
        }
        check_access_flags(fr.access).map_err(|_| AccessError::NoPermission)?;
        let c = self.region_cell(fr.cur_key).ok_or(AccessError::BadKey)?;
        let mut r = c.region.lock();
        if r.pd != pd || r.id == 0 {
            return Err(AccessError::BadKey);
        }
        // A region that is still valid must be invalidated first (rdma_rxe's
        // rxe_reg_fast_mr refuses an MR that is not free).
        if r.valid {
            return Err(AccessError::NoPermission);
        }
        {
            let Backing::KernelPages {
                pages,
                npages,
                page_size,
                first_off,
            } = &mut r.backing
            else {
                return Err(AccessError::BadKey);
            };
            // The page list staged at post time becomes the region's.
            let st = c.staged.lock();
            let src = st.pages.get(..st.n).ok_or(AccessError::OutOfBounds)?;
            let dst = pages.get_mut(..src.len()).ok_or(AccessError::OutOfBounds)?;
            if !crate::proto::copy_exact(dst, src) {
                return Err(AccessError::OutOfBounds);
            }
            *npages = src.len();
            let ps = u64::from(fr.page_size);
            let off = fr.iova % ps;
            let need = off
                .checked_add(fr.length)
                .ok_or(AccessError::OutOfBounds)?
                .div_ceil(ps);
            if need > *npages as u64 {
                return Err(AccessError::OutOfBounds);
            }
            *page_size = fr.page_size;
            *first_off = off as u32;
        }
        r.iova = fr.iova;
        r.length = fr.length;
        r.access = fr.access;
        r.lkey = fr.new_key;
        r.rkey = fr.new_key;
        r.valid = true;
        Ok(())
    }

    /// Invalidates `key` (LOCAL_INV, SEND with invalidate): a fast-registration region, or
    /// a bound type 2B window (for a SEND with invalidate, `remote_qpn` is the receiving QP,
    /// which must be the one the window is bound to).
    pub(crate) fn invalidate(
        &self,
        key: u32,
        pd: usize,
        remote_qpn: Option<u32>,
    ) -> Result<(), AccessError> {
        match self.entry(key).ok_or(AccessError::BadKey)? {
            Entry::Mr(c) => {
                let mut r = c.region.lock();
                if r.lkey != key || r.pd != pd || r.id == 0 {
                    return Err(AccessError::BadKey);
                }
                if matches!(r.backing, Backing::KernelPages { .. }) {
                    r.valid = false;
                    Ok(())
                } else {
                    Err(AccessError::NoPermission)
                }
            }
            Entry::Mw(c) => {
                let old = {
                    let mut w = c.window.lock();
                    if w.rkey != key || w.pd != pd {
                        return Err(AccessError::BadKey);
                    }
                    let Some(b) = w.bound else {
                        return Err(AccessError::BadKey);
                    };
                    if !w.type2 || remote_qpn.is_some_and(|q| b.qpn != Some(q)) {
                        return Err(AccessError::NoPermission);
                    }
                    w.bound.take()
                };
                if let Some(b) = old {
                    self.release_binding(&b);
                }
                Ok(())
            }
        }
    }
}
