package mw_test

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/multiworld/multiworld/bindings/go/mw"
)

// Figures, not checks: go test -run '^$' -bench . ./mw

// One barrier on a one-member world, issued and waited for: the cost the
// binding adds around the library's completion path.
func BenchmarkBarrierWait(b *testing.B) {
	_, w := soloWorld(b, mw.HostBackend())
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := w.BarrierAsync()
		if err == nil {
			err = r.Wait(ctx)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// The CPU time and voluntary context switches, per second, of this whole
// process while a Context with one world and an event reader sits idle
// (the library's heartbeat included).
func BenchmarkIdleContext(b *testing.B) {
	c, _ := soloWorld(b, mw.HostBackend())
	_ = c.Events()
	time.Sleep(200 * time.Millisecond)
	cpu0, sw0, t0 := cpuTime(), switches(), time.Now()
	for i := 0; i < b.N; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	secs := time.Since(t0).Seconds()
	b.ReportMetric(float64(cpuTime()-cpu0)/secs/1e3, "cpu-us/s")
	b.ReportMetric(float64(switches()-sw0)/secs, "switches/s")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// switches sums voluntary context switches over the process's threads.
func switches() int {
	n := 0
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	for _, f := range tasks {
		n += statusField(f, "voluntary_ctxt_switches")
	}
	return n
}
