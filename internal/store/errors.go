package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"
)

// Kind classifies a store failure for callers that act on it.
type Kind int

const (
	// Failed is any other failure.
	Failed Kind = iota
	// Unavailable: the database cannot be reached or opened (PostgreSQL
	// down, a directory that cannot be created, a file that cannot be
	// opened).
	Unavailable
	// Corrupt: the SQLite file is not a database, or is damaged.
	Corrupt
	// Locked: another process held the database's write lock for longer
	// than Options.RetryFor.
	Locked
	// Full: the disk (or the database's size limit) is full.
	Full
	// ReadOnly: the database cannot be written (permissions, read-only
	// file system, a PostgreSQL replica).
	ReadOnly
	// Invalid: the request itself is wrong (a limit exceeded, a missing
	// record); see the message.
	Invalid
)

// Error is a store failure: what the database is (Where: the file or the
// URL without its password), what went wrong and how to fix it.
type Error struct {
	Kind    Kind
	Where   string
	Op      string // what was being done, e.g. "kv.set"
	Problem string
	Fix     string
	Err     error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Where != "" {
		b.WriteString("data store ")
		b.WriteString(e.Where)
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	if e.Fix != "" {
		b.WriteString(" (fix: ")
		b.WriteString(e.Fix)
		b.WriteString(")")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// IsKind reports whether err is a store *Error of kind k.
func IsKind(err error, k Kind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == k
}

// LimitError is a write refused because it would exceed a configured size
// limit. Limit names the setting ("maxValueBytes", "maxNamespaceBytes").
type LimitError struct {
	Limit     string
	Max       int64
	Got       int64
	Namespace string
	Key       string
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case "maxValueBytes":
		return fmt.Sprintf("the value of key %q is %d bytes, over the limit per value (maxValueBytes) of %d bytes", e.Key, e.Got, e.Max)
	case "maxNamespaceBytes":
		return fmt.Sprintf("setting key %q would bring namespace %q to %d bytes, over the limit per namespace (maxNamespaceBytes) of %d bytes", e.Key, e.Namespace, e.Got, e.Max)
	case "maxKeyBytes":
		return fmt.Sprintf("the key is %d bytes, over the limit per key of %d bytes", e.Got, e.Max)
	}
	return fmt.Sprintf("%s exceeded: %d > %d", e.Limit, e.Got, e.Max)
}

// NotFoundError is a lookup of a record that does not exist.
type NotFoundError struct {
	What string // "session", "entity"
	ID   string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("no %s with id %q", e.What, e.ID) }

// retry runs f until it succeeds, fails with an error that is not worth
// retrying, or Options.RetryFor has passed; errors are classified into
// *Error (see classify). Retrying covers a SQLite file whose write lock
// another process holds (beyond the busy timeout that each statement
// already waits) and PostgreSQL serialisation failures and deadlocks.
func (b *backend) retry(ctx context.Context, op string, f func() error) error {
	var start time.Time
	delay := 2 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := f()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !b.retryable(err) {
			return b.classify(op, err)
		}
		if start.IsZero() {
			start = time.Now()
		}
		if time.Since(start) > b.retryFor {
			return b.classify(op, err)
		}
		if attempt == 20 {
			b.log.Warn("data store busy; still retrying", "store", b.where, "op", op, "err", err)
		}
		t := time.NewTimer(delay/2 + rand.N(delay))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(delay*2, 250*time.Millisecond)
	}
}

func (b *backend) retryable(err error) bool {
	if isTyped(err) {
		return false
	}
	if b.dialect == postgres {
		return pgRetryable(err)
	}
	return sqliteBusy(err)
}

// answer marks errors that are answers to the request (a limit, a
// missing record), not faults of the database.
type answer interface{ answer() }

func (*LimitError) answer()    {}
func (*NotFoundError) answer() {}
func (*ThoughtError) answer()  {}
func (*Error) answer()         {}

// isTyped reports errors that are answers, or already classified.
func isTyped(err error) bool {
	var a answer
	return errors.As(err, &a)
}

// classify turns a driver error into an *Error naming the database and the
// fix. Errors that are answers (limits, not found, *Error) pass through.
func (b *backend) classify(op string, err error) error {
	if err == nil || isTyped(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var e *Error
	if b.dialect == postgres {
		e = pgClassify(err)
	} else {
		e = sqliteClassify(err)
	}
	e.Where, e.Op, e.Err = b.where, op, err
	return e
}

// redactURL is u without its password (and without secret-looking query
// values), for messages.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(a PostgreSQL URL that does not parse)"
	}
	if p.User != nil {
		if _, has := p.User.Password(); has {
			p.User = url.UserPassword(p.User.Username(), "xxxxx")
		}
	}
	q := p.Query()
	for k := range q {
		lk := strings.ToLower(k)
		if strings.Contains(lk, "password") || strings.Contains(lk, "secret") || strings.Contains(lk, "key") || strings.Contains(lk, "token") {
			q.Set(k, "xxxxx")
		}
	}
	p.RawQuery = q.Encode()
	return p.String()
}
