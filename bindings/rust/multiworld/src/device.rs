//! Device memory for NCCL worlds: borrowed views of CUDA device memory
//! ([`DeviceSlice`], [`DeviceSliceMut`]) and, with the `cuda` feature, an
//! owned allocation (`DeviceBuffer`). The crate root re-exports them; the
//! NCCL operations are [`World`](crate::World)'s `device_*` methods.
//!
//! # Ownership
//!
//! * A [`DeviceSlice<'a, T>`] is to device memory what `&'a [T]` is to host
//!   memory, and a [`DeviceSliceMut<'a, T>`] what `&'a mut [T]` is: a
//!   device address, a length in elements of `T` (so a byte length) and a
//!   CUDA device ordinal, borrowed for `'a`. A view never allocates and
//!   never frees.
//! * A view is made from a raw device pointer with `unsafe`
//!   [`DeviceSlice::from_raw_parts`] / [`DeviceSliceMut::from_raw_parts_mut`],
//!   whose caller promises that the memory stays allocated for `'a` and
//!   (for the `Mut` view) that nothing else reads or writes it while the
//!   view is in use, or borrowed from a `DeviceBuffer`.
//! * A `DeviceBuffer<T>` (feature `cuda`) owns memory it allocated with `cudaMalloc` on
//!   one device and frees it with `cudaFree` when dropped. The CUDA runtime
//!   (`libcudart.so`) is loaded at run time on first use; building needs no
//!   CUDA and no GPU.
//! * An operation borrows its views for its whole [`scope`](crate::scope),
//!   exactly like host slices, so a `DeviceBuffer` cannot be dropped, and a
//!   view's memory cannot be handed out again, while the library may still
//!   touch it.
//!
//! # Ordering with your own CUDA work
//!
//! An NCCL world runs its operations on its own non-blocking CUDA stream,
//! in issue order. Two rules follow:
//!
//! * **Completion means ready on the device.** A request completes (its
//!   `wait`, `.await` or poll returns) only after the CUDA event the
//!   library records behind the operation has completed, so the results
//!   are in device memory, visible to any stream and any later copy or
//!   kernel, with no further synchronisation.
//! * **Finish writing before you issue.** The world's stream does not wait
//!   for yours: synchronise the stream that produced a send buffer (for
//!   example `cudaStreamSynchronize`) before issuing the operation that
//!   reads it, and do not write a buffer, or read a receive buffer, until
//!   its request completed. `DeviceBuffer`'s copies return only when the
//!   data are in place.
use std::marker::PhantomData;

use crate::element::Element;
use crate::op::Buf;

/// A borrowed view of `len` elements of device memory on one CUDA device,
/// the device counterpart of `&'a [T]`: the input of operations on NCCL
/// worlds. `Copy`, like a shared reference. See the [module
/// documentation](crate::device) for ownership and ordering.
pub struct DeviceSlice<'a, T> {
    addr: usize,
    len: usize,
    device: i32,
    _borrow: PhantomData<&'a [T]>,
}

/// A borrowed, exclusive view of `len` elements of device memory on one
/// CUDA device, the device counterpart of `&'a mut [T]`: the output of
/// operations on NCCL worlds. See the [module documentation](crate::device).
pub struct DeviceSliceMut<'a, T> {
    addr: usize,
    len: usize,
    device: i32,
    _borrow: PhantomData<&'a mut [T]>,
}

impl<T> Clone for DeviceSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for DeviceSlice<'_, T> {}

fn split(addr: usize, len: usize, mid: usize, esize: usize) -> ((usize, usize), (usize, usize)) {
    assert!(
        mid <= len,
        "split at {} of a device slice of {} elements",
        mid,
        len
    );
    ((addr, mid), (addr + mid * esize, len - mid))
}

impl<'a, T: Element> DeviceSlice<'a, T> {
    /// A view of `len` elements of `T` at the device address `ptr` on CUDA
    /// device `device`.
    ///
    /// # Safety
    ///
    /// `ptr` is device memory of `device` (from `cudaMalloc`, a caching
    /// allocator, another library's tensor, ...) holding at least `len`
    /// elements of `T`, aligned for `T`, that stays allocated for `'a` and
    /// that nothing writes while an operation reading it runs.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world_with("gpu", 0, 1, multiworld::Backend::Nccl, 0, None)?;
    /// # let (weights_ptr, n): (*const f32, usize) = (std::ptr::null(), 0);
    /// // `weights_ptr` comes from your CUDA code and outlives the scope.
    /// let weights = unsafe { multiworld::DeviceSlice::from_raw_parts(weights_ptr, n, 0) };
    /// multiworld::scope(|s| world.device_send(s, weights, 1)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub unsafe fn from_raw_parts(ptr: *const T, len: usize, device: i32) -> DeviceSlice<'a, T> {
        DeviceSlice {
            addr: ptr as usize,
            len,
            device,
            _borrow: PhantomData,
        }
    }

    /// The device address; never dereference it on the host.
    pub fn as_ptr(&self) -> *const T {
        self.addr as *const T
    }

    /// The first `mid` elements and the rest. Panics if `mid > len`.
    pub fn split_at(self, mid: usize) -> (DeviceSlice<'a, T>, DeviceSlice<'a, T>) {
        let ((a, n), (b, m)) = split(self.addr, self.len, mid, std::mem::size_of::<T>());
        // SAFETY: two disjoint parts of this view, for the same lifetime.
        unsafe {
            (
                DeviceSlice::from_raw_parts(a as *const T, n, self.device),
                DeviceSlice::from_raw_parts(b as *const T, m, self.device),
            )
        }
    }

    pub(crate) fn buf(&self) -> Buf {
        Buf::device(self.addr, self.len, self.device)
    }
}

impl<'a, T: Element> DeviceSliceMut<'a, T> {
    /// An exclusive view of `len` elements of `T` at the device address
    /// `ptr` on CUDA device `device`.
    ///
    /// # Safety
    ///
    /// As [`DeviceSlice::from_raw_parts`], and nothing else reads or writes
    /// the memory for `'a` except through this view.
    pub unsafe fn from_raw_parts_mut(
        ptr: *mut T,
        len: usize,
        device: i32,
    ) -> DeviceSliceMut<'a, T> {
        DeviceSliceMut {
            addr: ptr as usize,
            len,
            device,
            _borrow: PhantomData,
        }
    }

    /// The device address; never dereference it on the host.
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.addr as *mut T
    }

    /// A shared view for as long as this one is borrowed.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        // SAFETY: a shared reborrow of memory this view holds exclusively.
        unsafe { DeviceSlice::from_raw_parts(self.addr as *const T, self.len, self.device) }
    }

    /// An exclusive view for as long as this one is borrowed, so that one
    /// view can be handed to several operations in turn.
    pub fn as_mut_slice(&mut self) -> DeviceSliceMut<'_, T> {
        // SAFETY: an exclusive reborrow.
        unsafe { DeviceSliceMut::from_raw_parts_mut(self.addr as *mut T, self.len, self.device) }
    }

    /// The first `mid` elements and the rest. Panics if `mid > len`.
    pub fn split_at_mut(self, mid: usize) -> (DeviceSliceMut<'a, T>, DeviceSliceMut<'a, T>) {
        let ((a, n), (b, m)) = split(self.addr, self.len, mid, std::mem::size_of::<T>());
        // SAFETY: two disjoint parts of this exclusive view.
        unsafe {
            (
                DeviceSliceMut::from_raw_parts_mut(a as *mut T, n, self.device),
                DeviceSliceMut::from_raw_parts_mut(b as *mut T, m, self.device),
            )
        }
    }

    pub(crate) fn buf(&self) -> Buf {
        Buf::device(self.addr, self.len, self.device)
    }
}

impl<'a, T: Element> From<DeviceSliceMut<'a, T>> for DeviceSlice<'a, T> {
    fn from(v: DeviceSliceMut<'a, T>) -> DeviceSlice<'a, T> {
        // SAFETY: the exclusive view is given up for a shared one.
        unsafe { DeviceSlice::from_raw_parts(v.addr as *const T, v.len, v.device) }
    }
}

impl<'a, T: Element> From<&'a DeviceSliceMut<'_, T>> for DeviceSlice<'a, T> {
    fn from(v: &'a DeviceSliceMut<'_, T>) -> DeviceSlice<'a, T> {
        v.as_slice()
    }
}

impl<'a, T: Element> From<&'a mut DeviceSliceMut<'_, T>> for DeviceSliceMut<'a, T> {
    fn from(v: &'a mut DeviceSliceMut<'_, T>) -> DeviceSliceMut<'a, T> {
        v.as_mut_slice()
    }
}

/// What every device memory type shares: each is a device address, a
/// length in elements of `T` and a CUDA device ordinal.
macro_rules! device_extent {
    ($ty:ident $(<$lt:lifetime>)?) => {
        impl<$($lt,)? T: Element> $ty<$($lt,)? T> {
            /// The number of elements.
            pub fn len(&self) -> usize {
                self.len
            }

            /// Whether it holds no element.
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// The size in bytes.
            pub fn byte_len(&self) -> usize {
                self.len * std::mem::size_of::<T>()
            }

            /// The CUDA device ordinal the memory belongs to.
            pub fn device(&self) -> i32 {
                self.device
            }
        }

        impl<$($lt,)? T: Element> std::fmt::Debug for $ty<$($lt,)? T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("ptr", &(self.addr as *const u8))
                    .field("len", &self.len)
                    .field("dtype", &T::DTYPE)
                    .field("device", &self.device)
                    .finish()
            }
        }
    };
}

device_extent!(DeviceSlice<'a>);
device_extent!(DeviceSliceMut<'a>);

#[cfg(feature = "cuda")]
mod buffer;
#[cfg(feature = "cuda")]
pub use self::buffer::{cuda_device_count, DeviceBuffer};
