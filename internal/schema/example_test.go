package schema_test

import (
	"encoding/json"
	"fmt"

	"github.com/codemode-mcp/codemode/internal/schema"
)

func ExampleValidator_Validate() {
	v, err := schema.Compile(json.RawMessage(`{
		"type": "object",
		"properties": {
			"name": {"type": "string"},
			"age": {"type": "number"}
		},
		"required": ["name"]
	}`))
	if err != nil {
		panic(err)
	}

	// A wrong type.
	viol := v.Validate(map[string]any{"name": "Ada", "age": "42"})
	fmt.Println(viol.Message)

	// A missing property: the path points at the property itself.
	viol = v.Validate(map[string]any{"age": 36.0})
	fmt.Println(viol.Path)
	fmt.Println(viol.Message)

	fmt.Println(v.Validate(map[string]any{"name": "Ada"}) == nil)
	// Output:
	// input/age: expected number, received string "42"
	// /name
	// input/name: expected required property "name" (string), received nothing (the property is missing)
	// true
}

func ExampleValidator_Example() {
	v, err := schema.Compile(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"query": map[string]any{"type": "string", "examples": []any{"open issues"}},
			"limit": map[string]any{"type": "integer", "minimum": 1.0},
			"sort":  map[string]any{"enum": []any{"asc", "desc"}},
			"page":  map[string]any{"type": "integer"},
		},
		"required": []any{"query", "limit", "sort"},
	})
	if err != nil {
		panic(err)
	}
	b, _ := json.Marshal(v.Example())
	fmt.Println(string(b))
	// Output:
	// {"limit":1,"query":"open issues","sort":"asc"}
}
