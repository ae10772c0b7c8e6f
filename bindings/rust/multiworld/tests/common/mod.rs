//! The harness of the integration tests: a real redis-server
//! (`MW_REDIS_URL`, see `tests/with_redis.sh`) and real worker processes.
//!
//! A multi-process test runs its body on every rank: rank 0 in the test
//! itself, the other ranks in copies of the test binary started with
//! `MW_RS_WORKER=<test>:<world>:<rank>:<size>:<backend>`, which run only
//! the binary's `worker_process` test, through [`worker_main`].
#![allow(dead_code)] // each test binary uses a part

use std::env;
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use multiworld::{backend_available, Backend, Config, Context, LogLevel, World};

pub const WORKER_ENV: &str = "MW_RS_WORKER";
pub const FORM_TIMEOUT: Option<Duration> = Some(Duration::from_secs(30));

pub fn context() -> Context {
    assert!(
        env::var_os("MW_REDIS_URL").is_some(),
        "MW_REDIS_URL is not set: run the tests through tests/with_redis.sh"
    );
    Config::new()
        .namespace("mw-rs-test")
        // Generous, so a loaded CI machine does not break worlds; a killed
        // peer is noticed at once through its closed connections anyway.
        .heartbeat_interval(Duration::from_millis(100))
        .heartbeat_timeout(Duration::from_secs(3))
        .log_level(LogLevel::Error)
        .connect()
        .expect("context")
}

pub fn unique(test: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "rs.{}.{}.{}",
        test,
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn backend_name(b: Backend) -> &'static str {
    match b {
        Backend::Gloo => "gloo",
        Backend::Ucx => "ucx",
        Backend::Nccl => "nccl",
        other => panic!("no name for {:?}", other),
    }
}

fn backend_named(name: &str) -> Backend {
    match name {
        "gloo" => Backend::Gloo,
        "ucx" => Backend::Ucx,
        "nccl" => Backend::Nccl,
        other => panic!("unknown backend {}", other),
    }
}

/// Says that (part of) a test was skipped, and why. Written to stderr
/// directly, past the test harness's capture, so that it shows in every
/// log, passing tests' included.
pub fn skip(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIP {}: {}", test, why);
}

/// The host backends to run a test on: Gloo, and UCX where it is usable
/// (otherwise the skip is reported, with the reason).
pub fn host_backends(test: &str) -> Vec<Backend> {
    let mut out = vec![Backend::Gloo];
    if backend_available(Backend::Ucx) {
        out.push(Backend::Ucx);
    } else {
        skip(
            &format!("{} on UCX", test),
            "mw_backend_available(MW_BACKEND_UCX) is 0 (UCX not built in or not usable here)",
        );
    }
    out
}

/// Set (and inherited by the workers) while a multi-process NCCL test runs
/// every rank on device 0 of a one-GPU host.
pub const SHARE_GPU_ENV: &str = "MW_TEST_SHARE_GPU";

fn sharing_gpu() -> bool {
    env::var_os(SHARE_GPU_ENV).is_some()
}

/// The CUDA device of `rank` in a multi-process NCCL test: one per rank, or
/// device 0 for all when they share a GPU.
pub fn device_of(backend: Backend, rank: usize) -> i32 {
    if backend == Backend::Nccl && !sharing_gpu() {
        rank as i32
    } else {
        0
    }
}

/// What a rank's process sets before NCCL starts when the ranks share a
/// GPU: NCCL refuses two ranks on one device of one host ("Duplicate GPU
/// detected"), so each rank claims a host of its own (NCCL_HOSTID) and NCCL
/// joins them over its socket transport on loopback. A test setup for
/// one-GPU hosts, not a production one.
pub fn nccl_host_env(rank: usize) -> Vec<(&'static str, String)> {
    if !sharing_gpu() {
        return Vec::new();
    }
    vec![
        (
            "NCCL_HOSTID",
            format!("mwtest-{}-rank{}", std::process::id(), rank),
        ),
        ("NCCL_SOCKET_IFNAME", "lo".to_string()),
        ("NCCL_NET", "Socket".to_string()),
    ]
}

/// Kills the worker processes unless they were waited for.
pub struct Workers(pub Vec<Child>);

impl Workers {
    pub fn spawn(
        test: &str,
        world: &str,
        ranks: std::ops::Range<usize>,
        size: usize,
        backend: Backend,
    ) -> Workers {
        let exe = env::current_exe().expect("current_exe");
        Workers(
            ranks
                .map(|rank| {
                    Command::new(&exe)
                        .args(["worker_process", "--exact", "--nocapture", "--quiet"])
                        .envs(nccl_host_env(rank))
                        .env(
                            WORKER_ENV,
                            format!(
                                "{}:{}:{}:{}:{}",
                                test,
                                world,
                                rank,
                                size,
                                backend_name(backend)
                            ),
                        )
                        .spawn()
                        .expect("spawn worker")
                })
                .collect(),
        )
    }

    pub fn kill(&mut self, i: usize) {
        let _ = self.0[i].kill();
        let _ = self.0[i].wait();
    }

    pub fn join(mut self) {
        for (i, child) in self.0.iter_mut().enumerate() {
            let status = child.wait().expect("wait worker");
            assert!(status.success(), "worker {} failed: {}", i + 1, status);
        }
        self.0.clear();
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub type Body = fn(&World<'_>);

/// Runs `test`'s body (from `body_for`) on `size` ranks of a `backend`
/// world: rank 0 here, the others in workers.
pub fn spmd(test: &str, size: usize, backend: Backend, body_for: fn(&str) -> Body) {
    let name = unique(test);
    let workers = Workers::spawn(test, &name, 1..size, size, backend);
    for (key, value) in nccl_host_env(0) {
        env::set_var(key, value);
    }
    let ctx = context();
    let world = ctx
        .create_world_with(&name, 0, size, backend, device_of(backend, 0), FORM_TIMEOUT)
        .expect("create world");
    assert_eq!(
        (world.rank(), world.size(), world.name(), world.backend()),
        (0, size, name.as_str(), backend)
    );
    body_for(test)(&world);
    drop(world);
    workers.join();
}

/// The body of every binary's `worker_process` test: runs the rank the
/// environment names, or nothing in a normal test run.
pub fn worker_main(body_for: fn(&str) -> Body) {
    let spec = match env::var(WORKER_ENV) {
        Ok(spec) => spec,
        Err(_) => return,
    };
    let parts: Vec<&str> = spec.split(':').collect();
    let (test, name) = (parts[0], parts[1]);
    let rank: usize = parts[2].parse().unwrap();
    let size: usize = parts[3].parse().unwrap();
    let backend = backend_named(parts[4]);
    let ctx = context();
    let world = ctx
        .create_world_with(
            name,
            rank,
            size,
            backend,
            device_of(backend, rank),
            FORM_TIMEOUT,
        )
        .expect("worker: create world");
    body_for(test)(&world);
}

// ---- a minimal executor: the futures need none in particular ---------------

pub struct Unpark(pub thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

pub fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = Box::pin(fut);
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = TaskContext::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        thread::park();
    }
}

/// Polls `fut` once with a waker that unparks this thread.
pub fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    Pin::new(fut).poll(&mut TaskContext::from_waker(&waker))
}

/// Polls every future until all are ready; results in order.
pub fn join_all<F: Future + Unpin>(futs: Vec<F>) -> Vec<F::Output>
where
    F::Output: Unpin,
{
    struct JoinAll<F: Future> {
        futs: Vec<F>,
        out: Vec<Option<F::Output>>,
    }
    impl<F: Future + Unpin> Future for JoinAll<F>
    where
        F::Output: Unpin,
    {
        type Output = Vec<F::Output>;
        fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
            let this = &mut *self;
            let mut pending = false;
            for (f, out) in this.futs.iter_mut().zip(this.out.iter_mut()) {
                if out.is_none() {
                    match Pin::new(f).poll(cx) {
                        Poll::Ready(v) => *out = Some(v),
                        Poll::Pending => pending = true,
                    }
                }
            }
            if pending {
                Poll::Pending
            } else {
                Poll::Ready(this.out.iter_mut().map(|o| o.take().unwrap()).collect())
            }
        }
    }
    let out = futs.iter().map(|_| None).collect();
    block_on(JoinAll { futs, out })
}
