package run

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// importErrorServers is a runner with a working server ("good"), one whose
// credentials the upstream rejects ("bad") and one whose ${VAR} is unset
// ("unset").
func importErrorServers(t *testing.T) *Runner {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "guarded"}, nil)
	srv.AddTool(&mcp.Tool{Name: "secret", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("ok"), nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer right" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	cfg := testutil.Config(
		config.Server{Name: "good", Transport: config.Streamable, URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer right"}},
		config.Server{Name: "bad", Transport: config.Streamable, URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer wrong"}},
		config.Server{Name: "unset", Transport: config.Stdio, Command: "unused", Unresolved: []string{"CODEMODE_TEST_UNSET_TOKEN"}},
	)
	m := upstream.New(cfg.Servers, nil)
	t.Cleanup(func() { m.Close() })
	return New(cfg, catalog.New(m), m, nil)
}

// §7.1, §7.3: a failed `await import()` of a server module rejects with the
// real @codemode/errors class (instanceof works, with hint and fields), not
// with the engine's TypeError ("module load failed: ...").
func TestDynamicImportThrowsErrorClasses(t *testing.T) {
	r := importErrorServers(t)
	res := r.Run(context.Background(), Request{Code: `import * as errors from "@codemode/errors";
const out = {};
for (const id of ["nope", "bad", "unset"]) {
  try {
    await import("@codemode/servers/" + id);
    out[id] = "imported";
  } catch (e) {
    out[id] = { name: e.name, message: e.message, hint: e.hint, serverId: e.serverId, available: e.available,
      code: e instanceof errors.CodemodeError, notFound: e instanceof errors.ServerNotFoundError,
      auth: e instanceof errors.AuthenticationError, type: e instanceof TypeError };
  }
}
// The module still imports fine once the failures are caught.
const good = await import("@codemode/servers/good");
out.good = await good.secret();
globalThis.__codemode_result__ = out;`})
	type caught struct {
		Name, Message, Hint, ServerID string
		Available                     []string
		Code, NotFound, Auth, Type    bool
	}
	var got struct {
		Nope, Bad, Unset caught
		Good             string
	}
	if err := json.Unmarshal(res.Result, &got); err != nil || res.Failed() {
		t.Fatalf("response:\n%s", dump(res))
	}
	if got.Good != "ok" {
		t.Errorf("good: %q", got.Good)
	}
	n := got.Nope
	if n.Name != "ServerNotFoundError" || !n.NotFound || !n.Code || n.Type || n.ServerID != "nope" ||
		!strings.Contains(n.Message, `there is no server "nope"`) || n.Hint == "" || strings.Join(n.Available, ",") != "good,bad,unset" {
		t.Errorf("nope: %+v", n)
	}
	b := got.Bad
	if b.Name != "AuthenticationError" || !b.Auth || !b.Code || b.Type || b.ServerID != "bad" || b.Hint == "" {
		t.Errorf("bad: %+v", b)
	}
	u := got.Unset
	if u.Name != "ServerNotFoundError" || !u.NotFound || u.Type || u.ServerID != "unset" ||
		!strings.Contains(u.Message, "CODEMODE_TEST_UNSET_TOKEN") || !strings.Contains(u.Hint, "CODEMODE_TEST_UNSET_TOKEN") {
		t.Errorf("unset: %+v", u)
	}
	if strings.Contains(dump(res), "Bearer") {
		t.Fatalf("credentials reached the response:\n%s", dump(res))
	}
}

// An uncaught failed import, static or dynamic, is an IMPORT_FAILURE
// diagnostic carrying the class and the hint.
func TestUncaughtImportFailureKeepsTheClass(t *testing.T) {
	r := importErrorServers(t)
	for _, c := range []struct {
		code  string
		class diag.Class
		want  string
	}{
		{`import { secret } from "@codemode/servers/nope"; await secret();`, diag.ServerNotFoundError, `there is no server "nope"`},
		{`import * as n from "@codemode/servers/nope"; n;`, diag.ServerNotFoundError, `there is no server "nope"`},
		{`await import("@codemode/servers/nope");`, diag.ServerNotFoundError, `there is no server "nope"`},
		{`import * as b from "@codemode/servers/bad"; b;`, diag.AuthenticationError, "rejected the credentials"},
		{`await import("@codemode/servers/bad");`, diag.AuthenticationError, "rejected the credentials"},
		{`import { x } from "@codemode/servers/unset"; x;`, diag.ServerNotFoundError, "CODEMODE_TEST_UNSET_TOKEN"},
		{`const m = await import("@codemode/servers/unset"); m;`, diag.ServerNotFoundError, "CODEMODE_TEST_UNSET_TOKEN"},
		// Rethrown after a look: still the import's failure.
		{`try { await import("@codemode/servers/nope") } catch (e) { console.log(e.name); throw e }`, diag.ServerNotFoundError, `there is no server "nope"`},
	} {
		res := r.Run(context.Background(), Request{Code: c.code})
		var d *diag.Diagnostic
		for i := range res.Diagnostics {
			if res.Diagnostics[i].Severity == diag.SeverityError {
				d = &res.Diagnostics[i]
				break
			}
		}
		if d == nil || d.Code != diag.ImportFailure || d.ErrorClass != c.class || !strings.Contains(d.Message, c.want) || d.Hint == "" || string(res.Result) != "null" {
			t.Errorf("%s\n%s", c.code, dump(res))
		}
	}
}
