package thoughtbox

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/codemode-mcp/codemode/internal/store"
)

// Markdown renders a session for people: a heading, a line of facts, then
// one section per thought with its payload as lists.
func Markdown(ses store.Session, ths []store.Thought) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", ses.Title)
	fmt.Fprintf(&b, "- Session: `%s`\n- Status: %s, %d thought(s)\n- Created: %s; updated: %s\n", ses.ID, ses.Status, ses.ThoughtCount, stamp(ses.CreatedAt), stamp(ses.UpdatedAt))
	if len(ses.Tags) > 0 {
		fmt.Fprintf(&b, "- Tags: %s\n", strings.Join(ses.Tags, ", "))
	}
	for _, t := range ths {
		fmt.Fprintf(&b, "\n## %d. %s", t.Number, t.Type)
		var notes []string
		if t.Confidence != "" {
			notes = append(notes, "confidence "+t.Confidence)
		}
		if t.RevisesThought != 0 {
			notes = append(notes, fmt.Sprintf("revises thought %d", t.RevisesThought))
		}
		if t.BranchID != "" {
			n := "branch " + t.BranchID
			if t.BranchFromThought != 0 {
				n += fmt.Sprintf(" from thought %d", t.BranchFromThought)
			}
			notes = append(notes, n)
		}
		if !t.NextThoughtNeeded {
			notes = append(notes, "final")
		}
		if len(notes) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(notes, "; "))
		}
		fmt.Fprintf(&b, "\n\n%s\n", t.Thought)
		p := payload(t)
		if p.Options != nil {
			b.WriteString("\nOptions:\n")
			for _, o := range p.Options {
				mark := " "
				if o.Selected {
					mark = "x"
				}
				fmt.Fprintf(&b, "- [%s] %s", mark, o.Label)
				if o.Reason != "" {
					fmt.Fprintf(&b, " — %s", o.Reason)
				}
				b.WriteByte('\n')
			}
		}
		if a := p.ActionResult; a != nil {
			fmt.Fprintf(&b, "\nAction: %s on %s: %s (reversible: %s)", a.Tool, a.Target, okWord(a.Success), a.Reversible)
			if len(a.SideEffects) > 0 {
				fmt.Fprintf(&b, "; side effects: %s", strings.Join(a.SideEffects, ", "))
			}
			b.WriteByte('\n')
		}
		if be := p.Beliefs; be != nil {
			b.WriteString("\nBeliefs:\n")
			for _, e := range be.Entities {
				fmt.Fprintf(&b, "- %s: %s\n", e.Name, e.State)
			}
			for _, c := range be.Constraints {
				fmt.Fprintf(&b, "- constraint: %s\n", c)
			}
			for _, r := range be.Risks {
				fmt.Fprintf(&b, "- risk: %s\n", r)
			}
		}
		if a := p.AssumptionChange; a != nil {
			fmt.Fprintf(&b, "\nAssumption: %q %s → %s", a.Text, a.OldStatus, a.NewStatus)
			if a.Trigger != "" {
				fmt.Fprintf(&b, " (trigger: %s)", a.Trigger)
			}
			b.WriteByte('\n')
		}
		if c := p.ContextData; c != nil {
			j, _ := json.Marshal(c)
			fmt.Fprintf(&b, "\nContext: `%s`\n", j)
		}
		if pr := p.ProgressData; pr != nil {
			fmt.Fprintf(&b, "\nProgress: %s — %s", pr.Task, pr.Status)
			if pr.Note != "" {
				fmt.Fprintf(&b, " (%s)", pr.Note)
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func okWord(ok bool) string {
	if ok {
		return "succeeded"
	}
	return "failed"
}

// payloadFields are a thought's stored payload, decoded.
type payloadFields struct {
	Options          []option          `json:"options"`
	ActionResult     *actionResult     `json:"actionResult"`
	Beliefs          *beliefs          `json:"beliefs"`
	AssumptionChange *assumptionChange `json:"assumptionChange"`
	ContextData      *contextData      `json:"contextData"`
	ProgressData     *progressData     `json:"progressData"`
}

func payload(t store.Thought) payloadFields {
	var p payloadFields
	if len(t.Payload) > 0 {
		json.Unmarshal(t.Payload, &p)
	}
	return p
}

// typeLetters are the cipher's one-letter thought types.
var typeLetters = map[string]string{"reasoning": "R", "decision_frame": "D", "action_report": "A", "belief_snapshot": "B",
	"assumption_update": "U", "context_snapshot": "C", "progress": "P"}

// Cipher renders a session in the cipher notation: a header line, then
// one line per thought. Grammar (docs/BUILTINS.md):
//
//	header  = "TB1" SP id SP quoted-title *(SP "#" tag) SP "status=" status SP "n=" count
//	thought = number type [ "." conf ] [ "^" revised ] [ "@" branch [ "<" from ] ] [ "$" ] SP text [ SP payload ]
//	type    = R | D | A | B | U | C | P      (reasoning, decision_frame, action_report,
//	                                           belief_snapshot, assumption_update, context_snapshot, progress)
//	conf    = h | m | l;  "$" marks a final thought (nextThoughtNeeded: false)
//	payload = "{" ... "}": D +label/-label (selected or not) separated by " | ";
//	          A ok|fail tool>target rev=yes|no|partial; B name=state; ...; U "text" old>new;
//	          P task=status; C key=value, ...
//
// Text is on one line: newlines become " / ".
func Cipher(ses store.Session, ths []store.Thought) string {
	var b strings.Builder
	fmt.Fprintf(&b, "TB1 %s %q", ses.ID, ses.Title)
	for _, t := range ses.Tags {
		fmt.Fprintf(&b, " #%s", strings.ReplaceAll(t, " ", "_"))
	}
	fmt.Fprintf(&b, " status=%s n=%d\n", ses.Status, ses.ThoughtCount)
	for _, t := range ths {
		fmt.Fprintf(&b, "%d%s", t.Number, typeLetters[t.Type])
		if t.Confidence != "" {
			fmt.Fprintf(&b, ".%c", t.Confidence[0])
		}
		if t.RevisesThought != 0 {
			fmt.Fprintf(&b, "^%d", t.RevisesThought)
		}
		if t.BranchID != "" {
			fmt.Fprintf(&b, "@%s", strings.ReplaceAll(t.BranchID, " ", "_"))
			if t.BranchFromThought != 0 {
				fmt.Fprintf(&b, "<%d", t.BranchFromThought)
			}
		}
		if !t.NextThoughtNeeded {
			b.WriteByte('$')
		}
		b.WriteByte(' ')
		b.WriteString(oneLine(t.Thought))
		if p := cipherPayload(payload(t)); p != "" {
			b.WriteString(" {")
			b.WriteString(p)
			b.WriteByte('}')
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\r\n", "\n")
	return strings.ReplaceAll(s, "\n", " / ")
}

func cipherPayload(p payloadFields) string {
	var parts []string
	for _, o := range p.Options {
		sign := "-"
		if o.Selected {
			sign = "+"
		}
		parts = append(parts, sign+oneLine(o.Label))
	}
	if a := p.ActionResult; a != nil {
		ok := "fail"
		if a.Success {
			ok = "ok"
		}
		parts = append(parts, fmt.Sprintf("%s %s>%s rev=%s", ok, a.Tool, a.Target, a.Reversible))
	}
	if be := p.Beliefs; be != nil {
		for _, e := range be.Entities {
			parts = append(parts, e.Name+"="+oneLine(e.State))
		}
	}
	if a := p.AssumptionChange; a != nil {
		parts = append(parts, fmt.Sprintf("%q %s>%s", oneLine(a.Text), a.OldStatus, a.NewStatus))
	}
	if pr := p.ProgressData; pr != nil {
		parts = append(parts, oneLine(pr.Task)+"="+pr.Status)
	}
	if c := p.ContextData; c != nil {
		if c.ModelID != "" {
			parts = append(parts, "model="+c.ModelID)
		}
		if len(c.ToolsAvailable) > 0 {
			parts = append(parts, fmt.Sprintf("tools=%d", len(c.ToolsAvailable)))
		}
	}
	return strings.Join(parts, " | ")
}
