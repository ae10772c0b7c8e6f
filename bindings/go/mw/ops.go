package mw

/*
#include <multiworld/multiworld.h>
*/
import "C"

import (
	"context"
	"fmt"
	"unsafe"
)

type opKind int

const (
	opSend opKind = iota
	opRecv
	opBroadcast
	opAllReduce
	opReduce
	opAllGather
	opGather
	opScatter
	opReduceScatter
	opAllToAll
	opBarrier
)

var opNames = [...]string{"send", "recv", "broadcast", "allreduce", "reduce", "allgather", "gather",
	"scatter", "reduce_scatter", "alltoall", "barrier"}

// operand is one buffer argument: library memory (a Buf) or, for the
// blocking operations only, Go memory (a slice) that is staged through C
// memory.
type operand struct {
	present bool
	dt      DType
	n       int      // elements
	buf     *bufCore // a Buf
	goBytes []byte   // a Go slice's memory
}

func sliceOperand[T Element](s []T) operand {
	o := operand{present: true, dt: DTypeOf[T](), n: len(s)}
	if len(s) > 0 {
		var zero T
		o.goBytes = unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(zero)))
	} else {
		o.goBytes = []byte{}
	}
	return o
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

// start issues p with the given C buffers (either may be nil when unused)
// and registers the request with the context's dispatcher. The request
// takes a hold on each buffer; on failure none is kept.
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
	var sp, rp unsafe.Pointer
	if sendBuf != nil {
		sp = sendBuf.p
	}
	if recvBuf != nil {
		rp = recvBuf.p
	}
	if p.inplace {
		sp = rp
	}
	var h *C.mw_request_t
	wh, count, dt, op, peer := w.h, C.size_t(p.count), C.mw_dtype_t(p.dt), C.mw_redop_t(p.op), C.int(p.peer)
	err := call(func() C.mw_status_t {
		switch p.kind {
		case opSend:
			return C.mw_send_async(wh, sp, count, dt, peer, &h)
		case opRecv:
			return C.mw_recv_async(wh, rp, count, dt, peer, &h)
		case opBroadcast:
			return C.mw_broadcast_async(wh, rp, count, dt, peer, &h)
		case opAllReduce:
			return C.mw_allreduce_async(wh, sp, rp, count, dt, op, &h)
		case opReduce:
			return C.mw_reduce_async(wh, sp, rp, count, dt, op, peer, &h)
		case opAllGather:
			return C.mw_allgather_async(wh, sp, rp, count, dt, &h)
		case opGather:
			return C.mw_gather_async(wh, sp, rp, count, dt, peer, &h)
		case opScatter:
			return C.mw_scatter_async(wh, sp, rp, count, dt, peer, &h)
		case opReduceScatter:
			return C.mw_reduce_scatter_async(wh, sp, rp, count, dt, op, &h)
		case opAllToAll:
			return C.mw_alltoall_async(wh, sp, rp, count, dt, &h)
		default:
			return C.mw_barrier_async(wh, &h)
		}
	})
	if err != nil {
		for _, b := range holds {
			b.release()
		}
		return nil, err
	}
	r := newRequest(opNames[p.kind], holds)
	w.c.disp.register(h, r) // under w.mu: Close cannot free the context first
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
// request holds, so C never sees Go memory; the result is copied back only
// when the operation succeeded while the caller waited. When ctx ends
// first, run returns ctx.Err() and the C memory lives on until the
// operation completes.
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
		b, err := newCore(len(o.goBytes), !copyIn) // zeroed unless overwritten here
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
// type ([]float32, []byte, []F16, ...) or a *Buffer, and wait with ctx for
// the operation to complete. Slices are copied through C memory; Buffers
// are used in place. When ctx ends first they return ctx.Err(), and the
// operation still completes in the background (a receive still consumes
// its message); nothing is written to the caller's slice afterwards. The
// shapes are in the package documentation.

// Send sends buf to rank dst and waits, with ctx, until the library is done
// with it. Like every blocking operation, buf is a slice of an Element type
// or a *Buffer; on ctx's end it returns ctx.Err() and the send goes on.
func (w *World) Send(ctx context.Context, buf any, dst int) error {
	return w.run(ctx, opSend, buf, nil, Sum, dst)
}

// Recv receives into buf from rank src, waiting with ctx. A Recv given up
// through ctx still consumes the next message from src, and does not write
// to buf afterwards.
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
// take library-owned buffers only (*Buffer, through the Buf interface; nil
// where the operation ignores a buffer on this rank), because the library
// uses them after the call returns, which cgo forbids for Go memory. Each
// request holds its buffers until it completes, so closing a Buffer or
// giving up a Wait early never frees memory the library still uses. The
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
