// Package redact keeps configured secrets (config.Server.Secrets) out of
// what the gateway hands the model. A [Redactor] replaces every occurrence
// of a secret with [Marker], in text ([Redactor.String]) and in JSON
// ([Redactor.JSON], which keeps the document valid).
//
// It is also the one place that shortens text bound for the model:
// [Redactor.Clip], [Redactor.Cut] and [Redactor.Tail] redact the whole text
// first and cut it after. The order is the point: a secret that a cut splits
// in two no longer matches, and the half that is left gets out. Text that
// was already cut somewhere the gateway does not control (the last 4 KiB of
// a server's stderr kept in a ring, the first bytes of an HTTP body) goes
// through [Redactor.Fragment], which also removes a piece of a secret left
// at a cut edge.
//
// Start with [New]. A nil *Redactor is valid and redacts nothing (it still
// clips), so that code without secrets needs no special case.
//
// Redaction is output matching: it finds a secret as it is written (or
// quoted in a JSON or Go string). It cannot find one that was transformed
// (base64, reversed, split, hashed) before it got here; the gateway's
// defence there is that no configured secret ever reaches a script (the
// upstream manager redacts what servers send before anything else sees it)
// and that stdio servers inherit only a minimal environment.
package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
)

// Marker replaces a secret wherever it would reach the model.
const Marker = "[REDACTED]"

// Redactor removes a fixed set of secrets. It is immutable and safe for
// concurrent use.
type Redactor struct {
	// forms are the texts replaced: each secret as it is, and as it appears
	// inside a JSON string (Go's encoder, JavaScript's JSON.stringify) and
	// a Go quoted string (%q, which error messages use). Longest first.
	forms [][]byte
	// first[c] is set when some form starts with byte c, for a quick
	// "can anything occur here" test.
	first [256]bool
	// scan finds any of many forms in one pass (nil for few forms, which
	// strings.Contains finds faster one by one).
	scan *scanner
}

// New returns a Redactor for secrets, or nil when there are none. Empty
// strings are ignored; keeping secrets long enough to be worth redacting is
// the caller's business (config keeps those of 8 bytes or more).
func New(secrets []string) *Redactor {
	seen := map[string]bool{}
	var forms []string
	for _, v := range secrets {
		if v == "" {
			continue
		}
		b, _ := json.Marshal(v)
		q := strconv.Quote(v)
		for _, form := range []string{v, string(b[1 : len(b)-1]), jsQuoted(v), q[1 : len(q)-1]} {
			if form != "" && !seen[form] {
				seen[form] = true
				forms = append(forms, form)
			}
		}
	}
	if len(forms) == 0 {
		return nil
	}
	// Longest first, so that where two forms start at the same place the
	// longer one is found first (the spans are merged anyway).
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	r := &Redactor{}
	for _, f := range forms {
		r.forms = append(r.forms, []byte(f))
		r.first[f[0]] = true
	}
	if len(r.forms) > manyForms {
		r.scan = newScanner(r.forms)
	}
	return r
}

// jsQuoted is s as JSON.stringify writes it inside a string's quotes: only
// the quote, the backslash and control characters are escaped.
func jsQuoted(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

// Empty reports whether r redacts nothing.
func (r *Redactor) Empty() bool { return r == nil }

// Occurs reports whether any secret occurs in s, in any of its forms.
func (r *Redactor) Occurs(s string) bool {
	if r == nil {
		return false
	}
	if r.scan != nil && len(s) >= r.scan.w {
		return occurs(r.scan, s)
	}
	for _, f := range r.forms {
		if strings.Contains(s, string(f)) {
			return true
		}
	}
	return false
}

func (r *Redactor) occursIn(b []byte) bool {
	if r == nil {
		return false
	}
	if r.scan != nil && len(b) >= r.scan.w {
		return occurs(r.scan, b)
	}
	for _, f := range r.forms {
		if bytes.Contains(b, f) {
			return true
		}
	}
	return false
}

// Bytes returns binary data b with every secret's bytes replaced by
// Marker: b itself when none occurs. Binary parts of what a server sends
// (images, audio, resource blobs) reach a script base64-encoded, which a
// script can decode and no text matcher sees through.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil || !r.occursIn(b) {
		return b
	}
	return []byte(r.String(string(b)))
}

// String returns s with every secret replaced by Marker. Where secrets
// overlap ("abcdef" and "defghi" in "abcdefghi") the whole stretch they
// cover becomes one Marker, so that no part of either is left.
func (r *Redactor) String(s string) string { return r.apply(s, false, false) }

// Fragment redacts s, a piece cut out of a longer text that is no longer
// available: cutBefore says text was dropped before s, cutAfter after it.
// Besides the secrets s holds whole, a piece of one at a cut edge (s starts
// with the end of a secret, or ends with its start) is replaced too. A
// piece may be as short as one byte, so Fragment may take a character or
// two of ordinary text at a cut edge: at a place where text was cut anyway,
// that costs nothing.
func (r *Redactor) Fragment(s string, cutBefore, cutAfter bool) string {
	return r.apply(s, cutBefore, cutAfter)
}

// Clip is the way to shorten text bound for the model: it redacts s, then
// cuts the result to at most n bytes (without splitting a UTF-8 character
// or a Marker) and says how much it cut, so that a reader never mistakes a
// clipped message for the whole.
func (r *Redactor) Clip(s string, n int) string {
	out := r.String(s)
	c := cutHead(out, n)
	if len(c) == len(out) {
		return out
	}
	return c + fmt.Sprintf("… [%d more bytes]", len(out)-len(c))
}

// Cut is Clip without the note: s redacted, then cut to at most n bytes.
func (r *Redactor) Cut(s string, n int) string {
	return cutHead(r.String(s), n)
}

// Tail redacts s and returns the end of it, at most n bytes, without
// trailing blank space; when it had to cut, it starts at a line boundary if
// there is one (never inside a UTF-8 character or a Marker). A nil
// Redactor's Tail clips text that is already redacted.
func (r *Redactor) Tail(s string, n int) string {
	out := strings.TrimRight(r.String(s), " \t\r\n")
	if len(out) <= n {
		return out
	}
	start := len(out) - max(n, 0)
	if m := markerAround(out, start); m >= 0 {
		start = m + len(Marker)
	}
	for start < len(out) && !utf8.RuneStart(out[start]) {
		start++
	}
	out = out[start:]
	if i := strings.IndexByte(out, '\n'); i >= 0 && i < len(out)-1 {
		out = out[i+1:]
	}
	return out
}

// cutHead cuts out to at most n bytes, before a Marker the cut would split.
func cutHead(out string, n int) string {
	if len(out) <= n {
		return out
	}
	n = max(n, 0)
	if m := markerAround(out, n); m >= 0 {
		n = m
	}
	return diag.Cut(out, n)
}

// markerAround returns where the Marker that a cut at i would split starts,
// or -1. Markers are found as text, so that text redacted earlier (by
// another Redactor, or before it was stored) is cut as carefully.
func markerAround(s string, i int) int {
	lo := max(i-len(Marker)+1, 0)
	hi := min(i+len(Marker)-1, len(s))
	if lo >= hi {
		return -1
	}
	if j := strings.Index(s[lo:hi], Marker); j >= 0 && lo+j < i {
		return lo + j
	}
	return -1
}

// apply replaces the secrets of s (and, at cut edges, pieces of them) with
// Marker.
func (r *Redactor) apply(s string, cutBefore, cutAfter bool) string {
	if r == nil || s == "" {
		return s
	}
	spans := r.spans(s, cutBefore, cutAfter)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	prev := 0
	for _, sp := range spans {
		b.WriteString(s[prev:sp[0]])
		b.WriteString(Marker)
		prev = sp[1]
	}
	b.WriteString(s[prev:])
	return b.String()
}

// spans returns the stretches of s to replace, sorted and merged.
func (r *Redactor) spans(s string, cutBefore, cutAfter bool) [][2]int {
	var spans [][2]int
	if r.occursQuick(s) {
		for _, f := range r.forms {
			fs := string(f)
			for i := 0; ; {
				j := strings.Index(s[i:], fs)
				if j < 0 {
					break
				}
				sp := [2]int{i + j, i + j + len(fs)}
				// Overlapping occurrences too ("aaaa" in "aaaaa"), merged
				// as they are found.
				if n := len(spans); n > 0 && spans[n-1][1] >= sp[0] && spans[n-1][0] <= sp[0] {
					spans[n-1][1] = max(spans[n-1][1], sp[1])
				} else {
					spans = append(spans, sp)
				}
				i += j + 1
			}
		}
	}
	if cutBefore || cutAfter {
		head, tail := 0, 0
		for _, f := range r.forms {
			if cutBefore && cutAfter && len(s) < len(f) && bytes.Contains(f, []byte(s)) {
				return [][2]int{{0, len(s)}} // s is a piece of the middle of a secret
			}
			if cutBefore {
				head = max(head, prefixIsSuffixOf(s, f))
			}
			if cutAfter {
				tail = max(tail, suffixIsPrefixOf(s, f))
			}
		}
		if head > 0 {
			spans = append(spans, [2]int{0, head})
		}
		if tail > 0 {
			spans = append(spans, [2]int{len(s) - tail, len(s)})
		}
	}
	if len(spans) == 0 {
		return nil
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	merged := spans[:1]
	for _, sp := range spans[1:] {
		last := &merged[len(merged)-1]
		if sp[0] <= last[1] {
			last[1] = max(last[1], sp[1])
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

// occursQuick is Occurs, skipped at once when no byte of s starts a form.
func (r *Redactor) occursQuick(s string) bool {
	for i := 0; i < len(s); i++ {
		if r.first[s[i]] {
			return r.Occurs(s[i:])
		}
	}
	return false
}

// prefixIsSuffixOf returns the length of the longest prefix of s that is a
// proper suffix of f (the end of a secret left at the start of s).
func prefixIsSuffixOf(s string, f []byte) int {
	m := min(len(s), len(f)-1)
	if m <= 0 {
		return 0
	}
	return overlap([]byte(s[:m]), f)
}

// suffixIsPrefixOf returns the length of the longest suffix of s that is a
// proper prefix of f (the start of a secret left at the end of s).
func suffixIsPrefixOf(s string, f []byte) int {
	m := min(len(s), len(f)-1)
	if m <= 0 {
		return 0
	}
	return overlap(f[:m], []byte(s))
}

// overlap returns the length of the longest prefix of p that is a suffix of
// t (Knuth–Morris–Pratt: linear in len(p)+len(t)).
func overlap(p, t []byte) int {
	fail := make([]int, len(p))
	for i, k := 1, 0; i < len(p); i++ {
		for k > 0 && p[i] != p[k] {
			k = fail[k-1]
		}
		if p[i] == p[k] {
			k++
		}
		fail[i] = k
	}
	k := 0
	for _, c := range t {
		for k > 0 && (k == len(p) || c != p[k]) {
			k = fail[k-1]
		}
		if k < len(p) && c == p[k] {
			k++
		}
	}
	return k
}

// ForServers returns the Redactor of every secret of servers
// (config.Server.Secrets), or nil when they have none.
func ForServers(servers []config.Server) *Redactor {
	var all []string
	for _, s := range servers {
		all = append(all, s.Secrets...)
	}
	return New(all)
}
