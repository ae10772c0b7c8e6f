// Package mwprom serves a multiworld context's metrics (README.md,
// "Metrics") to Prometheus' client_golang:
//
//	prometheus.MustRegister(mwprom.NewCollector(ctx))
//	http.Handle("/metrics", promhttp.Handler())
//
// It is a module of its own, so that the mw package keeps no dependency
// beyond the C library. In this tree it builds against Debian's
// golang-github-prometheus-client-golang-dev in GOPATH mode (ctest
// go_mwprom_test).
package mwprom

import (
	"github.com/multiworld/multiworld/bindings/go/mw"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector is a prometheus.Collector of one context's metrics: every
// Collect (a scrape) takes a snapshot (mw.Context.Metrics). It is an
// unchecked collector: which series exist depends on what the context did,
// so Describe sends nothing. Unregister it before closing the context.
type Collector struct {
	ctx *mw.Context
}

// NewCollector collects ctx's metrics.
func NewCollector(ctx *mw.Context) *Collector { return &Collector{ctx: ctx} }

// Describe sends nothing: the collector is unchecked.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect sends every series of a fresh snapshot; a snapshot that fails
// (the context closed) is reported as an invalid metric, which fails the
// scrape with its error.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	snap, err := c.ctx.Metrics()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(prometheus.NewDesc("mw_metrics", "multiworld's metrics", nil, nil), err)
		return
	}
	descs := map[string]*prometheus.Desc{}
	for _, s := range snap.Series {
		d, ok := descs[s.Name]
		if !ok {
			d = prometheus.NewDesc(s.Name, s.Help, s.LabelNames, nil)
			descs[s.Name] = d
		}
		var m prometheus.Metric
		switch s.Kind {
		case mw.MetricCounter:
			m, err = prometheus.NewConstMetric(d, prometheus.CounterValue, s.Value, s.LabelValues...)
		case mw.MetricGauge:
			m, err = prometheus.NewConstMetric(d, prometheus.GaugeValue, s.Value, s.LabelValues...)
		default:
			buckets := make(map[float64]uint64, len(s.Buckets))
			for _, b := range s.Buckets {
				buckets[b.UpperBound] = b.Count
			}
			m, err = prometheus.NewConstHistogram(d, s.Count, s.Value, buckets, s.LabelValues...)
		}
		if err != nil {
			m = prometheus.NewInvalidMetric(d, err)
		}
		ch <- m
	}
}
