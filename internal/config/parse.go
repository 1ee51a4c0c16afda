package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/codemode-mcp/codemode/internal/admit"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/naming"
)

// Error is a configuration mistake: where it is, what is wrong, how to fix it.
type Error struct {
	File string
	// Key is the path of the offending key or element, e.g.
	// "mcpServers.memory.command", "mcpServers.memory.args[0]" or
	// "mcpServers.memory.env.API_KEY"; empty for whole-file problems.
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
// are expanded in the values of `args`, `env`, `cwd`, `url` and `headers`
// using lookup; `$${` is a literal `${` there. A `${` anywhere else (in
// `command`, or in an env or header name) is an error, since it would
// silently stay as written.
func Parse(file string, data []byte, lookup LookupEnv) (*Config, error) {
	// Windows editors (Notepad, PowerShell's Out-File) start UTF-8 files
	// with a byte order mark, which encoding/json rejects as a character.
	data = bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))
	if bytes.HasPrefix(data, []byte("\xFF\xFE")) || bytes.HasPrefix(data, []byte("\xFE\xFF")) {
		return nil, &Error{File: file, Problem: "the file is encoded as UTF-16",
			Fix: "save it as UTF-8 (in Notepad: Save As, Encoding: UTF-8)"}
	}
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
// the clean id to the server declared first. fix says how to write the
// object when raw is something else; "" for a generic one.
func (p *parser) object(key string, raw json.RawMessage, fix string) ([]entry, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, p.syntaxError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		if fix == "" {
			fix = "write it as a JSON object: { ... }"
		}
		return nil, p.typeError(key, raw, "an object", fix, key != "")
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
func (p *parser) unknownKey(parent, key string, allowed []string, aliases ...string) *Error {
	fix := "remove it; allowed keys here are " + quoteList(allowed)
	if s := closest(key, append(slices.Clip(allowed), aliases...)); s != "" {
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
	serverKeys = []string{"type", "command", "args", "env", "inheritEnv", "cwd", "url", "headers", "timeoutMs", "disabled",
		"allowTools", "denyTools", "autoApprove", "approval", "codeMode"}
	// serverAliases are accepted too, so that entries pasted from Cline and
	// Roo Code load, but not listed in fixes: Roo's alwaysAllow and
	// disabledTools, Cline's and Roo's timeout (seconds), Cline's legacy
	// transportType, Roo's watchPaths (ignored: codemode does not restart
	// servers on file changes).
	serverAliases = []string{"alwaysAllow", "disabledTools", "timeout", "transportType", "watchPaths"}
	gatewayKey    = []string{"defaultLimits", "maxLimits", "callTimeoutMs", "surfaces", "runToolName", "bindingLevel", "typesBudgetTokens", "indexBudgetTokens", "recordDir", "resultTTLMs", "resultQuotaBytes", "builtins", "store", "clients",
		"maxConcurrentRuns", "maxConcurrentRunsPerSession", "maxQueuedRuns", "memoryBudgetBytes", "approval", "history"}
	storeKeys  = []string{"maxValueBytes", "maxNamespaceBytes"}
	historyKey = []string{"enabled", "payloads", "maxAgeDays", "maxBytes"}
	clientKeys = []string{"token", "namespace"}
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
	top, err := p.object("", p.data, `write the whole file as one object: {"mcpServers": {}}`)
	if err != nil {
		return nil, err
	}
	c := &Config{}
	var servers []entry
	for _, e := range top {
		switch e.key {
		case "$schema":
		case "mcpServers":
			if servers, err = p.object("mcpServers", e.raw, `use an object of servers by name, e.g. {"memory": {"command": "npx"}}`); err != nil {
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
			c.Disabled = append(c.Disabled, e.key)
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
	fields, err := p.object(key, raw, `use an object such as {"command": "npx", "args": ["-y", "pkg"]}`)
	if err != nil {
		return s, false, err
	}
	s.Name = name
	var typ, transportType string
	var timeoutKey string // the first of "timeoutMs" and "timeout" given
	// envNames and headerNames keep file order, so that of several bad
	// values the first one written is the one reported.
	var envNames, headerNames []string
	for _, f := range fields {
		k := join(key, f.key)
		switch f.key {
		case "type":
			typ, err = p.str(k, f.raw, `use "stdio", "http" (Streamable HTTP) or "sse"`, true)
		case "command":
			s.Command, err = p.str(k, f.raw, `use a string such as "npx"`, true)
		case "args":
			s.Args, err = p.strs(k, f.raw, `use an array of strings, e.g. ["-y", "@modelcontextprotocol/server-memory"]`, "")
		case "env":
			s.Env, envNames, err = p.strMap(k, f.raw, `use an object such as {"API_KEY": "${API_KEY}"}`, p.envName)
		case "inheritEnv":
			s.InheritEnv, err = p.inheritEnv(k, f.raw)
		case "cwd":
			s.Cwd, err = p.str(k, f.raw, "use a directory path as a string", true)
		case "url":
			s.URL, err = p.str(k, f.raw, `use a URL string such as "http://localhost:3001/mcp"`, true)
		case "headers":
			s.Headers, headerNames, err = p.strMap(k, f.raw, `use an object such as {"Authorization": "Bearer ${TOKEN}"}`, p.headerName)
		case "timeoutMs", "timeout":
			if timeoutKey != "" {
				return s, false, p.errf(k, `keep only one of "timeoutMs" (milliseconds) and "timeout" (seconds, as Cline and Roo Code write it)`, "the call timeout is already set by %q", timeoutKey)
			}
			timeoutKey = f.key
			if f.key == "timeoutMs" {
				var ms int64
				if ms, err = p.whole(k, f.raw, "milliseconds", maxMillis); err == nil {
					s.CallTimeout = time.Duration(ms) * time.Millisecond
				}
			} else {
				var sec int64
				if sec, err = p.whole(k, f.raw, "seconds", maxMillis/1000); err == nil {
					s.CallTimeout = time.Duration(sec) * time.Second
				}
			}
		case "disabled":
			skip, err = p.boolean(k, f.raw)
		case "allowTools":
			if s.AllowTools, err = p.patterns(k, f.raw); err == nil && len(s.AllowTools) == 0 {
				err = p.errf(k, `remove the key to allow every tool, list the tools to allow (e.g. ["read_*"]), or set "disabled": true to turn the server off`, "is empty: no tool of this server would exist")
			}
		case "denyTools", "disabledTools":
			var list []string
			list, err = p.patterns(k, f.raw)
			s.DenyTools = append(s.DenyTools, list...)
		case "autoApprove", "alwaysAllow":
			var list []string
			list, err = p.patterns(k, f.raw)
			s.AutoApprove = append(s.AutoApprove, list...)
		case "approval":
			s.Approval, err = p.approval(k, f.raw)
		case "transportType":
			transportType, err = p.str(k, f.raw, `use "stdio", "sse" or "http", or write it as "type"`, true)
		case "watchPaths":
			_, err = p.strs(k, f.raw, `use an array of paths`, "use a path as a string")
		case "codeMode":
			s.CodeMode, err = p.codeMode(k, f.raw)
		default:
			return s, false, p.unknownKey(key, f.key, serverKeys, serverAliases...)
		}
		if err != nil {
			return s, false, err
		}
	}
	if skip {
		return s, true, nil
	}
	if transportType != "" {
		// Cline's legacy spelling of "type".
		if typ != "" && typ != transportType && !(sameHTTP(typ) && sameHTTP(transportType)) {
			return s, false, p.errf(key+".transportType", `keep only "type"`, `says %q but "type" says %q`, transportType, typ)
		}
		if typ == "" {
			typ = transportType
		}
	}
	switch {
	case typ == "" && s.Command != "" && s.URL != "":
		return s, false, p.errf(key, `keep "command" for a local server or "url" for a remote one`, `has both "command" and "url"`)
	case typ == "stdio" || typ == "" && s.Command != "":
		s.Transport = Stdio
	case sameHTTP(typ) || typ == "" && s.URL != "":
		s.Transport = Streamable
	case typ == "sse":
		s.Transport = SSE
	case typ == "":
		return s, false, p.errf(key, `add "command" (and "args") to run a local server, or "url" to reach a remote one`, `needs "command" or "url"`)
	default:
		return s, false, p.errf(key+".type", `use "stdio", "http" (Streamable HTTP) or "sse"`, "unknown transport type %q", typ)
	}
	var unresolved []string
	exp := func(k string, v *string) error {
		out, missing, values, bad := expand(*v, p.lookup)
		if bad != nil {
			return p.errf(k, bad.fix, "%s", bad.problem)
		}
		*v = out
		unresolved = append(unresolved, missing...)
		s.Secrets = append(s.Secrets, values...)
		return nil
	}
	if s.Transport == Stdio {
		if s.Command == "" {
			return s, false, p.errf(key, `add "command": the program to run, e.g. "npx"`, `a stdio server needs "command"`)
		}
		// The command is run as written (the README lists where ${VAR} is
		// expanded, and "command" is not among them), so a ${VAR} in it
		// would name a program that does not exist. The package has no
		// warning channel, and such a server could never start: an error
		// here beats "not found" at start-up.
		if strings.Contains(s.Command, "${") {
			return s, false, p.errf(key+".command",
				`keep "command" a program name or path and move the ${VAR} part into "args" (e.g. "command": "node", "args": ["${APP_DIR}/server.js"]), or start it through a wrapper ("command": "sh", "args": ["-c", "exec \"$APP_DIR/server\""])`,
				`${VAR} is not expanded in "command"`)
		}
		if s.URL != "" || len(s.Headers) > 0 {
			return s, false, p.errf(key, `remove "url" and "headers", or set "type" to "http"`, `a stdio server cannot have "url" or "headers"`)
		}
		for i := range s.Args {
			if err := exp(fmt.Sprintf("%s.args[%d]", key, i), &s.Args[i]); err != nil {
				return s, false, err
			}
		}
		for _, k := range envNames {
			v := s.Env[k]
			if err := exp(key+".env."+k, &v); err != nil {
				return s, false, err
			}
			s.Env[k] = v
			if secretName(k) {
				s.Secrets = append(s.Secrets, v)
			}
			s.Secrets = append(s.Secrets, valueSecrets(v)...)
		}
		s.Secrets = append(s.Secrets, argSecrets(s.Args)...)
		if err := exp(key+".cwd", &s.Cwd); err != nil {
			return s, false, err
		}
	} else {
		if s.URL == "" {
			return s, false, p.errf(key, `add "url", e.g. "http://localhost:3001/mcp"`, `a %s server needs "url"`, s.Transport)
		}
		if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "" || len(s.InheritEnv) > 0 {
			return s, false, p.errf(key, `remove "command", "args", "env", "inheritEnv" and "cwd", or drop "type"/"url" to run it locally`, `a remote server cannot have "command", "args", "env", "inheritEnv" or "cwd"`)
		}
		if err := exp(key+".url", &s.URL); err != nil {
			return s, false, err
		}
		for _, k := range headerNames {
			v := s.Headers[k]
			if err := exp(key+".headers."+k, &v); err != nil {
				return s, false, err
			}
			s.Headers[k] = v
			s.Secrets = append(s.Secrets, v)
			if scheme, cred, ok := strings.Cut(v, " "); ok && len(scheme) < 10 {
				s.Secrets = append(s.Secrets, cred) // "Bearer <token>": the token alone too
			}
		}
		if len(unresolved) == 0 {
			u, err := url.Parse(s.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return s, false, p.errf(key+".url", `use an absolute http:// or https:// URL`, "%q is not an http(s) URL", s.URL)
			}
			s.Secrets = append(s.Secrets, urlSecrets(s.URL, u)...)
		}
	}
	sort.Strings(unresolved)
	s.Unresolved = dedupe(unresolved)
	s.Secrets = secrets(s.Secrets)
	return s, false, nil
}

// sameHTTP reports whether typ names the Streamable HTTP transport.
func sameHTTP(typ string) bool {
	return typ == "http" || typ == "streamable-http" || typ == "streamableHttp"
}

// envName refuses names that would corrupt the child's environment: an
// empty name or one with "=" makes an entry the child reads differently
// ("A=B=1" is A set to "B=1").
func (p *parser) envName(key, name string) error {
	if strings.Contains(name, "${") {
		return p.errf(key, `write the name itself; only values are expanded, e.g. "API_KEY": "${API_KEY}"`, "${VAR} is not expanded in env names")
	}
	if name == "" || strings.ContainsAny(name, "=\x00") {
		return p.errf(key, `use a name without "=", such as "API_KEY"`, "%q is not a valid environment variable name", name)
	}
	return nil
}

// inheritEnv reads "inheritEnv": true (the whole environment, written
// ["*"]), false (the default list only, nil), or a list of variable names,
// each a name or a prefix ending in "*".
func (p *parser) inheritEnv(key string, raw json.RawMessage) ([]string, error) {
	const fix = `use true (the whole environment), or a list of variable names such as ["NODE_OPTIONS", "AWS_PROFILE", "NPM_CONFIG_*"]`
	var b bool
	if !isNull(raw) && json.Unmarshal(raw, &b) == nil {
		if b {
			return []string{"*"}, nil
		}
		return nil, nil
	}
	if describe(raw) != "an array" {
		return nil, p.typeError(key, raw, "true, false or an array of variable names", fix, true)
	}
	names, err := p.strs(key, raw, fix, `use a variable name such as "NODE_OPTIONS"`)
	if err != nil {
		return nil, err
	}
	for i, n := range names {
		k := fmt.Sprintf("%s[%d]", key, i)
		if n == "" || strings.ContainsAny(n, "=\x00") || strings.Contains(strings.TrimSuffix(n, "*"), "*") {
			return nil, p.errf(k, `use a variable name such as "NODE_OPTIONS", or a prefix ending in "*" such as "NPM_CONFIG_*"`, "%q is not a variable name or prefix", n)
		}
	}
	return names, nil
}

// headerName refuses what net/http would refuse at the first request (RFC
// 9110 token characters), so the mistake is reported with its key.
func (p *parser) headerName(key, name string) error {
	if strings.Contains(name, "${") {
		return p.errf(key, `write the name itself; only values are expanded, e.g. "Authorization": "Bearer ${TOKEN}"`, "${VAR} is not expanded in header names")
	}
	ok := name != ""
	for i := 0; i < len(name) && ok; i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
	}
	if !ok {
		return p.errf(key, `use a name such as "Authorization" or "X-Api-Key": letters, digits and "-", without ":" or spaces`, "%q is not a valid header name", name)
	}
	return nil
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

// The helpers below read one typed value. Each reports a wrong type as
// "must be <wanted>, got <found>" at the innermost key, the element
// ("args[0]") or value ("env.K") itself, so that the message never names a
// container and the type it already has. field says raw is a key's value, so
// removing the key is a fix for null; elements of arrays and objects have no
// such way out.

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

func (p *parser) typeError(key string, raw json.RawMessage, want, fix string, field bool) *Error {
	if field && isNull(raw) {
		fix += ", or remove the key"
	}
	return p.errf(key, fix, "must be %s, got %s", want, describe(raw))
}

// str reads a string. fix "" marks free text (an argument, an env or header
// value): there a number or boolean is a missing pair of quotes, so the fix
// shows the value quoted; elsewhere the caller's fix says what is allowed.
func (p *parser) str(key string, raw json.RawMessage, fix string, field bool) (string, error) {
	var s string
	if !isNull(raw) && json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	if fix == "" {
		fix = "use a string"
		if d := describe(raw); d == "a number" || d == "a boolean" {
			fix = "use a string: " + strconv.Quote(string(bytes.TrimSpace(raw)))
		}
	}
	return "", p.typeError(key, raw, "a string", fix, field)
}

// strs reads an array of strings; elemFix is the fix for a bad element, ""
// for free text (see str).
func (p *parser) strs(key string, raw json.RawMessage, fix, elemFix string) ([]string, error) {
	var elems []json.RawMessage
	if isNull(raw) || json.Unmarshal(raw, &elems) != nil {
		if describe(raw) == "a string" {
			// "args": "--flag" means a one-element array.
			fix = "use an array of strings: [" + string(bytes.TrimSpace(raw)) + "]"
		}
		return nil, p.typeError(key, raw, "an array of strings", fix, true)
	}
	out := make([]string, len(elems))
	for i, e := range elems {
		s, err := p.str(fmt.Sprintf("%s[%d]", key, i), e, elemFix, false)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// strMap reads an object of string values, checking each name with
// checkName. It returns the names in file order too.
func (p *parser) strMap(key string, raw json.RawMessage, fix string, checkName func(key, name string) error) (map[string]string, []string, error) {
	entries, err := p.object(key, raw, fix)
	if err != nil {
		return nil, nil, err
	}
	m := make(map[string]string, len(entries))
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		k := join(key, e.key)
		if err := checkName(k, e.key); err != nil {
			return nil, nil, err
		}
		v, err := p.str(k, e.raw, "", false)
		if err != nil {
			return nil, nil, err
		}
		m[e.key] = v
		names = append(names, e.key)
	}
	return m, names, nil
}

func (p *parser) boolean(key string, raw json.RawMessage) (bool, error) {
	var b bool
	if !isNull(raw) && json.Unmarshal(raw, &b) == nil {
		return b, nil
	}
	fix := "use true or false"
	var s string
	if json.Unmarshal(raw, &s) == nil && (s == "true" || s == "false") {
		fix = "write it without quotes: " + s
	}
	return false, p.typeError(key, raw, "true or false", fix, true)
}

// codeMode reads a server's "codeMode": true, false or "both".
func (p *parser) codeMode(key string, raw json.RawMessage) (CodeMode, error) {
	var b bool
	if !isNull(raw) && json.Unmarshal(raw, &b) == nil {
		if b {
			return CodeModeOn, nil
		}
		return CodeModeOff, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s == "both" {
		return CodeModeBoth, nil
	}
	return CodeModeOn, p.typeError(key, raw, `true, false or "both"`, `use true (tools in the sandbox, the default), false (served directly as MCP tools) or "both"`, true)
}

// maxMillis is the largest millisecond count a time.Duration holds; a larger
// one would wrap around to a negative timeout.
const maxMillis = math.MaxInt64 / int64(time.Millisecond)

// whole reads a positive whole number no larger than max. unit, if any,
// names what it counts ("milliseconds"). Exponent notation is
// accepted when the value is whole (2e3 is 2000): JSON does not distinguish
// integers, and generated files write them either way.
func (p *parser) whole(key string, raw json.RawMessage, unit string, max int64) (int64, error) {
	want, of := "a positive whole number", ""
	if unit != "" {
		of = " " + unit
		want += " of " + unit
	}
	lit := string(bytes.TrimSpace(raw))
	if describe(raw) != "a number" {
		fix := "use " + want
		// "1000" in quotes: suggest the number itself, but only if it is a
		// JSON number (ParseFloat would also take "NaN" or "Inf").
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if t := strings.TrimSpace(s); json.Valid([]byte(t)) && describe([]byte(t)) == "a number" {
				fix = "write it without quotes: " + t
			}
		}
		return 0, p.typeError(key, raw, want, fix, true)
	}
	// The JSON is valid, so lit parses; a magnitude beyond float64 comes
	// back as ±Inf with ErrRange, which the checks below treat as too large.
	f, _ := strconv.ParseFloat(lit, 64)
	if f <= 0 {
		return 0, p.errf(key, "use "+want+", or remove the key for the default", "must be positive, got %s", lit)
	}
	if f != math.Trunc(f) {
		return 0, p.errf(key, fmt.Sprintf("use a whole number, e.g. %.0f", math.Ceil(f)), "must be %s, got %s", want, lit)
	}
	n, err := strconv.ParseInt(lit, 10, 64)
	if err != nil { // exponent notation, or beyond int64
		if f >= math.MaxInt64 {
			return 0, p.errf(key, fmt.Sprintf("use at most %d%s", max, of), "is too large: got %s", lit)
		}
		n = int64(f)
	}
	if n > max {
		return 0, p.errf(key, fmt.Sprintf("use at most %d%s", max, of), "is too large: got %s", lit)
	}
	return n, nil
}

func (p *parser) gateway(c *Config, raw json.RawMessage) error {
	fields, err := p.object("codemode", raw, `use an object such as {"surfaces": ["run"]}`)
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
			if ms, err = p.whole(k, f.raw, "milliseconds", maxMillis); err == nil {
				c.CallTimeout = time.Duration(ms) * time.Millisecond
			}
		case "surfaces":
			c.Serve.Surfaces, err = p.surfaces(k, f.raw)
		case "runToolName":
			if c.Serve.RunToolName, err = p.str(k, f.raw, `use a tool name such as "codemode_run"`, true); err == nil && !validToolName(c.Serve.RunToolName) {
				err = p.errf(k, "use 1 to 64 characters from letters, digits, '_', '-' and '.'", "%q is not a valid tool name", c.Serve.RunToolName)
			}
		case "bindingLevel":
			if c.Serve.BindingLevel, err = p.str(k, f.raw, `use "server" or "tool"`, true); err == nil && c.Serve.BindingLevel != "server" && c.Serve.BindingLevel != "tool" {
				err = p.errf(k, `use "server" (one file per server) or "tool" (one file per tool)`, "unknown binding level %q", c.Serve.BindingLevel)
			}
		case "typesBudgetTokens":
			c.Serve.TypesBudgetTokens, err = p.tokens(k, f.raw)
		case "indexBudgetTokens":
			c.Serve.IndexBudgetTokens, err = p.tokens(k, f.raw)
		case "approval":
			c.Approval, err = p.approval(k, f.raw)
		case "recordDir":
			if c.Serve.RecordDir, err = p.str(k, f.raw, `use a directory path, e.g. "replays"`, true); err == nil {
				if c.Serve.RecordDir == "" {
					err = p.errf(k, `use a directory path, e.g. "replays", or leave the key out`, "is empty")
				} else if !filepath.IsAbs(c.Serve.RecordDir) && p.file != "" {
					c.Serve.RecordDir = filepath.Join(filepath.Dir(p.file), c.Serve.RecordDir)
				}
			}
		case "resultTTLMs":
			var ms int64
			if ms, err = p.whole(k, f.raw, "milliseconds", maxMillis); err == nil {
				c.Serve.ResultTTL = time.Duration(ms) * time.Millisecond
			}
		case "resultQuotaBytes":
			c.Serve.ResultQuotaBytes, err = p.whole(k, f.raw, "bytes", math.MaxInt64)
		case "builtins":
			c.Builtins, err = p.builtins(k, f.raw)
		case "store":
			err = p.storeLimits(k, f.raw, &c.Store)
		case "clients":
			c.Clients, err = p.clients(k, f.raw)
		case "maxConcurrentRuns":
			c.Admission.MaxConcurrentRuns, err = p.count(k, f.raw)
		case "maxConcurrentRunsPerSession":
			c.Admission.MaxConcurrentRunsPerSession, err = p.count(k, f.raw)
		case "maxQueuedRuns":
			c.Admission.MaxQueuedRuns, err = p.count(k, f.raw)
		case "memoryBudgetBytes":
			c.Admission.MemoryBudgetBytes, err = p.whole(k, f.raw, "bytes", math.MaxInt64)
		case "history":
			err = p.history(k, f.raw, &c.History)
		default:
			return p.unknownKey("codemode", f.key, gatewayKey)
		}
		if err != nil {
			return err
		}
	}
	if err := p.withinBudget(c); err != nil {
		return err
	}
	if err := p.defaultsWithinMax(c); err != nil {
		return err
	}
	if err := p.runToolNameFree(c); err != nil {
		return err
	}
	// The thoughtbox surface's tb is the thoughtbox built-in.
	if slices.Contains(c.Serve.Surfaces, "thoughtbox") && c.Builtins != nil && !slices.Contains(c.Builtins, "thoughtbox") {
		return p.errf("codemode.builtins", `add "thoughtbox" to codemode.builtins, or remove the "thoughtbox" surface`, "the thoughtbox surface needs the thoughtbox built-in server, which codemode.builtins leaves out")
	}
	return nil
}

// withinBudget refuses a memory limit the file sets above the memory
// budget: a run with that limit could never be admitted.
func (p *parser) withinBudget(c *Config) error {
	budget, budgetKey := c.Admission.MemoryBudgetBytes, "codemode.memoryBudgetBytes"
	if budget == 0 {
		budget, budgetKey = admit.Defaults.MemoryBytes, "the default memory budget"
	}
	for _, l := range []struct {
		key string
		v   int64
	}{{"codemode.maxLimits.maxMemoryBytes", c.MaxLimits.MaxMemoryBytes}, {"codemode.defaultLimits.maxMemoryBytes", c.DefaultLimits.MaxMemoryBytes}} {
		if l.v > budget {
			return p.errf(l.key, fmt.Sprintf("use at most %d, or raise codemode.memoryBudgetBytes", budget),
				"is %d, more than %s (%d bytes): a run with that limit could never start", l.v, budgetKey, budget)
		}
	}
	return nil
}

// defaultsWithinMax refuses a default limit the file sets above its
// maximum (the file's maxLimits, else the built-in one): it would be
// lowered to the maximum without a word, and a user who wrote a default of
// ten minutes would get five.
func (p *parser) defaultsWithinMax(c *Config) error {
	for _, l := range []struct {
		key          string
		def, max, bi int64
	}{
		{"timeoutMs", c.DefaultLimits.TimeoutMs, c.MaxLimits.TimeoutMs, BuiltinMaxLimits.TimeoutMs},
		{"maxMemoryBytes", c.DefaultLimits.MaxMemoryBytes, c.MaxLimits.MaxMemoryBytes, BuiltinMaxLimits.MaxMemoryBytes},
		{"maxLogBytes", c.DefaultLimits.MaxLogBytes, c.MaxLimits.MaxLogBytes, BuiltinMaxLimits.MaxLogBytes},
		{"maxToolCalls", c.DefaultLimits.MaxToolCalls, c.MaxLimits.MaxToolCalls, BuiltinMaxLimits.MaxToolCalls},
		{"maxResultBytes", c.DefaultLimits.MaxResultBytes, c.MaxLimits.MaxResultBytes, BuiltinMaxLimits.MaxResultBytes},
	} {
		max, whose := l.max, "codemode.maxLimits."+l.key
		if max == 0 {
			max, whose = l.bi, "the built-in maximum"
		}
		if l.def > max {
			return p.errf("codemode.defaultLimits."+l.key, fmt.Sprintf("lower it to at most %d, or set codemode.maxLimits.%s to at least %d", max, l.key, l.def),
				"is %d, more than %s (%d): every run would get the maximum instead", l.def, whose, max)
		}
	}
	return nil
}

// count reads a positive whole number of things (runs).
func (p *parser) count(key string, raw json.RawMessage) (int, error) {
	n, err := p.whole(key, raw, "", math.MaxInt32)
	return int(n), err
}

// surfaces reads codemode.surfaces. A surface listed twice is refused like a
// key written twice: it says nothing more, and usually one of the two was
// meant to be another surface.
func (p *parser) surfaces(key string, raw json.RawMessage) ([]string, error) {
	use := "use any of " + quoteList(KnownSurfaces)
	list, err := p.strs(key, raw, `use an array such as ["run", "files"]`, use)
	if err != nil {
		return nil, err
	}
	for i, s := range list {
		k := fmt.Sprintf("%s[%d]", key, i)
		if !allowed(KnownSurfaces, s) {
			return nil, p.errf(k, use, "unknown surface %q", s)
		}
		if slices.Index(list, s) < i {
			return nil, p.errf(k, "keep only one of them", "surface %q is listed twice", s)
		}
	}
	return list, nil
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

func (p *parser) tokens(key string, raw json.RawMessage) (int, error) {
	n, err := p.whole(key, raw, "tokens", math.MaxInt32)
	return int(n), err
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
	fields, err := p.object(key, raw, `use an object such as {"timeoutMs": 30000, "maxToolCalls": 100}`)
	if err != nil {
		return err
	}
	for _, f := range fields {
		k := join(key, f.key)
		if !allowed(limitKeys, f.key) {
			return p.unknownKey(key, f.key, limitKeys)
		}
		unit, max := "bytes", int64(math.MaxInt64)
		switch f.key {
		case "timeoutMs":
			// A run turns it into a time.Duration.
			unit, max = "milliseconds", maxMillis
		case "maxToolCalls":
			unit = ""
		}
		v, err := p.whole(k, f.raw, unit, max)
		if err != nil {
			return err
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

// refError is a malformed ${...} reference; the caller adds the key.
type refError struct{ problem, fix string }

// literalFix is how to keep a `${` as written: there is no other way to
// pass one through, since every `${` starts a reference.
const literalFix = `, or write "$${" for a literal "${"`

// expand replaces ${VAR} and ${VAR:-default} in s, and `$${` with a literal
// `${`, so that a server taking ${...} templates of its own can still be
// given one. The escape is Docker Compose's `$$` narrowed to `$${`: a `$$`
// elsewhere (a shell's PID) stays as written. A `$` not followed by `{` is
// left alone, so regular expressions and shell snippets in args ("$HOME",
// "$$", "a$") survive. A `${` that does not form a reference (no closing `}`, no name,
// or another `${` inside) is an error rather than text passed through: it is
// almost always a typo that would otherwise reach the server unexpanded.
// It returns the names of variables that were unset and had no default, and
// the values it substituted from the environment.
func expand(s string, lookup LookupEnv) (out string, missing, values []string, bad *refError) {
	if !strings.Contains(s, "${") {
		return s, nil, nil, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			break
		}
		if i > 0 && s[i-1] == '$' {
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		rest := s[i+2:]
		j := strings.IndexByte(rest, '}')
		if j < 0 {
			name := rest[:len(rest)-len(strings.TrimLeftFunc(rest, isNameRune))]
			if name == "" {
				name = "NAME"
			}
			return "", nil, nil, &refError{
				problem: fmt.Sprintf(`%q has a "${" with no closing "}"`, clip(s[i:])),
				fix:     fmt.Sprintf(`close it: "${%s}"`, name) + literalFix,
			}
		}
		ref := rest[:j]
		if strings.Contains(ref, "${") {
			return "", nil, nil, &refError{
				problem: fmt.Sprintf(`%q has a "${" inside another; references do not nest`, clip(s[i:i+2+j+1])),
				fix:     `close the first reference before the second, and give a default as plain text: "${VAR:-value}"` + literalFix,
			}
		}
		name, def, hasDef := strings.Cut(ref, ":-")
		if name == "" {
			return "", nil, nil, &refError{
				problem: fmt.Sprintf(`%q names no variable`, clip(s[i:i+2+j+1])),
				fix:     `put the variable's name inside: "${NAME}"` + literalFix,
			}
		}
		if v, ok := lookup(name); ok && (v != "" || !hasDef) {
			b.WriteString(v)
			values = append(values, v)
		} else if hasDef {
			b.WriteString(def)
		} else {
			missing = append(missing, name)
		}
		s = rest[j+1:]
	}
	return b.String(), missing, values, nil
}

func isNameRune(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// clip shortens a quoted fragment of a value to what locates the mistake:
// the rest of a header value may be a credential.
func clip(s string) string {
	if c := diag.Cut(s, 40); len(c) < len(s) {
		return c + "…"
	}
	return s
}

// builtins reads codemode.builtins: which built-in servers to serve.
func (p *parser) builtins(key string, raw json.RawMessage) ([]string, error) {
	use := "use any of " + quoteList(KnownBuiltins)
	list, err := p.strs(key, raw, `use an array such as ["thoughtbox", "store"], or [] for none`, use)
	if err != nil {
		return nil, err
	}
	for i, b := range list {
		k := fmt.Sprintf("%s[%d]", key, i)
		if !allowed(KnownBuiltins, b) {
			return nil, p.errf(k, use, "unknown built-in server %q", b)
		}
		if slices.Index(list, b) < i {
			return nil, p.errf(k, "keep only one of them", "built-in %q is listed twice", b)
		}
	}
	if list == nil {
		list = []string{}
	}
	return list, nil
}

func (p *parser) storeLimits(key string, raw json.RawMessage, dst *StoreLimits) error {
	fields, err := p.object(key, raw, `use an object such as {"maxValueBytes": 1048576, "maxNamespaceBytes": 67108864}`)
	if err != nil {
		return err
	}
	for _, f := range fields {
		k := join(key, f.key)
		var v int64
		switch f.key {
		case "maxValueBytes":
			v, err = p.whole(k, f.raw, "bytes", math.MaxInt64)
			dst.MaxValueBytes = v
		case "maxNamespaceBytes":
			v, err = p.whole(k, f.raw, "bytes", math.MaxInt64)
			dst.MaxNamespaceBytes = v
		default:
			return p.unknownKey(key, f.key, storeKeys)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// history reads codemode.history.
func (p *parser) history(key string, raw json.RawMessage, dst *History) error {
	fields, err := p.object(key, raw, `use an object such as {"payloads": false, "maxAgeDays": 30, "maxBytes": 268435456}`)
	if err != nil {
		return err
	}
	for _, f := range fields {
		k := join(key, f.key)
		switch f.key {
		case "enabled":
			var on bool
			on, err = p.boolean(k, f.raw)
			dst.Disabled = !on
		case "payloads":
			dst.Payloads, err = p.boolean(k, f.raw)
		case "maxAgeDays":
			var d int64
			d, err = p.whole(k, f.raw, "days", math.MaxInt64/int64(24*time.Hour))
			dst.MaxAge = time.Duration(d) * 24 * time.Hour
		case "maxBytes":
			dst.MaxBytes, err = p.whole(k, f.raw, "bytes", math.MaxInt64)
		default:
			return p.unknownKey(key, f.key, historyKey)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// clients reads codemode.clients: {"<name>": {"token": "${VAR}", "namespace"?: "..."}}.
func (p *parser) clients(key string, raw json.RawMessage) ([]Client, error) {
	entries, err := p.object(key, raw, `use an object of clients by name, e.g. {"ci": {"token": "${CI_TOKEN}"}}`)
	if err != nil {
		return nil, err
	}
	var out []Client
	tokens := map[string]string{}
	for _, e := range entries {
		ck := join(key, e.key)
		if !validClientName(e.key) {
			return nil, p.errf(ck, "use 1 to 64 letters, digits, '_', '-' or '.'", "%q is not a valid client name", e.key)
		}
		if e.key == DefaultClient {
			return nil, p.errf(ck, "choose another name", `"default" is the identity of calls made without a named token`)
		}
		fields, err := p.object(ck, e.raw, `use an object such as {"token": "${CI_TOKEN}"}`)
		if err != nil {
			return nil, err
		}
		c := Client{Name: e.key}
		hasToken := false
		for _, f := range fields {
			fk := join(ck, f.key)
			switch f.key {
			case "token":
				hasToken = true
				var v string
				if v, err = p.str(fk, f.raw, `use a string, best taken from the environment: "${CI_TOKEN}"`, true); err != nil {
					return nil, err
				}
				tok, missing, _, bad := expand(v, p.lookup)
				if bad != nil {
					return nil, p.errf(fk, bad.fix, "%s", bad.problem)
				}
				if len(missing) > 0 {
					sort.Strings(missing)
					c.Unresolved = dedupe(missing)
				} else if len(tok) < 16 {
					return nil, p.errf(fk, "use a random token of at least 16 characters, e.g. from `openssl rand -hex 16`", "the token is shorter than 16 characters")
				} else {
					c.Token = tok
				}
			case "namespace":
				if c.Namespace, err = p.str(fk, f.raw, `use a name such as "team"`, true); err != nil {
					return nil, err
				}
				if !validClientName(c.Namespace) {
					return nil, p.errf(fk, "use 1 to 64 letters, digits, '_', '-' or '.'", "%q is not a valid namespace", c.Namespace)
				}
			default:
				return nil, p.unknownKey(ck, f.key, clientKeys)
			}
		}
		if !hasToken {
			return nil, p.errf(ck, `add "token": "${SOME_VAR}"`, "a client needs a token")
		}
		if c.Namespace == "" {
			c.Namespace = c.Name
		}
		if c.Token != "" {
			if other, dup := tokens[c.Token]; dup {
				return nil, p.errf(ck+".token", "give each client its own token", "clients %q and %q have the same token", other, c.Name)
			}
			tokens[c.Token] = c.Name
		}
		out = append(out, c)
	}
	return out, nil
}

func validClientName(s string) bool {
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
