package mw_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/multiworld/multiworld/bindings/go/mw"
)

func init() {
	onHosts("p2p", p2pScenario)
	onHosts("cancel", cancelScenario)
}

func TestP2P(t *testing.T) { groupOnHosts(t, "p2p", 2) }

// exchange sends n elements from rank 0 to rank 1, which checks them and
// echoes them back, with the blocking operations on Go slices.
func exchange[T mw.Element](ctx context.Context, w *mw.World, n int, gen func(i int) T) error {
	want := make([]T, n)
	for i := range want {
		want[i] = gen(i)
	}
	got := make([]T, n)
	if w.Rank() == 0 {
		if err := w.Send(ctx, want, 1); err != nil {
			return err
		}
		if err := w.Recv(ctx, got, 1); err != nil {
			return err
		}
	} else {
		if err := w.Recv(ctx, got, 0); err != nil {
			return err
		}
		if err := w.Send(ctx, got, 0); err != nil {
			return err
		}
	}
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("%v [%d]: got %v, want %v", mw.DTypeOf[T](), i, got[i], want[i])
		}
	}
	return nil
}

func p2pScenario(ctx context.Context, w *mw.World) error {
	const n = 1000
	steps := []func() error{
		func() error { return exchange(ctx, w, n, func(i int) int8 { return int8(i*7 - 100) }) },
		func() error { return exchange(ctx, w, n, func(i int) uint8 { return uint8(i * 13) }) },
		func() error { return exchange(ctx, w, n, func(i int) int32 { return int32(i*100003 - 7) }) },
		func() error { return exchange(ctx, w, n, func(i int) uint32 { return uint32(i) * 2654435761 }) },
		func() error { return exchange(ctx, w, n, func(i int) int64 { return int64(i) * -1e12 }) },
		func() error { return exchange(ctx, w, n, func(i int) uint64 { return uint64(i) << 40 }) },
		func() error { return exchange(ctx, w, n, func(i int) mw.F16 { return mw.F16From(float32(i) / 8) }) },
		func() error { return exchange(ctx, w, n, func(i int) mw.BF16 { return mw.BF16From(float32(i) * 3) }) },
		func() error { return exchange(ctx, w, n, func(i int) float32 { return float32(i) * 1.5 }) },
		func() error { return exchange(ctx, w, n, func(i int) float64 { return float64(i) / 3 }) },
		func() error { return exchange(ctx, w, 0, func(i int) byte { return 0 }) },           // empty message
		func() error { return exchange(ctx, w, 1<<20, func(i int) byte { return byte(i) }) }, // 1 MiB
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}

	// Async on Buffers: rank 1 posts 8 receives before rank 0 sends; a
	// Poller collects them.
	const msgs = 8
	if w.Rank() == 1 {
		bufs := make([]*mw.Buffer[int32], msgs)
		reqs := make(map[*mw.Request]int)
		p := mw.NewPoller()
		for i := range bufs {
			bufs[i], _ = mw.NewBuffer[int32](16)
			defer bufs[i].Close()
			r, err := w.RecvAsync(bufs[i], 0)
			if err != nil {
				return err
			}
			reqs[r] = i
			p.Add(r)
		}
		if err := w.Barrier(ctx); err != nil { // now rank 0 sends
			return err
		}
		for p.Len() > 0 {
			r, err := p.Next(ctx)
			if err != nil {
				return err
			}
			if _, err := r.Test(); err != nil {
				return err
			}
			i := reqs[r]
			if got := values(bufs[i]); got[1] != int32(i) || got[15] != int32(i*15) {
				return fmt.Errorf("message %d: %v", i, got)
			}
		}
	} else {
		if err := w.Barrier(ctx); err != nil {
			return err
		}
		var reqs []*mw.Request
		for i := 0; i < msgs; i++ {
			b, _ := mw.NewBuffer[int32](16)
			b.With(func(elems []int32) error {
				for j := range elems {
					elems[j] = int32(i * j)
				}
				return nil
			})
			r, err := w.SendAsync(b, 1)
			b.Close() // the request keeps the memory until it completes
			if err != nil {
				return err
			}
			reqs = append(reqs, r)
		}
		if err := mw.WaitAll(ctx, reqs...); err != nil {
			return err
		}
	}

	// A receive whose size differs from the send fails with
	// ErrInvalidArgument, and the world stays usable.
	if w.Rank() == 0 {
		b, _ := mw.BufferFrom([]int32{1, 2, 3, 4})
		r, err := w.SendAsync(b, 1)
		b.Close() // the request keeps the memory until it completes
		if err != nil {
			return err
		}
		// The send completes (as in MPI): only the receive fails.
		if err := r.Wait(ctx); err != nil {
			return fmt.Errorf("send to a short receive: %v", err)
		}
	} else {
		err := w.Recv(ctx, make([]int32, 3), 0)
		var e *mw.Error
		if !errors.As(err, &e) || e.Code != mw.ErrInvalidArgument {
			return fmt.Errorf("short receive: got %v, want ErrInvalidArgument", err)
		}
	}
	if err := exchange(ctx, w, 5, func(i int) int32 { return int32(i) }); err != nil {
		return fmt.Errorf("after a size mismatch: %w", err)
	}
	if w.State() != mw.WorldReady {
		return fmt.Errorf("state %v", w.State())
	}
	return settle(ctx, w)
}

// Cancelling a wait: on UCX an unmatched receive is taken back and the
// world keeps working; on Gloo the cancel breaks the world.
func TestCancel(t *testing.T) { groupOnHosts(t, "cancel", 2) }

// cancelScenario, rank 0: waits that do not cancel leave their requests
// pending, and a Buffer closed under a pending receive lives until it
// completes; then a receive cancelled through its context.Context either
// completes Cancelled with the world still usable (UCX), or breaks the
// world (Gloo). Either way nothing is written to the caller's slice.
func cancelScenario(ctx context.Context, w *mw.World) error {
	msg := func(k int32) []int32 { return []int32{k, k + 1, k + 2, k + 3} }
	ucx := w.Backend() == mw.UCX
	if w.Rank() == 1 {
		if err := w.Barrier(ctx); err != nil {
			return err
		}
		for k := int32(1); k <= 2; k++ {
			if err := w.Send(ctx, msg(k*10), 0); err != nil {
				return err
			}
		}
		err := w.Barrier(ctx) // while rank 0 cancels receives
		if !ucx {
			if !errors.Is(err, mw.ErrWorldBroken) {
				return fmt.Errorf("barrier after rank 0 cancelled a receive on gloo: %v, want ErrWorldBroken", err)
			}
			return nil
		}
		if err != nil {
			return err
		}
		if err := w.Send(ctx, msg(30), 0); err != nil {
			return err
		}
		return settle(ctx, w)
	}

	// 1. Waiting through Done does not cancel: the receive stays pending.
	bufA, _ := mw.NewBuffer[int32](4)
	defer bufA.Close()
	reqA, err := w.RecvAsync(bufA, 1)
	if err != nil {
		return err
	}
	select {
	case <-reqA.Done():
		return errors.New("receive completed without a message")
	case <-time.After(100 * time.Millisecond):
	}
	if done, _ := reqA.Test(); done {
		return errors.New("receive completed without a message")
	}

	// 2. A Buffer closed while its receive is pending is unusable at once
	// and stays allocated until the receive completes.
	bufC, _ := mw.NewBuffer[int32](4)
	reqC, err := w.RecvAsync(bufC, 1)
	if err != nil {
		return err
	}
	bufC.Close()
	if _, err := bufC.Values(); !errors.Is(err, mw.ErrClosed) {
		return fmt.Errorf("closed buffer: %v, want ErrClosed", err)
	}
	if live := mw.LiveBuffers(); live < 2 {
		return fmt.Errorf("%d C buffers live, want >= 2 (A and the closed C)", live)
	}

	if err := w.Barrier(ctx); err != nil { // rank 1 sends 10.., 20..
		return err
	}
	if err := reqA.Wait(ctx); err != nil {
		return err
	}
	if a := values(bufA); a[0] != 10 || a[3] != 13 {
		return fmt.Errorf("first receive got %v", a)
	}
	if err := reqC.Wait(ctx); err != nil {
		return err
	}

	// 3. A blocking receive whose context is cancelled: the request is
	// cancelled and waited for, and the caller's slice is left alone.
	got := make([]int32, 4)
	cctx, ccancel := context.WithCancel(ctx)
	go func() { time.Sleep(50 * time.Millisecond); ccancel() }()
	err = w.Recv(cctx, got, 1)
	if !errors.Is(err, context.Canceled) {
		return fmt.Errorf("cancelled receive: %v, want one wrapping context.Canceled", err)
	}
	if got[0] != 0 || got[3] != 0 {
		return fmt.Errorf("cancelled receive wrote into the caller's slice: %v", got)
	}
	if !ucx {
		if !errors.Is(err, mw.ErrWorldBroken) || w.State() != mw.WorldBroken {
			return fmt.Errorf("cancelled receive on gloo: %v, world %v; want ErrWorldBroken, broken", err, w.State())
		}
		return nil
	}
	if !errors.Is(err, mw.ErrCancelled) || w.State() != mw.WorldReady {
		return fmt.Errorf("cancelled receive on ucx: %v, world %v; want ErrCancelled, ready", err, w.State())
	}

	// 4. Request.Cancel on an async receive, and a deadline on its Wait.
	bufD, _ := mw.NewBuffer[int32](4)
	defer bufD.Close()
	reqD, err := w.RecvAsync(bufD, 1)
	if err != nil {
		return err
	}
	reqD.Cancel()
	if err := reqD.Wait(ctx); !errors.Is(err, mw.ErrCancelled) {
		return fmt.Errorf("cancelled async receive: %v, want ErrCancelled", err)
	}
	reqE, err := w.RecvAsync(bufD, 1)
	if err != nil {
		return err
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err = reqE.Wait(short)
	cancel()
	if !errors.Is(err, mw.ErrCancelled) || !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("receive whose wait timed out: %v, want ErrCancelled and DeadlineExceeded", err)
	}

	// 5. The world still works: the next message goes to the next receive.
	if err := w.Barrier(ctx); err != nil { // rank 1 sends 30..
		return err
	}
	if err := w.Recv(ctx, got, 1); err != nil || got[0] != 30 || got[3] != 33 {
		return fmt.Errorf("receive after the cancelled ones: %v %v, want [30 31 32 33]", err, got)
	}
	return settle(ctx, w)
}
