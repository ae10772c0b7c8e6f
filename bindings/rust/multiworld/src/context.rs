//! The context: Redis connections, heartbeat, completion and event queues.
use std::ffi::{CStr, CString};
use std::ptr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use multiworld_sys as sys;

use crate::config::{cstring, Config};
use crate::error::{last_error, Error, Result};
use crate::event::Event;
use crate::request::RequestId;
use crate::shared::Shared;
use crate::world::{Backend, World};
use crate::world_params::WorldParams;

/// Converts an optional timeout to the C API's milliseconds (-1 = forever).
pub(crate) fn timeout_ms(timeout: Option<Duration>) -> i32 {
    match timeout {
        None => -1,
        Some(d) => {
            let ms = d.as_nanos().saturating_add(999_999) / 1_000_000;
            if ms > i32::MAX as u128 {
                i32::MAX
            } else {
                ms as i32
            }
        }
    }
}

/// A finished request, as [`Context::poll`] reports it.
///
/// ```no_run
/// # let ctx = multiworld::Context::from_env()?;
/// # let world = ctx.create_world("w", 0, 1, None)?;
/// use std::time::Duration;
/// for done in ctx.poll(64, Some(Duration::ZERO))? {
///     println!("{:?} on {}: {:?}", done.request, done.world, done.result);
/// }
/// # Ok::<(), multiworld::Error>(())
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The request ([`Request::id`](crate::Request::id)).
    pub request: RequestId,
    /// The request's user data word ([`Request::set_user_data`](crate::Request::set_user_data)).
    pub user_data: u64,
    /// The name of the request's world.
    pub world: String,
    /// How it ended.
    pub result: Result<()>,
}

/// A process's membership in any number of worlds (`mw_context_t`): the
/// Redis connections, the heartbeat and watchdog thread, and the completion
/// and event queues.
///
/// One per process is typical. Create it with [`Config::connect`] (or
/// [`Context::new`], [`Context::from_env`]); dropping it stops the binding's
/// completion poller thread and frees the context. Every [`World`] borrows its
/// context, so the compiler rejects dropping a context that still has worlds:
///
/// ```compile_fail,E0505
/// let ctx = multiworld::Context::from_env().unwrap();
/// let world = ctx.create_world("w", 0, 1, None).unwrap();
/// drop(ctx); // error: cannot move out of `ctx` because it is borrowed
/// println!("{}", world.rank());
/// ```
///
/// `Context` is `Send` and `Sync`: the C API allows every call on a context
/// from any thread at once, except `mw_context_free`, which only `Drop` (with
/// exclusive access) makes.
pub struct Context {
    raw: *mut sys::mw_context_t,
    shared: Arc<Shared>,
}

// SAFETY: see the type's documentation; the handle is only freed in Drop.
unsafe impl Send for Context {}
// SAFETY: as above.
unsafe impl Sync for Context {}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("raw", &self.raw).finish()
    }
}

impl Context {
    /// Creates a context from `config` (`mw_context_new`); the same as
    /// [`Config::connect`].
    ///
    /// ```no_run
    /// let ctx = multiworld::Context::new(&multiworld::Config::new().namespace("jobs"))?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn new(config: &Config) -> Result<Context> {
        let cfg = config.to_raw()?;
        Context::from_raw_config(cfg.0)
    }

    /// Creates a context with every setting at its default, Redis from the
    /// `MW_REDIS_URL` environment variable (`mw_context_new(NULL, ...)`).
    ///
    /// ```no_run
    /// let ctx = multiworld::Context::from_env()?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn from_env() -> Result<Context> {
        Context::from_raw_config(ptr::null())
    }

    fn from_raw_config(cfg: *const sys::mw_config_t) -> Result<Context> {
        let mut raw = ptr::null_mut();
        // SAFETY: `cfg` is NULL or a live config; `raw` a valid out-pointer.
        let status = unsafe { sys::mw_context_new(cfg, &mut raw) };
        if status != sys::MW_OK {
            return Err(Error::last(status));
        }
        Ok(Context {
            raw,
            shared: Arc::new(Shared::new(raw)),
        })
    }

    /// Joins (or forms) rank `rank` of the `size`-member world `name` on the
    /// host backend this library prefers ([`Backend::preferred_host`]: UCX
    /// where it is available, else Gloo). Every member must use the same
    /// backend; [`create_world_with`](Context::create_world_with) names one.
    ///
    /// Blocks until every member joined or `timeout` passed (`None`: no
    /// limit). Fails with [`Error::Timeout`], [`Error::AlreadyExists`] (the
    /// rank is held by a live process), [`Error::InvalidArgument`] (members
    /// disagree on `size`, bad name) or [`Error::Store`]. A name can be
    /// created again after its previous incarnation broke; each creation is a
    /// new [`epoch`](World::epoch).
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// let ctx = multiworld::Context::from_env()?;
    /// let world = ctx.create_world("pair", 0, 2, Some(Duration::from_secs(10)))?;
    /// assert_eq!(world.size(), 2);
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn create_world(
        &self,
        name: &str,
        rank: usize,
        size: usize,
        timeout: Option<Duration>,
    ) -> Result<World<'_>> {
        self.create_world_with(name, rank, size, Backend::preferred_host(), 0, timeout)
    }

    /// Like [`create_world`](Context::create_world), with a backend and (for
    /// NCCL) a CUDA device ordinal, ignored by the host backends. Fails with
    /// [`Error::Unsupported`] when the backend is not usable here (see
    /// [`backend_available`](crate::backend_available)).
    ///
    /// ```no_run
    /// use multiworld::Backend;
    /// let ctx = multiworld::Context::from_env()?;
    /// let world = ctx.create_world_with("gpu", 0, 1, Backend::Nccl, 0, None);
    /// assert!(world.is_ok() || !multiworld::backend_available(Backend::Nccl));
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn create_world_with(
        &self,
        name: &str,
        rank: usize,
        size: usize,
        backend: Backend,
        device: i32,
        timeout: Option<Duration>,
    ) -> Result<World<'_>> {
        let params = WorldParams::new(name, rank, size)
            .backend(backend)
            .device(device)
            .timeout(timeout);
        self.create_world_from(&params)
    }

    /// Creates a world from its [`WorldParams`] (`mw_world_create_with`): the
    /// arguments of [`create_world_with`](Context::create_world_with) plus
    /// the settings a world may set for itself (its operation time limit,
    /// path failover); what it leaves alone keeps the context's value.
    /// A setting the library cannot honour is [`Error::InvalidArgument`]
    /// naming it.
    pub fn create_world_from(&self, params: &WorldParams) -> Result<World<'_>> {
        let name = params.name.as_str();
        let c_name: CString = cstring(name, "world name")?;
        let rank_c = to_int(params.rank, "rank")?;
        let size_c = to_int(params.size, "size")?;
        let raw_params = params.to_raw(c_name.as_ptr(), rank_c, size_c);
        let mut raw = ptr::null_mut();
        // SAFETY: live context, params whose name outlives the call, valid out-pointer.
        let status = unsafe { sys::mw_world_create_with(self.raw, &raw_params, &mut raw) };
        if status != sys::MW_OK {
            return Err(Error::from_code(status, last_error(), name, None));
        }
        // SAFETY: `raw` is the live world just created.
        let actual = unsafe { CStr::from_ptr(sys::mw_world_name(raw)) }
            .to_string_lossy()
            .into_owned();
        Ok(World::from_raw(
            self,
            raw,
            actual,
            params.backend,
            params.device,
        ))
    }

    /// Up to `max` completions of this context's requests that the program
    /// has not seen yet (through [`Request::test`](crate::Request::test),
    /// [`wait`](crate::Request::wait), `.await` or an earlier `poll`), waiting
    /// up to `timeout` for the first (`None`: until one arrives;
    /// `Some(Duration::ZERO)`: just look). An empty vector means the timeout
    /// passed. Requests whose future is being awaited are woken instead of
    /// being reported here, and requests whose handle was dropped are not
    /// reported.
    ///
    /// This is the way to drive many requests at once without a future per
    /// request; [`Scope::with_user_data`](crate::Scope::with_user_data)
    /// fixes a word at issue time that the completion carries back:
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use multiworld::ReduceOp;
    /// let ctx = multiworld::Context::from_env()?;
    /// let world = ctx.create_world("many", 0, 1, None)?;
    /// let (a, mut b) = ([1u32; 4], [0u32; 4]);
    /// let (c, mut d) = ([2u32; 4], [0u32; 4]);
    /// multiworld::scope(|s| -> multiworld::Result<()> {
    ///     let r1 = world.allreduce(s, &a, &mut b, ReduceOp::Sum)?;
    ///     let r2 = world.allreduce(s, &c, &mut d, ReduceOp::Max)?;
    ///     let mut left = 2;
    ///     while left > 0 {
    ///         for done in ctx.poll(16, Some(Duration::from_secs(1)))? {
    ///             assert!(done.request == r1.id() || done.request == r2.id());
    ///             done.result?;
    ///             left -= 1;
    ///         }
    ///     }
    ///     Ok(())
    /// })?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn poll(&self, max: usize, timeout: Option<Duration>) -> Result<Vec<Completion>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        self.shared.ensure_poller()?;
        // What is queued right now, without a round trip through the poller.
        self.shared.drain();
        Ok(self
            .shared
            .wait_completions(max, deadline)
            .into_iter()
            .map(|done| Completion {
                request: RequestId(done.id),
                user_data: done.user_data,
                world: done.world.to_string(),
                result: if done.status == sys::MW_OK {
                    Ok(())
                } else {
                    Err(self
                        .shared
                        .error(done.status, done.detail, &done.world, done.world_ptr))
                },
            })
            .collect())
    }

    /// The next event (`mw_next_event_info`): world breaks, data path changes and
    /// Redis outages in the order they happened. Waits up to `timeout` (`None`: forever;
    /// `Some(Duration::ZERO)`: just look) and returns `Ok(None)` when none
    /// arrived.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use multiworld::Event;
    /// let ctx = multiworld::Context::from_env()?;
    /// while let Some(event) = ctx.next_event(Some(Duration::from_millis(100)))? {
    ///     if let Event::WorldBroken { world, peer_rank, .. } = event {
    ///         eprintln!("{} broke, blamed: {:?}", world, peer_rank);
    ///     }
    /// }
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn next_event(&self, timeout: Option<Duration>) -> Result<Option<Event>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        self.shared.ensure_poller()?;
        self.shared.drain();
        Ok(self.shared.wait_event(deadline))
    }

    /// A snapshot of this context's metrics (`mw_metrics_snapshot`): every
    /// series, and the same as Prometheus' text; empty with the config key
    /// `metrics` off. The `multiworld-prometheus` crate registers them with
    /// the `prometheus` crate.
    ///
    /// ```no_run
    /// let ctx = multiworld::Context::from_env()?;
    /// let metrics = ctx.metrics()?;
    /// for m in metrics.series.iter().filter(|m| m.name == "mw_ops_total") {
    ///     println!("{:?}: {}", m.labels, m.value);
    /// }
    /// print!("{}", metrics.text);
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn metrics(&self) -> Result<crate::Metrics> {
        crate::metrics::snapshot(self.as_raw())
    }

    /// The raw `mw_context_t` handle, for calls through [`crate::sys`]. It
    /// stays owned by this `Context`; do not free it. Once the binding's
    /// poller runs (after the first pending `.await`, `poll` or
    /// `next_event`), it drains this context's completion and event queues:
    /// requests issued through `sys` then report through `mw_test` and
    /// `mw_wait` only.
    ///
    /// ```no_run
    /// # let ctx = multiworld::Context::from_env()?;
    /// # let world = ctx.create_world("w", 0, 1, None)?;
    /// let mut n = 0;
    /// // SAFETY: a live context; max 0 only checks arguments.
    /// let status = unsafe { multiworld::sys::mw_poll(ctx.as_raw(), std::ptr::null_mut(), 0, 0, &mut n) };
    /// assert_eq!(status, multiworld::sys::MW_OK);
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn as_raw(&self) -> *mut sys::mw_context_t {
        self.raw
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        self.shared.stop_poller();
        // SAFETY: no world or request of this context is alive (they borrow
        // it) and the poller has stopped, so nothing else uses the handle.
        unsafe { sys::mw_context_free(self.raw) };
    }
}

pub(crate) fn to_int(v: usize, what: &str) -> Result<i32> {
    if v > i32::MAX as usize {
        return Err(Error::InvalidArgument(format!(
            "{} {} does not fit a C int",
            what, v
        )));
    }
    Ok(v as i32)
}
