package mw_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/multiworld/multiworld/bindings/go/mw"
)

// (*World).Shrink and (*World).Grow through a real Redis: a member is
// killed, the survivors shrink with the break's list (nil), and a newcomer
// grows the world back.
func init() {
	for _, b := range hostBackends {
		b := b
		scenarios["elastic-survivor-"+b.String()] = inWorldOn(b, func(ctx context.Context, w *mw.World) error {
			if err := summed(ctx, w); err != nil {
				return err
			}
			_ = fence(ctx, w) // may fail: the break then waits as an event
			shrunk, err := afterTheKill(ctx, w)
			if err != nil {
				return err
			}
			defer shrunk.Close()
			grown, err := shrunk.Grow(ctx, 3)
			if err != nil {
				return fmt.Errorf("grow: %w", err)
			}
			defer grown.Close()
			if err := summed(ctx, grown); err != nil {
				return err
			}
			return settle(ctx, grown)
		})
		scenarios["elastic-victim-"+b.String()] = inWorldOn(b, func(ctx context.Context, w *mw.World) error {
			if err := summed(ctx, w); err != nil {
				return err
			}
			_ = fence(ctx, w) // may fail: the break then waits as an event
			time.Sleep(2 * time.Minute)
			return errors.New("the victim was not killed")
		})
		scenarios["elastic-newcomer-"+b.String()] = inWorldOn(b, func(ctx context.Context, w *mw.World) error {
			if w.Rank() != 2 || w.Size() != 3 {
				return fmt.Errorf("the newcomer is rank %d of %d", w.Rank(), w.Size())
			}
			if err := summed(ctx, w); err != nil {
				return err
			}
			return settle(ctx, w)
		})
	}
}

// summed is an allreduce every member checks: rank r gives r + 1.
func summed(ctx context.Context, w *mw.World) error {
	in := make([]float64, 8)
	for i := range in {
		in[i] = float64(w.Rank() + 1)
	}
	out := make([]float64, 8)
	if err := w.AllReduce(ctx, in, out, mw.Sum); err != nil {
		return fmt.Errorf("allreduce on %v: %w", w, err)
	}
	want := float64(w.Size() * (w.Size() + 1) / 2)
	for _, v := range out {
		if v != want {
			return fmt.Errorf("allreduce on %v: %v, want %v", w, out, want)
		}
	}
	return nil
}

// fence makes every member be past what came before: rank 0, which kills
// rank 2 next, sees this barrier complete only once every member entered
// it. The others may see it fail (rank 2 can die before it completes
// there): the break then waits as an event.
func fence(ctx context.Context, w *mw.World) error {
	return w.Barrier(ctx)
}

// afterTheKill waits for rank 2's death, shrinks with the break's list and
// checks the successor and the retired world.
func afterTheKill(ctx context.Context, w *mw.World) (*mw.World, error) {
	ev, err := w.Context().NextEvent(ctx)
	if err != nil || ev.Type != mw.EventWorldBroken || ev.PeerRank != 2 {
		return nil, fmt.Errorf("expected the break blaming rank 2: %+v, %v", ev, err)
	}
	shrunk, err := w.Shrink(ctx, nil, mw.ShrinkAbort)
	if err != nil {
		return nil, fmt.Errorf("shrink: %w", err)
	}
	if shrunk.Name() != w.Name() || shrunk.Rank() != w.Rank() || shrunk.Size() != 2 || shrunk.Epoch() != w.Epoch()+1 {
		shrunk.Close()
		return nil, fmt.Errorf("shrunk into %v from %v", shrunk, w)
	}
	if w.State() != mw.WorldRetired {
		shrunk.Close()
		return nil, fmt.Errorf("the old world is %v, not retired", w.State())
	}
	err = w.Barrier(ctx)
	if !errors.Is(err, mw.ErrInvalidArgument) || !strings.Contains(err.Error(), strconv.FormatUint(shrunk.Epoch(), 10)) {
		shrunk.Close()
		return nil, fmt.Errorf("a barrier on the retired world: %v", err)
	}
	if err := summed(ctx, shrunk); err != nil {
		shrunk.Close()
		return nil, err
	}
	return shrunk, nil
}

func TestShrinkAfterAKillThenGrow(t *testing.T) {
	for _, b := range hostBackends {
		t.Run(b.String(), func(t *testing.T) {
			skipUnavailable(t, b)
			world := worldName(t, "elastic")
			survivor := spawn(t, "elastic-survivor-"+b.String(), world, 1, 3)
			victim := spawn(t, "elastic-victim-"+b.String(), world, 2, 3)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			c, err := newContext()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			w, err := c.CreateWorld(ctx, world, 0, 3, b)
			if err != nil {
				t.Fatal(err)
			}
			if err := summed(ctx, w); err != nil {
				t.Fatal(err)
			}
			if err := fence(ctx, w); err != nil {
				t.Fatalf("the fence before the kill: %v", err)
			}
			if err := victim.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			shrunk, err := afterTheKill(ctx, w)
			if err != nil {
				t.Fatal(err)
			}
			w.Close()
			// Bad input is refused and changes nothing.
			for _, bad := range [][]int{{0}, {5}, {1, 1}} {
				if _, err := shrunk.Shrink(ctx, bad, mw.ShrinkDefault); !errors.Is(err, mw.ErrInvalidArgument) {
					t.Fatalf("shrink excluding %v: %v", bad, err)
				}
			}
			if _, err := shrunk.Grow(ctx, 2); !errors.Is(err, mw.ErrInvalidArgument) {
				t.Fatalf("grow to the same size: %v", err)
			}
			newcomer := spawn(t, "elastic-newcomer-"+b.String(), world, 2, 3)
			grown, err := shrunk.Grow(ctx, 3)
			if err != nil {
				t.Fatal(err)
			}
			if grown.Rank() != 0 || grown.Size() != 3 {
				t.Fatalf("grown into %v", grown)
			}
			if err := summed(ctx, grown); err != nil {
				t.Fatal(err)
			}
			if err := settle(ctx, grown); err != nil {
				t.Fatal(err)
			}
			shrunk.Close()
			grown.Close()
			survivor.wait(t, 60*time.Second)
			newcomer.wait(t, 60*time.Second)
		})
	}
}
