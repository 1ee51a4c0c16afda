package typegen_test

import (
	"encoding/json"
	"fmt"

	"github.com/codemode-mcp/codemode/internal/typegen"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func ExampleServerModule() {
	s := typegen.Server{
		ID:   "weather",
		Name: "Weather",
		Tools: []typegen.Tool{{
			Name:        "get-forecast",
			Description: "Forecast for a city.",
			InputSchema: json.RawMessage(`{
				"type": "object",
				"properties": {
					"city": {"type": "string", "description": "City name"},
					"days": {"type": "integer", "minimum": 1, "default": 3}
				},
				"required": ["city"],
				"additionalProperties": false
			}`),
			OutputSchema: json.RawMessage(`{"type": "object", "properties": {"tempC": {"type": ["number", "null"]}}, "required": ["tempC"]}`),
			Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true},
		}},
	}
	decl, warnings := typegen.ServerModule(s, nil)
	fmt.Print(decl)
	fmt.Println(len(warnings), "warnings")
	// Output:
	// /** Weather */
	// declare module "@codemode/servers/weather" {
	// /** Forecast for a city. @readOnly */
	// export function get_forecast(input: {
	//   /** City name */ city: string;
	//   /** @default 3 @minimum 1 */ days?: number;
	// }): Promise<{ tempC: number | null; [key: string]: unknown }>;
	// export const __meta__: CodeMode.ServerMeta;
	// }
	// 0 warnings
}

func ExampleGlobalName() {
	fmt.Println(typegen.GlobalName("sequential-thinking"), typegen.GlobalName("console"), typegen.GlobalName("enum"))
	// Output: sequential_thinking console_ enum_
}
