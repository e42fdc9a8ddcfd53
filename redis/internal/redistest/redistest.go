// Package redistest starts real redis-server processes for tests: one
// standalone server (a replica, with --replicaof), a Sentinel, or a Redis
// Cluster of three masters (with a replica each, or none), on free loopback
// ports with temporary directories, stopped when the test ends.
//
// When redis-server is not installed, the tests that need it are skipped with
// a message, except when the environment variable CI is "true": then they
// fail, so that CI can never pass by skipping.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is one redis-server process.
type Server struct {
	t     testing.TB // nil for a server started by StartOutsideTest
	Port  int
	dir   string
	owned bool // dir was made by StartOutsideTest, which removes it on Close
	args  []string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Addr is the server's address, 127.0.0.1:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// need finds a program or skips (fails under CI=true) the test.
func need(t testing.TB, prog string) string {
	t.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		msg := fmt.Sprintf("%s not found in PATH: install it (apt-get install redis-server redis-tools) to run the Redis tests", prog)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: failing instead of skipping)")
		}
		t.Skip(msg)
	}
	return p
}

// findPort returns a loopback port that was free a moment ago, and whose
// cluster bus port (port+10000) was free too when bus is set.
func findPort(bus bool) (int, error) {
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redistest: no free port: %w", err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		if !bus {
			return p, nil
		}
		if p+10000 > 65535 {
			continue
		}
		if ln2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000)); err == nil {
			_ = ln2.Close()
			return p, nil
		}
	}
	return 0, fmt.Errorf("redistest: no free port pair (P, P+10000) after 50 tries")
}

// Start starts a standalone redis-server and stops it when the test ends.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	return start(t, false, extra...)
}

func start(t testing.TB, cluster bool, extra ...string) *Server {
	t.Helper()
	s, err := launchNew(t, need(t, "redis-server"), cluster, extra)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartOutsideTest starts a standalone redis-server for code that has no
// test to tie it to (the package's examples, from TestMain): on a free
// loopback port, in a temporary directory of its own. The caller must call
// Close. It returns an error wrapping exec.ErrNotFound when redis-server is
// not installed; the caller decides whether that skips or fails. Restart is
// not available on such a server.
func StartOutsideTest(extra ...string) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	return launchNew(nil, bin, false, extra)
}

// launchNew starts a server, trying up to five free ports (a port found free
// may be taken before the server binds it), in t's temporary directory, or,
// with a nil t, in one of its own that Close removes.
func launchNew(t testing.TB, bin string, cluster bool, extra []string) (*Server, error) {
	var last error
	for range 5 {
		port, err := findPort(cluster)
		if err != nil {
			return nil, err
		}
		s := &Server{t: t, Port: port}
		if t != nil {
			s.dir = t.TempDir()
		} else if s.dir, err = os.MkdirTemp("", "redistest-"); err != nil {
			return nil, err
		} else {
			s.owned = true
		}
		s.setArgs(bin, cluster, extra)
		if last = s.launch(); last == nil {
			return s, nil
		}
		if s.owned {
			_ = os.RemoveAll(s.dir)
		}
	}
	return nil, fmt.Errorf("redistest: redis-server did not start: %w", last)
}

// Close stops the server and, for one started by StartOutsideTest, removes
// its directory.
func (s *Server) Close() {
	s.Stop()
	if s.owned {
		_ = os.RemoveAll(s.dir)
	}
}

// setArgs sets the command line: bin, the server's port and directory,
// nothing persisted, cluster mode if asked, then extra.
func (s *Server) setArgs(bin string, cluster bool, extra []string) {
	s.args = []string{
		"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no",
		"--logfile", filepath.Join(s.dir, "redis.log"),
	}
	if cluster {
		s.args = append(s.args, "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(s.dir, "nodes.conf"),
			"--cluster-node-timeout", "2000", "--cluster-require-full-coverage", "no")
	}
	s.args = append(s.args, extra...)
	s.args = append([]string{bin}, s.args...)
}

// launch starts the process and waits until it answers PING.
func (s *Server) launch() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.args[0], s.args[1:]...)
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd = cmd
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if reply, err := Do(s.Addr(), "PING"); err == nil && reply == "PONG" {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	s.cmd = nil
	log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	return fmt.Errorf("no PONG from %s within 5s; log:\n%s", s.Addr(), log)
}

// Stop kills the server (SIGKILL, as a crash would) and waits for it. It is
// idempotent.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Freeze stops the server's process without ending it (SIGSTOP), as a
// machine that hangs or a network partition would: its connections stay
// open and nothing answers. Stop still kills it.
func (s *Server) Freeze() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(syscall.SIGSTOP)
	}
}

// Restart starts a stopped server again on the same port, empty (nothing is
// persisted).
func (s *Server) Restart() {
	s.t.Helper()
	var err error
	for range 20 { // the port may linger for a moment after the kill
		if err = s.launch(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("redistest: restarting %s: %v", s.Addr(), err)
}

// Do sends one command in RESP and returns the reply as text: a simple
// string, an error ("ERR ..."), an integer or a bulk string; arrays are
// joined with newlines. It is for test plumbing (PING, CLUSTER INFO), not for
// the code under test.
func Do(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	return readReply(bufio.NewReader(c))
}

func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("empty reply line")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("%s", line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		parts := make([]string, 0, max(n, 0))
		for range n {
			p, err := readReply(r)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, "\n"), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

func ioReadFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Cluster is a Redis Cluster of three masters, with or without a replica
// each.
type Cluster struct {
	Nodes []*Server
}

// Addrs returns the nodes' addresses.
func (c *Cluster) Addrs() []string {
	a := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		a[i] = n.Addr()
	}
	return a
}

// StartCluster starts three cluster-enabled servers (a node that stops does
// not stop the others from serving their slots: full coverage is not
// required), joins them with
// redis-cli --cluster create, waits until every node reports cluster_state:ok,
// and stops them when the test ends.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	return startCluster(t, 0)
}

// StartClusterReplicas is StartCluster with a replica for each master (six
// nodes), which is promoted when its master fails (after the nodes' timeout
// of 2 s). It returns once every replica has synchronised with its master.
func StartClusterReplicas(t testing.TB) *Cluster {
	t.Helper()
	c := startCluster(t, 1)
	// redis-cli assigns the replicas after the cluster is up: wait until
	// three nodes are replicas with their link up, and every node's view
	// of the cluster lists three replicas.
	waitFor(t, time.Now().Add(30*time.Second), "the cluster's replicas to come up", func() (bool, string) {
		ready := 0
		for _, n := range c.Nodes {
			info, err := Do(n.Addr(), "INFO", "replication")
			if err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up") {
				ready++
			}
			nodes, err := Do(n.Addr(), "CLUSTER", "NODES")
			if err != nil || strings.Count(nodes, "slave ") != 3 {
				return false, fmt.Sprintf("%s lists %d replicas (%v)", n.Addr(), strings.Count(nodes, "slave "), err)
			}
		}
		return ready == 3, fmt.Sprintf("%d replicas ready", ready)
	})
	// A link that is up is not enough (see StartReplica): write a probe key
	// on each master, in one of its own slots, and wait until the master's
	// replica holds it (DBSIZE: a replica redirects reads of keys), then
	// until it has seen the probe deleted.
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range c.Nodes {
		replica := c.replicaOf(t, n)
		if replica == nil {
			continue // n is a replica
		}
		key := ""
		for i := 0; key == ""; i++ {
			k := fmt.Sprintf("redistest:replication-probe:%d", i)
			_, err := Do(n.Addr(), "SET", k, "1")
			switch {
			case err == nil:
				key = k
			case !strings.Contains(err.Error(), "MOVED") || i > 10000:
				t.Fatalf("redistest: writing a replication probe on %s: %v", n.Addr(), err)
			}
		}
		for _, want := range []string{"1", "0"} {
			waitFor(t, deadline, "replica "+replica.Addr()+" to hold "+want+" key(s) of "+n.Addr(), func() (bool, string) {
				v, err := Do(replica.Addr(), "DBSIZE")
				return err == nil && v == want, fmt.Sprint(v, " ", err)
			})
			if want == "1" {
				if _, err := Do(n.Addr(), "DEL", key); err != nil {
					t.Fatalf("redistest: deleting the replication probe on %s: %v", n.Addr(), err)
				}
			}
		}
	}
	return c
}

// replicaOf returns the node that replicates m, or nil if m is a replica
// itself.
func (c *Cluster) replicaOf(t testing.TB, m *Server) *Server {
	t.Helper()
	info, err := Do(m.Addr(), "INFO", "replication")
	if err != nil {
		t.Fatalf("redistest: INFO replication on %s: %v", m.Addr(), err)
	}
	if !strings.Contains(info, "role:master") {
		return nil
	}
	for _, n := range c.Nodes {
		ri, err := Do(n.Addr(), "INFO", "replication")
		if err == nil && strings.Contains(ri, "role:slave") && strings.Contains(ri, "master_port:"+strconv.Itoa(m.Port)+"\r\n") {
			return n
		}
	}
	t.Fatalf("redistest: no replica of %s", m.Addr())
	return nil
}

// StartReplica starts a standalone primary and a replica of it, and returns
// once the replica has synchronised and receives the primary's writes.
//
// A link that is up is not enough: after a diskless synchronisation Redis
// 7.0 streams the primary's writes to the replica only once the replica has
// acknowledged the copy, which it may do up to a second later; until then a
// write on the primary (here a probe key, deleted once seen) is not on the
// replica, and a crash of the primary loses it.
func StartReplica(t testing.TB) (primary, replica *Server) {
	t.Helper()
	primary = start(t, false, noSyncDelay...)
	replica = start(t, false, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port))
	deadline := time.Now().Add(20 * time.Second)
	waitSynced(t, replica, deadline)
	const probe = "redistest:replication-probe"
	if _, err := Do(primary.Addr(), "SET", probe, "1"); err != nil {
		t.Fatalf("redistest: writing the replication probe: %v", err)
	}
	waitFor(t, deadline, "replica "+replica.Addr()+" to receive the primary's writes", func() (bool, string) {
		v, err := Do(replica.Addr(), "GET", probe)
		return err == nil && v == "1", fmt.Sprint(v, " ", err)
	})
	if _, err := Do(primary.Addr(), "DEL", probe); err != nil {
		t.Fatalf("redistest: deleting the replication probe: %v", err)
	}
	waitFor(t, deadline, "replica "+replica.Addr()+" to delete the probe", func() (bool, string) {
		v, err := Do(replica.Addr(), "EXISTS", probe)
		return err == nil && v == "0", fmt.Sprint(v, " ", err)
	})
	return primary, replica
}

// noSyncDelay starts a replica's first synchronisation at once, not after
// the default 5 s.
var noSyncDelay = []string{"--repl-diskless-sync-delay", "0"}

// waitSynced waits until s is a replica whose link to its master is up,
// failing t at deadline.
func waitSynced(t testing.TB, s *Server, deadline time.Time) {
	t.Helper()
	waitFor(t, deadline, "replica "+s.Addr()+" to synchronise", func() (bool, string) {
		info, err := Do(s.Addr(), "INFO", "replication")
		return err == nil && strings.Contains(info, "master_link_status:up"), fmt.Sprint(err, " ", info)
	})
}

// waitFor calls cond every 20 ms until it holds, failing t at deadline with
// what it waited for and cond's last detail.
func waitFor(t testing.TB, deadline time.Time, what string, cond func() (ok bool, detail string)) {
	t.Helper()
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: waited in vain for %s: %s", what, detail)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func startCluster(t testing.TB, replicas int) *Cluster {
	t.Helper()
	cli := need(t, "redis-cli")
	c := &Cluster{}
	for range 3 * (1 + replicas) {
		c.Nodes = append(c.Nodes, start(t, true, noSyncDelay...))
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range c.Nodes {
		waitFor(t, deadline, "cluster_state:ok on "+n.Addr(), func() (bool, string) {
			info, err := Do(n.Addr(), "CLUSTER", "INFO")
			return err == nil && strings.Contains(info, "cluster_state:ok"), fmt.Sprint(err, " ", info)
		})
	}
	return c
}

// StartSentinel starts a Sentinel (redis-server --sentinel) that monitors
// master under name, with a quorum of one (it alone decides a failover) and
// a master judged down after 500 ms without an answer, and stops it when the
// test ends.
func StartSentinel(t testing.TB, name string, master *Server) *Server {
	t.Helper()
	bin := need(t, "redis-server")
	var last error
	for range 5 { // a port found free may be taken before the server binds it
		port, err := findPort(false)
		if err != nil {
			t.Fatal(err)
		}
		s := &Server{t: t, Port: port, dir: t.TempDir()}
		conf := filepath.Join(s.dir, "sentinel.conf")
		body := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\ndir %s\nlogfile %s\n"+
			"sentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %[4]s 500\nsentinel failover-timeout %[4]s 5000\n",
			port, s.dir, filepath.Join(s.dir, "redis.log"), name, master.Port)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		// Sentinel rewrites its configuration file as it learns.
		s.args = []string{bin, conf, "--sentinel"}
		if last = s.launch(); last == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("redistest: sentinel did not start: %v", last)
	return nil
}
