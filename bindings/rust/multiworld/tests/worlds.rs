//! Integration tests of the host backends against a real redis-server
//! with real worker processes (see `common/mod.rs`). Every multi-process
//! test runs on Gloo, and on UCX where it is usable.
mod common;

use std::fmt::Debug;
use std::thread;
use std::time::{Duration, Instant};

use common::{
    block_on, context, host_backends, join_all, poll_once, spmd, unique, worker_main, Body,
    Workers, FORM_TIMEOUT,
};
use multiworld::{
    scope, Backend, Config, Dtype, Element, Error, Event, ReduceOp, World, WorldState, BF16, F16,
};

fn body_for(test: &str) -> Body {
    match test {
        "p2p" => p2p_body,
        "collectives" => collectives_body,
        "f16" => f16_body,
        "peer" => peer_body,
        "victim" => victim_body,
        other => panic!("unknown worker test {}", other),
    }
}

/// The entry point of worker processes; does nothing in a normal test run.
#[test]
fn worker_process() {
    worker_main(body_for);
}

/// Runs `test` on `size` ranks of every host backend.
fn on_host_backends(test: &str, size: usize) {
    for backend in host_backends(test) {
        println!("{} on {:?}", test, backend);
        spmd(test, size, backend, body_for);
    }
}

// ---- values of every element type ------------------------------------------

trait Small: Element + PartialEq + Debug {
    fn of(v: i64) -> Self;
}

macro_rules! small {
    ($($t:ty),*) => {$(
        impl Small for $t {
            fn of(v: i64) -> Self {
                v as $t
            }
        }
    )*};
}
small!(i8, u8, i32, u32, i64, u64, f32, f64);

impl Small for F16 {
    fn of(v: i64) -> Self {
        F16::from_f32(v as f32)
    }
}

impl Small for BF16 {
    fn of(v: i64) -> Self {
        BF16::from_f32(v as f32)
    }
}

fn vals<T: Small>(f: impl Fn(usize) -> i64, n: usize) -> Vec<T> {
    (0..n).map(|i| T::of(f(i))).collect()
}

// ---- point to point ---------------------------------------------------------

fn echo<T: Small>(world: &World<'_>) {
    let data: Vec<T> = vals(|i| (i % 50) as i64, 37);
    let mut back = vec![T::of(0); data.len()];
    if world.rank() == 0 {
        scope(|s| {
            let sent = world.send(s, &data, 1).unwrap();
            let received = world.recv(s, &mut back, 1).unwrap();
            for r in join_all(vec![sent, received]) {
                r.unwrap();
            }
        });
        assert_eq!(back, data, "{:?} echo", T::DTYPE);
    } else {
        scope(|s| world.recv(s, &mut back, 0).unwrap().wait(None).unwrap());
        scope(|s| world.send(s, &back, 0).unwrap().wait(None).unwrap());
    }
}

fn p2p_body(world: &World<'_>) {
    echo::<i8>(world);
    echo::<u8>(world);
    echo::<i32>(world);
    echo::<u32>(world);
    echo::<i64>(world);
    echo::<u64>(world);
    echo::<f32>(world);
    echo::<f64>(world);
    echo::<F16>(world);
    echo::<BF16>(world);

    // Messages posted before the receive, in order, from one peer.
    if world.rank() == 0 {
        let (a, b) = ([1u64; 3], [2u64; 3]);
        scope(|s| {
            let r1 = world.send(s, &a, 1).unwrap();
            let r2 = world.send(s, &b, 1).unwrap();
            r1.wait(None).unwrap();
            r2.wait(None).unwrap();
        });
    } else {
        thread::sleep(Duration::from_millis(100));
        let (mut a, mut b) = ([0u64; 3], [0u64; 3]);
        scope(|s| {
            let r1 = world.recv(s, &mut a, 0).unwrap();
            let r2 = world.recv(s, &mut b, 0).unwrap();
            block_on(async {
                r2.await.unwrap();
                r1.await.unwrap();
            });
        });
        assert_eq!((a, b), ([1; 3], [2; 3]));
    }

    // A receive of another size fails alone; the world stays usable.
    if world.rank() == 0 {
        let msg = [9u8; 3];
        scope(|s| {
            let _ = world.send(s, &msg, 1).unwrap().wait(None);
        });
    } else {
        let mut buf = [0u8; 4];
        let err = scope(|s| world.recv(s, &mut buf, 0).unwrap().wait(None)).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{:?}", err);
        assert!(
            err.to_string().starts_with("MW_ERR_INVALID_ARGUMENT"),
            "{}",
            err
        );
    }
    assert_eq!(world.state(), WorldState::Ready);
    scope(|s| world.barrier(s).unwrap().wait(None)).unwrap();
}

#[test]
fn p2p_every_dtype_futures_and_size_mismatch() {
    on_host_backends("p2p", 2);
}

// ---- collectives ------------------------------------------------------------

fn run<'a>(r: multiworld::Result<multiworld::Request<'a>>) {
    r.unwrap().wait(None).unwrap();
}

fn collectives_of<T: Small>(world: &World<'_>) {
    let (rank, size) = (world.rank(), world.size());
    let r = rank as i64;
    let n = 5;
    let ctx = T::DTYPE;

    // broadcast from 1
    let mut buf: Vec<T> = if rank == 1 {
        vals(|i| 10 + i as i64, n)
    } else {
        vals(|_| 0, n)
    };
    scope(|s| run(world.broadcast(s, &mut buf, 1)));
    assert_eq!(buf, vals::<T>(|i| 10 + i as i64, n), "{:?} broadcast", ctx);

    // allreduce sum, and in place
    let send: Vec<T> = vals(|i| r + i as i64, n);
    let mut recv = vals::<T>(|_| 0, n);
    scope(|s| run(world.allreduce(s, &send, &mut recv, ReduceOp::Sum)));
    let sum = |i: usize| (0..size as i64).sum::<i64>() + (size * i) as i64;
    assert_eq!(recv, vals::<T>(sum, n), "{:?} allreduce", ctx);
    let mut inplace = send.clone();
    scope(|s| run(world.allreduce_in_place(s, &mut inplace, ReduceOp::Sum)));
    assert_eq!(inplace, vals::<T>(sum, n), "{:?} allreduce in place", ctx);

    // reduce to 2, and in place to 0
    let mut out = vals::<T>(|_| 0, n);
    scope(|s| {
        let recv = if rank == 2 { Some(&mut out[..]) } else { None };
        run(world.reduce(s, &send, recv, ReduceOp::Sum, 2))
    });
    if rank == 2 {
        assert_eq!(out, vals::<T>(sum, n), "{:?} reduce", ctx);
    }
    let mut inplace = send.clone();
    scope(|s| run(world.reduce_in_place(s, &mut inplace, ReduceOp::Sum, 0)));
    if rank == 0 {
        assert_eq!(inplace, vals::<T>(sum, n), "{:?} reduce in place", ctx);
    }

    // allgather, and in place: block j holds j's values
    let mine: Vec<T> = vals(|i| r * 10 + i as i64, 2);
    let all = vals::<T>(|i| (i / 2) as i64 * 10 + (i % 2) as i64, 2 * size);
    let mut got = vals::<T>(|_| 0, 2 * size);
    scope(|s| run(world.allgather(s, &mine, &mut got)));
    assert_eq!(got, all, "{:?} allgather", ctx);
    let mut got: Vec<T> = vals(
        |i| {
            if i / 2 == rank {
                r * 10 + (i % 2) as i64
            } else {
                0
            }
        },
        2 * size,
    );
    scope(|s| run(world.allgather_in_place(s, &mut got)));
    assert_eq!(got, all, "{:?} allgather in place", ctx);

    // gather to 1, and in place to 0
    let mut got = vals::<T>(|_| 0, 2 * size);
    scope(|s| {
        let recv = if rank == 1 { Some(&mut got[..]) } else { None };
        run(world.gather(s, &mine, recv, 1))
    });
    if rank == 1 {
        assert_eq!(got, all, "{:?} gather", ctx);
    }
    let mut got: Vec<T> = vals(
        |i| {
            if i / 2 == rank {
                r * 10 + (i % 2) as i64
            } else {
                0
            }
        },
        2 * size,
    );
    scope(|s| run(world.gather_in_place(s, &mut got, 0)));
    if rank == 0 {
        assert_eq!(got, all, "{:?} gather in place", ctx);
    }

    // scatter from 0, and in place from 2
    let src = if rank == 0 { all.clone() } else { Vec::new() };
    let mut part = vals::<T>(|_| 0, 2);
    scope(|s| {
        let send = if rank == 0 { Some(&src[..]) } else { None };
        run(world.scatter(s, send, &mut part, 0))
    });
    assert_eq!(part, mine, "{:?} scatter", ctx);
    let mut blocks = if rank == 2 {
        all.clone()
    } else {
        vals::<T>(|_| 0, 2 * size)
    };
    scope(|s| run(world.scatter_in_place(s, &mut blocks, 2)));
    assert_eq!(
        &blocks[2 * rank..2 * rank + 2],
        &mine[..],
        "{:?} scatter in place",
        ctx
    );

    // reduce_scatter: everyone sends j+1 in block j: block `rank` sums to size*(rank+1)
    let send: Vec<T> = vals(|i| (i / 2) as i64 + 1, 2 * size);
    let want: Vec<T> = vals(|_| (size * (rank + 1)) as i64, 2);
    let mut part = vals::<T>(|_| 0, 2);
    scope(|s| run(world.reduce_scatter(s, &send, &mut part, ReduceOp::Sum)));
    assert_eq!(part, want, "{:?} reduce_scatter", ctx);
    let mut inplace = send.clone();
    scope(|s| run(world.reduce_scatter_in_place(s, &mut inplace, ReduceOp::Sum)));
    assert_eq!(
        &inplace[..2],
        &want[..],
        "{:?} reduce_scatter in place",
        ctx
    );

    // alltoall: block j of rank r is r*10+j; afterwards block j is j*10+r
    let send: Vec<T> = vals(|i| r * 10 + (i / 2) as i64, 2 * size);
    let want: Vec<T> = vals(|i| (i / 2) as i64 * 10 + r, 2 * size);
    let mut got = vals::<T>(|_| 0, 2 * size);
    scope(|s| run(world.alltoall(s, &send, &mut got)));
    assert_eq!(got, want, "{:?} alltoall", ctx);
    let mut inplace = send.clone();
    scope(|s| run(world.alltoall_in_place(s, &mut inplace)));
    assert_eq!(inplace, want, "{:?} alltoall in place", ctx);
}

fn collectives_body(world: &World<'_>) {
    assert_eq!(world.size(), 3);
    collectives_of::<i8>(world);
    collectives_of::<u8>(world);
    collectives_of::<i32>(world);
    collectives_of::<u32>(world);
    collectives_of::<i64>(world);
    collectives_of::<u64>(world);
    collectives_of::<f32>(world);
    collectives_of::<f64>(world);
    collectives_of::<F16>(world);
    collectives_of::<BF16>(world);

    // Every reduction, on i32 and f64; ranks hold 2, 3, 4.
    let x = [world.rank() as i32 + 2];
    for (op, want) in [
        (ReduceOp::Sum, 9),
        (ReduceOp::Prod, 24),
        (ReduceOp::Min, 2),
        (ReduceOp::Max, 4),
        (ReduceOp::Avg, 3),
    ] {
        let mut out = [0i32];
        scope(|s| run(world.allreduce(s, &x, &mut out, op)));
        assert_eq!(out[0], want, "{:?}", op);
        let xf = [x[0] as f64];
        let mut outf = [0f64];
        scope(|s| run(world.allreduce(s, &xf, &mut outf, op)));
        assert_eq!(outf[0], want as f64, "{:?}", op);
    }
    // Integer average truncates toward zero: (-1 + 0 + 0) / 3 == 0.
    let neg = [if world.rank() == 0 { -1i64 } else { 0 }];
    let mut avg = [7i64];
    scope(|s| run(world.allreduce(s, &neg, &mut avg, ReduceOp::Avg)));
    assert_eq!(avg[0], 0);

    // Several collectives in flight at once, completed through Context::poll.
    let ctx = world.context();
    let inputs: Vec<[u32; 4]> = (0..8u32).map(|k| [k; 4]).collect();
    let mut outputs = [[0u32; 4]; 8];
    scope(|s| {
        let mut ids = Vec::new();
        let mut reqs = Vec::new();
        for (k, (i, o)) in inputs.iter().zip(outputs.iter_mut()).enumerate() {
            let req = if k % 2 == 0 {
                world
                    .allreduce(s.with_user_data(100 + k as u64), i, o, ReduceOp::Sum)
                    .unwrap()
            } else {
                // The older way, racing a poll on another thread (none here).
                let req = world.allreduce(s, i, o, ReduceOp::Sum).unwrap();
                req.set_user_data(100 + k as u64);
                req
            };
            assert_eq!(req.user_data(), 100 + k as u64);
            ids.push(req.id());
            reqs.push(req);
        }
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while seen.len() < ids.len() && Instant::now() < deadline {
            for c in ctx.poll(4, Some(Duration::from_millis(500))).unwrap() {
                c.result.unwrap();
                assert_eq!(c.world, world.name());
                let k = ids
                    .iter()
                    .position(|id| *id == c.request)
                    .expect("known id");
                assert_eq!(c.user_data, 100 + k as u64);
                seen.push(c.request);
            }
        }
        assert_eq!(seen.len(), ids.len(), "every completion once");
        assert!(ctx.poll(4, Some(Duration::ZERO)).unwrap().is_empty());
        // Each still reports its (same) result.
        for r in &reqs {
            assert_eq!(r.test(), Some(Ok(())));
        }
    });
    for (k, o) in outputs.iter().enumerate() {
        assert_eq!(*o, [3 * k as u32; 4]);
    }
    scope(|s| run(world.barrier(s)));
}

#[test]
fn every_collective_every_dtype_three_processes() {
    on_host_backends("collectives", 3);
}

// ---- 16-bit floats ------------------------------------------------------------

fn f16_body(world: &World<'_>) {
    // Every bit pattern, NaNs included, survives a round trip unchanged.
    let halves: Vec<F16> = (0..=u16::MAX).map(F16::from_bits).collect();
    let brains: Vec<BF16> = (0..=u16::MAX).map(BF16::from_bits).collect();
    let mut h = vec![F16::default(); halves.len()];
    let mut b = vec![BF16::default(); brains.len()];
    if world.rank() == 0 {
        scope(|s| {
            let reqs = vec![
                world.send(s, &halves, 1).unwrap(),
                world.send(s, &brains, 1).unwrap(),
                world.recv(s, &mut h, 1).unwrap(),
                world.recv(s, &mut b, 1).unwrap(),
            ];
            for r in join_all(reqs) {
                r.unwrap();
            }
        });
        assert!(h
            .iter()
            .zip(&halves)
            .all(|(x, y)| x.to_bits() == y.to_bits()));
        assert!(b
            .iter()
            .zip(&brains)
            .all(|(x, y)| x.to_bits() == y.to_bits()));
    } else {
        scope(|s| {
            let r1 = world.recv(s, &mut h, 0).unwrap();
            let r2 = world.recv(s, &mut b, 0).unwrap();
            r1.wait(None).unwrap();
            r2.wait(None).unwrap();
        });
        scope(|s| {
            let r1 = world.send(s, &h, 0).unwrap();
            let r2 = world.send(s, &b, 0).unwrap();
            r1.wait(None).unwrap();
            r2.wait(None).unwrap();
        });
    }

    // Reductions through f32 with round-to-nearest-even.
    let k = world.rank() as f32;
    let x: Vec<F16> = (0..64).map(|i| F16::from_f32(i as f32 * 0.5 + k)).collect();
    let mut sum = vec![F16::default(); 64];
    scope(|s| run(world.allreduce(s, &x, &mut sum, ReduceOp::Sum)));
    for (i, v) in sum.iter().enumerate() {
        assert_eq!(v.to_f32(), i as f32 + 1.0, "f16 sum {}", i);
    }
    // 2049 is not a binary16 value: 1024 + 1025 rounds to even, 2048.
    let y = [F16::from_f32(1024.0 + k)];
    let mut out = [F16::default()];
    scope(|s| run(world.allreduce(s, &y, &mut out, ReduceOp::Sum)));
    assert_eq!(out[0].to_bits(), F16::from_f32(2048.0).to_bits());
    let z = [BF16::from_f32(256.0 + k)];
    let mut outb = [BF16::default()];
    scope(|s| run(world.allreduce(s, &z, &mut outb, ReduceOp::Avg)));
    assert_eq!(outb[0].to_f32(), 256.0); // 513 / 2 = 256.5 rounds to even
    scope(|s| run(world.barrier(s)));
}

#[test]
fn f16_and_bf16_bits_round_trip() {
    on_host_backends("f16", 2);
}

// ---- faults -------------------------------------------------------------------

/// A healthy peer: one allreduce once the test says so, then a barrier.
fn peer_body(world: &World<'_>) {
    let x = [1i32; 4];
    let mut y = [0i32; 4];
    scope(|s| run(world.allreduce(s, &x, &mut y, ReduceOp::Sum)));
    assert_eq!(y, [2; 4]);
    scope(|s| run(world.barrier(s)));
}

/// A peer that joins and then waits to be killed.
fn victim_body(_world: &World<'_>) {
    thread::sleep(Duration::from_secs(120));
}

fn broken_world_on(backend: Backend) {
    let healthy = unique("healthy");
    let doomed = unique("doomed");
    let mut peer = Workers::spawn("peer", &healthy, 1..2, 2, backend);
    let mut victim = Workers::spawn("victim", &doomed, 1..2, 2, backend);
    let ctx = context();
    let w_ok = ctx
        .create_world_with(&healthy, 0, 2, backend, 0, FORM_TIMEOUT)
        .unwrap();
    let w_bad = ctx
        .create_world_with(&doomed, 0, 2, backend, 0, FORM_TIMEOUT)
        .unwrap();
    assert!(w_bad.epoch() >= 1);

    let mut buf = [0u8; 16];
    let started = Instant::now();
    let result = scope(|s| {
        let mut pending = w_bad.recv(s, &mut buf, 1).unwrap();
        // Polled once while pending: registers the waker, starts the poller.
        assert!(poll_once(&mut pending).is_pending());
        victim.kill(0);
        block_on(pending)
    });
    match result {
        Err(Error::WorldBroken {
            world,
            peer_rank,
            detail,
        }) => {
            assert_eq!(world, doomed);
            assert_eq!(peer_rank, Some(1), "blamed rank; detail: {}", detail);
            assert!(!detail.is_empty());
        }
        other => panic!("expected WorldBroken, got {:?}", other),
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(w_bad.state(), WorldState::Broken);

    // The break is also an event, and new operations fail at once.
    let mut saw_event = false;
    while let Some(event) = ctx.next_event(Some(Duration::from_secs(2))).unwrap() {
        if let Event::WorldBroken {
            world, peer_rank, ..
        } = event
        {
            if world == doomed {
                assert_eq!(peer_rank, Some(1));
                saw_event = true;
                break;
            }
        }
    }
    assert!(saw_event, "no WorldBroken event for {}", doomed);
    let err = scope(|s| w_bad.barrier(s).map(|_| ())).unwrap_err();
    assert!(matches!(err, Error::WorldBroken { .. }), "{:?}", err);

    // The other world is untouched.
    assert_eq!(w_ok.state(), WorldState::Ready);
    peer_body(&w_ok);
    drop(w_ok);
    drop(w_bad);
    peer.0
        .remove(0)
        .wait()
        .map(|s| assert!(s.success()))
        .unwrap();
}

#[test]
fn broken_world_fails_a_pending_future_and_spares_other_worlds() {
    for backend in host_backends("broken_world") {
        println!("broken world on {:?}", backend);
        broken_world_on(backend);
    }
}

// ---- resources ---------------------------------------------------------------

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn threads() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn use_world(world: &World<'_>) {
    let x = [1.5f32; 8];
    let mut y = [0f32; 8];
    scope(|s| {
        let a = world.allreduce(s, &x, &mut y, ReduceOp::Sum).unwrap();
        let b = world.barrier(s).unwrap();
        for r in join_all(vec![a, b]) {
            r.unwrap();
        }
    });
    assert_eq!(y, x);
}

#[test]
fn drop_frees_everything_200_worlds() {
    let ctx = context();
    // Warm up: the first world starts the poller thread and lazy state.
    for i in 0..3 {
        let w = ctx
            .create_world(&unique(&format!("warm{}", i)), 0, 1, FORM_TIMEOUT)
            .unwrap();
        use_world(&w);
    }
    // ctest runs this binary's tests one at a time (--test-threads=1); the
    // tolerance is for UCX's sockets that close a moment late, and no
    // growth proportional to the worlds is allowed.
    let (fds0, threads0) = (open_fds(), threads());
    for i in 0..200 {
        let w = ctx
            .create_world(&unique(&format!("w{}", i)), 0, 1, FORM_TIMEOUT)
            .unwrap();
        assert_eq!(w.state(), WorldState::Ready);
        use_world(&w);
        if i % 2 == 0 {
            w.destroy().unwrap();
        } // else dropped
    }
    let (fds1, threads1) = (open_fds(), threads());
    println!(
        "200 worlds: fds {} -> {}, threads {} -> {}",
        fds0, fds1, threads0, threads1
    );
    assert!(fds1 <= fds0 + 20, "fds {} -> {}", fds0, fds1);
    assert!(
        threads1 <= threads0 + 12,
        "threads {} -> {}",
        threads0,
        threads1
    );
    drop(ctx);

    // Contexts too: create and drop, with worlds and the poller running.
    let fds0 = open_fds();
    for i in 0..10 {
        let ctx = context();
        let w = ctx
            .create_world(&unique(&format!("c{}", i)), 0, 1, FORM_TIMEOUT)
            .unwrap();
        use_world(&w);
    }
    // UCX closes a force-closed endpoint's socket from its thread a moment
    // after the close returns; a leak does not go away.
    let settled = Instant::now() + Duration::from_secs(5);
    while open_fds() > fds0 + 20 && Instant::now() < settled {
        thread::sleep(Duration::from_millis(20));
    }
    assert!(open_fds() <= fds0 + 20, "fds {} -> {}", fds0, open_fds());
}

// ---- configuration and errors ------------------------------------------------

#[test]
fn errors_and_library_info() {
    let header = (
        multiworld::sys::MW_VERSION_MAJOR as i32,
        multiworld::sys::MW_VERSION_MINOR as i32,
        multiworld::sys::MW_VERSION_PATCH as i32,
    );
    assert_eq!(multiworld::version(), header);
    assert_eq!(
        multiworld::version_string(),
        format!("{}.{}.{}", header.0, header.1, header.2)
    );
    assert_eq!(multiworld::status_string(-5), "MW_ERR_WORLD_BROKEN");
    assert!(multiworld::backend_available(Backend::Gloo));
    assert!(
        Backend::preferred_host() == Backend::Ucx || !multiworld::backend_available(Backend::Ucx)
    );

    let err = Config::new().set("no_such_key", "1").connect().unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref d) if d.contains("no_such_key")),
        "{:?}",
        err
    );
    let err = Config::new()
        .set("heartbeat_interval_ms", "soon")
        .connect()
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{:?}", err);
    let err = Config::new().namespace("bad\0ns").connect().unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{:?}", err);
    let err = Config::new()
        .redis_url("redis://127.0.0.1:1")
        .store_timeout(Duration::from_millis(200))
        .connect()
        .unwrap_err();
    assert!(matches!(err, Error::Store(_)), "{:?}", err);
    assert_eq!(err.code(), -6);

    let ctx = context();
    let err = ctx
        .create_world("bad name!", 0, 1, FORM_TIMEOUT)
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{:?}", err);
    let err = ctx.create_world("x", 1, 1, FORM_TIMEOUT).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{:?}", err);
    if !multiworld::backend_available(Backend::Nccl) {
        let err = ctx
            .create_world_with("gpu", 0, 1, Backend::Nccl, 0, FORM_TIMEOUT)
            .unwrap_err();
        assert!(matches!(err, Error::Unsupported(_)), "{:?}", err);
    }
    if !multiworld::backend_available(Backend::Ucx) {
        let err = ctx
            .create_world_with("ucx", 0, 1, Backend::Ucx, 0, FORM_TIMEOUT)
            .unwrap_err();
        assert!(
            matches!(err, Error::Unsupported(_) | Error::InvalidArgument(_)),
            "{:?}",
            err
        );
    }
    let err = ctx
        .create_world(&unique("late"), 0, 2, Some(Duration::from_millis(300)))
        .unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{:?}", err);

    // Lengths are checked before anything reaches the library.
    let w = ctx
        .create_world(&unique("len"), 0, 1, FORM_TIMEOUT)
        .unwrap();
    let (a, mut b) = ([1i32; 3], [0i32; 4]);
    scope(|s| {
        let e = w.allreduce(s, &a, &mut b, ReduceOp::Sum).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{:?}", e);
    });
    scope(|s| {
        let e = w.send(s, &a, 1).unwrap_err(); // dst outside the world
        assert!(matches!(e, Error::InvalidArgument(_)), "{:?}", e);
        let e = w.reduce(s, &a, None, ReduceOp::Sum, 0).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{:?}", e);
    });
    assert_eq!(Dtype::Float16.size(), 2);
    assert!(ctx.next_event(Some(Duration::ZERO)).unwrap().is_none());
}
