package mw_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/multiworld/multiworld/bindings/go/mw"
)

func TestVersion(t *testing.T) {
	major, minor, _ := mw.Version()
	if major != mw.HeaderVersionMajor || minor != mw.HeaderVersionMinor {
		t.Fatalf("library %d.%d, header %d.%d", major, minor, mw.HeaderVersionMajor, mw.HeaderVersionMinor)
	}
	if err := mw.CheckVersion(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(mw.VersionString(), "0.") {
		t.Fatalf("version string %q", mw.VersionString())
	}
	if !mw.Gloo.Available() {
		t.Fatal("gloo backend not available")
	}
}

func TestErrorsAreValues(t *testing.T) {
	codes := []mw.Code{mw.ErrInvalidArgument, mw.ErrNotFound, mw.ErrAlreadyExists, mw.ErrTimeout,
		mw.ErrWorldBroken, mw.ErrStore, mw.ErrBackend, mw.ErrUnsupported, mw.ErrCancelled,
		mw.ErrInternal, mw.ErrNoMemory}
	for i, code := range codes {
		if int(code) != -(i + 1) {
			t.Errorf("%v = %d, want %d", code, int(code), -(i + 1))
		}
		if !strings.HasPrefix(code.String(), "MW_ERR_") {
			t.Errorf("code %d named %q", int(code), code.String())
		}
		var err error = &mw.Error{Code: code, Msg: "x"}
		wrapped := fmt.Errorf("context: %w", err)
		for _, other := range codes {
			if got := errors.Is(wrapped, other); got != (other == code) {
				t.Errorf("errors.Is(%v, %v) = %v", code, other, got)
			}
		}
		var e *mw.Error
		if !errors.As(wrapped, &e) || e.Code != code {
			t.Errorf("errors.As lost the code of %v", code)
		}
	}
}

func TestBadConfig(t *testing.T) {
	_, err := newContext(mw.WithConfig("no_such_key", "1"))
	if !errors.Is(err, mw.ErrInvalidArgument) {
		t.Fatalf("unknown key: %v", err)
	}
	_, err = newContext(mw.WithHeartbeat(-time.Second, time.Second))
	if !errors.Is(err, mw.ErrInvalidArgument) {
		t.Fatalf("negative heartbeat: %v", err)
	}
	start := time.Now()
	_, err = newContext(mw.WithRedisURL("redis://127.0.0.1:1"), mw.WithStoreTimeout(300*time.Millisecond))
	if !errors.Is(err, mw.ErrStore) {
		t.Fatalf("unreachable redis: %v", err)
	}
	t.Logf("unreachable redis failed after %v: %v", time.Since(start), err)
}

func TestHalfFloats(t *testing.T) {
	for _, f := range []float32{0, 1, -2.5, 0.333251953125, 65504, 6.1035156e-05, 5.9604645e-08, -1e-3} {
		if got := mw.F16From(f).Float32(); math.Abs(float64(got-f)) > math.Abs(float64(f))/1024+1e-7 {
			t.Errorf("F16 %v -> %v", f, got)
		}
	}
	if mw.F16From(1) != 0x3c00 || mw.F16From(-2) != 0xc000 || mw.F16From(1e6) != 0x7c00 {
		t.Errorf("F16 bit patterns: %#x %#x %#x", mw.F16From(1), mw.F16From(-2), mw.F16From(1e6))
	}
	if mw.F16From(2049) != mw.F16From(2048) || mw.F16From(2051) != mw.F16From(2052) {
		t.Error("F16 does not round to even")
	}
	if !math.IsNaN(float64(mw.F16From(float32(math.NaN())).Float32())) {
		t.Error("F16 NaN")
	}
	if mw.BF16From(1) != 0x3f80 || mw.BF16From(3).Float32() != 3 {
		t.Error("BF16 bit patterns")
	}
	if !math.IsNaN(float64(mw.BF16From(float32(math.NaN())).Float32())) {
		t.Error("BF16 NaN")
	}
}

func TestBuffer(t *testing.T) {
	before := mw.LiveBuffers()
	b, err := mw.BufferFrom([]float64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := values(b); b.Len() != 3 || b.DType() != mw.Float64 || got[2] != 3 {
		t.Fatalf("buffer %v %v %v", b.Len(), b.DType(), got)
	}
	if n, err := b.CopyFrom([]float64{9, 8, 7, 6}); n != 3 || err != nil {
		t.Fatalf("CopyFrom of 4 into 3: %d %v", n, err)
	}
	dst := make([]float64, 2)
	if n, err := b.CopyTo(dst); n != 2 || err != nil || dst[0] != 9 || dst[1] != 8 {
		t.Fatalf("CopyTo into 2: %d %v %v", n, err, dst)
	}
	errF := errors.New("from f")
	if err := b.With(func(e []float64) error { e[2] = 5; return errF }); err != errF {
		t.Fatalf("With returned %v, want f's error", err)
	}
	if got := values(b); got[2] != 5 {
		t.Fatalf("write through With: %v", got)
	}
	z, _ := mw.NewBuffer[mw.BF16](0)
	if z.Len() != 0 || len(values(z)) != 0 || z.DType() != mw.BFloat16 {
		t.Fatal("empty buffer")
	}
	if _, err := mw.NewBuffer[int8](-1); !errors.Is(err, mw.ErrInvalidArgument) {
		t.Fatalf("negative length: %v", err)
	}
	if mw.LiveBuffers() != before+2 {
		t.Fatalf("live buffers %d, want %d", mw.LiveBuffers(), before+2)
	}

	// Close inside With: the memory stays until With returns.
	b.With(func(e []float64) error {
		b.Close()
		e[0] = 4
		if mw.LiveBuffers() != before+2 {
			t.Error("Close freed the memory under a With")
		}
		return nil
	})
	if mw.LiveBuffers() != before+1 {
		t.Fatalf("memory not freed when With returned: %d live, want %d", mw.LiveBuffers(), before+1)
	}

	// Every use after Close is an error wrapping ErrClosed, never an
	// access to the freed memory.
	uses := map[string]error{
		"With": b.With(func([]float64) error {
			t.Error("With ran f on a closed buffer")
			return nil
		}),
	}
	_, uses["CopyFrom"] = b.CopyFrom([]float64{1})
	_, uses["CopyTo"] = b.CopyTo(dst)
	_, uses["Values"] = b.Values()
	for what, err := range uses {
		if !errors.Is(err, mw.ErrClosed) || !errors.Is(err, mw.ErrInvalidArgument) {
			t.Errorf("%s after Close: %v, want ErrClosed", what, err)
		}
	}
	b.Close()
	z.Close()
	if mw.LiveBuffers() != before {
		t.Fatal("Close did not free")
	}
}

// A world of one member: every operation runs without peers.
func TestSingleRank(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, w := soloWorld(t, mw.HostBackend())
	if w.Rank() != 0 || w.Size() != 1 || w.Epoch() < 1 || w.State() != mw.WorldReady || w.Backend() != mw.HostBackend() {
		t.Fatalf("world %v state %v", w, w.State())
	}
	recv := make([]int32, 3)
	if err := w.AllReduce(ctx, []int32{1, 2, 3}, recv, mw.Sum); err != nil || recv[2] != 3 {
		t.Fatalf("allreduce: %v %v", err, recv)
	}
	inplace := []float32{4, 5}
	if err := w.AllReduce(ctx, inplace, inplace, mw.Max); err != nil || inplace[1] != 5 {
		t.Fatalf("in-place allreduce: %v %v", err, inplace)
	}
	if err := w.Barrier(ctx); err != nil {
		t.Fatal(err)
	}

	// Bad arguments fail at issue with ErrInvalidArgument and a message.
	bad := map[string]error{
		"dst out of range": w.Send(ctx, []int32{1}, 3),
		"unsupported type": w.Send(ctx, []int16{1}, 0),
		"not a slice":      w.Send(ctx, 7, 0),
		"nil buffer":       w.Recv(ctx, nil, 0),
		"dtype mismatch":   w.AllReduce(ctx, []int32{1}, []int64{0}, mw.Sum),
		"length mismatch":  w.AllReduce(ctx, []int32{1, 2}, make([]int32, 3), mw.Sum),
		"bad reduce op":    w.AllReduce(ctx, []int32{1}, make([]int32, 1), mw.ReduceOp(9)),
		"bad root":         w.Broadcast(ctx, []int32{1}, -2),
	}
	for what, err := range bad {
		var e *mw.Error
		if !errors.As(err, &e) || e.Code != mw.ErrInvalidArgument || e.Msg == "" {
			t.Errorf("%s: %v", what, err)
		}
	}
	if _, err := c.CreateWorld(ctx, "bad name!", 0, 1, mw.HostBackend()); !errors.Is(err, mw.ErrInvalidArgument) {
		t.Errorf("bad world name: %v", err)
	}
	if _, err := c.CreateWorld(ctx, worldName(t, "nccl"), 0, 1, mw.NCCL); !mw.NCCL.Available() && !errors.Is(err, mw.ErrUnsupported) {
		t.Errorf("nccl: %v", err)
	}
	if _, err := c.CreateWorld(ctx, w.Name(), 0, 1, mw.HostBackend()); !errors.Is(err, mw.ErrAlreadyExists) {
		t.Errorf("same rank twice: %v", err)
	}

	// Async on Buffers, collected by a Poller.
	send, _ := mw.BufferFrom([]uint64{7, 8})
	recvB, _ := mw.NewBuffer[uint64](2)
	r1, err := w.AllReduceAsync(send, recvB, mw.Sum)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := w.BarrierAsync()
	if err != nil {
		t.Fatal(err)
	}
	p := mw.NewPoller(r1, r2)
	for p.Len() > 0 {
		r, err := p.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if done, err := r.Test(); !done || err != nil {
			t.Fatalf("%s: done=%v err=%v", r.Op(), done, err)
		}
	}
	if _, err := p.Next(ctx); !errors.Is(err, mw.ErrNotFound) {
		t.Fatalf("empty poller: %v", err)
	}
	if got := values(recvB); got[0] != 7 || got[1] != 8 {
		t.Fatalf("async allreduce %v", got)
	}
	send.Close()
	if _, err := w.SendAsync(send, 0); !errors.Is(err, mw.ErrClosed) || !errors.Is(err, mw.ErrInvalidArgument) {
		t.Fatalf("closed buffer: %v", err)
	}
	recvB.Close()

	// Closing the world completes a pending request with ErrCancelled.
	pendB, _ := mw.NewBuffer[int32](4)
	pending, err := w.RecvAsync(pendB, 0) // from itself: nothing is sent
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-pending.Done():
		t.Fatal("receive completed without a message")
	case <-time.After(50 * time.Millisecond):
	}

	// Close is idempotent; a closed world fails with ErrCancelled + ErrClosed.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pending.Wait(ctx); !errors.Is(err, mw.ErrCancelled) {
		t.Fatalf("receive pending at Close: %v", err)
	}
	pendB.Close()
	w.Close()
	if w.State() != mw.WorldClosed {
		t.Fatal("state after close")
	}
	if err := w.Barrier(ctx); !errors.Is(err, mw.ErrCancelled) || !errors.Is(err, mw.ErrClosed) {
		t.Fatalf("closed world: %v", err)
	}
	c.Close()
	c.Close()
	if _, err := c.CreateWorld(ctx, "x", 0, 1, mw.HostBackend()); !errors.Is(err, mw.ErrClosed) {
		t.Fatalf("closed context: %v", err)
	}
	checkNoLeaks(t, c)
}

// Two contexts in one process form a world like two processes would.
func TestTwoContextsOneProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := worldName(t, "pair")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	sums := make([][]float64, 2)
	for rank := 0; rank < 2; rank++ {
		wg.Add(1)
		go func(rank int) {
			defer wg.Done()
			c, err := newContext()
			if err != nil {
				errs[rank] = err
				return
			}
			defer c.Close()
			w, err := c.CreateWorld(ctx, name, rank, 2, mw.HostBackend())
			if err != nil {
				errs[rank] = err
				return
			}
			defer w.Close()
			sums[rank] = make([]float64, 2)
			errs[rank] = w.AllReduce(ctx, []float64{float64(rank), 1}, sums[rank], mw.Sum)
			if errs[rank] == nil {
				errs[rank] = settle(ctx, w)
			}
		}(rank)
	}
	wg.Wait()
	for rank, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", rank, err)
		}
		if sums[rank][0] != 1 || sums[rank][1] != 2 {
			t.Fatalf("rank %d: %v", rank, sums[rank])
		}
	}
}

// A CreateWorld whose context.Context ends while peers are missing returns
// ctx.Err() at once; a deadline becomes the library's timeout.
func TestCreateWorldCancel(t *testing.T) {
	c, err := newContext(mw.WithCreateTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err = c.CreateWorld(ctx, worldName(t, "lonely"), 0, 2, mw.HostBackend())
	if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
		t.Fatalf("cancelled create: %v after %v", err, time.Since(start))
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer dcancel()
	start = time.Now()
	_, err = c.CreateWorld(dctx, worldName(t, "lonely2"), 0, 2, mw.HostBackend())
	if !errors.Is(err, mw.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline create: %v", err)
	}
	t.Logf("deadline create: %v after %v", err, time.Since(start))
	// Close waits for the abandoned create, bounded by WithCreateTimeout.
	_, err = c.CreateWorld(ctx, worldName(t, "lonely3"), 0, 2, mw.HostBackend())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("create with a cancelled context: %v", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel2() }()
	if _, err := c.CreateWorld(ctx2, worldName(t, "lonely4"), 0, 2, mw.HostBackend()); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled create: %v", err)
	}
	start = time.Now()
	c.Close()
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("close with an abandoned create took %v", d)
	}
}

// Operations, waits, events and Close from many goroutines at once: every
// call returns, with nil or an error of the closed handle.
func TestConcurrentClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := newContext()
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.CreateWorld(ctx, worldName(t, "solo"), 0, 1, mw.HostBackend())
	if err != nil {
		t.Fatal(err)
	}
	events := c.Events()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			b, _ := mw.NewBuffer[float64](64)
			defer b.Close()
			for i := 0; ; i++ {
				var err error
				if g%2 == 0 {
					err = w.AllReduce(ctx, make([]float64, 64), make([]float64, 64), mw.Sum)
				} else {
					var r *mw.Request
					if r, err = w.AllReduceAsync(b, b, mw.Max); err == nil {
						err = r.Wait(ctx)
					}
				}
				if err != nil {
					if !errors.Is(err, mw.ErrCancelled) {
						errs <- fmt.Errorf("goroutine %d op %d: %w", g, i, err)
					}
					return
				}
			}
		}(g)
	}
	time.Sleep(200 * time.Millisecond)
	done := make(chan struct{})
	go func() { w.Close(); close(done) }()
	c.Close()
	<-done
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, open := <-events; open {
		t.Error("events channel still open after Close")
	}
	checkNoLeaks(t, c)
}
