package mw

/*
#include <stdlib.h>
#include <multiworld/multiworld.h>

// Element i of a C array of strings (cgo cannot index a pointer).
static const char* mwgo_string_at(const char* const* a, size_t i) { return a[i]; }
static double mwgo_double_at(const double* a, size_t i) { return a[i]; }
static uint64_t mwgo_u64_at(const uint64_t* a, size_t i) { return a[i]; }
*/
import "C"

import "unsafe"

// MetricKind is a metric family's kind (mw_metric_kind_t).
type MetricKind int

// The kinds of mw_metric_kind_t.
const (
	MetricCounter   MetricKind = C.MW_METRIC_COUNTER
	MetricGauge     MetricKind = C.MW_METRIC_GAUGE
	MetricHistogram MetricKind = C.MW_METRIC_HISTOGRAM
)

// Bucket is one bucket of a histogram: the observations at most UpperBound
// (cumulative). The +Inf bucket is the series' Count.
type Bucket struct {
	UpperBound float64
	Count      uint64
}

// Metric is one series of a snapshot: its family's name, help and kind,
// its labels (names and values in the family's order), and its value (a
// histogram's sum); a histogram also has its observation count and buckets.
type Metric struct {
	Name        string
	Help        string
	Kind        MetricKind
	LabelNames  []string
	LabelValues []string
	Value       float64
	Count       uint64
	Buckets     []Bucket
}

// Label is the value of the label `name`, "" when the series has none.
func (m Metric) Label(name string) string {
	for i, n := range m.LabelNames {
		if n == name {
			return m.LabelValues[i]
		}
	}
	return ""
}

// Metrics is a snapshot of a context's metrics (README.md, "Metrics"):
// its series and the same as Prometheus' text exposition format 0.0.4.
type Metrics struct {
	Series []Metric
	Text   string
}

// Metrics takes a snapshot of the context's metrics (mw_metrics_snapshot);
// empty with the config key metrics=off. The mwprom package serves them to
// client_golang.
func (c *Context) Metrics() (*Metrics, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.h == nil {
		return nil, closedError(ErrInvalidArgument, "context")
	}
	var m *C.mw_metrics_t
	if err := call(func() C.mw_status_t { return C.mw_metrics_snapshot(c.h, &m) }); err != nil {
		return nil, err
	}
	defer C.mw_metrics_free(m)
	n := int(C.mw_metrics_count(m))
	out := &Metrics{Series: make([]Metric, 0, n)}
	for i := 0; i < n; i++ {
		var info C.mw_metric_info_t
		info.size = C.size_t(unsafe.Sizeof(info))
		if err := call(func() C.mw_status_t { return C.mw_metrics_get(m, C.size_t(i), &info) }); err != nil {
			return nil, err
		}
		s := Metric{Name: C.GoString(info.name), Help: C.GoString(info.help), Kind: MetricKind(info.kind),
			Value: float64(info.value), Count: uint64(info.count)}
		for j := C.size_t(0); j < info.label_count; j++ {
			s.LabelNames = append(s.LabelNames, C.GoString(C.mwgo_string_at(info.label_names, j)))
			s.LabelValues = append(s.LabelValues, C.GoString(C.mwgo_string_at(info.label_values, j)))
		}
		for j := C.size_t(0); j < info.bucket_count; j++ {
			s.Buckets = append(s.Buckets, Bucket{float64(C.mwgo_double_at(info.bucket_bounds, j)),
				uint64(C.mwgo_u64_at(info.bucket_counts, j))})
		}
		out.Series = append(out.Series, s)
	}
	var needed C.size_t
	if err := call(func() C.mw_status_t { return C.mw_metrics_text(m, nil, 0, &needed) }); err != nil {
		return nil, err
	}
	buf := C.malloc(needed)
	defer C.free(buf)
	if err := call(func() C.mw_status_t { return C.mw_metrics_text(m, (*C.char)(buf), needed, nil) }); err != nil {
		return nil, err
	}
	out.Text = C.GoString((*C.char)(buf))
	return out, nil
}
