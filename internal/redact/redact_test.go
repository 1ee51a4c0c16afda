package redact

import (
	"strings"
	"testing"
)

// secret is made of characters the surrounding text and Marker never use,
// so that any character of it left in an output is a leak.
const secret = "QWZ#%!~@^&*+=XY|"

const text = "a line of ordinary text\nthen the key " + secret + " and more\nand the key again:" + secret + "\nthe end\n"

// leaked reports whether out holds any character of secret outside the
// markers.
func leaked(out string) bool {
	return strings.ContainsAny(strings.ReplaceAll(out, Marker, ""), secret)
}

// Every clip redacts first, wherever the cut falls: a secret straddling the
// cut leaves nothing of itself.
func TestClipsRedactBeforeCutting(t *testing.T) {
	r := New([]string{secret})
	for n := 0; n <= len(text)+1; n++ {
		for name, out := range map[string]string{
			"Clip": r.Clip(text, n),
			"Cut":  r.Cut(text, n),
			"Tail": r.Tail(text, n),
		} {
			if leaked(out) {
				t.Fatalf("%s(text, %d) = %q: part of the secret is left", name, n, out)
			}
			if name != "Clip" && len(out) > n {
				t.Fatalf("%s(text, %d) is %d bytes", name, n, len(out))
			}
			if strings.Contains(out, "[REDAC") && strings.Count(out, "[REDAC") != strings.Count(out, Marker) {
				t.Fatalf("%s(text, %d) = %q cuts a marker", name, n, out)
			}
		}
	}
	if got, want := r.Clip(text, 1000), strings.ReplaceAll(text, secret, Marker); got != want {
		t.Errorf("Clip of the whole text = %q, want %q", got, want)
	}
	if got := r.Clip("0123456789", 4); got != "0123… [6 more bytes]" {
		t.Errorf("Clip says what it cut: %q", got)
	}
	// "é" is two bytes: a cut inside it backs off to its start.
	if got := r.Clip("aéb", 2); got != "a… [3 more bytes]" {
		t.Errorf("Clip splits a character: %q", got)
	}
}

// Fragment is for a window cut out of a text that is gone: a piece of a
// secret at a cut edge is removed too, however short.
func TestFragmentRemovesPiecesAtCutEdges(t *testing.T) {
	r := New([]string{secret})
	for i := 0; i <= len(text); i++ {
		for j := i; j <= len(text); j++ {
			out := r.Fragment(text[i:j], i > 0, j < len(text))
			if leaked(out) {
				t.Fatalf("Fragment(text[%d:%d]) = %q: part of the secret is left", i, j, out)
			}
		}
	}
	// Only cut edges are trimmed: the same text, whole, keeps its ends.
	if got := r.Fragment("XY| hello QW", false, false); got != "XY| hello QW" {
		t.Errorf("uncut text changed: %q", got)
	}
	if got := r.Fragment("XY| hello QW", true, true); got != Marker+" hello "+Marker {
		t.Errorf("cut text: %q", got)
	}
}

// Overlapping secrets leave nothing of either; a secret inside another is
// replaced with it.
func TestOverlappingSecrets(t *testing.T) {
	r := New([]string{"abcdef-1234", "1234-ghijkl", "cdef-12"})
	for in, want := range map[string]string{
		"x abcdef-1234-ghijkl y":  "x " + Marker + " y",
		"abcdef-1234 1234-ghijkl": Marker + " " + Marker,
		"zcdef-12z":               "z" + Marker + "z",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	// Overlapping occurrences of one secret make one stretch.
	r = New([]string{"aaaaaaaa"})
	for in, want := range map[string]string{
		"xaaaaaaaaaaay":            "x" + Marker + "y",
		"aaaaaaaa aaaaaaaa":        Marker + " " + Marker,
		strings.Repeat("a", 1<<16): Marker,
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

// The forms a secret takes in JSON and Go quoting are found too.
func TestQuotedForms(t *testing.T) {
	const s = "pa\"ss\\word<&>\n\u2028end"
	r := New([]string{s})
	for _, in := range []string{
		`{"p":"pa\"ss\\word\u003c\u0026\u003e\n\u2028end"}`, // Go's encoder
		"{\"p\":\"pa\\\"ss\\\\word<&>\\n\u2028end\"}",       // JSON.stringify
		`error: "pa\"ss\\word<&>\n\u2028end"`,               // %q
	} {
		if got := r.String(in); strings.Contains(got, "word") {
			t.Errorf("String(%s) = %s", in, got)
		}
	}
}

func TestNilRedactor(t *testing.T) {
	var r *Redactor
	if New(nil) != nil || New([]string{""}) != nil || !r.Empty() {
		t.Fatal("no secrets must give a nil Redactor")
	}
	if r.String("abc") != "abc" || r.Clip("abcdef", 3) != "abc… [3 more bytes]" || r.Tail("a\nbc\nd", 3) != "d" || r.Occurs("x") {
		t.Error("a nil Redactor must clip and redact nothing")
	}
}

func TestOverlap(t *testing.T) {
	for _, tc := range []struct {
		p, t string
		want int
	}{
		{"abc", "xxab", 2}, {"abc", "xxabc", 3}, {"aab", "aaaa", 2}, {"abab", "xabab", 4},
		{"abc", "", 0}, {"", "abc", 0}, {"aaa", "a", 1}, {"abcabd", "abcabcab", 5},
	} {
		if got := overlap([]byte(tc.p), []byte(tc.t)); got != tc.want {
			t.Errorf("overlap(%q, %q) = %d, want %d", tc.p, tc.t, got, tc.want)
		}
	}
}

// With many secrets Occurs scans once (scan.go); it must agree with
// looking for each form in turn, wherever a secret is.
func TestManySecretsScan(t *testing.T) {
	var secrets []string
	for i := range 12 {
		secrets = append(secrets, strings.Repeat(string(rune('a'+i)), i+1)+"-secret-"+string(rune('A'+i)))
	}
	secrets = append(secrets, `q"uote\d-secret`)
	r := New(secrets)
	if r.scan == nil {
		t.Fatal("no scanner for many secrets")
	}
	naive := func(s string) bool {
		for _, f := range r.forms {
			if strings.Contains(s, string(f)) {
				return true
			}
		}
		return false
	}
	filler := strings.Repeat("lorem ipsum-secret- ", 20)
	for _, f := range r.forms {
		for _, at := range []int{0, 1, 7, len(filler) / 2, len(filler)} {
			for _, s := range []string{filler[:at] + string(f) + filler[at:], filler[:at] + string(f[:len(f)-1]) + filler[at:], string(f), string(f[1:])} {
				if got, want := r.Occurs(s), naive(s); got != want {
					t.Fatalf("Occurs(%q) = %v, want %v", s, got, want)
				}
				if got, want := r.occursIn([]byte(s)), naive(s); got != want {
					t.Fatalf("occursIn(%q) = %v, want %v", s, got, want)
				}
			}
		}
	}
}

func FuzzManySecretsScan(f *testing.F) {
	r := New([]string{"alpha-secret-1", "beta-secret-22", "gamma-secret-333", "delta-secret-4444", "eps-secret-5"})
	f.Add("xx alpha-secret-1 yy")
	f.Add("delta-secret-444")
	f.Fuzz(func(t *testing.T, s string) {
		want := false
		for _, form := range r.forms {
			want = want || strings.Contains(s, string(form))
		}
		if r.Occurs(s) != want {
			t.Fatalf("Occurs(%q) != %v", s, want)
		}
	})
}
