// Package store is the one place where codemode keeps data: state that
// lasts between runs (the `store` built-in server), Thoughtbox's sessions,
// thoughts and knowledge graph, and whatever later features persist.
//
// Start with [New], which takes where the data lives ([Locate] reads it from
// the command line and the environment) and returns a [*Store] at once;
// [Store.Ready] opens the database and applies the migrations, and every
// accessor does so on first use. Two backends implement it:
//
//   - SQLite (the default): one file, codemode.db, in the data directory
//     ($XDG_STATE_HOME/codemode, else ~/.local/state/codemode; --data-dir or
//     CODEMODE_DATA_DIR override it), through the pure-Go modernc.org/sqlite
//     (no cgo). WAL mode; several processes may share the file: writes take
//     the write lock when their transaction starts (BEGIN IMMEDIATE), wait
//     for it (busy timeout) and are retried, so a busy database is waited
//     for, never reported as "database is locked".
//   - PostgreSQL, for replicas behind a load balancer: CODEMODE_STORE=
//     postgres://..., through pgx.
//
// Each feature owns its tables: one file here (kv.go, thoughts.go,
// knowledge.go) declares the feature's migrations with [register] and its
// small typed accessor ([Store.KV], [Store.Thoughts], [Store.Knowledge]).
// Migrations are versioned per feature, so adding a table to one feature, or
// a new feature, touches no other. A feature's tables never reference
// another feature's.
//
// Faults are errors the caller can show as they are: a [*Error] names the
// file or the URL (without its password), what went wrong and the fix. A
// store that cannot be opened (a corrupt or locked file, a PostgreSQL that
// is down) fails only the calls that need it; [Store.Ready] tries again on a
// later call, so fixing the cause needs no restart. A write is acknowledged
// only once its transaction has committed.
package store

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Environment variables and file names.
const (
	// DataDirEnv overrides the directory of the SQLite file.
	DataDirEnv = "CODEMODE_DATA_DIR"
	// URLEnv selects PostgreSQL: CODEMODE_STORE=postgres://user:pass@host/db.
	URLEnv = "CODEMODE_STORE"
	// FileName is the SQLite database in the data directory.
	FileName = "codemode.db"
)

// Options say where the data lives. The zero value is the SQLite file in
// DefaultDir().
type Options struct {
	// URL, if set, is a postgres:// (or postgresql://) URL: the store is
	// that PostgreSQL database.
	URL string
	// Dir is the directory of the SQLite file. Default: DefaultDir().
	Dir string
	// Logger receives warnings (a failed open, retries that took long).
	// Default: discard.
	Logger *slog.Logger
	// Now is the clock of expiry times and timestamps. Default time.Now.
	Now func() time.Time
	// RetryFor bounds how long a busy SQLite database (another process
	// holding the write lock) or a PostgreSQL serialisation conflict is
	// retried before the call fails with an error that says so. Default
	// 30s.
	RetryFor time.Duration
	// ReopenAfter is how long a failed open is remembered before a call
	// tries again. Default 2s.
	ReopenAfter time.Duration
}

// DefaultDir is $XDG_STATE_HOME/codemode, else ~/.local/state/codemode.
func DefaultDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "codemode")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return filepath.Join(os.TempDir(), "codemode-state")
	}
	return filepath.Join(home, ".local", "state", "codemode")
}

// Locate returns the options of the store given the --data-dir flag (empty
// if not given) and the environment: CODEMODE_STORE (a PostgreSQL URL) wins,
// then --data-dir, then CODEMODE_DATA_DIR, then DefaultDir().
func Locate(dataDirFlag string, getenv func(string) string) Options {
	if getenv == nil {
		getenv = os.Getenv
	}
	if u := strings.TrimSpace(getenv(URLEnv)); u != "" {
		return Options{URL: u}
	}
	if dataDirFlag != "" {
		return Options{Dir: dataDirFlag}
	}
	if d := getenv(DataDirEnv); d != "" {
		return Options{Dir: d}
	}
	return Options{Dir: DefaultDir()}
}

// Store is the data store. It is safe for concurrent use.
type Store struct {
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	b        *backend // nil until opened
	openErr  error
	failedAt time.Time
	closed   bool
}

// New returns a store that opens on first use (or on Ready). It never fails:
// a problem with the database is reported by the calls that need it.
func New(opts *Options) *Store {
	s := &Store{}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Logger == nil {
		s.opts.Logger = slog.New(slog.DiscardHandler)
	}
	if s.opts.Now == nil {
		s.opts.Now = time.Now
	}
	if s.opts.RetryFor <= 0 {
		s.opts.RetryFor = 30 * time.Second
	}
	if s.opts.ReopenAfter <= 0 {
		s.opts.ReopenAfter = 2 * time.Second
	}
	if s.opts.URL == "" && s.opts.Dir == "" {
		s.opts.Dir = DefaultDir()
	}
	s.log = s.opts.Logger
	return s
}

// Where names the database for people: the SQLite file's path, or the
// PostgreSQL URL without its password.
func (s *Store) Where() string {
	if s.opts.URL != "" {
		return redactURL(s.opts.URL)
	}
	return filepath.Join(s.opts.Dir, FileName)
}

// Backend is "sqlite" or "postgres".
func (s *Store) Backend() string {
	if s.opts.URL != "" {
		return "postgres"
	}
	return "sqlite"
}

// Ready opens the database and applies pending migrations, if not done
// yet. After a failure it returns that failure until Options.ReopenAfter
// has passed, then tries again.
func (s *Store) Ready(ctx context.Context) error {
	_, err := s.backend(ctx)
	return err
}

// ErrClosed is returned by every call after Close.
var ErrClosed = errors.New("store: closed")

func (s *Store) backend(ctx context.Context) (*backend, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.b != nil {
		return s.b, nil
	}
	if s.openErr != nil && time.Since(s.failedAt) < s.opts.ReopenAfter {
		return nil, s.openErr
	}
	b, err := s.open(ctx)
	if err != nil {
		s.openErr, s.failedAt = err, time.Now()
		return nil, err
	}
	s.b, s.openErr = b, nil
	return b, nil
}

func (s *Store) open(ctx context.Context) (*backend, error) {
	var b *backend
	var err error
	if s.opts.URL != "" {
		b, err = openPostgres(ctx, s.opts.URL)
	} else {
		b, err = openSQLite(ctx, s.opts.Dir, s.opts.RetryFor)
	}
	if err != nil {
		return nil, err
	}
	b.now = s.opts.Now
	b.retryFor = s.opts.RetryFor
	b.log = s.log
	if err := b.migrate(ctx); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// Close closes the database. Calls in flight finish first (database/sql
// waits for them).
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.b == nil {
		return nil
	}
	err := s.b.close()
	s.b = nil
	return err
}

// backend is an open database: the pools, the dialect and the retry policy.
type backend struct {
	dialect dialect
	where   string // for errors: the file or the redacted URL
	// read serves queries; write serves transactions that change data. On
	// SQLite write has one connection, so that the writers of this process
	// queue in Go instead of spinning on the file lock; on PostgreSQL both
	// are the same pool.
	read, write *sql.DB
	now         func() time.Time
	retryFor    time.Duration
	log         *slog.Logger
	// rebind caches queries rewritten for the dialect's placeholders.
	rebind sync.Map
	// stmts caches prepared statements by pool and query: preparing is a
	// good part of a small query's cost (SQLite parses and plans it).
	stmts   sync.Map // stmtKey → *sql.Stmt
	pending sync.Map // write queries to prepare after their transaction
}

type stmtKey struct {
	db    *sql.DB
	query string
}

// prepared returns query (in ? form) prepared on db, preparing it once.
func (b *backend) prepared(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	k := stmtKey{db, query}
	if v, ok := b.stmts.Load(k); ok {
		return v.(*sql.Stmt), nil
	}
	st, err := db.PrepareContext(ctx, b.q(query))
	if err != nil {
		return nil, err
	}
	if v, loaded := b.stmts.LoadOrStore(k, st); loaded {
		st.Close()
		return v.(*sql.Stmt), nil
	}
	return st, nil
}

// txExec and txRow run a statement in tx. On SQLite they use the
// statement prepared on the write pool; the first time, the statement runs
// unprepared and is prepared once the transaction is over (preparing on
// the pool now would wait for its one connection, which tx holds).
// PostgreSQL's driver caches prepared statements itself.
func (b *backend) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := b.writeStmt(query); st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, b.q(query), args...)
}

func (b *backend) txRow(ctx context.Context, tx *sql.Tx, query string, args ...any) rowScanner {
	if st := b.writeStmt(query); st != nil {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, b.q(query), args...)
}

func (b *backend) writeStmt(query string) *sql.Stmt {
	if b.dialect == postgres {
		return nil
	}
	if v, ok := b.stmts.Load(stmtKey{b.write, query}); ok {
		return v.(*sql.Stmt)
	}
	b.pending.Store(query, true)
	return nil
}

// preparePending prepares the write statements first run unprepared.
func (b *backend) preparePending(ctx context.Context) {
	b.pending.Range(func(k, _ any) bool {
		b.pending.Delete(k)
		b.prepared(ctx, b.write, k.(string))
		return true
	})
}

// readRow runs a prepared query on the read pool.
func (b *backend) readRow(ctx context.Context, query string, args ...any) rowScanner {
	st, err := b.prepared(ctx, b.read, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

type rowScanner interface{ Scan(dest ...any) error }

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

func (b *backend) close() error {
	b.stmts.Range(func(_, v any) bool { v.(*sql.Stmt).Close(); return true })
	err := b.write.Close()
	if b.read != b.write {
		err = errors.Join(err, b.read.Close())
	}
	return err
}

// q returns query with its ? placeholders in the dialect's form.
func (b *backend) q(query string) string {
	if b.dialect != postgres {
		return query
	}
	if v, ok := b.rebind.Load(query); ok {
		return v.(string)
	}
	var out strings.Builder
	n := 0
	inStr := false
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'':
			inStr = !inStr
			out.WriteByte(c)
		case c == '?' && !inStr:
			n++
			out.WriteByte('$')
			out.WriteString(itoa(n))
		default:
			out.WriteByte(c)
		}
	}
	s := out.String()
	b.rebind.Store(query, s)
	return s
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// nowMs is the current time in Unix milliseconds, the unit of every
// timestamp column.
func (b *backend) nowMs() int64 { return b.now().UnixMilli() }

// queryer is what both *sql.DB and *sql.Tx offer.
type queryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// tx runs f in a write transaction, retrying the whole transaction while
// the database is busy (see retry). f must not have effects outside the
// transaction, since it may run more than once.
func (s *Store) tx(ctx context.Context, op string, f func(b *backend, tx *sql.Tx) error) error {
	b, err := s.backend(ctx)
	if err != nil {
		return err
	}
	err = b.retry(ctx, op, func() error {
		tx, err := b.write.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := f(b, tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	})
	b.preparePending(ctx)
	return err
}

// read runs f against the read pool, retrying while the database is busy.
func (s *Store) read(ctx context.Context, op string, f func(b *backend, q queryer) error) error {
	b, err := s.backend(ctx)
	if err != nil {
		return err
	}
	return b.retry(ctx, op, func() error { return f(b, b.read) })
}
