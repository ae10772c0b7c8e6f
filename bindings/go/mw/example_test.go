package mw_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"

	"github.com/multiworld/multiworld/bindings/go/mw"
)

// Two members of one world sum a vector. Each member normally is its own
// process; here they are two goroutines with a Context each. Redis comes
// from $MW_REDIS_URL.
func Example() {
	ctx := context.Background()
	sums := make([][]float32, 2)
	var wg sync.WaitGroup
	for rank := 0; rank < 2; rank++ {
		wg.Add(1)
		go func(rank int) {
			defer wg.Done()
			c, err := mw.NewContext()
			if err != nil {
				log.Fatal(err)
			}
			defer c.Close()
			w, err := c.CreateWorld(ctx, "example-sum", rank, 2, mw.HostBackend())
			if err != nil {
				log.Fatal(err)
			}
			defer w.Close()
			sum := make([]float32, 3)
			if err := w.AllReduce(ctx, []float32{1, 2, float32(rank)}, sum, mw.Sum); err != nil {
				log.Fatal(err)
			}
			sums[rank] = sum
			w.Barrier(ctx) // both are done before either closes
		}(rank)
	}
	wg.Wait()
	fmt.Println(sums[0], sums[1])
	// Output: [2 4 1] [2 4 1]
}

// Asynchronous operations use Buffers, C memory the library may keep
// using after the call returns.
func ExampleWorld_SendAsync() {
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Add(2)
	run := func(rank int) {
		defer wg.Done()
		c, err := mw.NewContext()
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		w, err := c.CreateWorld(ctx, "example-async", rank, 2, mw.HostBackend())
		if err != nil {
			log.Fatal(err)
		}
		defer w.Close()
		buf, err := mw.NewBuffer[int64](4)
		if err != nil {
			log.Fatal(err)
		}
		defer buf.Close()
		var req *mw.Request
		if rank == 0 {
			buf.CopyFrom([]int64{4, 3, 2, 1})
			req, err = w.SendAsync(buf, 1)
		} else {
			req, err = w.RecvAsync(buf, 0)
		}
		if err != nil {
			log.Fatal(err)
		}
		// ... other work while the transfer runs ...
		if err := req.Wait(ctx); err != nil {
			log.Fatal(err)
		}
		if rank == 1 {
			got, _ := buf.Values()
			fmt.Println("received", got)
		}
		w.Barrier(ctx)
	}
	go run(0)
	go run(1)
	wg.Wait()
	// Output: received [4 3 2 1]
}

// A Poller returns requests in the order they complete.
func ExamplePoller() {
	ctx := context.Background()
	c, err := mw.NewContext()
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	w, err := c.CreateWorld(ctx, "example-poller", 0, 1, mw.HostBackend()) // a world of one
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	in, _ := mw.BufferFrom([]int32{1, 2, 3})
	out, _ := mw.NewBuffer[int32](3)
	defer in.Close()
	defer out.Close()
	r1, _ := w.AllReduceAsync(in, out, mw.Max)
	r2, _ := w.BarrierAsync()
	p := mw.NewPoller(r1, r2)
	for p.Len() > 0 {
		r, err := p.Next(ctx)
		if err != nil {
			log.Fatal(err)
		}
		_, opErr := r.Test()
		fmt.Println(r.Op(), opErr)
	}
	// Output:
	// allreduce <nil>
	// barrier <nil>
}

// Errors carry the library's status; each status is a sentinel.
func ExampleError() {
	c, err := mw.NewContext()
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	_, err = c.CreateWorld(context.Background(), "no spaces allowed", 0, 1, mw.HostBackend())
	fmt.Println(errors.Is(err, mw.ErrInvalidArgument), errors.Is(err, mw.ErrWorldBroken))
	var e *mw.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code)
	}
	// Output:
	// true false
	// MW_ERR_INVALID_ARGUMENT
}

func ExampleF16From() {
	h := mw.F16From(0.1)
	fmt.Printf("%#04x %.6f\n", uint16(h), h.Float32())
	// Output: 0x2e66 0.099976
}
