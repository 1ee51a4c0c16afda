package redact_test

import (
	"encoding/json"
	"fmt"

	"github.com/codemode-mcp/codemode/internal/redact"
)

func Example() {
	r := redact.New([]string{"sk-live-0123456789"})

	// Text and JSON (which stays valid JSON).
	fmt.Println(r.String("the key is sk-live-0123456789"))
	fmt.Println(string(r.JSON(json.RawMessage(`{"key":"sk-live-0123456789","n":1}`))))

	// Clip redacts the whole text, then cuts: the secret straddling the cut
	// leaves nothing of itself.
	fmt.Println(r.Clip("the key is sk-live-0123456789, do not share", 16))

	// A window of a text that is gone (a stderr ring buffer): a piece of a
	// secret at a cut edge goes too.
	fmt.Println(r.Fragment("0123456789 was the key", true, false))
	// Output:
	// the key is [REDACTED]
	// {"key":"[REDACTED]","n":1}
	// the key is … [24 more bytes]
	// [REDACTED] was the key
}
