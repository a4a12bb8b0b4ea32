package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/bench/load"
	"github.com/memgate/memgate/internal/pgcluster"
)

// needPostgres skips a test in -short mode or where PostgreSQL is not
// installed.
func needPostgres(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	if err := pgcluster.Installed(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// startTestCluster starts a throwaway cluster for one test.
func startTestCluster(t *testing.T) *pgcluster.Cluster {
	t.Helper()
	needPostgres(t)
	c, err := startPGCluster(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// startTestBaseline starts handlers bare PostgreSQL handlers on a fresh
// database of a throwaway cluster, all removed when the test ends.
func startTestBaseline(t *testing.T, handlers, recordBytes int) (*pgcluster.Cluster, string, *load.PGBaseline) {
	t.Helper()
	c := startTestCluster(t)
	ctx := context.Background()
	dbURL, drop, err := createDatabase(ctx, c.URL("postgres"), "baseline_test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	base, err := load.StartPGBaseline(ctx, dbURL, handlers, recordBytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { base.Close() })
	return c, dbURL, base
}

// TestPGBaselineWritesThroughAFleetOfHandlers drives the bare PostgreSQL
// handlers as the load tool does, then reads the database: every
// acknowledged write is a record, its slot points at it, one event each;
// and all of it survives an immediate restart of the server.
func TestPGBaselineWritesThroughAFleetOfHandlers(t *testing.T) {
	c, dbURL, base := startTestBaseline(t, 3, 400)
	ctx := context.Background()
	urls := base.Targets()
	if len(urls) != 3 {
		t.Fatalf("%d handlers, want 3", len(urls))
	}
	res, err := load.Run(ctx, load.Config{Target: urls[0], Targets: urls[1:], Rate: 0, Concurrency: 6,
		Duration: 500 * time.Millisecond, Subjects: 4, Seed: 5})
	base.Close()
	if err != nil {
		t.Fatal(err)
	}
	w := res.Kinds[load.KindWrite]
	if w.OK == 0 || w.OK != w.Calls {
		t.Fatalf("writes: %d of %d ok (%v)", w.OK, w.Calls, res.All.Failed)
	}
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var records, events, slots, misplaced, padded int
	err = conn.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM bench_baseline_records),
		(SELECT count(*) FROM bench_baseline_events),
		(SELECT count(*) FROM bench_baseline_slots),
		(SELECT count(*) FROM bench_baseline_slots s LEFT JOIN bench_baseline_records r ON r.id = s.active_id
			WHERE r.status IS DISTINCT FROM 'active'),
		(SELECT count(*) FROM bench_baseline_records WHERE length(value) < 400)`).Scan(&records, &events, &slots, &misplaced, &padded)
	if err != nil {
		t.Fatal(err)
	}
	// The setup writes one record per subject before the measured ones;
	// every write makes a slot of its own (a new fact type each).
	if want := w.OK + 4; records < want || events != records || slots != records {
		t.Fatalf("after restart: %d records, %d events, %d slots; want at least %d of each", records, events, slots, want)
	}
	if misplaced != 0 || padded != 0 {
		t.Fatalf("%d slots not pointing at an active record, %d values shorter than memgate's record", misplaced, padded)
	}
	for _, u := range urls {
		if !strings.Contains(res.Target, u) {
			t.Errorf("result's targets %q lack handler %s", res.Target, u)
		}
	}
}

// TestPGBaselineSupersedesUnderRacingHandlers sends writes of one slot
// through three handlers at once: SERIALIZABLE with retries must leave one
// active record, the rest superseded in a chain, and one event each.
func TestPGBaselineSupersedesUnderRacingHandlers(t *testing.T) {
	_, dbURL, base := startTestBaseline(t, 3, 200)
	ctx := context.Background()
	const writes = 24
	urls := base.Targets()
	errs := make(chan error, writes)
	for i := range writes {
		go func() {
			body := fmt.Sprintf(`{"subjectId":"alice","factType":"editor","summary":"version %d"}`, i)
			resp, err := http.Post(urls[i%len(urls)]+"/api/v1/memories", "application/json", strings.NewReader(body))
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					err = fmt.Errorf("write %d: HTTP %d", i, resp.StatusCode)
				}
			}
			errs <- err
		}()
	}
	for range writes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var active, superseded, chained, events int
	var version int64
	err = conn.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM bench_baseline_records WHERE status = 'active'),
		(SELECT count(*) FROM bench_baseline_records WHERE status = 'superseded'),
		(SELECT count(DISTINCT supersedes) FROM bench_baseline_records WHERE supersedes IS NOT NULL),
		(SELECT count(*) FROM bench_baseline_events),
		(SELECT version FROM bench_baseline_slots)`).Scan(&active, &superseded, &chained, &events, &version)
	if err != nil {
		t.Fatal(err)
	}
	if active != 1 || superseded != writes-1 || chained != writes-1 || events != writes || version != writes {
		t.Fatalf("%d active, %d superseded, %d superseded once each, %d events, slot version %d; want 1, %d, %d, %d, %d",
			active, superseded, chained, events, version, writes-1, writes-1, writes, writes)
	}
	t.Logf("%d transactions retried after a serialization failure", base.Retries())
}
