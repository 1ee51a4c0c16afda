package catalog

import (
	"context"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/kljensen/snowball/english"

	"github.com/codemode-mcp/codemode/internal/schema"
)

// Search ranks tools for a free-text query with BM25F over three fields:
// the tool name (split on '-', '_', '.', and camelCase), its description,
// and its parameter names and descriptions. Terms are lower-cased, stemmed
// (Snowball English) and stop words dropped; a few everyday synonyms widen
// the query ("add" also finds "sum"). Statistics are computed over the
// servers searched, so scores are comparable across servers.

// Field weights: a word in the name says more than one in the description.
const (
	weightName   = 3.0
	weightDesc   = 1.0
	weightParams = 1.5
	bm25K1       = 1.2
	bm25B        = 0.75
)

type doc struct {
	tool   *Tool
	terms  map[string]float64 // weighted term frequency
	length float64            // weighted length
	name   string             // lower-cased name, for exact-match boosts
	export string
	words  string // " "+the name's words+" ", for searchNames
}

type index struct {
	docs []doc
}

func (s *Server) searchIndex() *index {
	s.indexOnce.Do(func() {
		ix := &index{docs: make([]doc, len(s.Tools))}
		for i, t := range s.Tools {
			d := doc{tool: t, terms: map[string]float64{}, name: strings.ToLower(t.Name), export: strings.ToLower(t.ExportName),
				words: " " + strings.Join(words(t.Name), " ") + " "}
			add := func(text string, w float64) {
				for _, term := range Terms(text) {
					d.terms[term] += w
					d.length += w
				}
			}
			add(t.Name, weightName)
			if t.Tool.Title != "" {
				add(t.Tool.Title, weightName/2)
			}
			add(t.Tool.Description, weightDesc)
			for _, p := range paramTexts(t.Tool.InputSchema) {
				add(p, weightParams)
			}
			ix.docs[i] = d
		}
		s.index = ix
	})
	return s.index
}

// paramTexts returns the top-level property names of an input schema.
func paramTexts(s any) []string {
	props, _ := schema.Keyword(s, "properties").(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Hit is one search result.
type Hit struct {
	Server *Server
	Tool   *Tool
	Score  float64
}

// MaxSearchWork is the most work SearchWithin does for one query, in term
// lookups: a query of 100 terms over 100,000 tools.
const MaxSearchWork = 20_000_000

// Search returns the tools of servers that match query, best first, at most
// limit of them (all when limit <= 0). Ties keep server order, then tool
// name order, so results are deterministic. It is SearchWithin with a
// budget of MaxSearchWork and no context.
func Search(servers []*Server, query string, limit int) []Hit {
	hits, _ := SearchWithin(NewBudget(context.Background(), MaxSearchWork, nil), servers, query, limit)
	return hits
}

// SearchWithin is Search bounded by b: it charges b for every tool it
// scores (one unit per query term, twice) and stops with b's error, and no
// hits, when b refuses. Building a server's index, once per snapshot, is
// not charged: it is linear in the catalog and shared by every search.
func SearchWithin(b *Budget, servers []*Server, query string, limit int) ([]Hit, error) {
	qterms := queryTerms(query)
	if len(qterms) == 0 {
		return searchNames(b, servers, query, limit)
	}
	type ref struct {
		s *Server
		d *doc
	}
	var docs []ref
	var totalLen float64
	df := map[string]float64{}
	perDoc := 2*int64(len(qterms)) + 1 // the df pass and the scoring pass
	for _, s := range servers {
		ix := s.searchIndex()
		for i := range ix.docs {
			if err := b.Spend(perDoc); err != nil {
				return nil, err
			}
			d := &ix.docs[i]
			docs = append(docs, ref{s, d})
			totalLen += d.length
			for t := range qterms {
				if d.terms[t] > 0 {
					df[t]++
				}
			}
		}
	}
	if len(docs) == 0 {
		return nil, nil
	}
	n := float64(len(docs))
	avg := totalLen / n
	q := strings.ToLower(strings.TrimSpace(query))
	var hits []Hit
	for _, r := range docs {
		var score float64
		for t, qw := range qterms {
			tf := r.d.terms[t]
			if tf == 0 {
				continue
			}
			idf := math.Log(1 + (n-df[t]+0.5)/(df[t]+0.5))
			score += qw * idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*r.d.length/avg))
		}
		if score == 0 {
			continue
		}
		if q == r.d.name || q == r.d.export {
			score *= 3
		}
		hits = append(hits, Hit{Server: r.s, Tool: r.d.tool, Score: score})
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}

// searchNames answers a query made only of stop words ("get", "list all"),
// which ranking cannot use, with the tools whose names contain it: such a
// query is almost always the start of tool names ("get" finds get-sum).
func searchNames(b *Budget, servers []*Server, query string, limit int) ([]Hit, error) {
	ws := words(query)
	if len(ws) == 0 {
		return nil, nil
	}
	q := " " + strings.Join(ws, " ") + " "
	var hits []Hit
	for _, s := range servers {
		for _, d := range s.searchIndex().docs {
			if err := b.Spend(1 + int64(len(d.words)+len(q))/64); err != nil {
				return nil, err
			}
			if strings.Contains(d.words, q) {
				hits = append(hits, Hit{Server: s, Tool: d.tool, Score: 1})
			}
		}
	}
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}

// queryTerms returns the query's terms with weights: 1 for the words the
// agent wrote, less for synonyms it did not.
func queryTerms(query string) map[string]float64 {
	out := map[string]float64{}
	for _, w := range words(query) {
		if stopWords[w] {
			continue
		}
		out[stem(w)] = 1
		for _, syn := range synonyms[w] {
			if s := stem(syn); out[s] == 0 {
				out[s] = 0.6
			}
		}
	}
	return out
}

// Terms splits text into index terms: words split at non-alphanumerics and
// camelCase boundaries, lower-cased, stop words removed, stemmed.
func Terms(text string) []string {
	var out []string
	for _, w := range words(text) {
		if stopWords[w] {
			continue
		}
		out = append(out, stem(w))
	}
	return out
}

// words splits at anything that is not a letter or digit, and at the
// boundaries of camelCase and letter-digit runs ("getHTTPResponse2" →
// get, http, response, 2), lower-casing each word.
func words(text string) []string {
	var out []string
	rs := []rune(text)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, strings.ToLower(string(rs[start:end])))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := rs[i-1]
		switch {
		case unicode.IsLower(prev) && unicode.IsUpper(r):
			flush(i)
			start = i
		case unicode.IsUpper(prev) && unicode.IsUpper(r) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
			flush(i)
			start = i
		case unicode.IsDigit(prev) != unicode.IsDigit(r):
			flush(i)
			start = i
		}
	}
	flush(len(rs))
	return out
}

func stem(w string) string {
	if len(w) < 3 {
		return w
	}
	return english.Stem(w, false)
}

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be by can for from has have how i if in into is it its
		me my of on or so than that the their them then there these this to too use used using was we were what
		when which who will with you your all any do does get gets`) {
		m[w] = true
	}
	// "get" is a stop word in descriptions ("gets the ...") but also the
	// first word of half the tool names in existence: searching for it
	// says nothing.
	return m
}()

// synonyms maps a query word to words tools use for the same idea.
var synonyms = map[string][]string{
	"add":        {"sum", "plus", "create", "insert", "append"},
	"sum":        {"add", "total"},
	"plus":       {"add", "sum"},
	"remove":     {"delete", "drop"},
	"delete":     {"remove", "drop"},
	"find":       {"search", "query", "lookup"},
	"search":     {"find", "query", "lookup"},
	"lookup":     {"find", "search"},
	"fetch":      {"read", "retrieve", "download"},
	"read":       {"fetch", "retrieve", "view"},
	"retrieve":   {"fetch", "read"},
	"show":       {"list", "view", "display"},
	"list":       {"enumerate", "show"},
	"write":      {"save", "update", "store"},
	"save":       {"write", "store"},
	"update":     {"edit", "modify", "change", "patch"},
	"edit":       {"update", "modify", "change"},
	"change":     {"update", "edit", "modify"},
	"make":       {"create", "new"},
	"create":     {"new", "add", "make"},
	"run":        {"execute", "invoke", "start"},
	"execute":    {"run", "invoke"},
	"file":       {"document", "path"},
	"folder":     {"directory", "dir"},
	"directory":  {"folder", "dir"},
	"repo":       {"repository"},
	"repository": {"repo"},
	"pr":         {"pull", "request"},
	"issue":      {"ticket", "bug"},
	"message":    {"send", "chat"},
	"echo":       {"repeat", "return"},
	"image":      {"picture", "screenshot"},
	"picture":    {"image"},
	"number":     {"numeric", "integer"},
	"env":        {"environment", "variable"},
	"wait":       {"sleep", "delay"},
	"sleep":      {"wait", "delay"},
}
