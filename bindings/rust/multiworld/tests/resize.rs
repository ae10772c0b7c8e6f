//! `World::shrink` and `World::grow` against a real redis-server with real
//! worker processes: a member is killed, the survivors shrink with the
//! break's list, and a newcomer grows the world back. On Gloo, and on UCX
//! where it is usable.
mod common;

use std::thread;
use std::time::Duration;

use common::{context, host_backends, unique, worker_main, Body, Workers, FORM_TIMEOUT};
use multiworld::{scope, Backend, Error, Event, ReduceOp, ShrinkMode, World, WorldState};

fn body_for(test: &str) -> Body {
    match test {
        "survivor" => survivor_body,
        "victim" => victim_body,
        "newcomer" => newcomer_body,
        other => panic!("unknown worker test {}", other),
    }
}

/// The entry point of worker processes; does nothing in a normal test run.
#[test]
fn worker_process() {
    worker_main(body_for);
}

/// An allreduce every member checks: rank r gives r + 1.
fn summed(world: &World<'_>) {
    let x = [world.rank() as i64 + 1; 8];
    let mut y = [0i64; 8];
    scope(|s| world.allreduce(s, &x, &mut y, ReduceOp::Sum)?.wait(None)).unwrap();
    let n = world.size() as i64;
    assert_eq!(y, [n * (n + 1) / 2; 8], "rank {} of {}", world.rank(), n);
}

/// Every member is past what came before: rank 0, which kills rank 2
/// next, sees this barrier complete only once every member entered it.
/// The others may see it fail (rank 2 can die before it completes there):
/// the break then waits as an event.
fn fence(world: &World<'_>) -> bool {
    scope(|s| world.barrier(s)?.wait(None)).is_ok()
}

/// Rank 1 of 3: shrinks after rank 2's death, then grows back to 3.
fn survivor_body(world: &World<'_>) {
    summed(world);
    fence(world);
    let shrunk = after_the_kill(world);
    let grown = shrunk.grow(3, FORM_TIMEOUT).expect("grow");
    summed(&grown);
}

/// Rank 2 of 3: waits to be killed.
fn victim_body(world: &World<'_>) {
    summed(world);
    fence(world);
    thread::sleep(Duration::from_secs(120));
}

/// Rank 2 of the grown world: a newcomer that knows only its name and size.
fn newcomer_body(world: &World<'_>) {
    assert_eq!((world.rank(), world.size()), (2, 3));
    summed(world);
}

/// Waits for the break, shrinks with the break's list, checks the
/// successor and the retired world.
fn after_the_kill<'c>(world: &World<'c>) -> World<'c> {
    match world.context().next_event(Some(Duration::from_secs(30))) {
        Ok(Some(Event::WorldBroken { peer_rank, .. })) => assert_eq!(peer_rank, Some(2)),
        other => panic!("expected the break, got {:?}", other),
    }
    let shrunk = world
        .shrink(None, ShrinkMode::Abort, FORM_TIMEOUT)
        .expect("shrink");
    assert_eq!(
        (shrunk.name(), shrunk.rank(), shrunk.size()),
        (world.name(), world.rank(), 2)
    );
    assert_eq!(shrunk.epoch(), world.epoch() + 1);
    assert_eq!(world.state(), WorldState::Retired);
    let x = [1i64; 2];
    let mut y = [0i64; 2];
    match scope(|s| world.allreduce(s, &x, &mut y, ReduceOp::Sum).map(drop)) {
        Err(Error::InvalidArgument(detail)) => {
            assert!(detail.contains(&shrunk.epoch().to_string()), "{}", detail)
        }
        other => panic!("an operation on the retired world: {:?}", other),
    }
    summed(&shrunk);
    shrunk
}

fn shrink_and_grow_on(backend: Backend) {
    let name = unique("elastic");
    let survivor = Workers::spawn("survivor", &name, 1..2, 3, backend);
    let mut victim = Workers::spawn("victim", &name, 2..3, 3, backend);
    let ctx = context();
    let world = ctx
        .create_world_with(&name, 0, 3, backend, 0, FORM_TIMEOUT)
        .expect("create");
    summed(&world);
    assert!(fence(&world), "the fence before the kill");
    victim.kill(0);
    let shrunk = after_the_kill(&world);
    drop(world);
    // Excluding itself, or a rank the world does not have: refused, and
    // nothing changes.
    for bad in [[0usize], [5usize]] {
        match shrunk.shrink(Some(&bad), ShrinkMode::Default, FORM_TIMEOUT) {
            Err(Error::InvalidArgument(_)) => {}
            other => panic!("shrink excluding {:?}: {:?}", bad, other.map(|w| w.size())),
        }
    }
    assert_eq!(shrunk.state(), WorldState::Ready);
    let newcomer = Workers::spawn("newcomer", &name, 2..3, 3, backend);
    let grown = shrunk.grow(3, FORM_TIMEOUT).expect("grow");
    assert_eq!((grown.rank(), grown.size()), (0, 3));
    summed(&grown);
    drop(shrunk);
    drop(grown);
    survivor.join();
    newcomer.join();
}

#[test]
fn shrink_after_a_kill_then_grow_with_a_newcomer() {
    for backend in host_backends("shrink_after_a_kill_then_grow_with_a_newcomer") {
        println!("on {:?}", backend);
        shrink_and_grow_on(backend);
    }
}
