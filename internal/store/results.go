package store

import (
	"context"
	"database/sql"
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

// Put keeps r for ttl, purging expired results first.
func (rs Results) Put(ctx context.Context, r Result, ttl time.Duration) (Result, error) {
	err := rs.s.tx(ctx, "results.put", func(b *backend, tx *sql.Tx) error {
		now := b.nowMs()
		if _, err := b.txExec(ctx, tx, "DELETE FROM results WHERE expires_at <= ?", now); err != nil {
			return err
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
