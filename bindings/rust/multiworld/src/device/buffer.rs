//! Owned device memory, allocated through the CUDA runtime (feature `cuda`).
use std::marker::PhantomData;
use std::os::raw::c_void;

use super::{DeviceSlice, DeviceSliceMut};
use crate::cuda::{self, Direction};
use crate::element::Element;
use crate::error::{Error, Result};

/// The number of CUDA devices this process can use (`cudaGetDeviceCount`),
/// or an error saying why the CUDA runtime cannot be used here.
///
/// ```no_run
/// match multiworld::cuda_device_count() {
///     Ok(n) => println!("{} CUDA devices", n),
///     Err(e) => println!("no CUDA: {}", e),
/// }
/// ```
pub fn cuda_device_count() -> Result<usize> {
    cuda::device_count()
}

/// `len` elements of `T` in device memory of one CUDA device, owned: made
/// with `cudaMalloc`, freed with `cudaFree` on drop (feature `cuda`).
///
/// Operations take it as a [`DeviceSlice`] (`&buffer`) or a
/// [`DeviceSliceMut`] (`&mut buffer`), borrowed for their scope, so it
/// cannot be dropped while in flight. The CUDA runtime is loaded at run
/// time; without it, or without a device, the constructors fail with
/// [`Error::Unsupported`] saying why. See the [`device`](crate::device)
/// module for the ordering rules.
///
/// ```no_run
/// use multiworld::{Backend, DeviceBuffer, ReduceOp};
/// let ctx = multiworld::Context::from_env()?;
/// let world = ctx.create_world_with("gpu", 0, 1, Backend::Nccl, 0, None)?;
/// let x = DeviceBuffer::from_host(&[1.0f32, 2.0, 3.0], 0)?;
/// let mut sum = DeviceBuffer::<f32>::zeroed(3, 0)?;
/// multiworld::scope(|s| world.device_allreduce(s, &x, &mut sum, ReduceOp::Sum)?.wait(None))?;
/// assert_eq!(sum.to_vec()?, [1.0, 2.0, 3.0]); // completed: ready on the device
/// # Ok::<(), multiworld::Error>(())
/// ```
pub struct DeviceBuffer<T: Element> {
    addr: usize,
    len: usize,
    device: i32,
    _owns: PhantomData<T>,
}

fn bytes<T>(len: usize) -> Result<usize> {
    len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
        Error::InvalidArgument(format!("{} elements overflow the address space", len))
    })
}

impl<T: Element> DeviceBuffer<T> {
    /// `len` elements on `device`, contents unspecified (every bit pattern
    /// is a valid `T`).
    pub fn alloc(len: usize, device: i32) -> Result<DeviceBuffer<T>> {
        let addr = cuda::alloc(bytes::<T>(len)?, device)?;
        Ok(DeviceBuffer {
            addr,
            len,
            device,
            _owns: PhantomData,
        })
    }

    /// `len` zeroed elements on `device`.
    pub fn zeroed(len: usize, device: i32) -> Result<DeviceBuffer<T>> {
        let buf = DeviceBuffer::alloc(len, device)?;
        cuda::zero(buf.addr, buf.byte_len(), device)?;
        Ok(buf)
    }

    /// A copy of `src` on `device`.
    pub fn from_host(src: &[T], device: i32) -> Result<DeviceBuffer<T>> {
        let mut buf = DeviceBuffer::alloc(src.len(), device)?;
        buf.copy_from_host(src)?;
        Ok(buf)
    }

    /// The device address, for your own kernels; it stays owned by this
    /// buffer.
    pub fn as_ptr(&self) -> *const T {
        self.addr as *const T
    }

    /// A shared view, for operations that read the buffer.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        // SAFETY: our allocation, shared for as long as `self` is.
        unsafe { DeviceSlice::from_raw_parts(self.addr as *const T, self.len, self.device) }
    }

    /// An exclusive view, for operations that write the buffer.
    pub fn as_mut_slice(&mut self) -> DeviceSliceMut<'_, T> {
        // SAFETY: our allocation, exclusively borrowed.
        unsafe { DeviceSliceMut::from_raw_parts_mut(self.addr as *mut T, self.len, self.device) }
    }

    /// Copies `src` (exactly `len` elements) into the buffer and returns
    /// once the data are on the device.
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        self.same_len(src.len(), "copy_from_host")?;
        // SAFETY: both hold byte_len bytes; `&mut self` excludes any
        // operation in flight on the buffer.
        unsafe {
            cuda::copy(
                self.addr as *mut c_void,
                src.as_ptr() as *const c_void,
                self.byte_len(),
                Direction::HostToDevice,
                self.device,
            )
        }
    }

    /// Copies the buffer into `dst` (exactly `len` elements).
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        self.same_len(dst.len(), "copy_to_host")?;
        // SAFETY: both hold byte_len bytes; an operation that writes the
        // buffer borrows it mutably, so none is in flight.
        unsafe {
            cuda::copy(
                dst.as_mut_ptr() as *mut c_void,
                self.addr as *const c_void,
                self.byte_len(),
                Direction::DeviceToHost,
                self.device,
            )
        }
    }

    /// The buffer's contents, copied to the host.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        // SAFETY: all-zero bits are a valid value of every Element type.
        let mut out = vec![unsafe { std::mem::zeroed::<T>() }; self.len];
        self.copy_to_host(&mut out)?;
        Ok(out)
    }

    fn same_len(&self, other: usize, what: &str) -> Result<()> {
        if other == self.len {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "{}: the host slice holds {} elements, the device buffer {}",
                what, other, self.len
            )))
        }
    }
}

impl<T: Element> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        cuda::free(self.addr, self.device);
    }
}

impl<'a, T: Element> From<&'a DeviceBuffer<T>> for DeviceSlice<'a, T> {
    fn from(b: &'a DeviceBuffer<T>) -> DeviceSlice<'a, T> {
        b.as_slice()
    }
}

impl<'a, T: Element> From<&'a mut DeviceBuffer<T>> for DeviceSliceMut<'a, T> {
    fn from(b: &'a mut DeviceBuffer<T>) -> DeviceSliceMut<'a, T> {
        b.as_mut_slice()
    }
}

device_extent!(DeviceBuffer);
