//! Worlds: what they are and how they end. Their operations are in
//! `host_ops.rs` and `device_ops.rs`.
use std::ptr;
use std::sync::Arc;
use std::time::Duration;

use multiworld_sys as sys;

use crate::context::{timeout_ms, to_int, Context};
use crate::error::{last_error, Error, Result};

/// A data-plane backend (`mw_backend_t`).
///
/// ```
/// use multiworld::{backend_available, Backend};
/// let backend = if backend_available(Backend::Nccl) { Backend::Nccl } else { Backend::preferred_host() };
/// # let _ = backend;
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// Gloo over TCP, for host memory, with a thread per world; kept as a
    /// baseline. Always built in.
    Gloo,
    /// NCCL, for GPU memory ([`DeviceSlice`](crate::DeviceSlice)); a plugin
    /// that needs a CUDA driver and a device.
    Nccl,
    /// UCX, for host memory: TCP on one host and across hosts, RDMA where
    /// present (chosen by UCX, `UCX_*` variables apply), one
    /// progress engine per context.
    Ucx,
}

impl Backend {
    pub(crate) fn to_raw(self) -> sys::mw_backend_t {
        match self {
            Backend::Gloo => sys::MW_BACKEND_GLOO,
            Backend::Nccl => sys::MW_BACKEND_NCCL,
            Backend::Ucx => sys::MW_BACKEND_UCX,
        }
    }

    /// The host backend to use: [`Ucx`](Backend::Ucx) where it is available
    /// here, else [`Gloo`](Backend::Gloo). [`Context::create_world`] uses it.
    ///
    /// ```
    /// use multiworld::{backend_available, Backend};
    /// let host = Backend::preferred_host();
    /// assert!(host == Backend::Ucx || !backend_available(Backend::Ucx));
    /// ```
    pub fn preferred_host() -> Backend {
        if crate::backend_available(Backend::Ucx) {
            Backend::Ucx
        } else {
            Backend::Gloo
        }
    }
}

/// A reduction (`mw_redop_t`).
///
/// `Avg` is the sum divided by the world size; on integers the division
/// truncates toward zero and sums wrap modulo 2^bits. 16-bit floats are
/// reduced through `f32` with round-to-nearest-even.
///
/// ```no_run
/// # let ctx = multiworld::Context::from_env()?;
/// # let world = ctx.create_world("w", 0, 1, None)?;
/// use multiworld::ReduceOp;
/// let mut loss = [0.25f32];
/// multiworld::scope(|s| world.allreduce_in_place(s, &mut loss, ReduceOp::Avg)?.wait(None))?;
/// # Ok::<(), multiworld::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum.
    Sum,
    /// Product.
    Prod,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Average.
    Avg,
}

impl ReduceOp {
    pub(crate) fn to_raw(self) -> sys::mw_redop_t {
        match self {
            ReduceOp::Sum => sys::MW_SUM,
            ReduceOp::Prod => sys::MW_PROD,
            ReduceOp::Min => sys::MW_MIN,
            ReduceOp::Max => sys::MW_MAX,
            ReduceOp::Avg => sys::MW_AVG,
        }
    }
}

/// The state of a world (`mw_world_state_t`).
///
/// ```no_run
/// # let ctx = multiworld::Context::from_env()?;
/// # let world = ctx.create_world("w", 0, 1, None)?;
/// use multiworld::WorldState;
/// if world.state() == WorldState::Broken {
///     eprintln!("{} is broken; create it again", world.name());
/// }
/// # Ok::<(), multiworld::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorldState {
    /// Every member is alive; operations run.
    Ready,
    /// A member failed; operations fail with [`Error::WorldBroken`].
    Broken,
    /// [`World::shrink`] or [`World::grow`] made its successor: operations
    /// fail with [`Error::InvalidArgument`] naming the successor's epoch;
    /// only dropping it is left.
    Retired,
}

/// What [`World::shrink`] does with operations still pending
/// (`mw_shrink_flags_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShrinkMode {
    /// `MW_SHRINK_DEFAULT`: the world must be ready with nothing pending.
    Default,
    /// `MW_SHRINK_ABORT`: pending operations first complete with
    /// [`Error::Cancelled`]; the mode for a broken world.
    Abort,
}

/// One incarnation of a world on this process (`mw_world_t`): a
/// communicator of `size` members and its own fault domain.
///
/// Created by [`Context::create_world`]; borrows its context, so it cannot
/// outlive it. Dropping it destroys it (`mw_world_destroy`, bounded time,
/// healthy or broken); the other members see the world break.
///
/// Operations take a [`Scope`](crate::Scope) (or a scope
/// [`with_user_data`](crate::Scope::with_user_data)) and borrow their
/// buffers for it (see [`scope`](crate::scope)); lengths are checked against
/// the world's size before anything reaches the library, so no operation
/// can read or write past a buffer. Operations on one world run in issue
/// order; collectives must be issued in the same order on every member.
///
/// Host worlds (Gloo, UCX) move slices of host memory; NCCL worlds move
/// device memory, through the `device_*` operations, which take
/// [`DeviceSlice`](crate::DeviceSlice)s. Either kind of buffer on the
/// other kind of world fails with [`Error::InvalidArgument`] naming the
/// problem.
///
/// `World` is `Send` and `Sync`: every C call on a world may run from any
/// thread at the same time as others, except `mw_world_destroy`, which only
/// `Drop` and [`destroy`](World::destroy) (with exclusive access) make.
///
/// ```no_run
/// use std::time::Duration;
/// let ctx = multiworld::Context::from_env()?;
/// let a = ctx.create_world("a", 0, 1, Some(Duration::from_secs(5)))?;
/// let b = ctx.create_world("b", 0, 1, Some(Duration::from_secs(5)))?;
/// // Two worlds, two fault domains; both are destroyed before `ctx`.
/// println!("{:?} {:?}", a, b);
/// # Ok::<(), multiworld::Error>(())
/// ```
pub struct World<'ctx> {
    raw: *mut sys::mw_world_t,
    ctx: &'ctx Context,
    name: Arc<str>,
    rank: usize,
    size: usize,
    backend: Backend,
    device: i32,
}

// SAFETY: see the type's documentation.
unsafe impl Send for World<'_> {}
// SAFETY: as above.
unsafe impl Sync for World<'_> {}

impl std::fmt::Debug for World<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("name", &&*self.name)
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("epoch", &self.epoch())
            .field("backend", &self.backend)
            .finish()
    }
}

impl<'ctx> World<'ctx> {
    pub(crate) fn from_raw(
        ctx: &'ctx Context,
        raw: *mut sys::mw_world_t,
        name: String,
        backend: Backend,
        device: i32,
    ) -> World<'ctx> {
        // SAFETY: live world.
        let (rank, size) = unsafe { (sys::mw_world_rank(raw), sys::mw_world_size(raw)) };
        World {
            raw,
            ctx,
            name: Arc::from(name),
            rank: rank.max(0) as usize,
            size: size.max(0) as usize,
            backend,
            device,
        }
    }

    pub(crate) fn name_arc(&self) -> &Arc<str> {
        &self.name
    }

    /// The backend the world was created with, which decides the memory
    /// its buffers are in: host slices for Gloo and UCX,
    /// [`DeviceSlice`](crate::DeviceSlice)s for NCCL.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// let world = ctx.create_world_with("w", 0, 1, multiworld::Backend::Gloo, 0, None)?;
    /// assert_eq!(world.backend(), multiworld::Backend::Gloo);
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The CUDA device ordinal of an NCCL world: its buffers must be memory
    /// of this device. Meaningless for the host backends.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// if multiworld::backend_available(multiworld::Backend::Nccl) {
    ///     let world = ctx.create_world_with("gpu", 0, 1, multiworld::Backend::Nccl, 0, None)?;
    ///     assert_eq!(world.cuda_device(), 0);
    /// }
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn cuda_device(&self) -> i32 {
        self.device
    }

    /// The world's name (`mw_world_name`).
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// assert_eq!(world.name(), "w");
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// This process's rank in the world (`mw_world_rank`).
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// assert!(world.rank() < world.size());
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of members (`mw_world_size`).
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// assert_eq!(world.size(), 1);
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn size(&self) -> usize {
        self.size
    }

    /// The incarnation number Redis gave this world at creation, >= 1
    /// (`mw_world_epoch`).
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// println!("{} incarnation {}", world.name(), world.epoch());
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn epoch(&self) -> u64 {
        // SAFETY: live world.
        unsafe { sys::mw_world_epoch(self.raw) }
    }

    /// Whether the world is ready or broken (`mw_world_state`).
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// assert_eq!(world.state(), multiworld::WorldState::Ready);
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn state(&self) -> WorldState {
        // SAFETY: live world.
        match unsafe { sys::mw_world_state(self.raw) } {
            sys::MW_WORLD_READY => WorldState::Ready,
            sys::MW_WORLD_RETIRED => WorldState::Retired,
            _ => WorldState::Broken,
        }
    }

    /// The world without the members `exclude` (ranks of this world;
    /// `None`: exactly those its break named), as its successor
    /// (`mw_world_shrink`): the same name, the next epoch, the survivors
    /// in their order renumbered from 0. Every survivor calls it with the
    /// same list; one whose list differs gets [`Error::InvalidArgument`]
    /// naming both, and an excluded member gets [`Error::WorldBroken`].
    /// This world is retired afterwards ([`WorldState::Retired`]).
    ///
    /// ```no_run
    /// use multiworld::{Event, ShrinkMode};
    /// use std::time::Duration;
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 3, None)?;
    /// if let Some(Event::WorldBroken { .. }) = ctx.next_event(Some(Duration::from_secs(1)))? {
    ///     let world = world.shrink(None, ShrinkMode::Abort, Some(Duration::from_secs(30)))?;
    ///     println!("{} members now", world.size());
    /// }
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn shrink(
        &self,
        exclude: Option<&[usize]>,
        mode: ShrinkMode,
        timeout: Option<Duration>,
    ) -> Result<World<'ctx>> {
        let ranks = exclude
            .unwrap_or(&[])
            .iter()
            .map(|&r| to_int(r, "exclude rank"))
            .collect::<Result<Vec<i32>>>()?;
        let n = to_int(ranks.len(), "exclude count")?;
        let flags = match mode {
            ShrinkMode::Default => sys::MW_SHRINK_DEFAULT,
            ShrinkMode::Abort => sys::MW_SHRINK_ABORT,
        } as i32;
        let list = if ranks.is_empty() {
            ptr::null()
        } else {
            ranks.as_ptr()
        };
        self.resized(|out| {
            // SAFETY: live world; `list` holds `n` ranks for the call.
            unsafe { sys::mw_world_shrink(self.raw, list, n, flags, timeout_ms(timeout), out) }
        })
    }

    /// This world with `new_size` members, as its successor
    /// (`mw_world_grow`): every member calls it and keeps its rank; each
    /// newcomer creates the world with `new_size` and a rank from this
    /// size up. A newcomer that does not come within `timeout` makes it
    /// fail with [`Error::Timeout`], and this world runs on; otherwise it
    /// is retired.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 2, None)?;
    /// let world = world.grow(3, Some(Duration::from_secs(30)))?;
    /// assert_eq!(world.size(), 3);
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn grow(&self, new_size: usize, timeout: Option<Duration>) -> Result<World<'ctx>> {
        let size = to_int(new_size, "new_size")?;
        self.resized(|out| {
            // SAFETY: live world, valid out-pointer.
            unsafe { sys::mw_world_grow(self.raw, size, timeout_ms(timeout), out) }
        })
    }

    fn resized(
        &self,
        call: impl FnOnce(*mut *mut sys::mw_world_t) -> sys::mw_status_t,
    ) -> Result<World<'ctx>> {
        let mut raw = ptr::null_mut();
        let status = call(&mut raw);
        if status != sys::MW_OK {
            return Err(Error::from_code(status, last_error(), &self.name, None));
        }
        Ok(World::from_raw(
            self.ctx,
            raw,
            self.name.to_string(),
            self.backend,
            self.device,
        ))
    }

    /// The context this world belongs to.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let again = world.context().create_world("w2", 0, 1, None)?;
    /// # drop(again);
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn context(&self) -> &'ctx Context {
        self.ctx
    }

    /// The raw `mw_world_t` handle, for calls through [`crate::sys`]. It
    /// stays owned by this `World`; do not destroy it.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// // SAFETY: a live world.
    /// let size = unsafe { multiworld::sys::mw_world_size(world.as_raw()) };
    /// assert_eq!(size as usize, world.size());
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn as_raw(&self) -> *mut sys::mw_world_t {
        self.raw
    }

    /// Destroys the world now and reports the library's status; dropping it
    /// does the same and ignores the status.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// world.destroy()?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn destroy(mut self) -> Result<()> {
        let raw = std::mem::replace(&mut self.raw, ptr::null_mut());
        self.ctx.shared().forget_world(raw as usize);
        // SAFETY: live world, destroyed once (Drop sees NULL).
        let status = unsafe { sys::mw_world_destroy(raw) };
        if status == sys::MW_OK {
            Ok(())
        } else {
            Err(Error::from_code(status, last_error(), &self.name, None))
        }
    }
}

impl Drop for World<'_> {
    fn drop(&mut self) {
        if self.raw.is_null() {
            return;
        }
        self.ctx.shared().forget_world(self.raw as usize);
        // SAFETY: no request borrows the world any more; destroyed once.
        unsafe { sys::mw_world_destroy(self.raw) };
    }
}
