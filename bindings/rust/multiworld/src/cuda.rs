//! The CUDA runtime (`libcudart`), loaded with `dlopen` on first use, so the
//! crate builds without CUDA and without a GPU (feature `cuda`).
//!
//! Copies run on the legacy default stream and are waited for before they
//! return: the NCCL worlds' streams are non-blocking streams, which do not
//! wait for the default stream by themselves.
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};
use std::ptr;
use std::sync::Mutex;

use crate::error::{Error, Result};

/// Tried in order; the unversioned name is what a toolkit installs.
const LIBRARIES: &[&str] = &[
    "libcudart.so",
    "libcudart.so.13",
    "libcudart.so.12",
    "libcudart.so.11.0",
];
const RTLD_NOW: c_int = 2;

extern "C" {
    // From the C library that std links (libdl before glibc 2.34).
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
}

type CudaError = c_int;
const SUCCESS: CudaError = 0;
const ERROR_MEMORY_ALLOCATION: CudaError = 2;
const ERROR_INSUFFICIENT_DRIVER: CudaError = 35;
const ERROR_NO_DEVICE: CudaError = 100;
const ERROR_INVALID_DEVICE: CudaError = 101;

/// `cudaMemcpyKind`.
#[derive(Clone, Copy)]
pub(crate) enum Direction {
    HostToDevice = 1,
    DeviceToHost = 2,
}

/// The entry points this crate uses: field, symbol, C signature.
macro_rules! runtime {
    ($($field:ident = $symbol:literal: $ty:ty,)*) => {
        struct Runtime {
            $($field: $ty,)*
        }

        /// Looks every entry point up in the loaded library `handle`.
        fn resolve(handle: *mut c_void) -> std::result::Result<Runtime, String> {
            Ok(Runtime {
                $($field: {
                    let p = symbol(handle, $symbol)?;
                    // SAFETY: the symbol has the C signature the CUDA
                    // runtime API documents for it.
                    unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
                },)*
            })
        }
    };
}

runtime! {
    malloc = "cudaMalloc": unsafe extern "C" fn(*mut *mut c_void, usize) -> CudaError,
    free = "cudaFree": unsafe extern "C" fn(*mut c_void) -> CudaError,
    memcpy = "cudaMemcpy": unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) -> CudaError,
    memset = "cudaMemset": unsafe extern "C" fn(*mut c_void, c_int, usize) -> CudaError,
    stream_synchronize = "cudaStreamSynchronize": unsafe extern "C" fn(*mut c_void) -> CudaError,
    get_device = "cudaGetDevice": unsafe extern "C" fn(*mut c_int) -> CudaError,
    set_device = "cudaSetDevice": unsafe extern "C" fn(c_int) -> CudaError,
    get_device_count = "cudaGetDeviceCount": unsafe extern "C" fn(*mut c_int) -> CudaError,
    error_string = "cudaGetErrorString": unsafe extern "C" fn(CudaError) -> *const c_char,
}

fn symbol(handle: *mut c_void, name: &str) -> std::result::Result<*mut c_void, String> {
    let c_name = CString::new(name).expect("no NUL in symbol names");
    // SAFETY: a live handle and a NUL-terminated name.
    let p = unsafe { dlsym(handle, c_name.as_ptr()) };
    if p.is_null() {
        Err(format!(
            "the CUDA runtime lacks {}: {}",
            name,
            last_dl_error()
        ))
    } else {
        Ok(p)
    }
}

/// Loaded once; a failure is kept too, so it is reported the same way
/// every time.
static RUNTIME: Mutex<Option<std::result::Result<&'static Runtime, String>>> = Mutex::new(None);

fn last_dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string.
    let e = unsafe { dlerror() };
    if e.is_null() {
        "unknown error".to_string()
    } else {
        // SAFETY: as above.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

fn load() -> std::result::Result<Runtime, String> {
    let mut first_error = None;
    let mut handle = ptr::null_mut();
    for name in LIBRARIES {
        let c_name = CString::new(*name).expect("no NUL in library names");
        // SAFETY: a NUL-terminated name. The handle is never closed: the
        // runtime stays loaded for the life of the process.
        handle = unsafe { dlopen(c_name.as_ptr(), RTLD_NOW) };
        if !handle.is_null() {
            break;
        }
        first_error.get_or_insert_with(last_dl_error);
    }
    if handle.is_null() {
        return Err(format!(
            "the CUDA runtime could not be loaded (tried {}): {}",
            LIBRARIES.join(", "),
            first_error.unwrap_or_default()
        ));
    }
    resolve(handle)
}

fn runtime() -> Result<&'static Runtime> {
    let mut slot = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    let loaded = slot.get_or_insert_with(|| load().map(|rt| &*Box::leak(Box::new(rt))));
    loaded.clone().map_err(Error::Unsupported)
}

impl Runtime {
    fn check(&self, e: CudaError, what: &str) -> Result<()> {
        if e == SUCCESS {
            return Ok(());
        }
        // SAFETY: returns a static NUL-terminated string for any code.
        let text = unsafe { CStr::from_ptr((self.error_string)(e)) }.to_string_lossy();
        let detail = format!("{}: {} (cudaError {})", what, text, e);
        Err(match e {
            ERROR_MEMORY_ALLOCATION => Error::NoMemory(detail),
            ERROR_NO_DEVICE | ERROR_INSUFFICIENT_DRIVER => Error::Unsupported(detail),
            ERROR_INVALID_DEVICE => Error::InvalidArgument(detail),
            _ => Error::Backend(detail),
        })
    }

    /// Runs `f` with `device` current on this thread, then restores the
    /// thread's previous device.
    fn on_device<R>(&self, device: i32, f: impl FnOnce() -> Result<R>) -> Result<R> {
        let mut previous: c_int = 0;
        // SAFETY: a valid out-pointer.
        self.check(unsafe { (self.get_device)(&mut previous) }, "cudaGetDevice")?;
        let what = format!("cudaSetDevice({})", device);
        // SAFETY: any ordinal is accepted; a bad one is an error code.
        self.check(unsafe { (self.set_device)(device) }, &what)?;
        let out = f();
        if previous != device {
            // SAFETY: the ordinal was current a moment ago.
            unsafe { (self.set_device)(previous) };
        }
        out
    }

    /// Waits for the legacy default stream, where the copies run.
    fn sync(&self, what: &str) -> Result<()> {
        // SAFETY: NULL is the legacy default stream.
        self.check(unsafe { (self.stream_synchronize)(ptr::null_mut()) }, what)
    }
}

/// The number of CUDA devices this process can use.
pub(crate) fn device_count() -> Result<usize> {
    let rt = runtime()?;
    let mut n: c_int = 0;
    // SAFETY: a valid out-pointer.
    rt.check(
        unsafe { (rt.get_device_count)(&mut n) },
        "cudaGetDeviceCount",
    )?;
    Ok(n.max(0) as usize)
}

/// `bytes` of device memory on `device` (`cudaMalloc`); 0 bytes is the
/// address 0, which nothing dereferences.
pub(crate) fn alloc(bytes: usize, device: i32) -> Result<usize> {
    if bytes == 0 {
        return Ok(0);
    }
    let rt = runtime()?;
    rt.on_device(device, || {
        let mut p = ptr::null_mut();
        let what = format!("cudaMalloc({} bytes) on device {}", bytes, device);
        // SAFETY: a valid out-pointer.
        rt.check(unsafe { (rt.malloc)(&mut p, bytes) }, &what)?;
        Ok(p as usize)
    })
}

/// Frees what [`alloc`] returned.
pub(crate) fn free(addr: usize, device: i32) {
    if addr == 0 {
        return;
    }
    if let Ok(rt) = runtime() {
        let _ = rt.on_device(device, || {
            // SAFETY: an allocation of ours, freed once; nothing uses it
            // any more (its owner is being dropped).
            rt.check(unsafe { (rt.free)(addr as *mut c_void) }, "cudaFree")
        });
    }
}

/// Sets `bytes` at `addr` on `device` to zero and waits until they are.
pub(crate) fn zero(addr: usize, bytes: usize, device: i32) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let rt = runtime()?;
    rt.on_device(device, || {
        // SAFETY: the caller owns `bytes` of device memory at `addr`.
        rt.check(
            unsafe { (rt.memset)(addr as *mut c_void, 0, bytes) },
            "cudaMemset",
        )?;
        rt.sync("cudaStreamSynchronize after cudaMemset")
    })
}

/// Copies `bytes` between host memory and device memory of `device` and
/// returns once the data are in place.
///
/// # Safety
/// `dst` and `src` are valid for `bytes` in the memory `direction` names,
/// and nothing else writes `dst` meanwhile.
pub(crate) unsafe fn copy(
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    direction: Direction,
    device: i32,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let rt = runtime()?;
    rt.on_device(device, || {
        // SAFETY: the caller's promise.
        let e = unsafe { (rt.memcpy)(dst, src, bytes, direction as c_int) };
        rt.check(e, "cudaMemcpy")?;
        // A copy from pageable host memory may return before the DMA to
        // the device finished.
        rt.sync("cudaStreamSynchronize after cudaMemcpy")
    })
}
