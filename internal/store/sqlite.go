package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

type dialect int

const (
	sqliteDialect dialect = iota
	postgres
)

// busyTimeoutMs is how long one statement waits for another connection's
// write lock before SQLITE_BUSY; retry (Options.RetryFor) then waits more.
const busyTimeoutMs = 5000

// sqliteDSN is the connection string of the file at path. Every
// connection: waits for locks (busy timeout), starts write transactions
// with BEGIN IMMEDIATE (taking the write lock up front, so that a
// transaction never fails halfway on a lock upgrade), uses the WAL journal
// (readers and the writer do not block each other, across processes too)
// with synchronous=NORMAL: a commit is in the WAL file when it returns, so
// it survives the process crashing or being killed; the WAL is synced at
// checkpoints, so a power cut or OS crash may lose the last commits (never
// corrupting the file). FULL would sync every commit, which costs more
// than a set's whole budget (docs/BENCHMARKS.md).
func sqliteDSN(path string, readOnly bool, busyMs int) string {
	dsn := path + "?_txlock=immediate&_busy_timeout=" + itoa(busyMs) +
		"&_journal_mode=WAL&_synchronous=NORMAL&_foreign_keys=1"
	if readOnly {
		dsn += "&_query_only=1"
	}
	return dsn
}

func openSQLite(ctx context.Context, dir string, retryFor time.Duration) (*backend, error) {
	busyMs := int(min(busyTimeoutMs, retryFor.Milliseconds()))
	path := filepath.Join(dir, FileName)
	fail := func(k Kind, problem, fix string, err error) (*backend, error) {
		return nil, &Error{Kind: k, Where: path, Op: "open", Problem: problem, Fix: fix, Err: err}
	}
	if strings.ContainsAny(dir, "?#") {
		return fail(Unavailable, "the data directory's path contains '?' or '#', which SQLite's file names cannot",
			"choose another directory with --data-dir or "+DataDirEnv, nil)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail(Unavailable, "cannot create the data directory: "+err.Error(),
			"make "+dir+" writable, or choose another directory with --data-dir or "+DataDirEnv, err)
	}
	b := &backend{dialect: sqliteDialect, where: path, retryFor: retryFor, log: slog.New(slog.DiscardHandler)}
	var err error
	if b.write, err = sql.Open("sqlite", sqliteDSN(path, false, busyMs)); err != nil {
		return fail(Unavailable, "cannot open the database: "+err.Error(), "check the file's permissions", err)
	}
	// One writer connection: this process's writers queue for it in Go
	// rather than in SQLite's busy handler, which polls.
	b.write.SetMaxOpenConns(1)
	b.write.SetMaxIdleConns(1)
	b.write.SetConnMaxIdleTime(0)
	// The first connection creates the file and switches it to WAL; a
	// file that is not a database fails here (SQLITE_NOTADB).
	if err := b.retry(ctx, "open", func() error {
		var n int
		return b.write.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n)
	}); err != nil {
		b.write.Close()
		return nil, err
	}
	if b.read, err = sql.Open("sqlite", sqliteDSN(path, true, busyMs)); err != nil {
		b.write.Close()
		return fail(Unavailable, "cannot open the database: "+err.Error(), "check the file's permissions", err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	b.read.SetMaxOpenConns(n)
	b.read.SetMaxIdleConns(n)
	return b, nil
}

func sqliteCode(err error) (int, bool) {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code(), true
	}
	return 0, false
}

// sqliteBusy reports a lock held by another connection or process.
func sqliteBusy(err error) bool {
	c, ok := sqliteCode(err)
	p := c & 0xff
	return ok && (p == sqlite3.SQLITE_BUSY || p == sqlite3.SQLITE_LOCKED)
}

func sqliteClassify(err error) *Error {
	c, ok := sqliteCode(err)
	if !ok {
		return &Error{Kind: Failed, Problem: err.Error(), Fix: "see the message; report it if it persists"}
	}
	switch c & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return &Error{Kind: Locked, Problem: "the database stayed locked by another process (" + lockDetail(err) + ")",
			Fix: "another program holds a long write transaction on this file (a sqlite3 shell left open in a transaction?): end it, or give this gateway its own --data-dir"}
	case sqlite3.SQLITE_FULL:
		return &Error{Kind: Full, Problem: "the disk is full (SQLITE_FULL); nothing was written",
			Fix: "free space on the disk that holds the data directory, or move it with --data-dir or " + DataDirEnv}
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return &Error{Kind: Corrupt, Problem: "the file is not a SQLite database or is damaged (" + err.Error() + ")",
			Fix: "stop codemode, move the file (and its -wal and -shm files) aside, and start again: codemode creates a new database; or point --data-dir elsewhere"}
	case sqlite3.SQLITE_READONLY:
		return &Error{Kind: ReadOnly, Problem: "the database cannot be written (" + err.Error() + ")",
			Fix: "make the file and its directory writable by this user, or choose another --data-dir"}
	case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH:
		return &Error{Kind: Unavailable, Problem: "the database file cannot be opened (" + err.Error() + ")",
			Fix: "check that the data directory exists and is writable, or choose another with --data-dir or " + DataDirEnv}
	case sqlite3.SQLITE_IOERR:
		return &Error{Kind: Unavailable, Problem: "an I/O error on the database file (" + err.Error() + ")",
			Fix: "check the disk (dmesg) and free space; the last acknowledged writes are safe in the file"}
	}
	return &Error{Kind: Failed, Problem: err.Error(), Fix: "see the message; report it if it persists"}
}

func lockDetail(err error) string {
	c, _ := sqliteCode(err)
	return fmt.Sprintf("SQLITE_BUSY, code %d", c)
}
