//! The binding's poller thread sleeps until the library has something for
//! it: no timer wakes it while a request is pending, a completion wakes
//! the waiting future, and dropping the context stops it. Alone in its
//! binary, so no other test's poller is counted.
mod common;

use std::fs;
use std::thread;
use std::time::Duration;

use common::{block_on, context, poll_once, unique, FORM_TIMEOUT};
use multiworld::scope;

const POLLER: &str = "mw-rs-poller";

/// The ids of this process's threads named `name`.
fn threads_named(name: &str) -> Vec<String> {
    fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| {
            let tid = e.ok()?.file_name().into_string().ok()?;
            let comm = fs::read_to_string(format!("/proc/self/task/{}/comm", tid)).ok()?;
            if comm.trim() == name {
                Some(tid)
            } else {
                None
            }
        })
        .collect()
}

/// How often the thread went to sleep and was woken again.
fn context_switches(tid: &str) -> u64 {
    fs::read_to_string(format!("/proc/self/task/{}/status", tid))
        .unwrap()
        .lines()
        .filter(|l| {
            l.starts_with("voluntary_ctxt_switches") || l.starts_with("nonvoluntary_ctxt_switches")
        })
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum()
}

#[test]
fn poller_sleeps_until_a_completion_and_stops_with_its_context() {
    assert!(threads_named(POLLER).is_empty());
    let ctx = context();
    let w = ctx
        .create_world(&unique("idle"), 0, 1, FORM_TIMEOUT)
        .unwrap();
    let x = [5u64; 8];
    let mut y = [0u64; 8];
    scope(|s| {
        let mut pending = w.recv(s, &mut y, 0).unwrap();
        // The first pending poll starts the poller.
        assert!(poll_once(&mut pending).is_pending());
        // A thread names itself once it runs.
        let mut pollers = threads_named(POLLER);
        for _ in 0..500 {
            if !pollers.is_empty() {
                break;
            }
            thread::sleep(Duration::from_millis(10));
            pollers = threads_named(POLLER);
        }
        assert_eq!(pollers.len(), 1, "one poller per context");
        let before = context_switches(&pollers[0]);
        thread::sleep(Duration::from_secs(1));
        let woken = context_switches(&pollers[0]) - before;
        // A timed poller (50 ms slices) wakes about 20 times a second.
        assert!(woken <= 2, "the idle poller woke {} times in 1 s", woken);
        w.send(s, &x, 0).unwrap().wait(None).unwrap();
        block_on(pending).unwrap();
    });
    assert_eq!(y, x);
    drop(w);
    drop(ctx);
    assert!(
        threads_named(POLLER).is_empty(),
        "the poller outlived its context"
    );
}
