//! Worlds and their operations.
use std::os::raw::c_void;
use std::ptr;
use std::sync::Arc;

use multiworld_sys as sys;

use crate::context::{to_int, Context};
use crate::element::Element;
use crate::error::{last_error, Error, Result};
use crate::request::{Request, Scope};

/// A data-plane backend (`mw_backend_t`).
///
/// ```
/// use multiworld::{backend_available, Backend};
/// let backend = if backend_available(Backend::Nccl) { Backend::Nccl } else { Backend::Gloo };
/// # let _ = backend;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// Gloo over TCP, for host memory. Always built in.
    Gloo,
    /// NCCL, for GPU memory; a plugin that may not be built in.
    Nccl,
}

impl Backend {
    pub(crate) fn to_raw(self) -> sys::mw_backend_t {
        match self {
            Backend::Gloo => sys::MW_BACKEND_GLOO,
            Backend::Nccl => sys::MW_BACKEND_NCCL,
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
    fn to_raw(self) -> sys::mw_redop_t {
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
}

/// One incarnation of a world on this process (`mw_world_t`): a
/// communicator of `size` members and its own fault domain.
///
/// Created by [`Context::create_world`]; borrows its context, so it cannot
/// outlive it. Dropping it destroys it (`mw_world_destroy`, bounded time,
/// healthy or broken); the other members see the world break.
///
/// Operations take a [`Scope`] and borrow their buffers for it (see
/// [`scope`](crate::scope)); lengths are checked against the world's size
/// before anything reaches the library, so no operation can read or write
/// past a slice. Operations on one world run in issue order; collectives
/// must be issued in the same order on every member.
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
            .finish()
    }
}

fn check(cond: bool, op: &str, why: impl FnOnce() -> String) -> Result<()> {
    if cond {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!("{}: {}", op, why())))
    }
}

fn send_ptr<T>(buf: &[T]) -> *const c_void {
    buf.as_ptr() as *const c_void
}

fn recv_ptr<T>(buf: &mut [T]) -> *mut c_void {
    buf.as_mut_ptr() as *mut c_void
}

impl<'ctx> World<'ctx> {
    pub(crate) fn from_raw(
        ctx: &'ctx Context,
        raw: *mut sys::mw_world_t,
        name: String,
    ) -> World<'ctx> {
        // SAFETY: live world.
        let (rank, size) = unsafe { (sys::mw_world_rank(raw), sys::mw_world_size(raw)) };
        World {
            raw,
            ctx,
            name: Arc::from(name),
            rank: rank.max(0) as usize,
            size: size.max(0) as usize,
        }
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
            _ => WorldState::Broken,
        }
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

    fn peer(&self, peer: usize, role: &str) -> Result<i32> {
        to_int(peer, role)
    }

    fn blocks(&self, len: usize, op: &str, what: &str) -> Result<usize> {
        let size = self.size.max(1);
        check(len % size == 0, op, || {
            format!(
                "{} holds {} elements, not a multiple of the world size {}",
                what, len, size
            )
        })?;
        Ok(len / size)
    }

    /// Sends `buf` to rank `dst` (`mw_send_async`). The matching receive
    /// must have the same byte size.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// let world = ctx.create_world("pair", 0, 2, None)?;
    /// let msg = [42i32, 7];
    /// multiworld::scope(|s| world.send(s, &msg, 1)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn send<'a, 's, T: Element>(
        &'s self,
        scope: &'a Scope<'s>,
        buf: &'s [T],
        dst: usize,
    ) -> Result<Request<'a>> {
        let dst = self.peer(dst, "dst")?;
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            // SAFETY: `buf` is valid for buf.len() elements for the scope.
            sys::mw_send_async(
                self.raw,
                send_ptr(buf),
                buf.len(),
                T::DTYPE.to_raw(),
                dst,
                req,
            )
        })
    }

    /// Receives from rank `src` into `buf` (`mw_recv_async`). A message of
    /// another byte size fails the request with [`Error::InvalidArgument`]
    /// and leaves the world usable.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// let world = ctx.create_world("pair", 1, 2, None)?;
    /// let mut msg = [0i32; 2];
    /// multiworld::scope(|s| world.recv(s, &mut msg, 0)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn recv<'a, 's, T: Element>(
        &'s self,
        scope: &'a Scope<'s>,
        buf: &'s mut [T],
        src: usize,
    ) -> Result<Request<'a>> {
        let src = self.peer(src, "src")?;
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            // SAFETY: `buf` is valid and exclusively borrowed for the scope.
            sys::mw_recv_async(
                self.raw,
                recv_ptr(buf),
                buf.len(),
                T::DTYPE.to_raw(),
                src,
                req,
            )
        })
    }

    /// Broadcasts `buf` from rank `root` into every member's `buf`
    /// (`mw_broadcast_async`).
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let mut weights = vec![0.5f32; 1024];
    /// multiworld::scope(|s| world.broadcast(s, &mut weights, 0)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn broadcast<'a, 's, T: Element>(
        &'s self,
        scope: &'a Scope<'s>,
        buf: &'s mut [T],
        root: usize,
    ) -> Result<Request<'a>> {
        let root = self.peer(root, "root")?;
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            // SAFETY: `buf` is valid and exclusively borrowed for the scope.
            sys::mw_broadcast_async(
                self.raw,
                recv_ptr(buf),
                buf.len(),
                T::DTYPE.to_raw(),
                root,
                req,
            )
        })
    }

    /// Reduces `send` over all members into every member's `recv`
    /// (`mw_allreduce_async`); both hold the same number of elements.
    ///
    /// ```no_run
    /// use multiworld::ReduceOp;
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let grads = [1.0f64, 2.0];
    /// let mut sum = [0.0f64; 2];
    /// multiworld::scope(|s| world.allreduce(s, &grads, &mut sum, ReduceOp::Sum)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn allreduce<'a, 's, T: Element>(
        &'s self,
        scope: &'a Scope<'s>,
        send: &'s [T],
        recv: &'s mut [T],
        op: ReduceOp,
    ) -> Result<Request<'a>> {
        check(send.len() == recv.len(), "allreduce", || {
            format!("send holds {} elements but recv {}", send.len(), recv.len())
        })?;
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            // SAFETY: both buffers hold `send.len()` elements for the scope.
            sys::mw_allreduce_async(
                self.raw,
                send_ptr(send),
                recv_ptr(recv),
                send.len(),
                T::DTYPE.to_raw(),
                op.to_raw(),
                req,
            )
        })
    }

    /// [`allreduce`](World::allreduce) in place: `buf` is both input and
    /// result.
    ///
    /// ```no_run
    /// use multiworld::ReduceOp;
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let mut counts = [3u64, 4];
    /// multiworld::scope(|s| world.allreduce_in_place(s, &mut counts, ReduceOp::Max)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn allreduce_in_place<'a, 's, T: Element>(
        &'s self,
        scope: &'a Scope<'s>,
        buf: &'s mut [T],
        op: ReduceOp,
    ) -> Result<Request<'a>> {
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            let p = recv_ptr(buf);
            // SAFETY: `buf` is valid and exclusively borrowed for the scope.
            sys::mw_allreduce_async(
                self.raw,
                p,
                p,
                buf.len(),
                T::DTYPE.to_raw(),
                op.to_raw(),
                req,
            )
        })
    }

    /// Reduces `send` over all members into `recv` on rank `root`
    /// (`mw_reduce_async`). `recv` is required on the root, where it holds
    /// `send.len()` elements, and ignored elsewhere.
    ///
    /// ```no_run
    /// use multiworld::ReduceOp;
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let mine = [world.rank() as i64];
    /// let mut total = [0i64];
    /// multiworld::scope(|s| {
    ///     let recv = if world.rank() == 0 { Some(&mut total[..]) } else { None };
    ///     world.reduce(s, &mine, recv, ReduceOp::Sum, 0)?.wait(None)
    /// })?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn reduce<'a, 's, T: Element>(
        &'s self,
        scope: &'a Scope<'s>,
        send: &'s [T],
        recv: Option<&'s mut [T]>,
        op: ReduceOp,
        root: usize,
    ) -> Result<Request<'a>> {
        let root_c = self.peer(root, "root")?;
        let recv_p = if root == self.rank {
            match recv {
                Some(r) => {
                    check(r.len() == send.len(), "reduce", || {
                        format!(
                            "send holds {} elements but root's recv {}",
                            send.len(),
                            r.len()
                        )
                    })?;
                    recv_ptr(r)
                }
                None => {
                    return Err(Error::InvalidArgument(
                        "reduce: the root needs a recv buffer".to_string(),
                    ))
                }
            }
        } else {
            ptr::null_mut()
        };
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            // SAFETY: send holds send.len() elements; recv the same on root.
            sys::mw_reduce_async(
                self.raw,
                send_ptr(send),
                recv_p,
                send.len(),
                T::DTYPE.to_raw(),
                op.to_raw(),
                root_c,
                req,
            )
        })
    }

    /// [`reduce`](World::reduce) in place: every member contributes `buf`;
    /// the root's `buf` receives the result, the others' are left as they
    /// are.
    ///
    /// ```no_run
    /// use multiworld::ReduceOp;
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let mut v = [1.0f32, 2.0];
    /// multiworld::scope(|s| world.reduce_in_place(s, &mut v, ReduceOp::Prod, 0)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn reduce_in_place<'a, 's, T: Element>(
        &'s self,
        scope: &'a Scope<'s>,
        buf: &'s mut [T],
        op: ReduceOp,
        root: usize,
    ) -> Result<Request<'a>> {
        let root_c = self.peer(root, "root")?;
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            let p = recv_ptr(buf);
            // SAFETY: `buf` is valid and exclusively borrowed for the scope.
            sys::mw_reduce_async(
                self.raw,
                p,
                p,
                buf.len(),
                T::DTYPE.to_raw(),
                op.to_raw(),
                root_c,
                req,
            )
        })
    }

    /// Gathers every member's `send` into every member's `recv`, rank-major
    /// (`mw_allgather_async`); `recv` holds `size * send.len()` elements.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let mine = [world.rank() as u32; 2];
    /// let mut all = vec![0u32; 2 * world.size()];
    /// multiworld::scope(|s| world.allgather(s, &mine, &mut all)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn allgather<'a, 's, T: Element>(
        &'s self,
        scope: &'a Scope<'s>,
        send: &'s [T],
        recv: &'s mut [T],
    ) -> Result<Request<'a>> {
        check(recv.len() == send.len() * self.size, "allgather", || {
            format!(
                "recv holds {} elements, not world size {} x send's {}",
                recv.len(),
                self.size,
                send.len()
            )
        })?;
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            // SAFETY: lengths checked above; borrowed for the scope.
            sys::mw_allgather_async(
                self.raw,
                send_ptr(send),
                recv_ptr(recv),
                send.len(),
                T::DTYPE.to_raw(),
                req,
            )
        })
    }

    /// [`allgather`](World::allgather) in place: `buf` holds `size` blocks;
    /// this rank's contribution is its own block.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let mut all = vec![world.rank() as u8; world.size()];
    /// multiworld::scope(|s| world.allgather_in_place(s, &mut all)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn allgather_in_place<'a, 's, T: Element>(
        &'s self,
        scope: &'a Scope<'s>,
        buf: &'s mut [T],
    ) -> Result<Request<'a>> {
        let n = self.blocks(buf.len(), "allgather", "buf")?;
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            let p = recv_ptr(buf);
            // SAFETY: `buf` holds size * n elements for the scope.
            sys::mw_allgather_async(self.raw, p, p, n, T::DTYPE.to_raw(), req)
        })
    }

    /// Gathers every member's `send` into `recv` on rank `root`, rank-major
    /// (`mw_gather_async`). `recv` is required on the root, where it holds
    /// `size * send.len()` elements, and ignored elsewhere.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let mine = [world.rank() as i32];
    /// let mut all = vec![0i32; world.size()];
    /// multiworld::scope(|s| {
    ///     let recv = if world.rank() == 0 { Some(&mut all[..]) } else { None };
    ///     world.gather(s, &mine, recv, 0)?.wait(None)
    /// })?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn gather<'a, 's, T: Element>(
        &'s self,
        scope: &'a Scope<'s>,
        send: &'s [T],
        recv: Option<&'s mut [T]>,
        root: usize,
    ) -> Result<Request<'a>> {
        let root_c = self.peer(root, "root")?;
        let recv_p = if root == self.rank {
            match recv {
                Some(r) => {
                    check(r.len() == send.len() * self.size, "gather", || {
                        format!(
                            "root's recv holds {} elements, not world size {} x send's {}",
                            r.len(),
                            self.size,
                            send.len()
                        )
                    })?;
                    recv_ptr(r)
                }
                None => {
                    return Err(Error::InvalidArgument(
                        "gather: the root needs a recv buffer".to_string(),
                    ))
                }
            }
        } else {
            ptr::null_mut()
        };
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            // SAFETY: lengths checked above; borrowed for the scope.
            sys::mw_gather_async(
                self.raw,
                send_ptr(send),
                recv_p,
                send.len(),
                T::DTYPE.to_raw(),
                root_c,
                req,
            )
        })
    }

    /// [`gather`](World::gather) in place: on every member `buf` holds
    /// `size` blocks and this rank contributes its own block; the root's
    /// `buf` receives every block.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let mut all = vec![world.rank() as u64; world.size()];
    /// multiworld::scope(|s| world.gather_in_place(s, &mut all, 0)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn gather_in_place<'a, 's, T: Element>(
        &'s self,
        scope: &'a Scope<'s>,
        buf: &'s mut [T],
        root: usize,
    ) -> Result<Request<'a>> {
        let root_c = self.peer(root, "root")?;
        let n = self.blocks(buf.len(), "gather", "buf")?;
        let (rank, is_root) = (self.rank, root == self.rank);
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            let p = buf.as_mut_ptr();
            if is_root {
                // SAFETY: `buf` holds size * n elements for the scope.
                sys::mw_gather_async(
                    self.raw,
                    p as *const c_void,
                    p as *mut c_void,
                    n,
                    T::DTYPE.to_raw(),
                    root_c,
                    req,
                )
            } else {
                // Elsewhere the library ignores recvbuf: send our block.
                // SAFETY: block `rank` lies within `buf`.
                let mine = p.add(rank * n) as *const c_void;
                sys::mw_gather_async(
                    self.raw,
                    mine,
                    ptr::null_mut(),
                    n,
                    T::DTYPE.to_raw(),
                    root_c,
                    req,
                )
            }
        })
    }

    /// Scatters `send`, `size` blocks on rank `root`, so that every member
    /// receives its block in `recv` (`mw_scatter_async`). `send` is required
    /// on the root, where it holds `size * recv.len()` elements, and ignored
    /// elsewhere.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let work: Vec<f32> = (0..4 * world.size()).map(|i| i as f32).collect();
    /// let mut mine = [0f32; 4];
    /// multiworld::scope(|s| {
    ///     let send = if world.rank() == 0 { Some(&work[..]) } else { None };
    ///     world.scatter(s, send, &mut mine, 0)?.wait(None)
    /// })?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn scatter<'a, 's, T: Element>(
        &'s self,
        scope: &'a Scope<'s>,
        send: Option<&'s [T]>,
        recv: &'s mut [T],
        root: usize,
    ) -> Result<Request<'a>> {
        let root_c = self.peer(root, "root")?;
        let send_p = if root == self.rank {
            match send {
                Some(s) => {
                    check(s.len() == recv.len() * self.size, "scatter", || {
                        format!(
                            "root's send holds {} elements, not world size {} x recv's {}",
                            s.len(),
                            self.size,
                            recv.len()
                        )
                    })?;
                    send_ptr(s)
                }
                None => {
                    return Err(Error::InvalidArgument(
                        "scatter: the root needs a send buffer".to_string(),
                    ))
                }
            }
        } else {
            ptr::null()
        };
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            // SAFETY: lengths checked above; borrowed for the scope.
            sys::mw_scatter_async(
                self.raw,
                send_p,
                recv_ptr(recv),
                recv.len(),
                T::DTYPE.to_raw(),
                root_c,
                req,
            )
        })
    }

    /// [`scatter`](World::scatter) in place: on every member `buf` holds
    /// `size` blocks; the root's are the input (its own block stays where it
    /// is) and every member receives its block at its own position.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let mut blocks = vec![7i8; 3 * world.size()];
    /// multiworld::scope(|s| world.scatter_in_place(s, &mut blocks, 0)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn scatter_in_place<'a, 's, T: Element>(
        &'s self,
        scope: &'a Scope<'s>,
        buf: &'s mut [T],
        root: usize,
    ) -> Result<Request<'a>> {
        let root_c = self.peer(root, "root")?;
        let n = self.blocks(buf.len(), "scatter", "buf")?;
        let (rank, is_root) = (self.rank, root == self.rank);
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            let p = buf.as_mut_ptr();
            if is_root {
                // SAFETY: `buf` holds size * n elements for the scope.
                sys::mw_scatter_async(
                    self.raw,
                    p as *const c_void,
                    p as *mut c_void,
                    n,
                    T::DTYPE.to_raw(),
                    root_c,
                    req,
                )
            } else {
                // SAFETY: block `rank` lies within `buf`.
                let mine = p.add(rank * n) as *mut c_void;
                sys::mw_scatter_async(
                    self.raw,
                    ptr::null(),
                    mine,
                    n,
                    T::DTYPE.to_raw(),
                    root_c,
                    req,
                )
            }
        })
    }

    /// Reduces `send` (`size` blocks) over all members; this rank receives
    /// the reduced block `rank` in `recv` (`mw_reduce_scatter_async`).
    ///
    /// ```no_run
    /// use multiworld::ReduceOp;
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let send = vec![1u32; 2 * world.size()];
    /// let mut mine = [0u32; 2];
    /// multiworld::scope(|s| world.reduce_scatter(s, &send, &mut mine, ReduceOp::Sum)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn reduce_scatter<'a, 's, T: Element>(
        &'s self,
        scope: &'a Scope<'s>,
        send: &'s [T],
        recv: &'s mut [T],
        op: ReduceOp,
    ) -> Result<Request<'a>> {
        check(
            send.len() == recv.len() * self.size,
            "reduce_scatter",
            || {
                format!(
                    "send holds {} elements, not world size {} x recv's {}",
                    send.len(),
                    self.size,
                    recv.len()
                )
            },
        )?;
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            // SAFETY: lengths checked above; borrowed for the scope.
            sys::mw_reduce_scatter_async(
                self.raw,
                send_ptr(send),
                recv_ptr(recv),
                recv.len(),
                T::DTYPE.to_raw(),
                op.to_raw(),
                req,
            )
        })
    }

    /// [`reduce_scatter`](World::reduce_scatter) in place: `buf` holds
    /// `size` blocks; the reduced block `rank` is written to the start of
    /// `buf`.
    ///
    /// ```no_run
    /// use multiworld::ReduceOp;
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let mut buf = vec![2.0f64; 4 * world.size()];
    /// multiworld::scope(|s| world.reduce_scatter_in_place(s, &mut buf, ReduceOp::Avg)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn reduce_scatter_in_place<'a, 's, T: Element>(
        &'s self,
        scope: &'a Scope<'s>,
        buf: &'s mut [T],
        op: ReduceOp,
    ) -> Result<Request<'a>> {
        let n = self.blocks(buf.len(), "reduce_scatter", "buf")?;
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            let p = recv_ptr(buf);
            // SAFETY: `buf` holds size * n elements for the scope.
            sys::mw_reduce_scatter_async(self.raw, p, p, n, T::DTYPE.to_raw(), op.to_raw(), req)
        })
    }

    /// Sends block `j` of `send` to rank `j` and receives block `j` of
    /// `recv` from rank `j` (`mw_alltoall_async`); both hold `size` blocks.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let send = vec![world.rank() as i64; world.size()];
    /// let mut recv = vec![0i64; world.size()];
    /// multiworld::scope(|s| world.alltoall(s, &send, &mut recv)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn alltoall<'a, 's, T: Element>(
        &'s self,
        scope: &'a Scope<'s>,
        send: &'s [T],
        recv: &'s mut [T],
    ) -> Result<Request<'a>> {
        check(send.len() == recv.len(), "alltoall", || {
            format!("send holds {} elements but recv {}", send.len(), recv.len())
        })?;
        let n = self.blocks(send.len(), "alltoall", "send")?;
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            // SAFETY: both hold size * n elements for the scope.
            sys::mw_alltoall_async(
                self.raw,
                send_ptr(send),
                recv_ptr(recv),
                n,
                T::DTYPE.to_raw(),
                req,
            )
        })
    }

    /// [`alltoall`](World::alltoall) in place on `buf` (`size` blocks).
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let mut buf = vec![world.rank() as i32; world.size()];
    /// multiworld::scope(|s| world.alltoall_in_place(s, &mut buf)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn alltoall_in_place<'a, 's, T: Element>(
        &'s self,
        scope: &'a Scope<'s>,
        buf: &'s mut [T],
    ) -> Result<Request<'a>> {
        let n = self.blocks(buf.len(), "alltoall", "buf")?;
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            let p = recv_ptr(buf);
            // SAFETY: `buf` holds size * n elements for the scope.
            sys::mw_alltoall_async(self.raw, p, p, n, T::DTYPE.to_raw(), req)
        })
    }

    /// Completes once every member issued it (`mw_barrier_async`).
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// multiworld::scope(|s| world.barrier(s)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn barrier<'a, 's>(&'s self, scope: &'a Scope<'s>) -> Result<Request<'a>> {
        let inner = ScopeInnerRef(scope.inner());
        self.issue(inner, |req| unsafe {
            // SAFETY: live world, valid out-pointer.
            sys::mw_barrier_async(self.raw, req)
        })
    }

    fn issue<'a>(
        &'a self,
        scope: ScopeInnerRef<'a>,
        call: impl FnOnce(*mut *mut sys::mw_request_t) -> sys::mw_status_t,
    ) -> Result<Request<'a>> {
        let mut raw = ptr::null_mut();
        let status = call(&mut raw);
        if status != sys::MW_OK {
            let detail = last_error();
            return Err(self
                .ctx
                .shared()
                .error(status, detail, &self.name, self.raw as usize));
        }
        Ok(Request::new(
            raw,
            self.ctx.shared(),
            scope.0,
            &self.name,
            self.raw as usize,
        ))
    }
}

struct ScopeInnerRef<'a>(&'a crate::request::ScopeInner);

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
