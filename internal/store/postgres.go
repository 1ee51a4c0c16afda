package store

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

func openPostgres(ctx context.Context, rawURL string) (*backend, error) {
	where := redactURL(rawURL)
	if !strings.HasPrefix(rawURL, "postgres://") && !strings.HasPrefix(rawURL, "postgresql://") {
		return nil, &Error{Kind: Unavailable, Where: where, Op: "open", Problem: URLEnv + " must be a postgres:// URL",
			Fix: "set " + URLEnv + "=postgres://user:password@host:5432/dbname, or unset it to use the SQLite file"}
	}
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, &Error{Kind: Unavailable, Where: where, Op: "open", Problem: "the URL does not parse: " + scrub(err.Error(), rawURL),
			Fix: "write it as postgres://user:password@host:5432/dbname"}
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	db.SetConnMaxIdleTime(5 * time.Minute)
	b := &backend{dialect: postgres, where: where, read: db, write: db}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		e := b.classify("open", err).(*Error)
		return nil, e
	}
	return b, nil
}

// pgRetryable: serialisation failures and deadlocks are retried, as is a
// connection that broke before the statement was sent (pgx says when that
// is safe); a broken connection after that might have committed, so it is
// not retried (an append could happen twice).
func pgRetryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01" || pe.Code == "55P03"
	}
	return pgconn.SafeToRetry(err) && !unreachable(err)
}

func unreachable(err error) bool {
	var ne net.Error
	var ce *pgconn.ConnectError
	return errors.As(err, &ne) || errors.As(err, &ce) || errors.Is(err, sql.ErrConnDone)
}

func pgClassify(err error) *Error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "53100": // disk_full
			return &Error{Kind: Full, Problem: "PostgreSQL's disk is full (" + pe.Message + "); nothing was written",
				Fix: "free space on the database server"}
		case pe.Code == "25006": // read_only_sql_transaction
			return &Error{Kind: ReadOnly, Problem: "PostgreSQL refuses writes (" + pe.Message + ")",
				Fix: "point " + URLEnv + " at the primary, not a read replica"}
		case strings.HasPrefix(pe.Code, "28"): // invalid authorization
			return &Error{Kind: Unavailable, Problem: "PostgreSQL refused the credentials (" + pe.Message + ")",
				Fix: "check the user and password in " + URLEnv}
		case pe.Code == "3D000": // invalid_catalog_name
			return &Error{Kind: Unavailable, Problem: "the database does not exist (" + pe.Message + ")",
				Fix: "create it (createdb) or fix the database name in " + URLEnv}
		case strings.HasPrefix(pe.Code, "57P") || strings.HasPrefix(pe.Code, "08"): // shutdown, connection
			return &Error{Kind: Unavailable, Problem: "PostgreSQL went away (" + pe.Message + ")",
				Fix: "check that the PostgreSQL server is running and reachable; calls work again once it is"}
		case strings.HasPrefix(pe.Code, "53"): // insufficient resources
			return &Error{Kind: Unavailable, Problem: "PostgreSQL is out of resources (" + pe.Message + ")",
				Fix: "check the server's max_connections and memory"}
		}
		return &Error{Kind: Failed, Problem: "PostgreSQL error " + pe.Code + ": " + pe.Message, Fix: "see the message; report it if it persists"}
	}
	if unreachable(err) || pgconn.Timeout(err) || strings.Contains(err.Error(), "connect") {
		return &Error{Kind: Unavailable, Problem: "cannot reach PostgreSQL (" + lastLine(err.Error()) + ")",
			Fix: "check that the PostgreSQL server is running and reachable at that address; calls work again once it is"}
	}
	return &Error{Kind: Failed, Problem: err.Error(), Fix: "see the message; report it if it persists"}
}

// scrub removes a URL (which may carry a password) from an error text.
func scrub(msg, rawURL string) string {
	return strings.ReplaceAll(msg, rawURL, redactURL(rawURL))
}

func lastLine(s string) string {
	if i := strings.LastIndex(s, ": "); i >= 0 && len(s)-i < 200 {
		return strings.TrimSpace(s[i+2:])
	}
	return s
}
