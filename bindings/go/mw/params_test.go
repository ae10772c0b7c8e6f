package mw_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/multiworld/multiworld/bindings/go/mw"
)

// A world's own op_timeout_ms (mw_world_params_t) breaks it where the
// context has no limit; the break event carries the world's epoch and no
// path.
func TestWorldOpTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, w := soloWorld(t, mw.HostBackend(), mw.WithWorldOpTimeout(300*time.Millisecond))
	buf, err := mw.NewBuffer[int32](4)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	start := time.Now()
	err = w.Recv(ctx, buf, 0) // nothing is ever sent
	if !errors.Is(err, mw.ErrWorldBroken) || !strings.Contains(err.Error(), "op_timeout_ms=300") {
		t.Fatalf("recv past the world's op_timeout: %v", err)
	}
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Fatalf("broke after %v, before the world's op_timeout", took)
	}
	ev, err := c.NextEvent(ctx)
	if err != nil || ev.Type != mw.EventWorldBroken || ev.World != w || ev.WorldEpoch != w.Epoch() || ev.Path != nil {
		t.Fatalf("event %+v, %v", ev, err)
	}
}

// WithWorldOpTimeout(-1) lifts the context's limit for one world.
func TestWorldWithoutOpTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := newContext(mw.WithConfig("op_timeout_ms", "200"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w, err := c.CreateWorld(ctx, worldName(t, "no-limit"), 0, 1, mw.HostBackend(), mw.WithWorldOpTimeout(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	in, _ := mw.BufferFrom([]int32{7, 8})
	out, _ := mw.NewBuffer[int32](2)
	defer in.Close()
	defer out.Close()
	r, err := w.RecvAsync(out, 0)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond) // three of the context's limits
	if err := w.Send(ctx, in, 0); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(ctx); err != nil || w.State() != mw.WorldReady {
		t.Fatalf("recv: %v, state %v", err, w.State())
	}
}

func TestWorldSettingsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := newContext(mw.WithConfig("path_failover", "off"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.CreateWorld(ctx, worldName(t, "on"), 0, 1, mw.HostBackend(), mw.WithPathFailover(true))
	var e *mw.Error
	if !errors.As(err, &e) || e.Code != mw.ErrInvalidArgument || !strings.Contains(e.Msg, "MW_PATH_FAILOVER_ON") {
		t.Fatalf("failover on where the context has it off: %v", err)
	}
	w, err := c.CreateWorld(ctx, worldName(t, "off"), 0, 1, mw.HostBackend(), mw.WithPathFailover(false))
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
}
