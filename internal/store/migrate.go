package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// A feature is a set of tables with its own migrations, versioned
// independently of every other feature's. Its file in this package
// declares it with register and offers a small typed accessor; adding a
// feature or a migration to one touches no other file.
type feature struct {
	// Name identifies the feature in codemode_migrations ("kv",
	// "thoughts", ...). Never rename one.
	Name string
	// Migrations in order; version i+1 is Migrations[i]. Append only:
	// never edit or remove one that has shipped.
	Migrations []migration
}

// migration is one step of a feature's schema, per dialect. Each string
// may hold several statements separated by ";\n".
type migration struct {
	SQLite   string
	Postgres string
}

var (
	featuresMu sync.Mutex
	features   []feature
)

// register declares a feature. It is meant for package-level variable
// initialisation: var _ = register(feature{...}).
func register(f feature) struct{} {
	featuresMu.Lock()
	defer featuresMu.Unlock()
	for _, g := range features {
		if g.Name == f.Name {
			panic("store: feature " + f.Name + " registered twice")
		}
	}
	features = append(features, f)
	slices.SortFunc(features, func(a, b feature) int { return strings.Compare(a.Name, b.Name) })
	return struct{}{}
}

const migrationsTable = `CREATE TABLE IF NOT EXISTS codemode_migrations (
  feature TEXT NOT NULL PRIMARY KEY,
  version INTEGER NOT NULL,
  applied_at BIGINT NOT NULL
)`

// migrate brings every feature to its latest version, one migration per
// transaction. Several processes may start at once: on SQLite the write
// transaction is exclusive; on PostgreSQL an advisory lock serialises
// them. Each re-reads the version inside its transaction, so a migration
// is applied once.
func (b *backend) migrate(ctx context.Context) error {
	featuresMu.Lock()
	fs := slices.Clone(features)
	featuresMu.Unlock()
	return b.retry(ctx, "migrate", func() error {
		if _, err := b.write.ExecContext(ctx, migrationsTable); err != nil {
			return err
		}
		for _, f := range fs {
			for {
				done, err := b.migrateOne(ctx, f)
				if err != nil {
					return err
				}
				if done {
					break
				}
			}
		}
		return nil
	})
}

// migrateOne applies the next migration of f, if any; done reports that f
// is up to date.
func (b *backend) migrateOne(ctx context.Context, f feature) (done bool, err error) {
	tx, err := b.write.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if b.dialect == postgres {
		// Released at commit or rollback.
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(7262737361)"); err != nil {
			return false, err
		}
	}
	var v int
	err = tx.QueryRowContext(ctx, b.q("SELECT version FROM codemode_migrations WHERE feature = ?"), f.Name).Scan(&v)
	if err != nil && err != sql.ErrNoRows {
		return false, err
	}
	if v > len(f.Migrations) {
		return false, &Error{Kind: Failed, Where: b.where, Op: "migrate",
			Problem: fmt.Sprintf("the database's %q tables are at version %d, newer than this codemode knows (%d)", f.Name, v, len(f.Migrations)),
			Fix:     "run the newer codemode that wrote them, or give this one its own --data-dir"}
	}
	if v == len(f.Migrations) {
		return true, nil
	}
	m := f.Migrations[v]
	src := m.SQLite
	if b.dialect == postgres {
		src = m.Postgres
	}
	for _, stmt := range strings.Split(src, ";\n") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return false, fmt.Errorf("migration %s %d: %w", f.Name, v+1, err)
		}
	}
	if v == 0 {
		_, err = tx.ExecContext(ctx, b.q("INSERT INTO codemode_migrations (feature, version, applied_at) VALUES (?, ?, ?)"), f.Name, 1, b.nowMs())
	} else {
		_, err = tx.ExecContext(ctx, b.q("UPDATE codemode_migrations SET version = ?, applied_at = ? WHERE feature = ?"), v+1, b.nowMs(), f.Name)
	}
	if err != nil {
		return false, err
	}
	return false, tx.Commit()
}

// Versions returns each feature's applied schema version, for tests and
// diagnostics.
func (s *Store) Versions(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	err := s.read(ctx, "versions", func(b *backend, q queryer) error {
		rows, err := q.QueryContext(ctx, "SELECT feature, version FROM codemode_migrations")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var f string
			var v int
			if err := rows.Scan(&f, &v); err != nil {
				return err
			}
			out[f] = v
		}
		return rows.Err()
	})
	return out, err
}
