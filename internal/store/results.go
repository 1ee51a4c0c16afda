package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The results feature: whole results too large for a response (a run's
// result over maxResultBytes, a log entry or tool result cut to fit), kept
// for a while so that the MCP session that made one can read it as a
// resource (codemode://results/<id>, the serving layer's results.go).
// Each has an expiry; expired ones are purged when a new one is stored.
var _ = register(feature{Name: "results", Migrations: []migration{{
	SQLite: `CREATE TABLE results (
  id TEXT NOT NULL PRIMARY KEY,
  client TEXT NOT NULL,
  session TEXT NOT NULL,
  mime_type TEXT NOT NULL,
  data TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX results_expiry ON results (expires_at)`,
	Postgres: `CREATE TABLE results (
  id TEXT NOT NULL PRIMARY KEY,
  client TEXT NOT NULL,
  session TEXT NOT NULL,
  mime_type TEXT NOT NULL,
  data TEXT NOT NULL,
  bytes BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX results_expiry ON results (expires_at)`,
}}})

// Results is the accessor of the results feature.
type Results struct{ s *Store }

// Results returns the large-results accessor.
func (s *Store) Results() Results { return Results{s} }

// Result is one kept result.
type Result struct {
	ID string
	// Client and Session say who may read it: the client's namespace and
	// the MCP session that made it ("" for any session of the client,
	// e.g. under stateless HTTP, where every request is a session).
	Client, Session string
	MIMEType        string
	Data            string
	CreatedAt       time.Time
	ExpiresAt       time.Time
}

// ErrResultQuota is Put's error for a result larger than its client's
// whole quota.
var ErrResultQuota = errors.New("the result is larger than its client's quota of kept results")

// Put keeps r for ttl, purging expired results first. quota (if > 0)
// bounds the bytes kept for r.Client: its oldest results are deleted until
// r fits, so that a client producing large results keeps the newest ones
// and cannot fill the disk; a result larger than quota is not kept
// (ErrResultQuota).
func (rs Results) Put(ctx context.Context, r Result, ttl time.Duration, quota int64) (Result, error) {
	if quota > 0 && int64(len(r.Data)) > quota {
		return r, fmt.Errorf("%w (%d bytes, quota %d)", ErrResultQuota, len(r.Data), quota)
	}
	err := rs.s.tx(ctx, "results.put", func(b *backend, tx *sql.Tx) error {
		now := b.nowMs()
		if _, err := b.txExec(ctx, tx, "DELETE FROM results WHERE expires_at <= ?", now); err != nil {
			return err
		}
		if quota > 0 {
			if err := evictOldest(ctx, b, tx, r.Client, quota-int64(len(r.Data))); err != nil {
				return err
			}
		}
		r.CreatedAt, r.ExpiresAt = time.UnixMilli(now), time.UnixMilli(now+ttl.Milliseconds())
		_, err := b.txExec(ctx, tx, "INSERT INTO results (id, client, session, mime_type, data, bytes, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
			r.ID, r.Client, r.Session, r.MIMEType, r.Data, len(r.Data), now, now+ttl.Milliseconds())
		return err
	})
	return r, err
}

// Get returns the live result id if client may read it from session:
// found is false if there is none, it expired, or it belongs to another
// client or session.
func (rs Results) Get(ctx context.Context, client, session, id string) (r Result, found bool, err error) {
	err = rs.s.read(ctx, "results.get", func(b *backend, q queryer) error {
		var created, expires int64
		err := b.readRow(ctx, `SELECT session, mime_type, data, created_at, expires_at FROM results
WHERE id = ? AND client = ? AND expires_at > ?`, id, client, b.nowMs()).Scan(&r.Session, &r.MIMEType, &r.Data, &created, &expires)
		if err == sql.ErrNoRows {
			return nil
		}
		if err != nil {
			return err
		}
		if r.Session != "" && r.Session != session {
			return nil
		}
		found = true
		r.ID, r.Client, r.CreatedAt, r.ExpiresAt = id, client, time.UnixMilli(created), time.UnixMilli(expires)
		return nil
	})
	return r, found, err
}

// evictOldest deletes client's oldest results until at most room bytes
// of them are left.
func evictOldest(ctx context.Context, b *backend, tx *sql.Tx, client string, room int64) error {
	rows, err := tx.QueryContext(ctx, b.q("SELECT id, bytes FROM results WHERE client = ? ORDER BY created_at DESC, id DESC"), client)
	if err != nil {
		return err
	}
	var drop []string
	var total int64
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return err
		}
		if total += n; total > room {
			drop = append(drop, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range drop {
		if _, err := b.txExec(ctx, tx, "DELETE FROM results WHERE id = ?", id); err != nil {
			return err
		}
	}
	return nil
}
