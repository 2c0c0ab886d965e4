// SPDX-License-Identifier: GPL-2.0
//! Memory regions over dma-bufs (`reg_user_mr_dmabuf`, what `ibv_reg_dmabuf_mr` reaches).
//!
//! A hardware device imports a dma-buf through the core's `ib_umem_dmabuf_get*`: it attaches
//! to the buffer as a DMA device (`dma_buf_dynamic_attach`), pins it (or handles the
//! exporter's `move_notify` by invalidating its translation) and maps the attachment
//! (`dma_buf_map_attachment`) to get bus addresses for its DMA engine. rrxe has no DMA engine:
//! the CPU moves every byte, in the QP engine, so bus addresses are of no use to it. It
//! attaches and pins as `ib_umem_dmabuf_get_pinned` does (the pin is what keeps the
//! exporter's backing store in place: a dynamic exporter may move or free the pages behind
//! a mere `dma_buf_vmap`), then asks for a kernel mapping of the whole buffer
//! (`dma_buf_vmap`), and holds pin and mapping for the MR's lifetime: the MR's accesses are
//! plain loads and stores through it, bounds-checked against it, and there is no move to be
//! notified of. What this needs of an exporter: a buffer it can pin (or a static exporter,
//! which never moves one) and a `vmap` op that maps system memory. An exporter that cannot
//! pin the buffer is refused with its pin's errno; one without `vmap`, or whose mapping is
//! I/O memory (which plain loads and stores may not touch), with EOPNOTSUPP. The
//! attachment's device is the ib_device's own (rrxe has no DMA device; see
//! `rrxe_glue_mem.c`).
//!
//! Coherency: `dma_buf_begin_cpu_access`/`end_cpu_access` are not called around each access
//! (they may sleep; the QP engine runs in softirq context). That is sound on cache-coherent
//! architectures, where a CPU mapping sees what any other agent wrote.

use super::bindings;
use super::mem::Xfer;
use super::IbDev;
use core::ptr::NonNull;
use core::sync::atomic::AtomicU64;
use kernel::prelude::*;

/// One reference on a dma-buf (and rrxe's pinned attachment and kernel mapping, once made),
/// released on drop.
struct Buf(NonNull<bindings::rrxe_dmabuf>);

impl Drop for Buf {
    fn drop(&mut self) {
        // SAFETY: obtained from rrxe_glue_dmabuf_get, released once (with its mapping, pin and
        // attachment, if made). Process context: the MR code drops a region's memory only in
        // verbs calls (dereg_mr, or a failed reg).
        unsafe { bindings::rrxe_glue_dmabuf_release(self.0.as_ptr()) };
    }
}

/// The bytes `[offset, offset + len)` of a dma-buf, reached through the kernel mapping of the
/// whole buffer.
pub(crate) struct DmabufMap {
    /// The reference, the pin and the mapping (held for its drop); `base` is an address inside
    /// the mapping.
    _held: Buf,
    /// Kernel address of the region's first byte.
    ///
    /// INVARIANT: `[base, base + len)` lies inside the mapping of the whole buffer held by
    /// `_held` (checked in [`DmabufMap::get`]), which stays mapped, over the same pages (the
    /// buffer is pinned), until `_held` is dropped.
    base: NonNull<u8>,
    /// Bytes in the region.
    len: u64,
}

// SAFETY: the mapping is a kernel virtual address range valid on any CPU until `_held` is
// released, which only the owner does, on drop.
unsafe impl Send for DmabufMap {}
// SAFETY: as above; concurrent copies to the same bytes are the RDMA semantics (no Rust
// references to the buffer's contents are created, only raw copies and atomics).
unsafe impl Sync for DmabufMap {}

/// `err` from a C helper as an `Error`, or `dflt` if it did not set one.
fn c_err(err: i32, dflt: Error) -> Error {
    if err < 0 {
        Error::from_errno(err)
    } else {
        dflt
    }
}

impl DmabufMap {
    /// Takes the dma-buf of `fd` (of the calling process), pins it for `dev` and maps it for
    /// CPU access; the region is its bytes `[offset, offset + len)`. The checks and their
    /// errors follow the core's `ib_umem_dmabuf_get_pinned` (what a hardware driver's
    /// registration runs): a range that wraps, EINVAL; not a dma-buf, EBADF (or EINVAL, as
    /// `dma_buf_get` says); a range past the buffer's end or empty, EINVAL; the attach's or
    /// the pin's error. Then the mapping: EOPNOTSUPP if the exporter cannot give one rrxe may
    /// use (see the module doc), or the exporter's vmap error.
    pub(crate) fn get(dev: &IbDev, fd: i32, offset: u64, len: u64) -> Result<Self> {
        let end = offset.checked_add(len).ok_or(EINVAL)?;
        let mut size = 0u64;
        let mut err = 0i32;
        // SAFETY: looks `fd` up in the calling process's file table and takes a reference on
        // the dma-buf, or fails; both outputs are valid for writes.
        let raw = unsafe { bindings::rrxe_glue_dmabuf_get(fd, &mut size, &mut err) };
        // From here on, dropping `buf` releases the reference.
        let buf = Buf(NonNull::new(raw).ok_or_else(|| c_err(err, EBADF))?);
        if end > size || len == 0 {
            return Err(EINVAL);
        }
        let off = usize::try_from(offset).map_err(|_| EINVAL)?;
        let (b, d) = (buf.0.as_ptr(), dev.as_ptr());
        // SAFETY: `b` is live (held by `buf`) with no mapping yet; `d` outlives its MRs (the
        // core deregisters them first); `err` is writable; process context (a verbs call).
        // From here on, dropping `buf` also unmaps, unpins and detaches.
        let vaddr = unsafe { bindings::rrxe_glue_dmabuf_map(b, d, &mut err) };
        let vaddr = NonNull::new(vaddr.cast::<u8>()).ok_or_else(|| c_err(err, EINVAL))?;
        // SAFETY: the mapping covers the whole buffer, `size` bytes, and `off <= end <= size`:
        // the result is inside it or one past its end, and not null.
        let base = unsafe { NonNull::new_unchecked(vaddr.as_ptr().add(off)) };
        // INVARIANT: offset + len <= size (checked above), so [base, base + len) is mapped.
        Ok(DmabufMap {
            _held: buf,
            base,
            len,
        })
    }

    /// Copies between `buf` and the region at byte `off`.
    pub(crate) fn copy(&self, off: u64, buf: &mut Xfer<'_>) -> Result {
        let n = buf.len();
        if off.checked_add(n as u64).ok_or(EINVAL)? > self.len {
            return Err(EINVAL);
        }
        // `off < len`, which fits the address space (the mapping exists), so `off` fits usize.
        let p = self.base.as_ptr().wrapping_add(off as usize);
        let b = buf.raw();
        let to_mem = buf.dir() == super::mem::Dir::ToMem;
        // SAFETY: [p, p + n) is inside the mapping (checked above against `len`; see the
        // INVARIANT on `base`); b is valid for n bytes and written only for a `From` buffer.
        unsafe {
            if to_mem {
                core::ptr::copy(b, p, n);
            } else {
                core::ptr::copy(p, b, n);
            }
        }
        Ok(())
    }

    /// Runs `f` on the 8-byte word at the region's byte `off` (must be 8-aligned in memory).
    pub(crate) fn atomic<R>(&self, off: u64, f: impl FnOnce(&AtomicU64) -> R) -> Result<R> {
        if off.checked_add(8).ok_or(EINVAL)? > self.len {
            return Err(EINVAL);
        }
        let p = self.base.as_ptr().wrapping_add(off as usize);
        if (p as usize) % 8 != 0 {
            return Err(EINVAL);
        }
        // SAFETY: an aligned word inside the mapping (checked above; see the INVARIANT on
        // `base`), valid until `self` is dropped; all concurrent kernel accesses to it are
        // atomic.
        Ok(f(unsafe { &*p.cast::<AtomicU64>() }))
    }
}
