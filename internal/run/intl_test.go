package run

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/diag"
)

// The sandbox has no Intl. A script that reaches for it is told so, with
// what to do instead; one whose toLocaleString is given a locale gets a
// LOCALE_IGNORED warning with its result.
func TestNoIntl(t *testing.T) {
	r := newTestRunner(t, map[string]*mcp.Server{})
	res := r.Run(context.Background(), Request{Code: `globalThis.__codemode_result__ = new Intl.NumberFormat("de-DE").format(1234.5);`})
	d := res.Diagnostics
	if len(d) != 1 || d[0].Code != diag.UncaughtException || !strings.Contains(d[0].Message, "'Intl' is not defined") || !strings.Contains(d[0].Hint, "no Intl") {
		t.Errorf("%s", dump(res))
	}
	res = r.Run(context.Background(), Request{Code: `globalThis.__codemode_result__ = (1234.5).toLocaleString("de-DE");`})
	if string(res.Result) != `"1234.5"` || len(res.Diagnostics) != 1 || res.Diagnostics[0].Code != diag.LocaleIgnored {
		t.Errorf("%s", dump(res))
	}
}
