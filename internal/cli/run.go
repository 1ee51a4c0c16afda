package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/codemode-mcp/codemode/internal/builtin"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/normalize"
	"github.com/codemode-mcp/codemode/internal/replay"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/scripts"
	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/transpile"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func (e *env) run(args []string) int {
	fs := newFlagSet("run", e.stderr, "run [flags] SCRIPT|-   or   run [flags] --script NAME[@VERSION] [--args JSON]")
	var c common
	c.register(fs, "warn")
	var l config.Limits
	var caps stringList
	var record string
	var dryRun bool
	fs.Int64Var(&l.TimeoutMs, "timeout-ms", 0, "wall-clock limit of the run in milliseconds (default 30000)")
	fs.Int64Var(&l.MaxMemoryBytes, "max-memory-bytes", 0, "memory limit of the sandbox in bytes (default 64 MiB)")
	fs.Int64Var(&l.MaxLogBytes, "max-log-bytes", 0, "bytes of console output kept (default 64 KiB)")
	fs.Int64Var(&l.MaxToolCalls, "max-tool-calls", 0, "tool calls allowed (default 100)")
	fs.Int64Var(&l.MaxResultBytes, "max-result-bytes", 0, "largest result in bytes of JSON (default 1 MiB)")
	fs.Var(&caps, "capability", "server id to connect before the script starts (repeatable)")
	fs.BoolVar(&dryRun, "dry-run", false, "send only read-only (readOnlyHint) and auto-approved calls; the others return null to the script and are listed in the response's plan")
	fs.StringVar(&record, "record", "", "also write the run's replay bundle to FILE (the run is then deterministic; see codemode replay run)")
	var script, argsJSON string
	fs.StringVar(&script, "script", "", "run the saved script NAME (or NAME@VERSION) instead of a file (see codemode scripts)")
	fs.StringVar(&argsJSON, "args", "", `the script's arguments, a JSON object: its @codemode/args and global args (e.g. '{"team": "core"}')`)
	pos, err := parse(fs, args)
	if err != nil {
		return e.usageErr(err)
	}
	if script == "" && len(pos) != 1 || script != "" && len(pos) != 0 {
		fs.Usage()
		return e.usageErr(errors.New("run needs exactly one SCRIPT (a file, or - for stdin), or --script NAME"))
	}
	var runArgs json.RawMessage
	if argsJSON != "" {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(argsJSON), &m) != nil || m == nil {
			return e.usageErr(fmt.Errorf("--args %.40q: use a JSON object, e.g. '{\"team\": \"core\"}'", argsJSON))
		}
		runArgs = json.RawMessage(argsJSON)
	}
	var bad error
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "timeout-ms" && !strings.HasPrefix(f.Name, "max-") {
			return
		}
		if n, err := strconv.ParseInt(f.Value.String(), 10, 64); err == nil && n <= 0 && bad == nil {
			bad = fmt.Errorf("--%s %d: limits must be positive (leave the flag out for the default)", f.Name, n)
		}
	})
	if bad != nil {
		return e.usageErr(bad)
	}
	var code, file, full string
	if script == "" {
		file = pos[0]
		if code, err = e.readScript(file); err != nil {
			return e.usageErr(err)
		}
	}
	g, status := e.open(c, nil)
	if g == nil {
		return status
	}
	defer g.close()
	if script != "" {
		var d *diag.Diagnostic
		if code, full, d = scripts.New(g.store).Resolve(e.ctx, script); d != nil {
			fmt.Fprintf(e.stderr, "codemode: --script %s: %s (%s)\n", script, d.Message, d.Hint)
			return ExitUsage
		}
		file = "script.ts"
	}
	obs, err := e.observe(g, false)
	if err != nil {
		return e.usageErr(err)
	}
	defer obs.close()
	opts := &run.Options{Logger: g.log, Admission: g.admission(), Observer: obs.observer()}
	var caller run.Caller = g.caller()
	recorded := false
	if record != "" {
		rec := &replay.Recorder{
			Write: func(b *replay.Bundle) error {
				recorded = true
				return replay.WriteFile(record, b)
			},
			OnError: func(err error) { fmt.Fprintln(e.stderr, "codemode: writing the replay bundle:", err) },
		}
		opts.Record, caller = rec.Record, replay.Releasing(caller)
	}
	opts.Record = obs.record(opts.Record)
	r := run.New(g.cfg, g.cat, caller, opts)
	// One run is one Thoughtbox "current session" (builtin.Caller).
	ctx := builtin.WithCaller(e.ctx, builtin.Caller{Client: builtin.DefaultClient, Session: "run-" + store.NewID()})
	// The file's extension decides the language (`f < T > (x)` is a
	// comparison in JavaScript and a generic call in TypeScript); stdin
	// tries TypeScript, then JavaScript.
	resp := r.RunWith(run.WithOrigin(ctx, run.Origin{Surface: "cli"}), run.Request{Code: code, Limits: l, RequestedCapabilities: caps, DryRun: dryRun, Args: runArgs, Script: full},
		run.Extra{Normalize: &normalize.Options{Mode: normalize.Module, Lang: transpile.LangOf(file)}})
	// Unescaped: "<b>&" stays readable instead of becoming \u003cb\u003e\u0026.
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(resp)
	if record != "" && !recorded {
		fmt.Fprintln(e.stderr, "codemode: nothing recorded: the script did not start (see its diagnostics)")
	}
	if resp.Failed() {
		return ExitFailed
	}
	return ExitOK
}
