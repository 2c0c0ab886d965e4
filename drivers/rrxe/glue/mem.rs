// SPDX-License-Identifier: GPL-2.0
//! Memory behind memory regions: pinned user pages, kernel virtual addresses (DMA MRs),
//! fast-registration page lists and mapped dma-bufs.
//!
//! Every access is bounds-checked here against what the backing really covers, whatever the
//! caller computed: a wrong key, address or length from the wire or from userspace can make
//! an access fail, never reach outside the region.

use super::bindings;
use super::odp::{OdpImplicit, OdpUmem};
use super::IbDev;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;

/// The kernel's page size (an ib_umem's pages are this size).
const PAGE_SIZE: u64 = kernel::page::PAGE_SIZE as u64;

/// Direction of a copy.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    /// From the caller's buffer into the region.
    ToMem,
    /// From the region into the caller's buffer.
    FromMem,
}

/// The caller's side of a copy: bytes to write into a region, or room to read into.
pub(crate) enum Xfer<'a> {
    /// Write these bytes into the region.
    To(&'a [u8]),
    /// Read into `buf` (a packet's payload, from its byte `at`), continuing the payload's
    /// CRC ([`PayloadCrc`]) over what is read where the copy can.
    From {
        buf: &'a mut [u8],
        crc: &'a mut PayloadCrc,
        at: usize,
    },
}

/// The CRC-32 register of a payload being copied into a packet (the ICRC's, continued
/// from the headers), kept by the copies that fill it: it covers the payload's first
/// `upto` bytes, and a copy that continues exactly there continues it. Any other copy into
/// the payload (a second try of the same bytes, parts out of order) turns it off, and the
/// packet's builder computes the CRC over the copied payload instead: never a CRC over
/// bytes other than the ones the packet holds.
pub(crate) struct PayloadCrc {
    reg: u32,
    upto: usize,
    on: bool,
}

impl PayloadCrc {
    /// The register `reg` over no payload byte yet; `on`: whether copies continue it
    /// (`table_crc_wanted`; when not, nothing is covered and the builder computes it).
    pub(crate) fn new(reg: u32, on: bool) -> Self {
        PayloadCrc { reg, upto: 0, on }
    }

    /// The register over the payload's first `len` bytes, if that is what it covers.
    pub(crate) fn covering(&self, len: usize) -> Option<u32> {
        (self.on && self.upto == len).then_some(self.reg)
    }
}

/// Whether the ICRC is computed by the glue's table loops (the copy that computes the CRC
/// of what it copies, and `rrxe_glue_table_crc`) instead of `crc32_le`: chosen once, by
/// `choose_icrc` at module init; `crc32_le` until then (both compute the same CRC).
static TABLE_CRC: AtomicBool = AtomicBool::new(false);

/// Whether the glue's table loops compute the ICRC (`TABLE_CRC`).
pub(crate) fn table_crc_wanted() -> bool {
    TABLE_CRC.load(Ordering::Relaxed)
}

/// Chooses how the ICRC is computed on this kernel and CPU (`rrxe_glue_icrc_choose`: the
/// module's `icrc` parameter; by default the table loops where `crc32_le` is generic code,
/// else the faster of the two, timed). `EINVAL` for an `icrc` that names no routine.
/// Process context, may sleep: module init, before any device exists.
pub(crate) fn choose_icrc() -> Result {
    // SAFETY: the pointer is proto's static tables of 8 x 256 entries, which the timed
    // loop reads; the call allocates with GFP_KERNEL, and module init may sleep.
    let ret = unsafe { bindings::rrxe_glue_icrc_choose(crc_tables()) };
    if ret < 0 {
        return Err(Error::from_errno(ret));
    }
    TABLE_CRC.store(ret == 1, Ordering::Relaxed);
    Ok(())
}

/// The slicing-by-8 tables for the glue's CRC loops, as their flat array of 8 x 256.
pub(super) fn crc_tables() -> *const u32 {
    crate::proto::crc::slice8_tables().as_ptr().cast()
}

impl<'a> Xfer<'a> {
    /// Bytes to move.
    pub(crate) fn len(&self) -> usize {
        match self {
            Xfer::To(b) => b.len(),
            Xfer::From { buf, .. } => buf.len(),
        }
    }

    /// The direction.
    pub(crate) fn dir(&self) -> Dir {
        match self {
            Xfer::To(_) => Dir::ToMem,
            Xfer::From { .. } => Dir::FromMem,
        }
    }

    /// The part `[start, start + n)`, or `None` if out of range.
    pub(crate) fn sub(&mut self, start: usize, n: usize) -> Option<Xfer<'_>> {
        let end = start.checked_add(n)?;
        match self {
            Xfer::To(b) => b.get(start..end).map(Xfer::To),
            Xfer::From { buf, crc, at } => Some(Xfer::From {
                buf: buf.get_mut(start..end)?,
                crc: &mut **crc,
                at: at.checked_add(start)?,
            }),
        }
    }

    /// A pointer to byte `start` and the direction, for the copy primitives: written
    /// through only for `From`.
    pub(super) fn raw(&mut self) -> *mut u8 {
        match self {
            Xfer::To(b) => b.as_ptr().cast_mut(),
            Xfer::From { buf, .. } => buf.as_mut_ptr(),
        }
    }

    /// The payload CRC's register if a copy into this buffer continues it (it covers
    /// exactly the payload before the buffer).
    fn crc_next(&self) -> Option<u32> {
        match self {
            Xfer::From { crc, at, .. } if crc.on && crc.upto == *at => Some(crc.reg),
            _ => None,
        }
    }

    /// The payload CRC's register `reg` now covers this buffer too (after [`Self::crc_next`]
    /// gave its start and the copy continued it over the whole buffer).
    fn crc_set(&mut self, reg: u32) {
        if let Xfer::From { buf, crc, at } = self {
            crc.reg = reg;
            crc.upto = at.saturating_add(buf.len());
        }
    }

    /// A copy into this buffer that did not continue the payload's CRC: the register no
    /// longer stands for the payload's first bytes (they may be copied again, or a part
    /// comes out of order), so it is turned off.
    fn crc_missed(&mut self) {
        if let Xfer::From { crc, .. } = self {
            crc.on = false;
        }
    }

    /// After a copy into this buffer by a path that does not compute the CRC: continues
    /// the payload's CRC over the copied bytes if it reached the buffer's start.
    fn crc_after_copy(&mut self) {
        let Some(reg) = self.crc_next() else {
            self.crc_missed();
            return;
        };
        let reg = match self {
            Xfer::From { buf, .. } => crate::proto::Crc32::update(&super::KernelCrc32, reg, buf),
            Xfer::To(_) => return,
        };
        self.crc_set(reg);
    }

    /// Fills this buffer from `src` if it is one to read into (a `From`; a `To` buffer is
    /// left alone), continuing the payload's CRC where it can.
    ///
    /// # Safety
    ///
    /// `src` must be valid for reads of the buffer's length in bytes (others may write to
    /// it meanwhile, as a process to its own pages). It may overlap the buffer (a wrong
    /// address of a kernel consumer's, or from the wire with an unsafe global rkey): the
    /// bytes are then whatever the copy read, and the CRC is theirs.
    unsafe fn copy_in(&mut self, src: *const u8) {
        let reg = self.crc_next();
        let (dst, n) = match self {
            Xfer::From { buf, .. } => (buf.as_mut_ptr(), buf.len()),
            Xfer::To(_) => return,
        };
        match reg {
            Some(reg) => {
                // SAFETY: dst is the buffer, valid for writes of n bytes; src as the caller
                // promises (the loop reads each source byte once, overlap or not); the
                // table pointer is proto's static tables of 8 x 256 entries.
                let reg = unsafe {
                    bindings::rrxe_glue_copy_crc(dst.cast(), src.cast(), n, reg, crc_tables())
                };
                self.crc_set(reg);
            }
            None => {
                // SAFETY: as above; `ptr::copy` allows overlap.
                unsafe { core::ptr::copy(src, dst, n) };
                self.crc_missed();
            }
        }
    }
}

/// A heap copy of a large constant, made without a temporary on the (small) kernel stack:
/// the bytes go straight from the constant to the allocation.
pub(crate) fn boxed_copy<T: Copy>(src: &'static T) -> Result<KBox<T>> {
    let mut b = KBox::<T>::new_uninit(GFP_KERNEL)?;
    // SAFETY: src is a valid T, the destination is a fresh allocation of one T, and T: Copy
    // makes a bitwise duplicate a valid value.
    unsafe { core::ptr::copy_nonoverlapping(src as *const T, b.as_mut_ptr(), 1) };
    // SAFETY: fully initialised just above.
    Ok(unsafe { b.assume_init() })
}

/// Pinned user memory (`ib_umem`) and its page list.
pub(crate) struct Umem {
    umem: NonNull<bindings::ib_umem>,
    pages: KVec<NonNull<bindings::page>>,
    offset: u32,
    len: u64,
}

// SAFETY: the umem is only released on drop; pages are pinned for the umem's lifetime and
// are accessed through kmap_local on any CPU.
unsafe impl Send for Umem {}
// SAFETY: as above; concurrent copies to the same page are the RDMA semantics (no Rust
// references to the page contents are created).
unsafe impl Sync for Umem {}

impl Umem {
    /// Pins `[start, start + len)` of the calling process for `access` (IB_ACCESS_*).
    /// The user address the pinned range starts at.
    pub(crate) fn address(&self) -> u64 {
        // SAFETY: the umem is live while we hold it.
        unsafe { bindings::rrxe_glue_umem_address(self.umem.as_ptr()) }
    }

    pub(crate) fn get(dev: &IbDev, start: u64, len: u64, access: i32) -> Result<Self> {
        let mut err = 0;
        // SAFETY: dev is live; ib_umem_get validates the user range and pins it.
        let umem =
            unsafe { bindings::rrxe_glue_umem_get(dev.as_ptr(), start, len, access, &mut err) };
        let umem =
            NonNull::new(umem).ok_or_else(|| Error::from_errno(if err < 0 { err } else { -14 }))?;
        // From here on, dropping `this` releases the umem.
        let mut this = Umem {
            umem,
            pages: KVec::new(),
            offset: 0,
            len,
        };
        // SAFETY: the umem is live.
        this.offset = unsafe { bindings::rrxe_glue_umem_offset(umem.as_ptr()) };
        // SAFETY: counting pass with no output array.
        let n = unsafe { bindings::rrxe_glue_umem_pages(umem.as_ptr(), core::ptr::null_mut(), 0) };
        let mut raw: KVec<*mut bindings::page> = KVec::with_capacity(n, GFP_KERNEL)?;
        raw.extend_with(n, core::ptr::null_mut(), GFP_KERNEL)?;
        // SAFETY: raw has n writable entries.
        let got = unsafe { bindings::rrxe_glue_umem_pages(umem.as_ptr(), raw.as_mut_ptr(), n) };
        if got != n {
            return Err(EINVAL);
        }
        this.pages = KVec::with_capacity(n, GFP_KERNEL)?;
        for p in raw.iter() {
            this.pages
                .push(NonNull::new(*p).ok_or(EINVAL)?, GFP_KERNEL)?;
        }
        // The pages must cover the range.
        let need = u64::from(this.offset)
            .checked_add(len)
            .ok_or(EINVAL)?
            .div_ceil(PAGE_SIZE);
        if (this.pages.len() as u64) < need {
            return Err(EINVAL);
        }
        Ok(this)
    }

    /// Copies between `buf` and the region at byte `off` (0 = the registered start).
    fn copy(&self, off: u64, buf: &mut Xfer<'_>) -> Result {
        let dir = buf.dir();
        let end = off.checked_add(buf.len() as u64).ok_or(EINVAL)?;
        if end > self.len {
            return Err(EINVAL);
        }
        let mut pos = off + u64::from(self.offset);
        let mut done = 0usize;
        while done < buf.len() {
            let idx = (pos / PAGE_SIZE) as usize;
            let in_page = (pos % PAGE_SIZE) as u32;
            let n =
                core::cmp::min(PAGE_SIZE - u64::from(in_page), (buf.len() - done) as u64) as u32;
            let page = *self.pages.get(idx).ok_or(EINVAL)?;
            let mut chunk = buf.sub(done, n as usize).ok_or(EINVAL)?;
            match chunk.crc_next() {
                Some(mut reg) => {
                    // SAFETY: pinned page (the umem is ours), in_page + n <= PAGE_SIZE;
                    // chunk (a `From`: only it has a register) valid for writes of n bytes;
                    // the tables are proto's static 8 x 256 entries.
                    let copied = unsafe {
                        bindings::rrxe_glue_page_copy_crc(
                            page.as_ptr(),
                            in_page,
                            chunk.raw().cast(),
                            n,
                            &mut reg,
                            crc_tables(),
                        )
                    };
                    if !copied {
                        return Err(EINVAL);
                    }
                    chunk.crc_set(reg);
                }
                None => {
                    // SAFETY: the page is pinned by the umem we own; in_page + n <=
                    // PAGE_SIZE; chunk is a valid buffer of n bytes, written to only when
                    // it is read into.
                    unsafe {
                        bindings::rrxe_glue_page_copy(
                            page.as_ptr(),
                            in_page,
                            chunk.raw().cast(),
                            n,
                            dir == Dir::ToMem,
                        )
                    };
                    chunk.crc_missed();
                }
            }
            done += n as usize;
            pos += u64::from(n);
        }
        Ok(())
    }

    /// Runs `f` on the 8-byte word at byte `off` (must be 8-aligned in memory).
    fn atomic<R>(&self, off: u64, f: impl FnOnce(&AtomicU64) -> R) -> Result<R> {
        if off.checked_add(8).ok_or(EINVAL)? > self.len {
            return Err(EINVAL);
        }
        let pos = off + u64::from(self.offset);
        let page = *self.pages.get((pos / PAGE_SIZE) as usize).ok_or(EINVAL)?;
        // SAFETY: pinned page; the helper checks alignment and bounds and maps it.
        let p =
            unsafe { bindings::rrxe_glue_page_map_u64(page.as_ptr(), (pos % PAGE_SIZE) as u32) };
        if p.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: p is a mapped, 8-aligned word of a pinned page, valid until the unmap below;
        // all concurrent kernel accesses to it are atomic.
        let r = f(unsafe { &*p.cast::<AtomicU64>() });
        // SAFETY: mapped just above.
        unsafe { bindings::rrxe_glue_page_unmap(p.cast()) };
        Ok(r)
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: obtained from ib_umem_get, released once. Must run in process context: the
        // MR code only drops a Umem from verbs calls.
        unsafe { bindings::rrxe_glue_umem_release(self.umem.as_ptr()) };
    }
}

/// Whether `[addr, addr + len)` lies in the kernel's linear map (a DMA MR's addresses must:
/// a peer with an unsafe global rkey, or a wrong SGE, may name any address).
fn kva_valid(addr: u64, len: u64) -> bool {
    // SAFETY: a pure check of two integers; it dereferences nothing.
    unsafe { bindings::rrxe_glue_kva_valid(addr, len) }
}

/// What a memory region's bytes are.
pub(crate) enum Backing {
    /// A DMA MR of a kernel consumer: region offsets are kernel virtual addresses (the
    /// contract of `ib_get_dma_mr` users on a virtual-DMA device). Every access checks them
    /// against the linear map first: with `IB_PD_UNSAFE_GLOBAL_RKEY` the addresses come from
    /// the wire.
    KernelVa,
    /// Pinned user pages.
    User(Umem),
    /// User memory on demand (nothing pinned; see [`super::odp`]): an access to pages not
    /// mapped fails with [`super::odp::NOT_PRESENT`]. Shared with the page faults that map
    /// it, which run outside the region's lock.
    Odp(Arc<OdpUmem>),
    /// All of a process's address space on demand (implicit ODP; region offsets are user
    /// addresses), as [`Backing::Odp`].
    OdpImplicit(Arc<OdpImplicit>),
    /// A user MR over a dma-buf, reached through the kernel mapping of the buffer (see
    /// [`super::dmabuf`]).
    Mapped(super::dmabuf::DmabufMap),
    /// A fast-registration MR of a kernel consumer: blocks of `page_size` bytes at the
    /// kernel virtual addresses `pages` (from `ib_map_mr_sg`), starting `first_off` bytes
    /// into the first.
    KernelPages {
        /// Kernel virtual address of each block (room for the MR's maximum; the first
        /// `npages` are in use).
        pages: KVec<u64>,
        /// Blocks in use.
        npages: usize,
        /// Block size.
        page_size: u32,
        /// Offset of the region's first byte in the first block.
        first_off: u32,
    },
}

impl Backing {
    /// Copies between `buf` and the region's byte `off`.
    pub(crate) fn copy(&self, off: u64, buf: &mut Xfer<'_>) -> Result {
        let dir = buf.dir();
        match self {
            Backing::KernelVa => {
                off.checked_add(buf.len() as u64).ok_or(EINVAL)?;
                // INVARIANT: checked here, relied on by the copy below.
                if !kva_valid(off, buf.len() as u64) {
                    return Err(EINVAL);
                }
                let p = off as usize as *mut u8;
                let n = buf.len();
                // SAFETY: [off, off+len) is in the kernel's linear map (checked above), the
                // memory a kernel consumer posted for this transfer (see KernelVa); the
                // buffer is valid for n bytes and written only when it is read into.
                unsafe {
                    match dir {
                        Dir::ToMem => core::ptr::copy(buf.raw(), p, n),
                        Dir::FromMem => buf.copy_in(p),
                    }
                }
                Ok(())
            }
            Backing::User(u) => u.copy(off, buf),
            // These copy in their own C: the payload's CRC, if asked for, after it.
            Backing::Odp(o) => o.copy(off, buf).inspect(|()| buf.crc_after_copy()),
            Backing::OdpImplicit(o) => o.copy(off, buf).inspect(|()| buf.crc_after_copy()),
            Backing::Mapped(m) => m.copy(off, buf).inspect(|()| buf.crc_after_copy()),
            Backing::KernelPages {
                pages,
                npages,
                page_size,
                first_off,
            } => {
                let pages = pages.get(..*npages).ok_or(EINVAL)?;
                let ps = u64::from(*page_size);
                if ps == 0 {
                    return Err(EINVAL);
                }
                let mut pos = off.checked_add(u64::from(*first_off)).ok_or(EINVAL)?;
                let mut done = 0usize;
                while done < buf.len() {
                    let base = *pages.get((pos / ps) as usize).ok_or(EINVAL)?;
                    let in_blk = pos % ps;
                    let n = core::cmp::min(ps - in_blk, (buf.len() - done) as u64) as usize;
                    let mut chunk = buf.sub(done, n).ok_or(EINVAL)?;
                    let p = (base + in_blk) as usize as *mut u8;
                    // The block at `base` is page_size bytes of kernel memory the consumer
                    // mapped with ib_map_mr_sg and keeps valid while registered.
                    // SAFETY: in_blk + n <= page_size; chunk is valid for n bytes (written
                    // only when it is read into).
                    unsafe {
                        match dir {
                            Dir::ToMem => core::ptr::copy(chunk.raw(), p, n),
                            Dir::FromMem => chunk.copy_in(p),
                        }
                    }
                    done += n;
                    pos += n as u64;
                }
                Ok(())
            }
        }
    }

    /// Runs `f` on the 8-byte aligned word at the region's byte `off`.
    pub(crate) fn atomic<R>(&self, off: u64, f: impl FnOnce(&AtomicU64) -> R) -> Result<R> {
        match self {
            Backing::KernelVa => {
                if off % 8 != 0 || off == 0 || !kva_valid(off, 8) {
                    return Err(EINVAL);
                }
                // SAFETY: an aligned word of the linear map (checked above; see KernelVa),
                // and kernel accesses to it are atomic.
                Ok(f(unsafe { &*(off as usize as *const AtomicU64) }))
            }
            Backing::User(u) => u.atomic(off, f),
            Backing::Odp(o) => o.atomic(off, f),
            Backing::OdpImplicit(o) => o.atomic(off, f),
            Backing::Mapped(m) => m.atomic(off, f),
            Backing::KernelPages {
                pages,
                npages,
                page_size,
                first_off,
            } => {
                let pages = pages.get(..*npages).ok_or(EINVAL)?;
                let ps = u64::from(*page_size);
                let pos = off.checked_add(u64::from(*first_off)).ok_or(EINVAL)?;
                if ps < 8 || pos % ps > ps - 8 {
                    return Err(EINVAL);
                }
                let addr = pages.get((pos / ps) as usize).ok_or(EINVAL)? + pos % ps;
                if addr % 8 != 0 {
                    return Err(EINVAL);
                }
                // SAFETY: inside a registered block (checked above), aligned.
                Ok(f(unsafe { &*(addr as usize as *const AtomicU64) }))
            }
        }
    }
}
