package admit_test

import (
	"context"
	"fmt"

	"github.com/codemode-mcp/codemode/internal/admit"
)

func Example() {
	c := admit.New(&admit.Options{MaxRuns: 1, MaxQueued: 1, MemoryBytes: 96 << 20})
	ctx := admit.WithSession(context.Background(), "session-1")

	// A run holds its sandbox's memory limit for as long as it runs...
	run, err := c.Admit(ctx, 64<<20, 0)
	if err != nil {
		panic(err)
	}
	// ...and the payloads of its host calls while they are in flight, up
	// to its own limit and to what the budget has left.
	if err := run.Reserve(70 << 20); err != nil {
		fmt.Println("refused:", err.(*admit.Refusal).Limit)
	}
	if err := run.Reserve(40 << 20); err != nil {
		fmt.Println("refused:", err.(*admit.Refusal).Limit)
	}
	_ = run.Reserve(10 << 20)
	fmt.Printf("%+v\n", c.Stats())
	run.Unreserve(10 << 20)
	run.Release()
	fmt.Printf("%+v\n", c.Stats())
	// Output:
	// refused: maxMemoryBytes
	// refused: memoryBudget
	// {Running:1 Queued:0 PeakRunning:1 Reserved:77594624 PeakReserved:77594624 Refused:0}
	// {Running:0 Queued:0 PeakRunning:1 Reserved:0 PeakReserved:77594624 Refused:0}
}
