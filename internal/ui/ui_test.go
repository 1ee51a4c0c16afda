package ui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/scripts"
	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/ui"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// seeded is a store with known runs: r0…r5, one second apart, the odd
// ones of surface files, r3 failed with a diagnostic at line 2, r4 with
// calls (two in parallel, one after, one failed).
func seeded(t *testing.T) *store.Store {
	t.Helper()
	st := store.New(&store.Options{Dir: t.TempDir()})
	t.Cleanup(func() { st.Close() })
	var runs []store.RunRecord
	for i := range 6 {
		r := store.RunRecord{ID: "0190000" + string(rune('0'+i)) + "-0000-7000-8000-00000000000" + string(rune('0'+i)), Start: t0.Add(time.Duration(i) * time.Second),
			Duration: 20 * time.Millisecond, Surface: "run", Tool: "codemode_run", Client: "agent/1", Code: "const x = 1;\nreturn x;", CodeSHA256: "abcdef0123456789",
			Limits: json.RawMessage(`{"timeoutMs":30000}`), Outcome: "ok", Response: json.RawMessage(`{"logs":[{"level":"log","message":"hello <b>","timeMs":3}],"result":{"n":1},"diagnostics":[],"toolTrace":[]}`)}
		if i%2 == 1 {
			r.Surface, r.Tool = "files", "executeToolCode"
		}
		if i == 3 {
			r.Outcome = "UNCAUGHT_EXCEPTION"
			r.Response = json.RawMessage(`{"logs":[],"result":null,"diagnostics":[{"severity":"error","code":"UNCAUGHT_EXCEPTION","message":"Uncaught Error: boom","path":"script.ts:2:1"}],"toolTrace":[]}`)
		}
		if i == 4 {
			r.Calls = []store.CallRecord{
				{Server: "calc", Tool: "add", Offset: 2 * time.Millisecond, Duration: 8 * time.Millisecond, Outcome: "ok", Input: json.RawMessage(`{"a":1}`)},
				{Server: "calc", Tool: "mul", Offset: 3 * time.Millisecond, Duration: 6 * time.Millisecond, Outcome: "ok"},
				{Server: "calc", Tool: "add", Offset: 11 * time.Millisecond, Duration: 4 * time.Millisecond, Outcome: "ok"},
				{Server: "gh", Tool: "get", Offset: 16 * time.Millisecond, Duration: 2 * time.Millisecond, Outcome: "tool_error", ErrorClass: "ToolCallError", Error: "ToolCallError: get (gh/get) failed"},
			}
			r.ToolCalls, r.FailedCalls = 4, 1
		}
		runs = append(runs, r)
	}
	if err := st.History().Add(context.Background(), runs); err != nil {
		t.Fatal(err)
	}
	return st
}

func id(i int) string {
	return "0190000" + string(rune('0'+i)) + "-0000-7000-8000-00000000000" + string(rune('0'+i))
}

func serveUI(t *testing.T, st *store.Store, o *ui.Options) *httptest.Server {
	t.Helper()
	if o == nil {
		o = &ui.Options{}
	}
	o.History = st.History()
	o.Scripts = scripts.New(st)
	if o.Surfaces == nil {
		o.Surfaces = []string{"run", "files"}
	}
	o.Configured = []ui.Server{{ID: "calc", Name: "calc"}, {ID: "gh", Name: "github"}}
	hs := httptest.NewServer(ui.New(o))
	t.Cleanup(hs.Close)
	return hs
}

func fetch(t *testing.T, req *http.Request) (int, string, http.Header) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header
}

func getPage(t *testing.T, u string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	status, body, _ := fetch(t, req)
	return status, body
}

var rowID = regexp.MustCompile(`<tr data-run="([^"]+)"`)

func rowIDs(body string) []string {
	var out []string
	for _, m := range rowID.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// The run list: newest first, filtered by surface, outcome, server and
// time, in pages; it needs no JavaScript (it is HTML from the server).
func TestRunList(t *testing.T) {
	hs := serveUI(t, seeded(t), nil)
	for _, tc := range []struct {
		query string
		want  []int
	}{
		{"", []int{5, 4, 3, 2, 1, 0}},
		{"surface=files", []int{5, 3, 1}},
		{"outcome=error", []int{3}},
		{"outcome=ok&surface=run", []int{4, 2, 0}},
		{"server=gh", []int{4}},
		{"since=2026-03-04T05:06:09Z&until=2026-03-04T05:06:11Z", []int{3, 2}},
		{"since=2026-03-04T05:06", []int{5, 4, 3, 2, 1, 0}},
		{"limit=2", []int{5, 4}},
		{"limit=2&before=" + id(4), []int{3, 2}},
	} {
		status, body := getPage(t, hs.URL+"/ui/?"+tc.query)
		var want []string
		for _, i := range tc.want {
			want = append(want, id(i))
		}
		if got := rowIDs(body); status != 200 || strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%q: %d %v, want %v", tc.query, status, got, want)
		}
	}
	_, body := getPage(t, hs.URL+"/ui/?limit=2&surface=run")
	if !strings.Contains(body, `href="/ui/?before=`+id(2)+`&amp;limit=2&amp;surface=run"`) && !strings.Contains(body, "before="+id(2)) {
		t.Errorf("no link to the next page:\n%s", body)
	}
	if !strings.Contains(body, `<label for="f-surface">Surface</label>`) || !strings.Contains(body, `<option value="files">files</option>`) {
		t.Errorf("the filter form lacks its labels or choices")
	}
	if !strings.Contains(body, `data-live="/ui/events?surface=run"`) {
		t.Errorf("the first page has no live updates:\n%s", body)
	}
	if status, body := getPage(t, hs.URL+"/ui/?since=yesterday"); status != 400 || !strings.Contains(body, "is not a time") {
		t.Errorf("a bad time: %d %s", status, body)
	}
}

// One run: its code with the diagnostic at its line, logs (escaped),
// result, and the waterfall: bars on the calls' time axis, the parallel
// ones overlapping, the failed one marked.
func TestRunPage(t *testing.T) {
	hs := serveUI(t, seeded(t), nil)
	status, body := getPage(t, hs.URL+"/ui/runs/"+id(3))
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	if !regexp.MustCompile(`(?s)<li id="L2"[^>]*class="has-diag"><code>return x;</code><ul class="diags"><li class="diag sev-error"><strong>error UNCAUGHT_EXCEPTION</strong> at script.ts:2:1: Uncaught Error: boom`).MatchString(body) {
		t.Errorf("the diagnostic is not at line 2:\n%s", body)
	}
	_, body = getPage(t, hs.URL+"/ui/runs/"+id(4))
	if !strings.Contains(body, "hello &lt;b&gt;") {
		t.Errorf("the log is not escaped")
	}
	bars := regexp.MustCompile(`<span class="bar (ok|fail)" data-offset-us="(\d+)" data-duration-us="(\d+)" style="left: ([0-9.]+)%; width: ([0-9.]+)%"`).FindAllStringSubmatch(body, -1)
	if len(bars) != 4 {
		t.Fatalf("%d bars:\n%s", len(bars), body)
	}
	// The axis spans 2 ms to 18 ms: the first bar starts at 0 %, the
	// sequential one at (11-2)/16.
	want := [][3]string{{"ok", "0.000", "50.000"}, {"ok", "6.250", "37.500"}, {"ok", "56.250", "25.000"}, {"fail", "87.500", "12.500"}}
	for i, b := range bars {
		if b[1] != want[i][0] || b[4] != want[i][1] || b[5] != want[i][2] {
			t.Errorf("bar %d: %v, want %v", i, b[1:], want[i])
		}
	}
	if !strings.Contains(body, "ToolCallError: get (gh/get) failed") || !strings.Contains(body, `{&#34;a&#34;:1}`) && !strings.Contains(body, `&#34;a&#34;: 1`) {
		t.Errorf("the calls' table lacks the error or the payload")
	}
	if status, _ := getPage(t, hs.URL+"/ui/runs/nope"); status != 404 {
		t.Errorf("an unknown run: %d", status)
	}
	// A run found by the start of its id.
	if status, _ := getPage(t, hs.URL+"/ui/runs/"+id(4)[:10]); status != 200 {
		t.Errorf("a run by prefix: %d", status)
	}
}

func TestServersAndScripts(t *testing.T) {
	st := seeded(t)
	sc := scripts.New(st)
	sc.Save(context.Background(), "report", "return 1", "the first")
	sc.Save(context.Background(), "report", "return <2>", "")
	hs := serveUI(t, st, &ui.Options{Servers: func(context.Context) []ui.Server {
		return []ui.Server{{ID: "calc", Name: "calc", State: "connected", Tools: 3, Capabilities: []string{"tools (list_changed)", "logging"}},
			{ID: "gh", Name: "github", State: "backoff", LastError: "the server exited"}}
	}})
	_, body := getPage(t, hs.URL+"/ui/servers")
	for _, want := range []string{"tools (list_changed), logging", `<span class="badge ok">connected</span>`, `<span class="badge fail">backoff</span>`, "the server exited", "(github)"} {
		if !strings.Contains(body, want) {
			t.Errorf("servers page lacks %q", want)
		}
	}
	_, body = getPage(t, hs.URL+"/ui/scripts")
	if !strings.Contains(body, `<a href="/ui/scripts/report">report</a>`) || !strings.Contains(body, `<td class="num">2</td>`) {
		t.Errorf("scripts page:\n%s", body)
	}
	_, body = getPage(t, hs.URL+"/ui/scripts/report")
	if !strings.Contains(body, "return &lt;2&gt;") || !strings.Contains(body, "version 1</a>") {
		t.Errorf("script page:\n%s", body)
	}
	_, body = getPage(t, hs.URL+"/ui/scripts/report?version=1")
	if !strings.Contains(body, "return 1") || !strings.Contains(body, "the first") {
		t.Errorf("script version 1:\n%s", body)
	}
	// Standalone, the servers are the configured ones, state unknown.
	hs2 := serveUI(t, st, &ui.Options{Standalone: true})
	_, body = getPage(t, hs2.URL+"/ui/servers")
	if !strings.Contains(body, "unknown") || !strings.Contains(body, "No gateway runs in this process") {
		t.Errorf("standalone servers page:\n%s", body)
	}
}

// With a token: a request without it gets the page that asks for it (401);
// the token as a bearer header, or the session cookie the form sets, opens
// the pages; the assets need none.
func TestAuth(t *testing.T) {
	hs := serveUI(t, seeded(t), &ui.Options{Auth: ui.TokenChecker("s3cret", "")})
	status, body := getPage(t, hs.URL+"/ui/runs/"+id(1))
	if status != 401 || !strings.Contains(body, `<label for="token">Token</label>`) || !strings.Contains(body, `name="next" value="/ui/runs/`+id(1)+`"`) {
		t.Errorf("without a token: %d\n%s", status, body)
	}
	req, _ := http.NewRequest("GET", hs.URL+"/ui/runs/"+id(1), nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	if status, _, _ := fetch(t, req); status != 200 {
		t.Errorf("with the token: %d", status)
	}
	req.Header.Set("Authorization", "Bearer nope")
	req.Header.Set("X-Codemode-UI", "1")
	if status, _, _ := fetch(t, req); status != 401 {
		t.Errorf("with a wrong token: %d", status)
	}
	if status, _ := getPage(t, hs.URL+"/ui/static/app.js"); status != 200 {
		t.Errorf("the script needs no token: %d", status)
	}
	// Without JavaScript: the form posts the token, which comes back as a
	// session cookie for /ui.
	form := url.Values{"token": {"s3cret"}, "next": {"/ui/servers"}}
	req, _ = http.NewRequest("POST", hs.URL+"/ui/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	status, _, h := fetch(t, req)
	cookie := h.Get("Set-Cookie")
	if status != http.StatusSeeOther || h.Get("Location") != "/ui/servers" || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") || !strings.Contains(cookie, "Path=/ui") {
		t.Errorf("login: %d %v", status, h)
	}
	req, _ = http.NewRequest("GET", hs.URL+"/ui/servers", nil)
	req.Header.Set("Cookie", strings.Split(cookie, ";")[0])
	if status, _, _ := fetch(t, req); status != 200 {
		t.Errorf("with the cookie: %d", status)
	}
	form.Set("token", "wrong")
	form.Set("next", "https://evil.example/")
	req, _ = http.NewRequest("POST", hs.URL+"/ui/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if status, body, _ := fetch(t, req); status != 401 || !strings.Contains(body, "not accepted") || strings.Contains(body, "evil") {
		t.Errorf("a wrong token: %d %s", status, body)
	}
}

// New runs reach the run list as server-sent events: the rows recorded
// after the newest one the page shows, as soon as the writer says so.
func TestEvents(t *testing.T) {
	st := seeded(t)
	wake := make(chan struct{}, 1)
	hs := serveUI(t, st, &ui.Options{PollEvery: time.Hour, Wake: func() (<-chan struct{}, func()) { return wake, func() {} }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+"/ui/events?surface=run&shown="+id(2), nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := make(chan string)
	go func() {
		sc := bufio.NewScanner(res.Body)
		var ev []string
		for sc.Scan() {
			if sc.Text() == "" {
				if len(ev) > 0 {
					events <- strings.Join(ev, "\n")
				}
				ev = nil
				continue
			}
			ev = append(ev, sc.Text())
		}
		close(events)
	}()
	next := func() string {
		for e := range events {
			if strings.HasPrefix(e, "event: run") {
				return e
			}
		}
		t.Fatal("the stream ended")
		return ""
	}
	// The page showed up to run 2 of surface run: run 4 is new to it.
	if e := next(); !strings.Contains(e, "id: "+id(4)) || !strings.Contains(e, `data: <tr data-run="`+id(4)+`"`) {
		t.Errorf("first event: %s", e)
	}
	// A run recorded now, and another of a surface the filter leaves out.
	newRun := store.RunRecord{ID: "0190000z-new", Start: t0.Add(time.Minute), Surface: "run", Outcome: "ok", Code: "1", Limits: json.RawMessage("{}"), Response: json.RawMessage("{}")}
	other := newRun
	other.ID, other.Surface = "0190000y-other", "files"
	if err := st.History().Add(context.Background(), []store.RunRecord{other, newRun}); err != nil {
		t.Fatal(err)
	}
	wake <- struct{}{}
	if e := next(); !strings.Contains(e, "id: 0190000z-new") {
		t.Errorf("second event: %s", e)
	}
}
