package progress

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type recorder struct {
	mu  sync.Mutex
	got []*mcp.ProgressNotificationParams
}

func (r *recorder) send(p *mcp.ProgressNotificationParams) error {
	r.mu.Lock()
	r.got = append(r.got, p)
	r.mu.Unlock()
	return nil
}

// Over the burst, notifications are skipped until the rate allows one
// more, which says how many were; values grow throughout, skipped or not.
func TestRateLimit(t *testing.T) {
	now := time.Unix(0, 0)
	rec := &recorder{}
	r := New("t", rec.send, &Options{Rate: 1, Burst: 3, Now: func() time.Time { return now }})
	for i := 0; i < 10; i++ {
		r.Log("log", "line")
	}
	now = now.Add(time.Second)
	r.Log("log", "after a second")
	r.Close()
	r.Log("log", "after Close")
	if len(rec.got) != 4 {
		t.Fatalf("sent %d, want 4: %+v", len(rec.got), rec.got)
	}
	last := rec.got[3]
	if !strings.Contains(last.Message, "after a second") || !strings.Contains(last.Message, "7 earlier notification(s) skipped") {
		t.Errorf("message %q", last.Message)
	}
	if last.Progress != 11 {
		t.Errorf("progress %v, want 11 (every event counted)", last.Progress)
	}
}

// An upstream's progress moves the value within the call's second step,
// never past its end; one that does not grow is dropped; the end takes
// what is left.
func TestCallSteps(t *testing.T) {
	rec := &recorder{}
	r := New("t", rec.send, nil)
	c := r.CallStarted("s", "tool")
	c.Upstream(5, 10, "half")
	c.Upstream(4, 10, "backwards")
	c.Upstream(10, 10, "all")
	c.End(true)
	c.Upstream(11, 10, "late")
	u := r.CallStarted("s", "other")
	u.Upstream(1, 0, "no total")
	u.Upstream(2, 0, "")
	u.End(false)
	r.Close()
	var msgs []string
	var vals []float64
	for _, p := range rec.got {
		msgs = append(msgs, p.Message)
		vals = append(vals, p.Progress)
	}
	want := []string{"s/tool started", "s: half (5/10)", "s: all (10/10)", "s/tool done", "s/other started", "s: no total (1)", "s: (2)", "s/other failed"}
	if strings.Join(msgs, "|") != strings.Join(want, "|") {
		t.Errorf("messages %q", msgs)
	}
	for i := 1; i < len(vals); i++ {
		if vals[i] <= vals[i-1] {
			t.Errorf("values do not grow: %v", vals)
		}
	}
	if vals[3] != 2 || vals[len(vals)-1] != 4 {
		t.Errorf("a call is two steps: %v", vals)
	}
}

// A nil Reporter, and the Call it returns, do nothing.
func TestNil(t *testing.T) {
	var r *Reporter
	c := r.CallStarted("s", "t")
	c.Upstream(1, 2, "x")
	c.End(true)
	r.Log("log", "x")
	r.Close()
}
