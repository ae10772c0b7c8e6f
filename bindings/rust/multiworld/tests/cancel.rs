//! Cancellation: a scope ends with requests that will never complete
//! (a receive whose sender never comes), on every way out of it, and a
//! cancelled receive leaves a UCX world usable. Also: user data fixed at
//! issue time reaches a `Context::poll` on another thread.
mod common;

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::{context, host_backends, poll_once, unique, FORM_TIMEOUT};
use multiworld::{scope, Backend, Error, Result, World, WorldState};

/// How a scope is left while a receive nobody sends to is pending.
#[derive(Debug, Clone, Copy)]
enum Exit {
    /// The request is dropped, unawaited.
    Drop,
    /// The request is leaked with `mem::forget`.
    Leak,
    /// `?` leaves the scope early.
    Early,
    /// A panic unwinds through the scope.
    Panic,
    /// A future polled once is dropped.
    DroppedFuture,
    /// `Request::cancel`, then the request's own result.
    Cancel,
}

const EXITS: [Exit; 6] = [
    Exit::Drop,
    Exit::Leak,
    Exit::Early,
    Exit::Panic,
    Exit::DroppedFuture,
    Exit::Cancel,
];

fn fails() -> Result<()> {
    Err(Error::Internal(
        "the step after the receive failed".to_string(),
    ))
}

/// Leaves a scope holding a pending receive from rank 0 (this process,
/// which never sends) by `exit`; returns the cancelled request's own
/// result for `Exit::Cancel`.
fn leave_with_pending_recv(w: &World<'_>, exit: Exit) -> Option<Result<()>> {
    let mut buf = [0u32; 4];
    match exit {
        Exit::Drop => scope(|s| drop(w.recv(s, &mut buf, 0).unwrap())),
        Exit::Leak => scope(|s| std::mem::forget(w.recv(s, &mut buf, 0).unwrap())),
        Exit::Early => {
            let r = scope(|s| -> Result<()> {
                let req = w.recv(s, &mut buf, 0)?;
                fails()?;
                req.wait(None)
            });
            assert!(matches!(r, Err(Error::Internal(_))), "{:?}", r);
        }
        Exit::Panic => {
            let r = catch_unwind(AssertUnwindSafe(|| {
                scope(|s| {
                    let _req = w.recv(s, &mut buf, 0).unwrap();
                    panic!("a panic while a receive is pending");
                })
            }));
            assert!(r.is_err());
        }
        Exit::DroppedFuture => scope(|s| {
            let mut req = w.recv(s, &mut buf, 0).unwrap();
            assert!(poll_once(&mut req).is_pending());
        }),
        Exit::Cancel => {
            return Some(scope(|s| {
                let req = w.recv(s, &mut buf, 0).unwrap();
                assert!(req.test().is_none());
                req.cancel().unwrap();
                req.wait(Some(Duration::from_secs(20)))
            }))
        }
    }
    None
}

/// After a cancelled receive a UCX world still moves messages, and the
/// cancelled receive took none of them.
fn round_trip(w: &World<'_>) {
    let x = [7u32, 8, 9, 10];
    let mut y = [0u32; 4];
    scope(|s| {
        let r = w.recv(s, &mut y, 0).unwrap();
        w.send(s, &x, 0).unwrap().wait(None).unwrap();
        r.wait(None).unwrap();
    });
    assert_eq!(y, x);
}

/// One exit on a fresh one-rank world of `backend`, on its own thread,
/// so that a scope that hangs fails the test instead of hanging it.
fn check_exit(backend: Backend, exit: Exit) {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        check_exit_in_own_context(backend, exit);
        // Only once this exit's context is gone does the next one begin:
        // without the build's copy of libucs (third_party/ucx), two UCX
        // contexts alive at once in one process can abort inside UCX 1.13.1
        // (async.c:643).
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Timeout) => panic!(
            "{:?} on {:?}: the scope did not end: a pending receive hangs it",
            exit, backend
        ),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            panic!("{:?} on {:?}: failed (the panic is above)", exit, backend)
        }
    }
}

fn check_exit_in_own_context(backend: Backend, exit: Exit) {
    let ctx = context();
    let w = ctx
        .create_world_with(&unique("cancel"), 0, 1, backend, 0, FORM_TIMEOUT)
        .unwrap();
    let own = leave_with_pending_recv(&w, exit);
    if let Some(result) = own {
        match backend {
            Backend::Ucx => assert!(matches!(result, Err(Error::Cancelled(_))), "{:?}", result),
            _ => match result {
                Err(Error::WorldBroken { peer_rank, .. }) => assert_eq!(peer_rank, Some(0)),
                other => panic!("expected WorldBroken, got {:?}", other),
            },
        }
    }
    if backend == Backend::Ucx {
        assert_eq!(w.state(), WorldState::Ready, "{:?}", exit);
        round_trip(&w);
    } else {
        // A Gloo receive cannot be taken back: the world broke, so the
        // buffer is free, and the library says so.
        assert_eq!(w.state(), WorldState::Broken, "{:?}", exit);
    }
}

#[test]
fn scope_ends_with_an_unmatched_receive_on_every_way_out() {
    for backend in host_backends("cancel") {
        for exit in EXITS {
            println!("{:?} on {:?}", exit, backend);
            check_exit(backend, exit);
        }
    }
}

#[test]
fn finished_requests_are_not_cancelled() {
    let ctx = context();
    let w = ctx
        .create_world(&unique("finished"), 0, 1, FORM_TIMEOUT)
        .unwrap();
    let x = [1u8, 2, 3];
    let mut y = [0u8; 3];
    scope(|s| {
        let r = w.recv(s, &mut y, 0).unwrap();
        let t = w.send(s, &x, 0).unwrap();
        r.wait(None).unwrap();
        t.wait(None).unwrap();
        r.cancel().unwrap(); // no effect on a finished request
        assert_eq!(r.test(), Some(Ok(())));
    });
    assert_eq!(y, x);
    assert_eq!(w.state(), WorldState::Ready);
}

#[test]
fn user_data_fixed_at_issue_reaches_a_poll_on_another_thread() {
    const N: u64 = 300;
    let ctx = context();
    let w = ctx
        .create_world(&unique("userdata"), 0, 1, FORM_TIMEOUT)
        .unwrap();
    let (issued, polled) = thread::scope(|ts| {
        let poller = ts.spawn(|| {
            let mut got = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(60);
            while (got.len() as u64) < N && Instant::now() < deadline {
                for c in ctx.poll(64, Some(Duration::from_millis(200))).unwrap() {
                    c.result.unwrap();
                    got.push((c.request, c.user_data));
                }
            }
            got
        });
        scope(|s| {
            // Kept until the poller is done: a dropped request's completion
            // is not reported.
            let reqs: Vec<_> = (0..N)
                .map(|k| w.barrier(s.with_user_data(1000 + k)).unwrap())
                .collect();
            let issued: HashMap<_, _> = reqs.iter().map(|r| (r.id(), r.user_data())).collect();
            (issued, poller.join().unwrap())
        })
    });
    assert_eq!(polled.len() as u64, N, "every completion once");
    for (id, user_data) in polled {
        assert_eq!(Some(&user_data), issued.get(&id), "request {:?}", id);
    }
    let mut words: Vec<u64> = issued.values().copied().collect();
    words.sort_unstable();
    assert_eq!(words, (1000..1000 + N).collect::<Vec<_>>());
}
