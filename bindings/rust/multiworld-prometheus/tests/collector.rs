//! The collector in a registry of the `prometheus` crate, against a real
//! redis-server ($MW_REDIS_URL, from tests/with_redis.sh).
use std::sync::Arc;
use std::time::Duration;

use multiworld::{scope, Config, LogLevel, ReduceOp};
use multiworld_prometheus::ContextCollector;
use prometheus::proto::MetricType;
use prometheus::{Encoder, Registry, TextEncoder};

#[test]
fn a_registry_gathers_the_contexts_metrics() {
    assert!(
        std::env::var_os("MW_REDIS_URL").is_some(),
        "run through tests/with_redis.sh"
    );
    let ctx = Arc::new(
        Config::new()
            .namespace("mw-rs-prom")
            .log_level(LogLevel::Error)
            .connect()
            .expect("context"),
    );
    {
        let world = ctx
            .create_world(
                &format!("prom{}", std::process::id()),
                0,
                1,
                Some(Duration::from_secs(30)),
            )
            .expect("world");
        let send = vec![1.0f32; 8];
        let mut recv = vec![0.0f32; 8];
        for _ in 0..3 {
            scope(|s| {
                world
                    .allreduce(s, &send, &mut recv, ReduceOp::Sum)
                    .expect("issue")
                    .wait(None)
                    .expect("allreduce")
            });
        }
    }
    let registry = Registry::new();
    registry
        .register(Box::new(ContextCollector::new(ctx.clone())))
        .expect("register");
    let families = registry.gather();
    let ops = families
        .iter()
        .find(|f| f.get_name() == "mw_ops_total")
        .expect("mw_ops_total");
    assert_eq!(ops.get_field_type(), MetricType::COUNTER);
    let allreduce = ops
        .get_metric()
        .iter()
        .find(|m| {
            m.get_label()
                .iter()
                .any(|l| l.get_name() == "op" && l.get_value() == "allreduce")
        })
        .expect("the allreduce series");
    assert_eq!(allreduce.get_counter().get_value(), 3.0);
    let hist = families
        .iter()
        .find(|f| f.get_name() == "mw_op_seconds")
        .expect("mw_op_seconds");
    assert_eq!(hist.get_field_type(), MetricType::HISTOGRAM);
    let mut text = Vec::new();
    TextEncoder::new()
        .encode(&families, &mut text)
        .expect("encode");
    let text = String::from_utf8(text).expect("utf-8");
    assert!(text.contains("# TYPE mw_op_seconds histogram"), "{}", text);
    assert!(text.contains("mw_store_up 1"), "{}", text);
}
