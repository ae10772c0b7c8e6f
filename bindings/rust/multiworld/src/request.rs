//! Requests: operations in flight.
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use multiworld_sys as sys;

use crate::context::timeout_ms;
use crate::error::{final_detail, last_error, Error, Result};
use crate::scope::ScopeInner;
use crate::shared::Shared;

/// Identifies a request within its context; [`Completion::request`](crate::Completion::request)
/// names requests by it.
///
/// ```no_run
/// # let ctx = multiworld::Context::from_env()?;
/// # let world = ctx.create_world("w", 0, 1, None)?;
/// let id = multiworld::scope(|s| -> multiworld::Result<_> {
///     let req = world.barrier(s)?;
///     req.wait(None)?;
///     Ok(req.id())
/// })?;
/// assert!(id.as_u64() >= 1);
/// # Ok::<(), multiworld::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub(crate) u64);

impl RequestId {
    /// The number behind the id (unique per context, starting at 1).
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let ids = multiworld::scope(|s| -> multiworld::Result<_> {
    ///     let (a, b) = (world.barrier(s)?, world.barrier(s)?);
    ///     Ok((a.id().as_u64(), b.id().as_u64()))
    /// })?;
    /// assert!(ids.0 < ids.1);
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

/// An operation in flight (`mw_request_t`), issued by one of [`World`](crate::World)'s
/// operations inside a [`scope`](crate::scope()).
///
/// The request borrows its buffers: while it exists nothing else can read a
/// receive buffer or write any of its buffers, and the buffers outlive the
/// scope the request was issued in, so the library never writes into freed
/// or reused memory. The compiler checks this:
///
/// ```compile_fail,E0506
/// # let ctx = multiworld::Context::from_env().unwrap();
/// # let world = ctx.create_world("w", 0, 2, None).unwrap();
/// let mut buf = [0u8; 4];
/// multiworld::scope(|s| {
///     let req = world.recv(s, &mut buf, 1).unwrap();
///     buf[0] = 1; // error: `buf` is still borrowed by the request
///     req.wait(None).unwrap();
/// });
/// ```
///
/// Complete it with [`wait`](Request::wait), [`test`](Request::test),
/// `.await` (it is a [`Future`] whose wakeups come from the library's
/// completion queue, so any executor drives it), or [`Context::poll`](crate::Context::poll).
/// Each reports the same final result; the library reports a request's final
/// status once, and this crate remembers it.
///
/// Dropping a finished request frees it. Dropping one that is still running
/// cancels it, as dropping any future does: [`cancel`](Request::cancel),
/// without blocking. Its scope then waits for the cancelled request to
/// complete before it returns, so the buffers are never released while the
/// library may still touch them (see [`scope`](crate::scope())). Keep a
/// request, and wait for it, for as long as its operation must run.
///
/// `Request` is `Send` and `Sync`: the C API allows `mw_test` and `mw_wait`
/// on one request from several threads at once and from any thread, and only
/// `mw_request_free` (made by `Drop`, with exclusive access) must not race.
#[must_use = "dropping a running request cancels it"]
pub struct Request<'a> {
    raw: *mut sys::mw_request_t,
    id: u64,
    shared: &'a Arc<Shared>,
    scope: &'a ScopeInner,
    world: &'a Arc<str>,
    world_ptr: usize,
    _buffers: PhantomData<&'a mut [u8]>,
}

// SAFETY: see the type's documentation. The borrowed buffers hold `Element`
// types, which are all `Send + Sync`.
unsafe impl Send for Request<'_> {}
// SAFETY: as above.
unsafe impl Sync for Request<'_> {}

impl std::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("id", &self.id)
            .field("world", &&**self.world)
            .finish()
    }
}

impl<'a> Request<'a> {
    /// Wraps a request just issued on `world` and records it with its
    /// context and scope.
    pub(crate) fn new(
        raw: *mut sys::mw_request_t,
        shared: &'a Arc<Shared>,
        scope: &'a ScopeInner,
        world: &'a Arc<str>,
        world_ptr: usize,
    ) -> Request<'a> {
        let id = shared.register(raw, world, world_ptr);
        scope.track(raw, shared);
        Request {
            raw,
            id,
            shared,
            scope,
            world,
            world_ptr,
            _buffers: PhantomData,
        }
    }

    /// This request's id, as [`Context::poll`](crate::Context::poll) reports it.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// multiworld::scope(|s| -> multiworld::Result<()> {
    ///     let req = world.barrier(s)?;
    ///     println!("issued {:?}", req.id());
    ///     req.wait(None)
    /// })?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn id(&self) -> RequestId {
        RequestId(self.id)
    }

    /// The name of the world the request runs on.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// multiworld::scope(|s| -> multiworld::Result<()> {
    ///     let req = world.barrier(s)?;
    ///     assert_eq!(req.world_name(), "w");
    ///     req.wait(None)
    /// })?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn world_name(&self) -> &str {
        self.world
    }

    /// `None` while the request runs, else its result (`mw_test`). Never
    /// blocks; may be called again after it finished.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// multiworld::scope(|s| -> multiworld::Result<()> {
    ///     let req = world.barrier(s)?;
    ///     loop {
    ///         match req.test() {
    ///             None => std::thread::yield_now(),
    ///             Some(result) => return result,
    ///         }
    ///     }
    /// })?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn test(&self) -> Option<Result<()>> {
        // SAFETY: live request.
        let status = unsafe { sys::mw_test(self.raw) };
        if status == sys::MW_IN_PROGRESS {
            return None;
        }
        let detail = final_detail(status);
        self.shared.mark_reported(self.raw);
        Some(self.result(status, detail))
    }

    /// Waits up to `timeout` (`None`: forever) for the request to finish and
    /// returns its result (`mw_wait`). [`Error::Timeout`] means it is still
    /// running: wait again, or [`cancel`](Request::cancel) it.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 2, None)?;
    /// let mut reply = [0f32; 8];
    /// multiworld::scope(|s| -> multiworld::Result<()> {
    ///     let req = world.recv(s, &mut reply, 1)?;
    ///     while let Err(multiworld::Error::Timeout(_)) = req.wait(Some(Duration::from_secs(1))) {
    ///         eprintln!("still waiting for rank 1");
    ///     }
    ///     req.wait(None)
    /// })?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn wait(&self, timeout: Option<Duration>) -> Result<()> {
        // SAFETY: live request.
        let status = unsafe { sys::mw_wait(self.raw, timeout_ms(timeout)) };
        if status == sys::MW_OK {
            self.shared.mark_reported(self.raw);
            return Ok(());
        }
        let detail = last_error();
        if status == sys::MW_ERR_TIMEOUT {
            // mw_wait's own timeout: the request keeps running.
            return Err(Error::Timeout(detail));
        }
        self.shared.mark_reported(self.raw);
        Err(self.error(status, detail))
    }

    /// Sets the request's user data word (`mw_request_set_user_data`),
    /// reported back in [`Completion::user_data`](crate::Completion::user_data).
    ///
    /// Prefer [`Scope::with_user_data`](crate::Scope::with_user_data), which
    /// fixes the word at issue time (`mw_submit`): a [`Context::poll`](crate::Context::poll)
    /// on another thread may report the completion before this call runs,
    /// with the word the request was issued with.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// multiworld::scope(|s| -> multiworld::Result<()> {
    ///     let req = world.barrier(s)?;
    ///     req.set_user_data(7);
    ///     assert_eq!(req.user_data(), 7);
    ///     req.wait(None)
    /// })?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn set_user_data(&self, user_data: u64) {
        // SAFETY: live request.
        unsafe { sys::mw_request_set_user_data(self.raw, user_data) }
    }

    /// The request's user data word (`mw_request_user_data`): the one it
    /// was issued with, 0 by default.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// multiworld::scope(|s| -> multiworld::Result<()> {
    ///     let req = world.barrier(s)?;
    ///     assert_eq!(req.user_data(), 0);
    ///     let tagged = world.barrier(s.with_user_data(9))?;
    ///     assert_eq!(tagged.user_data(), 9);
    ///     req.wait(None)?;
    ///     tagged.wait(None)
    /// })?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn user_data(&self) -> u64 {
        // SAFETY: live request.
        unsafe { sys::mw_request_user_data(self.raw) }
    }

    /// Cancels the request (`mw_request_cancel`) and returns at once. Its
    /// result follows promptly through [`wait`](Request::wait),
    /// [`test`](Request::test), `.await` or [`Context::poll`](crate::Context::poll),
    /// and the library is done with the buffers once it has:
    ///
    /// * a receive that no message matched yet fails with
    ///   [`Error::Cancelled`], and its world stays usable (UCX worlds);
    /// * anything that cannot be taken back (data already moving, a
    ///   collective the other members run too, and on Gloo and NCCL worlds
    ///   every operation) breaks its world: it fails with
    ///   [`Error::WorldBroken`], and the other members see the world break.
    ///
    /// No effect on a finished request, nor the second time. Dropping a
    /// running request cancels it too.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 2, None)?;
    /// let mut reply = [0u8; 64];
    /// let got = multiworld::scope(|s| -> multiworld::Result<bool> {
    ///     let req = world.recv(s, &mut reply, 1)?;
    ///     match req.wait(Some(Duration::from_secs(1))) {
    ///         Err(multiworld::Error::Timeout(_)) => {
    ///             req.cancel()?;
    ///             let _ = req.wait(None); // Cancelled, or WorldBroken
    ///             Ok(false)
    ///         }
    ///         other => other.map(|()| true),
    ///     }
    /// })?;
    /// # let _ = got;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn cancel(&self) -> Result<()> {
        let status = self.scope.cancel(self.raw);
        if status == sys::MW_OK {
            Ok(())
        } else {
            Err(Error::last(status))
        }
    }

    /// The raw `mw_request_t` handle, for calls through [`crate::sys`]. It
    /// stays owned by this `Request`; do not free it.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// multiworld::scope(|s| -> multiworld::Result<()> {
    ///     let req = world.barrier(s)?;
    ///     // SAFETY: a live request.
    ///     let status = unsafe { multiworld::sys::mw_wait(req.as_raw(), -1) };
    ///     assert_eq!(status, multiworld::sys::MW_OK);
    ///     Ok(())
    /// })?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn as_raw(&self) -> *mut sys::mw_request_t {
        self.raw
    }

    fn result(&self, status: sys::mw_status_t, detail: String) -> Result<()> {
        if status == sys::MW_OK {
            Ok(())
        } else {
            Err(self.error(status, detail))
        }
    }

    fn error(&self, status: sys::mw_status_t, detail: String) -> Error {
        self.shared
            .error(status, detail, self.world, self.world_ptr)
    }
}

/// A request is a future of its result. Wakeups come from the context's
/// completion queue, drained by a thread the context starts on the first
/// pending poll, which sleeps on the library's fd (`mw_context_fd`), so the
/// future runs under any executor (or none: see [`scope`](crate::scope())
/// for a minimal `block_on`). `poll` never blocks. Dropping the future
/// before it is ready cancels the request (see [`Request::cancel`]).
impl Future for Request<'_> {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        match self.shared.test_or_park(self.raw, cx.waker()) {
            Some((status, detail)) => Poll::Ready(self.result(status, detail)),
            None => match self.shared.ensure_poller() {
                Ok(()) => Poll::Pending,
                // Nothing would ever wake this future.
                Err(e) => Poll::Ready(Err(e)),
            },
        }
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        // SAFETY: live request.
        let status = unsafe { sys::mw_test(self.raw) };
        if status == sys::MW_IN_PROGRESS {
            // Nobody is left to see its result: take it back. The scope
            // waits for its completion and frees it.
            self.scope.cancel(self.raw);
            self.shared.mark_reported(self.raw);
            return;
        }
        self.scope.untrack(self.raw);
        self.shared.unregister(self.raw);
        // SAFETY: finished, untracked and unregistered: nobody else uses it.
        unsafe { sys::mw_request_free(self.raw) }
    }
}
