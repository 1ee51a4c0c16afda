package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/sandbox"
	"github.com/codemode-mcp/codemode/internal/store"
)

// ---------------------------------------------------------------------------
// The run list

type runRow struct {
	ID, Short       string
	Start           time.Time
	Surface, Tool   string
	Outcome         string
	OK              bool
	Duration        string
	Calls, Failed   int
	Script, Hash    string
	Client, Session string
}

type filterForm struct {
	Surface, Outcome, Server string
	Since, Until             string // as the form's datetime-local fields hold them (UTC)
}

type runsData struct {
	Rows     []runRow
	Filter   filterForm
	Query    string // the filter as a query string, for the events URL
	More     bool
	Next     string // the URL of the next page
	First    bool   // the newest runs: live updates add to them
	Surfaces []string
	Servers  []string
	Outcomes []string
}

// outcomes the filter offers: any, ok, any error, and each error code.
var outcomeChoices = []string{"ok", "error", string(diag.UncaughtException), string(diag.SyntaxError), string(diag.SandboxLimit),
	string(diag.ImportFailure), string(diag.InvalidRequest), string(diag.Canceled), string(diag.Unsettled), string(diag.ResultNotSerializable)}

const formTime = "2006-01-02T15:04"

// parseTime reads a filter time: the form's datetime-local (taken as UTC)
// or RFC 3339.
func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, f := range []string{formTime, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(f, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time: use 2006-01-02T15:04 (UTC) or RFC 3339", s)
}

// filterOf reads the run filter from a request's query.
func filterOf(q url.Values) (store.RunFilter, filterForm, error) {
	ff := filterForm{Surface: q.Get("surface"), Outcome: q.Get("outcome"), Server: q.Get("server"), Since: q.Get("since"), Until: q.Get("until")}
	f := store.RunFilter{Surface: ff.Surface, Outcome: ff.Outcome, Server: ff.Server, Before: q.Get("before")}
	var err error
	if f.Since, err = parseTime(ff.Since); err != nil {
		return f, ff, err
	}
	if f.Until, err = parseTime(ff.Until); err != nil {
		return f, ff, err
	}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		f.Limit = min(n, 500)
	}
	return f, ff, nil
}

func (f filterForm) query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"surface": f.Surface, "outcome": f.Outcome, "server": f.Server, "since": f.Since, "until": f.Until} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

func rowOf(r store.RunRecord) runRow {
	return runRow{ID: r.ID, Short: short(r.ID), Start: r.Start.UTC(), Surface: r.Surface, Tool: r.Tool, Outcome: r.Outcome, OK: r.Outcome == "ok",
		Duration: dur(r.Duration), Calls: r.ToolCalls, Failed: r.FailedCalls, Script: r.Script, Hash: shortHash(r.CodeSHA256),
		Client: r.Client, Session: r.Session}
}

// short is the part of a run id that the pages show: its last 12 hex
// digits (a UUIDv7's first ones are the time, shared by runs of the same
// moment).
func short(id string) string {
	s := strings.ReplaceAll(id, "-", "")
	if len(s) > 12 {
		return s[len(s)-12:]
	}
	return s
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// dur formats a duration for people: µs under a millisecond, ms under ten
// seconds, then seconds.
func dur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%d µs", d.Microseconds())
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000)
	case d < 10*time.Second:
		return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func (u *UI) runs(w http.ResponseWriter, r *http.Request) {
	f, ff, err := filterOf(r.URL.Query())
	data := &runsData{Filter: ff, Surfaces: u.opts.Surfaces, Outcomes: outcomeChoices, First: f.Before == ""}
	for _, s := range u.opts.Configured {
		data.Servers = append(data.Servers, s.ID)
	}
	data.Query = ff.query().Encode()
	p := &page{Title: "Runs", Nav: "runs", Data: data}
	if err != nil {
		p.Error = err.Error()
		u.render(w, r, http.StatusBadRequest, "runs", p)
		return
	}
	rows, more, err := u.opts.History.List(r.Context(), f)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	for _, rec := range rows {
		data.Rows = append(data.Rows, rowOf(rec))
	}
	if more {
		q := ff.query()
		q.Set("before", rows[len(rows)-1].ID)
		data.More, data.Next = true, u.opts.Prefix+"/?"+q.Encode()
	}
	u.render(w, r, http.StatusOK, "runs", p)
}

// ---------------------------------------------------------------------------
// One run

type codeLine struct {
	N     int
	Text  string
	Diags []diag.Diagnostic
}

type callView struct {
	N                 int
	Server, Tool      string
	Start, Duration   string
	OffsetUs, DurUs   int64
	Outcome           string
	OK                bool
	ErrorClass, Error string
	Left, Width       string // the bar's position on the time axis, in % (CSS)
	Input, Output     string
}

type tick struct {
	Left  string
	Label string
}

type runData struct {
	Run      store.RunRecord
	Short    string
	Start    time.Time
	Duration string
	Lines    []codeLine
	Unplaced []diag.Diagnostic
	Diags    []diag.Diagnostic
	Logs     []sandbox.LogEntry
	Result   string
	Calls    []callView
	Ticks    []tick
	Total    string
	Limits   string
	Args     string
	Failed   bool
}

// linePos finds the line of a diagnostic's Path in the script
// ("script.ts:3:7", "script.js:3").
var linePos = regexp.MustCompile(`^script\.(?:ts|js):(\d+)(?::\d+)?$`)

func (u *UI) run(w http.ResponseWriter, r *http.Request) {
	rec, err := u.opts.History.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := &runData{Run: rec, Short: short(rec.ID), Start: rec.Start.UTC(), Duration: dur(rec.Duration), Failed: rec.Outcome != "ok"}
	var resp run.Response
	if err := json.Unmarshal(rec.Response, &resp); err == nil {
		d.Logs, d.Diags = resp.Logs, resp.Diagnostics
		d.Result = pretty(resp.Result)
	} else {
		d.Result = string(rec.Response)
	}
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(rec.Code, "\r\n", "\n"), "\n"), "\n")
	for i, l := range lines {
		d.Lines = append(d.Lines, codeLine{N: i + 1, Text: l})
	}
	for _, dg := range d.Diags {
		m := linePos.FindStringSubmatch(dg.Path)
		n, _ := strconv.Atoi(safeIndex(m, 1))
		if n >= 1 && n <= len(d.Lines) {
			d.Lines[n-1].Diags = append(d.Lines[n-1].Diags, dg)
		} else {
			d.Unplaced = append(d.Unplaced, dg)
		}
	}
	d.Limits = pretty(rec.Limits)
	if rec.Args != nil {
		d.Args = pretty(rec.Args)
	}
	d.Calls, d.Ticks, d.Total = waterfall(rec)
	u.render(w, r, http.StatusOK, "run", &page{Title: "Run " + d.Short, Nav: "runs", Data: d})
}

func safeIndex(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return ""
}

// waterfall lays a run's calls on a time axis: each call is a bar from
// its start offset, as wide as its duration, so that calls made in parallel
// overlap and sequential ones follow each other. The axis spans the calls,
// from the first start to the last end (a run often spends most of its time
// before its first call, starting a server): its ticks say the time since
// the run started.
func waterfall(rec store.RunRecord) ([]callView, []tick, string) {
	if len(rec.Calls) == 0 {
		return nil, nil, ""
	}
	from, to := rec.Calls[0].Offset, time.Duration(0)
	for _, c := range rec.Calls {
		from = min(from, c.Offset)
		to = max(to, c.Offset+c.Duration)
	}
	span := max(to-from, time.Microsecond)
	pct := func(d time.Duration) float64 { return float64(d) / float64(span) * 100 }
	var out []callView
	for i, c := range rec.Calls {
		left := pct(c.Offset - from)
		// A call under the axis' resolution still shows, ending at the
		// axis' end at the latest.
		width := max(pct(c.Duration), 0.6)
		left = max(0, min(left, 100-width))
		out = append(out, callView{N: i + 1, Server: c.Server, Tool: c.Tool, Start: dur(c.Offset), Duration: dur(c.Duration),
			OffsetUs: c.Offset.Microseconds(), DurUs: c.Duration.Microseconds(), Outcome: c.Outcome, OK: c.Outcome == run.CallOK,
			ErrorClass: c.ErrorClass, Error: c.Error, Left: fmt.Sprintf("%.3f%%", left), Width: fmt.Sprintf("%.3f%%", width),
			Input: prettyOrEmpty(c.Input), Output: prettyOrEmpty(c.Output)})
	}
	// The first tick says when the calls began; the others how long after.
	ticks := []tick{{Left: "0%", Label: dur(from)}}
	for i := 1; i <= 4; i++ {
		ticks = append(ticks, tick{Left: fmt.Sprintf("%d%%", i*25), Label: "+" + dur(span*time.Duration(i)/4)})
	}
	return out, ticks, dur(from) + " to " + dur(to)
}

func pretty(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

func prettyOrEmpty(raw json.RawMessage) string {
	if raw == nil {
		return ""
	}
	return pretty(raw)
}

// ---------------------------------------------------------------------------
// Servers and scripts

func (u *UI) servers(w http.ResponseWriter, r *http.Request) {
	var list []Server
	if u.opts.Servers != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		list = u.opts.Servers(ctx)
		cancel()
	} else {
		for _, s := range u.opts.Configured {
			s.State = "unknown"
			list = append(list, s)
		}
	}
	u.render(w, r, http.StatusOK, "servers", &page{Title: "Servers", Nav: "servers", Data: list})
}

type scriptView struct {
	store.Script
	Hash     string
	Versions []store.Script
}

func (u *UI) scriptList(w http.ResponseWriter, r *http.Request) {
	var list []store.Script
	if u.opts.Scripts != nil {
		var err error
		if list, err = u.opts.Scripts.List(r.Context()); err != nil {
			u.fail(w, r, err)
			return
		}
	}
	u.render(w, r, http.StatusOK, "scripts", &page{Title: "Saved scripts", Nav: "scripts", Data: list})
}

func (u *UI) script(w http.ResponseWriter, r *http.Request) {
	if u.opts.Scripts == nil {
		u.fail(w, r, &store.NotFoundError{What: "saved script", ID: r.PathValue("name")})
		return
	}
	ref := r.PathValue("name")
	if v := r.URL.Query().Get("version"); v != "" {
		ref += "@" + v
	}
	sc, err := u.opts.Scripts.Get(r.Context(), ref)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	vs, err := u.opts.Scripts.Versions(r.Context(), sc.Name)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	slices.SortFunc(vs, func(a, b store.Script) int { return b.Version - a.Version })
	u.render(w, r, http.StatusOK, "script", &page{Title: "Script " + sc.Name, Nav: "scripts",
		Data: &scriptView{Script: sc, Hash: shortHash(sc.CodeSHA256), Versions: vs}})
}
