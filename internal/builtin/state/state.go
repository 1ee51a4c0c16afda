// Package state is the `store` built-in server: JSON values that last
// between runs, by key, in the caller's namespace, with optional expiry and
// size limits. Scripts reach it as @codemode/servers/store (get, set,
// delete, list) or, on the search-execute surface, as the global `store`.
//
// Start with [New]; the gateway adds it to its built-in set (package
// builtin). Its data lives in the data store's kv feature
// (internal/store/kv.go).
package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/builtin"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/store"
)

// ID is the server's id: @codemode/servers/store.
const ID = "store"

// MaxKeyBytes bounds a key.
const MaxKeyBytes = 1024

// Options configure the server.
type Options struct {
	// Limits bound values and namespaces; zero fields take config's
	// defaults (1 MiB per value, 64 MiB per namespace).
	Limits config.StoreLimits
}

type server struct {
	st     *store.Store
	limits store.KVLimits
}

const instructions = `State that lasts between runs: JSON values by key. Each client (auth token) has its own namespace; keys are any string up to 1024 bytes, conventionally "area:item". get returns {found, value}; set takes an optional ttlSeconds after which the key expires; list pages through keys by prefix (pass the returned cursor to get the next page).`

// New returns the store server over st.
func New(st *store.Store, opts *Options) *builtin.Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	d := config.Default().Store
	if o.Limits.MaxValueBytes <= 0 {
		o.Limits.MaxValueBytes = d.MaxValueBytes
	}
	if o.Limits.MaxNamespaceBytes <= 0 {
		o.Limits.MaxNamespaceBytes = d.MaxNamespaceBytes
	}
	s := &server{st: st, limits: store.KVLimits{MaxKeyBytes: MaxKeyBytes, MaxValueBytes: o.Limits.MaxValueBytes, MaxNamespaceBytes: o.Limits.MaxNamespaceBytes}}
	srv := builtin.NewServer(ID, "1.0.0", instructions)
	srv.AddTool(&mcp.Tool{Name: "get", Title: "Get a value",
		Description: "Read the value stored under key. Returns {key, found, value?, updatedAt?, expiresAt?}; found is false for a key never set, deleted or expired.",
		InputSchema: schemaFor[getInput](nil), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.get)
	srv.AddTool(&mcp.Tool{Name: "set", Title: "Set a value",
		Description: fmt.Sprintf("Store a JSON value under key, replacing any. ttlSeconds > 0 makes it expire. Returns {key, bytes, expiresAt?}. Limits: %d bytes per value (its JSON), %d bytes per namespace (keys and values), %d bytes per key.",
			s.limits.MaxValueBytes, s.limits.MaxNamespaceBytes, MaxKeyBytes),
		InputSchema: schemaFor[setInput](func(s *jsonschema.Schema) {
			s.Properties["value"] = &jsonschema.Schema{Description: "any JSON value"}
		}),
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: ptr(true)}}, s.set)
	srv.AddTool(&mcp.Tool{Name: "delete", Title: "Delete a value",
		Description: "Remove key. Returns {key, deleted}; deleted is false if there was no live value.",
		InputSchema: schemaFor[keyInput](nil), Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: ptr(true)}}, s.delete)
	srv.AddTool(&mcp.Tool{Name: "list", Title: "List keys",
		Description: "List keys in order, optionally those starting with prefix, limit per page (default 100, at most 1000), with their values if values is true. Returns {items: [{key, bytes, updatedAt, expiresAt?, value?}], cursor?}; pass cursor back for the next page (absent on the last).",
		InputSchema: schemaFor[listInput](nil), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.list)
	return srv
}

func ptr[T any](v T) *T { return &v }

type keyInput struct {
	Key string `json:"key" jsonschema:"the key"`
}

type getInput = keyInput

type setInput struct {
	Key        string          `json:"key" jsonschema:"the key"`
	Value      json.RawMessage `json:"value"`
	TTLSeconds float64         `json:"ttlSeconds,omitempty" jsonschema:"seconds until the key expires; absent or 0: never"`
}

type listInput struct {
	Prefix string `json:"prefix,omitempty" jsonschema:"only keys that start with this"`
	Limit  int    `json:"limit,omitempty" jsonschema:"keys per page, 1 to 1000 (default 100)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"the cursor of the previous page"`
	Values bool   `json:"values,omitempty" jsonschema:"include each key's value"`
}

// schemaFor is T's input schema; edit adjusts it.
func schemaFor[T any](edit func(*jsonschema.Schema)) *jsonschema.Schema {
	s := builtin.InputSchema[T]()
	if edit != nil {
		edit(s)
	}
	return s
}

func decode(args json.RawMessage, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("the input does not match the tool's schema: %v", err)
	}
	return nil
}

// entry is an item as scripts see it.
type entry struct {
	Key       string          `json:"key"`
	Found     *bool           `json:"found,omitempty"`
	Deleted   *bool           `json:"deleted,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
	Bytes     int64           `json:"bytes,omitempty"`
	UpdatedAt string          `json:"updatedAt,omitempty"`
	ExpiresAt string          `json:"expiresAt,omitempty"`
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func needKey(k string) error {
	if k == "" {
		return errors.New(`Missing required parameter: key (a non-empty string, e.g. {key: "notes:today"})`)
	}
	return nil
}

func (s *server) get(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in getInput
	if err := decode(args, &in); err != nil {
		return nil, err
	}
	if err := needKey(in.Key); err != nil {
		return nil, err
	}
	e, found, err := s.st.KV().Get(ctx, c.Client, in.Key)
	if err != nil {
		return nil, err
	}
	out := entry{Key: in.Key, Found: &found}
	if found {
		out.Value, out.UpdatedAt, out.ExpiresAt = e.Value, stamp(e.UpdatedAt), stamp(e.ExpiresAt)
	}
	return out, nil
}

func (s *server) set(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in setInput
	if err := decode(args, &in); err != nil {
		return nil, err
	}
	if err := needKey(in.Key); err != nil {
		return nil, err
	}
	if len(in.Value) == 0 {
		return nil, errors.New("Missing required parameter: value (any JSON value; undefined cannot be stored: use null)")
	}
	if in.TTLSeconds < 0 {
		return nil, errors.New("ttlSeconds must be positive (or absent: the key never expires)")
	}
	ttl := time.Duration(in.TTLSeconds * float64(time.Second))
	if in.TTLSeconds > 0 && ttl < time.Millisecond {
		ttl = time.Millisecond
	}
	e, err := s.st.KV().Set(ctx, c.Client, in.Key, compact(in.Value), ttl, s.limits)
	var le *store.LimitError
	if errors.As(err, &le) {
		return nil, limitError(le)
	}
	if err != nil {
		return nil, err
	}
	return entry{Key: in.Key, Bytes: e.Bytes, ExpiresAt: stamp(e.ExpiresAt)}, nil
}

// compact drops insignificant whitespace, which would count against the
// limits and cost space for nothing.
func compact(v json.RawMessage) json.RawMessage {
	var b strings.Builder
	b.Grow(len(v))
	inStr, esc := false, false
	for _, c := range []byte(v) {
		switch {
		case inStr:
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == ' ' || c == '\n' || c == '\t' || c == '\r':
			continue
		}
		b.WriteByte(c)
	}
	return json.RawMessage(b.String())
}

func limitError(le *store.LimitError) error {
	fix := "store less under one key (split it, or keep only what later runs need)"
	switch le.Limit {
	case "maxNamespaceBytes":
		fix = "delete keys you no longer need (list them with list), set a ttlSeconds on temporary ones, or ask the operator to raise codemode.store.maxNamespaceBytes"
	case "maxValueBytes":
		fix += ", or ask the operator to raise codemode.store.maxValueBytes"
	case "maxKeyBytes":
		fix = "use a shorter key"
	}
	return fmt.Errorf("%s; nothing was stored. Fix: %s", le.Error(), fix)
}

func (s *server) delete(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in keyInput
	if err := decode(args, &in); err != nil {
		return nil, err
	}
	if err := needKey(in.Key); err != nil {
		return nil, err
	}
	deleted, err := s.st.KV().Delete(ctx, c.Client, in.Key)
	if err != nil {
		return nil, err
	}
	return entry{Key: in.Key, Deleted: &deleted}, nil
}

func (s *server) list(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in listInput
	if err := decode(args, &in); err != nil {
		return nil, err
	}
	if in.Limit <= 0 {
		in.Limit = 100
	}
	if in.Limit > 1000 {
		return nil, fmt.Errorf("limit is %d; at most 1000 keys come in one page (pass the cursor for the next)", in.Limit)
	}
	es, more, err := s.st.KV().List(ctx, c.Client, in.Prefix, in.Cursor, in.Limit, in.Values)
	if err != nil {
		return nil, err
	}
	items := make([]entry, len(es))
	for i, e := range es {
		items[i] = entry{Key: e.Key, Value: e.Value, Bytes: e.Bytes, UpdatedAt: stamp(e.UpdatedAt), ExpiresAt: stamp(e.ExpiresAt)}
	}
	out := struct {
		Items  []entry `json:"items"`
		Cursor string  `json:"cursor,omitempty"`
	}{Items: items}
	if more {
		out.Cursor = es[len(es)-1].Key
	}
	return out, nil
}
