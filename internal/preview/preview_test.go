package preview

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestShapes(t *testing.T) {
	const note = "see codemode://results/x"
	items := make([]int, 1000)
	for i := range items {
		items[i] = i
	}
	arr, _ := json.Marshal(items)
	obj := map[string]any{}
	for i := range 200 {
		obj[fmt.Sprintf("k%03d", i)] = strings.Repeat("v", 50)
	}
	objJSON, _ := json.Marshal(obj)
	nested := []byte(`{"total": 3, "rows": [{"id": 1, "body": "` + strings.Repeat("é<>", 10000) + `"}]}`)
	for _, tc := range []struct {
		name  string
		in    []byte
		limit int
		check func(t *testing.T, v any)
	}{
		{"array", arr, 300, func(t *testing.T, v any) {
			a := v.([]any)
			last := a[len(a)-1].(string)
			if a[0] != json.Number("0") || !strings.Contains(last, "more item(s) not shown") || !strings.Contains(last, note) {
				t.Errorf("%v", a)
			}
		}},
		{"object", objJSON, 400, func(t *testing.T, v any) {
			m := v.(map[string]any)
			if _, ok := m["k000"]; !ok || !strings.Contains(m[MarkerKey].(string), note) {
				t.Errorf("%v", m)
			}
		}},
		{"nested", nested, 500, func(t *testing.T, v any) {
			m := v.(map[string]any)
			body := m["rows"].([]any)[0].(map[string]any)["body"].(string)
			if m["total"] != json.Number("3") || !strings.HasPrefix(body, "é<>") || !strings.Contains(body, "more bytes not shown") {
				t.Errorf("%v", m)
			}
		}},
		{"string", []byte(`"` + strings.Repeat(`\n`, 500) + `"`), 100, func(t *testing.T, v any) {
			if s := v.(string); !strings.HasPrefix(s, "\n\n") || !strings.Contains(s, "more bytes not shown") {
				t.Errorf("%q", s)
			}
		}},
		{"number", []byte(`12345678901234567890`), 10, func(t *testing.T, v any) {}},
		{"tiny", arr, 5, func(t *testing.T, v any) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, cut := JSON(tc.in, tc.limit, note)
			if !cut || len(out) > tc.limit {
				t.Fatalf("cut=%v, %d bytes > %d: %s", cut, len(out), tc.limit, out)
			}
			var v any
			d := json.NewDecoder(strings.NewReader(string(out)))
			d.UseNumber()
			if err := d.Decode(&v); err != nil {
				t.Fatalf("not JSON: %s: %v", out, err)
			}
			tc.check(t, v)
		})
	}
	if out, cut := JSON([]byte(` [1, 2] `), 100, note); cut || string(out) != "[1, 2]" {
		t.Errorf("a value that fits: %s %v", out, cut)
	}
}

// Whatever the value and the limit, the preview is valid JSON within the
// limit.
func TestRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := r.IntN(6); {
		case depth > 4 || k == 0:
			return r.Float64() * 1e6
		case k == 1:
			return strings.Repeat(string(rune('a'+r.IntN(26)))+"\"\\é\u2028", r.IntN(200))
		case k == 2:
			a := make([]any, r.IntN(30))
			for i := range a {
				a[i] = gen(depth + 1)
			}
			return a
		case k == 3:
			m := map[string]any{}
			for i := range r.IntN(20) {
				m[fmt.Sprint("key", i)] = gen(depth + 1)
			}
			return m
		case k == 4:
			return nil
		default:
			return r.IntN(2) == 0
		}
	}
	for i := range 600 {
		b, _ := json.Marshal(gen(0))
		limit := r.IntN(len(b) + 10)
		out, _ := JSON(b, limit, "note")
		if len(out) > limit {
			t.Fatalf("#%d: %d bytes > %d", i, len(out), limit)
		}
		if len(out) > 0 && !json.Valid(out) {
			t.Fatalf("#%d: not JSON (limit %d): %s\nfrom %s", i, limit, out, b)
		}
		if len(out) == 0 && limit >= 4 {
			t.Fatalf("#%d: empty at limit %d", i, limit)
		}
	}
}
