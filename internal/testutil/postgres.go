package testutil

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
)

// RequirePostgresEnv, when set to 1, turns a missing PostgreSQL into a test
// failure instead of a skip: .ci/run sets it, so that CI cannot pass
// without running the PostgreSQL half of the store's tests.
const RequirePostgresEnv = "CODEMODE_REQUIRE_POSTGRES"

// PostgresServer is a real PostgreSQL server from the machine's
// installation (Debian's postgresql package), in a temporary directory,
// for tests. Start it with [StartPostgres]; it serves on 127.0.0.1.
type PostgresServer struct {
	bin  string // directory of initdb and postgres
	dir  string // data directory, also the socket directory
	port int
	cred *syscall.Credential // the unprivileged user it runs as, when the tests run as root

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	dbs  atomic.Int64
}

var (
	pgOnce   sync.Once
	pgShared *PostgresServer
	pgErr    error
)

// Postgres returns the URL of a fresh, empty database on a PostgreSQL
// server shared by the test binary (started on first use), or skips the
// test, saying how to install PostgreSQL, when initdb is not found. A
// package that uses it stops the server in TestMain with [StopPostgres].
func Postgres(t testing.TB) string {
	t.Helper()
	srv := SharedPostgres(t)
	return srv.NewDatabase(t)
}

// SharedPostgres returns the test binary's shared server (see Postgres).
func SharedPostgres(t testing.TB) *PostgresServer {
	t.Helper()
	pgOnce.Do(func() { pgShared, pgErr = StartPostgres() })
	if pgErr != nil {
		SkipNoPostgres(t, pgErr)
	}
	return pgShared
}

// SkipNoPostgres skips (or, under CODEMODE_REQUIRE_POSTGRES=1, fails) a
// test that needs PostgreSQL.
func SkipNoPostgres(t testing.TB, err error) {
	t.Helper()
	msg := "PostgreSQL tests skipped: " + err.Error() + " (install Debian's postgresql package: apt-get install -y postgresql)"
	if os.Getenv(RequirePostgresEnv) == "1" {
		t.Fatal(msg)
	}
	fmt.Fprintln(os.Stderr, msg)
	t.Skip(msg)
}

// StopPostgres stops the shared server, if one was started. Call it from
// TestMain after m.Run.
func StopPostgres() {
	if pgShared != nil {
		pgShared.Close()
	}
}

// FindPostgres returns the directory holding initdb and postgres: on PATH,
// else the newest /usr/lib/postgresql/<version>/bin (Debian).
func FindPostgres() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("initdb and pg_ctl are not on PATH nor in /usr/lib/postgresql/*/bin")
}

// StartPostgres initialises a cluster in a new temporary directory and
// starts it. As root it runs as the "postgres" user (else "nobody"), since
// PostgreSQL refuses to run as root.
func StartPostgres() (*PostgresServer, error) {
	bin, err := FindPostgres()
	if err != nil {
		return nil, err
	}
	s := &PostgresServer{bin: bin}
	if os.Geteuid() == 0 {
		if s.cred, err = unprivileged(); err != nil {
			return nil, err
		}
	}
	if s.dir, err = os.MkdirTemp("", "codemode-pg-"); err != nil {
		return nil, err
	}
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			s.cleanup()
			return nil, err
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", filepath.Join(s.dir, "data"), "-U", "codemode", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	initdb.Dir = s.dir
	if out, err := initdb.CombinedOutput(); err != nil {
		s.cleanup()
		return nil, fmt.Errorf("initdb failed: %v\n%s", err, out)
	}
	if err := s.Start(); err != nil {
		s.cleanup()
		return nil, err
	}
	return s, nil
}

func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, fmt.Errorf("running as root and there is no postgres or nobody user to run PostgreSQL as")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start starts the server (again, after Stop, on the same port and data).
// It returns once the server accepts connections, as its log says.
func (s *PostgresServer) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	if s.port == 0 {
		p, err := freePort()
		if err != nil {
			return err
		}
		s.port = p
	}
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", filepath.Join(s.dir, "data"), "-p", strconv.Itoa(s.port), "-k", s.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200", "-c", "log_min_messages=warning", "-c", "logging_collector=off")
	// The server dies with the test binary even if nobody calls Close:
	// Pdeathsig fires when the thread that started it exits, so that
	// thread is kept for good (see start).
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	dieWithParent(cmd.SysProcAttr)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := start(cmd); err != nil {
		return err
	}
	ready := make(chan struct{})
	done := make(chan struct{})
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			if log.Len() < 8<<10 {
				log.WriteString(line + "\n")
			}
			if !signalled && strings.Contains(line, "ready to accept connections") {
				signalled = true
				close(ready)
			}
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		close(done)
	}()
	select {
	case <-ready:
	case <-done:
		return fmt.Errorf("postgres exited before accepting connections:\n%s", log.String())
	}
	s.cmd, s.done = cmd, done
	return nil
}

var startThread struct {
	once sync.Once
	reqs chan func()
}

// start starts cmd from one OS thread that never exits, so that the
// child's parent-death signal is sent when the test binary ends and not
// when the Go runtime retires a thread.
func start(cmd *exec.Cmd) error {
	startThread.once.Do(func() {
		startThread.reqs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for f := range startThread.reqs {
				f()
			}
		}()
	})
	errc := make(chan error, 1)
	startThread.reqs <- func() { errc <- cmd.Start() }
	return <-errc
}

// Stop stops the server (fast shutdown) and waits for it to exit.
func (s *PostgresServer) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGINT)
	<-done
}

// Close stops the server and removes its directory.
func (s *PostgresServer) Close() {
	s.Stop()
	s.cleanup()
}

func (s *PostgresServer) cleanup() { os.RemoveAll(s.dir) }

// URL is the URL of database db.
func (s *PostgresServer) URL(db string) string {
	return fmt.Sprintf("postgres://codemode@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// NewDatabase creates an empty database and returns its URL.
func (s *PostgresServer) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.dbs.Add(1))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		t.Fatalf("connecting to the test PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating a test database: %v", err)
	}
	return s.URL(name)
}
