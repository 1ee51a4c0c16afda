package serve

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"

	"github.com/codemode-mcp/codemode/internal/catalog"
)

// The emceepee surface takes regular expressions from the model:
// codemode_search's query and server, and the patterns of the mcp global's
// list functions. They are compiled by Go's regexp package (RE2), whose
// matching time is linear in the text times the size of the pattern: no
// query can backtrack exponentially, as `^(\w+\s?)*\.$` did in the
// ECMAScript engine used before (its timeout on every text: figures in
// docs/BENCHMARKS.md, "Secrets and search").
//
// What that costs users of emceepee's ECMAScript syntax: lookahead and
// lookbehind ((?=…), (?!…), (?<=…), (?<!…)) and backreferences (\1,
// \k<name>), which no linear-time engine can offer; a query with them is
// refused with an error saying so. \uXXXX and \u{X…} escapes are accepted
// (rewritten as RE2's \x{…}); matching is case-insensitive, as emceepee's.
//
// One search is bounded as a whole (searchBudget): by work (bytes matched
// times the pattern's size), by time, and by the request's context, which
// the SDK cancels when the client sends notifications/cancelled or goes
// away. A search that runs out returns what it found so far, saying so.

const (
	// maxPatternBytes bounds a pattern; a useful one is a few words.
	maxPatternBytes = 1000
	// maxMatchBytes is how much of each name, URI or description is
	// matched: a server's 10 MB description must not use up the budget
	// of everything else.
	maxMatchBytes = 16 << 10
	// searchMaxWork bounds one search, in compiled-pattern instructions
	// times bytes matched (the most steps RE2 may take): 10,000 tools
	// with 1 KiB of text each under a 25-instruction pattern.
	searchMaxWork = 1 << 28
	// searchTimeBudget bounds one search's time, connections and resource
	// listings included.
	searchTimeBudget = 10 * time.Second
)

// searchRE is a compiled pattern and its cost per byte matched.
type searchRE struct {
	re   *regexp.Regexp
	cost int64 // instructions of the compiled program
}

// compileSearch compiles a model-supplied pattern; an empty one matches
// everything (nil).
func compileSearch(p string) (*searchRE, error) {
	if p == "" {
		return nil, nil
	}
	if len(p) > maxPatternBytes {
		return nil, fmt.Errorf("the regular expression is %d bytes; at most %d are accepted: search with a shorter pattern", len(p), maxPatternBytes)
	}
	src := "(?i)" + rewriteUnicodeEscapes(p)
	re, err := regexp.Compile(src)
	if err != nil {
		msg := fmt.Sprintf("invalid regular expression %q: %v", p, err)
		if strings.Contains(p, "(?=") || strings.Contains(p, "(?!") || strings.Contains(p, "(?<=") || strings.Contains(p, "(?<!") || hasBackreference(p) {
			msg += "; patterns are RE2 (linear time): lookahead, lookbehind and backreferences are not supported"
		}
		return nil, errors.New(msg)
	}
	parsed, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil, err
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, err
	}
	return &searchRE{re: re, cost: int64(len(prog.Inst))}, nil
}

// rewriteUnicodeEscapes turns ECMAScript's \uXXXX and \u{X…} into RE2's
// \x{…}, leaving everything else (an escaped backslash before a "u"
// included) as it is.
func rewriteUnicodeEscapes(p string) string {
	if !strings.Contains(p, `\u`) {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '\\' || i+1 >= len(p) {
			b.WriteByte(p[i])
			continue
		}
		if p[i+1] == 'u' {
			if i+6 <= len(p) && isHex(p[i+2:i+6]) {
				b.WriteString(`\x{` + p[i+2:i+6] + `}`)
				i += 5
				continue
			}
			if i+2 < len(p) && p[i+2] == '{' {
				if end := strings.IndexByte(p[i+3:], '}'); end > 0 && isHex(p[i+3:i+3+end]) {
					b.WriteString(`\x{` + p[i+3:i+3+end] + `}`)
					i += 3 + end
					continue
				}
			}
		}
		b.WriteString(p[i : i+2])
		i++
	}
	return b.String()
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return s != ""
}

func hasBackreference(p string) bool {
	for i := 0; i+1 < len(p); i++ {
		if p[i] == '\\' {
			if c := p[i+1]; c >= '1' && c <= '9' || c == 'k' {
				return true
			}
			i++
		}
	}
	return false
}

// match reports whether the pattern matches any of texts (each cut to
// maxMatchBytes), charging b before each match. A nil pattern matches
// everything for free. An error means the search must stop.
func (r *searchRE) match(b *catalog.Budget, texts ...string) (bool, error) {
	if r == nil {
		return true, nil
	}
	for _, t := range texts {
		if len(t) > maxMatchBytes {
			t = t[:maxMatchBytes]
		}
		if err := b.Spend(int64(len(t)+1) * r.cost); err != nil {
			return false, err
		}
		if r.re.MatchString(t) {
			return true, nil
		}
	}
	return false, nil
}

// searchBudget is the budget of one search: searchMaxWork, and ctx (which
// the caller bounds by searchTimeBudget).
func (s *Server) searchBudget(ctx context.Context) *catalog.Budget {
	return catalog.NewBudget(ctx, searchMaxWork, &catalog.BudgetOptions{OnSpend: s.searchHook})
}

// stoppedSearch says why a search stopped early, for the model.
func stoppedSearch(err error, b *catalog.Budget) string {
	switch {
	case errors.Is(err, catalog.ErrBudgetSpent):
		return fmt.Sprintf("the search stopped early, the results are partial: matching this pattern against every name and description needs more work than one search may do (%d pattern steps); use a simpler or more selective pattern, or narrow it with \"server\" or \"type\"", b.Max())
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("the search stopped early after %s, the results are partial: narrow it with \"server\" or \"type\"", searchTimeBudget)
	default:
		return "the search was cancelled"
	}
}
