package mw_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/multiworld/multiworld/bindings/go/mw"
)

// A solo world's allreduces in the context's snapshot: the counter, the
// histogram and its buckets, and the same in the text.
func TestMetricsCountTheOperations(t *testing.T) {
	const rounds = 6
	c, w := soloWorld(t, mw.HostBackend())
	sum := make([]float32, 4)
	for i := 0; i < rounds; i++ {
		if err := w.AllReduce(context.Background(), make([]float32, 4), sum, mw.Sum); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := c.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	backend := mw.HostBackend().String()
	var ops, seconds *mw.Metric
	for i := range snap.Series {
		s := &snap.Series[i]
		if s.Label("backend") == backend && s.Label("op") == "allreduce" {
			switch s.Name {
			case "mw_ops_total":
				ops = s
			case "mw_op_seconds":
				seconds = s
			}
		}
	}
	if ops == nil || ops.Kind != mw.MetricCounter || ops.Value != rounds {
		t.Fatalf("mw_ops_total of allreduce: %+v", ops)
	}
	if seconds == nil || seconds.Kind != mw.MetricHistogram || seconds.Count != rounds || len(seconds.Buckets) == 0 {
		t.Fatalf("mw_op_seconds of allreduce: %+v", seconds)
	}
	for i := 1; i < len(seconds.Buckets); i++ {
		if seconds.Buckets[i].Count < seconds.Buckets[i-1].Count || seconds.Buckets[i].UpperBound <= seconds.Buckets[i-1].UpperBound {
			t.Fatalf("buckets not cumulative and increasing: %+v", seconds.Buckets)
		}
	}
	line := fmt.Sprintf("mw_ops_total{backend=%q,op=\"allreduce\"} %d\n", backend, rounds)
	if !strings.Contains(snap.Text, line) {
		t.Fatalf("the text lacks %q:\n%s", line, snap.Text)
	}
}

func TestMetricsOffAndClosed(t *testing.T) {
	c, err := newContext(mw.WithConfig("metrics", "off"))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.Metrics()
	if err != nil || len(snap.Series) != 0 || snap.Text != "" {
		t.Fatalf("metrics off: %+v, %v", snap, err)
	}
	c.Close()
	if _, err := c.Metrics(); err == nil {
		t.Fatal("a closed context's metrics")
	}
}
