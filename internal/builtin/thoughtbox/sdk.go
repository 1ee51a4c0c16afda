package thoughtbox

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ToolOp is the host operation of one tool of the server (run.ToolOp's
// format, repeated here because this package sits below run).
func toolOp(tool string) string { return "tool\x00" + ID + "\x00" + tool }

// sdkSpec is what the tb object needs to know of one method.
type sdkSpec struct {
	Name       string            `json:"name"` // tb.session.get, for messages
	Positional []string          `json:"positional,omitempty"`
	Rest       bool              `json:"rest,omitempty"`
	Required   []string          `json:"required"`
	Aliases    map[string]string `json:"aliases,omitempty"`
	Usage      string            `json:"usage"`
}

// SDKSource is the JavaScript module that defines the global `tb` of the
// thoughtbox surface. Each method calls its tool through the run layer
// (so it is counted, validated and traced like any tool call) and resolves
// to the unwrapped result. Methods with positional parameters also take
// one object of named arguments; object-only methods (addObservation,
// queryGraph, ...) refuse anything else with "Missing required parameter",
// as Thoughtbox does.
func SDKSource() string {
	ops := make([]string, len(Operations))
	names := make([]string, len(Operations))
	specs := make([]sdkSpec, len(Operations))
	for i, o := range Operations {
		ops[i] = toolOp(o.Tool)
		names[i] = o.Method
		sp := sdkSpec{Name: "tb." + o.Module + "." + o.Method, Positional: o.Positional, Rest: o.Rest, Required: o.Required, Usage: o.Signature()}
		if o.Module == o.Method {
			sp.Name = "tb." + o.Method
		}
		if sp.Required == nil {
			sp.Required = []string{}
		}
		if o.Tool == "knowledge_getEntity" {
			sp.Aliases = map[string]string{"entityId": "entity_id", "id": "entity_id"}
		}
		specs[i] = sp
	}
	j := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	var b strings.Builder
	b.WriteString(`import { bindTools, classes, freeze, deepFreeze } from "@codemode/internal";
const P = Promise;
const reject = (e) => P.reject(e);
const isArray = Array.isArray;
const keys = Object.keys;
const isObj = (v) => v !== null && typeof v === "object" && !isArray(v);
const fail = (spec, msg) => reject(new classes.CodemodeError(msg, { hint: "call it as " + spec.usage }));
const missing = (spec, name) => fail(spec, "Missing required parameter: " + name + " (" + spec.name + " takes " + (spec.positional ? "positional arguments or one object of named arguments" : "a single object") + ": " + spec.usage + ")");
function wrap(fn, spec) {
  const m = function (...args) {
    let input;
    const first = args[0];
    if (spec.positional) {
      if (isObj(first)) {
        if (args.length > 1 && args[1] !== undefined) {
          return fail(spec, spec.name + ": ambiguous call, an object of named arguments and more arguments after it; use " + spec.usage);
        }
        input = {};
        for (const k of keys(first)) input[spec.aliases && spec.aliases[k] && first[spec.aliases[k]] === undefined ? spec.aliases[k] : k] = first[k];
      } else if (isArray(first)) {
        return missing(spec, spec.required[0] || spec.positional[0]);
      } else {
        input = {};
        const n = spec.positional.length;
        for (let i = 0; i < n; i++) if (args[i] !== undefined) input[spec.positional[i]] = args[i];
        if (spec.rest && args.length > n && args[n] !== undefined) {
          if (!isObj(args[n])) return fail(spec, spec.name + ": the argument after " + spec.positional.join(", ") + " is an object of named arguments; use " + spec.usage);
          for (const k of keys(args[n])) if (input[k] === undefined) input[k] = args[n][k];
        }
      }
    } else {
      if (first === undefined && args.length <= 1) {
        input = {};
      } else if (!isObj(first) || (args.length > 1 && args[1] !== undefined)) {
        return missing(spec, spec.required[0] || "(none)");
      } else {
        input = first;
      }
    }
    for (const r of spec.required) if (input[r] === undefined || input[r] === null) return missing(spec, r);
    return fn(input);
  };
  return freeze(m);
}
`)
	fmt.Fprintf(&b, "const fns = bindTools(%s, %s);\n", j(ops), j(names))
	fmt.Fprintf(&b, "const specs = deepFreeze(%s);\n", j(specs))
	b.WriteString("const tb = { session: {}, knowledge: {} };\n")
	for i, o := range Operations {
		if o.Module == o.Method {
			fmt.Fprintf(&b, "tb.%s = wrap(fns[%d], specs[%d]);\n", o.Method, i, i)
		} else {
			fmt.Fprintf(&b, "tb.%s.%s = wrap(fns[%d], specs[%d]);\n", o.Module, o.Method, i, i)
		}
	}
	b.WriteString(`freeze(tb.session); freeze(tb.knowledge); freeze(tb);
Object.defineProperty(globalThis, "tb", { value: tb, writable: false, enumerable: false, configurable: false });
`)
	return b.String()
}

// CatalogOperation is one entry of the thoughtbox surface's search
// catalog: catalog.operations.<module>.<operation>.
type CatalogOperation struct {
	Signature    string `json:"signature"`
	Description  string `json:"description"`
	InputSchema  any    `json:"inputSchema"`
	Tool         string `json:"tool"`
	ReadOnlyHint bool   `json:"readOnlyHint"`
}

// Operations by module, for thoughtbox_search's catalog.
func CatalogOperations() map[string]map[string]CatalogOperation {
	out := map[string]map[string]CatalogOperation{}
	for _, o := range Operations {
		if out[o.Module] == nil {
			out[o.Module] = map[string]CatalogOperation{}
		}
		out[o.Module][o.Method] = CatalogOperation{Signature: o.Signature(), Description: o.Description, InputSchema: o.Schema, Tool: o.Tool, ReadOnlyHint: o.ReadOnly}
	}
	return out
}

// SDKSummary lists every tb method's signature and description, one per
// line, for the thoughtbox_execute tool's description.
func SDKSummary() string {
	var b strings.Builder
	for _, o := range Operations {
		fmt.Fprintf(&b, "- %s: %s\n", o.Signature(), o.Description)
	}
	return b.String()
}
