//! A [`prometheus`] collector of a multiworld context's metrics.
//!
//! ```no_run
//! use std::sync::Arc;
//! let ctx = Arc::new(multiworld::Context::from_env()?);
//! let registry = prometheus::Registry::new();
//! registry.register(Box::new(multiworld_prometheus::ContextCollector::new(ctx)))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use multiworld::{Context, MetricKind};
use prometheus::core::{Collector, Desc};
use prometheus::proto;

/// Collects one context's metrics: every `collect` (a scrape) takes a
/// snapshot. Its one descriptor (`mw_metrics`, labelled with a number of
/// its own) only identifies it in a registry: the series a context has
/// depend on what it did.
pub struct ContextCollector {
    ctx: Arc<Context>,
    desc: Desc,
}

impl ContextCollector {
    /// A collector of `ctx`'s metrics.
    pub fn new(ctx: Arc<Context>) -> ContextCollector {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed).to_string();
        let desc = Desc::new(
            "mw_metrics".into(),
            "multiworld's metrics of one context".into(),
            vec![],
            HashMap::from([("collector".to_string(), id)]),
        )
        .expect("a valid descriptor");
        ContextCollector { ctx, desc }
    }
}

fn label_pairs(labels: &[(String, String)]) -> Vec<proto::LabelPair> {
    labels
        .iter()
        .map(|(n, v)| {
            let mut p = proto::LabelPair::new();
            p.set_name(n.clone());
            p.set_value(v.clone());
            p
        })
        .collect()
}

impl Collector for ContextCollector {
    fn desc(&self) -> Vec<&Desc> {
        vec![&self.desc]
    }

    /// The snapshot's families; none when it fails (the registry has no
    /// way to say so).
    fn collect(&self) -> Vec<proto::MetricFamily> {
        let snapshot = match self.ctx.metrics() {
            Ok(s) => s,
            Err(_) => return Vec::new(),
        };
        let mut families: Vec<proto::MetricFamily> = Vec::new();
        for s in snapshot.series {
            if families
                .last()
                .map(|f| f.get_name() != s.name)
                .unwrap_or(true)
            {
                let mut f = proto::MetricFamily::new();
                f.set_name(s.name.clone());
                f.set_help(s.help.clone());
                f.set_field_type(match s.kind {
                    MetricKind::Counter => proto::MetricType::COUNTER,
                    MetricKind::Gauge => proto::MetricType::GAUGE,
                    MetricKind::Histogram => proto::MetricType::HISTOGRAM,
                });
                families.push(f);
            }
            let mut m = proto::Metric::new();
            m.set_label(label_pairs(&s.labels));
            match s.kind {
                MetricKind::Counter => {
                    let mut c = proto::Counter::new();
                    c.set_value(s.value);
                    m.set_counter(c);
                }
                MetricKind::Gauge => {
                    let mut g = proto::Gauge::new();
                    g.set_value(s.value);
                    m.set_gauge(g);
                }
                MetricKind::Histogram => {
                    let mut h = proto::Histogram::new();
                    h.set_sample_count(s.count);
                    h.set_sample_sum(s.value);
                    h.set_bucket(
                        s.buckets
                            .iter()
                            .map(|&(bound, count)| {
                                let mut b = proto::Bucket::new();
                                b.set_upper_bound(bound);
                                b.set_cumulative_count(count);
                                b
                            })
                            .collect(),
                    );
                    m.set_histogram(h);
                }
            }
            families.last_mut().expect("a family").mut_metric().push(m);
        }
        families
    }
}
