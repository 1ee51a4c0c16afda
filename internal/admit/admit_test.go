package admit

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// admitAsync starts Admit on its own goroutine; the channel gets its
// outcome.
type outcome struct {
	t   *Ticket
	err error
}

func admitAsync(ctx context.Context, c *Controller, memory int64, maxWait time.Duration) chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		t, err := c.Admit(ctx, memory, maxWait)
		ch <- outcome{t, err}
	}()
	return ch
}

// pending reports whether ch has no outcome yet; call after synctest.Wait.
func pending(ch chan outcome) bool { return len(ch) == 0 }

func mustAdmit(t *testing.T, c *Controller, ctx context.Context, memory int64) *Ticket {
	t.Helper()
	tk, err := c.Admit(ctx, memory, 0)
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	return tk
}

func refusal(t *testing.T, err error, limit string) *Refusal {
	t.Helper()
	var r *Refusal
	if !errors.As(err, &r) || r.Limit != limit {
		t.Fatalf("err = %v, want a refusal of limit %q", err, limit)
	}
	if r.Message == "" || r.Hint == "" {
		t.Errorf("refusal without a message or hint: %+v", r)
	}
	return r
}

func TestSlotsAreBoundedAndHandedOnInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(&Options{MaxRuns: 2, MaxRunsPerSession: 10, MaxQueued: 10, MemoryBytes: 1 << 30})
		ctx := context.Background()
		a := mustAdmit(t, c, ctx, 1)
		b := mustAdmit(t, c, ctx, 1)
		third := admitAsync(ctx, c, 1, 0)
		synctest.Wait()
		fourth := admitAsync(ctx, c, 1, 0)
		synctest.Wait()
		if !pending(third) || !pending(fourth) {
			t.Fatal("a third run started while two were running (MaxRuns 2)")
		}
		if s := c.Stats(); s.Running != 2 || s.Queued != 2 {
			t.Fatalf("stats = %+v", s)
		}
		a.Release()
		a.Release() // idempotent
		synctest.Wait()
		if pending(third) || !pending(fourth) {
			t.Fatal("the first waiter did not get the slot that was freed, or the second got it")
		}
		b.Release()
		synctest.Wait()
		o3, o4 := <-third, <-fourth
		if o3.err != nil || o4.err != nil {
			t.Fatal(o3.err, o4.err)
		}
		o3.t.Release()
		o4.t.Release()
		if s := c.Stats(); s.Running != 0 || s.Reserved != 0 || s.PeakRunning != 2 {
			t.Fatalf("stats after every release = %+v", s)
		}
	})
}

// A session at its own bound waits without holding up other sessions.
func TestSessionBoundDoesNotBlockOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(&Options{MaxRuns: 3, MaxRunsPerSession: 1, MaxQueued: 10, MemoryBytes: 1 << 30})
		a := WithSession(context.Background(), "A")
		b := WithSession(context.Background(), "B")
		a1 := mustAdmit(t, c, a, 1)
		a2 := admitAsync(a, c, 1, 0)
		synctest.Wait()
		if !pending(a2) {
			t.Fatal("session A ran two runs at once (MaxRunsPerSession 1)")
		}
		b1 := admitAsync(b, c, 1, 0)
		synctest.Wait()
		if pending(b1) {
			t.Fatal("session B waited behind session A's queued run")
		}
		a1.Release()
		synctest.Wait()
		o := <-a2
		if o.err != nil {
			t.Fatal(o.err)
		}
		o.t.Release()
		(<-b1).t.Release()
	})
}

func TestFullQueueRefusesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(&Options{MaxRuns: 1, MaxRunsPerSession: 1, MaxQueued: 1, MemoryBytes: 1 << 30})
		ctx := context.Background()
		first := mustAdmit(t, c, ctx, 1)
		second := admitAsync(ctx, c, 1, 0)
		synctest.Wait()
		_, err := c.Admit(ctx, 1, 0)
		r := refusal(t, err, LimitConcurrency)
		if r.Value != 1 {
			t.Errorf("value = %d, want MaxRuns", r.Value)
		}
		if s := c.Stats(); s.Refused != 1 || s.Queued != 1 {
			t.Errorf("stats = %+v", s)
		}
		first.Release()
		synctest.Wait()
		(<-second).t.Release()
	})
}

// A run waits at most maxWait; then it is refused and leaves the queue.
func TestWaitIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(&Options{MaxRuns: 1, MaxQueued: 10, MemoryBytes: 1 << 30})
		ctx := context.Background()
		first := mustAdmit(t, c, ctx, 1)
		start := time.Now()
		_, err := c.Admit(ctx, 1, 5*time.Second)
		refusal(t, err, LimitConcurrency)
		if waited := time.Since(start); waited != 5*time.Second {
			t.Errorf("waited %v, want maxWait", waited)
		}
		if s := c.Stats(); s.Queued != 0 {
			t.Errorf("the refused run is still queued: %+v", s)
		}
		first.Release()
		mustAdmit(t, c, ctx, 1).Release()
	})
}

func TestCancelledWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(&Options{MaxRuns: 1, MaxQueued: 10, MemoryBytes: 1 << 30})
		first := mustAdmit(t, c, context.Background(), 1)
		ctx, cancel := context.WithCancel(context.Background())
		ch := admitAsync(ctx, c, 1, 0)
		synctest.Wait()
		cancel()
		synctest.Wait()
		if o := <-ch; !errors.Is(o.err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", o.err)
		}
		if s := c.Stats(); s.Queued != 0 || s.Running != 1 || s.Refused != 0 {
			t.Errorf("stats = %+v", s)
		}
		first.Release()
	})
}

// The budget holds the memory limits of running sandboxes and the payloads
// in flight; a run waits for room, a payload is refused at once.
func TestMemoryBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(&Options{MaxRuns: 10, MaxRunsPerSession: 10, MaxQueued: 10, MemoryBytes: 100})
		ctx := context.Background()
		big := mustAdmit(t, c, ctx, 60)
		refusal(t, big.Reserve(61), "maxMemoryBytes") // more than the run's own limit
		second := admitAsync(ctx, c, 60, 0)
		synctest.Wait()
		if !pending(second) {
			t.Fatal("two runs of 60 bytes started under a budget of 100")
		}
		// A small run behind the big waiter keeps its place in line.
		small := admitAsync(ctx, c, 10, 0)
		synctest.Wait()
		if !pending(small) {
			t.Fatal("a small run overtook a waiting big one")
		}
		if err := big.Reserve(30); err != nil {
			t.Fatalf("a payload that fits was refused: %v", err)
		}
		refusal(t, big.Reserve(20), LimitMemory)
		big.Unreserve(30)
		if err := big.Reserve(40); err != nil {
			t.Fatalf("freed room was not reusable: %v", err)
		}
		big.Release() // also returns the 40 still held
		synctest.Wait()
		o2, o3 := <-second, <-small
		if o2.err != nil || o3.err != nil {
			t.Fatal(o2.err, o3.err)
		}
		if s := c.Stats(); s.Reserved != 70 || s.PeakReserved != 100 {
			t.Errorf("stats = %+v", s)
		}
		o2.t.Release()
		o3.t.Release()
		if err := o3.t.Reserve(1); err == nil {
			t.Error("a released ticket reserved payload")
		}
		if s := c.Stats(); s.Reserved != 0 {
			t.Errorf("reserved after every release = %d", s.Reserved)
		}
	})
}

func TestRunLargerThanTheBudget(t *testing.T) {
	c := New(&Options{MemoryBytes: 100})
	_, err := c.Admit(context.Background(), 101, 0)
	if r := refusal(t, err, LimitMemory); r.Value != 100 {
		t.Errorf("value = %d", r.Value)
	}
}

// Under any interleaving the bounds hold: never more runs than MaxRuns, never
// more reserved than the budget, and every run is admitted or refused.
func TestBoundsHoldUnderContention(t *testing.T) {
	const budget = 1000
	c := New(&Options{MaxRuns: 4, MaxRunsPerSession: 2, MaxQueued: 1000, MemoryBytes: budget})
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted, refused := 0, 0
	for i := range 200 {
		wg.Go(func() {
			ctx := WithSession(context.Background(), i%5)
			tk, err := c.Admit(ctx, int64(50+rand.IntN(200)), 0)
			mu.Lock()
			if err != nil {
				refused++
				mu.Unlock()
				return
			}
			admitted++
			mu.Unlock()
			for range 10 {
				n := int64(rand.IntN(300))
				if tk.Reserve(n) == nil {
					tk.Unreserve(n)
				}
			}
			tk.Release()
		})
	}
	wg.Wait()
	s := c.Stats()
	if s.PeakReserved > budget || s.PeakRunning > 4 || s.Running != 0 || s.Reserved != 0 || s.Queued != 0 {
		t.Fatalf("stats = %+v", s)
	}
	if admitted+refused != 200 || refused != 0 {
		t.Errorf("admitted %d, refused %d of 200", admitted, refused)
	}
}
