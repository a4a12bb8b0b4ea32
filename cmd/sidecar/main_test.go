package main

import (
	"testing"

	"github.com/memgate/memgate/internal/pgtest"
)

// Tests that run the sidecar on PostgreSQL share one throwaway cluster,
// stopped when they end.
func TestMain(m *testing.M) { pgtest.Main(m) }
