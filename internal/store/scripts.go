package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"time"
)

// The scripts feature: saved scripts by name, every version kept. Package
// scripts validates names and resolves a run's {"script": NAME}.
var _ = register(feature{Name: "scripts", Migrations: []migration{{
	SQLite: `CREATE TABLE scripts (
  name TEXT NOT NULL,
  version INTEGER NOT NULL,
  code TEXT NOT NULL,
  code_sha256 TEXT NOT NULL,
  description TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (name, version)
) WITHOUT ROWID`,
	Postgres: `CREATE TABLE scripts (
  name TEXT COLLATE "C" NOT NULL,
  version INTEGER NOT NULL,
  code TEXT NOT NULL,
  code_sha256 TEXT NOT NULL,
  description TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (name, version)
)`,
}}})

// Scripts is the accessor of the scripts feature.
type Scripts struct{ s *Store }

// Scripts returns the saved scripts' accessor.
func (s *Store) Scripts() Scripts { return Scripts{s} }

// Script is one version of a saved script.
type Script struct {
	Name        string
	Version     int
	Code        string
	CodeSHA256  string
	Description string
	CreatedAt   time.Time
	// Versions is how many versions the script has (List only).
	Versions int
}

// Save stores code as the next version of name (the first is 1) and
// returns it. Code identical to the latest version's is not saved again:
// Save returns that version, and saved is false.
func (sc Scripts) Save(ctx context.Context, name, code, description string) (out Script, saved bool, err error) {
	sum := sha256.Sum256([]byte(code))
	hash := hex.EncodeToString(sum[:])
	err = sc.s.tx(ctx, "scripts.save", func(b *backend, tx *sql.Tx) error {
		saved = false
		var latest int
		var latestHash, latestDesc string
		var created int64
		err := b.txRow(ctx, tx, "SELECT version, code_sha256, description, created_at FROM scripts WHERE name = ? ORDER BY version DESC LIMIT 1", name).
			Scan(&latest, &latestHash, &latestDesc, &created)
		if err != nil && err != sql.ErrNoRows {
			return err
		}
		if err == nil && latestHash == hash && (description == "" || description == latestDesc) {
			out = Script{Name: name, Version: latest, Code: code, CodeSHA256: hash, Description: latestDesc, CreatedAt: time.UnixMilli(created)}
			return nil
		}
		now := b.nowMs()
		if _, err := b.txExec(ctx, tx, "INSERT INTO scripts (name, version, code, code_sha256, description, created_at) VALUES (?, ?, ?, ?, ?, ?)",
			name, latest+1, code, hash, description, now); err != nil {
			return err
		}
		out = Script{Name: name, Version: latest + 1, Code: code, CodeSHA256: hash, Description: description, CreatedAt: time.UnixMilli(now)}
		saved = true
		return nil
	})
	return out, saved, err
}

// Get returns version of name; version 0 is the latest. A missing script
// or version is a *NotFoundError.
func (sc Scripts) Get(ctx context.Context, name string, version int) (Script, error) {
	var out Script
	err := sc.s.read(ctx, "scripts.get", func(b *backend, q queryer) error {
		query := "SELECT version, code, code_sha256, description, created_at FROM scripts WHERE name = ? ORDER BY version DESC LIMIT 1"
		args := []any{name}
		if version > 0 {
			query = "SELECT version, code, code_sha256, description, created_at FROM scripts WHERE name = ? AND version = ?"
			args = append(args, version)
		}
		var created int64
		err := b.readRow(ctx, query, args...).Scan(&out.Version, &out.Code, &out.CodeSHA256, &out.Description, &created)
		if err == sql.ErrNoRows {
			id := name
			if version > 0 {
				id += "@" + itoa(version)
			}
			return &NotFoundError{What: "saved script", ID: id}
		}
		out.Name, out.CreatedAt = name, time.UnixMilli(created)
		return err
	})
	return out, err
}

// List returns the latest version of every script, by name, without code.
func (sc Scripts) List(ctx context.Context) ([]Script, error) {
	var out []Script
	err := sc.s.read(ctx, "scripts.list", func(b *backend, q queryer) error {
		out = out[:0]
		rows, err := q.QueryContext(ctx, `SELECT s.name, s.version, s.code_sha256, s.description, s.created_at, v.n
FROM scripts s JOIN (SELECT name, MAX(version) AS latest, COUNT(*) AS n FROM scripts GROUP BY name) v ON s.name = v.name AND s.version = v.latest
ORDER BY s.name`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s Script
			var created int64
			if err := rows.Scan(&s.Name, &s.Version, &s.CodeSHA256, &s.Description, &created, &s.Versions); err != nil {
				return err
			}
			s.CreatedAt = time.UnixMilli(created)
			out = append(out, s)
		}
		return rows.Err()
	})
	return out, err
}

// Versions returns every version of name, newest first, without code.
func (sc Scripts) Versions(ctx context.Context, name string) ([]Script, error) {
	var out []Script
	err := sc.s.read(ctx, "scripts.versions", func(b *backend, q queryer) error {
		out = out[:0]
		rows, err := q.QueryContext(ctx, b.q("SELECT version, code_sha256, description, created_at FROM scripts WHERE name = ? ORDER BY version DESC"), name)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			s := Script{Name: name}
			var created int64
			if err := rows.Scan(&s.Version, &s.CodeSHA256, &s.Description, &created); err != nil {
				return err
			}
			s.CreatedAt = time.UnixMilli(created)
			out = append(out, s)
		}
		return rows.Err()
	})
	return out, err
}

// Delete deletes version of name, or every version for version 0, and
// returns how many it deleted.
func (sc Scripts) Delete(ctx context.Context, name string, version int) (int64, error) {
	var n int64
	err := sc.s.tx(ctx, "scripts.delete", func(b *backend, tx *sql.Tx) error {
		query, args := "DELETE FROM scripts WHERE name = ?", []any{name}
		if version > 0 {
			query, args = "DELETE FROM scripts WHERE name = ? AND version = ?", append(args, version)
		}
		res, err := b.txExec(ctx, tx, query, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
