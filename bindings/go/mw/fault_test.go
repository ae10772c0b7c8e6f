package mw_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/multiworld/multiworld/bindings/go/mw"
)

func init() {
	// Joins its world, then waits to be killed.
	scenarios["sleeper"] = inWorld(func(ctx context.Context, w *mw.World) error {
		time.Sleep(2 * time.Minute)
		return errors.New("sleeper was not killed")
	})
	// Does one allreduce and a barrier with rank 0.
	scenarios["healthy"] = inWorld(func(ctx context.Context, w *mw.World) error {
		got := make([]float32, 2)
		if err := w.AllReduce(ctx, []float32{1, 2}, got, mw.Sum); err != nil {
			return err
		}
		if got[0] != 2 || got[1] != 4 {
			return fmt.Errorf("allreduce got %v", got)
		}
		return settle(ctx, w)
	})
	scenarios["cycles"] = cyclesScenario
}

// A member killed with SIGKILL breaks its world: the pending receive fails
// with ErrWorldBroken, an event names the world, new operations fail at
// once, and another world with another peer keeps working.
func TestBrokenWorld(t *testing.T) {
	nameA, nameB := worldName(t, "A"), worldName(t, "B")
	victim := spawn(t, "sleeper", nameA, 1, 2)
	peer := spawn(t, "healthy", nameB, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := newContext()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wA, err := c.CreateWorld(ctx, nameA, 0, 2, mw.HostBackend())
	if err != nil {
		t.Fatal(err)
	}
	wB, err := c.CreateWorld(ctx, nameB, 0, 2, mw.HostBackend())
	if err != nil {
		t.Fatal(err)
	}

	buf, _ := mw.NewBuffer[float32](1024)
	req, err := wA.RecvAsync(buf, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	err = req.Wait(wctx)
	wcancel()
	var e *mw.Error
	if !errors.Is(err, mw.ErrWorldBroken) || !errors.As(err, &e) || e.Code != mw.ErrWorldBroken {
		t.Fatalf("pending receive on the broken world: %v", err)
	}
	t.Logf("broken after %v: %v", time.Since(killed), err)

	ectx, ecancel := context.WithTimeout(ctx, 10*time.Second)
	ev, err := c.NextEvent(ectx)
	ecancel()
	if err != nil || ev.Type != mw.EventWorldBroken || ev.WorldName != nameA || ev.World != wA || ev.Reason != mw.ErrWorldBroken {
		t.Fatalf("event: %+v, %v", ev, err)
	}
	t.Logf("event: %v", ev)
	if wA.State() != mw.WorldBroken {
		t.Fatalf("state %v", wA.State())
	}
	start := time.Now()
	if err := wA.Send(ctx, []float32{1}, 1); !errors.Is(err, mw.ErrWorldBroken) || time.Since(start) > time.Second {
		t.Fatalf("send on a broken world: %v after %v", err, time.Since(start))
	}
	if _, err := wA.BarrierAsync(); !errors.Is(err, mw.ErrWorldBroken) {
		t.Fatalf("async barrier on a broken world: %v", err)
	}

	// The other world is untouched.
	got := make([]float32, 2)
	if err := wB.AllReduce(ctx, []float32{1, 2}, got, mw.Sum); err != nil || got[0] != 2 || got[1] != 4 {
		t.Fatalf("healthy world: %v %v", err, got)
	}
	if wB.State() != mw.WorldReady {
		t.Fatalf("healthy world state %v", wB.State())
	}
	if err := settle(ctx, wB); err != nil {
		t.Fatal(err)
	}
	peer.wait(t, 30*time.Second)
	wA.Close()
	wB.Close()
	c.Close()
	buf.Close()
	checkNoLeaks(t, c)
}

const cycles = 200

// cyclesScenario creates and closes `cycles` worlds of two members with
// an operation in each; rank 0 checks that nothing leaks.
func cyclesScenario(ctx context.Context, c *mw.Context, world string, rank, size int) error {
	one := func(i int) error {
		w, err := c.CreateWorld(ctx, fmt.Sprintf("%s-%d", world, i), rank, size, mw.HostBackend())
		if err != nil {
			return fmt.Errorf("cycle %d: %w", i, err)
		}
		defer w.Close()
		send, _ := mw.BufferFrom([]int64{int64(i), 1})
		recv, _ := mw.NewBuffer[int64](2)
		defer send.Close()
		defer recv.Close()
		r, err := w.AllReduceAsync(send, recv, mw.Sum)
		if err != nil {
			return err
		}
		if err := r.Wait(ctx); err != nil {
			return err
		}
		if got := values(recv); got[0] != int64(size*i) || got[1] != int64(size) {
			return fmt.Errorf("cycle %d: allreduce got %v", i, got)
		}
		return settle(ctx, w)
	}
	if err := one(-1); err != nil { // warm up: threads and connections that stay
		return err
	}
	var fds0, threads0 int
	if rank == 0 {
		fds0, threads0 = procCountsErr()
	}
	goroutines0 := runtime.NumGoroutine()
	start := time.Now()
	for i := 0; i < cycles; i++ {
		if err := one(i); err != nil {
			return err
		}
	}
	if rank != 0 {
		return nil
	}
	elapsed := time.Since(start)
	deadline := time.Now().Add(3 * time.Second)
	for {
		fds, threads := procCountsErr()
		goroutines := runtime.NumGoroutine()
		live, inflight := mw.LiveBuffers(), mw.InFlight(c)
		if fds <= fds0+2 && threads <= threads0+8 && goroutines <= goroutines0+2 && live == 0 && inflight == 0 {
			if testing.Verbose() {
				fmt.Printf("%d create/close cycles in %v: fds %d->%d threads %d->%d goroutines %d->%d\n",
					cycles, elapsed.Round(time.Millisecond), fds0, fds, threads0, threads, goroutines0, goroutines)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("leak after %d cycles: fds %d->%d threads %d->%d goroutines %d->%d, %d C buffers, %d requests",
				cycles, fds0, fds, threads0, threads, goroutines0, goroutines, live, inflight)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// 200 worlds created and closed with a peer process, without leaking
// descriptors, threads, goroutines, C buffers or requests.
func TestCreateCloseCycles(t *testing.T) { group(t, "cycles", 2) }

// Contexts created and closed, each with a world of one.
func TestContextCycles(t *testing.T) {
	const cycles = 50
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	one := func(i int) {
		c, err := newContext()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		w, err := c.CreateWorld(ctx, worldName(t, fmt.Sprint(i)), 0, 1, mw.HostBackend())
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			w.Close() // else Context.Close closes it
		}
		_ = c.Events() // starts and stops the event goroutine
	}
	one(-1)
	fds0, threads0 := procCounts(t)
	goroutines0 := runtime.NumGoroutine()
	start := time.Now()
	for i := 0; i < cycles; i++ {
		one(i)
	}
	elapsed := time.Since(start)
	deadline := time.Now().Add(3 * time.Second)
	for {
		fds, threads := procCounts(t)
		goroutines := runtime.NumGoroutine()
		if fds <= fds0+2 && threads <= threads0+8 && goroutines <= goroutines0+2 && mw.LiveBuffers() == 0 {
			t.Logf("%d context cycles in %v: fds %d->%d threads %d->%d goroutines %d->%d",
				cycles, elapsed.Round(time.Millisecond), fds0, fds, threads0, threads, goroutines0, goroutines)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("leak after %d context cycles: fds %d->%d threads %d->%d goroutines %d->%d",
				cycles, fds0, fds, threads0, threads, goroutines0, goroutines)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
