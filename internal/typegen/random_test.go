package typegen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// Byte-level fuzzing rarely gets past the JSON syntax into deep schema
// structure, and esbuild only checks syntax. randomServers builds
// schema-shaped random input instead (every keyword the generator handles,
// refs, recursion, shared properties across tools) so that TestRandomSchemas
// can run the real type checker over what comes out.

type schemaGen struct {
	r    *rand.Rand
	defs int // number of $defs at the root, for refs
	pool []any
}

var propNames = []string{"id", "name", "a-b", "0", "x-trace", "x-id", "__proto__", "constructor", "enum", "default", "with space", "naïve", "data.point", "items", "type", "$ref"}

func (g *schemaGen) literal(depth int) any {
	switch g.r.IntN(7) {
	case 0:
		return nil
	case 1:
		return g.r.IntN(2) == 0
	case 2:
		return g.r.IntN(200) - 100
	case 3:
		return 1.5
	case 4:
		if depth < 2 {
			return map[string]any{"k": g.literal(depth + 1)}
		}
		return "k"
	case 5:
		if depth < 2 {
			return []any{g.literal(depth + 1), "x"}
		}
		return "y"
	}
	return []string{"a", "b */", "c\"d", "", "\u2028"}[g.r.IntN(5)]
}

func (g *schemaGen) schema(depth int) any {
	if depth > 4 {
		return map[string]any{"type": []string{"string", "number", "boolean", "null", "integer"}[g.r.IntN(5)]}
	}
	if len(g.pool) > 0 && g.r.IntN(6) == 0 {
		return g.pool[g.r.IntN(len(g.pool))]
	}
	var s map[string]any
	switch g.r.IntN(16) {
	case 0:
		s = map[string]any{"type": []any{"string", "null"}}
	case 1:
		n := 1 + g.r.IntN(4)
		var e []any
		for range n {
			e = append(e, g.literal(0))
		}
		s = map[string]any{"enum": e}
		if g.r.IntN(2) == 0 {
			s["type"] = "string"
		}
	case 2:
		s = map[string]any{"const": g.literal(0)}
	case 3, 4, 5:
		s = g.object(depth)
	case 6:
		s = map[string]any{"type": "array", "items": g.schema(depth + 1)}
	case 7:
		s = map[string]any{"type": "array", "items": []any{g.schema(depth + 1), g.schema(depth + 1)}}
		switch g.r.IntN(3) {
		case 0:
			s["additionalItems"] = false
		case 1:
			s["additionalItems"] = g.schema(depth + 1)
		}
		s["minItems"] = g.r.IntN(4)
	case 8:
		s = map[string]any{"prefixItems": []any{g.schema(depth + 1)}, "items": []any{false, g.schema(depth + 1)}[g.r.IntN(2)], "maxItems": g.r.IntN(3)}
	case 9:
		s = map[string]any{[]string{"anyOf", "oneOf"}[g.r.IntN(2)]: []any{g.schema(depth + 1), g.schema(depth + 1), map[string]any{"type": "null"}}}
		if g.r.IntN(2) == 0 {
			s["type"] = "object"
			s["properties"] = map[string]any{"p": g.schema(depth + 1)}
		}
	case 10:
		s = map[string]any{"allOf": []any{g.object(depth + 1), g.schema(depth + 1)}}
	case 11:
		if g.defs > 0 {
			s = map[string]any{"$ref": fmt.Sprintf("#/$defs/D%d", g.r.IntN(g.defs))}
		} else {
			s = map[string]any{"$ref": "#"}
		}
	case 12:
		s = map[string]any{"$ref": []string{"#", "#/properties/id", "#/$defs/missing", "http://x/y.json", "#/properties/a-b/items"}[g.r.IntN(5)]}
	case 13:
		return g.r.IntN(2) == 0
	case 14:
		s = map[string]any{"not": g.schema(depth + 1)}
		if g.r.IntN(2) == 0 {
			s["type"] = "string"
		}
	default:
		s = map[string]any{"type": "object", "if": g.schema(depth + 1), "then": g.object(depth + 1), "else": g.object(depth + 1)}
	}
	if g.r.IntN(8) == 0 {
		s["nullable"] = true
	}
	if g.r.IntN(3) == 0 {
		s["description"] = []string{"A thing.", "Multi\nline */ text", "id", "@default is in the text"}[g.r.IntN(4)]
	}
	return s
}

func (g *schemaGen) object(depth int) map[string]any {
	props := map[string]any{}
	var req []string
	for range g.r.IntN(5) {
		n := propNames[g.r.IntN(len(propNames))]
		props[n] = g.schema(depth + 1)
		if g.r.IntN(2) == 0 {
			req = append(req, n)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(req) > 0 {
		s["required"] = req
	}
	switch g.r.IntN(4) {
	case 0:
		s["additionalProperties"] = false
	case 1:
		s["additionalProperties"] = g.schema(depth + 1)
	case 2:
		s["additionalProperties"] = true
	}
	if g.r.IntN(4) == 0 {
		s["patternProperties"] = map[string]any{[]string{"^x-", "^[a-z]+$", "^data\\."}[g.r.IntN(3)]: g.schema(depth + 1)}
	}
	return s
}

// randomServers returns n servers of random tools. Properties are drawn
// from a per-server pool so that tools share some verbatim, as real servers
// do.
func randomServers(t testing.TB, seed uint64, n int) []Server {
	r := rand.New(rand.NewPCG(seed, 1))
	var out []Server
	for i := range n {
		g := &schemaGen{r: r}
		for range 3 {
			g.pool = append(g.pool, g.schema(2))
		}
		s := Server{ID: fmt.Sprintf("random-%d", i)}
		for j := range 2 + r.IntN(4) {
			g.defs = r.IntN(3)
			root := g.object(0)
			if g.defs > 0 {
				defs := map[string]any{}
				for k := range g.defs {
					defs[fmt.Sprintf("D%d", k)] = g.schema(1)
				}
				root["$defs"] = defs
			}
			in, err := json.Marshal(root)
			if err != nil {
				t.Fatal(err)
			}
			tool := Tool{Name: fmt.Sprintf("tool-%d", j), Description: "Random tool. " + strings.Repeat("x", r.IntN(3)), InputSchema: json.RawMessage(in)}
			if r.IntN(2) == 0 {
				out, _ := json.Marshal(g.schema(0))
				tool.OutputSchema = json.RawMessage(out)
			}
			s.Tools = append(s.Tools, tool)
		}
		out = append(out, s)
	}
	return out
}

// TestRandomSchemas checks what TestTypeScript cannot report per input:
// random schemas parse, never use any, and render deterministically. Their
// declarations also go through tsc with everything else (generatedFiles).
func TestRandomSchemas(t *testing.T) {
	for _, s := range randomServers(t, 1, 150) {
		mod, _ := ServerModule(s, nil)
		glob, _ := ServerGlobal(s, nil)
		if again, _ := ServerModule(s, nil); again != mod {
			t.Fatalf("%s: not deterministic", s.ID)
		}
		for name, src := range map[string]string{"module": mod, "global": glob} {
			mustParse(t, src)
			if typesMentionAny(src) {
				t.Errorf("%s %s uses any", s.ID, name)
			}
		}
	}
}
