package admit

import (
	"context"
	"testing"
)

// BenchmarkAdmitRelease is what admission adds to every run: a ticket taken
// and given back, with a result reserved and released in between.
func BenchmarkAdmitRelease(b *testing.B) {
	for _, limitHeap := range []bool{false, true} {
		name := "plain"
		if limitHeap {
			name = "limitGoHeap"
		}
		b.Run(name, func(b *testing.B) {
			c := New(&Options{MaxRuns: 16, MaxQueued: 64, MemoryBytes: 4 << 30, LimitGoHeap: limitHeap})
			ctx := WithSession(context.Background(), "s")
			b.ReportAllocs()
			for b.Loop() {
				t, err := c.Admit(ctx, 64<<20, 0)
				if err != nil {
					b.Fatal(err)
				}
				t.Reserve(1 << 10)
				t.Unreserve(1 << 10)
				t.Release()
			}
		})
	}
}
