//! A context's metrics through the safe crate: a solo world's allreduces
//! in the snapshot's series and text, against a real redis-server.
mod common;

use common::{context, unique, FORM_TIMEOUT};
use multiworld::{scope, Backend, Config, LogLevel, MetricKind, ReduceOp};

const ROUNDS: u64 = 5;

#[test]
fn metrics_count_a_worlds_operations() {
    let ctx = context();
    let world = ctx
        .create_world(&unique("metered"), 0, 1, FORM_TIMEOUT)
        .expect("world");
    let send = vec![1.0f32; 16];
    let mut recv = vec![0.0f32; 16];
    for _ in 0..ROUNDS {
        scope(|s| {
            world
                .allreduce(s, &send, &mut recv, ReduceOp::Sum)
                .expect("issue")
                .wait(None)
                .expect("allreduce")
        });
    }
    let backend = match Backend::preferred_host() {
        Backend::Ucx => "ucx",
        _ => "gloo",
    };
    let metrics = ctx.metrics().expect("snapshot");
    let find = |name: &str| {
        metrics.series.iter().find(|m| {
            m.name == name
                && m.label("backend") == Some(backend)
                && m.label("op") == Some("allreduce")
        })
    };
    let ops = find("mw_ops_total").expect("mw_ops_total");
    assert_eq!(ops.kind, MetricKind::Counter);
    assert_eq!(ops.value, ROUNDS as f64);
    assert_eq!(ops.labels[0].0, "backend");
    let seconds = find("mw_op_seconds").expect("mw_op_seconds");
    assert_eq!(seconds.kind, MetricKind::Histogram);
    assert_eq!(seconds.count, ROUNDS);
    assert!(seconds.value > 0.0);
    assert!(seconds
        .buckets
        .windows(2)
        .all(|b| b[0].0 < b[1].0 && b[0].1 <= b[1].1));
    let line = format!(
        "mw_ops_total{{backend=\"{}\",op=\"allreduce\"}} {}\n",
        backend, ROUNDS
    );
    assert!(
        metrics.text.contains(&line),
        "{} lacks {}",
        metrics.text,
        line
    );
}

#[test]
fn metrics_off_is_empty() {
    let _ = context(); // checks MW_REDIS_URL
    let ctx = Config::new()
        .namespace("mw-rs-test")
        .log_level(LogLevel::Error)
        .set("metrics", "off")
        .connect()
        .expect("context");
    let metrics = ctx.metrics().expect("snapshot");
    assert!(metrics.series.is_empty());
    assert!(metrics.text.is_empty());
}
