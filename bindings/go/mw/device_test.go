package mw_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/multiworld/multiworld/bindings/go/mw"
)

// An address no test dereferences: device memory is only described here.
const fakeDevicePtr mw.DevicePtr = 0x7f0000000000

// What the binding checks about device memory itself, without a GPU.
func TestDeviceBuffer(t *testing.T) {
	bad := map[string]error{}
	_, bad["null pointer"] = mw.WrapDevice[float32](0, 16, 0)
	_, bad["partial element"] = mw.WrapDevice[float32](fakeDevicePtr, 6, 0)
	_, bad["negative device"] = mw.WrapDevice[float32](fakeDevicePtr, 16, -1)
	_, bad["negative length"] = mw.NewDeviceBuffer[float32](-1, 0)
	for what, err := range bad {
		if !errors.Is(err, mw.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", what, err)
		}
	}
	d, err := mw.WrapDevice[float32](fakeDevicePtr, 16, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d.Ptr() != fakeDevicePtr || d.Len() != 4 || d.ByteLen() != 16 || d.Device() != 1 || d.DType() != mw.Float32 {
		t.Fatalf("wrapped: ptr %#x len %d bytes %d device %d dtype %v", d.Ptr(), d.Len(), d.ByteLen(), d.Device(), d.DType())
	}

	// A host world refuses device memory, saying so.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, w := soloWorld(t, mw.HostBackend())
	if w.Device() != -1 {
		t.Errorf("host world device %d, want -1", w.Device())
	}
	_, errAsync := w.SendAsync(d, 0)
	refused := map[string]error{
		"send async":     errAsync,
		"allreduce send": w.AllReduce(ctx, d, make([]float32, 4), mw.Sum),
		"allreduce recv": w.AllReduce(ctx, []float32{1, 2, 3, 4}, d, mw.Sum),
	}
	for what, err := range refused {
		var me *mw.MemoryError
		if !errors.As(err, &me) || !errors.Is(err, mw.ErrInvalidArgument) {
			t.Errorf("%s: %v, want a *MemoryError", what, err)
			continue
		}
		msg := err.Error()
		if me.Device != 1 || me.Backend != mw.HostBackend() || me.World != w.Name() ||
			!strings.Contains(msg, "device memory of CUDA device 1") || !strings.Contains(msg, "host memory") {
			t.Errorf("%s: %+v: %s", what, *me, msg)
		}
	}
	if w.State() != mw.WorldReady {
		t.Errorf("world %v after refused operations", w.State())
	}
	d.Close()
	if d.Ptr() != 0 {
		t.Error("closed device buffer still has an address")
	}

	// Allocation loads the CUDA driver; without one (or without a device)
	// it fails with ErrUnsupported saying why.
	a, err := mw.NewDeviceBuffer[float32](4, 0)
	if err == nil {
		t.Logf("a GPU is usable here: allocated %d bytes at %#x", a.ByteLen(), a.Ptr())
		a.Close()
	} else if !errors.Is(err, mw.ErrUnsupported) {
		t.Errorf("allocation without a GPU: %v, want ErrUnsupported", err)
	} else {
		t.Logf("no GPU here: %v", err)
	}
}

func pattern(n, k int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((i*7+k)%1000) / 4
	}
	return v
}

// On a GPU: every operation of an NCCL world moves device memory, checked
// by value with nothing but the request's completion between the operation
// and the copy back (completion means the data is ready on the device).
func TestNCCLDeviceMemory(t *testing.T) {
	if !mw.NCCL.Available() {
		t.Skip("no usable GPU here: mw_backend_available(MW_BACKEND_NCCL) = 0 (it needs the NCCL plugin, a CUDA driver and a device)")
	}
	before := mw.LiveBuffers()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c, w := soloWorld(t, mw.NCCL, mw.WithDevice(0))

	const n = 1 << 20
	var owned []*mw.DeviceBuffer[float32]
	defer func() {
		for _, d := range owned {
			d.Close()
		}
	}()
	dev := func(vals []float32) *mw.DeviceBuffer[float32] {
		t.Helper()
		d, err := mw.NewDeviceBuffer[float32](len(vals), 0)
		if err != nil {
			t.Fatal(err)
		}
		owned = append(owned, d)
		if _, err := d.CopyFromHost(vals); err != nil {
			t.Fatal(err)
		}
		return d
	}
	expect := func(what string, err error, d *mw.DeviceBuffer[float32], want []float32) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got := make([]float32, d.Len())
		if _, err := d.CopyToHost(got); err != nil {
			t.Fatalf("%s: copy back: %v", what, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: got %v..., want %v...", what, got[:4], want[:4])
		}
	}
	in := pattern(n, 1)
	a, b := dev(in), dev(make([]float32, n))

	// Self send and receive, both orders, asynchronous.
	for _, sendFirst := range []bool{true, false} {
		var reqs []*mw.Request
		issue := func(r *mw.Request, err error) {
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, r)
		}
		if sendFirst {
			issue(w.SendAsync(a, 0))
			issue(w.RecvAsync(b, 0))
		} else {
			issue(w.RecvAsync(b, 0))
			issue(w.SendAsync(a, 0))
		}
		expect(fmt.Sprintf("self send/recv, send first %v", sendFirst), mw.WaitAll(ctx, reqs...), b, in)
		b.CopyFromHost(make([]float32, n))
	}

	// Every collective at size 1 is the identity on device memory.
	expect("allreduce", w.AllReduce(ctx, a, b, mw.Sum), b, in)
	expect("broadcast", w.Broadcast(ctx, b, 0), b, in)
	collectives := map[string]func(out *mw.DeviceBuffer[float32]) error{
		"reduce":         func(out *mw.DeviceBuffer[float32]) error { return w.Reduce(ctx, a, out, mw.Max, 0) },
		"allgather":      func(out *mw.DeviceBuffer[float32]) error { return w.AllGather(ctx, a, out) },
		"gather":         func(out *mw.DeviceBuffer[float32]) error { return w.Gather(ctx, a, out, 0) },
		"scatter":        func(out *mw.DeviceBuffer[float32]) error { return w.Scatter(ctx, a, out, 0) },
		"reduce_scatter": func(out *mw.DeviceBuffer[float32]) error { return w.ReduceScatter(ctx, a, out, mw.Sum) },
		"alltoall":       func(out *mw.DeviceBuffer[float32]) error { return w.AllToAll(ctx, a, out) },
	}
	for what, op := range collectives {
		out := dev(make([]float32, n))
		expect(what, op(out), out, in)
	}
	if err := w.Barrier(ctx); err != nil {
		t.Fatal(err)
	}

	// Memory allocated elsewhere, wrapped: used in place, not freed by Close.
	wrapped, err := mw.WrapDevice[float32](b.Ptr(), b.ByteLen(), 0)
	if err != nil {
		t.Fatal(err)
	}
	b.CopyFromHost(make([]float32, n))
	r, err := w.AllReduceAsync(a, wrapped, mw.Sum)
	if err != nil {
		t.Fatal(err)
	}
	expect("allreduce into wrapped memory", r.Wait(ctx), b, in)
	wrapped.Close()
	expect("the wrapped memory after Close", nil, b, in)

	// Host memory is refused on an NCCL world.
	err = w.AllReduce(ctx, []float32{1}, make([]float32, 1), mw.Sum)
	var me *mw.MemoryError
	if !errors.As(err, &me) || me.Device != -1 || me.WorldDevice != 0 {
		t.Fatalf("host memory on an NCCL world: %v, want a *MemoryError", err)
	}

	// A cancelled receive nobody sends to breaks the NCCL world (nothing
	// on a stream can be taken back) and completes.
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	err = w.Recv(short, dev(make([]float32, 4)), 0)
	cancelShort()
	if !errors.Is(err, mw.ErrWorldBroken) || !errors.Is(err, context.DeadlineExceeded) || w.State() != mw.WorldBroken {
		t.Fatalf("cancelled receive on NCCL: %v, world %v; want ErrWorldBroken, broken", err, w.State())
	}
	w.Close()
	for _, d := range owned {
		d.Close()
	}
	owned = nil
	checkNoLeaks(t, c)
	if mw.LiveBuffers() != before {
		t.Fatalf("%d buffers live, want %d", mw.LiveBuffers(), before)
	}
}
