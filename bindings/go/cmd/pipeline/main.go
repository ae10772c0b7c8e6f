// Command pipeline is a three-process serving pipeline over multiworld: a
// frontend feeds requests to two replicated workers, each reached through
// its own two-member world (UCX where the library has it, else Gloo), and
// collects their results. Every world is its own fault domain, so when a
// worker is killed only its world breaks: the frontend sees ErrWorldBroken
// on that worker's requests, requeues what it had in flight and keeps
// serving on the other worker (and, with -respawn, starts a replacement
// that joins a new incarnation of the same world).
//
// Usage:
//
//	pipeline [-requests N] [-kill-after K] [-respawn] [-len L] [-heartbeat-timeout D]
//
// The frontend starts the workers itself (this binary again, with
// MW_PIPELINE_ROLE=worker). Redis comes from MW_REDIS_URL; the data
// transport listens on MW_BIND_ADDRESS (e.g. 127.0.0.1). It exits 0 when
// every request was served with a correct result.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/multiworld/multiworld/bindings/go/mw"
)

const (
	envRole      = "MW_PIPELINE_ROLE"
	envWorld     = "MW_PIPELINE_WORLD"
	envID        = "MW_PIPELINE_ID"
	envHeartbeat = "MW_PIPELINE_HEARTBEAT_TIMEOUT"
)

func main() {
	if isWorker() {
		os.Exit(workerMain())
	}
	if _, err := run(os.Args[1:]); err != nil {
		log.Fatalf("frontend: %v", err)
	}
}

func isWorker() bool { return os.Getenv(envRole) == "worker" }

type config struct {
	requests  int
	killAfter int
	respawn   bool
	length    int
	heartbeat time.Duration
}

// newContext is the Context of every process of the pipeline; they share
// the heartbeat timeout (a silent peer breaks its worlds after it).
func newContext(heartbeat time.Duration) (*mw.Context, error) {
	return mw.NewContext(mw.WithLogLevel("error"), mw.WithHeartbeat(heartbeat/10, heartbeat))
}

// The transformation the workers apply, and the frontend checks.
func input(req, i int) float32    { return float32(req) + float32(i)/1024 }
func transform(x float32) float32 { return 2*x + 1 }

// summary is what a run did.
type summary struct {
	served map[int]int // results per worker id
	killed bool
}

func run(args []string) (summary, error) {
	fs := flag.NewFlagSet("pipeline", flag.ContinueOnError)
	var cfg config
	fs.IntVar(&cfg.requests, "requests", 300, "requests to serve")
	fs.IntVar(&cfg.killAfter, "kill-after", 100, "kill worker 1 (SIGKILL) after this many results; 0: never")
	fs.BoolVar(&cfg.respawn, "respawn", false, "start a replacement for the killed worker")
	fs.IntVar(&cfg.length, "len", 4096, "float32 elements per request")
	fs.DurationVar(&cfg.heartbeat, "heartbeat-timeout", time.Second, "a process silent this long breaks its worlds")
	if err := fs.Parse(args); err != nil {
		return summary{}, err
	}
	log.SetFlags(log.Lmicroseconds)
	f, err := newFrontend(cfg)
	if err != nil {
		return summary{}, err
	}
	defer f.close()
	return f.serve()
}

var runs atomic.Int64

type job struct{ id int }

type result struct {
	job    job
	worker int
	out    []float32
}

type frontend struct {
	cfg    config
	prefix string
	c      *mw.Context
	jobs   chan job
	res    chan result

	mu    sync.Mutex
	procs map[int]*exec.Cmd
	done  sync.WaitGroup // reapers of worker processes
}

func newFrontend(cfg config) (*frontend, error) {
	c, err := newContext(cfg.heartbeat)
	if err != nil {
		return nil, err
	}
	return &frontend{
		cfg:    cfg,
		prefix: fmt.Sprintf("pipeline-%d-%d", os.Getpid(), runs.Add(1)),
		c:      c,
		jobs:   make(chan job, cfg.requests),
		res:    make(chan result, cfg.requests),
		procs:  map[int]*exec.Cmd{},
	}, nil
}

func (f *frontend) worldName(id int) string { return fmt.Sprintf("%s-w%d", f.prefix, id) }

// spawn starts worker id as a process of this same binary.
func (f *frontend) spawn(id int) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envRole+"=worker", envWorld+"="+f.worldName(id), fmt.Sprintf("%s=%d", envID, id),
		envHeartbeat+"="+f.cfg.heartbeat.String())
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	f.mu.Lock()
	f.procs[id] = cmd
	f.mu.Unlock()
	f.done.Add(1)
	go func() {
		defer f.done.Done()
		err := cmd.Wait()
		log.Printf("frontend: worker %d (pid %d) exited: %v", id, cmd.Process.Pid, exitText(err))
	}()
	return nil
}

func exitText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func (f *frontend) kill(id int) {
	f.mu.Lock()
	cmd := f.procs[id]
	f.mu.Unlock()
	log.Printf("frontend: killing worker %d (pid %d)", id, cmd.Process.Pid)
	cmd.Process.Kill()
}

func (f *frontend) serve() (summary, error) {
	cfg := f.cfg
	for i := 0; i < cfg.requests; i++ {
		f.jobs <- job{id: i}
	}
	go func() {
		for ev := range f.c.Events() {
			log.Printf("frontend: event: %v", ev)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var loops sync.WaitGroup
	for id := 1; id <= 2; id++ {
		if err := f.spawn(id); err != nil {
			return summary{}, err
		}
		loops.Add(1)
		go func(id int) {
			defer loops.Done()
			f.workerLoop(ctx, id)
		}(id)
	}

	start := time.Now()
	sum := summary{served: map[int]int{}}
	seen := make([]bool, cfg.requests)
	total := 0
	for total < cfg.requests {
		select {
		case r := <-f.res:
			for i, y := range r.out {
				if y != transform(input(r.job.id, i)) {
					return sum, fmt.Errorf("request %d from worker %d: element %d is %v", r.job.id, r.worker, i, y)
				}
			}
			if seen[r.job.id] {
				return sum, fmt.Errorf("request %d served twice", r.job.id)
			}
			seen[r.job.id] = true
			sum.served[r.worker]++
			total++
			if total == cfg.killAfter {
				f.kill(1)
				sum.killed = true
			}
		case <-time.After(30 * time.Second):
			return sum, fmt.Errorf("stalled after %d of %d requests", total, cfg.requests)
		}
	}
	elapsed := time.Since(start)
	cancel()
	loops.Wait()
	f.done.Wait()
	fmt.Printf("pipeline: served %d/%d requests in %v (worker 1: %d, worker 2: %d)\n",
		total, cfg.requests, elapsed.Round(time.Millisecond), sum.served[1], sum.served[2])
	return sum, nil
}

// workerLoop serves jobs on worker id's world until ctx ends (then it stops
// the worker) or the world fails (then it requeues the job in flight).
func (f *frontend) workerLoop(ctx context.Context, id int) {
	respawned := false
	for {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		w, err := f.c.CreateWorld(cctx, f.worldName(id), 0, 2, mw.HostBackend())
		cancel()
		if err != nil {
			log.Printf("frontend: worker %d: %v", id, err)
			return
		}
		log.Printf("frontend: %v formed", w)
		err = f.serveWorld(ctx, w, id)
		w.Close()
		if err == nil || ctx.Err() != nil {
			return
		}
		log.Printf("frontend: worker %d failed: %v", id, err)
		if !errors.Is(err, mw.ErrWorldBroken) || !f.cfg.respawn || respawned {
			return
		}
		respawned = true
		if err := f.spawn(id); err != nil {
			log.Printf("frontend: respawn worker %d: %v", id, err)
			return
		}
	}
}

// serveWorld sends requests to the worker over w with the asynchronous
// operations on library-owned buffers, reused from request to request.
func (f *frontend) serveWorld(ctx context.Context, w *mw.World, id int) error {
	n := f.cfg.length
	hdr, err1 := mw.NewBuffer[int64](2)
	in, err2 := mw.NewBuffer[float32](n)
	out, err3 := mw.NewBuffer[float32](n)
	defer hdr.Close() // safe while requests are pending: freed when they end
	defer in.Close()
	defer out.Close()
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			return err
		}
	}
	for {
		var j job
		select {
		case <-ctx.Done():
			return stopWorker(w)
		case j = <-f.jobs:
		}
		if _, err := hdr.CopyFrom([]int64{int64(j.id), int64(n)}); err != nil {
			return err
		}
		err := in.With(func(x []float32) error {
			for i := range x {
				x[i] = input(j.id, i)
			}
			return nil
		})
		if err == nil {
			err = f.roundTrip(ctx, w, hdr, in, out)
		}
		if err != nil {
			f.jobs <- j // another worker serves it
			log.Printf("frontend: request %d requeued", j.id)
			return err
		}
		y, err := out.Values()
		if err != nil {
			return err
		}
		f.res <- result{job: j, worker: id, out: y}
	}
}

func (f *frontend) roundTrip(ctx context.Context, w *mw.World, hdr *mw.Buffer[int64], in, out *mw.Buffer[float32]) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var reqs []*mw.Request
	for _, issue := range []func() (*mw.Request, error){
		func() (*mw.Request, error) { return w.SendAsync(hdr, 1) },
		func() (*mw.Request, error) { return w.SendAsync(in, 1) },
		func() (*mw.Request, error) { return w.RecvAsync(out, 1) },
	} {
		r, err := issue()
		if err != nil {
			return err
		}
		reqs = append(reqs, r)
	}
	return mw.WaitAll(ctx, reqs...)
}

// stopWorker tells the worker to exit and waits until it has heard it.
func stopWorker(w *mw.World) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Send(ctx, []int64{-1, 0}, 1); err != nil {
		return err
	}
	// The worker closes its side once the barrier completes there.
	if err := w.Barrier(ctx); err != nil && !errors.Is(err, mw.ErrWorldBroken) {
		return err
	}
	return nil
}

func (f *frontend) close() {
	f.c.Close()
}

// workerMain is a worker process: it applies transform to every request of
// its world until the frontend says stop.
func workerMain() int {
	id := os.Getenv(envID)
	log.SetFlags(log.Lmicroseconds)
	log.SetPrefix("worker " + id + ": ")
	ctx := context.Background()
	heartbeat, err := time.ParseDuration(os.Getenv(envHeartbeat))
	if err != nil {
		heartbeat = time.Second
	}
	c, err := newContext(heartbeat)
	if err != nil {
		log.Print(err)
		return 1
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	w, err := c.CreateWorld(cctx, os.Getenv(envWorld), 1, 2, mw.HostBackend())
	cancel()
	if err != nil {
		log.Print(err)
		return 1
	}
	defer w.Close()
	log.Printf("joined %v (pid %d)", w, os.Getpid())
	hdr := make([]int64, 2)
	served := 0
	for {
		if err := w.Recv(ctx, hdr, 0); err != nil {
			if errors.Is(err, mw.ErrWorldBroken) { // the frontend closed or died
				log.Printf("after %d requests, the frontend is gone: %v", served, err)
				return 0
			}
			log.Printf("after %d requests: %v", served, err)
			return 1
		}
		if hdr[0] < 0 {
			break
		}
		buf := make([]float32, hdr[1])
		if err := w.Recv(ctx, buf, 0); err != nil {
			log.Print(err)
			return 1
		}
		for i, x := range buf {
			buf[i] = transform(x)
		}
		if err := w.Send(ctx, buf, 0); err != nil {
			log.Print(err)
			return 1
		}
		served++
	}
	// The frontend closes the world when the barrier completes on its side,
	// which may break it here first: the stop was received, so that is fine.
	if err := w.Barrier(ctx); err != nil && !errors.Is(err, mw.ErrWorldBroken) {
		log.Print(err)
		return 1
	}
	log.Printf("served %d requests, stopping", served)
	return 0
}
