package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// unescapeHTML gives the same JSON value, without \u003c, \u003e or \u0026
// escapes, whatever surrounds them: an escaped backslash followed by the
// text "u003c" stays as it is.
func TestUnescapeHTML(t *testing.T) {
	cases := []string{
		"<b>&amp;</b>", `\u003c`, `\\u003c`, `\\\u003c`, `"\u003c"`, "\u2028\u2029<>", "a\\", `\`, "<\"&\\>", "",
	}
	alphabet := []string{"<", ">", "&", `\`, `"`, "u", "0", "3", "c", "e", "2", "6", "x", "\n", "\u2028", "é"}
	for range 2000 {
		var b strings.Builder
		for range rand.IntN(12) {
			b.WriteString(alphabet[rand.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		v := map[string]any{"text": s, s: []any{s, 1}}
		escaped, _ := json.Marshal(v)
		// The oracle: encoding/json itself, told not to escape.
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.Encode(v)
		if got := unescapeHTML(escaped); string(got) != strings.TrimSuffix(want.String(), "\n") {
			t.Fatalf("%q:\n got %s\nwant %s", s, got, want.String())
		}
	}
}

// A list_changed notification reaches a session only once its client has
// initialized it.
func TestNoListChangedBeforeInitialize(t *testing.T) {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	var sent []string
	h := notInitializedYet(func(_ context.Context, method string, _ mcp.Request) (mcp.Result, error) {
		sent = append(sent, method)
		return nil, nil
	})
	notify := func() {
		req := &mcp.ServerRequest[*mcp.ToolListChangedParams]{Session: ss, Params: &mcp.ToolListChangedParams{}}
		if _, err := h(ctx, "notifications/tools/list_changed", req); err != nil {
			t.Fatal(err)
		}
	}
	notify()
	if len(sent) != 0 {
		t.Fatalf("sent before initialize: %v", sent)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	notify()
	if len(sent) != 1 {
		t.Fatalf("after initialize: %v", sent)
	}
}
