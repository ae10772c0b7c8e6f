//! The context: Redis connections, heartbeat, completion and event queues.
use std::collections::{HashMap, VecDeque};
use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use multiworld_sys as sys;

use crate::config::{cstring, Config};
use crate::error::{last_error, Error, Result};
use crate::request::RequestId;
use crate::world::{Backend, World};

/// The completion poller drains `mw_poll` in slices this long, so dropping a
/// context stops it within this time.
const POLL_SLICE_MS: i32 = 50;
/// How long a `WorldBroken` error waits for the matching event to learn the
/// blamed rank.
const PEER_RANK_WAIT: Duration = Duration::from_millis(250);
/// Events kept for [`Context::next_event`] before the oldest are dropped.
const MAX_QUEUED_EVENTS: usize = 4096;

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

/// Something that happened to this process's worlds or to its Redis
/// connection, in the order it happened ([`Context::next_event`]).
///
/// ```no_run
/// # let ctx = multiworld::Context::from_env()?;
/// # let world = ctx.create_world("w", 0, 1, None)?;
/// use std::time::Duration;
/// if let Some(multiworld::Event::StoreDown { detail }) = ctx.next_event(Some(Duration::ZERO))? {
///     eprintln!("redis is down: {}", detail);
/// }
/// # Ok::<(), multiworld::Error>(())
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `MW_EVENT_WORLD_BROKEN`: a world of this context broke.
    WorldBroken {
        /// The world's name.
        world: String,
        /// The member blamed, when known.
        peer_rank: Option<usize>,
        /// The library's explanation.
        detail: String,
    },
    /// `MW_EVENT_STORE_DOWN`: Redis became unreachable.
    StoreDown {
        /// The library's explanation.
        detail: String,
    },
    /// `MW_EVENT_STORE_UP`: Redis is reachable again.
    StoreUp {
        /// The library's explanation.
        detail: String,
    },
    /// An event type this version of the crate does not know.
    Other {
        /// The raw `mw_event_type_t`.
        kind: u32,
        /// The world's name, if any.
        world: String,
        /// The library's explanation.
        detail: String,
    },
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

/// What the binding knows about one live request, keyed by its handle.
struct Slot {
    id: u64,
    world: Arc<str>,
    world_ptr: usize,
    /// A future waiting for this request.
    waker: Option<Waker>,
    /// Its final status reached the program (test, wait, await or poll).
    reported: bool,
    /// It sits in `ready`.
    queued: bool,
}

#[derive(Default)]
struct State {
    slots: HashMap<usize, Slot>,
    /// Completions drained before their request was registered.
    early: HashMap<usize, ()>,
    /// Completed requests nobody has seen yet, for `Context::poll`.
    ready: VecDeque<usize>,
    /// World handle -> blamed rank, from WorldBroken events.
    broken: HashMap<usize, Option<usize>>,
    /// Events drained by the binding, not yet handed to the program.
    events: VecDeque<Event>,
    next_id: u64,
}

/// State shared by a context, its requests and its poller thread.
pub(crate) struct Shared {
    raw: usize,
    state: Mutex<State>,
    stop: AtomicBool,
    poller: Mutex<Option<JoinHandle<()>>>,
}

impl Shared {
    fn ctx(&self) -> *mut sys::mw_context_t {
        self.raw as *mut sys::mw_context_t
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent maps behind.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a request issued on `world_ptr`; returns its id.
    pub(crate) fn register(
        &self,
        req: *mut sys::mw_request_t,
        world: &Arc<str>,
        world_ptr: usize,
    ) -> u64 {
        let key = req as usize;
        let mut st = self.lock();
        st.next_id += 1;
        let id = st.next_id;
        let done = st.early.remove(&key).is_some();
        st.slots.insert(
            key,
            Slot {
                id,
                world: world.clone(),
                world_ptr,
                waker: None,
                reported: false,
                queued: done,
            },
        );
        if done {
            st.ready.push_back(key);
        }
        id
    }

    /// Forgets a request that is about to be freed.
    pub(crate) fn unregister(&self, req: *mut sys::mw_request_t) {
        let key = req as usize;
        let mut st = self.lock();
        st.slots.remove(&key);
        st.early.remove(&key);
    }

    /// Marks the request's final status as seen by the program.
    pub(crate) fn mark_reported(&self, req: *mut sys::mw_request_t) {
        if let Some(slot) = self.lock().slots.get_mut(&(req as usize)) {
            slot.reported = true;
            slot.waker = None;
        }
    }

    /// Drops the waker of a request whose future went away.
    pub(crate) fn clear_waker(&self, req: *mut sys::mw_request_t) {
        if let Some(slot) = self.lock().slots.get_mut(&(req as usize)) {
            slot.waker = None;
        }
    }

    /// The future's half of the handshake with the poller: under the lock,
    /// either the request is final (returned, with the detail read on this
    /// thread) or `waker` is stored, so a completion drained afterwards is
    /// guaranteed to wake it.
    pub(crate) fn test_or_park(
        &self,
        req: *mut sys::mw_request_t,
        waker: &Waker,
    ) -> Option<(sys::mw_status_t, String)> {
        let mut st = self.lock();
        // SAFETY: the request is live (its owner is polling it).
        let status = unsafe { sys::mw_test(req) };
        if status != sys::MW_IN_PROGRESS {
            let detail = if status == sys::MW_OK {
                String::new()
            } else {
                last_error()
            };
            if let Some(slot) = st.slots.get_mut(&(req as usize)) {
                slot.reported = true;
                slot.waker = None;
            }
            return Some((status, detail));
        }
        if let Some(slot) = st.slots.get_mut(&(req as usize)) {
            match &slot.waker {
                Some(w) if w.will_wake(waker) => {}
                _ => slot.waker = Some(waker.clone()),
            }
        }
        drop(st);
        None
    }

    /// One `mw_poll` of up to `timeout_ms`: wakes the futures of the
    /// completed requests and queues the others for `Context::poll`.
    fn pump(&self, timeout_ms: i32) -> Result<()> {
        const MAX: usize = 64;
        let mut out: Vec<sys::mw_completion_t> = Vec::with_capacity(MAX);
        let mut n: usize = 0;
        // SAFETY: `out` has room for MAX completions; mw_poll writes the
        // first `n` of them.
        let status = unsafe { sys::mw_poll(self.ctx(), out.as_mut_ptr(), MAX, timeout_ms, &mut n) };
        if status != sys::MW_OK {
            return Err(Error::last(status));
        }
        // SAFETY: mw_poll initialised the first `n <= MAX` entries.
        unsafe { out.set_len(n.min(MAX)) };
        let mut wake = Vec::new();
        {
            let mut st = self.lock();
            for c in &out {
                let key = c.request as usize;
                let st = &mut *st;
                match st.slots.get_mut(&key) {
                    Some(slot) => {
                        if let Some(w) = slot.waker.take() {
                            wake.push(w);
                        } else if !slot.reported && !slot.queued {
                            slot.queued = true;
                            st.ready.push_back(key);
                        }
                    }
                    None => {
                        st.early.insert(key, ());
                    }
                }
            }
        }
        for w in wake {
            w.wake();
        }
        Ok(())
    }

    /// Starts the completion poller thread unless it runs.
    pub(crate) fn ensure_poller(self: &Arc<Self>) {
        let mut poller = self.poller.lock().unwrap_or_else(|e| e.into_inner());
        if poller.is_some() || self.stop.load(Ordering::Acquire) {
            return;
        }
        let shared = Arc::clone(self);
        let spawned = thread::Builder::new()
            .name("mw-rs-poller".to_string())
            .spawn(move || {
                while !shared.stop.load(Ordering::Acquire) {
                    if shared.pump(POLL_SLICE_MS).is_err() {
                        thread::sleep(Duration::from_millis(POLL_SLICE_MS as u64));
                    }
                }
            });
        // Without a thread the futures still complete when polled again
        // (e.g. by Context::poll); there is nothing better to do here.
        if let Ok(handle) = spawned {
            *poller = Some(handle);
        }
    }

    /// Takes up to `max` queued completions nobody has seen.
    fn take_ready(&self, max: usize) -> Vec<(u64, u64, Arc<str>, usize, sys::mw_status_t, String)> {
        let mut out = Vec::new();
        let mut st = self.lock();
        while out.len() < max {
            let key = match st.ready.pop_front() {
                Some(k) => k,
                None => break,
            };
            let slot = match st.slots.get_mut(&key) {
                Some(s) => s,
                None => continue,
            };
            slot.queued = false;
            if slot.reported {
                continue;
            }
            let req = key as *mut sys::mw_request_t;
            // SAFETY: requests are unregistered under this lock before they
            // are freed, so a request with a slot is live here.
            let status = unsafe { sys::mw_test(req) };
            if status == sys::MW_IN_PROGRESS {
                continue; // a stale completion of an earlier request at this address
            }
            let detail = if status == sys::MW_OK {
                String::new()
            } else {
                last_error()
            };
            // SAFETY: as above.
            let user_data = unsafe { sys::mw_request_user_data(req) };
            slot.reported = true;
            out.push((
                slot.id,
                user_data,
                slot.world.clone(),
                slot.world_ptr,
                status,
                detail,
            ));
        }
        out
    }

    fn record_event(st: &mut State, raw: &sys::mw_event_t) -> Event {
        let world = c_chars(&raw.world_name);
        let detail = c_chars(&raw.detail);
        let peer_rank = if raw.peer_rank >= 0 {
            Some(raw.peer_rank as usize)
        } else {
            None
        };
        match raw.type_ {
            sys::MW_EVENT_WORLD_BROKEN => {
                if !raw.world.is_null() {
                    st.broken.entry(raw.world as usize).or_insert(peer_rank);
                }
                Event::WorldBroken {
                    world,
                    peer_rank,
                    detail,
                }
            }
            sys::MW_EVENT_STORE_DOWN => Event::StoreDown { detail },
            sys::MW_EVENT_STORE_UP => Event::StoreUp { detail },
            kind => Event::Other {
                kind,
                world,
                detail,
            },
        }
    }

    /// One `mw_next_event`; the event is recorded (blamed rank) and returned.
    fn next_raw_event(&self, timeout_ms: i32) -> Result<Option<Event>> {
        // SAFETY: mw_event_t is plain data; all-zero is a valid value.
        let mut raw: sys::mw_event_t = unsafe { std::mem::zeroed() };
        // SAFETY: `raw` is a valid out-pointer.
        let status = unsafe { sys::mw_next_event(self.ctx(), &mut raw, timeout_ms) };
        if status == sys::MW_ERR_TIMEOUT {
            return Ok(None);
        }
        if status != sys::MW_OK {
            return Err(Error::last(status));
        }
        let mut st = self.lock();
        Ok(Some(Shared::record_event(&mut st, &raw)))
    }

    /// Drains events into the queue that `Context::next_event` reads first.
    fn queue_event(&self, event: Event) {
        let mut st = self.lock();
        if st.events.len() >= MAX_QUEUED_EVENTS {
            st.events.pop_front();
        }
        st.events.push_back(event);
    }

    /// The rank blamed for the break of `world_ptr`, from the world's
    /// `WorldBroken` event; waits briefly for that event when it is not in
    /// yet. Events drained here stay queued for [`Context::next_event`].
    pub(crate) fn peer_rank(&self, world_ptr: usize) -> Option<usize> {
        let deadline = Instant::now() + PEER_RANK_WAIT;
        let mut wait_ms = 0;
        loop {
            if let Some(p) = self.lock().broken.get(&world_ptr) {
                return *p;
            }
            match self.next_raw_event(wait_ms) {
                Ok(Some(event)) => {
                    self.queue_event(event);
                    continue;
                }
                Ok(None) => {}
                Err(_) => return None,
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            wait_ms = timeout_ms(Some((deadline - now).min(Duration::from_millis(25))));
        }
    }

    /// The error for a request or call on `world` that failed with `status`.
    pub(crate) fn error(
        &self,
        status: sys::mw_status_t,
        detail: String,
        world: &str,
        world_ptr: usize,
    ) -> Error {
        let peer = if status == sys::MW_ERR_WORLD_BROKEN {
            self.peer_rank(world_ptr)
        } else {
            None
        };
        Error::from_code(status, detail, world, peer)
    }

    pub(crate) fn forget_world(&self, world_ptr: usize) {
        self.lock().broken.remove(&world_ptr);
    }
}

fn c_chars(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
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
            shared: Arc::new(Shared {
                raw: raw as usize,
                state: Mutex::new(State::default()),
                stop: AtomicBool::new(false),
                poller: Mutex::new(None),
            }),
        })
    }

    /// Joins (or forms) rank `rank` of the `size`-member Gloo world `name`.
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
        self.create_world_with(name, rank, size, Backend::Gloo, 0, timeout)
    }

    /// Like [`create_world`](Context::create_world), with a backend and (for
    /// NCCL) a CUDA device ordinal. Fails with [`Error::Unsupported`] when
    /// the backend is not built in (see [`backend_available`](crate::backend_available)).
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
        let c_name: CString = cstring(name, "world name")?;
        let rank_c = to_int(rank, "rank")?;
        let size_c = to_int(size, "size")?;
        let mut raw = ptr::null_mut();
        // SAFETY: live context, NUL-terminated name, valid out-pointer.
        let status = unsafe {
            sys::mw_world_create(
                self.raw,
                c_name.as_ptr(),
                rank_c,
                size_c,
                backend.to_raw(),
                device,
                timeout_ms(timeout),
                &mut raw,
            )
        };
        if status != sys::MW_OK {
            return Err(Error::from_code(status, last_error(), name, None));
        }
        // SAFETY: `raw` is the live world just created.
        let actual = unsafe { CStr::from_ptr(sys::mw_world_name(raw)) }
            .to_string_lossy()
            .into_owned();
        Ok(World::from_raw(self, raw, actual))
    }

    /// Up to `max` completions of this context's requests that the program
    /// has not seen yet (through [`Request::test`](crate::Request::test),
    /// [`wait`](crate::Request::wait), `.await` or an earlier `poll`), waiting
    /// up to `timeout` for the first (`None`: until one arrives;
    /// `Some(Duration::ZERO)`: just look). An empty vector means the timeout
    /// passed. Requests whose future is being awaited are woken instead of
    /// being reported here.
    ///
    /// This is the way to drive many requests at once without a future per
    /// request:
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
        loop {
            let ready = self.shared.take_ready(max);
            if !ready.is_empty() || max == 0 {
                return Ok(ready
                    .into_iter()
                    .map(
                        |(id, user_data, world, world_ptr, status, detail)| Completion {
                            request: RequestId(id),
                            user_data,
                            world: world.to_string(),
                            result: if status == sys::MW_OK {
                                Ok(())
                            } else {
                                Err(self.shared.error(status, detail, &world, world_ptr))
                            },
                        },
                    )
                    .collect());
            }
            let slice = match deadline {
                None => POLL_SLICE_MS,
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Ok(Vec::new());
                    }
                    timeout_ms(Some(d - now)).min(POLL_SLICE_MS)
                }
            };
            self.shared.pump(slice)?;
        }
    }

    /// The next event (`mw_next_event`): world breaks and Redis outages in
    /// the order they happened. Waits up to `timeout` (`None`: forever;
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
        // Waits in slices: another thread may move an event into the
        // binding's queue (while building a WorldBroken error) meanwhile.
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(event) = self.shared.lock().events.pop_front() {
                return Ok(Some(event));
            }
            let slice = match deadline {
                None => POLL_SLICE_MS,
                Some(d) => {
                    timeout_ms(Some(d.saturating_duration_since(Instant::now()))).min(POLL_SLICE_MS)
                }
            };
            if let Some(event) = self.shared.next_raw_event(slice)? {
                return Ok(Some(event));
            }
            if deadline.map_or(false, |d| Instant::now() >= d) {
                return Ok(None);
            }
        }
    }

    /// The raw `mw_context_t` handle, for calls through [`crate::sys`]. It
    /// stays owned by this `Context`; do not free it.
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
        self.shared.stop.store(true, Ordering::Release);
        let poller = self
            .shared
            .poller
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(handle) = poller {
            let _ = handle.join();
        }
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
