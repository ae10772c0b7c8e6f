//! A context's metrics (README.md, "Metrics"): a snapshot as plain values
//! and as Prometheus' text exposition format. The `multiworld-prometheus`
//! crate serves them to the `prometheus` crate's registries.
use std::ffi::CStr;
use std::os::raw::c_char;
use std::ptr;

use multiworld_sys as sys;

use crate::error::{Error, Result};

/// A metric family's kind (`mw_metric_kind_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    /// A count that only grows.
    Counter,
    /// A value read when the snapshot was taken.
    Gauge,
    /// Observations counted in buckets, with their sum.
    Histogram,
}

/// One series of a snapshot.
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    /// The family's name, e.g. `mw_ops_total`.
    pub name: String,
    /// The family's help text.
    pub help: String,
    /// The family's kind.
    pub kind: MetricKind,
    /// Label names and this series' values, in the family's order.
    pub labels: Vec<(String, String)>,
    /// A counter's or gauge's value; a histogram's sum.
    pub value: f64,
    /// A histogram's observations; 0 otherwise.
    pub count: u64,
    /// A histogram's buckets: (upper bound, observations at most it); the
    /// +Inf bucket is `count`. Empty otherwise.
    pub buckets: Vec<(f64, u64)>,
}

impl Metric {
    /// The value of label `name`, if the series has it.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A snapshot of a context's metrics: its series, and the same as text.
#[derive(Clone, Debug, PartialEq)]
pub struct Metrics {
    /// Every series, in families as the text lists them.
    pub series: Vec<Metric>,
    /// Prometheus' text exposition format, version 0.0.4.
    pub text: String,
}

/// Frees the C snapshot however the reading ends.
struct Snapshot(*mut sys::mw_metrics_t);

impl Drop for Snapshot {
    fn drop(&mut self) {
        // SAFETY: the snapshot came from mw_metrics_snapshot and is freed once.
        unsafe { sys::mw_metrics_free(self.0) }
    }
}

fn text_of(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the library hands out NUL-terminated strings that live until
    // mw_metrics_free, which runs after this copy.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn check(status: sys::mw_status_t) -> Result<()> {
    if status == sys::MW_OK {
        Ok(())
    } else {
        Err(Error::last(status))
    }
}

/// `mw_metrics_snapshot` of `ctx`, read whole.
pub(crate) fn snapshot(ctx: *mut sys::mw_context_t) -> Result<Metrics> {
    let mut raw = ptr::null_mut();
    // SAFETY: `ctx` is a live context handle (the caller's `Context`).
    check(unsafe { sys::mw_metrics_snapshot(ctx, &mut raw) })?;
    let snap = Snapshot(raw);
    // SAFETY: a live snapshot.
    let n = unsafe { sys::mw_metrics_count(snap.0) };
    let mut series = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: all-zero is a valid mw_metric_info_t (null pointers, zeros).
        let mut info: sys::mw_metric_info_t = unsafe { std::mem::zeroed() };
        info.size = std::mem::size_of::<sys::mw_metric_info_t>();
        // SAFETY: i < count, and `info` is as large as it says.
        check(unsafe { sys::mw_metrics_get(snap.0, i, &mut info) })?;
        let kind = match info.kind {
            sys::MW_METRIC_COUNTER => MetricKind::Counter,
            sys::MW_METRIC_GAUGE => MetricKind::Gauge,
            _ => MetricKind::Histogram,
        };
        // SAFETY: the arrays hold label_count and bucket_count elements and
        // live until mw_metrics_free; empty ones may be null.
        let (names, values, bounds, counts) = unsafe {
            (
                slice(info.label_names, info.label_count),
                slice(info.label_values, info.label_count),
                slice(info.bucket_bounds, info.bucket_count),
                slice(info.bucket_counts, info.bucket_count),
            )
        };
        series.push(Metric {
            name: text_of(info.name),
            help: text_of(info.help),
            kind,
            labels: names
                .iter()
                .zip(values)
                .map(|(n, v)| (text_of(*n), text_of(*v)))
                .collect(),
            value: info.value,
            count: info.count,
            buckets: bounds.iter().copied().zip(counts.iter().copied()).collect(),
        });
    }
    let mut needed = 0usize;
    // SAFETY: a live snapshot; a null buffer asks for the size.
    check(unsafe { sys::mw_metrics_text(snap.0, ptr::null_mut(), 0, &mut needed) })?;
    let mut buf = vec![0u8; needed];
    // SAFETY: `buf` holds `needed` bytes.
    check(unsafe {
        sys::mw_metrics_text(
            snap.0,
            buf.as_mut_ptr() as *mut c_char,
            needed,
            ptr::null_mut(),
        )
    })?;
    buf.truncate(needed.saturating_sub(1));
    Ok(Metrics {
        series,
        text: String::from_utf8_lossy(&buf).into_owned(),
    })
}

/// # Safety
/// `p` points at `n` elements (or is null with `n` 0).
unsafe fn slice<'a, T>(p: *const T, n: usize) -> &'a [T] {
    if p.is_null() || n == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(p, n)
    }
}
