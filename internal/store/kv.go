package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// The kv feature: JSON values by key, per namespace, with optional expiry
// and size accounting. Its tables: kv (the entries) and kv_usage (bytes
// held per namespace, kept in the same transaction as every change).
var _ = register(feature{Name: "kv", Migrations: []migration{{
	SQLite: `CREATE TABLE kv (
  namespace TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  expires_at INTEGER,
  PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
CREATE INDEX kv_expiry ON kv (namespace, expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE kv_usage (
  namespace TEXT NOT NULL PRIMARY KEY,
  bytes INTEGER NOT NULL
) WITHOUT ROWID`,
	// COLLATE "C": keys sort by code point, as on SQLite, so that a prefix
	// is a range.
	Postgres: `CREATE TABLE kv (
  namespace TEXT NOT NULL,
  key TEXT COLLATE "C" NOT NULL,
  value TEXT NOT NULL,
  bytes BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  expires_at BIGINT,
  PRIMARY KEY (namespace, key)
);
CREATE INDEX kv_expiry ON kv (namespace, expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE kv_usage (
  namespace TEXT NOT NULL PRIMARY KEY,
  bytes BIGINT NOT NULL
)`,
}}})

// KV is the accessor of the kv feature.
type KV struct{ s *Store }

// KV returns the key-value accessor.
func (s *Store) KV() KV { return KV{s} }

// KVEntry is one stored value.
type KVEntry struct {
	Key   string
	Value json.RawMessage // nil in List results without values
	// Bytes is what the entry counts against its namespace: the key's and
	// the value's UTF-8 bytes.
	Bytes     int64
	UpdatedAt time.Time
	ExpiresAt time.Time // zero: never
}

// KVLimits bound what Set accepts. Zero fields are unlimited.
type KVLimits struct {
	MaxKeyBytes       int64
	MaxValueBytes     int64
	MaxNamespaceBytes int64
}

func msTime(ms sql.NullInt64) time.Time {
	if !ms.Valid {
		return time.Time{}
	}
	return time.UnixMilli(ms.Int64)
}

// Get returns the live entry of key in namespace ns; found is false if
// there is none or it has expired.
func (kv KV) Get(ctx context.Context, ns, key string) (e KVEntry, found bool, err error) {
	err = kv.s.read(ctx, "kv.get", func(b *backend, q queryer) error {
		var value string
		var updated int64
		var expires sql.NullInt64
		err := b.readRow(ctx, `SELECT value, bytes, updated_at, expires_at FROM kv
WHERE namespace = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)`, ns, key, b.nowMs()).Scan(&value, &e.Bytes, &updated, &expires)
		if err == sql.ErrNoRows {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		e.Key, e.Value, e.UpdatedAt, e.ExpiresAt = key, json.RawMessage(value), time.UnixMilli(updated), msTime(expires)
		return nil
	})
	return e, found, err
}

// Set stores value (JSON) under key in namespace ns. ttl > 0 makes it
// expire after that long. It fails with a *LimitError, writing nothing,
// if the key, the value or the namespace's total would exceed limits;
// expired entries of the namespace are purged before the namespace limit
// is judged.
func (kv KV) Set(ctx context.Context, ns, key string, value json.RawMessage, ttl time.Duration, limits KVLimits) (KVEntry, error) {
	size := int64(len(key) + len(value))
	if limits.MaxKeyBytes > 0 && int64(len(key)) > limits.MaxKeyBytes {
		return KVEntry{}, &LimitError{Limit: "maxKeyBytes", Max: limits.MaxKeyBytes, Got: int64(len(key)), Namespace: ns, Key: key}
	}
	if limits.MaxValueBytes > 0 && int64(len(value)) > limits.MaxValueBytes {
		return KVEntry{}, &LimitError{Limit: "maxValueBytes", Max: limits.MaxValueBytes, Got: int64(len(value)), Namespace: ns, Key: key}
	}
	var out KVEntry
	err := kv.s.tx(ctx, "kv.set", func(b *backend, tx *sql.Tx) error {
		now := b.nowMs()
		used, err := lockUsage(ctx, b, tx, ns)
		if err != nil {
			return err
		}
		var old int64
		err = b.txRow(ctx, tx, "SELECT bytes FROM kv WHERE namespace = ? AND key = ?", ns, key).Scan(&old)
		if err != nil && err != sql.ErrNoRows {
			return err
		}
		next := used - old + size
		if limits.MaxNamespaceBytes > 0 && next > limits.MaxNamespaceBytes && size > old {
			freed, err := purgeExpired(ctx, b, tx, ns, key, now)
			if err != nil {
				return err
			}
			used -= freed
			next = used - old + size
			if next > limits.MaxNamespaceBytes {
				return &LimitError{Limit: "maxNamespaceBytes", Max: limits.MaxNamespaceBytes, Got: next, Namespace: ns, Key: key}
			}
		}
		var expires sql.NullInt64
		if ttl > 0 {
			expires = sql.NullInt64{Int64: now + ttl.Milliseconds(), Valid: true}
		}
		if _, err := b.txExec(ctx, tx, `INSERT INTO kv (namespace, key, value, bytes, updated_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, bytes = excluded.bytes, updated_at = excluded.updated_at, expires_at = excluded.expires_at`,
			ns, key, string(value), size, now, expires); err != nil {
			return err
		}
		if _, err := b.txExec(ctx, tx, "UPDATE kv_usage SET bytes = ? WHERE namespace = ?", next, ns); err != nil {
			return err
		}
		out = KVEntry{Key: key, Value: value, Bytes: size, UpdatedAt: time.UnixMilli(now), ExpiresAt: msTime(expires)}
		return nil
	})
	return out, err
}

// lockUsage returns the bytes namespace ns holds, creating its row if need
// be, and on PostgreSQL locks that row until the transaction ends: every
// writer of a namespace then runs one at a time, so that the accounting
// never loses an update. (On SQLite the write transaction is already
// exclusive.)
func lockUsage(ctx context.Context, b *backend, tx *sql.Tx, ns string) (int64, error) {
	if _, err := b.txExec(ctx, tx, "INSERT INTO kv_usage (namespace, bytes) VALUES (?, 0) ON CONFLICT (namespace) DO NOTHING", ns); err != nil {
		return 0, err
	}
	q := "SELECT bytes FROM kv_usage WHERE namespace = ?"
	if b.dialect == postgres {
		q += " FOR UPDATE"
	}
	var used int64
	err := b.txRow(ctx, tx, q, ns).Scan(&used)
	return used, err
}

// purgeExpired deletes the expired entries of ns other than keep and
// returns the bytes they held.
func purgeExpired(ctx context.Context, b *backend, tx *sql.Tx, ns, keep string, now int64) (int64, error) {
	var freed sql.NullInt64
	if err := tx.QueryRowContext(ctx, b.q("SELECT SUM(bytes) FROM kv WHERE namespace = ? AND expires_at <= ? AND key <> ?"), ns, now, keep).Scan(&freed); err != nil {
		return 0, err
	}
	if freed.Int64 == 0 {
		return 0, nil
	}
	_, err := tx.ExecContext(ctx, b.q("DELETE FROM kv WHERE namespace = ? AND expires_at <= ? AND key <> ?"), ns, now, keep)
	return freed.Int64, err
}

// Delete removes key from ns and reports whether a live entry was there.
func (kv KV) Delete(ctx context.Context, ns, key string) (deleted bool, err error) {
	err = kv.s.tx(ctx, "kv.delete", func(b *backend, tx *sql.Tx) error {
		deleted = false
		used, err := lockUsage(ctx, b, tx, ns)
		if err != nil {
			return err
		}
		var size int64
		var expires sql.NullInt64
		err = tx.QueryRowContext(ctx, b.q("SELECT bytes, expires_at FROM kv WHERE namespace = ? AND key = ?"), ns, key).Scan(&size, &expires)
		if err == sql.ErrNoRows {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, b.q("DELETE FROM kv WHERE namespace = ? AND key = ?"), ns, key); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, b.q("UPDATE kv_usage SET bytes = ? WHERE namespace = ?"), max(0, used-size), ns); err != nil {
			return err
		}
		deleted = !expires.Valid || expires.Int64 > b.nowMs()
		return nil
	})
	return deleted, err
}

// List returns up to limit live entries of ns whose keys start with
// prefix and sort after `after` (the last key of the previous page; "" for
// the first), in key order (by code point). values says whether to load
// the values. more reports that another page follows.
func (kv KV) List(ctx context.Context, ns, prefix, after string, limit int, values bool) (entries []KVEntry, more bool, err error) {
	if limit <= 0 {
		limit = 100
	}
	err = kv.s.read(ctx, "kv.list", func(b *backend, q queryer) error {
		entries, more = nil, false
		cols := "key, bytes, updated_at, expires_at"
		if values {
			cols += ", value"
		}
		query := "SELECT " + cols + " FROM kv WHERE namespace = ? AND (expires_at IS NULL OR expires_at > ?) AND key >= ? AND key > ?"
		args := []any{ns, b.nowMs(), prefix, after}
		if end, ok := prefixEnd(prefix); ok {
			query += " AND key < ?"
			args = append(args, end)
		}
		query += " ORDER BY key LIMIT ?"
		args = append(args, limit+1)
		rows, err := q.QueryContext(ctx, b.q(query), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e KVEntry
			var updated int64
			var expires sql.NullInt64
			var value string
			dst := []any{&e.Key, &e.Bytes, &updated, &expires}
			if values {
				dst = append(dst, &value)
			}
			if err := rows.Scan(dst...); err != nil {
				return err
			}
			e.UpdatedAt, e.ExpiresAt = time.UnixMilli(updated), msTime(expires)
			if values {
				e.Value = json.RawMessage(value)
			}
			entries = append(entries, e)
		}
		if len(entries) > limit {
			entries, more = entries[:limit], true
		}
		return rows.Err()
	})
	return entries, more, err
}

// Usage returns the bytes namespace ns holds (expired entries not yet
// purged included).
func (kv KV) Usage(ctx context.Context, ns string) (int64, error) {
	var used sql.NullInt64
	err := kv.s.read(ctx, "kv.usage", func(b *backend, q queryer) error {
		err := q.QueryRowContext(ctx, b.q("SELECT bytes FROM kv_usage WHERE namespace = ?"), ns).Scan(&used)
		if err == sql.ErrNoRows {
			return nil
		}
		return err
	})
	return used.Int64, err
}

// prefixEnd is the smallest string greater than every string that starts
// with p, in code point order: p with its last code point incremented
// (dropping trailing U+10FFFF). ok is false when there is none (p empty or
// all U+10FFFF).
func prefixEnd(p string) (string, bool) {
	rs := []rune(p)
	for len(rs) > 0 {
		last := rs[len(rs)-1]
		if last < utf8.MaxRune {
			next := last + 1
			if next >= 0xD800 && next <= 0xDFFF { // surrogates are not characters
				next = 0xE000
			}
			rs[len(rs)-1] = next
			return string(rs), true
		}
		rs = rs[:len(rs)-1]
	}
	return "", false
}
