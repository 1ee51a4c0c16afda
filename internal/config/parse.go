package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/naming"
)

// Error is a configuration mistake: where it is, what is wrong, how to fix it.
type Error struct {
	File string
	// Key is the dotted path of the offending key, e.g.
	// "mcpServers.memory.command"; empty for whole-file problems.
	Key string
	// Line and Column locate JSON syntax errors (1-based); zero otherwise.
	Line, Column int
	Problem      string
	Fix          string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if b.Len() == 0 {
		b.WriteString("config")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	if e.Key != "" {
		b.WriteString(": ")
		b.WriteString(e.Key)
	}
	b.WriteString(": ")
	b.WriteString(e.Problem)
	if e.Fix != "" {
		b.WriteString("\n  fix: ")
		b.WriteString(e.Fix)
	}
	return b.String()
}

// LookupEnv is os.LookupEnv; tests substitute their own.
type LookupEnv func(string) (string, bool)

// Parse parses configuration data read from file. Unknown keys, wrong types,
// missing commands and malformed URLs are errors. ${VAR} and ${VAR:-default}
// are expanded in `args`, `env`, `url` and `headers` using lookup.
func Parse(file string, data []byte, lookup LookupEnv) (*Config, error) {
	p := &parser{file: file, data: data, lookup: lookup}
	c, err := p.parse()
	if err != nil {
		return nil, err
	}
	c.File = file
	c.applyDefaults()
	return c, nil
}

type parser struct {
	file   string
	data   []byte
	lookup LookupEnv
}

func (p *parser) errf(key, fix, format string, args ...any) *Error {
	return &Error{File: p.file, Key: key, Problem: fmt.Sprintf(format, args...), Fix: fix}
}

// syntaxError turns a JSON decoding error into an Error with a position.
func (p *parser) syntaxError(err error) *Error {
	var se *json.SyntaxError
	var off int64 = -1
	if errors.As(err, &se) {
		off = se.Offset
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		off = int64(len(p.data))
	}
	e := &Error{File: p.file, Problem: "invalid JSON: " + err.Error(), Fix: "correct the JSON syntax at that position (a missing comma, quote or brace is the usual cause)"}
	if off >= 0 {
		e.Line, e.Column = position(p.data, off)
	}
	return e
}

func position(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	if col < 1 {
		col = 1
	}
	return line, col
}

// entry is one key of a JSON object, in file order.
type entry struct {
	key string
	raw json.RawMessage
}

// object decodes a JSON object keeping key order, which JSON itself does not
// promise but every config author relies on: the §5.0.1 collision rule gives
// the clean id to the server declared first.
func (p *parser) object(key string, raw json.RawMessage) ([]entry, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, p.syntaxError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, p.errf(key, "write it as a JSON object: { ... }", "must be an object, not %s", describe(raw))
	}
	var out []entry
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, p.syntaxError(err)
		}
		k := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, p.syntaxError(err)
		}
		if seen[k] {
			return nil, p.errf(join(key, k), "keep only one of them", "key appears twice")
		}
		seen[k] = true
		out = append(out, entry{k, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, p.syntaxError(err)
	}
	return out, nil
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func describe(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "empty"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// unknownKey builds the error for a key that is not allowed, suggesting the
// closest allowed one.
func (p *parser) unknownKey(parent, key string, allowed []string) *Error {
	fix := "remove it; allowed keys here are " + quoteList(allowed)
	if s := closest(key, allowed); s != "" {
		fix = fmt.Sprintf("did you mean %q? Allowed keys here are %s", s, quoteList(allowed))
	}
	return p.errf(join(parent, key), fix, "unknown key %q", key)
}

func quoteList(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = `"` + k + `"`
	}
	return strings.Join(q, ", ")
}

// closest returns the allowed key within edit distance 2 of key, if any.
func closest(key string, allowed []string) string {
	best, bestD := "", 3
	for _, a := range allowed {
		if d := diag.Distance(strings.ToLower(key), strings.ToLower(a)); d < bestD {
			best, bestD = a, d
		}
	}
	return best
}

var (
	topKeys    = []string{"$schema", "mcpServers", "codemode"}
	serverKeys = []string{"type", "command", "args", "env", "cwd", "url", "headers", "timeoutMs", "disabled"}
	gatewayKey = []string{"defaultLimits", "maxLimits", "callTimeoutMs", "surfaces", "runToolName", "bindingLevel", "typesBudgetTokens", "indexBudgetTokens"}
	limitKeys  = []string{"timeoutMs", "maxMemoryBytes", "maxLogBytes", "maxToolCalls", "maxResultBytes"}
)

func allowed(keys []string, k string) bool {
	for _, a := range keys {
		if a == k {
			return true
		}
	}
	return false
}

func (p *parser) parse() (*Config, error) {
	if len(bytes.TrimSpace(p.data)) == 0 {
		return nil, &Error{File: p.file, Problem: "the file is empty", Fix: `write at least {"mcpServers": {}}`}
	}
	if !json.Valid(p.data) {
		// Decode once more to get the position of the first error.
		var v any
		err := json.Unmarshal(p.data, &v)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return nil, p.syntaxError(err)
	}
	top, err := p.object("", p.data)
	if err != nil {
		return nil, err
	}
	c := &Config{}
	var servers []entry
	for _, e := range top {
		switch e.key {
		case "$schema":
		case "mcpServers":
			if servers, err = p.object("mcpServers", e.raw); err != nil {
				return nil, err
			}
		case "codemode":
			if err := p.gateway(c, e.raw); err != nil {
				return nil, err
			}
		default:
			return nil, p.unknownKey("", e.key, topKeys)
		}
	}
	var names []string
	for _, e := range servers {
		s, skip, err := p.server(e.key, e.raw)
		if err != nil {
			return nil, err
		}
		if skip {
			continue
		}
		c.Servers = append(c.Servers, s)
		names = append(names, e.key)
	}
	for i, id := range naming.ServerIDs(names) {
		c.Servers[i].ID = id
	}
	return c, nil
}

func (p *parser) server(name string, raw json.RawMessage) (s Server, skip bool, err error) {
	key := "mcpServers." + name
	fields, err := p.object(key, raw)
	if err != nil {
		return s, false, err
	}
	s.Name = name
	var typ string
	for _, f := range fields {
		k := join(key, f.key)
		switch f.key {
		case "type":
			err = p.decode(k, f.raw, &typ, `"stdio", "http" or "sse"`)
		case "command":
			err = p.decode(k, f.raw, &s.Command, "a string such as \"npx\"")
		case "args":
			err = p.decode(k, f.raw, &s.Args, "an array of strings")
		case "env":
			err = p.decode(k, f.raw, &s.Env, "an object of string values")
		case "cwd":
			err = p.decode(k, f.raw, &s.Cwd, "a directory path")
		case "url":
			err = p.decode(k, f.raw, &s.URL, "a URL such as \"http://localhost:3001/mcp\"")
		case "headers":
			err = p.decode(k, f.raw, &s.Headers, "an object of string values")
		case "timeoutMs":
			var ms int64
			if err = p.decode(k, f.raw, &ms, "a number of milliseconds"); err == nil {
				if ms <= 0 {
					return s, false, p.errf(k, "use a positive number of milliseconds, or remove the key for the default", "must be positive, got %d", ms)
				}
				s.CallTimeout = time.Duration(ms) * time.Millisecond
			}
		case "disabled":
			err = p.decode(k, f.raw, &skip, "true or false")
		default:
			return s, false, p.unknownKey(key, f.key, serverKeys)
		}
		if err != nil {
			return s, false, err
		}
	}
	if skip {
		return s, true, nil
	}
	switch {
	case typ == "" && s.Command != "" && s.URL != "":
		return s, false, p.errf(key, `keep "command" for a local server or "url" for a remote one`, `has both "command" and "url"`)
	case typ == "stdio" || typ == "" && s.Command != "":
		s.Transport = Stdio
	case typ == "http" || typ == "streamable-http" || typ == "streamableHttp" || typ == "" && s.URL != "":
		s.Transport = Streamable
	case typ == "sse":
		s.Transport = SSE
	case typ == "":
		return s, false, p.errf(key, `add "command" (and "args") to run a local server, or "url" to reach a remote one`, `needs "command" or "url"`)
	default:
		return s, false, p.errf(key+".type", `use "stdio", "http" (Streamable HTTP) or "sse"`, "unknown transport type %q", typ)
	}
	var unresolved []string
	exp := func(v string) string {
		out, missing, values := expand(v, p.lookup)
		unresolved = append(unresolved, missing...)
		s.Secrets = append(s.Secrets, values...)
		return out
	}
	if s.Transport == Stdio {
		if s.Command == "" {
			return s, false, p.errf(key, `add "command": the program to run, e.g. "npx"`, `a stdio server needs "command"`)
		}
		if s.URL != "" || len(s.Headers) > 0 {
			return s, false, p.errf(key, `remove "url" and "headers", or set "type" to "http"`, `a stdio server cannot have "url" or "headers"`)
		}
		for i := range s.Args {
			s.Args[i] = exp(s.Args[i])
		}
		for k, v := range s.Env {
			s.Env[k] = exp(v)
			if secretName(k) {
				s.Secrets = append(s.Secrets, s.Env[k])
			}
		}
		s.Cwd = exp(s.Cwd)
	} else {
		if s.URL == "" {
			return s, false, p.errf(key, `add "url", e.g. "http://localhost:3001/mcp"`, `a %s server needs "url"`, s.Transport)
		}
		if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "" {
			return s, false, p.errf(key, `remove "command", "args", "env" and "cwd", or drop "type"/"url" to run it locally`, `a remote server cannot have "command", "args", "env" or "cwd"`)
		}
		s.URL = exp(s.URL)
		for k, v := range s.Headers {
			s.Headers[k] = exp(v)
			s.Secrets = append(s.Secrets, s.Headers[k])
			if scheme, cred, ok := strings.Cut(s.Headers[k], " "); ok && len(scheme) < 10 {
				s.Secrets = append(s.Secrets, cred) // "Bearer <token>": the token alone too
			}
		}
		if len(unresolved) == 0 {
			u, err := url.Parse(s.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return s, false, p.errf(key+".url", `use an absolute http:// or https:// URL`, "%q is not an http(s) URL", s.URL)
			}
		}
	}
	sort.Strings(unresolved)
	s.Unresolved = dedupe(unresolved)
	s.Secrets = secrets(s.Secrets)
	return s, false, nil
}

// secretName reports whether an environment variable's name says it holds a
// credential.
func secretName(name string) bool {
	n := strings.ToUpper(name)
	for _, w := range []string{"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "PASS", "AUTH", "CREDENTIAL", "COOKIE", "SESSION", "PRIVATE"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// secrets keeps the values long enough to be worth redacting: a short value
// ("1", "true", "dev") would redact ordinary text and protects nothing.
func secrets(vals []string) []string {
	var out []string
	for _, v := range vals {
		if len(strings.TrimSpace(v)) >= 8 {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return dedupe(out)
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (p *parser) decode(key string, raw json.RawMessage, dst any, want string) error {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return p.errf(key, "use "+want+", or remove the key", "must not be null")
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return p.errf(key, "use "+want, "has the wrong type: got %s", describe(raw))
	}
	return nil
}

func (p *parser) gateway(c *Config, raw json.RawMessage) error {
	fields, err := p.object("codemode", raw)
	if err != nil {
		return err
	}
	for _, f := range fields {
		k := join("codemode", f.key)
		switch f.key {
		case "defaultLimits":
			err = p.limits(k, f.raw, &c.DefaultLimits)
		case "maxLimits":
			err = p.limits(k, f.raw, &c.MaxLimits)
		case "callTimeoutMs":
			var ms int64
			if err = p.decode(k, f.raw, &ms, "a number of milliseconds"); err == nil && ms <= 0 {
				err = p.errf(k, "use a positive number of milliseconds", "must be positive")
			}
			c.CallTimeout = time.Duration(ms) * time.Millisecond
		case "surfaces":
			if err = p.decode(k, f.raw, &c.Serve.Surfaces, "an array such as [\"run\", \"files\"]"); err == nil {
				for _, s := range c.Serve.Surfaces {
					if !allowed(KnownSurfaces, s) {
						err = p.errf(k, "use any of "+quoteList(KnownSurfaces), "unknown surface %q", s)
						break
					}
				}
			}
		case "runToolName":
			if err = p.decode(k, f.raw, &c.Serve.RunToolName, "a tool name such as \"codemode_run\""); err == nil && !validToolName(c.Serve.RunToolName) {
				err = p.errf(k, "use 1 to 64 characters from letters, digits, '_', '-' and '.'", "%q is not a valid tool name", c.Serve.RunToolName)
			}
		case "bindingLevel":
			if err = p.decode(k, f.raw, &c.Serve.BindingLevel, `"server" or "tool"`); err == nil && c.Serve.BindingLevel != "server" && c.Serve.BindingLevel != "tool" {
				err = p.errf(k, `use "server" (one file per server) or "tool" (one file per tool)`, "unknown binding level %q", c.Serve.BindingLevel)
			}
		case "typesBudgetTokens":
			err = p.positive(k, f.raw, &c.Serve.TypesBudgetTokens)
		case "indexBudgetTokens":
			err = p.positive(k, f.raw, &c.Serve.IndexBudgetTokens)
		default:
			return p.unknownKey("codemode", f.key, gatewayKey)
		}
		if err != nil {
			return err
		}
	}
	return p.runToolNameFree(c)
}

// runToolNameFree refuses a run tool name that another enabled surface
// already uses: one of the two tools would silently vanish from tools/list.
func (p *parser) runToolNameFree(c *Config) error {
	if !slices.Contains(c.Serve.Surfaces, "run") {
		return nil
	}
	for _, surface := range c.Serve.Surfaces {
		if slices.Contains(SurfaceTools[surface], c.Serve.RunToolName) {
			return p.errf("codemode.runToolName", "choose another name, e.g. \"codemode_run\"",
				"%q is also a tool of the %q surface", c.Serve.RunToolName, surface)
		}
	}
	return nil
}

func (p *parser) positive(key string, raw json.RawMessage, dst *int) error {
	if err := p.decode(key, raw, dst, "a positive whole number"); err != nil {
		return err
	}
	if *dst <= 0 {
		return p.errf(key, "use a positive whole number", "must be positive, got %d", *dst)
	}
	return nil
}

// validToolName allows what MCP allows for tool names (SEP-986): 1–64 of
// letters, digits, '_', '-' and '.'.
func validToolName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

func (p *parser) limits(key string, raw json.RawMessage, dst *Limits) error {
	fields, err := p.object(key, raw)
	if err != nil {
		return err
	}
	for _, f := range fields {
		k := join(key, f.key)
		var v int64
		if !allowed(limitKeys, f.key) {
			return p.unknownKey(key, f.key, limitKeys)
		}
		if err := p.decode(k, f.raw, &v, "a positive whole number"); err != nil {
			return err
		}
		if v <= 0 {
			return p.errf(k, "use a positive whole number", "must be positive, got %d", v)
		}
		switch f.key {
		case "timeoutMs":
			dst.TimeoutMs = v
		case "maxMemoryBytes":
			dst.MaxMemoryBytes = v
		case "maxLogBytes":
			dst.MaxLogBytes = v
		case "maxToolCalls":
			dst.MaxToolCalls = v
		case "maxResultBytes":
			dst.MaxResultBytes = v
		}
	}
	return nil
}

// expand replaces ${VAR} and ${VAR:-default} in s. A `$` not followed by `{`
// is left alone, so regular expressions and shell snippets in args survive.
// It returns the names of variables that were unset and had no default, and
// the values it substituted from the environment.
func expand(s string, lookup LookupEnv) (string, []string, []string) {
	if !strings.Contains(s, "${") {
		return s, nil, nil
	}
	var b strings.Builder
	var missing, values []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			break
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		ref := s[i+2 : i+j]
		name, def, hasDef := strings.Cut(ref, ":-")
		if v, ok := lookup(name); ok && (v != "" || !hasDef) {
			b.WriteString(v)
			values = append(values, v)
		} else if hasDef {
			b.WriteString(def)
		} else {
			missing = append(missing, name)
		}
		s = s[i+j+1:]
	}
	return b.String(), missing, values
}
