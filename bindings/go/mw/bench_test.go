package mw_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/multiworld/multiworld/bindings/go/mw"
)

// Figures, not checks: go test -run '^$' -bench . ./mw

// soloWorld is a one-member world of the host backend.
func soloWorld(b *testing.B) (*mw.Context, *mw.World) {
	c, err := newContext()
	if err != nil {
		b.Fatal(err)
	}
	w, err := c.CreateWorld(context.Background(), strings.ReplaceAll(b.Name(), "/", "_")+strconv.Itoa(os.Getpid()), 0, 1, mw.HostBackend())
	if err != nil {
		c.Close()
		b.Fatal(err)
	}
	return c, w
}

// One barrier on a one-member world, issued and waited for: the cost the
// binding adds around the library's completion path.
func BenchmarkBarrierWait(b *testing.B) {
	c, w := soloWorld(b)
	defer c.Close()
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
	c, _ := soloWorld(b)
	defer c.Close()
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
