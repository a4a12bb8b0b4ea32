package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/memgate/memgate/internal/pgcluster"
)

// startPGCluster starts a throwaway PostgreSQL cluster for one run of the
// tool (package pgcluster: fsync on, so the figures measured on it are
// those of a real database on this disk). log receives a progress line.
func startPGCluster(log io.Writer) (*pgcluster.Cluster, error) {
	c, err := pgcluster.New()
	if err != nil {
		return nil, fmt.Errorf("pg cluster: %w", err)
	}
	fmt.Fprintf(log, "started PostgreSQL on %s in %s\n", c.URL(""), c.Dir())
	return c, nil
}

// createDatabase creates a database named name on the server of serverURL
// (any database there that the user may connect to) and returns its URL
// and a function that drops it.
func createDatabase(ctx context.Context, serverURL, name string) (string, func(), error) {
	db, drop, err := pgcluster.CreateDB(ctx, serverURL, name)
	if err != nil {
		return "", nil, err
	}
	return db, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		drop(ctx) // best effort: the cluster goes with the run
	}, nil
}
