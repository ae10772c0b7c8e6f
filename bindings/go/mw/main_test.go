package mw_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/multiworld/multiworld/bindings/go/internal/redistest"
	"github.com/multiworld/multiworld/bindings/go/mw"
)

// The tests run real worker processes: the test binary re-executed with
// MWTEST_ROLE set, against a real redis-server (MW_REDIS_URL, or a private
// one started here when that is unset).
const (
	envRole  = "MWTEST_ROLE"
	envRank  = "MWTEST_RANK"
	envSize  = "MWTEST_SIZE"
	envWorld = "MWTEST_WORLD"
	envNS    = "MWTEST_NAMESPACE"
)

// scenario is what one member of a test group runs, in this process as
// rank 0 or in a worker process as another rank.
type scenario func(ctx context.Context, c *mw.Context, world string, rank, size int) error

var scenarios = map[string]scenario{}

// inWorld makes a scenario of a function of one world of the host backend
// (UCX where available, else Gloo).
func inWorld(f func(ctx context.Context, w *mw.World) error) scenario {
	return inWorldOn(mw.HostBackend(), f)
}

// hostBackends are the backends for host memory; the suites that move data
// run over each one the library has.
var hostBackends = []mw.Backend{mw.UCX, mw.Gloo}

// onHosts registers scenario role-<backend> for each host backend.
func onHosts(role string, f func(ctx context.Context, w *mw.World) error) {
	for _, b := range hostBackends {
		scenarios[role+"-"+b.String()] = inWorldOn(b, f)
	}
}

// groupOnHosts runs group(role-<backend>) as a subtest per host backend.
func groupOnHosts(t *testing.T, role string, size int) {
	for _, b := range hostBackends {
		t.Run(b.String(), func(t *testing.T) {
			skipUnavailable(t, b)
			group(t, role+"-"+b.String(), size)
		})
	}
}

func skipUnavailable(t *testing.T, b mw.Backend) {
	t.Helper()
	if !b.Available() {
		t.Skipf("the %v backend is not available in this library: mw_backend_available(MW_BACKEND_%s) = 0",
			b, strings.ToUpper(b.String()))
	}
}

// inWorldOn makes a scenario of a function of one world of backend b.
func inWorldOn(b mw.Backend, f func(ctx context.Context, w *mw.World) error) scenario {
	return func(ctx context.Context, c *mw.Context, world string, rank, size int) error {
		w, err := c.CreateWorld(ctx, world, rank, size, b)
		if err != nil {
			return fmt.Errorf("create %s rank %d: %w", world, rank, err)
		}
		defer w.Close()
		return f(ctx, w)
	}
}

func TestMain(m *testing.M) {
	if role := os.Getenv(envRole); role != "" {
		os.Exit(workerMain(role))
	}
	stop, err := redistest.Ensure()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mw tests need a redis-server:", err)
		os.Exit(1)
	}
	os.Setenv(envNS, fmt.Sprintf("gotest-%d-%d", os.Getpid(), time.Now().UnixNano()%1000000))
	code := m.Run()
	stop()
	os.Exit(code)
}

// newContext is a Context in the tests' namespace. Peers die here by
// SIGKILL, which breaks worlds through their sockets at once; the generous
// heartbeat timeout only keeps a heavily loaded machine (the race
// detector, parallel builds) from starving a healthy peer's heartbeat.
func newContext(opts ...mw.Option) (*mw.Context, error) {
	base := []mw.Option{mw.WithNamespace(os.Getenv(envNS)), mw.WithLogLevel("error"),
		mw.WithHeartbeat(100*time.Millisecond, 5*time.Second)}
	return mw.NewContext(append(base, opts...)...)
}

func workerMain(role string) int {
	f, ok := scenarios[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "worker: unknown role %q\n", role)
		return 2
	}
	rank, _ := strconv.Atoi(os.Getenv(envRank))
	size, _ := strconv.Atoi(os.Getenv(envSize))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := newContext()
	if err != nil {
		fmt.Fprintf(os.Stderr, "worker %s rank %d: %v\n", role, rank, err)
		return 1
	}
	defer c.Close()
	if err := f(ctx, c, os.Getenv(envWorld), rank, size); err != nil {
		fmt.Fprintf(os.Stderr, "worker %s rank %d: %v\n", role, rank, err)
		return 1
	}
	return 0
}

// settle is the last step before closing a world: a barrier, so that no
// member closes while another still runs an operation. When a member
// closes right after its barrier completed, the others' barrier can fail
// with ErrWorldBroken (the close breaks the world for them): every
// operation before the barrier has completed by then, so that is success.
func settle(ctx context.Context, w *mw.World) error {
	if err := w.Barrier(ctx); err != nil && !errors.Is(err, mw.ErrWorldBroken) {
		return err
	}
	return nil
}

// values is a copy of b's elements; nil once b is closed.
func values[T mw.Element](b *mw.Buffer[T]) []T {
	v, err := b.Values()
	if err != nil {
		return nil
	}
	return v
}

// worker is a spawned member process.
type worker struct {
	label string
	cmd   *exec.Cmd
	out   bytes.Buffer
	done  chan struct{}
	err   error
}

var nameRE = regexp.MustCompile(`[^A-Za-z0-9._:-]`)

// worldName is unique per test and run.
func worldName(tb testing.TB, suffix string) string {
	return nameRE.ReplaceAllString(fmt.Sprintf("%s-%d-%s", tb.Name(), os.Getpid(), suffix), "_")
}

// soloWorld is a world of one member of backend b in a new Context, which
// is closed when the test ends.
func soloWorld(tb testing.TB, b mw.Backend, opts ...mw.WorldOption) (*mw.Context, *mw.World) {
	tb.Helper()
	c, err := newContext()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := c.CreateWorld(ctx, worldName(tb, "solo"), 0, 1, b, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return c, w
}

func spawn(t *testing.T, role, world string, rank, size int) *worker {
	t.Helper()
	wk := &worker{label: fmt.Sprintf("%s rank %d of %s", role, rank, world), done: make(chan struct{})}
	wk.cmd = exec.Command(os.Args[0], "-test.run=^$")
	wk.cmd.Env = append(os.Environ(), envRole+"="+role, envRank+"="+strconv.Itoa(rank),
		envSize+"="+strconv.Itoa(size), envWorld+"="+world)
	wk.cmd.Stdout = &wk.out
	wk.cmd.Stderr = &wk.out
	if err := wk.cmd.Start(); err != nil {
		t.Fatalf("spawn %s: %v", role, err)
	}
	go func() {
		wk.err = wk.cmd.Wait()
		close(wk.done)
	}()
	t.Cleanup(func() {
		select {
		case <-wk.done:
		default:
			wk.cmd.Process.Kill()
			<-wk.done
		}
	})
	return wk
}

// wait waits for the worker to exit and fails the test unless it succeeded.
func (wk *worker) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-wk.done:
	case <-time.After(timeout):
		wk.cmd.Process.Kill()
		<-wk.done
		t.Errorf("worker %s timed out after %v:\n%s", wk.label, timeout, wk.out.String())
		return
	}
	if wk.err != nil {
		t.Errorf("worker %s: %v:\n%s", wk.label, wk.err, wk.out.String())
	}
}

// group runs scenario `role` as rank 0 here and ranks 1..size-1 in workers.
func group(t *testing.T, role string, size int) {
	t.Helper()
	world := worldName(t, "w")
	var workers []*worker
	for rank := 1; rank < size; rank++ {
		workers = append(workers, spawn(t, role, world, rank, size))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := newContext()
	if err != nil {
		t.Fatal(err)
	}
	err = scenarios[role](ctx, c, world, 0, size)
	c.Close()
	wait := 60 * time.Second
	if err != nil {
		t.Errorf("rank 0: %v", err)
		wait = 5 * time.Second // the workers may wait for rank 0 forever
	}
	for _, wk := range workers {
		wk.wait(t, wait)
	}
	checkNoLeaks(t, c)
}

// checkNoLeaks waits briefly for C buffers and requests to drain.
func checkNoLeaks(t *testing.T, c *mw.Context) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		live, inflight := mw.LiveBuffers(), mw.InFlight(c)
		if live == 0 && inflight == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("leak: %d C buffers live, %d requests in flight", live, inflight)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// procCounts reads this process's open descriptors and OS threads.
func procCounts(t *testing.T) (fds, threads int) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc:", err)
	}
	return procCountsErr()
}

func procCountsErr() (fds, threads int) {
	entries, _ := os.ReadDir("/proc/self/fd")
	return len(entries), statusField("/proc/self/status", "Threads")
}

// statusField is a number from a /proc status file; 0 when absent.
func statusField(path, key string) int {
	status, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, key+":") {
			v, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, key+":")))
			return v
		}
	}
	return 0
}
