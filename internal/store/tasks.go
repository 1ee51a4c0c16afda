package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"
)

// The tasks feature: runs started as MCP tasks (the serving layer's
// tasks.go). A task's row is its whole state, so that any replica sharing
// the store answers tasks/get, tasks/result and tasks/cancel for a task
// another replica runs: the replica that runs it writes its status and
// result here, and reads here whether a cancellation was asked for.
var _ = register(feature{Name: "tasks", Migrations: []migration{{
	SQLite: `CREATE TABLE tasks (
  id TEXT NOT NULL PRIMARY KEY,
  client TEXT NOT NULL,
  tool TEXT NOT NULL,
  status TEXT NOT NULL,
  status_message TEXT,
  result TEXT,
  error TEXT,
  cancel_requested INTEGER NOT NULL,
  poll_interval_ms INTEGER NOT NULL,
  ttl_ms INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  expires_at INTEGER
);
CREATE INDEX tasks_client ON tasks (client, created_at, id);
CREATE INDEX tasks_expiry ON tasks (expires_at) WHERE expires_at IS NOT NULL`,
	Postgres: `CREATE TABLE tasks (
  id TEXT NOT NULL PRIMARY KEY,
  client TEXT NOT NULL,
  tool TEXT NOT NULL,
  status TEXT NOT NULL,
  status_message TEXT,
  result TEXT,
  error TEXT,
  cancel_requested INTEGER NOT NULL,
  poll_interval_ms BIGINT NOT NULL,
  ttl_ms BIGINT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  expires_at BIGINT
);
CREATE INDEX tasks_client ON tasks (client, created_at, id);
CREATE INDEX tasks_expiry ON tasks (expires_at) WHERE expires_at IS NOT NULL`,
}}})

// Tasks is the accessor of the tasks feature.
type Tasks struct{ s *Store }

// Tasks returns the tasks accessor.
func (s *Store) Tasks() Tasks { return Tasks{s} }

// Task statuses, as MCP names them.
const (
	TaskWorking   = "working"
	TaskCompleted = "completed"
	TaskFailed    = "failed"
	TaskCancelled = "cancelled"
)

// Task is one stored task.
type Task struct {
	ID string
	// Client is who created it (the client's namespace): only that client
	// may read or cancel it.
	Client        string
	Tool          string
	Status        string
	StatusMessage string
	// Result is the CallToolResult of a completed task; Error the JSON-RPC
	// error of a failed one.
	Result          json.RawMessage
	Error           json.RawMessage
	CancelRequested bool
	PollInterval    time.Duration
	// TTL is how long the task is kept after it was created; 0: until it
	// is purged by hand.
	TTL       time.Duration
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Terminal reports whether the task has ended.
func (t Task) Terminal() bool {
	return t.Status == TaskCompleted || t.Status == TaskFailed || t.Status == TaskCancelled
}

// Create stores a new task, working; it is durable when Create returns.
// Expired tasks are purged on the way.
func (ts Tasks) Create(ctx context.Context, t Task) (Task, error) {
	err := ts.s.tx(ctx, "tasks.create", func(b *backend, tx *sql.Tx) error {
		now := b.nowMs()
		if _, err := b.txExec(ctx, tx, "DELETE FROM tasks WHERE expires_at IS NOT NULL AND expires_at <= ?", now); err != nil {
			return err
		}
		var ttl, expires sql.NullInt64
		if t.TTL > 0 {
			ttl = sql.NullInt64{Int64: t.TTL.Milliseconds(), Valid: true}
			expires = sql.NullInt64{Int64: now + t.TTL.Milliseconds(), Valid: true}
		}
		t.Status, t.CreatedAt, t.UpdatedAt = TaskWorking, time.UnixMilli(now), time.UnixMilli(now)
		_, err := b.txExec(ctx, tx, `INSERT INTO tasks (id, client, tool, status, status_message, cancel_requested, poll_interval_ms, ttl_ms, created_at, updated_at, expires_at)
VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)`, t.ID, t.Client, t.Tool, t.Status, nullStr(t.StatusMessage), t.PollInterval.Milliseconds(), ttl, now, now, expires)
		return err
	})
	return t, err
}

// Get returns the live task id of client; found is false if there is none
// (or it expired, or another client made it).
func (ts Tasks) Get(ctx context.Context, client, id string) (t Task, found bool, err error) {
	err = ts.s.read(ctx, "tasks.get", func(b *backend, q queryer) error {
		var msg, result, errJSON sql.NullString
		var cancel int
		var poll int64
		var ttl sql.NullInt64
		var created, updated int64
		err := b.readRow(ctx, `SELECT tool, status, status_message, result, error, cancel_requested, poll_interval_ms, ttl_ms, created_at, updated_at
FROM tasks WHERE id = ? AND client = ? AND (expires_at IS NULL OR expires_at > ?)`, id, client, b.nowMs()).
			Scan(&t.Tool, &t.Status, &msg, &result, &errJSON, &cancel, &poll, &ttl, &created, &updated)
		if err == sql.ErrNoRows {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		t.ID, t.Client, t.StatusMessage, t.CancelRequested = id, client, msg.String, cancel != 0
		if result.Valid {
			t.Result = json.RawMessage(result.String)
		}
		if errJSON.Valid {
			t.Error = json.RawMessage(errJSON.String)
		}
		t.PollInterval = time.Duration(poll) * time.Millisecond
		t.TTL = time.Duration(ttl.Int64) * time.Millisecond
		t.CreatedAt, t.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
		return nil
	})
	return t, found, err
}

// SetMessage updates a working task's status message.
func (ts Tasks) SetMessage(ctx context.Context, id, msg string) error {
	return ts.s.tx(ctx, "tasks.message", func(b *backend, tx *sql.Tx) error {
		_, err := b.txExec(ctx, tx, "UPDATE tasks SET status_message = ?, updated_at = ? WHERE id = ? AND status = ?", nullStr(msg), b.nowMs(), id, TaskWorking)
		return err
	})
}

// Finish records the end of a task: status TaskCompleted with result,
// TaskFailed with errJSON, or TaskCancelled. A task that has already ended
// keeps its first end; ended reports whether this call recorded it.
func (ts Tasks) Finish(ctx context.Context, id, status, msg string, result, errJSON json.RawMessage) (ended bool, err error) {
	err = ts.s.tx(ctx, "tasks.finish", func(b *backend, tx *sql.Tx) error {
		var r, e sql.NullString
		if result != nil {
			r = sql.NullString{String: string(result), Valid: true}
		}
		if errJSON != nil {
			e = sql.NullString{String: string(errJSON), Valid: true}
		}
		res, err := b.txExec(ctx, tx, "UPDATE tasks SET status = ?, status_message = ?, result = ?, error = ?, updated_at = ? WHERE id = ? AND status = ?",
			status, nullStr(msg), r, e, b.nowMs(), id, TaskWorking)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		ended = n > 0
		return err
	})
	return ended, err
}

// RequestCancel asks for the end of client's task id: the replica running
// it sees CancelRequested and cancels the run. It returns the task as it
// is; found is false if there is no such live task.
func (ts Tasks) RequestCancel(ctx context.Context, client, id string) (t Task, found bool, err error) {
	err = ts.s.tx(ctx, "tasks.cancel", func(b *backend, tx *sql.Tx) error {
		_, err := b.txExec(ctx, tx, "UPDATE tasks SET cancel_requested = 1, updated_at = ? WHERE id = ? AND client = ? AND status = ?", b.nowMs(), id, client, TaskWorking)
		return err
	})
	if err != nil {
		return Task{}, false, err
	}
	return ts.Get(ctx, client, id)
}

// CancelRequested reports whether a cancellation of task id was asked for.
func (ts Tasks) CancelRequested(ctx context.Context, id string) (bool, error) {
	var c int
	err := ts.s.read(ctx, "tasks.cancelled", func(b *backend, q queryer) error {
		err := b.readRow(ctx, "SELECT cancel_requested FROM tasks WHERE id = ?", id).Scan(&c)
		if err == sql.ErrNoRows {
			return nil
		}
		return err
	})
	return c != 0, err
}

// List returns up to limit live tasks of client, oldest first, after the
// task whose id is after (a cursor; "" for the first page); more reports
// whether there are others.
func (ts Tasks) List(ctx context.Context, client, after string, limit int) (out []Task, more bool, err error) {
	err = ts.s.read(ctx, "tasks.list", func(b *backend, q queryer) error {
		out = out[:0]
		var afterCreated int64 = -1
		if after != "" {
			err := b.readRow(ctx, "SELECT created_at FROM tasks WHERE id = ? AND client = ?", after, client).Scan(&afterCreated)
			if err != nil && err != sql.ErrNoRows {
				return err
			}
		}
		rows, err := q.QueryContext(ctx, b.q(`SELECT id FROM tasks WHERE client = ? AND (expires_at IS NULL OR expires_at > ?)
AND (created_at > ? OR (created_at = ? AND id > ?)) ORDER BY created_at, id LIMIT ?`), client, b.nowMs(), afterCreated, afterCreated, after, limit+1)
		if err != nil {
			return err
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		more = len(ids) > limit
		ids = ids[:min(len(ids), limit)]
		for _, id := range ids {
			out = append(out, Task{ID: id})
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	for i, t := range out {
		full, ok, err := ts.Get(ctx, client, t.ID)
		if err != nil {
			return nil, false, err
		}
		if ok {
			out[i] = full
		}
	}
	return out, more, nil
}
