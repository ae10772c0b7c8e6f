//! World settings through `WorldParams` (`mw_world_create_with`) on a real
//! redis-server (`tests/with_redis.sh`): a world's own operation time limit
//! overrides the context's either way, and a setting the context cannot
//! honour is refused by name.
mod common;

use std::time::{Duration, Instant};

use multiworld::{Config, Error, LogLevel, OpTimeout, WorldParams, WorldState};

fn context(op_timeout: Option<Duration>, path_failover: &str) -> multiworld::Context {
    Config::new()
        .namespace("mw-rs-test")
        .heartbeat_interval(Duration::from_millis(100))
        .heartbeat_timeout(Duration::from_secs(3))
        .log_level(LogLevel::Error)
        .op_timeout(op_timeout)
        .set("path_failover", path_failover)
        .connect()
        .expect("context")
}

#[test]
fn a_worlds_op_timeout_breaks_it_where_the_context_has_none() {
    let ctx = context(None, "on");
    let params = WorldParams::new(&common::unique("own-limit"), 0, 1)
        .timeout(common::FORM_TIMEOUT)
        .op_timeout(OpTimeout::Limit(Duration::from_millis(300)));
    let world = ctx.create_world_from(&params).expect("world");
    let mut buf = [0i32; 4];
    let start = Instant::now();
    let err = multiworld::scope(|s| {
        world
            .recv(s, &mut buf, 0)?
            .wait(Some(Duration::from_secs(10)))
    })
    .unwrap_err();
    match &err {
        Error::WorldBroken { detail, .. } => {
            assert!(detail.contains("op_timeout_ms=300"), "{}", detail)
        }
        other => panic!("recv past the world's limit: {:?}", other),
    }
    assert!(start.elapsed() >= Duration::from_millis(250));
    assert_eq!(world.state(), WorldState::Broken);
}

#[test]
fn an_unlimited_world_outlives_the_contexts_op_timeout() {
    let ctx = context(Some(Duration::from_millis(200)), "on");
    let params = WorldParams::new(&common::unique("no-limit"), 0, 1)
        .timeout(common::FORM_TIMEOUT)
        .op_timeout(OpTimeout::Unlimited);
    let world = ctx.create_world_from(&params).expect("world");
    let msg = [7i32, 8];
    let mut got = [0i32; 2];
    multiworld::scope(|s| -> multiworld::Result<()> {
        let r = world.recv(s, &mut got, 0)?;
        std::thread::sleep(Duration::from_millis(600)); // three of the context's limits
        world
            .send(s, &msg, 0)?
            .wait(Some(Duration::from_secs(10)))?;
        r.wait(Some(Duration::from_secs(10)))
    })
    .expect("late message");
    assert_eq!(got, msg);
    assert_eq!(world.state(), WorldState::Ready);
}

#[test]
fn settings_the_context_cannot_honour_are_refused_by_name() {
    let ctx = context(None, "off");
    let params = WorldParams::new(&common::unique("failover"), 0, 1)
        .timeout(common::FORM_TIMEOUT)
        .path_failover(true);
    match ctx.create_world_from(&params) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("MW_PATH_FAILOVER_ON"), "{}", m),
        other => panic!(
            "failover on where the context has it off: {:?}",
            other.map(|_| ())
        ),
    }
    let params = WorldParams::new(&common::unique("one-path"), 0, 1)
        .timeout(common::FORM_TIMEOUT)
        .path_failover(false);
    assert_eq!(
        ctx.create_world_from(&params).expect("world").state(),
        WorldState::Ready
    );
}
