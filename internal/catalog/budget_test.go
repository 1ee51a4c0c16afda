package catalog

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/upstream"
)

func manyTools(n int) *Server {
	tools := make([]*mcp.Tool, n)
	for i := range tools {
		tools[i] = &mcp.Tool{Name: fmt.Sprintf("get_item_%05d", i), Description: "Returns one item of the inventory by its number."}
	}
	return FromSnapshot(&upstream.Snapshot{ServerID: "big", Tools: tools})
}

func TestBudget(t *testing.T) {
	b := NewBudget(context.Background(), 10, nil)
	if b.Spend(4) != nil || b.Spend(6) != nil || b.Used() != 10 {
		t.Fatalf("spent %d", b.Used())
	}
	if err := b.Spend(1); !errors.Is(err, ErrBudgetSpent) || b.Used() != 10 || b.Spend(0) == nil {
		t.Fatalf("over the budget: %v, used %d", err, b.Used())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := NewBudget(ctx, 10, nil).Spend(1); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// searchTools over a big catalog stops as soon as its context ends (the
// run ended, its deadline passed), without scoring the rest.
func TestSearchWithinStopsWhenCancelled(t *testing.T) {
	s := manyTools(10_000)
	for _, q := range []string{"inventory item number", "get"} { // ranked, and by name (stop words)
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		b := NewBudget(ctx, MaxSearchWork, &BudgetOptions{OnSpend: func(context.Context, int64) {
			if calls++; calls == 100 {
				cancel()
			}
		}})
		hits, err := SearchWithin(b, []*Server{s}, q, 10)
		if !errors.Is(err, context.Canceled) || hits != nil || calls != 100 {
			t.Errorf("%q: %d hits, %v after %d steps", q, len(hits), err, calls)
		}
		cancel()
	}
}

// A query with many terms over many tools stops at the work budget.
func TestSearchWithinWorkBound(t *testing.T) {
	s := manyTools(1000)
	b := NewBudget(context.Background(), 5000, nil)
	if _, err := SearchWithin(b, []*Server{s}, "inventory item number returns one", 10); !errors.Is(err, ErrBudgetSpent) || b.Used() > 5000 {
		t.Fatalf("%v after %d", err, b.Used())
	}
	// Within MaxSearchWork, the same search completes.
	hits, err := SearchWithin(NewBudget(context.Background(), MaxSearchWork, nil), []*Server{s}, "inventory item number returns one", 10)
	if err != nil || len(hits) != 10 {
		t.Fatalf("%d hits, %v", len(hits), err)
	}
}
