package mw_test

import (
	"context"
	"fmt"
	"reflect"

	"testing"

	"github.com/multiworld/multiworld/bindings/go/mw"
)

func init() { onHosts("collectives", collectivesScenario) }

// Every collective, blocking and async, on three processes.
func TestCollectives(t *testing.T) { groupOnHosts(t, "collectives", 3) }

type checker struct {
	w   *mw.World
	err error
}

func (c *checker) check(what string, err error, got, want any) {
	if c.err != nil {
		return
	}
	if err != nil {
		c.err = fmt.Errorf("rank %d %s: %w", c.w.Rank(), what, err)
	} else if want != nil && !reflect.DeepEqual(got, want) {
		c.err = fmt.Errorf("rank %d %s: got %v, want %v", c.w.Rank(), what, got, want)
	}
}

// input is rank r's element i of a test vector.
func input(r, i int) int32 { return int32(100*(r+1) + i) }

func collectivesScenario(ctx context.Context, w *mw.World) error {
	r, n := w.Rank(), w.Size()
	c := &checker{w: w}
	vec := func(rank, length int) []int32 {
		v := make([]int32, length)
		for i := range v {
			v[i] = input(rank, i)
		}
		return v
	}

	// Broadcast from root 1.
	b := make([]int64, 5)
	if r == 1 {
		b = []int64{10, 11, 12, 13, 14}
	}
	c.check("broadcast", w.Broadcast(ctx, b, 1), b, []int64{10, 11, 12, 13, 14})

	// AllReduce with every operation.
	for _, op := range []mw.ReduceOp{mw.Sum, mw.Prod, mw.Min, mw.Max, mw.Avg} {
		want := make([]int32, 4)
		for i := range want {
			acc := input(0, i)
			for k := 1; k < n; k++ {
				x := input(k, i)
				switch op {
				case mw.Sum, mw.Avg:
					acc += x
				case mw.Prod:
					acc *= x
				case mw.Min:
					if x < acc {
						acc = x
					}
				case mw.Max:
					if x > acc {
						acc = x
					}
				}
			}
			if op == mw.Avg {
				acc /= int32(n)
			}
			want[i] = acc
		}
		got := make([]int32, 4)
		c.check("allreduce "+op.String(), w.AllReduce(ctx, vec(r, 4), got, op), got, want)
	}
	f64 := make([]float64, 2)
	c.check("allreduce float64", w.AllReduce(ctx, []float64{float64(r) + 0.5, -1}, f64, mw.Sum), f64, []float64{4.5, -3})
	h := make([]mw.F16, 2)
	c.check("allreduce float16", w.AllReduce(ctx, []mw.F16{mw.F16From(1.5), mw.F16From(float32(r))}, h, mw.Max), h,
		[]mw.F16{mw.F16From(1.5), mw.F16From(2)})
	bf := make([]mw.BF16, 1)
	c.check("allreduce bfloat16", w.AllReduce(ctx, []mw.BF16{mw.BF16From(2)}, bf, mw.Sum), bf, []mw.BF16{mw.BF16From(6)})
	inplace := []uint8{1, 2, 250}
	c.check("allreduce in place", w.AllReduce(ctx, inplace, inplace, mw.Sum), inplace, []uint8{3, 6, 238})

	// Reduce to root 2; the others pass no recv.
	var red []int32
	if r == 2 {
		red = make([]int32, 3)
	}
	err := w.Reduce(ctx, vec(r, 3), red, mw.Max, 2)
	if r == 2 {
		c.check("reduce", err, red, vec(n-1, 3))
	} else {
		c.check("reduce", err, nil, nil)
	}

	// AllGather, plain and in place.
	all := make([]int32, 2*n)
	var wantAll []int32
	for k := 0; k < n; k++ {
		wantAll = append(wantAll, vec(k, 2)...)
	}
	c.check("allgather", w.AllGather(ctx, vec(r, 2), all), all, wantAll)
	ip := make([]int32, 2*n)
	copy(ip[2*r:], vec(r, 2))
	c.check("allgather in place", w.AllGather(ctx, ip, ip), ip, wantAll)

	// Gather to root 0.
	var gat []int32
	if r == 0 {
		gat = make([]int32, 2*n)
	}
	err = w.Gather(ctx, vec(r, 2), gat, 0)
	if r == 0 {
		c.check("gather", err, gat, wantAll)
	} else {
		c.check("gather", err, nil, nil)
	}

	// Scatter from root 1.
	var sc []int32
	if r == 1 {
		sc = wantAll
	}
	part := make([]int32, 2)
	c.check("scatter", w.Scatter(ctx, sc, part, 1), part, vec(r, 2))

	// ReduceScatter: block r of the element-wise sum.
	rs := make([]float32, 2)
	rsIn := make([]float32, 2*n)
	for i := range rsIn {
		rsIn[i] = float32(i * (r + 1))
	}
	wantRS := []float32{float32(2*r) * 6, float32(2*r+1) * 6} // sum of (r+1) over 3 ranks = 6
	c.check("reduce_scatter", w.ReduceScatter(ctx, rsIn, rs, mw.Sum), rs, wantRS)

	// AllToAll: block j of rank r's send is {r, j}; rank r gets {k, r} from each k.
	a2aIn := make([]int64, 2*n)
	var wantA2A []int64
	for j := 0; j < n; j++ {
		a2aIn[2*j], a2aIn[2*j+1] = int64(r), int64(j)
		wantA2A = append(wantA2A, int64(j), int64(r))
	}
	a2a := make([]int64, 2*n)
	c.check("alltoall", w.AllToAll(ctx, a2aIn, a2a), a2a, wantA2A)
	c.check("alltoall in place", w.AllToAll(ctx, a2aIn, a2aIn), a2aIn, wantA2A)
	c.check("barrier", w.Barrier(ctx), nil, nil)
	if c.err != nil {
		return c.err
	}

	// The same collectives issued asynchronously on Buffers, all in flight
	// at once, completed by WaitAll.
	buf := func(v []int32) *mw.Buffer[int32] {
		b, err := mw.BufferFrom(v)
		if err != nil {
			panic(err)
		}
		return b
	}
	bc := buf(make([]int32, 3))
	if r == 0 {
		bc.CopyFrom([]int32{7, 8, 9})
	}
	arSend, arRecv := buf(vec(r, 3)), buf(make([]int32, 3))
	agRecv := buf(make([]int32, 3*n))
	var redRecv, gatRecv, scSend *mw.Buffer[int32]
	if r == 0 {
		redRecv, gatRecv, scSend = buf(make([]int32, 3)), buf(make([]int32, 3*n)), buf(wantAll)
	}
	scRecv := buf(make([]int32, 2))
	rsSend, rsRecv := buf(vec(r, 2*n)), buf(make([]int32, 2))
	a2aRecv := buf(make([]int32, 2*n))
	owned := []*mw.Buffer[int32]{bc, arSend, arRecv, agRecv, redRecv, gatRecv, scSend, scRecv, rsSend, rsRecv, a2aRecv}
	defer func() {
		for _, b := range owned {
			b.Close() // nil-safe
		}
	}()
	var reqs []*mw.Request
	issue := func(r *mw.Request, err error) {
		c.check("issue", err, nil, nil)
		if r != nil {
			reqs = append(reqs, r)
		}
	}
	issue(w.BroadcastAsync(bc, 0))
	issue(w.AllReduceAsync(arSend, arRecv, mw.Sum))
	issue(w.AllGatherAsync(arSend, agRecv))
	issue(w.ReduceAsync(arSend, redRecv, mw.Sum, 0))
	issue(w.GatherAsync(arSend, gatRecv, 0))
	issue(w.ScatterAsync(scSend, scRecv, 0))
	issue(w.ReduceScatterAsync(rsSend, rsRecv, mw.Min))
	issue(w.AllToAllAsync(rsSend, a2aRecv))
	issue(w.BarrierAsync())
	c.check("async", mw.WaitAll(ctx, reqs...), nil, nil)
	if c.err != nil {
		return c.err
	}
	sum3 := make([]int32, 3)
	for i := range sum3 {
		for k := 0; k < n; k++ {
			sum3[i] += input(k, i)
		}
	}
	var ag3 []int32
	for k := 0; k < n; k++ {
		ag3 = append(ag3, vec(k, 3)...)
	}
	c.check("broadcast async", nil, values(bc), []int32{7, 8, 9})
	c.check("allreduce async", nil, values(arRecv), sum3)
	c.check("allgather async", nil, values(agRecv), ag3)
	if r == 0 {
		c.check("reduce async", nil, values(redRecv), sum3)
		c.check("gather async", nil, values(gatRecv), ag3)
	}
	c.check("scatter async", nil, values(scRecv), vec(r, 2))
	c.check("reduce_scatter async", nil, values(rsRecv), vec(0, 2*n)[2*r:2*r+2]) // min is rank 0's
	var wantA []int32
	for k := 0; k < n; k++ {
		wantA = append(wantA, vec(k, 2*n)[2*r:2*r+2]...)
	}
	c.check("alltoall async", nil, values(a2aRecv), wantA)
	c.check("settle", settle(ctx, w), nil, nil)
	return c.err
}
