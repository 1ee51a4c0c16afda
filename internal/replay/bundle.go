package replay

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/sandbox"
	"github.com/codemode-mcp/codemode/internal/transpile"
)

// A replay bundle is one run, recorded so that it can run again offline:
// its code and how it was shaped, its limits, its deterministic seed and
// start time, the source of every module it imported and every host
// operation it made (tool calls, discovery, a surface's own operations),
// in order, with what the host answered. The run itself was
// deterministic (see sandbox.Deterministic), so given the same answers it
// does the same things: Replay runs it again with no upstream server and
// reports whether it reproduced the same result, logs and calls, or where
// it diverged.
//
// Secrets configured for the upstream servers are redacted in a bundle as
// in responses: answers, inputs, module sources and outcome. A run whose
// behaviour depends on a redacted value replays with "[REDACTED]" in its
// place, and may diverge there.

// BundleFormat identifies the bundle format and its version.
const BundleFormat = "codemode-replay-bundle/1"

// Bundle is a recorded run. Encode it with Marshal (or encoding/json).
type Bundle struct {
	Format string `json:"format"`
	// Code is the script as it ran: its client's, or what the normaliser
	// made of it for the surface (package normalize); Transpile how it was
	// shaped (language, and the wrapper of the surface that ran it).
	Code      string        `json:"code"`
	Transpile BundleShape   `json:"transpile"`
	Prelude   []string      `json:"prelude,omitempty"`
	Limits    config.Limits `json:"limits"`
	// Seed and Now make the run deterministic: Math.random's seed, and the
	// time Date read when the run started.
	Seed uint32    `json:"seed"`
	Now  time.Time `json:"now"`
	// Modules are the sources of the modules the run imported.
	Modules []BundleModule `json:"modules"`
	// Calls are the host operations, in the order the script made them.
	Calls []BundleCall `json:"calls"`
	// Outcome is what the sandbox reported (before the run layer's
	// additions), which a replay must reproduce.
	Outcome Outcome `json:"outcome"`
	// Response is the run's response as its client got it.
	Response *run.Response `json:"response,omitempty"`
	// Live: the run was recorded as it ran, not made deterministic (see
	// Recorder.Live); its logs' times are real, so a replay compares the
	// logs without them.
	Live bool `json:"live,omitempty"`
}

// BundleShape is how the code was transpiled (transpile.Options).
type BundleShape struct {
	Lang   string `json:"lang,omitempty"`
	Prefix string `json:"prefix,omitempty"`
	Suffix string `json:"suffix,omitempty"`
}

// BundleModule is one imported module: its source, or why it failed.
type BundleModule struct {
	Specifier string      `json:"specifier"`
	Source    string      `json:"source,omitempty"`
	Error     *diag.Error `json:"error,omitempty"`
}

// BundleCall is one host operation: "tool\x00<server>\x00<tool>" for a tool
// call, "discovery.listTools" and the like otherwise; its input (absent
// when the script passed none), and its result or error.
type BundleCall struct {
	Op     string          `json:"op"`
	Input  json.RawMessage `json:"input,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *BundleError    `json:"error,omitempty"`
}

// BundleError is a failed operation, as the script saw it.
type BundleError struct {
	Class   diag.Class     `json:"class"`
	Message string         `json:"message"`
	Hint    string         `json:"hint,omitempty"`
	Fields  map[string]any `json:"fields,omitempty"`
}

// Outcome is what a run produced, as the sandbox reports it.
type Outcome struct {
	Result      json.RawMessage    `json:"result"`
	Logs        []sandbox.LogEntry `json:"logs"`
	Diagnostics []diag.Diagnostic  `json:"diagnostics"`
}

// Recorder records the runs of a run.Runner (see run.Options.Record): each
// run becomes deterministic (seeded from the system's randomness, starting
// at the current time; timers still wait their real delay, as live servers
// are called) and, once over, its Bundle goes to Write.
type Recorder struct {
	// Write receives each bundle; an error is logged by the caller of
	// Record's done, not returned (a run never fails for its recording).
	Write func(*Bundle) error
	// OnError, if set, is told when Write fails.
	OnError func(error)
	// Live records a run as it runs, without making it deterministic
	// (Math.random, Date and timers stay real): its bundle has seed 0 and
	// the run's start time, and replays exactly when the script did not
	// depend on them. The run history records bundles this way.
	Live bool
}

// Releasing wraps the caller of a recorded runner: in a deterministic run
// the calls of a Promise.all start one after the other, in the script's
// order; this one lets the next call start as soon as its own has been
// numbered, so that they still reach the upstream servers concurrently.
func Releasing(c run.Caller) run.Caller { return releasing{c} }

type releasing struct{ run.Caller }

func (r releasing) CallTool(ctx context.Context, serverID, tool string, args any) (*mcp.CallToolResult, error) {
	sandbox.Release(ctx)
	return r.Caller.CallTool(ctx, serverID, tool, args)
}

// Record is the run.Options.Record hook.
func (rc *Recorder) Record(info *run.Recording) func(*sandbox.Result, *run.Response) {
	o := info.Sandbox
	var seed [4]byte
	rand.Read(seed[:])
	det := &sandbox.Deterministic{Seed: binary.LittleEndian.Uint32(seed[:]), Now: time.Now().UTC().Truncate(time.Millisecond), WaitTimers: true}
	switch {
	case o.Deterministic != nil:
		det = o.Deterministic // the run is deterministic already: keep its clock
	case rc.Live:
		det = &sandbox.Deterministic{Now: det.Now} // what a replay will use; the run stays live
	default:
		o.Deterministic = det
	}
	redact := o.Redact.String // a nil Redactor redacts nothing
	// The code as it was transpiled: the normaliser's shape of the
	// client's code (package normalize), in the surface's wrapper.
	b := &Bundle{Format: BundleFormat, Code: info.Code, Prelude: info.Extra.Prelude, Limits: info.Limits,
		Seed: det.Seed, Now: det.Now, Modules: []BundleModule{}, Calls: []BundleCall{}, Live: rc.Live && o.Deterministic == nil}
	if t := info.Transpile; t != nil {
		b.Transpile = BundleShape{Lang: t.Lang, Prefix: t.Prefix, Suffix: t.Suffix}
	}
	var mu sync.Mutex
	if resolve := o.Resolve; resolve != nil {
		o.Resolve = func(ctx context.Context, spec string) (string, error) {
			src, err := resolve(ctx, spec)
			m := BundleModule{Specifier: spec, Source: redact(src)}
			if err != nil {
				e := *sandbox.AsError(err)
				e.Message, e.Hint, e.Fields = redact(e.Message), redact(e.Hint), redactFields(redact, e.Fields)
				m.Error, m.Source = &e, ""
			}
			mu.Lock()
			b.Modules = append(b.Modules, m)
			mu.Unlock()
			return src, err
		}
	}
	if handle := o.Handle; handle != nil {
		o.Handle = func(ctx context.Context, op string, payload json.RawMessage) (json.RawMessage, error) {
			// Handlers start in the script's order (a deterministic run),
			// so the position is taken before the operation runs.
			mu.Lock()
			pos := len(b.Calls)
			b.Calls = append(b.Calls, BundleCall{Op: op, Input: redactJSON(redact, payload)})
			mu.Unlock()
			data, err := handle(ctx, op, payload)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				e := sandbox.AsError(err)
				b.Calls[pos].Error = &BundleError{Class: e.Class, Message: redact(e.Message), Hint: redact(e.Hint), Fields: redactFields(redact, e.Fields)}
			} else {
				b.Calls[pos].Result = redactJSON(redact, data)
			}
			return data, err
		}
	}
	return func(res *sandbox.Result, resp *run.Response) {
		// The sandbox has redacted logs and diagnostics already.
		b.Outcome = Outcome{Result: redactJSON(redact, res.Result), Logs: nonNilLogs(res.Logs), Diagnostics: nonNilDiags(res.Diagnostics)}
		b.Response = resp
		if rc.Write == nil {
			return
		}
		if err := rc.Write(b); err != nil && rc.OnError != nil {
			rc.OnError(err)
		}
	}
}

// redactJSON removes secrets from JSON text; should that ever break the
// JSON, the text is kept as a JSON string instead.
func redactJSON(redact func(string) string, raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	s := redact(string(raw))
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return Marshal(s)
}

func redactFields(redact func(string) string, f map[string]any) map[string]any {
	if f == nil {
		return nil
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil
	}
	var out map[string]any
	if json.Unmarshal(redactJSON(redact, b), &out) != nil {
		return nil
	}
	return out
}

func nonNilLogs(l []sandbox.LogEntry) []sandbox.LogEntry {
	if l == nil {
		return []sandbox.LogEntry{}
	}
	return l
}

func nonNilDiags(d []diag.Diagnostic) []diag.Diagnostic {
	if d == nil {
		return []diag.Diagnostic{}
	}
	return d
}

// WriteFile writes b to path, readable by its owner only (it holds what
// the upstream servers answered).
func WriteFile(path string, b *Bundle) error {
	data := Marshal(b)
	return os.WriteFile(path, append(data, '\n'), 0o600)
}

// DirWriter returns a Recorder.Write that puts each bundle in dir, named
// after the time of the run and a random suffix.
func DirWriter(dir string) func(*Bundle) error {
	return func(b *Bundle) error {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		f, err := os.CreateTemp(dir, b.Now.Format("20060102T150405.000")+"-*.json")
		if err != nil {
			return err
		}
		_, err = f.Write(append(Marshal(b), '\n'))
		return errors.Join(err, f.Close())
	}
}

// ReadFile reads a bundle.
func ReadFile(path string) (*Bundle, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var b Bundle
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%s is not a replay bundle: %v", filepath.Base(path), err)
	}
	if b.Format != BundleFormat {
		return nil, fmt.Errorf("%s: format %q, want %q (write it with codemode run --record)", filepath.Base(path), b.Format, BundleFormat)
	}
	return &b, nil
}

// Report is what Replay found.
type Report struct {
	// Reproduced: the replay made the same calls and produced the same
	// result, logs and diagnostics.
	Reproduced bool `json:"reproduced"`
	// Diverged says where it did not, first difference only.
	Diverged *Divergence `json:"diverged,omitempty"`
	// Outcome is what the replay produced.
	Outcome Outcome `json:"outcome"`
}

// Divergence is the first difference between a recording and its replay.
type Divergence struct {
	// What differs: "call", "module", "calls" (fewer calls were made),
	// "result", "logs" or "diagnostics".
	What string `json:"what"`
	// Position is the call's or log entry's index, when What names one.
	Position int    `json:"position,omitempty"`
	Message  string `json:"message"`
}

// Replay runs a bundle again, offline: modules come from the bundle, and
// each host operation is answered with the recorded answer at its position
// if it is the recorded operation (same op, same input), else the replay
// stops there. It returns an error only if the bundle cannot run at all.
func Replay(ctx context.Context, b *Bundle) (*Report, error) {
	opts := &transpile.Options{Lang: b.Transpile.Lang, Prefix: b.Transpile.Prefix, Suffix: b.Transpile.Suffix}
	out, diags := transpile.Module(ctx, b.Code, opts)
	rep := &Report{}
	if len(diags) > 0 {
		rep.Outcome = Outcome{Result: json.RawMessage("null"), Logs: []sandbox.LogEntry{}, Diagnostics: diags}
		rep.Diverged = &Divergence{What: "diagnostics", Message: "the code no longer transpiles: " + diags[0].Message}
		return rep, nil
	}
	modules := map[string]BundleModule{}
	for _, m := range b.Modules {
		modules[m.Specifier] = m
	}
	var (
		mu       sync.Mutex
		next     int
		diverged *Divergence
	)
	stop := func(d *Divergence) error {
		mu.Lock()
		if diverged == nil {
			diverged = d
		}
		mu.Unlock()
		return &sandbox.Abort{Diagnostic: diag.Diagnostic{Severity: diag.SeverityError, Code: diag.ReplayDiverged, Message: d.Message,
			Hint: "the code, the engine or the recording changed; record the run again"}}
	}
	res := sandbox.Run(ctx, out.Code, &sandbox.Options{
		Limits: sandbox.Limits{Timeout: time.Duration(b.Limits.TimeoutMs) * time.Millisecond, MaxMemoryBytes: b.Limits.MaxMemoryBytes,
			MaxLogBytes: b.Limits.MaxLogBytes, MaxResultBytes: b.Limits.MaxResultBytes},
		Deterministic: &sandbox.Deterministic{Seed: b.Seed, Now: b.Now},
		Prelude:       b.Prelude,
		Position:      out.Position,
		Resolve: func(_ context.Context, spec string) (string, error) {
			m, ok := modules[spec]
			if !ok {
				return "", stop(&Divergence{What: "module", Message: fmt.Sprintf("the replay imports %q, which the recorded run did not", spec)})
			}
			if m.Error != nil {
				return "", m.Error
			}
			return m.Source, nil
		},
		Handle: func(_ context.Context, op string, payload json.RawMessage) (json.RawMessage, error) {
			mu.Lock()
			pos := next
			next++
			mu.Unlock()
			if pos >= len(b.Calls) {
				return nil, stop(&Divergence{What: "call", Position: pos, Message: fmt.Sprintf("the replay makes call #%d, %s(%s); the recorded run made only %d", pos, opName(op), clip(string(payload)), len(b.Calls))})
			}
			c := b.Calls[pos]
			if c.Op != op || !sameInput(c.Input, payload) {
				return nil, stop(&Divergence{What: "call", Position: pos, Message: fmt.Sprintf("call #%d is %s(%s) in the replay, %s(%s) in the recording",
					pos, opName(op), clip(string(payload)), opName(c.Op), clip(string(c.Input)))})
			}
			if c.Error != nil {
				return nil, &diag.Error{Class: c.Error.Class, Message: c.Error.Message, Hint: c.Error.Hint, Fields: c.Error.Fields}
			}
			return c.Result, nil
		},
	})
	rep.Outcome = Outcome{Result: res.Result, Logs: nonNilLogs(res.Logs), Diagnostics: nonNilDiags(res.Diagnostics)}
	rep.Diverged = diverged
	if rep.Diverged == nil {
		rep.Diverged = compare(b, rep.Outcome, next)
	}
	rep.Reproduced = rep.Diverged == nil
	return rep, nil
}

// compare finds the first difference between the recorded outcome and the
// replayed one.
func compare(b *Bundle, got Outcome, calls int) *Divergence {
	want := b.Outcome
	if calls < len(b.Calls) {
		c := b.Calls[calls]
		return &Divergence{What: "calls", Position: calls, Message: fmt.Sprintf("the replay made %d of the %d recorded calls; the next was %s(%s)", calls, len(b.Calls), opName(c.Op), clip(string(c.Input)))}
	}
	if !sameJSON(string(want.Result), string(got.Result)) {
		return &Divergence{What: "result", Message: fmt.Sprintf("the result is %s in the replay, %s in the recording", clip(string(got.Result)), clip(string(want.Result)))}
	}
	for i := range max(len(want.Logs), len(got.Logs)) {
		if i >= len(want.Logs) || i >= len(got.Logs) || !sameLog(want.Logs[i], got.Logs[i], b.Live) {
			return &Divergence{What: "logs", Position: i, Message: fmt.Sprintf("log entry #%d is %s in the replay, %s in the recording", i, logText(got.Logs, i), logText(want.Logs, i))}
		}
	}
	for i := range max(len(want.Diagnostics), len(got.Diagnostics)) {
		if i >= len(want.Diagnostics) || i >= len(got.Diagnostics) || want.Diagnostics[i] != got.Diagnostics[i] {
			return &Divergence{What: "diagnostics", Position: i, Message: fmt.Sprintf("diagnostic #%d is %s in the replay, %s in the recording", i, diagText(got.Diagnostics, i), diagText(want.Diagnostics, i))}
		}
	}
	return nil
}

// sameLog compares log entries; a live recording's times are not the
// replay's virtual ones.
func sameLog(a, b sandbox.LogEntry, live bool) bool {
	if live {
		a.TimeMs, b.TimeMs = 0, 0
	}
	return a == b
}

func sameInput(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	return sameJSON(string(a), string(b))
}

// opName shows an operation as a call: "tool\x00calc\x00add" is calc/add.
func opName(op string) string {
	if route, ok := strings.CutPrefix(op, "tool\x00"); ok {
		server, tool, _ := strings.Cut(route, "\x00")
		return server + "/" + tool
	}
	return op
}

func logText(l []sandbox.LogEntry, i int) string {
	if i >= len(l) {
		return "absent"
	}
	return fmt.Sprintf("%s %q at %d ms", l[i].Level, clip(l[i].Message), l[i].TimeMs)
}

func diagText(d []diag.Diagnostic, i int) string {
	if i >= len(d) {
		return "absent"
	}
	return fmt.Sprintf("%s %s %q", d[i].Severity, d[i].Code, clip(d[i].Message))
}
