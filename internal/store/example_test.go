package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/codemode-mcp/codemode/internal/store"
)

func Example() {
	dir, _ := os.MkdirTemp("", "codemode-store-example-")
	defer os.RemoveAll(dir)
	s := store.New(&store.Options{Dir: dir}) // or Locate(flag, os.Getenv)
	defer s.Close()
	ctx := context.Background()

	// Each feature has a small typed accessor; data is per namespace.
	s.KV().Set(ctx, "default", "greeting", json.RawMessage(`{"hello":"world"}`), 0, store.KVLimits{MaxValueBytes: 1 << 20})
	e, found, _ := s.KV().Get(ctx, "default", "greeting")
	fmt.Println(found, string(e.Value))

	ses, _ := s.Thoughts().CreateSession(ctx, "default", "Retry bug", []string{"bug"})
	th, _, _ := s.Thoughts().AppendThought(ctx, "default", ses.ID, store.Append{Thought: store.Thought{
		Thought: "The backoff multiplier resets on partial success.", Type: "reasoning", NextThoughtNeeded: true}})
	hits, _ := s.Thoughts().Search(ctx, "default", "resetting multipliers", 10)
	fmt.Println(th.Number, len(hits))
	// Output:
	// true {"hello":"world"}
	// 1 1
}
