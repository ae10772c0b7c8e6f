package mw

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// An NCCL world refuses host memory and device memory of another device
// before anything reaches the library. No GPU is needed: the World below
// was never created (its handle is nil), and the check runs first.
func TestNCCLWorldRefusesWrongMemory(t *testing.T) {
	w := &World{name: "gpu-world", backend: NCCL, device: 0, rank: 0, size: 2}
	ctx := context.Background()
	host, err := NewBuffer[float32](4)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	const addr DevicePtr = 0x7f0000000000
	dev0, _ := WrapDevice[float32](addr, 16, 0)
	dev1, _ := WrapDevice[float32](addr, 16, 1)
	_, errSendAsync := w.SendAsync(host, 1)
	_, errRecvHost := w.AllReduceAsync(dev0, host, Sum)
	_, errOtherDevice := w.AllReduceAsync(dev1, dev1, Sum)
	cases := []struct {
		what    string
		err     error
		operand string
		device  int
		text    string
	}{
		{"blocking send of a Go slice", w.Send(ctx, []float32{1}, 1), "buf", hostMemory, "buf is host memory"},
		{"async send of a Buffer", errSendAsync, "buf", hostMemory, "buf is host memory"},
		{"allreduce into a Buffer", errRecvHost, "recv", hostMemory, "recv is host memory"},
		{"device 1 on a world of device 0", errOtherDevice, "send", 1, "send is device memory of CUDA device 1"},
	}
	for _, c := range cases {
		var me *MemoryError
		if !errors.As(c.err, &me) || !errors.Is(c.err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want a *MemoryError", c.what, c.err)
			continue
		}
		msg := c.err.Error()
		if me.Operand != c.operand || me.Device != c.device || me.WorldDevice != 0 || me.Backend != NCCL ||
			!strings.Contains(msg, c.text) || !strings.Contains(msg, `"gpu-world" is a nccl world`) ||
			!strings.Contains(msg, "CUDA device 0 (a DeviceBuffer)") {
			t.Errorf("%s: %+v: %s", c.what, *me, msg)
		}
	}
	// Device memory of the world's device passes the check; only the
	// missing world stops it.
	if _, err := w.AllReduceAsync(dev0, dev0, Sum); !errors.Is(err, ErrClosed) {
		t.Errorf("device memory of the world's device: %v, want only the closed-world error", err)
	}
}
