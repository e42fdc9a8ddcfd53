package redis_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/redis"
)

// loadChildEnv names the environment variable that makes this test binary a
// load process for TestOutsideTwoProcesses instead of running tests; its
// value is the JSON of a loadSpec.
const loadChildEnv = "SLIDELIMIT_REDIS_LOAD_CHILD"

// loadSpec is what a load process is told: the server, the limiter, the key
// and how many goroutines to run.
type loadSpec struct {
	Addr       string
	Exact      bool
	Key        string
	Goroutines int
}

// twoProcessRules are the rules of both processes' limiters.
var twoProcessRules = []redis.Rule{{Limit: 30, Window: 20 * time.Millisecond}, {Limit: 100, Window: 200 * time.Millisecond}}

func TestMain(m *testing.M) {
	if spec := os.Getenv(loadChildEnv); spec != "" {
		os.Exit(loadChild(spec, os.Stdin, os.Stdout))
	}
	os.Exit(runTests(m)) // the examples' redis-server: example_test.go
}

// loadChild is a load process: it builds its own client and limiter, writes
// "ready", waits for a line on in, runs the load, and writes the loadResult
// as JSON on out. It returns the exit status.
func loadChild(specJSON string, in io.Reader, out io.Writer) int {
	var spec loadSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "load process:", err)
		return 2
	}
	gc := goredis.NewClient(&goredis.Options{Addr: spec.Addr, ContextTimeoutEnabled: true})
	defer gc.Close()
	l, err := newLoadLimiter(gc, spec.Exact)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load process:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fmt.Fprintln(out, "ready")
	if _, err := bufio.NewReader(in).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "load process: waiting for the start:", err)
		return 1
	}
	res, err := runLoad(ctx, spec.Key, spec.Goroutines, l)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load process:", err)
		return 1
	}
	if err := json.NewEncoder(out).Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "load process:", err)
		return 1
	}
	return 0
}

// newLoadLimiter returns the exact log or the window over twoProcessRules on
// gc, deciding on the server's clock.
func newLoadLimiter(gc *goredis.Client, exact bool) (*redis.Limiter, error) {
	c, err := redis.NewGoRedis(gc)
	if err != nil {
		return nil, err
	}
	newf := redis.NewWindow
	if exact {
		newf = redis.NewLog
	}
	return newf(c, redis.Options{Timeout: time.Second}, twoProcessRules...)
}

// TestOutsideTwoProcesses: 16 goroutines in two processes (this test and a
// copy of its binary, each with its own client) hit one key on the server's
// clock with weighted calls, at the same time. Seen from outside, through the
// instants the script returned for the admitted calls of both processes, no
// window of any rule holds more than its limit for the exact log, and no more
// than 2*limit-1 for the window.
func TestOutsideTwoProcesses(t *testing.T) {
	s, gc, _ := standalone(t)
	for _, exact := range []bool{true, false} {
		t.Run(fmt.Sprintf("exact=%v", exact), func(t *testing.T) {
			key := fmt.Sprintf("two-processes-%v", exact)
			spec, err := json.Marshal(loadSpec{Addr: s.Addr(), Exact: exact, Key: key, Goroutines: 8})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), loadChildEnv+"="+string(spec))
			stderr := &syncBuffer{}
			cmd.Stderr = stderr
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			defer func() { _ = cmd.Wait() }() // on a failure below: stopped by ctx
			r := bufio.NewReader(stdout)
			line, err := r.ReadString('\n')
			require.NoError(t, err, "the load process did not start: %s", stderr.String())
			require.Equal(t, "ready\n", line)

			l, err := newLoadLimiter(gc, exact)
			require.NoError(t, err)
			_, err = io.WriteString(stdin, "go\n")
			require.NoError(t, err)
			ours, err := runLoad(ctx, key, 8, l)
			require.NoError(t, err)
			var theirs loadResult
			require.NoError(t, json.NewDecoder(r).Decode(&theirs), "the load process's result: %s", stderr.String())
			require.NoError(t, cmd.Wait(), "the load process: %s", stderr.String())

			// Both processes decided, and during a common span of the
			// server's time: they contended for the key.
			require.NotZero(t, ours.First)
			require.NotZero(t, theirs.First)
			require.Less(t, max(ours.First, theirs.First), min(ours.Last, theirs.Last),
				"the two processes' decisions did not overlap: this one %d..%d µs, the other %d..%d", ours.First, ours.Last, theirs.First, theirs.Last)
			t.Logf("this process: %d admitted, %d refused; the other: %d admitted, %d refused; overlap %d µs",
				len(ours.Admitted), ours.Refused, len(theirs.Admitted), theirs.Refused,
				min(ours.Last, theirs.Last)-max(ours.First, theirs.First))
			all := loadResult{
				Admitted: append(append([]oracle.Stamp(nil), ours.Admitted...), theirs.Admitted...),
				Refused:  ours.Refused + theirs.Refused,
			}
			checkLoad(t, exact, twoProcessRules, all)
		})
	}
}

// syncBuffer is a bytes.Buffer that the goroutine copying a process's stderr
// and the test may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
