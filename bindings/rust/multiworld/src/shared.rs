//! The binding's side of a context, shared by the context, its requests and
//! its poller thread: what it knows about each live request, and the
//! completions and events it drained from the library.
//!
//! Completions and events are drained by the poller thread
//! ([`crate::poller`]) and, before they wait, by callers on their own
//! thread. An event is taken from the library and recorded under one lock,
//! and the library queues a world's `MW_EVENT_WORLD_BROKEN` before any of
//! its requests fails, so a failed request finds its blamed rank without
//! waiting.
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::Waker;
use std::time::Instant;

use multiworld_sys as sys;

use crate::error::{final_detail, Error, Result};
use crate::event::Event;
use crate::poller::Poller;

/// Events kept for [`Context::next_event`](crate::Context::next_event)
/// before the oldest are dropped.
const MAX_QUEUED_EVENTS: usize = 4096;
/// Completions taken from `mw_poll_info` at a time.
const BATCH: usize = 64;

/// What the binding knows about one live request, keyed by its handle.
struct Slot {
    id: u64,
    world: Arc<str>,
    world_ptr: usize,
    /// A future waiting for this request.
    waker: Option<Waker>,
    /// Its final status reached the program (test, wait, await or poll), or
    /// its handle was dropped: it is not reported by `Context::poll`.
    reported: bool,
    /// It sits in `ready`.
    queued: bool,
}

#[derive(Default)]
struct State {
    slots: HashMap<usize, Slot>,
    /// Completions drained before their request was registered.
    early: HashSet<usize>,
    /// Completed requests nobody has seen yet, for `Context::poll`.
    ready: VecDeque<usize>,
    /// World handle -> blamed rank, from WorldBroken events.
    broken: HashMap<usize, Option<usize>>,
    /// Events drained by the binding, not yet handed to the program.
    events: VecDeque<Event>,
    next_id: u64,
}

/// A completion taken for [`Context::poll`](crate::Context::poll); the
/// error is built outside the lock.
pub(crate) struct Done {
    pub(crate) id: u64,
    pub(crate) user_data: u64,
    pub(crate) world: Arc<str>,
    pub(crate) world_ptr: usize,
    pub(crate) status: sys::mw_status_t,
    pub(crate) detail: String,
}

/// State shared by a context, its requests and its poller thread.
pub(crate) struct Shared {
    raw: usize,
    state: Mutex<State>,
    /// Signalled when `ready` or `events` grows.
    arrived: Condvar,
    poller: Mutex<Option<Poller>>,
}

impl Shared {
    pub(crate) fn new(ctx: *mut sys::mw_context_t) -> Shared {
        Shared {
            raw: ctx as usize,
            state: Mutex::new(State::default()),
            arrived: Condvar::new(),
            poller: Mutex::new(None),
        }
    }

    pub(crate) fn ctx(&self) -> *mut sys::mw_context_t {
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
        let done = st.early.remove(&key);
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
            drop(st);
            self.arrived.notify_all();
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

    /// Marks the request's final status as seen by the program; also used
    /// for a request whose handle was dropped, whose completion nobody is
    /// left to see.
    pub(crate) fn mark_reported(&self, req: *mut sys::mw_request_t) {
        if let Some(slot) = self.lock().slots.get_mut(&(req as usize)) {
            slot.reported = true;
            slot.waker = None;
        }
    }

    /// The future's half of the handshake with the drainers: under the
    /// lock, either the request is final (returned, with the detail read on
    /// this thread) or `waker` is stored, so a completion drained
    /// afterwards is guaranteed to wake it.
    pub(crate) fn test_or_park(
        &self,
        req: *mut sys::mw_request_t,
        waker: &Waker,
    ) -> Option<(sys::mw_status_t, String)> {
        let mut st = self.lock();
        // SAFETY: the request is live (its owner is polling it).
        let status = unsafe { sys::mw_test(req) };
        if let Some(slot) = st.slots.get_mut(&(req as usize)) {
            if status != sys::MW_IN_PROGRESS {
                slot.reported = true;
                slot.waker = None;
            } else {
                match &slot.waker {
                    Some(w) if w.will_wake(waker) => {}
                    _ => slot.waker = Some(waker.clone()),
                }
            }
        }
        if status == sys::MW_IN_PROGRESS {
            return None;
        }
        let detail = final_detail(status);
        Some((status, detail))
    }

    /// Starts the poller thread unless it runs.
    pub(crate) fn ensure_poller(self: &Arc<Self>) -> Result<()> {
        let mut poller = self.poller.lock().unwrap_or_else(|e| e.into_inner());
        if poller.is_none() {
            *poller = Some(Poller::start(Arc::clone(self))?);
        }
        Ok(())
    }

    /// Stops the poller thread, if it runs, and waits for it.
    pub(crate) fn stop_poller(&self) {
        let poller = self.poller.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(p) = poller {
            p.stop();
        }
    }

    /// Takes every completion and event the library has queued: wakes the
    /// futures of completed requests and queues the rest for
    /// `Context::poll` and `Context::next_event`. Never blocks.
    pub(crate) fn drain(&self) {
        let mut wake = Vec::new();
        let mut arrived = false;
        loop {
            let mut out: Vec<sys::mw_completion_info_t> = Vec::with_capacity(BATCH);
            let mut n: usize = 0;
            // SAFETY: `out` has room for BATCH completions of the element
            // size passed; mw_poll_info writes the first `n` of them.
            // Timeout 0: it only looks.
            let status = unsafe {
                sys::mw_poll_info(
                    self.ctx(),
                    out.as_mut_ptr(),
                    std::mem::size_of::<sys::mw_completion_info_t>(),
                    BATCH,
                    0,
                    &mut n,
                )
            };
            if status != sys::MW_OK {
                break;
            }
            // SAFETY: mw_poll_info initialised the first `n <= BATCH` entries.
            unsafe { out.set_len(n.min(BATCH)) };
            let mut st = self.lock();
            for c in &out {
                arrived |= st.record_completion(c.request as usize, &mut wake);
            }
            if n < BATCH {
                break;
            }
        }
        arrived |= self.drain_events(&mut self.lock());
        for w in wake {
            w.wake();
        }
        if arrived {
            self.arrived.notify_all();
        }
    }

    /// Takes the library's queued events into `st`; true if there were any.
    fn drain_events(&self, st: &mut State) -> bool {
        let mut any = false;
        loop {
            // SAFETY: mw_event_info_t is plain data; all-zero is a valid value.
            let mut raw: sys::mw_event_info_t = unsafe { std::mem::zeroed() };
            raw.size = std::mem::size_of::<sys::mw_event_info_t>();
            // SAFETY: a live context, a valid out-pointer of that size; timeout 0.
            if unsafe { sys::mw_next_event_info(self.ctx(), &mut raw, 0) } != sys::MW_OK {
                return any;
            }
            st.record_event(&raw);
            any = true;
        }
    }

    /// Up to `max` completions nobody has seen, waiting until `deadline`
    /// (`None`: forever) for the first. Empty when the deadline passed.
    pub(crate) fn wait_completions(&self, max: usize, deadline: Option<Instant>) -> Vec<Done> {
        let mut st = self.lock();
        loop {
            let done = st.take_ready(max);
            if !done.is_empty() || max == 0 {
                return done;
            }
            st = match self.wait(st, deadline) {
                Some(st) => st,
                None => return Vec::new(),
            };
        }
    }

    /// The next event, waiting until `deadline` (`None`: forever).
    pub(crate) fn wait_event(&self, deadline: Option<Instant>) -> Option<Event> {
        let mut st = self.lock();
        loop {
            if let Some(event) = st.events.pop_front() {
                return Some(event);
            }
            st = self.wait(st, deadline)?;
        }
    }

    /// Sleeps until something arrives or `deadline` passes (then `None`).
    fn wait<'g>(
        &self,
        st: MutexGuard<'g, State>,
        deadline: Option<Instant>,
    ) -> Option<MutexGuard<'g, State>> {
        match deadline {
            None => Some(self.arrived.wait(st).unwrap_or_else(|e| e.into_inner())),
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    return None;
                }
                let (st, _) = self
                    .arrived
                    .wait_timeout(st, d - now)
                    .unwrap_or_else(|e| e.into_inner());
                Some(st)
            }
        }
    }

    /// The rank blamed for the break of `world_ptr`, from the world's
    /// `WorldBroken` event. Never blocks: the library queued that event
    /// before the request failed, so it was recorded already or is drained
    /// here (and stays queued for `Context::next_event`).
    fn peer_rank(&self, world_ptr: usize) -> Option<usize> {
        let mut st = self.lock();
        if let Some(p) = st.broken.get(&world_ptr) {
            return *p;
        }
        if self.drain_events(&mut st) {
            self.arrived.notify_all();
        }
        st.broken.get(&world_ptr).copied().flatten()
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

impl State {
    /// Wakes the request's future, or queues it for `Context::poll`; true
    /// when it was queued.
    fn record_completion(&mut self, key: usize, wake: &mut Vec<Waker>) -> bool {
        match self.slots.get_mut(&key) {
            Some(slot) => {
                if let Some(w) = slot.waker.take() {
                    wake.push(w);
                } else if !slot.reported && !slot.queued {
                    slot.queued = true;
                    self.ready.push_back(key);
                    return true;
                }
                false
            }
            None => {
                self.early.insert(key);
                false
            }
        }
    }

    fn record_event(&mut self, raw: &sys::mw_event_info_t) {
        let event = Event::from_raw(raw);
        if let Event::WorldBroken { peer_rank, .. } = &event {
            if !raw.world.is_null() {
                self.broken.entry(raw.world as usize).or_insert(*peer_rank);
            }
        }
        if self.events.len() >= MAX_QUEUED_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(event);
    }

    /// Takes up to `max` queued completions nobody has seen.
    fn take_ready(&mut self, max: usize) -> Vec<Done> {
        let mut out = Vec::new();
        while out.len() < max {
            let key = match self.ready.pop_front() {
                Some(k) => k,
                None => break,
            };
            let slot = match self.slots.get_mut(&key) {
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
            let detail = final_detail(status);
            slot.reported = true;
            out.push(Done {
                id: slot.id,
                // SAFETY: as above.
                user_data: unsafe { sys::mw_request_user_data(req) },
                world: slot.world.clone(),
                world_ptr: slot.world_ptr,
                status,
                detail,
            });
        }
        out
    }
}
