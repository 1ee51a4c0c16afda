package thoughtbox

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/codemode-mcp/codemode/internal/store"
)

// Metrics are tb.session.analyze's structural measures (docs/BUILTINS.md
// defines each). N is the number of thoughts.
type Metrics struct {
	// Linearity: the share of thoughts that are on the main line (no
	// branchId) and revise nothing. 1 for a straight chain; 0 for none.
	Linearity float64 `json:"linearity"`
	// RevisionRate: revisions / N.
	RevisionRate float64 `json:"revisionRate"`
	// Depth: the deepest branch nesting. The main line is depth 0; a
	// branch starting from a thought of depth d is at depth d+1.
	Depth int `json:"depth"`
	// Density: mean words per thought.
	Density float64 `json:"density"`
	// Convergence: 1 if the session ended (its last thought said
	// nextThoughtNeeded: false) on the main line, 0.5 if it ended on a
	// branch, 0 if it is still open.
	Convergence float64 `json:"convergence"`
}

// Analysis is tb.session.analyze's result.
type Analysis struct {
	SessionID    string         `json:"sessionId"`
	Title        string         `json:"title"`
	ThoughtCount int            `json:"thoughtCount"`
	Metrics      Metrics        `json:"metrics"`
	IsComplete   bool           `json:"isComplete"`
	Revisions    int            `json:"revisions"`
	Branches     []string       `json:"branches"`
	ByType       map[string]int `json:"byType"`
	DurationMs   int64          `json:"durationMs"`
}

func round(v float64) float64 { return math.Round(v*1000) / 1000 }

// Analyze computes a session's metrics.
func Analyze(ses store.Session, ths []store.Thought) Analysis {
	a := Analysis{SessionID: ses.ID, Title: ses.Title, ThoughtCount: len(ths), Branches: []string{}, ByType: map[string]int{}}
	for _, t := range ThoughtTypes {
		a.ByType[t] = 0
	}
	if len(ths) == 0 {
		return a
	}
	n := float64(len(ths))
	linear, words := 0, 0
	depthOf := map[int]int{} // thought number → branch depth
	branchDepth := map[string]int{}
	for _, t := range ths {
		a.ByType[t.Type]++
		if t.IsRevision {
			a.Revisions++
		}
		if t.BranchID == "" && !t.IsRevision {
			linear++
		}
		words += len(strings.Fields(t.Thought))
		d := 0
		if t.BranchID != "" {
			if bd, ok := branchDepth[t.BranchID]; ok {
				d = bd
			} else {
				d = depthOf[t.BranchFromThought] + 1
				branchDepth[t.BranchID] = d
				a.Branches = append(a.Branches, t.BranchID)
			}
		}
		depthOf[t.Number] = d
		a.Metrics.Depth = max(a.Metrics.Depth, d)
	}
	last := ths[len(ths)-1]
	a.IsComplete = !last.NextThoughtNeeded
	switch {
	case a.IsComplete && last.BranchID == "":
		a.Metrics.Convergence = 1
	case a.IsComplete:
		a.Metrics.Convergence = 0.5
	}
	a.Metrics.Linearity = round(float64(linear) / n)
	a.Metrics.RevisionRate = round(float64(a.Revisions) / n)
	a.Metrics.Density = round(float64(words) / n)
	a.DurationMs = last.CreatedAt.Sub(ths[0].CreatedAt).Milliseconds()
	return a
}

// Learning is one item tb.session.extractLearnings returns.
type Learning struct {
	Type          string  `json:"type"` // pattern, anti-pattern
	ThoughtNumber int     `json:"thoughtNumber"`
	Moment        string  `json:"moment"` // decision, pivot, insight, revision, branch
	Significance  float64 `json:"significance,omitempty"`
	Summary       string  `json:"summary"`
	// Content quotes the thought; for a revision, Before quotes the
	// thought it corrected.
	Content string `json:"content"`
	Before  string `json:"before,omitempty"`
}

// ExtractLearnings turns key moments of a session into learnings: the
// moments given, or, without any, every decision_frame (decision),
// revision and first thought of a branch. Decisions, insights and branches
// give patterns; revisions and pivots give anti-patterns; the signal is
// the session's metrics. targetTypes filters what is returned (all three
// when empty).
func ExtractLearnings(ses store.Session, ths []store.Thought, moments []keyMoment, targetTypes []string) (map[string]any, error) {
	byNum := map[int]store.Thought{}
	for _, t := range ths {
		byNum[t.Number] = t
	}
	auto := len(moments) == 0
	if auto {
		seen := map[string]bool{}
		for _, t := range ths {
			switch {
			case t.IsRevision:
				moments = append(moments, keyMoment{ThoughtNumber: t.Number, Type: "revision"})
			case t.Type == "decision_frame":
				moments = append(moments, keyMoment{ThoughtNumber: t.Number, Type: "decision"})
			case t.BranchID != "" && !seen[t.BranchID]:
				seen[t.BranchID] = true
				moments = append(moments, keyMoment{ThoughtNumber: t.Number, Type: "branch"})
			}
		}
	}
	want := func(typ string) bool { return len(targetTypes) == 0 || slices.Contains(targetTypes, typ) }
	learnings := []Learning{}
	for i, m := range moments {
		t, ok := byNum[m.ThoughtNumber]
		if !ok {
			return nil, fmt.Errorf("keyMoments[%d].thoughtNumber is %d, but the session's thoughts are numbered 1 to %d", i, m.ThoughtNumber, len(ths))
		}
		typ := "pattern"
		if m.Type == "revision" || m.Type == "pivot" {
			typ = "anti-pattern"
		}
		if !want(typ) {
			continue
		}
		l := Learning{Type: typ, ThoughtNumber: t.Number, Moment: m.Type, Significance: m.Significance, Summary: m.Summary, Content: t.Thought}
		if l.Summary == "" {
			l.Summary = defaultSummary(m.Type, t)
		}
		if t.RevisesThought != 0 {
			l.Before = byNum[t.RevisesThought].Thought
		}
		learnings = append(learnings, l)
	}
	out := map[string]any{"sessionId": ses.ID, "title": ses.Title, "keyMomentsFound": auto, "learnings": learnings}
	if want("signal") {
		a := Analyze(ses, ths)
		out["signal"] = map[string]any{"isComplete": a.IsComplete, "thoughtCount": a.ThoughtCount, "metrics": a.Metrics, "revisions": a.Revisions, "branches": len(a.Branches)}
	}
	return out, nil
}

func defaultSummary(moment string, t store.Thought) string {
	switch moment {
	case "revision":
		return fmt.Sprintf("thought %d corrected thought %d: %s", t.Number, t.RevisesThought, clip(t.Thought, 120))
	case "decision":
		p := payload(t)
		var chosen []string
		for _, o := range p.Options {
			if o.Selected {
				chosen = append(chosen, o.Label)
			}
		}
		if len(chosen) > 0 {
			return "decided: " + strings.Join(chosen, "; ")
		}
		return "weighed " + fmt.Sprint(len(p.Options)) + " options: " + clip(t.Thought, 120)
	case "branch":
		return fmt.Sprintf("explored branch %s from thought %d: %s", t.BranchID, t.BranchFromThought, clip(t.Thought, 120))
	}
	return clip(t.Thought, 160)
}
