// Package pgcluster runs a throwaway PostgreSQL cluster: initdb into a
// temporary directory and a server on a free loopback port with trust
// authentication, fsync on (what is measured or tested on it is durable as
// on a real database), run as user postgres when this process is root
// (initdb refuses root), and stopped with this process if it dies. The
// tests' helper (internal/pgtest) and the load tool (memgate-bench) use it.
package pgcluster

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
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoPostgres: neither /usr/lib/postgresql/*/bin nor PATH has initdb.
var ErrNoPostgres = errors.New("no PostgreSQL: install postgresql (initdb)")

// Cluster is a PostgreSQL server in a temporary directory.
type Cluster struct {
	bin  string // directory of initdb and postgres
	dir  string // holds data/ and log
	port int
	cred *syscall.Credential // the user to run as; nil: this process's
	mu   sync.Mutex
	proc *exec.Cmd // the running postmaster; nil when stopped
	done chan struct{}
}

// URL is the address of a database of the cluster.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// New creates a cluster (initdb) and starts its server.
func New() (*Cluster, error) {
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
		return errors.New("pgcluster: the server is running")
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

// Restart stops the server as a crash would and starts it again.
func (c *Cluster) Restart() error {
	if err := c.Stop(true); err != nil {
		return err
	}
	return c.Start()
}

// Close stops the server and removes the cluster.
func (c *Cluster) Close() error {
	err := c.Stop(false)
	return errors.Join(err, os.RemoveAll(c.dir))
}

// Dir is the directory that holds the cluster (data/ and the server's log).
func (c *Cluster) Dir() string { return c.dir }

// CreateDB creates database name on the server of serverURL (a URL whose
// path names a database to connect to for that) and returns its URL and a
// function that drops it.
func CreateDB(ctx context.Context, serverURL, name string) (string, func(context.Context) error, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", nil, fmt.Errorf("pgcluster: database URL: %w", err)
	}
	ident := pgx.Identifier{name}.Sanitize()
	admin := func(ctx context.Context, sql string) error {
		conn, err := pgx.Connect(ctx, serverURL)
		if err != nil {
			return fmt.Errorf("connect to %s: %w", u.Redacted(), err)
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := admin(ctx, "CREATE DATABASE "+ident); err != nil {
		return "", nil, fmt.Errorf("pgcluster: create database %s: %w", name, err)
	}
	drop := func(ctx context.Context) error {
		if err := admin(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("pgcluster: drop database %s: %w", name, err)
		}
		return nil
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}

// Installed reports whether PostgreSQL's server programs are here: nil, or
// ErrNoPostgres.
func Installed() error {
	_, err := findBin()
	return err
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
	return "", ErrNoPostgres
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
