//! A 3-process serving pipeline that keeps serving when a worker dies.
//!
//! ```text
//! cargo run --example pipeline            # needs MW_REDIS_URL (tests/with_redis.sh)
//! ```
//!
//! The frontend (this process) starts two worker processes and shares one
//! two-member world with each: `<job>.w1` and `<job>.w2`. It sends every
//! request to the next live worker, which squares the numbers and sends them
//! back. Part way through, the frontend kills worker 2 with SIGKILL while
//! that worker holds a request: only world `w2` breaks, the pending receive
//! fails with `Error::WorldBroken`, and the frontend re-sends the request to
//! worker 1, so no request is lost. It then starts a replacement worker 2,
//! which forms a new incarnation (epoch) of `w2` in the background while
//! worker 1 keeps serving, and puts it back into rotation.
//!
//! The worlds run on UCX where the library has it, else on Gloo
//! ([`Backend::preferred_host`], what `Context::create_world` uses).
//!
//! Run as `pipeline worker <id> <world>` it is a worker (the frontend does
//! that itself).
use std::env;
use std::process::{Child, Command, ExitCode};
use std::thread;
use std::time::{Duration, Instant};

use multiworld::{scope, Backend, Config, Context, Error, Event, World};

/// Requests to serve.
const REQUESTS: usize = 40;
/// Worker 2 is killed during the first request it gets from this one on.
const KILL_AT: usize = 11;
const FORM_TIMEOUT: Option<Duration> = Some(Duration::from_secs(30));

/// A request or reply: `[sequence number, x0, x1, x2, x3]`; a negative
/// sequence number tells the worker to stop.
type Message = [f64; 5];

fn connect(role: &str) -> Result<Context, Error> {
    Config::new()
        .namespace("pipeline")
        // A killed process is noticed at once through its closed sockets;
        // the heartbeat catches hung or cut-off ones.
        .heartbeat_interval(Duration::from_millis(100))
        .heartbeat_timeout(Duration::from_secs(2))
        .connect()
        .map_err(|e| {
            eprintln!("{}: cannot connect (is MW_REDIS_URL set?): {}", role, e);
            e
        })
}

// ---- worker -----------------------------------------------------------------

fn worker(id: &str, world_name: &str) -> Result<(), Error> {
    let me = format!("worker {}", id);
    let ctx = connect(&me)?;
    let backend = Backend::preferred_host();
    // A replacement may find its predecessor's rank still claimed until the
    // dead process's heartbeat expires: retry for a while.
    let deadline = Instant::now() + Duration::from_secs(20);
    let world = loop {
        match ctx.create_world_with(world_name, 1, 2, backend, 0, FORM_TIMEOUT) {
            Ok(w) => break w,
            Err(Error::AlreadyExists(_)) if Instant::now() < deadline => {
                thread::sleep(Duration::from_millis(100))
            }
            Err(e) => return Err(e),
        }
    };
    println!(
        "{}: joined {} (epoch {}, {:?})",
        me,
        world.name(),
        world.epoch(),
        world.backend()
    );
    loop {
        let mut msg: Message = [0.0; 5];
        scope(|s| world.recv(s, &mut msg, 0)?.wait(None))?;
        if msg[0] < 0.0 {
            println!("{}: stopping", me);
            return Ok(());
        }
        thread::sleep(Duration::from_millis(30)); // the "model"
        let mut reply = msg;
        for x in &mut reply[1..] {
            *x *= *x;
        }
        scope(|s| world.send(s, &reply, 0)?.wait(None))?;
    }
}

// ---- frontend ---------------------------------------------------------------

fn spawn_worker(id: usize, world: &str) -> Child {
    Command::new(env::current_exe().expect("current_exe"))
        .args(["worker", &id.to_string(), world])
        .spawn()
        .expect("cannot start a worker process")
}

/// Sends `request` to `world`'s worker and waits for the reply. When
/// `kill` is given, that process is killed while it holds the request.
fn serve_one(
    world: &World<'_>,
    request: &Message,
    kill: Option<&mut Child>,
) -> Result<Message, Error> {
    let mut reply: Message = [0.0; 5];
    scope(|s| {
        let sent = world.send(s, request, 1)?;
        let received = world.recv(s, &mut reply, 1)?;
        sent.wait(None)?;
        if let Some(child) = kill {
            println!(
                "frontend: killing worker 2 (pid {}) during request {}",
                child.id(),
                request[0]
            );
            let _ = child.kill();
            let _ = child.wait();
        }
        received.wait(None)
    })?;
    Ok(reply)
}

fn frontend() -> Result<(), Error> {
    let job = format!("pipe{}", std::process::id());
    let names = [format!("{}.w1", job), format!("{}.w2", job)];
    let mut children = vec![spawn_worker(1, &names[0]), spawn_worker(2, &names[1])];
    let ctx = connect("frontend")?;
    let backend = Backend::preferred_host();
    let mut worlds: Vec<Option<World<'_>>> = Vec::new();
    for name in &names {
        worlds.push(Some(ctx.create_world_with(
            name,
            0,
            2,
            backend,
            0,
            FORM_TIMEOUT,
        )?));
    }
    println!(
        "frontend: serving {} requests with 2 workers over {:?}",
        REQUESTS, backend
    );

    let mut served_by = [0usize; 2];
    let mut next = 0usize;
    let mut killed_at = None;
    let ctx_ref = &ctx;
    let rejoin_name = names[1].clone();
    thread::scope(|ts| -> Result<(), Error> {
        let mut rejoin: Option<thread::ScopedJoinHandle<'_, Result<World<'_>, Error>>> = None;
        for seq in 1..=REQUESTS {
            // A replacement that finished forming goes back into rotation.
            if rejoin.as_ref().map_or(false, |h| h.is_finished()) {
                let world = rejoin.take().unwrap().join().expect("rejoin thread")?;
                println!(
                    "frontend: worker 2 is back in {} (epoch {}) at request {}",
                    world.name(),
                    world.epoch(),
                    seq
                );
                worlds[1] = Some(world);
            }
            let request: Message = [seq as f64, 1.0, 2.0, 3.0, seq as f64];
            let reply = loop {
                // The next live worker, round robin.
                let w = (0..2)
                    .map(|k| (next + k) % 2)
                    .find(|&k| worlds[k].is_some());
                let w = match w {
                    Some(w) => w,
                    None => return Err(Error::Cancelled("no worker left".to_string())),
                };
                next = w + 1;
                let kill = if w == 1 && seq >= KILL_AT && killed_at.is_none() {
                    killed_at = Some(seq);
                    Some(&mut children[1])
                } else {
                    None
                };
                match serve_one(worlds[w].as_ref().unwrap(), &request, kill) {
                    Ok(reply) => {
                        served_by[w] += 1;
                        break reply;
                    }
                    Err(Error::WorldBroken {
                        world,
                        peer_rank,
                        detail,
                    }) => {
                        println!(
                            "frontend: request {} failed on {} (peer rank {:?}): {}; retrying elsewhere",
                            seq, world, peer_rank, detail
                        );
                        worlds[w] = None; // destroys our side of the broken world
                        if w == 1 && rejoin.is_none() {
                            children[1] = spawn_worker(2, &rejoin_name);
                            let name = rejoin_name.clone();
                            rejoin = Some(ts.spawn(move || {
                                ctx_ref.create_world_with(&name, 0, 2, backend, 0, FORM_TIMEOUT)
                            }));
                        }
                    }
                    Err(other) => return Err(other),
                }
            };
            let want = [seq as f64, 1.0, 4.0, 9.0, (seq * seq) as f64];
            if reply != want {
                return Err(Error::Internal(format!(
                    "request {}: got {:?}, want {:?}",
                    seq, reply, want
                )));
            }
            thread::sleep(Duration::from_millis(20)); // let the replacement catch up
        }
        if let Some(handle) = rejoin.take() {
            let world = handle.join().expect("rejoin thread")?;
            println!(
                "frontend: worker 2 is back in {} (epoch {})",
                world.name(),
                world.epoch()
            );
            worlds[1] = Some(world);
        }
        Ok(())
    })?;

    while let Some(event) = ctx.next_event(Some(Duration::ZERO))? {
        if let Event::WorldBroken {
            world, peer_rank, ..
        } = event
        {
            println!(
                "frontend: event: world {} broke, blamed rank {:?}",
                world, peer_rank
            );
        }
    }
    // Stop the workers and wait for them.
    let stop: Message = [-1.0, 0.0, 0.0, 0.0, 0.0];
    for world in worlds.iter().flatten() {
        scope(|s| world.send(s, &stop, 1)?.wait(None))?;
    }
    for child in &mut children {
        let status = child.wait().expect("wait worker");
        if !status.success() {
            return Err(Error::Internal(format!("a worker exited with {}", status)));
        }
    }
    println!(
        "pipeline: OK, served {}/{} requests (worker 1: {}, worker 2: {}); \
         worker 2 was killed during request {} and rejoined",
        served_by[0] + served_by[1],
        REQUESTS,
        served_by[0],
        served_by[1],
        killed_at.unwrap_or(0)
    );
    if killed_at.is_none() || served_by[0] + served_by[1] != REQUESTS {
        return Err(Error::Internal("the fault was not exercised".to_string()));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = env::args().collect();
    let result = if args.len() == 4 && args[1] == "worker" {
        worker(&args[2], &args[3])
    } else {
        frontend()
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pipeline: {}", e);
            ExitCode::FAILURE
        }
    }
}
