// SPDX-License-Identifier: GPL-2.0
//! Typed views of the verbs objects the RDMA core passes to the entry points.
//!
//! Every object the core allocates for us (`size_ib_*` in the ops table), and every MR we
//! allocate ourselves, is a [`DrvObj`]: the core's struct first, so that the core's pointer
//! is also ours, then the driver's data. [`DriverObj`] says once per core type which data
//! the driver keeps there; the views below give safe access to both parts under that
//! contract, so that the entry points only convert their raw arguments once.

use super::bindings;
use super::IbDev;
use core::marker::PhantomData;
use core::ptr::{addr_of_mut, NonNull};
use kernel::prelude::*;

/// The memory layout of every driver object: the core's struct, then the driver's data.
#[repr(C)]
#[pin_data]
pub(crate) struct DrvObj<I, D> {
    pub(super) ib: I,
    #[pin]
    pub(super) data: D,
}

/// A core object type (`ib_cq`, `ib_qp`, ...) and the driver data its objects carry.
///
/// The top layer names the data once per type; glue keeps every object consistent with it:
/// the ops table declares the size of `DrvObj<Self, Self::Data>` ([`super::verbs`]), the
/// device is allocated as one ([`super::IbDev`]), MRs by [`new_boxed`]; a creation
/// succeeds only with the [`Created`] proof that [`NewObj::init`] initialised the data, and
/// only the destruction callback drops it.
pub(crate) trait DriverObj: Sized {
    /// What the driver keeps in each object.
    type Data;
}

/// A core object type that names its device.
pub(crate) trait HasDevice {
    /// The object's `device` field.
    fn device_ptr(&self) -> *mut bindings::ib_device;
}

macro_rules! has_device {
    ($($t:ident),*) => {$(
        impl HasDevice for bindings::$t {
            fn device_ptr(&self) -> *mut bindings::ib_device {
                self.device
            }
        }
    )*};
}
has_device!(
    ib_cq,
    ib_qp,
    ib_srq,
    ib_ah,
    ib_mw,
    ib_pd,
    ib_mr,
    ib_ucontext
);

/// The device of an object of ours, for the callback that passed the object (the device
/// outlives the object).
fn device_of<'a, I: HasDevice>(ib: &I) -> &'a IbDev {
    // SAFETY: the core sets an object's `device` before any callback sees it, to the
    // device whose ops it calls (an rrxe device), which outlives all of its objects.
    unsafe { IbDev::from_raw(ib.device_ptr()) }
}

/// A live object the core passes to a callback other than its creation or destruction.
pub(crate) struct Obj<'a, I: DriverObj>(&'a DrvObj<I, I::Data>);

impl<'a, I: DriverObj> Obj<'a, I> {
    /// # Safety
    /// `ib` is null or an object of an rrxe device (whose data is initialised, by
    /// [`DriverObj`]'s rules) that stays alive for `'a`: any callback but its creation (use [`NewObj`]), and in its
    /// destruction only until [`destroy`] or [`free_boxed`].
    pub(crate) unsafe fn from_raw(ib: *const I) -> Option<Self> {
        // SAFETY: by the contract and DriverObj's rules, a DrvObj with initialised data,
        // alive for 'a.
        NonNull::new(ib.cast_mut()).map(|p| Obj(unsafe { &*p.as_ptr().cast() }))
    }

    /// The driver's data.
    pub(crate) fn data(&self) -> &'a I::Data {
        &self.0.data
    }

    /// The core's part (fields the core set up and does not change during the call).
    pub(crate) fn ib(&self) -> &'a I {
        &self.0.ib
    }

    /// The object's address: its identity for the core (kernel CQEs carry the `ib_qp`).
    pub(crate) fn addr(&self) -> u64 {
        core::ptr::from_ref(self.0) as u64
    }

    /// The object's device.
    pub(crate) fn dev(&self) -> &'a IbDev
    where
        I: HasDevice,
    {
        device_of(&self.0.ib)
    }
}

impl Obj<'_, bindings::ib_cq>
where
    bindings::ib_cq: DriverObj,
{
    /// Records the CQ's number of entries where the core reads it (`ib_cq.cqe`).
    pub(crate) fn set_cqe(&self, n: i32) {
        let p = core::ptr::from_ref(&self.0.ib.cqe).cast_mut();
        // SAFETY: a live, aligned field of a live CQ; every write to it after creation is
        // this atomic one, so concurrent resizes do not race in Rust's sense.
        unsafe { core::sync::atomic::AtomicI32::from_ptr(p) }
            .store(n, core::sync::atomic::Ordering::Relaxed);
    }
}

impl NewObj<'_, bindings::ib_cq>
where
    bindings::ib_cq: DriverObj,
{
    /// The completion vector `vector` for this CQ (`vector` below the device's
    /// `num_comp_vectors`, checked by the caller; any value maps to an online CPU).
    pub(crate) fn comp_vector(&self, vector: u32) -> Result<super::CompVector> {
        // The core's part is the first field of the repr(C) DrvObj.
        let cq = self.0.as_ptr().cast::<bindings::ib_cq>();
        // SAFETY: `cq` is the CQ being created (contract of from_raw), alive until its
        // destruction, which drops the driver data owning the vector first; the helper
        // only allocates and records the pointer.
        let v = unsafe { bindings::rrxe_glue_cq_vec_new(cq, vector) };
        Ok(super::CompVector(NonNull::new(v).ok_or(ENOMEM)?))
    }
}

/// An object the core just allocated for its creation callback: core fields set, driver
/// data not yet initialised, exclusively ours until the callback returns.
pub(crate) struct NewObj<'a, I: DriverObj>(NonNull<DrvObj<I, I::Data>>, PhantomData<&'a mut I>);

impl<'a, I: DriverObj> NewObj<'a, I> {
    /// # Safety
    /// `ib` is null or the object the core allocated (with the size declared for
    /// `DrvObj<I, I::Data>`) for the creation callback now running, alive and not touched
    /// by the core for `'a`.
    pub(crate) unsafe fn from_raw(ib: *mut I) -> Option<Self> {
        NonNull::new(ib.cast()).map(|p| NewObj(p, PhantomData))
    }

    /// The core's part.
    pub(crate) fn ib(&self) -> &I {
        // SAFETY: allocated and ours for 'a (contract of from_raw); the core part is
        // initialised by the core.
        unsafe { &(*self.0.as_ptr()).ib }
    }

    /// The core's part, to fill in what the core reads back (`cqe`, `qp_num`, keys).
    pub(crate) fn ib_mut(&mut self) -> &mut I {
        // SAFETY: as in `ib`; exclusively ours during creation.
        unsafe { &mut (*self.0.as_ptr()).ib }
    }

    /// The object's address (see [`Obj::addr`]).
    pub(crate) fn addr(&self) -> u64 {
        self.0.as_ptr() as u64
    }

    /// The object's device.
    pub(crate) fn dev(&self) -> &'a IbDev
    where
        I: HasDevice,
    {
        // SAFETY: as in `ib`, for 'a.
        device_of(unsafe { &(*self.0.as_ptr()).ib })
    }

    /// Initialises the driver data in place. The result drops it again unless kept.
    pub(crate) fn init(self, init: impl PinInit<I::Data, Error>) -> Result<Created<'a, I>> {
        // SAFETY: the data slot is allocated, uninitialised and never moves until the
        // destruction callback (contract of from_raw); on error nothing is left to drop.
        unsafe { super::pin_init_slot(init, addr_of_mut!((*self.0.as_ptr()).data))? };
        Ok(Created(self.0, PhantomData))
    }

    /// Initialises plain driver data by value (what cannot fail once built).
    pub(crate) fn init_value(self, data: I::Data) -> Created<'a, I> {
        // SAFETY: the data slot is allocated, uninitialised and ours (contract of from_raw).
        unsafe { addr_of_mut!((*self.0.as_ptr()).data).write(data) };
        Created(self.0, PhantomData)
    }
}

/// An object whose driver data was just initialised by its creation callback. Dropping it
/// drops the data (the creation fails); [`Created::keep`] hands the object to the core.
pub(crate) struct Created<'a, I: DriverObj>(NonNull<DrvObj<I, I::Data>>, PhantomData<&'a mut I>);

impl<I: DriverObj> Created<'_, I> {
    /// The driver's data.
    pub(crate) fn data(&self) -> &I::Data {
        // SAFETY: initialised by NewObj::init and ours until kept or dropped.
        unsafe { &(*self.0.as_ptr()).data }
    }

    /// The core's part (see [`NewObj::ib_mut`]).
    pub(crate) fn ib_mut(&mut self) -> &mut I {
        // SAFETY: exclusively ours during creation.
        unsafe { &mut (*self.0.as_ptr()).ib }
    }

    /// The creation succeeds: the data stays until the destruction callback.
    pub(super) fn keep(self) {
        core::mem::forget(self);
    }
}

impl<I: DriverObj> Drop for Created<'_, I> {
    fn drop(&mut self) {
        // SAFETY: initialised and not visible to anybody else yet (creation failed).
        unsafe { core::ptr::drop_in_place(addr_of_mut!((*self.0.as_ptr()).data)) };
    }
}

/// Drops the driver data of an object being destroyed; returns its device (`None` for a
/// null pointer).
///
/// # Safety
/// `ib` is null or a live object of ours passed to its destruction callback (called once);
/// the core frees the memory after the callback returns and never passes it to us again.
pub(crate) unsafe fn destroy<'a, I: DriverObj + HasDevice>(ib: *mut I) -> Option<&'a IbDev> {
    if ib.is_null() {
        return None;
    }
    let obj = ib.cast::<DrvObj<I, I::Data>>();
    // SAFETY: initialised by the creation (DriverObj's rules), dropped once here.
    unsafe { core::ptr::drop_in_place(addr_of_mut!((*obj).data)) };
    // SAFETY: the core part is still valid; the device outlives its objects.
    Some(device_of(unsafe { &*ib }))
}

/// Allocates an object the driver owns (MRs: the core takes the `ib_mr` we return), with
/// `data` in place, then lets `fill` set the core fields we own (keys); if `fill` fails the
/// object is freed again. The pointer goes back to [`free_boxed`].
pub(crate) fn new_boxed<I: DriverObj + Default>(
    data: impl PinInit<I::Data, Error>,
    fill: impl FnOnce(&mut I) -> Result,
) -> Result<*mut I> {
    let mut obj = KBox::pin_init(
        try_pin_init!(DrvObj::<I, I::Data> {
            ib: I::default(),
            data <- data,
        }? Error),
        GFP_KERNEL,
    )?;
    // SAFETY: only the core part is touched, which is not structurally pinned.
    fill(unsafe { &mut obj.as_mut().get_unchecked_mut().ib })?;
    // SAFETY: the object never moves out of its box: free_boxed turns the pointer back into
    // the box.
    let obj = KBox::into_raw(unsafe { Pin::into_inner_unchecked(obj) });
    Ok(obj.cast())
}

/// Frees an object of [`new_boxed`]; returns its device (read before the free; `None` for
/// a null pointer).
///
/// # Safety
/// `ib` is null or came from [`new_boxed`] and is released once (its destruction callback),
/// with no other reference left.
pub(crate) unsafe fn free_boxed<'a, I: DriverObj + HasDevice>(ib: *mut I) -> Option<&'a IbDev> {
    if ib.is_null() {
        return None;
    }
    // SAFETY: live until the free below; the device outlives its objects.
    let dev = device_of(unsafe { &*ib });
    // SAFETY: allocated by new_boxed as a KBox of this type; this is the only release.
    drop(unsafe { KBox::from_raw(ib.cast::<DrvObj<I, I::Data>>()) });
    Some(dev)
}

/// What an MR's data does with the pages `ib_map_mr_sg` hands over one at a time.
pub(crate) trait PageSink {
    /// A new mapping starts.
    fn reset(&self);
    /// Records the next page (its kernel virtual address).
    fn set_page(&self, addr: u64) -> Result;
}

unsafe extern "C" fn set_page<D: PageSink>(ibmr: *mut bindings::ib_mr, addr: u64) -> i32
where
    bindings::ib_mr: DriverObj<Data = D>,
{
    // SAFETY: called by ib_sg_to_pages for the MR map_mr_sg was called on, live during it.
    let Some(mr) = (unsafe { Obj::<bindings::ib_mr>::from_raw(ibmr) }) else {
        return EINVAL.to_errno();
    };
    match mr.data().set_page(addr) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `ib_map_mr_sg` for an MR of ours: resets its page list, then records the pages of the
/// scatterlist. Returns what `ib_sg_to_pages` returns (entries mapped, or a negative errno).
///
/// # Safety
/// The core's `map_mr_sg` arguments, passed through: a live MR of ours and the
/// consumer's scatterlist of `nents` entries.
pub(crate) unsafe fn map_mr_sg<D: PageSink>(
    ibmr: *mut bindings::ib_mr,
    sg: *mut bindings::scatterlist,
    nents: i32,
    sg_offset: *mut u32,
) -> i32
where
    bindings::ib_mr: DriverObj<Data = D>,
{
    // SAFETY: a live MR of ours (contract).
    let Some(mr) = (unsafe { Obj::<bindings::ib_mr>::from_raw(ibmr) }) else {
        return EINVAL.to_errno();
    };
    mr.data().reset();
    // SAFETY: the core's arguments; set_page::<D> only touches the MR's data.
    unsafe { bindings::rrxe_glue_sg_to_pages(ibmr, sg, nents, sg_offset, Some(set_page::<D>)) }
}

impl NewObj<'_, bindings::ib_qp>
where
    bindings::ib_qp: DriverObj,
{
    /// The QP for its async events (see [`super::QpPtr`]'s invariants: the driver raises
    /// them only until `destroy_qp` returns).
    pub(crate) fn qp_ptr(&self) -> super::QpPtr {
        super::QpPtr(self.0.cast())
    }
}

impl NewObj<'_, bindings::ib_srq>
where
    bindings::ib_srq: DriverObj,
{
    /// The SRQ for its async events (valid while the SRQ's data, which holds it, exists).
    pub(crate) fn srq_ptr(&self) -> super::SrqPtr {
        super::SrqPtr(self.0.cast())
    }

    /// Sets the number of an XRC SRQ, which the core returns to user space
    /// (`ib_srq.ext.xrc.srq_num`).
    pub(crate) fn set_xrc_srq_num(&mut self, n: u32) {
        // A store into the union member the core reads for an XRC SRQ (plain data, nothing
        // to drop).
        self.ib_mut().ext.__bindgen_anon_1.xrc.srq_num = n;
    }
}
