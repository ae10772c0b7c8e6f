//! Scopes: the regions that bound requests and their borrowed buffers.
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use multiworld_sys as sys;

use crate::shared::Shared;

/// A request of a scope that has not been freed yet.
struct Tracked {
    shared: Arc<Shared>,
    /// `mw_request_cancel` was called for it.
    cancelled: bool,
}

/// The requests of one scope that have not been freed yet.
#[derive(Default)]
pub(crate) struct ScopeInner {
    pending: Mutex<HashMap<usize, Tracked>>,
}

impl ScopeInner {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<usize, Tracked>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn track(&self, raw: *mut sys::mw_request_t, shared: &Arc<Shared>) {
        self.lock().insert(
            raw as usize,
            Tracked {
                shared: Arc::clone(shared),
                cancelled: false,
            },
        );
    }

    pub(crate) fn untrack(&self, raw: *mut sys::mw_request_t) {
        self.lock().remove(&(raw as usize));
    }

    /// Cancels a tracked request once (`mw_request_cancel`); later calls,
    /// and calls for a finished request, have no effect.
    pub(crate) fn cancel(&self, raw: *mut sys::mw_request_t) -> sys::mw_status_t {
        let mut pending = self.lock();
        match pending.get_mut(&(raw as usize)) {
            Some(t) if !t.cancelled => {
                t.cancelled = true;
                // SAFETY: a tracked request is live.
                unsafe { sys::mw_request_cancel(raw) }
            }
            _ => sys::MW_OK,
        }
    }

    /// Cancels every request still tracked (dropped while running, or
    /// leaked with `mem::forget`), waits for each to complete, and frees it.
    /// A cancelled request completes promptly, healthy world or not, so
    /// this never waits on a peer.
    fn finish(&self) {
        let keys: Vec<usize> = self.lock().keys().copied().collect();
        for &key in &keys {
            // No `Request` handle can use it any more (they cannot outlive
            // the scope). No effect on a finished one.
            self.cancel(key as *mut sys::mw_request_t);
        }
        for (key, tracked) in std::mem::take(&mut *self.lock()) {
            let raw = key as *mut sys::mw_request_t;
            // SAFETY: a tracked request is live. Its buffers are released
            // once it completed.
            unsafe { sys::mw_wait(raw, -1) };
            tracked.shared.unregister(raw);
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
    /// Issues an operation in this scope with `user_data`, a word its
    /// completion carries back ([`Completion::user_data`](crate::Completion::user_data),
    /// [`Request::user_data`](crate::Request::user_data)). Every operation
    /// takes it where it takes a scope. The word is fixed at issue time
    /// (`mw_submit`), so a [`Context::poll`](crate::Context::poll) running
    /// on another thread always reports it.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let parts = [[1u32; 4], [2; 4]];
    /// let mut sums = [[0u32; 4]; 2];
    /// multiworld::scope(|s| -> multiworld::Result<()> {
    ///     let mut reqs = Vec::new();
    ///     for (k, (x, y)) in parts.iter().zip(sums.iter_mut()).enumerate() {
    ///         reqs.push(world.allreduce(s.with_user_data(k as u64), x, y, multiworld::ReduceOp::Sum)?);
    ///     }
    ///     let mut left = reqs.len();
    ///     while left > 0 {
    ///         for done in ctx.poll(8, None)? {
    ///             println!("part {} done", done.user_data);
    ///             done.result?;
    ///             left -= 1;
    ///         }
    ///     }
    ///     Ok(())
    /// })?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn with_user_data(&self, user_data: u64) -> Issue<'_, 's> {
        Issue {
            scope: self,
            user_data,
        }
    }
}

/// Where an operation is issued: a [`Scope`], and the user data word its
/// completion carries (0 unless given with [`Scope::with_user_data`]). Every
/// operation takes `impl Into<Issue>`, so a `&Scope` does.
#[derive(Clone, Copy)]
pub struct Issue<'a, 's> {
    scope: &'a Scope<'s>,
    user_data: u64,
}

impl<'a, 's> Issue<'a, 's> {
    pub(crate) fn scope(&self) -> &'a ScopeInner {
        &self.scope.inner
    }

    pub(crate) fn user_data(&self) -> u64 {
        self.user_data
    }
}

impl<'a, 's> From<&'a Scope<'s>> for Issue<'a, 's> {
    fn from(scope: &'a Scope<'s>) -> Issue<'a, 's> {
        Issue {
            scope,
            user_data: 0,
        }
    }
}

impl std::fmt::Debug for Issue<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issue")
            .field("user_data", &self.user_data)
            .finish()
    }
}

/// Runs `f` with a [`Scope`] in which operations can be issued, and returns
/// after every request issued in it has finished.
///
/// The buffers (and worlds) that requests borrow must outlive the whole
/// scope, not just the request. That is what makes borrowing sound even
/// though safe code may leak a `Request` (`mem::forget`) instead of dropping
/// it: whatever happens to the request handles, `scope` does not return —
/// nor unwind — until the library is done with every buffer.
///
/// A scope never waits on a peer for a request nobody is waiting for. When
/// `f` returns (or unwinds from a panic, or leaves early with `?`), every
/// request still running — dropped or leaked while running — is
/// [cancelled](crate::Request::cancel), and the scope waits only for the
/// cancellations to complete, which they do promptly. A receive whose
/// sender never comes therefore ends with its scope: on a UCX world it is
/// taken back and the world stays usable; an operation that cannot be taken
/// back (on Gloo and NCCL worlds, any) breaks its world. So wait for what
/// must finish before `f` returns. Requests that finished and were dropped
/// cost nothing at the end.
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
