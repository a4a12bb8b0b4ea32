// Package pgtest gives tests a real PostgreSQL: a fresh empty database per
// test, on the server MEMGATE_TEST_POSTGRES names or, without it, on a
// throwaway cluster this package starts (initdb and postgres from
// /usr/lib/postgresql/*/bin or PATH, loopback only, a free port, fsync on,
// as user postgres when the tests run as root, since initdb refuses root).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the server URL tests use instead of a cluster of their own.
const EnvURL = "MEMGATE_TEST_POSTGRES"

// The cluster the tests of one binary share: started on the first New and
// stopped by Main.
var shared struct {
	mu      sync.Mutex
	cluster *Cluster
	err     error
	inMain  bool
}

// Main runs a package's tests (call it from TestMain) and then stops the
// cluster they shared, if one was started.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain with cleanup of its own: it returns the
// tests' exit code instead of exiting.
func Run(m *testing.M) int {
	shared.mu.Lock()
	shared.inMain = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	if c := shared.cluster; c != nil {
		if err := c.close(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
	shared.mu.Unlock()
	return code
}

// New returns the URL of a fresh, empty database, dropped when the test
// ends. Without PostgreSQL it fails the test when the environment sets CI
// and skips it otherwise.
func New(t testing.TB) string {
	t.Helper()
	if server := os.Getenv(EnvURL); server != "" {
		return createDB(t, server)
	}
	shared.mu.Lock()
	if !shared.inMain {
		// No Main to stop a shared cluster: this test gets its own.
		shared.mu.Unlock()
		return NewCluster(t).NewDB(t)
	}
	if shared.cluster == nil && shared.err == nil {
		shared.cluster, shared.err = startCluster()
	}
	c, err := shared.cluster, shared.err
	shared.mu.Unlock()
	if err != nil {
		unavailable(t, err)
	}
	return c.NewDB(t)
}

func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") != "" || !errors.Is(err, errNoPostgres) {
		t.Fatalf("pgtest: %v", err)
	}
	t.Skipf("pgtest: %v", err)
}

var errNoPostgres = errors.New("no PostgreSQL: set " + EnvURL + " or install postgresql (initdb)")

var dbSeq atomic.Int64

// createDB creates a database on server (a URL whose path names a
// database to connect to for that) and drops it when the test ends.
func createDB(t testing.TB, server string) string {
	t.Helper()
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("pgtest: %s: %v", EnvURL, err)
	}
	name := fmt.Sprintf("memgate_test_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6, dbSeq.Add(1))
	admin := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := admin("CREATE DATABASE " + name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		if err := admin("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// Cluster is a PostgreSQL server in a temp dir, for the tests of one
// binary or for a test that stops and starts it.
type Cluster struct {
	bin  string // directory of initdb and postgres
	dir  string // holds data/ and log
	port int
	cred *syscall.Credential // the user to run as; nil: this process's
	mu   sync.Mutex
	proc *exec.Cmd // the running postmaster; nil when stopped
	done chan struct{}
}

// NewCluster starts a cluster of the test's own, stopped and removed when
// the test ends.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	c, err := startCluster()
	if errors.Is(err, errNoPostgres) && os.Getenv(EnvURL) != "" {
		// The other tests run on that server; this one needs a server
		// it may stop.
		t.Skipf("pgtest: a cluster of the test's own needs initdb: %v", err)
	} else if err != nil {
		unavailable(t, err)
	}
	t.Cleanup(func() {
		if err := c.close(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return c
}

// URL is the address of a database of the cluster.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// NewDB creates a fresh database on the cluster and returns its URL.
func (c *Cluster) NewDB(t testing.TB) string { return createDB(t, c.URL("postgres")) }

func startCluster() (*Cluster, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, and initdb refuses root: %w", err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if c.dir, err = os.MkdirTemp("", "memgate-pgtest-"); err != nil {
		return nil, err
	}
	if c.cred != nil {
		if err := os.Chown(c.dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			os.RemoveAll(c.dir)
			return nil, err
		}
	}
	if out, err := c.command("initdb", "-D", c.data(), "-U", "postgres", "--auth=trust", "--encoding=UTF8",
		"--locale=C", "--no-sync").CombinedOutput(); err != nil {
		os.RemoveAll(c.dir)
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	if c.port, err = freePort(); err != nil {
		os.RemoveAll(c.dir)
		return nil, err
	}
	if err := c.Start(); err != nil {
		os.RemoveAll(c.dir)
		return nil, err
	}
	return c, nil
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	// Should the test binary die without stopping it, the server goes
	// too (immediate shutdown).
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGQUIT}
	return cmd
}

// Start starts the server (again) on its port and waits until it accepts
// connections.
func (c *Cluster) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil {
		return errors.New("pgtest: the cluster is running")
	}
	logf, err := os.OpenFile(filepath.Join(c.dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := c.command("postgres", "-D", c.data(), "-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "fsync=on", "-c", "synchronous_commit=on", "-c", "max_connections=300",
		"-c", "shared_buffers=32MB")
	cmd.Stdout, cmd.Stderr = logf, logf
	// Pdeathsig follows the thread that started the process, not this
	// one: the goroutine that starts it keeps its thread until the server
	// has exited, so the signal comes only if the test binary dies.
	started, done := make(chan error, 1), make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
		close(done)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.proc, c.done = cmd, done
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			cancel()
			return nil
		}
		cancel()
		select {
		case <-done:
			c.proc = nil
			log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
			return fmt.Errorf("postgres exited at start: %s", tail(log))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not accept connections: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the server: at once, as a crash would (pg_ctl stop -m
// immediate: no checkpoint, recovery at the next start), or cleanly.
func (c *Cluster) Stop(immediate bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return nil
	}
	sig := syscall.SIGINT // fast shutdown
	if immediate {
		sig = syscall.SIGQUIT
	}
	if err := c.proc.Process.Signal(sig); err != nil {
		return fmt.Errorf("stop postgres: %w", err)
	}
	select {
	case <-c.done:
	case <-time.After(time.Minute):
		c.proc.Process.Kill()
		<-c.done
	}
	c.proc = nil
	return nil
}

func (c *Cluster) close() error {
	err := c.Stop(false)
	return errors.Join(err, os.RemoveAll(c.dir))
}

// findBin finds the directory of initdb: the newest of Debian's
// /usr/lib/postgresql/<version>/bin, else PATH.
func findBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errNoPostgres
}

func version(bin string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return v
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
