//! The operations of host worlds (Gloo, UCX) on slices of host memory.
use crate::element::{Dtype, Element};
use crate::error::Result;
use crate::op::{Buf, Spec};
use crate::request::Request;
use crate::scope::Issue;
use crate::world::{ReduceOp, World};

/// Operations on host memory, for Gloo and UCX worlds. Each takes the
/// [`Scope`](crate::Scope) to issue in (or
/// [`s.with_user_data(word)`](crate::Scope::with_user_data)) and borrows its
/// buffers for that scope; it returns at once with a [`Request`].
impl<'ctx> World<'ctx> {
    /// Sends `buf` to rank `dst` (`MW_OP_SEND`). The matching receive
    /// must have the same byte size.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// let world = ctx.create_world("pair", 0, 2, None)?;
    /// let msg = [42i32, 7];
    /// multiworld::scope(|s| world.send(s, &msg, 1)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn send<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: &'s [T],
        dst: usize,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Send {
                buf: Buf::host(buf),
                dst,
            },
        )
    }

    /// Receives from rank `src` into `buf` (`MW_OP_RECV`). A message of
    /// another byte size fails the request with [`Error::InvalidArgument`](crate::Error::InvalidArgument)
    /// and leaves the world usable.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// let world = ctx.create_world("pair", 1, 2, None)?;
    /// let mut msg = [0i32; 2];
    /// multiworld::scope(|s| world.recv(s, &mut msg, 0)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn recv<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: &'s mut [T],
        src: usize,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Recv {
                buf: Buf::host_mut(buf),
                src,
            },
        )
    }

    /// Broadcasts `buf` from rank `root` into every member's `buf`
    /// (`MW_OP_BROADCAST`).
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let mut weights = vec![0.5f32; 1024];
    /// multiworld::scope(|s| world.broadcast(s, &mut weights, 0)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn broadcast<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: &'s mut [T],
        root: usize,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Broadcast {
                buf: Buf::host_mut(buf),
                root,
            },
        )
    }

    /// Reduces `send` over all members into every member's `recv`
    /// (`MW_OP_ALLREDUCE`); both hold the same number of elements.
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
    pub fn allreduce<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        send: &'s [T],
        recv: &'s mut [T],
        op: ReduceOp,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Allreduce {
                send: Buf::host(send),
                recv: Buf::host_mut(recv),
                op,
            },
        )
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
    pub fn allreduce_in_place<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: &'s mut [T],
        op: ReduceOp,
    ) -> Result<Request<'a>> {
        let b = Buf::host_mut(buf);
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Allreduce {
                send: b,
                recv: b,
                op,
            },
        )
    }

    /// Reduces `send` over all members into `recv` on rank `root`
    /// (`MW_OP_REDUCE`). `recv` is required on the root, where it holds
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
    pub fn reduce<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        send: &'s [T],
        recv: Option<&'s mut [T]>,
        op: ReduceOp,
        root: usize,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Reduce {
                send: Buf::host(send),
                recv: recv.map(Buf::host_mut),
                op,
                root,
            },
        )
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
    pub fn reduce_in_place<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: &'s mut [T],
        op: ReduceOp,
        root: usize,
    ) -> Result<Request<'a>> {
        let b = Buf::host_mut(buf);
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Reduce {
                send: b,
                recv: Some(b),
                op,
                root,
            },
        )
    }

    /// Gathers every member's `send` into every member's `recv`, rank-major
    /// (`MW_OP_ALLGATHER`); `recv` holds `size * send.len()` elements.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let mine = [world.rank() as u32; 2];
    /// let mut all = vec![0u32; 2 * world.size()];
    /// multiworld::scope(|s| world.allgather(s, &mine, &mut all)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn allgather<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        send: &'s [T],
        recv: &'s mut [T],
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Allgather {
                send: Buf::host(send),
                recv: Buf::host_mut(recv),
            },
        )
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
    pub fn allgather_in_place<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: &'s mut [T],
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::AllgatherInPlace {
                buf: Buf::host_mut(buf),
            },
        )
    }

    /// Gathers every member's `send` into `recv` on rank `root`, rank-major
    /// (`MW_OP_GATHER`). `recv` is required on the root, where it holds
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
    pub fn gather<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        send: &'s [T],
        recv: Option<&'s mut [T]>,
        root: usize,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Gather {
                send: Buf::host(send),
                recv: recv.map(Buf::host_mut),
                root,
            },
        )
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
    pub fn gather_in_place<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: &'s mut [T],
        root: usize,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::GatherInPlace {
                buf: Buf::host_mut(buf),
                root,
            },
        )
    }

    /// Scatters `send`, `size` blocks on rank `root`, so that every member
    /// receives its block in `recv` (`MW_OP_SCATTER`). `send` is required
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
    pub fn scatter<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        send: Option<&'s [T]>,
        recv: &'s mut [T],
        root: usize,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Scatter {
                send: send.map(Buf::host),
                recv: Buf::host_mut(recv),
                root,
            },
        )
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
    pub fn scatter_in_place<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: &'s mut [T],
        root: usize,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::ScatterInPlace {
                buf: Buf::host_mut(buf),
                root,
            },
        )
    }

    /// Reduces `send` (`size` blocks) over all members; this rank receives
    /// the reduced block `rank` in `recv` (`MW_OP_REDUCE_SCATTER`).
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
    pub fn reduce_scatter<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        send: &'s [T],
        recv: &'s mut [T],
        op: ReduceOp,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::ReduceScatter {
                send: Buf::host(send),
                recv: Buf::host_mut(recv),
                op,
            },
        )
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
    pub fn reduce_scatter_in_place<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: &'s mut [T],
        op: ReduceOp,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::ReduceScatterInPlace {
                buf: Buf::host_mut(buf),
                op,
            },
        )
    }

    /// Sends block `j` of `send` to rank `j` and receives block `j` of
    /// `recv` from rank `j` (`MW_OP_ALLTOALL`); both hold `size` blocks.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let send = vec![world.rank() as i64; world.size()];
    /// let mut recv = vec![0i64; world.size()];
    /// multiworld::scope(|s| world.alltoall(s, &send, &mut recv)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn alltoall<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        send: &'s [T],
        recv: &'s mut [T],
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Alltoall {
                send: Buf::host(send),
                recv: Buf::host_mut(recv),
            },
        )
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
    pub fn alltoall_in_place<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: &'s mut [T],
    ) -> Result<Request<'a>> {
        let b = Buf::host_mut(buf);
        self.submit(scope.into(), T::DTYPE, Spec::Alltoall { send: b, recv: b })
    }

    /// Completes once every member issued it (`MW_OP_BARRIER`).
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// multiworld::scope(|s| world.barrier(s)?.wait(None))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn barrier<'a, 's: 'a>(&'s self, scope: impl Into<Issue<'a, 's>>) -> Result<Request<'a>> {
        self.submit(scope.into(), Dtype::Uint8, Spec::Barrier)
    }
}
