// Package pgtest gives tests a real PostgreSQL: a fresh empty database per
// test, on the server MEMGATE_TEST_POSTGRES names or, without it, on a
// throwaway cluster this package starts (package pgcluster: initdb and
// postgres from /usr/lib/postgresql/*/bin or PATH, loopback only, a free
// port, fsync on, as user postgres when the tests run as root).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/pgcluster"
)

// EnvURL names the server URL tests use instead of a cluster of their own.
const EnvURL = "MEMGATE_TEST_POSTGRES"

// The cluster the tests of one binary share: started on the first New and
// stopped by Main.
var shared struct {
	mu      sync.Mutex
	cluster *pgcluster.Cluster
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
		if err := c.Close(); err != nil {
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
		shared.cluster, shared.err = pgcluster.New()
	}
	c, err := shared.cluster, shared.err
	shared.mu.Unlock()
	if err != nil {
		unavailable(t, err)
	}
	return createDB(t, c.URL("postgres"))
}

func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") != "" || !errors.Is(err, pgcluster.ErrNoPostgres) {
		t.Fatalf("pgtest: %v", err)
	}
	t.Skipf("pgtest: %v", err)
}

var dbSeq atomic.Int64

// createDB creates a database on server (a URL whose path names a
// database to connect to for that) and drops it when the test ends.
func createDB(t testing.TB, server string) string {
	t.Helper()
	name := fmt.Sprintf("memgate_test_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6, dbSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, drop, err := pgcluster.CreateDB(ctx, server, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := drop(ctx); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return db
}

// Cluster is a cluster of one test's own, which it may stop and start.
type Cluster struct{ *pgcluster.Cluster }

// NewCluster starts a cluster of the test's own, stopped and removed when
// the test ends.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	c, err := pgcluster.New()
	if errors.Is(err, pgcluster.ErrNoPostgres) && os.Getenv(EnvURL) != "" {
		// The other tests run on that server; this one needs a server
		// it may stop.
		t.Skipf("pgtest: a cluster of the test's own needs initdb: %v", err)
	} else if err != nil {
		unavailable(t, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return &Cluster{c}
}

// NewDB creates a fresh database on the cluster and returns its URL.
func (c *Cluster) NewDB(t testing.TB) string { return createDB(t, c.URL("postgres")) }
