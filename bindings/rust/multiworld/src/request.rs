//! Requests (in-flight operations) and the scopes that bound them.
use std::collections::HashMap;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use multiworld_sys as sys;

use crate::context::{timeout_ms, Shared};
use crate::error::{last_error, Error, Result};

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
/// operations inside a [`scope`].
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
/// does not block: the request is left to its scope, which waits for it
/// before returning (see [`scope`]).
///
/// `Request` is `Send` and `Sync`: the C API allows `mw_test` and `mw_wait`
/// on one request from several threads at once and from any thread, and only
/// `mw_request_free` (made by `Drop`, with exclusive access) must not race.
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
        let detail = if status == sys::MW_OK {
            String::new()
        } else {
            last_error()
        };
        self.shared.mark_reported(self.raw);
        Some(self.result(status, detail))
    }

    /// Waits up to `timeout` (`None`: forever) for the request to finish and
    /// returns its result (`mw_wait`). [`Error::Timeout`] means it is still
    /// running: wait again, or drop it (its scope then waits for it).
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

    /// The request's user data word (`mw_request_user_data`), 0 unless set.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// multiworld::scope(|s| -> multiworld::Result<()> {
    ///     let req = world.barrier(s)?;
    ///     assert_eq!(req.user_data(), 0);
    ///     req.wait(None)
    /// })?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn user_data(&self) -> u64 {
        // SAFETY: live request.
        unsafe { sys::mw_request_user_data(self.raw) }
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
/// pending poll, so the future runs under any executor (or none: see
/// [`scope`] for a minimal `block_on`).
impl Future for Request<'_> {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        match self.shared.test_or_park(self.raw, cx.waker()) {
            Some((status, detail)) => Poll::Ready(self.result(status, detail)),
            None => {
                self.shared.ensure_poller();
                Poll::Pending
            }
        }
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        // SAFETY: live request.
        let status = unsafe { sys::mw_test(self.raw) };
        if status == sys::MW_IN_PROGRESS {
            // Still running: the scope waits for it and frees it.
            self.shared.clear_waker(self.raw);
            return;
        }
        self.scope.untrack(self.raw);
        self.shared.unregister(self.raw);
        // SAFETY: finished, untracked and unregistered: nobody else uses it.
        unsafe { sys::mw_request_free(self.raw) }
    }
}

/// The requests of one scope that have not been freed yet.
#[derive(Default)]
pub(crate) struct ScopeInner {
    pending: Mutex<HashMap<usize, Arc<Shared>>>,
}

impl ScopeInner {
    fn track(&self, raw: *mut sys::mw_request_t, shared: &Arc<Shared>) {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(raw as usize, Arc::clone(shared));
    }

    fn untrack(&self, raw: *mut sys::mw_request_t) {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(raw as usize));
    }

    /// Waits for every request still tracked (dropped while running, or
    /// leaked with `mem::forget`) and frees it.
    fn finish(&self) {
        let pending = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        for (key, shared) in pending {
            let raw = key as *mut sys::mw_request_t;
            // SAFETY: a tracked request is live; no `Request` handle can use
            // it any more (they cannot outlive the scope).
            unsafe { sys::mw_wait(raw, -1) };
            shared.unregister(raw);
            // SAFETY: as above; freed exactly once.
            unsafe { sys::mw_request_free(raw) };
        }
    }
}

/// The region in which requests run; see [`scope`].
///
/// `'s` is the lifetime every buffer and world used in the scope must
/// outlive. The type is invariant in `'s`, so a scope cannot be made to
/// accept shorter borrows.
///
/// ```no_run
/// # let ctx = multiworld::Context::from_env()?;
/// # let world = ctx.create_world("w", 0, 1, None)?;
/// let msg = [1u8, 2, 3];
/// let sent = multiworld::scope(|s: &multiworld::Scope<'_>| -> multiworld::Result<usize> {
///     world.send(s, &msg, 0)?.wait(None)?;
///     Ok(msg.len())
/// })?;
/// # let _ = sent;
/// # Ok::<(), multiworld::Error>(())
/// ```
pub struct Scope<'s> {
    inner: ScopeInner,
    _invariant: PhantomData<fn(&'s ()) -> &'s ()>,
}

impl std::fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.inner.pending.lock().map(|p| p.len()).unwrap_or(0);
        f.debug_struct("Scope").field("requests", &n).finish()
    }
}

impl<'s> Scope<'s> {
    pub(crate) fn inner(&self) -> &ScopeInner {
        &self.inner
    }
}

/// Runs `f` with a [`Scope`] in which operations can be issued, and returns
/// after every request issued in it has finished.
///
/// The buffers (and worlds) that requests borrow must outlive the whole
/// scope, not just the request. That is what makes borrowing sound even
/// though safe code may leak a `Request` (`mem::forget`) instead of dropping
/// it: whatever happens to the request handles, `scope` does not return —
/// nor unwind — until the library is done with every buffer. Requests that
/// finished and were dropped cost nothing at the end; requests dropped or
/// leaked while running are waited for there, which blocks until they
/// complete (on a healthy world a receive nobody sends to never does, so
/// set [`Config::op_timeout`](crate::Config::op_timeout) if that can happen;
/// a broken world fails its requests at once).
///
/// Both rules are checked by the compiler. A buffer declared inside the
/// scope does not live long enough:
///
/// ```compile_fail,E0597
/// # let ctx = multiworld::Context::from_env().unwrap();
/// # let world = ctx.create_world("w", 0, 2, None).unwrap();
/// multiworld::scope(|s| {
///     let mut buf = [0u8; 4]; // error: `buf` does not live long enough
///     let req = world.recv(s, &mut buf, 1).unwrap();
///     std::mem::forget(req);
/// });
/// ```
///
/// and a request cannot leave its scope:
///
/// ```compile_fail
/// # let ctx = multiworld::Context::from_env().unwrap();
/// # let world = ctx.create_world("w", 0, 2, None).unwrap();
/// let mut buf = [0u8; 4];
/// let req = multiworld::scope(|s| world.recv(s, &mut buf, 1).unwrap()); // error
/// ```
///
/// The price is that a buffer stays borrowed until the end of its scope,
/// even after its request finished: read results after the scope (a scope
/// is cheap; use one per step of a loop).
///
/// Requests are futures, so a scope can also hold many of them and let an
/// executor drive them. This example uses a minimal `block_on`, as no
/// executor is needed:
///
/// ```no_run
/// use std::future::Future;
/// use std::sync::Arc;
/// use std::task::{Context, Poll, Wake, Waker};
///
/// struct Unpark(std::thread::Thread);
/// impl Wake for Unpark {
///     fn wake(self: Arc<Self>) {
///         self.0.unpark();
///     }
/// }
/// fn block_on<F: Future>(fut: F) -> F::Output {
///     let mut fut = Box::pin(fut);
///     let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
///     let mut cx = Context::from_waker(&waker);
///     loop {
///         if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
///             return out;
///         }
///         std::thread::park();
///     }
/// }
///
/// # fn main() -> multiworld::Result<()> {
/// let ctx = multiworld::Context::from_env()?;
/// let world = ctx.create_world("pair", 0, 2, None)?;
/// let question = [1.0f32, 2.0, 3.0];
/// let mut answer = [0.0f32; 3];
/// multiworld::scope(|s| {
///     let sent = world.send(s, &question, 1)?;
///     let received = world.recv(s, &mut answer, 1)?;
///     block_on(async {
///         sent.await?;
///         received.await
///     })
/// })?;
/// println!("{:?}", answer); // the buffers are free again after the scope
/// # Ok(())
/// # }
/// ```
pub fn scope<'s, F, R>(f: F) -> R
where
    F: FnOnce(&Scope<'s>) -> R,
{
    struct Finish<'x>(&'x ScopeInner);
    impl Drop for Finish<'_> {
        fn drop(&mut self) {
            self.0.finish();
        }
    }
    let scope = Scope {
        inner: ScopeInner::default(),
        _invariant: PhantomData,
    };
    let _finish = Finish(&scope.inner);
    f(&scope)
}
