package outer

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestSealOpen(t *testing.T) {
	s := NewSealer()
	args := json.RawMessage(`{"code": "x", "limits": {"timeoutMs": 10}}`)
	sealed, err := s.Seal([]byte(`{"state":1}`), "codemode_run", args)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "state") {
		t.Errorf("the sealed state is readable: %s", sealed)
	}
	// The same call, its arguments re-encoded: opens.
	got, err := s.Open(sealed, "codemode_run", json.RawMessage(`{"limits":{"timeoutMs":10},"code":"x"}`))
	if err != nil || string(got) != `{"state":1}` {
		t.Fatalf("Open = %q, %v", got, err)
	}
	for name, open := range map[string]func() ([]byte, error){
		"other arguments": func() ([]byte, error) { return s.Open(sealed, "codemode_run", json.RawMessage(`{"code":"y"}`)) },
		"other tool":      func() ([]byte, error) { return s.Open(sealed, "execute", args) },
		"altered":         func() ([]byte, error) { return s.Open(sealed[:len(sealed)-2]+"AA", "codemode_run", args) },
		"not base64":      func() ([]byte, error) { return s.Open("!!", "codemode_run", args) },
		"short":           func() ([]byte, error) { return s.Open("AAAA", "codemode_run", args) },
		"other sealer":    func() ([]byte, error) { return NewSealer().Open(sealed, "codemode_run", args) },
	} {
		if _, err := open(); err == nil || !strings.Contains(err.Error(), "requestState") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := s.Seal(make([]byte, MaxStateBytes+1), "t", nil); !errors.Is(err, ErrStateTooLarge) {
		t.Errorf("oversize state: %v", err)
	}
}

func TestNilAndFuncChannels(t *testing.T) {
	var none *Channel
	if none.CanElicit() {
		t.Error("a nil channel can elicit")
	}
	if st, err := none.State(); st != nil || err != nil {
		t.Error("a nil channel has state")
	}
	if _, ok := none.InputRequired(); ok {
		t.Error("a nil channel requires input")
	}
	if From(context.Background()) != nil {
		t.Error("From a bare context")
	}
	ch := NewFunc(func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"echo": p.Message}}, nil
	})
	ctx := With(context.Background(), ch)
	res, err := From(ctx).Elicit(ctx, "k", &mcp.ElicitParams{Message: "hi"})
	if err != nil || res.Content["echo"] != "hi" {
		t.Fatalf("%+v %v", res, err)
	}
	if _, ok := ch.InputRequired(); ok {
		t.Error("a direct channel queued a question")
	}
	if _, err := NewFunc(nil).Elicit(ctx, "k", &mcp.ElicitParams{}); !errors.Is(err, ErrCannotAsk) {
		t.Errorf("NewFunc(nil): %v", err)
	}
}
