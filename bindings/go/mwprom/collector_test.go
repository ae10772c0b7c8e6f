package mwprom_test

import (
	"context"
	"testing"

	"github.com/multiworld/multiworld/bindings/go/mw"
	"github.com/multiworld/multiworld/bindings/go/mwprom"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

const rounds = 5

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// A one-member world's allreduces, gathered through a client_golang
// registry: the counter, the histogram and a gauge, as client_golang
// models them. Redis comes from $MW_REDIS_URL.
func TestCollectorGathersTheContextsMetrics(t *testing.T) {
	c, err := mw.NewContext(mw.WithBindAddress("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	w, err := c.CreateWorld(ctx, "mwprom", 0, 1, mw.HostBackend())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sum := make([]float32, 8)
	for i := 0; i < rounds; i++ {
		if err := w.AllReduce(ctx, make([]float32, 8), sum, mw.Sum); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	collector := mwprom.NewCollector(c)
	reg.MustRegister(collector)
	defer reg.Unregister(collector)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	backend := mw.HostBackend().String()
	ops := byName["mw_ops_total"]
	if ops == nil || ops.GetType() != dto.MetricType_COUNTER {
		t.Fatalf("no counter mw_ops_total in %v", families)
	}
	found := false
	for _, m := range ops.GetMetric() {
		if label(m, "op") == "allreduce" && label(m, "backend") == backend {
			found = m.GetCounter().GetValue() == rounds
		}
	}
	if !found {
		t.Errorf("mw_ops_total{backend=%q,op=\"allreduce\"} is not %d: %v", backend, rounds, ops)
	}
	hist := byName["mw_op_seconds"]
	if hist == nil || hist.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("no histogram mw_op_seconds")
	}
	for _, m := range hist.GetMetric() {
		if label(m, "op") == "allreduce" && m.GetHistogram().GetSampleCount() != rounds {
			t.Errorf("mw_op_seconds{op=\"allreduce\"} counts %d, not %d", m.GetHistogram().GetSampleCount(), rounds)
		}
	}
	if up := byName["mw_store_up"]; up == nil || up.GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Errorf("mw_store_up is not the gauge 1: %v", up)
	}
}

// A closed context fails the scrape rather than serving stale numbers.
func TestCollectorOfAClosedContextFailsTheScrape(t *testing.T) {
	c, err := mw.NewContext(mw.WithBindAddress("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(mwprom.NewCollector(c))
	if _, err := reg.Gather(); err == nil {
		t.Error("gathering a closed context's metrics succeeded")
	}
}
