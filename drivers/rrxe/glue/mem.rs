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
use core::sync::atomic::AtomicU64;
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
    /// Read into this buffer.
    From(&'a mut [u8]),
}

impl<'a> Xfer<'a> {
    /// Bytes to move.
    pub(crate) fn len(&self) -> usize {
        match self {
            Xfer::To(b) => b.len(),
            Xfer::From(b) => b.len(),
        }
    }

    /// The direction.
    pub(crate) fn dir(&self) -> Dir {
        match self {
            Xfer::To(_) => Dir::ToMem,
            Xfer::From(_) => Dir::FromMem,
        }
    }

    /// The part `[start, start + n)`, or `None` if out of range.
    pub(crate) fn sub(&mut self, start: usize, n: usize) -> Option<Xfer<'_>> {
        let end = start.checked_add(n)?;
        match self {
            Xfer::To(b) => b.get(start..end).map(Xfer::To),
            Xfer::From(b) => b.get_mut(start..end).map(Xfer::From),
        }
    }

    /// A pointer to byte `start` and the direction, for the copy primitives: written
    /// through only for `From`.
    pub(super) fn raw(&mut self) -> *mut u8 {
        match self {
            Xfer::To(b) => b.as_ptr().cast_mut(),
            Xfer::From(b) => b.as_mut_ptr(),
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
            // SAFETY: the page is pinned by the umem we own; in_page + n <= PAGE_SIZE; chunk
            // is a valid buffer of n bytes, written to only when it is a `From` buffer.
            unsafe {
                bindings::rrxe_glue_page_copy(
                    page.as_ptr(),
                    in_page,
                    chunk.raw().cast(),
                    n,
                    dir == Dir::ToMem,
                )
            };
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
                let b = buf.raw();
                // SAFETY: [off, off+len) is in the kernel's linear map (checked above), the
                // memory a kernel consumer posted for this transfer (see KernelVa); b is
                // valid for n bytes and written only for a `From` buffer.
                unsafe {
                    match dir {
                        Dir::ToMem => core::ptr::copy(b, p, n),
                        Dir::FromMem => core::ptr::copy(p, b, n),
                    }
                }
                Ok(())
            }
            Backing::User(u) => u.copy(off, buf),
            Backing::Odp(o) => o.copy(off, buf),
            Backing::OdpImplicit(o) => o.copy(off, buf),
            Backing::Mapped(m) => m.copy(off, buf),
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
                    let c = chunk.raw();
                    let p = (base + in_blk) as usize as *mut u8;
                    // The block at `base` is page_size bytes of kernel memory the consumer
                    // mapped with ib_map_mr_sg and keeps valid while registered.
                    // SAFETY: in_blk + n <= page_size; c is valid for n bytes (written only
                    // for a `From` buffer).
                    unsafe {
                        match dir {
                            Dir::ToMem => core::ptr::copy(c, p, n),
                            Dir::FromMem => core::ptr::copy(p, c, n),
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
