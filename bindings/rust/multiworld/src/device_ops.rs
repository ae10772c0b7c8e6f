//! The operations of NCCL worlds on device memory.
use crate::device::{DeviceSlice, DeviceSliceMut};
use crate::element::Element;
use crate::error::Result;
use crate::op::Spec;
use crate::request::Request;
use crate::scope::Issue;
use crate::world::{ReduceOp, World};

/// Operations on device memory, for NCCL worlds: the host operations' rules
/// (lengths, roots, in place), with [`DeviceSlice`]s for input and
/// [`DeviceSliceMut`]s for output. Each takes anything that converts into
/// one, such as `&buffer` and `&mut buffer` for a `DeviceBuffer` (feature
/// `cuda`), and borrows it for the scope. [`barrier`](World::barrier) serves
/// both kinds of world.
///
/// A request completes once the library's CUDA event recorded behind the
/// operation has completed: its results are then in device memory, ready
/// for any stream. Finish writing an input before issuing the operation
/// (the world's stream does not wait for yours); see the
/// [`device`](crate::device) module.
///
/// ```no_run
/// use multiworld::{Backend, DeviceSlice, DeviceSliceMut, ReduceOp};
/// # let (grads_ptr, sum_ptr, n): (*const f32, *mut f32, usize) = (std::ptr::null(), std::ptr::null_mut(), 0);
/// let ctx = multiworld::Context::from_env()?;
/// let world = ctx.create_world_with("grads", 0, 1, Backend::Nccl, 0, None)?;
/// // Device memory from your CUDA code, alive for the whole scope:
/// let grads = unsafe { DeviceSlice::from_raw_parts(grads_ptr, n, 0) };
/// let sum = unsafe { DeviceSliceMut::from_raw_parts_mut(sum_ptr, n, 0) };
/// multiworld::scope(|s| world.device_allreduce(s, grads, sum, ReduceOp::Sum)?.wait(None))?;
/// // `sum` is ready on the device now.
/// # Ok::<(), multiworld::Error>(())
/// ```
impl<'ctx> World<'ctx> {
    /// Sends `buf` to rank `dst`, as [`send`](World::send).
    pub fn device_send<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: impl Into<DeviceSlice<'s, T>>,
        dst: usize,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Send {
                buf: buf.into().buf(),
                dst,
            },
        )
    }

    /// Receives from rank `src` into `buf`, as [`recv`](World::recv). The byte
    /// sizes of a send and its receive must match (NCCL cannot check it).
    pub fn device_recv<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: impl Into<DeviceSliceMut<'s, T>>,
        src: usize,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Recv {
                buf: buf.into().buf(),
                src,
            },
        )
    }

    /// Broadcasts `buf` from rank `root`, as [`broadcast`](World::broadcast).
    pub fn device_broadcast<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: impl Into<DeviceSliceMut<'s, T>>,
        root: usize,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Broadcast {
                buf: buf.into().buf(),
                root,
            },
        )
    }

    /// Reduces `send` into every member's `recv`, as
    /// [`allreduce`](World::allreduce).
    pub fn device_allreduce<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        send: impl Into<DeviceSlice<'s, T>>,
        recv: impl Into<DeviceSliceMut<'s, T>>,
        op: ReduceOp,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Allreduce {
                send: send.into().buf(),
                recv: recv.into().buf(),
                op,
            },
        )
    }

    /// [`device_allreduce`](World::device_allreduce) in place.
    pub fn device_allreduce_in_place<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: impl Into<DeviceSliceMut<'s, T>>,
        op: ReduceOp,
    ) -> Result<Request<'a>> {
        let b = buf.into().buf();
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

    /// Reduces `send` into `recv` on rank `root`, as [`reduce`](World::reduce).
    pub fn device_reduce<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        send: impl Into<DeviceSlice<'s, T>>,
        recv: Option<DeviceSliceMut<'s, T>>,
        op: ReduceOp,
        root: usize,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Reduce {
                send: send.into().buf(),
                recv: recv.map(|r| r.buf()),
                op,
                root,
            },
        )
    }

    /// [`device_reduce`](World::device_reduce) in place, as
    /// [`reduce_in_place`](World::reduce_in_place).
    pub fn device_reduce_in_place<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: impl Into<DeviceSliceMut<'s, T>>,
        op: ReduceOp,
        root: usize,
    ) -> Result<Request<'a>> {
        let b = buf.into().buf();
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

    /// Gathers every member's `send` into every `recv`, as
    /// [`allgather`](World::allgather).
    pub fn device_allgather<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        send: impl Into<DeviceSlice<'s, T>>,
        recv: impl Into<DeviceSliceMut<'s, T>>,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Allgather {
                send: send.into().buf(),
                recv: recv.into().buf(),
            },
        )
    }

    /// [`device_allgather`](World::device_allgather) in place, as
    /// [`allgather_in_place`](World::allgather_in_place).
    pub fn device_allgather_in_place<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: impl Into<DeviceSliceMut<'s, T>>,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::AllgatherInPlace {
                buf: buf.into().buf(),
            },
        )
    }

    /// Gathers every member's `send` into `recv` on rank `root`, as
    /// [`gather`](World::gather).
    pub fn device_gather<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        send: impl Into<DeviceSlice<'s, T>>,
        recv: Option<DeviceSliceMut<'s, T>>,
        root: usize,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Gather {
                send: send.into().buf(),
                recv: recv.map(|r| r.buf()),
                root,
            },
        )
    }

    /// [`device_gather`](World::device_gather) in place, as
    /// [`gather_in_place`](World::gather_in_place).
    pub fn device_gather_in_place<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: impl Into<DeviceSliceMut<'s, T>>,
        root: usize,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::GatherInPlace {
                buf: buf.into().buf(),
                root,
            },
        )
    }

    /// Scatters the root's `send` into every member's `recv`, as
    /// [`scatter`](World::scatter).
    pub fn device_scatter<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        send: Option<DeviceSlice<'s, T>>,
        recv: impl Into<DeviceSliceMut<'s, T>>,
        root: usize,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Scatter {
                send: send.map(|s| s.buf()),
                recv: recv.into().buf(),
                root,
            },
        )
    }

    /// [`device_scatter`](World::device_scatter) in place, as
    /// [`scatter_in_place`](World::scatter_in_place).
    pub fn device_scatter_in_place<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: impl Into<DeviceSliceMut<'s, T>>,
        root: usize,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::ScatterInPlace {
                buf: buf.into().buf(),
                root,
            },
        )
    }

    /// Reduces `send` and hands block `rank` to each member, as
    /// [`reduce_scatter`](World::reduce_scatter).
    pub fn device_reduce_scatter<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        send: impl Into<DeviceSlice<'s, T>>,
        recv: impl Into<DeviceSliceMut<'s, T>>,
        op: ReduceOp,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::ReduceScatter {
                send: send.into().buf(),
                recv: recv.into().buf(),
                op,
            },
        )
    }

    /// [`device_reduce_scatter`](World::device_reduce_scatter) in place, as
    /// [`reduce_scatter_in_place`](World::reduce_scatter_in_place).
    pub fn device_reduce_scatter_in_place<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: impl Into<DeviceSliceMut<'s, T>>,
        op: ReduceOp,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::ReduceScatterInPlace {
                buf: buf.into().buf(),
                op,
            },
        )
    }

    /// Exchanges block `j` with rank `j`, as [`alltoall`](World::alltoall).
    pub fn device_alltoall<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        send: impl Into<DeviceSlice<'s, T>>,
        recv: impl Into<DeviceSliceMut<'s, T>>,
    ) -> Result<Request<'a>> {
        self.submit(
            scope.into(),
            T::DTYPE,
            Spec::Alltoall {
                send: send.into().buf(),
                recv: recv.into().buf(),
            },
        )
    }

    /// [`device_alltoall`](World::device_alltoall) in place.
    pub fn device_alltoall_in_place<'a, 's: 'a, T: Element>(
        &'s self,
        scope: impl Into<Issue<'a, 's>>,
        buf: impl Into<DeviceSliceMut<'s, T>>,
    ) -> Result<Request<'a>> {
        let b = buf.into().buf();
        self.submit(scope.into(), T::DTYPE, Spec::Alltoall { send: b, recv: b })
    }
}
