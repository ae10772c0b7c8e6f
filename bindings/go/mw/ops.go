package mw

/*
#include <stdint.h>
#include <string.h>
#include <multiworld/multiworld.h>

// Builds the versioned descriptor on the C side from addresses passed as
// integers: what reaches the library is C or device memory, never a Go
// pointer, and user_data is fixed at issue time.
static mw_status_t mwgo_submit(mw_world_t* w, mw_op_kind_t kind, uintptr_t sendbuf, uintptr_t recvbuf,
                               size_t count, mw_dtype_t dtype, mw_redop_t op, int peer,
                               uint64_t user_data, mw_request_t** req) {
	mw_op_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.kind = kind;
	o.sendbuf = (const void*)sendbuf;
	o.recvbuf = (void*)recvbuf;
	o.count = count;
	o.dtype = dtype;
	o.op = op;
	o.peer = peer;
	o.user_data = user_data;
	return mw_submit(w, &o, req);
}
*/
import "C"

import (
	"context"
	"fmt"
)

type opKind int

const (
	opSend          opKind = C.MW_OP_SEND
	opRecv          opKind = C.MW_OP_RECV
	opBroadcast     opKind = C.MW_OP_BROADCAST
	opAllReduce     opKind = C.MW_OP_ALLREDUCE
	opReduce        opKind = C.MW_OP_REDUCE
	opAllGather     opKind = C.MW_OP_ALLGATHER
	opGather        opKind = C.MW_OP_GATHER
	opScatter       opKind = C.MW_OP_SCATTER
	opReduceScatter opKind = C.MW_OP_REDUCE_SCATTER
	opAllToAll      opKind = C.MW_OP_ALLTOALL
	opBarrier       opKind = C.MW_OP_BARRIER
)

var opNames = [...]string{"send", "recv", "broadcast", "allreduce", "reduce", "allgather", "gather",
	"scatter", "reduce_scatter", "alltoall", "barrier"}

// operand is one buffer argument: library memory (a Buf: host or device)
// or, for the blocking operations only, Go memory (a slice) that is staged
// through C memory.
type operand struct {
	present bool
	dt      DType
	n       int      // elements
	buf     *bufCore // a Buf
	goBytes []byte   // a Go slice's memory
}

func sliceOperand[T Element](s []T) operand {
	o := operand{present: true, dt: DTypeOf[T](), n: len(s), goBytes: asBytes(s)}
	if o.goBytes == nil {
		o.goBytes = []byte{}
	}
	return o
}

// device is the CUDA ordinal of the operand's memory, or hostMemory.
func (o operand) device() int {
	if o.buf == nil {
		return hostMemory
	}
	return o.buf.device
}

func operandOf(x any) (operand, error) {
	switch v := x.(type) {
	case nil:
		return operand{}, nil
	case Buf:
		c := v.core()
		if c == nil {
			return operand{}, nil
		}
		return operand{present: true, dt: v.DType(), n: v.Len(), buf: c}, nil
	case []int8:
		return sliceOperand(v), nil
	case []uint8:
		return sliceOperand(v), nil
	case []int32:
		return sliceOperand(v), nil
	case []uint32:
		return sliceOperand(v), nil
	case []int64:
		return sliceOperand(v), nil
	case []uint64:
		return sliceOperand(v), nil
	case []F16:
		return sliceOperand(v), nil
	case []BF16:
		return sliceOperand(v), nil
	case []float32:
		return sliceOperand(v), nil
	case []float64:
		return sliceOperand(v), nil
	}
	return operand{}, argError(fmt.Sprintf("unsupported buffer type %T: want a slice of an Element type or a *Buffer", x))
}

func bufOperand(b Buf) operand {
	if b == nil {
		return operand{}
	}
	o, _ := operandOf(b)
	return o
}

// same reports whether a and b are one buffer (an in-place operation).
func same(a, b operand) bool {
	if !a.present || !b.present || a.dt != b.dt || a.n != b.n {
		return false
	}
	if a.buf != nil || b.buf != nil {
		return a.buf == b.buf
	}
	return a.n > 0 && &a.goBytes[0] == &b.goBytes[0]
}

// plan is what one operation passes to the library on this rank.
type plan struct {
	kind    opKind
	count   int
	dt      DType
	send    operand // used when present
	recv    operand // used when present
	inplace bool    // send is recv
	copyIn  bool    // recv's contents are input too (in place, broadcast root)
	copyOut bool    // recv receives a result on this rank
	op      ReduceOp
	peer    int
}

func (w *World) plan(kind opKind, send, recv operand, op ReduceOp, peer int) (plan, error) {
	p := plan{kind: kind, op: op, peer: peer}
	name := opNames[kind]
	sendName, recvName := "send", "recv"
	if kind == opSend || kind == opRecv || kind == opBroadcast {
		sendName, recvName = "buf", "buf"
	}
	if err := w.checkMemory(name, sendName, send); err != nil {
		return p, err
	}
	if err := w.checkMemory(name, recvName, recv); err != nil {
		return p, err
	}
	n := w.size
	root := peer == w.rank
	need := func(o operand, what string) error {
		if !o.present {
			return argError(name + ": " + what + " is nil")
		}
		return nil
	}
	multiple := func(o operand, what string) (int, error) {
		if o.n%n != 0 {
			return 0, argError(fmt.Sprintf("%s: %s holds %d elements, not a multiple of the world size %d", name, what, o.n, n))
		}
		return o.n / n, nil
	}
	wantLen := func(o operand, what string, want int) error {
		if o.n != want {
			return argError(fmt.Sprintf("%s: %s holds %d elements, want %d", name, what, o.n, want))
		}
		return nil
	}
	inPlace := func() { p.inplace, p.send, p.copyIn = true, operand{}, true }

	var err error
	switch kind {
	case opSend:
		if err = need(send, "buf"); err == nil {
			p.send, p.count = send, send.n
		}
	case opRecv:
		if err = need(recv, "buf"); err == nil {
			p.recv, p.count, p.copyOut = recv, recv.n, true
		}
	case opBroadcast:
		if err = need(recv, "buf"); err == nil {
			p.recv, p.count, p.copyIn, p.copyOut = recv, recv.n, root, !root
		}
	case opBarrier:
	case opAllReduce, opReduce:
		writes := kind == opAllReduce || root
		if err = need(send, "send"); err != nil {
			break
		}
		if same(send, recv) {
			p.recv, p.count, p.copyOut = recv, recv.n, writes
			inPlace()
			break
		}
		p.send, p.count = send, send.n
		if writes {
			if err = need(recv, "recv"); err == nil {
				err = wantLen(recv, "recv", send.n)
			}
			p.recv, p.copyOut = recv, true
		}
	case opAllGather, opGather:
		writes := kind == opAllGather || root
		if same(send, recv) {
			if p.count, err = multiple(recv, "buf"); err == nil {
				p.recv, p.copyOut = recv, writes
				inPlace()
			}
			break
		}
		if err = need(send, "send"); err != nil {
			break
		}
		p.send, p.count = send, send.n
		if writes {
			if err = need(recv, "recv"); err == nil {
				err = wantLen(recv, "recv", n*send.n)
			}
			p.recv, p.copyOut = recv, true
		}
	case opScatter:
		if err = need(recv, "recv"); err != nil {
			break
		}
		if root && same(send, recv) {
			if p.count, err = multiple(recv, "buf"); err == nil {
				p.recv, p.copyOut = recv, true
				inPlace()
			}
			break
		}
		p.recv, p.count, p.copyOut = recv, recv.n, true
		if root {
			if err = need(send, "send"); err == nil {
				err = wantLen(send, "send", n*recv.n)
			}
			p.send = send
		}
	case opReduceScatter, opAllToAll:
		if same(send, recv) {
			if p.count, err = multiple(recv, "buf"); err == nil {
				p.recv, p.copyOut = recv, true
				inPlace()
			}
			break
		}
		if err = need(send, "send"); err != nil {
			break
		}
		if err = need(recv, "recv"); err != nil {
			break
		}
		if kind == opReduceScatter {
			p.count = recv.n
			err = wantLen(send, "send", n*recv.n)
		} else {
			if p.count, err = multiple(send, "send"); err == nil {
				err = wantLen(recv, "recv", send.n)
			}
		}
		p.send, p.recv, p.copyOut = send, recv, true
	}
	if err != nil {
		return p, err
	}
	switch {
	case p.send.present && p.recv.present && p.send.dt != p.recv.dt:
		return p, argError(fmt.Sprintf("%s: send holds %s, recv holds %s", name, p.send.dt, p.recv.dt))
	case p.send.present:
		p.dt = p.send.dt
	case p.recv.present:
		p.dt = p.recv.dt
	default:
		p.dt = Uint8
	}
	return p, nil
}

// checkMemory refuses memory the world's backend cannot move.
func (w *World) checkMemory(op, what string, o operand) error {
	if !o.present {
		return nil
	}
	dev := o.device()
	if (w.backend == NCCL) != (dev != hostMemory) || (w.backend == NCCL && dev != w.device) {
		e := &MemoryError{Op: op, Operand: what, World: w.name, Backend: w.backend, WorldDevice: hostMemory, Device: dev}
		if w.backend == NCCL {
			e.WorldDevice = w.device
		}
		return e
	}
	return nil
}

// start issues p with the given buffers (either may be nil when unused)
// through mw_submit. The request is registered with the context's
// dispatcher before it is issued, and takes a hold on each buffer; on
// failure none is kept.
func (w *World) start(p plan, sendBuf, recvBuf *bufCore) (*Request, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.h == nil {
		return nil, closedError(ErrCancelled, "world \""+w.name+"\"")
	}
	var holds []*bufCore
	for _, b := range []*bufCore{sendBuf, recvBuf} {
		if b == nil || (len(holds) == 1 && holds[0] == b) {
			continue
		}
		if err := b.acquire(); err != nil {
			for _, h := range holds {
				h.release()
			}
			return nil, err
		}
		holds = append(holds, b)
	}
	var sp, rp uintptr
	if sendBuf != nil {
		sp = sendBuf.addr()
	}
	if recvBuf != nil {
		rp = recvBuf.addr()
	}
	if p.inplace {
		sp = rp
	}
	r := newRequest(opNames[p.kind], holds)
	id := w.c.disp.add(r) // under w.mu: Close cannot free the context first
	var h *C.mw_request_t
	err := call(func() C.mw_status_t {
		return C.mwgo_submit(w.h, C.mw_op_kind_t(p.kind), C.uintptr_t(sp), C.uintptr_t(rp), C.size_t(p.count),
			C.mw_dtype_t(p.dt), C.mw_redop_t(p.op), C.int(p.peer), C.uint64_t(id), &h)
	})
	if err != nil {
		w.c.disp.drop(id)
		for _, b := range holds {
			b.release()
		}
		return nil, err
	}
	r.issued(h)
	return r, nil
}

// async issues an operation on library-owned buffers.
func (w *World) async(kind opKind, send, recv Buf, op ReduceOp, peer int) (*Request, error) {
	p, err := w.plan(kind, bufOperand(send), bufOperand(recv), op, peer)
	if err != nil {
		return nil, err
	}
	return w.start(p, p.send.buf, p.recv.buf)
}

// run is a blocking operation: Go slices are copied into C memory that the
// request holds, so C never sees Go memory, and the result is copied back
// when the operation succeeded. When ctx ends first, the request is
// cancelled and waited for (Request.Wait), so nothing is written into the
// caller's slice after run returned.
func (w *World) run(ctx context.Context, kind opKind, sendArg, recvArg any, op ReduceOp, peer int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	send, err := operandOf(sendArg)
	if err != nil {
		return err
	}
	recv, err := operandOf(recvArg)
	if err != nil {
		return err
	}
	p, err := w.plan(kind, send, recv, op, peer)
	if err != nil {
		return err
	}
	var staged []*bufCore
	defer func() {
		for _, b := range staged {
			b.close()
			b.release()
		}
	}()
	stage := func(o operand, copyIn bool) (*bufCore, error) {
		if !o.present || o.buf != nil {
			return o.buf, nil
		}
		b, err := newHostCore(len(o.goBytes), !copyIn) // zeroed unless overwritten here
		if err != nil {
			return nil, err
		}
		b.refs = 1 // this call's hold, released by the deferred func
		staged = append(staged, b)
		if copyIn {
			copy(b.bytes(), o.goBytes)
		}
		return b, nil
	}
	sendBuf, err := stage(p.send, true)
	if err != nil {
		return err
	}
	recvBuf, err := stage(p.recv, p.copyIn)
	if err != nil {
		return err
	}
	r, err := w.start(p, sendBuf, recvBuf)
	if err != nil {
		return err
	}
	if err := r.Wait(ctx); err != nil {
		return err
	}
	if p.copyOut && p.recv.buf == nil && recvBuf != nil {
		copy(p.recv.goBytes, recvBuf.bytes())
	}
	return nil
}

// The blocking operations take, for each buffer, a slice of an Element
// type ([]float32, []byte, []F16, ...), a *Buffer or a *DeviceBuffer, and
// wait with ctx for the operation to complete. Slices are copied through C
// memory; Buffers and DeviceBuffers are used in place. When ctx ends first
// the operation is cancelled as Request.Wait does: an unmatched receive
// is taken back (on UCX worlds), anything else breaks the world, and the
// error wraps ctx.Err(). The shapes are in the package documentation.

// Send sends buf to rank dst and waits, with ctx, until the library is done
// with it. Like every blocking operation, buf is a slice of an Element type,
// a *Buffer or a *DeviceBuffer.
func (w *World) Send(ctx context.Context, buf any, dst int) error {
	return w.run(ctx, opSend, buf, nil, Sum, dst)
}

// Recv receives into buf from rank src, waiting with ctx. A Recv cancelled
// through ctx before a message matched it completes with ErrCancelled and
// leaves the next message from src to the next receive (on UCX worlds).
func (w *World) Recv(ctx context.Context, buf any, src int) error {
	return w.run(ctx, opRecv, nil, buf, Sum, src)
}

// Broadcast copies root's buf into every member's buf.
func (w *World) Broadcast(ctx context.Context, buf any, root int) error {
	return w.run(ctx, opBroadcast, nil, buf, Sum, root)
}

// AllReduce reduces send over all members into every member's recv.
func (w *World) AllReduce(ctx context.Context, send, recv any, op ReduceOp) error {
	return w.run(ctx, opAllReduce, send, recv, op, -1)
}

// Reduce reduces send over all members into root's recv.
func (w *World) Reduce(ctx context.Context, send, recv any, op ReduceOp, root int) error {
	return w.run(ctx, opReduce, send, recv, op, root)
}

// AllGather concatenates every member's send, in rank order, into every
// member's recv.
func (w *World) AllGather(ctx context.Context, send, recv any) error {
	return w.run(ctx, opAllGather, send, recv, Sum, -1)
}

// Gather concatenates every member's send, in rank order, into root's recv.
func (w *World) Gather(ctx context.Context, send, recv any, root int) error {
	return w.run(ctx, opGather, send, recv, Sum, root)
}

// Scatter sends block j of root's send to rank j's recv.
func (w *World) Scatter(ctx context.Context, send, recv any, root int) error {
	return w.run(ctx, opScatter, send, recv, Sum, root)
}

// ReduceScatter reduces send over all members; rank j receives block j.
func (w *World) ReduceScatter(ctx context.Context, send, recv any, op ReduceOp) error {
	return w.run(ctx, opReduceScatter, send, recv, op, -1)
}

// AllToAll sends block j of send to rank j, which stores it as block Rank()
// of its recv.
func (w *World) AllToAll(ctx context.Context, send, recv any) error {
	return w.run(ctx, opAllToAll, send, recv, Sum, -1)
}

// Barrier waits until every member reached it.
func (w *World) Barrier(ctx context.Context) error {
	return w.run(ctx, opBarrier, nil, nil, Sum, -1)
}

// The asynchronous operations issue at once and return a Request. They
// take library-owned buffers only (*Buffer or *DeviceBuffer, through the
// Buf interface; nil where the operation ignores a buffer on this rank),
// because the library uses them after the call returns, which cgo forbids
// for Go memory. Each request holds its buffers until it completes, so
// closing a buffer early never frees memory the library still uses. The
// shapes are those of the blocking operations.

// SendAsync issues a send of buf to rank dst.
func (w *World) SendAsync(buf Buf, dst int) (*Request, error) {
	return w.async(opSend, buf, nil, Sum, dst)
}

// RecvAsync issues a receive into buf from rank src.
func (w *World) RecvAsync(buf Buf, src int) (*Request, error) {
	return w.async(opRecv, nil, buf, Sum, src)
}

// BroadcastAsync issues a broadcast of root's buf.
func (w *World) BroadcastAsync(buf Buf, root int) (*Request, error) {
	return w.async(opBroadcast, nil, buf, Sum, root)
}

// AllReduceAsync issues an allreduce.
func (w *World) AllReduceAsync(send, recv Buf, op ReduceOp) (*Request, error) {
	return w.async(opAllReduce, send, recv, op, -1)
}

// ReduceAsync issues a reduce to root.
func (w *World) ReduceAsync(send, recv Buf, op ReduceOp, root int) (*Request, error) {
	return w.async(opReduce, send, recv, op, root)
}

// AllGatherAsync issues an allgather.
func (w *World) AllGatherAsync(send, recv Buf) (*Request, error) {
	return w.async(opAllGather, send, recv, Sum, -1)
}

// GatherAsync issues a gather to root.
func (w *World) GatherAsync(send, recv Buf, root int) (*Request, error) {
	return w.async(opGather, send, recv, Sum, root)
}

// ScatterAsync issues a scatter from root.
func (w *World) ScatterAsync(send, recv Buf, root int) (*Request, error) {
	return w.async(opScatter, send, recv, Sum, root)
}

// ReduceScatterAsync issues a reduce-scatter.
func (w *World) ReduceScatterAsync(send, recv Buf, op ReduceOp) (*Request, error) {
	return w.async(opReduceScatter, send, recv, op, -1)
}

// AllToAllAsync issues an all-to-all exchange.
func (w *World) AllToAllAsync(send, recv Buf) (*Request, error) {
	return w.async(opAllToAll, send, recv, Sum, -1)
}

// BarrierAsync issues a barrier.
func (w *World) BarrierAsync() (*Request, error) {
	return w.async(opBarrier, nil, nil, Sum, -1)
}
