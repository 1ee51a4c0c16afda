package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/replay"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/scripts"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/transpile"
)

const historyUsage = `Usage: codemode history <command> [flags]

  codemode history [list] [--surface S] [--outcome O] [--server S] [--since T] [--until T] [--limit N] [--before ID] [--json]
                                     the recorded runs, newest first
  codemode history show ID [--json]  one run: where it came from, its code, calls, result and diagnostics
  codemode history rerun ID          run its code again, on the surface and tool it came from, and print the response
  codemode history export ID [--out FILE]
                                     write its replay bundle (codemode replay run FILE re-runs it offline)

ID is a run's id, or its first 8 or more characters. The history is in the
data store (--data-dir, $CODEMODE_DATA_DIR, $CODEMODE_STORE): every run of
every surface, kept as codemode.history says (30 days, 256 MiB by default).
`

func (e *env) history(args []string) int {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "list":
		return e.historyList(args)
	case "show":
		return e.historyShow(args)
	case "rerun":
		return e.historyRerun(args)
	case "export":
		return e.historyExport(args)
	case "help":
		fmt.Fprint(e.stdout, historyUsage)
		return ExitOK
	}
	fmt.Fprintf(e.stderr, "codemode history: unknown command %q\n\n%s", sub, historyUsage)
	return ExitUsage
}

// openStore opens the data store the flags and environment name, for the
// commands that read it without running a gateway.
func (e *env) openStore(c common) (*store.Store, error) {
	log, err := c.logger(e.stderr)
	if err != nil {
		return nil, err
	}
	so := store.Locate(c.dataDir, os.Getenv)
	so.Logger = log
	return store.New(&so), nil
}

// storeErr reports a store failure (it names the database and the fix) and
// returns the exit status: 1 for a record that is not there, else 2.
func (e *env) storeErr(what string, err error) int {
	fmt.Fprintf(e.stderr, "codemode: %s: %v\n", what, err)
	var nf *store.NotFoundError
	var amb *store.AmbiguousError
	if errors.As(err, &nf) || errors.As(err, &amb) {
		return ExitFailed
	}
	return ExitUsage
}

func (e *env) historyList(args []string) int {
	fs := newFlagSet("history list", e.stderr, "history [list] [flags]")
	var c common
	c.register(fs, "warn")
	var f store.RunFilter
	var since, until string
	var asJSON bool
	fs.StringVar(&f.Surface, "surface", "", "only runs of this surface ("+strings.Join(historySurfaces(), ", ")+")")
	fs.StringVar(&f.Outcome, "outcome", "", `only runs with this outcome: "ok", "error" (any failure) or a code such as SANDBOX_LIMIT`)
	fs.StringVar(&f.Server, "server", "", "only runs that called a tool of this server")
	fs.StringVar(&since, "since", "", "only runs started at or after this time (RFC 3339, or a duration ago such as 2h)")
	fs.StringVar(&until, "until", "", "only runs started before this time (RFC 3339, or a duration ago)")
	fs.IntVar(&f.Limit, "limit", 20, "how many runs")
	fs.StringVar(&f.Before, "before", "", "the page after this run id (the last one of the previous page)")
	fs.BoolVar(&asJSON, "json", false, "print JSON lines instead of a table")
	pos, err := parse(fs, args)
	if err != nil {
		return e.usageErr(err)
	}
	if len(pos) > 0 {
		return e.usageErr(fmt.Errorf("history list takes no arguments, got %q", pos))
	}
	if f.Surface != "" && !slices.Contains(historySurfaces(), f.Surface) {
		// A misspelt surface would otherwise list nothing, as if no run
		// had been recorded.
		return e.usageErr(fmt.Errorf("--surface %q: no such surface; use one of %s", f.Surface, strings.Join(historySurfaces(), ", ")))
	}
	if f.Since, err = parseWhen("--since", since); err != nil {
		return e.usageErr(err)
	}
	if f.Until, err = parseWhen("--until", until); err != nil {
		return e.usageErr(err)
	}
	st, err := e.openStore(c)
	if err != nil {
		return e.usageErr(err)
	}
	defer st.Close()
	runs, more, err := st.History().List(e.ctx, f)
	if err != nil {
		return e.storeErr("reading the history", err)
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		for _, r := range runs {
			enc.Encode(listJSON(r))
		}
		return ExitOK
	}
	if len(runs) == 0 {
		fmt.Fprintln(e.stderr, "no runs recorded (that match)")
		return ExitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTARTED (UTC)\tSURFACE\tTOOL\tOUTCOME\tDURATION\tCALLS\tSCRIPT")
	for _, r := range runs {
		calls := fmt.Sprint(r.ToolCalls)
		if r.FailedCalls > 0 {
			calls += fmt.Sprintf(" (%d failed)", r.FailedCalls)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Start.UTC().Format("2006-01-02 15:04:05"), r.Surface, r.Tool, r.Outcome,
			r.Duration.Round(10*time.Microsecond), calls, r.Script)
	}
	tw.Flush()
	if more {
		fmt.Fprintf(e.stderr, "more: codemode history list --before %s\n", runs[len(runs)-1].ID)
	}
	return ExitOK
}

// historySurfaces are the surfaces runs are recorded under: the MCP
// surfaces, "classic" (a direct call of a codeMode:false server's tool),
// "cli" (codemode run) and "step" (POST /v1/code/step, codemode replay step
// and the proxy).
func historySurfaces() []string {
	return append(slices.Clone(config.KnownSurfaces), "classic", "cli", "step")
}

// parseWhen reads a time flag: RFC 3339, a date, or a duration ago.
func parseWhen(flag, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	for _, f := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(f, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s %q: use RFC 3339 (2026-01-02T15:04:05Z), a date (2026-01-02) or a duration ago (2h)", flag, s)
}

type runJSON struct {
	ID          string          `json:"id"`
	Start       time.Time       `json:"start"`
	DurationMs  float64         `json:"durationMs"`
	Surface     string          `json:"surface"`
	Tool        string          `json:"tool,omitempty"`
	Session     string          `json:"session,omitempty"`
	Client      string          `json:"client,omitempty"`
	Auth        string          `json:"auth,omitempty"`
	Script      string          `json:"script,omitempty"`
	Args        json.RawMessage `json:"args,omitempty"`
	CodeSHA256  string          `json:"codeSha256"`
	Code        string          `json:"code,omitempty"`
	Limits      json.RawMessage `json:"limits,omitempty"`
	Outcome     string          `json:"outcome"`
	ToolCalls   int             `json:"toolCalls"`
	FailedCalls int             `json:"failedCalls"`
	Calls       []callJSON      `json:"calls,omitempty"`
	Response    json.RawMessage `json:"response,omitempty"`
	HasBundle   bool            `json:"replayBundle,omitempty"`
}

type callJSON struct {
	Server     string          `json:"server"`
	Tool       string          `json:"tool"`
	StartMs    float64         `json:"startMs"`
	DurationMs float64         `json:"durationMs"`
	Outcome    string          `json:"outcome"`
	ErrorClass string          `json:"errorClass,omitempty"`
	Error      string          `json:"error,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func listJSON(r store.RunRecord) runJSON {
	return runJSON{ID: r.ID, Start: r.Start.UTC(), DurationMs: ms(r.Duration), Surface: r.Surface, Tool: r.Tool, Session: r.Session, Client: r.Client,
		Auth: r.Auth, Script: r.Script, CodeSHA256: r.CodeSHA256, Outcome: r.Outcome, ToolCalls: r.ToolCalls, FailedCalls: r.FailedCalls}
}

func fullJSON(r store.RunRecord) runJSON {
	j := listJSON(r)
	j.Code, j.Limits, j.Response, j.Args, j.HasBundle = r.Code, r.Limits, r.Response, r.Args, r.Bundle != nil
	for _, c := range r.Calls {
		j.Calls = append(j.Calls, callJSON{Server: c.Server, Tool: c.Tool, StartMs: ms(c.Offset), DurationMs: ms(c.Duration), Outcome: c.Outcome,
			ErrorClass: c.ErrorClass, Error: c.Error, Input: c.Input, Output: c.Output})
	}
	return j
}

// oneRun parses the ID argument of show, rerun and export and reads it.
func (e *env) oneRun(name string, args []string, extra func(*common) []string) (store.RunRecord, *store.Store, common, int) {
	var c common
	pos := extra(&c)
	if pos == nil {
		return store.RunRecord{}, nil, c, ExitUsage
	}
	if len(pos) != 1 {
		fmt.Fprintf(e.stderr, "codemode: history %s needs one run ID (see codemode history list)\n", name)
		return store.RunRecord{}, nil, c, ExitUsage
	}
	st, err := e.openStore(c)
	if err != nil {
		return store.RunRecord{}, nil, c, e.usageErr(err)
	}
	r, err := st.History().Get(e.ctx, pos[0])
	if err != nil {
		st.Close()
		return store.RunRecord{}, nil, c, e.storeErr("history "+name, err)
	}
	return r, st, c, ExitOK
}

func (e *env) historyShow(args []string) int {
	var asJSON bool
	r, st, _, status := e.oneRun("show", args, func(c *common) []string {
		fs := newFlagSet("history show", e.stderr, "history show ID [--json]")
		c.register(fs, "warn")
		fs.BoolVar(&asJSON, "json", false, "print the run as JSON")
		pos, err := parse(fs, args)
		if err != nil {
			e.usageErr(err)
			return nil
		}
		return pos
	})
	if st == nil {
		return status
	}
	defer st.Close()
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		enc.Encode(fullJSON(r))
		return ExitOK
	}
	w := e.stdout
	fmt.Fprintf(w, "run      %s\nstarted  %s UTC, took %s\nsurface  %s", r.ID, r.Start.UTC().Format("2006-01-02 15:04:05.000"), r.Duration.Round(time.Microsecond), r.Surface)
	if r.Tool != "" {
		fmt.Fprintf(w, " (tool %s)", r.Tool)
	}
	fmt.Fprintln(w)
	for _, kv := range [][2]string{{"session", r.Session}, {"client", r.Client}, {"token of", r.Auth}, {"script", r.Script}, {"args", string(r.Args)}} {
		if kv[1] != "" {
			fmt.Fprintf(w, "%-8s %s\n", kv[0], kv[1])
		}
	}
	fmt.Fprintf(w, "outcome  %s\ncode     sha256 %s\nlimits   %s\n\n", r.Outcome, r.CodeSHA256, r.Limits)
	for i, l := range strings.Split(strings.TrimRight(r.Code, "\n"), "\n") {
		fmt.Fprintf(w, "%4d  %s\n", i+1, l)
	}
	if len(r.Calls) > 0 {
		fmt.Fprintln(w, "\ntool calls (start, duration, outcome):")
		for i, c := range r.Calls {
			fmt.Fprintf(w, "  %d. %s/%s  +%s  %s  %s", i+1, c.Server, c.Tool, c.Offset.Round(time.Microsecond), c.Duration.Round(time.Microsecond), c.Outcome)
			if c.Error != "" {
				fmt.Fprintf(w, "  %s", c.Error)
			}
			fmt.Fprintln(w)
		}
	}
	var resp run.Response
	if json.Unmarshal(r.Response, &resp) == nil {
		fmt.Fprintf(w, "\nresult   %s\n", resp.Result)
		for _, d := range resp.Diagnostics {
			fmt.Fprintf(w, "%s %s", d.Severity, d.Code)
			if d.Path != "" {
				fmt.Fprintf(w, " at %s", d.Path)
			}
			fmt.Fprintf(w, ": %s\n", d.Message)
		}
		if len(resp.Logs) > 0 {
			fmt.Fprintln(w, "logs:")
			for _, l := range resp.Logs {
				fmt.Fprintf(w, "  [%s %dms] %s\n", l.Level, l.TimeMs, l.Message)
			}
		}
	}
	return ExitOK
}

func (e *env) historyExport(args []string) int {
	var out string
	r, st, _, status := e.oneRun("export", args, func(c *common) []string {
		fs := newFlagSet("history export", e.stderr, "history export ID [--out FILE]")
		c.register(fs, "warn")
		fs.StringVar(&out, "out", "", "write the bundle to FILE (default: stdout)")
		pos, err := parse(fs, args)
		if err != nil {
			e.usageErr(err)
			return nil
		}
		return pos
	})
	if st == nil {
		return status
	}
	defer st.Close()
	var b *replay.Bundle
	if r.Bundle != nil {
		b = &replay.Bundle{}
		if err := json.Unmarshal(r.Bundle, b); err != nil {
			fmt.Fprintf(e.stderr, "codemode: the run's recorded bundle cannot be read: %v\n", err)
			return ExitFailed
		}
	} else {
		b = bundleOf(r)
		fmt.Fprintln(e.stderr, `codemode: this run was recorded without payloads, so its bundle has the code, limits and response but not what the tools answered: codemode replay run reports where it needs them. Record runs with "codemode": {"history": {"payloads": true}} to export bundles that replay offline.`)
	}
	data := append(replay.Marshal(b), '\n')
	if out == "" {
		e.stdout.Write(data)
		return ExitOK
	}
	if err := os.WriteFile(out, data, 0o600); err != nil {
		fmt.Fprintln(e.stderr, "codemode: writing the bundle:", err)
		return ExitUsage
	}
	fmt.Fprintf(e.stderr, "wrote %s (codemode replay run %s)\n", out, out)
	return ExitOK
}

// bundleOf is the bundle of a run recorded without payloads: its code,
// limits and response, and its tool calls without their answers.
func bundleOf(r store.RunRecord) *replay.Bundle {
	b := &replay.Bundle{Format: replay.BundleFormat, Code: r.Code, Now: r.Start.UTC(), Modules: []replay.BundleModule{}, Calls: []replay.BundleCall{}, Live: true}
	json.Unmarshal(r.Limits, &b.Limits)
	var resp run.Response
	if json.Unmarshal(r.Response, &resp) == nil {
		b.Response = &resp
		b.Outcome = replay.Outcome{Result: resp.Result, Logs: resp.Logs, Diagnostics: resp.Diagnostics}
	}
	for _, c := range r.Calls {
		b.Calls = append(b.Calls, replay.BundleCall{Op: run.ToolOp(c.Server, c.Tool), Input: c.Input, Result: c.Output})
	}
	return b
}

// historyRerun runs a recorded run's code again through the surface and
// tool it came from (a gateway in process, with the configuration of now),
// and prints the response; the rerun is recorded too. A saved script's
// run reruns the script by name with its arguments.
func (e *env) historyRerun(args []string) int {
	r, st, c, status := e.oneRun("rerun", args, func(c *common) []string {
		fs := newFlagSet("history rerun", e.stderr, "history rerun ID [--config FILE]")
		c.register(fs, "warn")
		pos, err := parse(fs, args)
		if err != nil {
			e.usageErr(err)
			return nil
		}
		return pos
	})
	if st == nil {
		return status
	}
	st.Close()
	if r.Surface == "step" {
		fmt.Fprintln(e.stderr, "codemode: a step of a client-run conversation cannot rerun alone: replay its conversation with codemode replay step, or export it (codemode history export ID)")
		return ExitUsage
	}
	g, status := e.open(c, nil)
	if g == nil {
		return status
	}
	defer g.close()
	obs, err := e.observe(g, false)
	if err != nil {
		return e.usageErr(err)
	}
	defer obs.close()
	opts := &run.Options{Logger: g.log, Observer: obs.observer()}
	opts.Record = obs.record(nil)
	runner := run.New(g.cfg, g.cat, g.caller(), opts)
	saved := scripts.New(g.store)

	var resp json.RawMessage
	failed := false
	if r.Surface == "cli" || r.Surface == "" || r.Tool == "" {
		var limits config.Limits
		json.Unmarshal(r.Limits, &limits)
		req := run.Request{Code: r.Code, Limits: limits, Args: r.Args, Script: r.Script}
		rr := runner.RunWith(run.WithOrigin(e.ctx, run.Origin{Surface: "cli"}), req, run.Extra{Transpile: &transpile.Options{Lang: transpile.LangOf("script.ts")}})
		resp, _ = json.Marshal(rr)
		failed = rr.Failed()
	} else {
		res, err := e.callSurface(g, runner, saved, r)
		if err != nil {
			fmt.Fprintln(e.stderr, "codemode: rerun:", err)
			return ExitFailed
		}
		if res.StructuredContent != nil {
			resp, _ = json.Marshal(res.StructuredContent)
		} else {
			resp, _ = json.Marshal(res)
		}
		failed = res.IsError || outcomeFailed(resp)
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, resp, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(resp)
	}
	fmt.Fprintln(e.stdout, pretty.String())
	if failed {
		return ExitFailed
	}
	return ExitOK
}

// callSurface calls a recorded run's tool on a gateway served in process
// to an in-memory client.
func (e *env) callSurface(g *gateway, runner *run.Runner, saved *scripts.Scripts, r store.RunRecord) (*mcp.CallToolResult, error) {
	srv := serve.New(runner, g.mgr, &serve.Options{Logger: g.log, Scripts: saved.Resolve})
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	srv.Start(ctx)
	ct, stt := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, stt, nil)
	if err != nil {
		return nil, err
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "codemode-history-rerun", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	arguments := map[string]any{"code": r.Code}
	if r.Script != "" {
		arguments = map[string]any{"script": r.Script}
		if r.Args != nil {
			arguments["args"] = r.Args
		}
	}
	if r.Tool == g.cfg.Serve.RunToolName && r.Surface == "run" {
		arguments["limits"] = r.Limits
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: r.Tool, Arguments: arguments})
	if err != nil {
		return nil, fmt.Errorf("%s on surface %s: %w (is the surface still in codemode.surfaces?)", r.Tool, r.Surface, err)
	}
	return res, nil
}

// outcomeFailed reads a §3.3 response's diagnostics for an error.
func outcomeFailed(resp json.RawMessage) bool {
	var r run.Response
	return json.Unmarshal(resp, &r) == nil && r.Failed()
}
