//! Safe Rust API for **multiworld**: elastic, fault-isolated process groups
//! ("worlds") over a stable C ABI.
//!
//! A process belongs to any number of small worlds at once; each world is its
//! own communicator and its own fault domain. When a member dies, hangs or is
//! cut off, only the worlds containing it break: their pending operations
//! fail with [`Error::WorldBroken`], and every other world keeps running.
//! Redis is the control plane (`MW_REDIS_URL`); UCX (or Gloo) carries host
//! buffers and NCCL device buffers.
//!
//! The pieces, in the order a program meets them:
//!
//! * [`Config`] → [`Context`] (one per process; `Drop` frees it);
//! * [`Context::create_world`] → [`World`], which borrows its context and is
//!   destroyed on `Drop`;
//! * [`scope`] → [`Scope`], inside which a world's operations return
//!   [`Request`]s that borrow their buffers; a request is completed by
//!   [`Request::wait`], [`Request::test`], `.await` (it is a [`Future`]) or
//!   [`Context::poll`], and taken back by [`Request::cancel`] or by
//!   dropping it;
//! * [`Context::next_event`] reports world breaks, data path changes and
//!   Redis outages.
//!
//! Buffers hold [`Element`] types: `i8`, `u8`, `i32`, `u32`, `i64`, `u64`,
//! `f32`, `f64`, and [`F16`] / [`BF16`] for 16-bit floats. Host worlds
//! (UCX, Gloo) take slices; NCCL worlds take device memory, as
//! [`DeviceSlice`] / [`DeviceSliceMut`] views or, with the `cuda` feature,
//! an owned `DeviceBuffer` (see the [`device`] module).
//!
//! ```no_run
//! use std::time::Duration;
//! use multiworld::{Config, ReduceOp};
//!
//! fn main() -> multiworld::Result<()> {
//!     // Run as `prog 0` and `prog 1`, with MW_REDIS_URL set.
//!     let rank: usize = std::env::args().nth(1).unwrap().parse().unwrap();
//!     let ctx = Config::new().connect()?;
//!     let world = ctx.create_world("pair", rank, 2, Some(Duration::from_secs(10)))?;
//!
//!     let x = [1.0f32, 2.0, 3.0, rank as f32];
//!     let mut sum = [0.0f32; 4];
//!     multiworld::scope(|s| world.allreduce(s, &x, &mut sum, ReduceOp::Sum)?.wait(None))?;
//!     println!("rank {}: {:?}", rank, sum);
//!     Ok(())
//! } // world, then context, are destroyed here
//! ```
//!
//! # Soundness of borrowed buffers
//!
//! The library reads and writes a request's buffers until the request
//! completes. A `Request<'a>` borrows them, so they cannot be touched or
//! freed while it exists, and because safe code may leak a request with
//! `mem::forget` instead of dropping it, the buffers must also outlive the
//! [`scope`] the request was issued in, which does not return until the
//! library is done with all of them. The same design as
//! `std::thread::scope`. A scope does not wait on peers for requests nobody
//! waits for any more: it cancels them, then waits for the cancellations.
//!
//! # Threads
//!
//! [`Context`], [`World`] and [`Request`] are `Send` and `Sync`, because the
//! C API allows every call on them from any thread concurrently, except
//! freeing or destroying them, which this crate only does with exclusive
//! access (`Drop`, [`World::destroy`]). A context starts one helper thread
//! the first time a request future is polled while pending (or
//! [`Context::poll`] or [`Context::next_event`] is called); it sleeps on the
//! library's fd (`mw_context_fd`) until a completion or an event is queued,
//! drains both and wakes futures, and stops when the context is dropped. It
//! uses no CPU while idle and adds no delay.
//!
//! # Features
//!
//! * `cuda`: `DeviceBuffer`, device memory allocated through the CUDA
//!   runtime, which is loaded at run time (`libcudart.so`); building needs
//!   neither CUDA nor a GPU.
//!
//! [`Future`]: std::future::Future
#![deny(missing_docs)]
#![warn(rust_2018_idioms)]

mod config;
mod context;
#[cfg(feature = "cuda")]
mod cuda;
pub mod device;
mod device_ops;
mod element;
mod error;
mod event;
mod host_ops;
mod metrics;
mod op;
mod place;
mod poller;
mod request;
mod scope;
mod shared;
mod world;
mod world_params;

use std::ffi::CStr;

/// The raw C API (the `multiworld-sys` crate), for what this crate does not
/// wrap; see the `as_raw` methods.
pub use multiworld_sys as sys;

pub use crate::config::{Config, LogLevel};
pub use crate::context::{Completion, Context};
#[cfg(feature = "cuda")]
pub use crate::device::{cuda_device_count, DeviceBuffer};
pub use crate::device::{DeviceSlice, DeviceSliceMut};
pub use crate::element::{Dtype, Element, BF16, F16};
pub use crate::error::{Error, Result};
pub use crate::event::{DataPath, Event};
pub use crate::metrics::{Metric, MetricKind, Metrics};
pub use crate::request::{Request, RequestId};
pub use crate::scope::{scope, Issue, Scope};
pub use crate::world::{Backend, ReduceOp, ShrinkMode, World, WorldState};
pub use crate::world_params::{OpTimeout, WorldParams};

/// The version of the loaded library as `(major, minor, patch)`
/// (`mw_version`).
///
/// ```no_run
/// let (major, minor, _) = multiworld::version();
/// assert_eq!((major, minor), (0, 2));
/// ```
pub fn version() -> (i32, i32, i32) {
    let (mut major, mut minor, mut patch) = (0, 0, 0);
    // SAFETY: valid out-pointers.
    unsafe { sys::mw_version(&mut major, &mut minor, &mut patch) };
    (major, minor, patch)
}

/// The version of the loaded library as text, e.g. `"0.2.0"`
/// (`mw_version_string`).
///
/// ```no_run
/// println!("libmultiworld {}", multiworld::version_string());
/// ```
pub fn version_string() -> &'static str {
    // SAFETY: a static NUL-terminated string.
    unsafe { CStr::from_ptr(sys::mw_version_string()) }
        .to_str()
        .unwrap_or("?")
}

/// The C name of a status code, e.g. `"MW_ERR_WORLD_BROKEN"`
/// (`mw_status_string`).
///
/// ```no_run
/// assert_eq!(multiworld::status_string(-5), "MW_ERR_WORLD_BROKEN");
/// ```
pub fn status_string(code: i32) -> &'static str {
    // SAFETY: returns a static NUL-terminated string for any input.
    unsafe { CStr::from_ptr(sys::mw_status_string(code)) }
        .to_str()
        .unwrap_or("MW_ERR_UNKNOWN")
}

/// Whether `backend` is compiled in and usable on this machine
/// (`mw_backend_available`).
///
/// ```no_run
/// assert!(multiworld::backend_available(multiworld::Backend::Gloo));
/// ```
pub fn backend_available(backend: Backend) -> bool {
    // SAFETY: any value is accepted.
    unsafe { sys::mw_backend_available(backend.to_raw()) != 0 }
}
