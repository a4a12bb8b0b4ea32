package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations are the schema's versions, applied in the order of their
// number (the file name's prefix before "_"). A migration, once released,
// never changes: a change is a new file.
//
//go:embed migrations/*.sql
var migrations embed.FS

// migrationLock is the key of the advisory lock held while migrating, so
// that instances starting at once apply each migration once ("memgate"
// in ASCII).
const migrationLock = 0x6d656d67617465

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the embedded migrations in version order.
func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: the name must start with a positive version and _", base)
		}
		b, err := migrations.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: base, sql: string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", out[i-1].name, out[i].name, out[i].version)
		}
	}
	return out, nil
}

// migrate applies the migrations the database lacks, in one transaction
// that holds the advisory lock: a concurrent Open waits for it, then finds
// them applied. It returns the versions it applied.
func migrate(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	ms, err := loadMigrations()
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	var applied []int
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS memgate_schema_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("create memgate_schema_migrations: %w", err)
		}
		rows, err := tx.Query(ctx, "SELECT version FROM memgate_schema_migrations")
		if err != nil {
			return fmt.Errorf("read memgate_schema_migrations: %w", err)
		}
		done, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return fmt.Errorf("read memgate_schema_migrations: %w", err)
		}
		for _, m := range ms {
			if slices.Contains(done, int32(m.version)) {
				continue
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO memgate_schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
				return fmt.Errorf("record migration %s: %w", m.name, err)
			}
			applied = append(applied, m.version)
		}
		// A database newer than this binary: its schema may hold what
		// this version cannot keep in step.
		if len(done) > 0 && int(slices.Max(done)) > ms[len(ms)-1].version {
			return fmt.Errorf("the database's schema (version %d) is newer than this memgate's (%d)", slices.Max(done), ms[len(ms)-1].version)
		}
		return nil
	})
	return applied, err
}
