package run

import (
	"context"
	"encoding/json"
	"testing"
)

func BenchmarkHandlerTool(b *testing.B) {
	r := directRunner(b)
	r.cfg.DefaultLimits.MaxToolCalls = 1 << 30
	v := newView(r, r.cfg.DefaultLimits, Extra{})
	ctx := context.Background()
	payload := json.RawMessage(`{"a":1,"b":2}`)
	op := ToolOp("calc", "add")
	if _, err := v.handle(ctx, op, payload); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		v.handle(ctx, op, payload)
	}
}
