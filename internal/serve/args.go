package serve

import (
	"fmt"
	"strings"

	"github.com/codemode-mcp/codemode/internal/schema"
)

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
