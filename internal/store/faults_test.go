package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/testutil"
)

// The faults of the issue: a corrupt file, a file locked by another
// process, a full disk, a PostgreSQL that goes away. Each is a clear error
// naming the database and the fix, never the driver's bare "database is
// locked"; what was acknowledged before stays; fixing the cause needs no
// restart.

func checkErr(t *testing.T, err error, kind Kind, where string, words ...string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %T %v, want a *store.Error", err, err)
	}
	if e.Kind != kind {
		t.Errorf("kind = %d, want %d (%v)", e.Kind, kind, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, where) || !strings.Contains(msg, "fix:") {
		t.Errorf("message does not name %s and the fix: %s", where, msg)
	}
	for _, w := range words {
		if !strings.Contains(msg, w) {
			t.Errorf("message lacks %q: %s", w, msg)
		}
	}
	if strings.Contains(msg, "database is locked") {
		t.Errorf("the driver's message reached the caller: %s", msg)
	}
}

func TestCorruptFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, []byte(strings.Repeat("this is not a database\n", 200)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := New(&Options{Dir: dir, ReopenAfter: time.Nanosecond})
	defer s.Close()
	ctx := context.Background()
	_, _, err := s.KV().Get(ctx, "ns", "k")
	checkErr(t, err, Corrupt, path, "move the file")
	// Moving it aside, as the fix says, is enough: no restart.
	if err := os.Rename(path, path+".bad"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.KV().Set(ctx, "ns", "k", json.RawMessage(`1`), 0, KVLimits{}); err != nil {
		t.Fatalf("after moving the file aside: %v", err)
	}
}

func TestLockedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	ctx := context.Background()
	s := New(&Options{Dir: dir, RetryFor: 200 * time.Millisecond})
	defer s.Close()
	if _, err := s.KV().Set(ctx, "ns", "before", json.RawMessage(`1`), 0, KVLimits{}); err != nil {
		t.Fatal(err)
	}
	// Another program holds the write lock and does not let go.
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	_, err = s.KV().Set(ctx, "ns", "during", json.RawMessage(`2`), 0, KVLimits{})
	checkErr(t, err, Locked, path, "another program holds")
	// Reads go on meanwhile (WAL).
	if e, ok, err := s.KV().Get(ctx, "ns", "before"); err != nil || !ok || string(e.Value) != "1" {
		t.Fatalf("read while locked: %v %v %v", e, ok, err)
	}
	conn.ExecContext(ctx, "ROLLBACK")
	conn.Close()
	if _, err := s.KV().Set(ctx, "ns", "after", json.RawMessage(`3`), 0, KVLimits{}); err != nil {
		t.Fatalf("after the lock is released: %v", err)
	}
}

// TestFullDisk fills the database to its size limit (PRAGMA
// max_page_count), which fails a write with SQLITE_FULL exactly as a full
// disk does.
func TestFullDisk(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	ctx := context.Background()
	s := New(&Options{Dir: dir})
	defer s.Close()
	kv := s.KV()
	if _, err := kv.Set(ctx, "ns", "acked", json.RawMessage(`"kept"`), 0, KVLimits{}); err != nil {
		t.Fatal(err)
	}
	b, err := s.backend(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pages int
	b.write.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages)
	if _, err := b.write.ExecContext(ctx, "PRAGMA max_page_count = "+itoa(pages)); err != nil {
		t.Fatal(err)
	}
	big := json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`)
	_, err = kv.Set(ctx, "ns", "big", big, 0, KVLimits{})
	checkErr(t, err, Full, path, "disk is full", "nothing was written")
	if _, ok, _ := kv.Get(ctx, "ns", "big"); ok {
		t.Fatal("a refused write is visible")
	}
	if e, ok, err := kv.Get(ctx, "ns", "acked"); err != nil || !ok || string(e.Value) != `"kept"` {
		t.Fatalf("acknowledged value after the disk filled: %s %v %v", e.Value, ok, err)
	}
	if u, _ := kv.Usage(ctx, "ns"); u != int64(len("acked")+len(`"kept"`)) {
		t.Fatalf("usage counts the refused write: %d", u)
	}
	// Space comes back: writes work again.
	b.write.ExecContext(ctx, "PRAGMA max_page_count = 1073741823")
	if _, err := kv.Set(ctx, "ns", "big", big, 0, KVLimits{}); err != nil {
		t.Fatal(err)
	}
}

func TestUnwritableDirectory(t *testing.T) {
	parent := t.TempDir()
	file := filepath.Join(parent, "a-file")
	os.WriteFile(file, nil, 0o600)
	s := New(&Options{Dir: filepath.Join(file, "sub")})
	defer s.Close()
	checkErr(t, s.Ready(context.Background()), Unavailable, filepath.Join(file, "sub", FileName), "--data-dir")
}

func TestPostgresGoneAndBack(t *testing.T) {
	srv, err := testutil.StartPostgres()
	if err != nil {
		testutil.SkipNoPostgres(t, err)
	}
	defer srv.Close()
	url := srv.NewDatabase(t)
	url = strings.Replace(url, "codemode@", "codemode:s3cretpassword@", 1)
	ctx := context.Background()
	s := New(&Options{URL: url, RetryFor: 200 * time.Millisecond})
	defer s.Close()
	if _, err := s.KV().Set(ctx, "ns", "acked", json.RawMessage(`1`), 0, KVLimits{}); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	_, err = s.KV().Set(ctx, "ns", "while-down", json.RawMessage(`2`), 0, KVLimits{})
	checkErr(t, err, Unavailable, "postgres://codemode:xxxxx@127.0.0.1", "PostgreSQL", "running")
	if strings.Contains(err.Error(), "s3cretpassword") {
		t.Fatalf("the password is in the message: %v", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	// The pool reconnects by itself.
	var got error
	for range 3 { // a pooled connection may still be the dead one
		if _, got = s.KV().Set(ctx, "ns", "after", json.RawMessage(`3`), 0, KVLimits{}); got == nil {
			break
		}
	}
	if got != nil {
		t.Fatalf("after PostgreSQL came back: %v", got)
	}
	if e, ok, err := s.KV().Get(ctx, "ns", "acked"); err != nil || !ok || string(e.Value) != "1" {
		t.Fatalf("acknowledged value lost: %v %v %v", e.Value, ok, err)
	}
}

func TestPostgresUnreachableAtStart(t *testing.T) {
	s := New(&Options{URL: "postgres://u:pw12345678@127.0.0.1:1/db?sslmode=disable&connect_timeout=2"})
	defer s.Close()
	err := s.Ready(context.Background())
	checkErr(t, err, Unavailable, "127.0.0.1:1", "running")
	if strings.Contains(err.Error(), "pw12345678") {
		t.Fatalf("password leaked: %v", err)
	}
}
