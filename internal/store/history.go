package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The history feature: every run the gateway made (package history
// records them) and each of its tool calls. Its tables: history_runs,
// history_calls (deleted with their run) and history_usage (the runs and
// bytes held, kept in the same transaction as every change, for retention
// by size). Times are Unix milliseconds; durations and offsets are
// microseconds, so that a waterfall can tell apart calls under a
// millisecond.
var _ = register(feature{Name: "history", Migrations: []migration{{
	SQLite: `CREATE TABLE history_runs (
  id TEXT NOT NULL PRIMARY KEY,
  started_at INTEGER NOT NULL,
  duration_us INTEGER NOT NULL,
  surface TEXT NOT NULL,
  tool TEXT NOT NULL,
  session TEXT NOT NULL,
  client TEXT NOT NULL,
  auth TEXT NOT NULL,
  script TEXT NOT NULL,
  code TEXT NOT NULL,
  code_sha256 TEXT NOT NULL,
  limits TEXT NOT NULL,
  outcome TEXT NOT NULL,
  response TEXT NOT NULL,
  tool_calls INTEGER NOT NULL,
  failed_calls INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  args TEXT,
  bundle TEXT
);
CREATE INDEX history_runs_started ON history_runs (started_at, id);
CREATE TABLE history_calls (
  run_id TEXT NOT NULL REFERENCES history_runs (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  server TEXT NOT NULL,
  tool TEXT NOT NULL,
  offset_us INTEGER NOT NULL,
  duration_us INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  error_class TEXT NOT NULL,
  error TEXT NOT NULL,
  input TEXT,
  output TEXT,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE INDEX history_calls_server ON history_calls (server, run_id);
CREATE TABLE history_usage (
  k INTEGER NOT NULL PRIMARY KEY CHECK (k = 1),
  runs INTEGER NOT NULL,
  bytes INTEGER NOT NULL
);
INSERT INTO history_usage (k, runs, bytes) VALUES (1, 0, 0)`,
	Postgres: `CREATE TABLE history_runs (
  id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
  started_at BIGINT NOT NULL,
  duration_us BIGINT NOT NULL,
  surface TEXT NOT NULL,
  tool TEXT NOT NULL,
  session TEXT NOT NULL,
  client TEXT NOT NULL,
  auth TEXT NOT NULL,
  script TEXT NOT NULL,
  code TEXT NOT NULL,
  code_sha256 TEXT NOT NULL,
  limits TEXT NOT NULL,
  outcome TEXT NOT NULL,
  response TEXT NOT NULL,
  tool_calls INTEGER NOT NULL,
  failed_calls INTEGER NOT NULL,
  bytes BIGINT NOT NULL,
  args TEXT,
  bundle TEXT
);
CREATE INDEX history_runs_started ON history_runs (started_at, id);
CREATE TABLE history_calls (
  run_id TEXT COLLATE "C" NOT NULL REFERENCES history_runs (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  server TEXT NOT NULL,
  tool TEXT NOT NULL,
  offset_us BIGINT NOT NULL,
  duration_us BIGINT NOT NULL,
  outcome TEXT NOT NULL,
  error_class TEXT NOT NULL,
  error TEXT NOT NULL,
  input TEXT,
  output TEXT,
  PRIMARY KEY (run_id, seq)
);
CREATE INDEX history_calls_server ON history_calls (server, run_id);
CREATE TABLE history_usage (
  k INTEGER NOT NULL PRIMARY KEY CHECK (k = 1),
  runs BIGINT NOT NULL,
  bytes BIGINT NOT NULL
);
INSERT INTO history_usage (k, runs, bytes) VALUES (1, 0, 0)`,
}}})

// History is the accessor of the history feature.
type History struct{ s *Store }

// History returns the run history's accessor.
func (s *Store) History() History { return History{s} }

// RunRecord is one recorded run.
type RunRecord struct {
	ID       string
	Start    time.Time
	Duration time.Duration
	// Where the run came from: the surface, the MCP tool, session and
	// client (clientInfo), the named client whose token it used, and the
	// saved script ("name@version") it ran, each "" if none.
	Surface, Tool, Session, Client, Auth, Script string
	// Code is the code as sent; CodeSHA256 its hash (hex).
	Code       string
	CodeSHA256 string
	// Args are a saved script's arguments (JSON, redacted), nil if none.
	Args json.RawMessage
	// Limits are the run's resolved limits (JSON).
	Limits  json.RawMessage
	Outcome string
	// Response is the response as returned (JSON, redacted).
	Response    json.RawMessage
	ToolCalls   int
	FailedCalls int
	// Calls are the tool calls in the order they started; List leaves
	// them, the code and the response out.
	Calls []CallRecord
	// Bundle is the run's replay bundle (package replay's format), kept
	// when payloads are recorded; nil otherwise.
	Bundle json.RawMessage
	// Bytes is what the run counts against the history's size.
	Bytes int64
}

// CallRecord is one tool call of a run.
type CallRecord struct {
	Server, Tool string
	// Offset is when the call started, from the run's start.
	Offset, Duration time.Duration
	// Outcome is run's: ok, tool_error, invalid_input, failed, suspended.
	Outcome    string
	ErrorClass string
	Error      string
	// Input and Output are kept only when payloads are recorded (JSON,
	// redacted); nil otherwise.
	Input, Output json.RawMessage
}

// size is what r counts against the history's size: its text, and a
// rough row overhead.
func (r *RunRecord) size() int64 {
	n := int64(256 + len(r.Code) + len(r.Response) + len(r.Limits) + len(r.Args) + len(r.Bundle) + len(r.Surface) + len(r.Tool) + len(r.Session) + len(r.Client) + len(r.Auth) + len(r.Script))
	for _, c := range r.Calls {
		n += int64(64 + len(c.Server) + len(c.Tool) + len(c.ErrorClass) + len(c.Error) + len(c.Input) + len(c.Output))
	}
	return n
}

func nullJSON(j json.RawMessage) any {
	if j == nil {
		return nil
	}
	return string(j)
}

// Add records runs, all in one transaction. A run whose id is already
// recorded is skipped.
func (h History) Add(ctx context.Context, runs []RunRecord) error {
	if len(runs) == 0 {
		return nil
	}
	return h.s.tx(ctx, "history.add", func(b *backend, tx *sql.Tx) error {
		var added, bytes int64
		for i := range runs {
			r := &runs[i]
			r.Bytes = r.size()
			limits := r.Limits
			if limits == nil {
				limits = json.RawMessage("{}")
			}
			res, err := b.txExec(ctx, tx, `INSERT INTO history_runs (id, started_at, duration_us, surface, tool, session, client, auth, script, code, code_sha256, limits, outcome, response, tool_calls, failed_calls, bytes, args, bundle)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
				r.ID, r.Start.UnixMilli(), r.Duration.Microseconds(), r.Surface, r.Tool, r.Session, r.Client, r.Auth, r.Script, r.Code, r.CodeSHA256,
				string(limits), r.Outcome, string(r.Response), r.ToolCalls, r.FailedCalls, r.Bytes, nullJSON(r.Args), nullJSON(r.Bundle))
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				continue
			}
			added++
			bytes += r.Bytes
			for seq, c := range r.Calls {
				if _, err := b.txExec(ctx, tx, `INSERT INTO history_calls (run_id, seq, server, tool, offset_us, duration_us, outcome, error_class, error, input, output)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.ID, seq, c.Server, c.Tool, c.Offset.Microseconds(), c.Duration.Microseconds(), c.Outcome, c.ErrorClass, c.Error,
					nullJSON(c.Input), nullJSON(c.Output)); err != nil {
					return err
				}
			}
		}
		_, err := b.txExec(ctx, tx, "UPDATE history_usage SET runs = runs + ?, bytes = bytes + ? WHERE k = 1", added, bytes)
		return err
	})
}

// RunFilter selects runs for List. Zero fields select everything.
type RunFilter struct {
	Surface string
	// Outcome is "ok", "error" (any outcome but ok) or one outcome.
	Outcome string
	// Server selects runs that called one of its tools.
	Server string
	// Since and Until bound the start time (Until excluded).
	Since, Until time.Time
	// Before is the id of the last run of the previous page: the page
	// starts with the run recorded before it.
	Before string
	// Limit is the page size; default 50, at most 1000.
	Limit int
}

// List returns runs, newest first, without their code, response and
// calls; more reports that another page follows (pass the last run's id
// as Before).
func (h History) List(ctx context.Context, f RunFilter) (runs []RunRecord, more bool, err error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 1000)
	var where []string
	var args []any
	if f.Surface != "" {
		where, args = append(where, "r.surface = ?"), append(args, f.Surface)
	}
	switch f.Outcome {
	case "":
	case "error":
		where = append(where, "r.outcome <> 'ok'")
	default:
		where, args = append(where, "r.outcome = ?"), append(args, f.Outcome)
	}
	if f.Server != "" {
		where, args = append(where, "EXISTS (SELECT 1 FROM history_calls c WHERE c.server = ? AND c.run_id = r.id)"), append(args, f.Server)
	}
	if !f.Since.IsZero() {
		where, args = append(where, "r.started_at >= ?"), append(args, f.Since.UnixMilli())
	}
	if !f.Until.IsZero() {
		where, args = append(where, "r.started_at < ?"), append(args, f.Until.UnixMilli())
	}
	err = h.s.read(ctx, "history.list", func(b *backend, q queryer) error {
		runs = runs[:0]
		w, a := where, args
		if f.Before != "" {
			var at int64
			err := q.QueryRowContext(ctx, b.q("SELECT started_at FROM history_runs WHERE id = ?"), f.Before).Scan(&at)
			if err == sql.ErrNoRows {
				return &NotFoundError{What: "run", ID: f.Before}
			}
			if err != nil {
				return err
			}
			w = append(w, "(r.started_at < ? OR (r.started_at = ? AND r.id < ?))")
			a = append(a, at, at, f.Before)
		}
		query := `SELECT r.id, r.started_at, r.duration_us, r.surface, r.tool, r.session, r.client, r.auth, r.script, r.code_sha256, r.outcome, r.tool_calls, r.failed_calls, r.bytes
FROM history_runs r`
		if len(w) > 0 {
			query += " WHERE " + strings.Join(w, " AND ")
		}
		query += " ORDER BY r.started_at DESC, r.id DESC LIMIT " + itoa(limit+1)
		rows, err := q.QueryContext(ctx, b.q(query), a...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r RunRecord
			var start, dur int64
			if err := rows.Scan(&r.ID, &start, &dur, &r.Surface, &r.Tool, &r.Session, &r.Client, &r.Auth, &r.Script, &r.CodeSHA256, &r.Outcome,
				&r.ToolCalls, &r.FailedCalls, &r.Bytes); err != nil {
				return err
			}
			r.Start, r.Duration = time.UnixMilli(start), time.Duration(dur)*time.Microsecond
			runs = append(runs, r)
		}
		return rows.Err()
	})
	if len(runs) > limit {
		runs, more = runs[:limit], true
	}
	return runs, more, err
}

// AmbiguousError is returned by Get for a prefix that more than one run id
// starts with.
type AmbiguousError struct{ Prefix string }

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("more than one run id starts with %q: give more of it", e.Prefix)
}

func (*AmbiguousError) answer() {}

// Get returns the run whose id is id, or starts with it (at least 8
// characters of it), with its calls in the order they started.
func (h History) Get(ctx context.Context, id string) (RunRecord, error) {
	var r RunRecord
	err := h.s.read(ctx, "history.get", func(b *backend, q queryer) error {
		query := `SELECT id, started_at, duration_us, surface, tool, session, client, auth, script, code, code_sha256, limits, outcome, response, tool_calls, failed_calls, bytes, args, bundle
FROM history_runs WHERE id = ?`
		arg := id
		if len(id) >= 8 && len(id) < 36 && strings.Trim(strings.ToLower(id), "0123456789abcdef-") == "" {
			query = strings.Replace(query, "id = ?", "id LIKE ?", 1) + " LIMIT 2"
			arg = strings.ToLower(id) + "%"
		}
		rows, err := q.QueryContext(ctx, b.q(query), arg)
		if err != nil {
			return err
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			n++
			var start, dur int64
			var limits, resp string
			var args, bundle sql.NullString
			if err := rows.Scan(&r.ID, &start, &dur, &r.Surface, &r.Tool, &r.Session, &r.Client, &r.Auth, &r.Script, &r.Code, &r.CodeSHA256,
				&limits, &r.Outcome, &resp, &r.ToolCalls, &r.FailedCalls, &r.Bytes, &args, &bundle); err != nil {
				return err
			}
			r.Args, r.Bundle = nil, nil
			if args.Valid {
				r.Args = json.RawMessage(args.String)
			}
			if bundle.Valid {
				r.Bundle = json.RawMessage(bundle.String)
			}
			r.Start, r.Duration = time.UnixMilli(start), time.Duration(dur)*time.Microsecond
			r.Limits, r.Response = json.RawMessage(limits), json.RawMessage(resp)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		switch n {
		case 0:
			return &NotFoundError{What: "run", ID: id}
		case 2:
			return &AmbiguousError{Prefix: id}
		}
		crows, err := q.QueryContext(ctx, b.q(`SELECT server, tool, offset_us, duration_us, outcome, error_class, error, input, output
FROM history_calls WHERE run_id = ? ORDER BY seq`), r.ID)
		if err != nil {
			return err
		}
		defer crows.Close()
		r.Calls = nil
		for crows.Next() {
			var c CallRecord
			var off, dur int64
			var in, out sql.NullString
			if err := crows.Scan(&c.Server, &c.Tool, &off, &dur, &c.Outcome, &c.ErrorClass, &c.Error, &in, &out); err != nil {
				return err
			}
			c.Offset, c.Duration = time.Duration(off)*time.Microsecond, time.Duration(dur)*time.Microsecond
			if in.Valid {
				c.Input = json.RawMessage(in.String)
			}
			if out.Valid {
				c.Output = json.RawMessage(out.String)
			}
			r.Calls = append(r.Calls, c)
		}
		return crows.Err()
	})
	return r, err
}

// Usage is how many runs the history holds and their Bytes.
func (h History) Usage(ctx context.Context) (runs, bytes int64, err error) {
	err = h.s.read(ctx, "history.usage", func(b *backend, q queryer) error {
		return b.readRow(ctx, "SELECT runs, bytes FROM history_usage WHERE k = 1").Scan(&runs, &bytes)
	})
	return runs, bytes, err
}

// pruneChunk bounds the runs one transaction of Prune deletes, so that a
// large clean-up never holds the write lock for long.
const pruneChunk = 500

// PruneResult is what Prune did and what is left.
type PruneResult struct {
	// Deleted is how many runs Prune deleted.
	Deleted int64
	// Runs and Bytes are what the history holds now (see Usage); Oldest
	// is the start of its oldest run (zero when it is empty).
	Runs, Bytes int64
	Oldest      time.Time
}

// Prune deletes the runs that started before before (if it is not zero)
// and then, oldest first, the runs that bring the history's Bytes over
// maxBytes (if it is positive), to leave it at most at maxBytes.
func (h History) Prune(ctx context.Context, before time.Time, maxBytes int64) (PruneResult, error) {
	var res PruneResult
	for {
		n, more, err := h.pruneOnce(ctx, before, maxBytes)
		res.Deleted += n
		if err != nil {
			return res, err
		}
		if !more {
			break
		}
	}
	err := h.s.read(ctx, "history.prune", func(b *backend, q queryer) error {
		var oldest sql.NullInt64
		if err := b.readRow(ctx, "SELECT runs, bytes FROM history_usage WHERE k = 1").Scan(&res.Runs, &res.Bytes); err != nil {
			return err
		}
		if err := b.readRow(ctx, "SELECT MIN(started_at) FROM history_runs").Scan(&oldest); err != nil {
			return err
		}
		res.Oldest = msTime(oldest)
		return nil
	})
	return res, err
}

// pruneOnce deletes at most pruneChunk runs; more reports that there may
// be more to delete.
func (h History) pruneOnce(ctx context.Context, before time.Time, maxBytes int64) (deleted int64, more bool, err error) {
	err = h.s.tx(ctx, "history.prune", func(b *backend, tx *sql.Tx) error {
		deleted, more = 0, false
		var usedRuns, usedBytes int64
		if err := b.txRow(ctx, tx, "SELECT runs, bytes FROM history_usage WHERE k = 1").Scan(&usedRuns, &usedBytes); err != nil {
			return err
		}
		// The oldest runs, and which of them go: too old, or needed to
		// get under maxBytes.
		rows, err := tx.QueryContext(ctx, b.q("SELECT id, started_at, bytes FROM history_runs ORDER BY started_at, id LIMIT "+itoa(pruneChunk)))
		if err != nil {
			return err
		}
		var lastID string
		var lastAt, freed int64
		cut := before.UnixMilli()
		for rows.Next() {
			var id string
			var at, n int64
			if err := rows.Scan(&id, &at, &n); err != nil {
				rows.Close()
				return err
			}
			old := !before.IsZero() && at < cut
			big := maxBytes > 0 && usedBytes-freed > maxBytes
			if !old && !big {
				break
			}
			lastID, lastAt, freed = id, at, freed+n
			deleted++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if deleted == 0 {
			return nil
		}
		more = deleted == pruneChunk
		if _, err := b.txExec(ctx, tx, "DELETE FROM history_runs WHERE started_at < ? OR (started_at = ? AND id <= ?)", lastAt, lastAt, lastID); err != nil {
			return err
		}
		_, err = b.txExec(ctx, tx, "UPDATE history_usage SET runs = ?, bytes = ? WHERE k = 1", max(0, usedRuns-deleted), max(0, usedBytes-freed))
		return err
	})
	return deleted, more, err
}
