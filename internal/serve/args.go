package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/schema"
)

// checked validates a call's arguments against the tool's inputSchema
// before h sees them: the SDK leaves that to the handlers of tools
// registered with a raw schema, and a handler that decodes leniently would
// take {startLine: 0} or {} for what they are not. A violation is a tool
// error that names the argument, says what it must be, and shows the shape
// of a good call (usage).
//
// The run tool is not wrapped: it checks its request itself and answers a
// bad one with the §3.3 response of an INVALID_REQUEST diagnostic.
func checked(tool string, inputSchema json.RawMessage, usage string, h mcp.ToolHandler) mcp.ToolHandler {
	v, err := schema.Compile(inputSchema)
	if err != nil {
		// The schemas are this package's constants.
		panic(fmt.Sprintf("serve: the input schema of %s does not compile: %v", tool, err))
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args any
		if raw := req.Params.Arguments; len(raw) > 0 {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&args); err != nil {
				return errorResult(fmt.Sprintf("%s: the arguments are not JSON (%v); call it with %s", tool, err, usage)), nil
			}
		}
		if viol := v.Validate(args); viol != nil {
			return errorResult(violationText(tool, viol, usage)), nil
		}
		return h(ctx, req)
	}
}

// violationText is the refusal of a call whose arguments do not match the
// tool's schema, e.g.
//
//	readToolFile: invalid argument "startLine": expected number >= 1, received number 0. Call it with {...}
func violationText(tool string, viol *schema.Violation, usage string) string {
	var b strings.Builder
	b.WriteString(tool + ": ")
	if field := argName(viol.Path); field != "" {
		fmt.Fprintf(&b, "invalid argument %q: ", field)
	} else {
		b.WriteString("invalid arguments: ")
	}
	fmt.Fprintf(&b, "expected %s, received %s", viol.Expected, viol.Received)
	for _, o := range viol.Others {
		b.WriteString("; " + strings.TrimPrefix(strings.TrimPrefix(o, "input"), "/"))
	}
	b.WriteString(". Call it with " + usage)
	return b.String()
}

// argName turns a violation's JSON Pointer into the argument's name as the
// caller wrote it: "/startLine" → "startLine", "/a/0" → "a[0]".
func argName(ptr string) string {
	if ptr == "" {
		return ""
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	var b strings.Builder
	for i, p := range parts {
		p = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
		switch {
		case i == 0:
			b.WriteString(p)
		case isIndex(p):
			b.WriteString("[" + p + "]")
		default:
			b.WriteString("." + p)
		}
	}
	return b.String()
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
