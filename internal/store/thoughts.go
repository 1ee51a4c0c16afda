package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/kljensen/snowball/english"
)

// The thoughts feature: Thoughtbox's reasoning sessions and their numbered
// thoughts, with full-text search (SQLite FTS5 with Porter stemming;
// PostgreSQL tsvector, English configuration). Thoughts are append-only.
var _ = register(feature{Name: "thoughts", Migrations: []migration{{
	SQLite: `CREATE TABLE tb_sessions (
  id TEXT NOT NULL PRIMARY KEY,
  namespace TEXT NOT NULL,
  title TEXT NOT NULL,
  tags TEXT NOT NULL,
  status TEXT NOT NULL,
  thought_count INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX tb_sessions_recent ON tb_sessions (namespace, updated_at DESC, id);
CREATE TABLE tb_session_tags (
  session_id TEXT NOT NULL REFERENCES tb_sessions (id),
  tag TEXT NOT NULL,
  PRIMARY KEY (session_id, tag)
) WITHOUT ROWID;
CREATE INDEX tb_session_tags_tag ON tb_session_tags (tag, session_id);
CREATE TABLE tb_thoughts (
  session_id TEXT NOT NULL REFERENCES tb_sessions (id),
  number INTEGER NOT NULL,
  thought TEXT NOT NULL,
  thought_type TEXT NOT NULL,
  next_needed INTEGER NOT NULL,
  confidence TEXT,
  branch_id TEXT,
  branch_from INTEGER,
  is_revision INTEGER NOT NULL,
  revises INTEGER,
  payload TEXT,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, number)
);
CREATE VIRTUAL TABLE tb_thoughts_fts USING fts5 (thought, session_id UNINDEXED, number UNINDEXED, namespace UNINDEXED, tokenize = 'porter unicode61')`,
	Postgres: `CREATE TABLE tb_sessions (
  id TEXT NOT NULL PRIMARY KEY,
  namespace TEXT NOT NULL,
  title TEXT NOT NULL,
  tags TEXT NOT NULL,
  status TEXT NOT NULL,
  thought_count INTEGER NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE INDEX tb_sessions_recent ON tb_sessions (namespace, updated_at DESC, id);
CREATE TABLE tb_session_tags (
  session_id TEXT NOT NULL REFERENCES tb_sessions (id),
  tag TEXT NOT NULL,
  PRIMARY KEY (session_id, tag)
);
CREATE INDEX tb_session_tags_tag ON tb_session_tags (tag, session_id);
CREATE TABLE tb_thoughts (
  session_id TEXT NOT NULL REFERENCES tb_sessions (id),
  number INTEGER NOT NULL,
  thought TEXT NOT NULL,
  thought_type TEXT NOT NULL,
  next_needed INTEGER NOT NULL,
  confidence TEXT,
  branch_id TEXT,
  branch_from INTEGER,
  is_revision INTEGER NOT NULL,
  revises INTEGER,
  payload TEXT,
  created_at BIGINT NOT NULL,
  namespace TEXT NOT NULL,
  tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', thought)) STORED,
  PRIMARY KEY (session_id, number)
);
CREATE INDEX tb_thoughts_tsv ON tb_thoughts USING GIN (tsv)`,
}}})

// Thoughts is the accessor of the thoughts feature.
type Thoughts struct{ s *Store }

// Thoughts returns the sessions-and-thoughts accessor.
func (s *Store) Thoughts() Thoughts { return Thoughts{s} }

// Session is a reasoning session.
type Session struct {
	ID           string
	Title        string
	Tags         []string
	Status       string // "active", or "completed" once a thought said nextThoughtNeeded: false
	ThoughtCount int
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Thought is one stored thought.
type Thought struct {
	SessionID         string
	Number            int
	Thought           string
	Type              string
	NextThoughtNeeded bool
	Confidence        string
	BranchID          string
	BranchFromThought int // 0: none
	IsRevision        bool
	RevisesThought    int // 0: none
	// Payload is a JSON object of the type-specific fields (options,
	// actionResult, ...), or nil.
	Payload   json.RawMessage
	CreatedAt time.Time
}

// NewID returns a random UUID (version 4).
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// CreateSession starts an empty session in namespace ns.
func (t Thoughts) CreateSession(ctx context.Context, ns, title string, tags []string) (Session, error) {
	ses := Session{ID: NewID(), Title: title, Tags: normTags(tags), Status: "active"}
	err := t.s.tx(ctx, "thoughts.createSession", func(b *backend, tx *sql.Tx) error {
		now := b.nowMs()
		ses.CreatedAt, ses.UpdatedAt = time.UnixMilli(now), time.UnixMilli(now)
		tagsJSON, _ := json.Marshal(ses.Tags)
		if _, err := tx.ExecContext(ctx, b.q(`INSERT INTO tb_sessions (id, namespace, title, tags, status, thought_count, created_at, updated_at)
VALUES (?, ?, ?, ?, 'active', 0, ?, ?)`), ses.ID, ns, title, string(tagsJSON), now, now); err != nil {
			return err
		}
		return setTags(ctx, b, tx, ses.ID, ses.Tags, false)
	})
	return ses, err
}

func normTags(tags []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

func setTags(ctx context.Context, b *backend, tx *sql.Tx, id string, tags []string, replace bool) error {
	if replace {
		if _, err := tx.ExecContext(ctx, b.q("DELETE FROM tb_session_tags WHERE session_id = ?"), id); err != nil {
			return err
		}
	}
	for _, tag := range tags {
		if _, err := tx.ExecContext(ctx, b.q("INSERT INTO tb_session_tags (session_id, tag) VALUES (?, ?)"), id, tag); err != nil {
			return err
		}
	}
	return nil
}

// Append is a thought to add, and how it changes its session.
type Append struct {
	Thought
	// Title, if not empty, renames the session; Tags, if not nil,
	// replaces its tags.
	Title string
	Tags  []string
}

// ThoughtError is an Append refused because it refers to a thought the
// session does not have.
type ThoughtError struct{ Msg string }

func (e *ThoughtError) Error() string { return e.Msg }

// AppendThought adds a thought to session id of namespace ns, numbering it
// after the last, and returns it with the session as it now is. Concurrent
// appends to one session get consecutive numbers.
func (t Thoughts) AppendThought(ctx context.Context, ns, id string, a Append) (Thought, Session, error) {
	var th Thought
	var ses Session
	err := t.s.tx(ctx, "thoughts.append", func(b *backend, tx *sql.Tx) error {
		q := "SELECT thought_count FROM tb_sessions WHERE id = ? AND namespace = ?"
		if b.dialect == postgres {
			q += " FOR UPDATE"
		}
		var count int
		if err := b.txRow(ctx, tx, q, id, ns).Scan(&count); err != nil {
			if err == sql.ErrNoRows {
				return &NotFoundError{What: "session", ID: id}
			}
			return err
		}
		for _, ref := range []struct {
			n    int
			name string
		}{{a.RevisesThought, "revisesThought"}, {a.BranchFromThought, "branchFromThought"}} {
			if ref.n != 0 && (ref.n < 1 || ref.n > count) {
				msg := fmt.Sprintf("%s is %d, but the session has no thought %d", ref.name, ref.n, ref.n)
				if count == 0 {
					msg += " (it has no thoughts yet)"
				} else {
					msg += fmt.Sprintf(" (its thoughts are numbered 1 to %d)", count)
				}
				return &ThoughtError{Msg: msg}
			}
		}
		now := b.nowMs()
		th = a.Thought
		th.SessionID, th.Number, th.CreatedAt = id, count+1, time.UnixMilli(now)
		status := "active"
		if !th.NextThoughtNeeded {
			status = "completed"
		}
		set := "thought_count = ?, updated_at = ?, status = ?"
		args := []any{th.Number, now, status}
		if a.Title != "" {
			set += ", title = ?"
			args = append(args, a.Title)
		}
		if a.Tags != nil {
			tagsJSON, _ := json.Marshal(normTags(a.Tags))
			set += ", tags = ?"
			args = append(args, string(tagsJSON))
			if err := setTags(ctx, b, tx, id, normTags(a.Tags), true); err != nil {
				return err
			}
		}
		args = append(args, id)
		if _, err := b.txExec(ctx, tx, "UPDATE tb_sessions SET "+set+" WHERE id = ?", args...); err != nil {
			return err
		}
		var payload sql.NullString
		if len(th.Payload) > 0 {
			payload = sql.NullString{String: string(th.Payload), Valid: true}
		}
		cols := "session_id, number, thought, thought_type, next_needed, confidence, branch_id, branch_from, is_revision, revises, payload, created_at"
		vals := []any{id, th.Number, th.Thought, th.Type, boolInt(th.NextThoughtNeeded), nullStr(th.Confidence), nullStr(th.BranchID),
			nullInt(th.BranchFromThought), boolInt(th.IsRevision), nullInt(th.RevisesThought), payload, now}
		if b.dialect == postgres {
			cols += ", namespace"
			vals = append(vals, ns)
		}
		if _, err := b.txExec(ctx, tx, "INSERT INTO tb_thoughts ("+cols+") VALUES ("+placeholders(len(vals))+")", vals...); err != nil {
			return err
		}
		if b.dialect == sqliteDialect {
			if _, err := b.txExec(ctx, tx, "INSERT INTO tb_thoughts_fts (thought, session_id, number, namespace) VALUES (?, ?, ?, ?)", th.Thought, id, th.Number, ns); err != nil {
				return err
			}
		}
		var err error
		ses, err = scanSession(b.txRow(ctx, tx, "SELECT "+sessionCols+" FROM tb_sessions WHERE id = ? AND namespace = ?", id, ns))
		return err
	})
	return th, ses, err
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

func nullStr(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
func nullInt(n int) sql.NullInt64     { return sql.NullInt64{Int64: int64(n), Valid: n != 0} }

const sessionCols = "id, title, tags, status, thought_count, created_at, updated_at"

func scanSession(sc interface{ Scan(...any) error }) (Session, error) {
	var s Session
	var tags string
	var created, updated int64
	if err := sc.Scan(&s.ID, &s.Title, &tags, &s.Status, &s.ThoughtCount, &created, &updated); err != nil {
		return s, err
	}
	json.Unmarshal([]byte(tags), &s.Tags)
	if s.Tags == nil {
		s.Tags = []string{}
	}
	s.CreatedAt, s.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
	return s, nil
}

func getSession(ctx context.Context, b *backend, q queryer, ns, id string) (Session, error) {
	s, err := scanSession(q.QueryRowContext(ctx, b.q("SELECT "+sessionCols+" FROM tb_sessions WHERE id = ? AND namespace = ?"), id, ns))
	if err == sql.ErrNoRows {
		return s, &NotFoundError{What: "session", ID: id}
	}
	return s, err
}

// Session returns session id of namespace ns without its thoughts.
func (t Thoughts) Session(ctx context.Context, ns, id string) (Session, error) {
	var s Session
	err := t.s.read(ctx, "thoughts.session", func(b *backend, q queryer) error {
		var err error
		s, err = getSession(ctx, b, q, ns, id)
		return err
	})
	return s, err
}

// Get returns session id of namespace ns and its thoughts in order.
func (t Thoughts) Get(ctx context.Context, ns, id string) (Session, []Thought, error) {
	var s Session
	var out []Thought
	err := t.s.read(ctx, "thoughts.get", func(b *backend, q queryer) error {
		var err error
		if s, err = getSession(ctx, b, q, ns, id); err != nil {
			return err
		}
		rows, err := q.QueryContext(ctx, b.q(`SELECT number, thought, thought_type, next_needed, confidence, branch_id, branch_from, is_revision, revises, payload, created_at
FROM tb_thoughts WHERE session_id = ? ORDER BY number`), id)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = nil
		for rows.Next() {
			th := Thought{SessionID: id}
			var next, rev int
			var conf, branch, payload sql.NullString
			var from, revises sql.NullInt64
			var created int64
			if err := rows.Scan(&th.Number, &th.Thought, &th.Type, &next, &conf, &branch, &from, &rev, &revises, &payload, &created); err != nil {
				return err
			}
			th.NextThoughtNeeded, th.IsRevision = next != 0, rev != 0
			th.Confidence, th.BranchID = conf.String, branch.String
			th.BranchFromThought, th.RevisesThought = int(from.Int64), int(revises.Int64)
			if payload.Valid {
				th.Payload = json.RawMessage(payload.String)
			}
			th.CreatedAt = time.UnixMilli(created)
			out = append(out, th)
		}
		return rows.Err()
	})
	return s, out, err
}

// List returns the sessions of namespace ns, most recently updated first,
// that carry every tag in tags, and how many there are in all.
func (t Thoughts) List(ctx context.Context, ns string, limit, offset int, tags []string) ([]Session, int, error) {
	if limit <= 0 {
		limit = 20
	}
	var out []Session
	var total int
	err := t.s.read(ctx, "thoughts.list", func(b *backend, q queryer) error {
		where := "namespace = ?"
		args := []any{ns}
		for _, tag := range normTags(tags) {
			where += " AND id IN (SELECT session_id FROM tb_session_tags WHERE tag = ?)"
			args = append(args, tag)
		}
		if err := q.QueryRowContext(ctx, b.q("SELECT count(*) FROM tb_sessions WHERE "+where), args...).Scan(&total); err != nil {
			return err
		}
		rows, err := q.QueryContext(ctx, b.q("SELECT "+sessionCols+" FROM tb_sessions WHERE "+where+" ORDER BY updated_at DESC, id LIMIT ? OFFSET ?"),
			append(args, limit, max(0, offset))...)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = []Session{}
		for rows.Next() {
			s, err := scanSession(rows)
			if err != nil {
				return err
			}
			out = append(out, s)
		}
		return rows.Err()
	})
	return out, total, err
}

// Latest returns the most recently updated session of ns, if any.
func (t Thoughts) Latest(ctx context.Context, ns string) (Session, bool, error) {
	list, _, err := t.List(ctx, ns, 1, 0, nil)
	if err != nil || len(list) == 0 {
		return Session{}, false, err
	}
	return list[0], true, nil
}

// Hit is one thought matching a search.
type Hit struct {
	SessionID string
	Number    int
	Type      string
	Thought   string
	// Score orders hits, higher first; its scale differs by backend.
	Score float64
}

// Search finds the thoughts of namespace ns matching every word of query
// (stemmed: "retries" finds "retry"), best first, at most limit.
func (t Thoughts) Search(ctx context.Context, ns, query string, limit int) ([]Hit, error) {
	if limit <= 0 {
		limit = 10
	}
	words := searchWords(query)
	if len(words) == 0 {
		return []Hit{}, nil
	}
	out := []Hit{}
	err := t.s.read(ctx, "thoughts.search", func(b *backend, q queryer) error {
		out = out[:0]
		var rows *sql.Rows
		var err error
		if b.dialect == postgres {
			rows, err = q.QueryContext(ctx, `SELECT t.session_id, t.number, t.thought_type, t.thought, ts_rank(t.tsv, query) AS score
FROM tb_thoughts t, plainto_tsquery('english', $1) query
WHERE t.namespace = $2 AND t.tsv @@ query ORDER BY score DESC, t.session_id, t.number LIMIT $3`, strings.Join(words, " "), ns, limit)
		} else {
			quoted := make([]string, len(words))
			for i, w := range words {
				quoted[i] = `"` + w + `"`
			}
			rows, err = q.QueryContext(ctx, `SELECT f.session_id, f.number, t.thought_type, t.thought, -bm25(tb_thoughts_fts) AS score
FROM tb_thoughts_fts f JOIN tb_thoughts t ON t.session_id = f.session_id AND t.number = f.number
WHERE tb_thoughts_fts MATCH ? AND f.namespace = ? ORDER BY score DESC, f.session_id, f.number LIMIT ?`, strings.Join(quoted, " "), ns, limit)
		}
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var h Hit
			if err := rows.Scan(&h.SessionID, &h.Number, &h.Type, &h.Thought, &h.Score); err != nil {
				return err
			}
			out = append(out, h)
		}
		return rows.Err()
	})
	return out, err
}

// searchWords splits a query into its words (letters and digits) less
// English stop words, at most 32 of them: the query language of neither
// backend reaches the user, and both match the same words (PostgreSQL's
// English configuration drops the same Snowball stop words).
func searchWords(q string) []string {
	var ws []string
	for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !english.IsStopWord(w) && len(ws) < 32 {
			ws = append(ws, w)
		}
	}
	return ws
}

// Stats counts the sessions and thoughts of namespace ns.
func (t Thoughts) Stats(ctx context.Context, ns string) (sessions, thoughts int, err error) {
	err = t.s.read(ctx, "thoughts.stats", func(b *backend, q queryer) error {
		var n sql.NullInt64
		err := q.QueryRowContext(ctx, b.q("SELECT count(*), SUM(thought_count) FROM tb_sessions WHERE namespace = ?"), ns).Scan(&sessions, &n)
		thoughts = int(n.Int64)
		return err
	})
	return sessions, thoughts, err
}
