package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgCluster is a throwaway PostgreSQL cluster for one run of the tool:
// initdb into a temporary directory, a server on a free loopback port with
// trust authentication, removed when the run ends. Its commits are
// durable (fsync and synchronous_commit keep their defaults), so the
// figures measured on it are those of a real database on this disk.
type pgCluster struct {
	bin  string // directory of initdb and pg_ctl
	dir  string // holds data/, the socket and server.log
	port int
	// cred runs the server as the user postgres when we are root, since
	// initdb refuses root.
	cred *syscall.Credential
	log  io.Writer
}

// startPGCluster creates and starts a cluster. log receives progress lines.
func startPGCluster(ctx context.Context, log io.Writer) (*pgCluster, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	c := &pgCluster{bin: bin, log: log}
	var uid, gid int = -1, -1
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("pg cluster: running as root, and initdb refuses root: %w", err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if c.dir, err = os.MkdirTemp("", "memgate-bench-pg-"); err != nil {
		return nil, fmt.Errorf("pg cluster: %w", err)
	}
	if c.cred != nil {
		if err := os.Chown(c.dir, uid, gid); err != nil {
			c.remove()
			return nil, fmt.Errorf("pg cluster: %w", err)
		}
	}
	// initdb alone may skip its fsyncs: a crash during setup only fails
	// the run. The server keeps fsync on.
	if err := c.run(ctx, "initdb", "-D", c.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8",
		"--no-sync", "--no-instructions"); err != nil {
		c.remove()
		return nil, err
	}
	if c.port, err = freePort(); err != nil {
		c.remove()
		return nil, err
	}
	// N sidecars and N baseline handlers, each with a pool, need more
	// than the default 100 connections at 4 instances on a large machine.
	conf := fmt.Sprintf("\nport = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nmax_connections = 300\n",
		c.port, c.dir)
	if err := appendFile(filepath.Join(c.data(), "postgresql.conf"), conf); err != nil {
		c.remove()
		return nil, fmt.Errorf("pg cluster: %w", err)
	}
	if err := c.pgCtl(ctx, "start"); err != nil {
		c.remove()
		return nil, err
	}
	fmt.Fprintf(log, "started PostgreSQL (%s) on 127.0.0.1:%d in %s\n", filepath.Base(filepath.Dir(bin)), c.port, c.dir)
	return c, nil
}

func (c *pgCluster) data() string { return filepath.Join(c.dir, "data") }

// URL is the connection URL of database db.
func (c *pgCluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, url.PathEscape(db))
}

// Restart stops the server as a crash would (pg_ctl -m immediate: no
// checkpoint, recovery from the WAL at start) and starts it again.
func (c *pgCluster) Restart(ctx context.Context) error {
	return c.pgCtl(ctx, "restart", "-m", "immediate")
}

// Close stops the server and removes the cluster.
func (c *pgCluster) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := c.pgCtl(ctx, "stop", "-m", "fast")
	c.remove()
	return err
}

func (c *pgCluster) remove() { os.RemoveAll(c.dir) }

func (c *pgCluster) pgCtl(ctx context.Context, action string, args ...string) error {
	return c.run(ctx, "pg_ctl", append([]string{"-D", c.data(), "-l", filepath.Join(c.dir, "server.log"), "-w", "-t", "60", action}, args...)...)
}

func (c *pgCluster) run(ctx context.Context, tool string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, tool), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	if err := cmd.Run(); err != nil {
		logTail, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		return fmt.Errorf("pg cluster: %s %s: %w\n%s%s", tool, strings.Join(args, " "), err, out.Bytes(), tail(logTail, 2000))
	}
	return nil
}

// pgBinDir finds initdb and pg_ctl: the newest /usr/lib/postgresql/*/bin
// (Debian's layout, where they are not on PATH), else PATH.
func pgBinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("pg cluster: no pg_ctl in /usr/lib/postgresql/*/bin or on PATH; install PostgreSQL or give -store URL")
}

func pgVersion(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

// createDatabase creates a database named name on the server of serverURL
// (any database there that the user may connect to) and returns its URL
// and a function that drops it.
func createDatabase(ctx context.Context, serverURL, name string) (string, func(), error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", nil, fmt.Errorf("database URL: %w", err)
	}
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", nil, fmt.Errorf("connect to %s: %w", redact(u), err)
	}
	defer conn.Close(ctx)
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return "", nil, fmt.Errorf("create database %s on %s: %w", name, redact(u), err)
	}
	dropped := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(dctx, serverURL); err == nil {
			c.Exec(dctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)")
			c.Close(dctx)
		}
	}
	u.Path = "/" + name
	return u.String(), dropped, nil
}

// redact hides a password in a URL for messages.
func redact(u *url.URL) string { return u.Redacted() }

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func appendFile(name, text string) error {
	f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	return errors.Join(err, f.Close())
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
