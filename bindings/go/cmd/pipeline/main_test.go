package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/multiworld/multiworld/bindings/go/internal/redistest"
)

func TestMain(m *testing.M) {
	if isWorker() { // the frontend started this test binary as a worker
		os.Exit(workerMain())
	}
	stop, err := redistest.Ensure()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pipeline tests need a redis-server:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

func check(t *testing.T, args ...string) summary {
	t.Helper()
	sum, err := run(args)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.killed {
		t.Fatal("worker 1 was not killed")
	}
	if sum.served[2] == 0 {
		t.Fatal("worker 2 served nothing")
	}
	return sum
}

// Worker 1 is killed a third of the way through; all requests are still
// served, the rest by worker 2.
func TestPipelineSurvivesKill(t *testing.T) {
	sum := check(t, "-requests", "150", "-kill-after", "50", "-len", "1024", "-heartbeat-timeout", "5s")
	t.Logf("served: %v", sum.served)
}

// The killed worker is replaced and its world formed again (a new epoch).
func TestPipelineRespawn(t *testing.T) {
	sum := check(t, "-requests", "300", "-kill-after", "50", "-len", "1024", "-respawn", "-heartbeat-timeout", "5s")
	t.Logf("served: %v", sum.served)
}
