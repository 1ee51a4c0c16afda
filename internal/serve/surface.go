package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/schema"
)

// A Surface is one set of tools the gateway serves, chosen by name in
// codemode.surfaces: the run tool of codemode-spec §3, or the tools of a
// system users already know. A surface owns everything about its tools:
// names, descriptions, input schemas, handlers, and the sandbox modules and
// host operations its runs add (no other surface's runs can import them).
// The Server registers what the surface returns, keeps it current as
// upstream catalogs change, and counts calls for a graceful shutdown.
//
// Adding a surface touches no other one: a file (or package) with a type
// implementing Surface, one line in surfaceKinds, its name in
// config.KnownSurfaces (and its fixed tool names in config.SurfaceTools, so
// that the run tool's name cannot collide with them), and a golden
// transcript in testdata/golden/<name>.txtar (go test -run TestGolden
// -update).
type Surface interface {
	// Tools returns the surface's tools for the servers connected now, in
	// configuration order; servers is nil before the first catalog. It is
	// called again on every catalog refresh: a tool whose definition
	// changed is registered again (clients get notifications/tools/
	// list_changed), and one the surface no longer returns is removed, so a
	// surface may serve a tool per upstream tool.
	Tools(servers []*catalog.Server) []Tool
}

// Instructor is implemented by a surface that adds a sentence to the
// server's instructions (the "instructions" of the initialize result), read
// once per session: say there what a client must know before it lists
// tools, and nothing that a tool description says.
type Instructor interface {
	Instructions() string
}

// Tool is a surface's tool: its definition and its handler. Build one with
// an [input]'s tool method, which generates the input schema from the Go
// type the handler decodes, or, for a tool served with someone else's
// schema (an upstream's), set Tool.InputSchema to that schema.
type Tool struct {
	Tool    *mcp.Tool
	Handler mcp.ToolHandler
}

// surfaceKinds maps each name codemode.surfaces accepts to the constructor
// of its surface. config.KnownSurfaces lists the same names (the config
// package sits below this one); TestSurfaceKindsMatchConfig keeps them
// equal.
var surfaceKinds = map[string]func(*Server) Surface{
	"run":            newRunSurface,
	"search-execute": newSearchExecuteSurface,
	"files":          newFilesSurface,
	"emceepee":       newEmceepeeSurface,
	"thoughtbox":     newThoughtboxSurface,
}

// input is the input of a tool whose arguments decode into In: its schema,
// generated from In, and a validator compiled from that schema. Build one
// per tool, once (a package variable), with newInput.
type input[In any] struct {
	schema json.RawMessage
	v      *schema.Validator
	usage  string
}

// newInput generates the input schema of In (see inputSchema), amended by
// amend for what Go types cannot say (bounds, enums, defaults), and compiles
// it. usage is the shape of a good call, shown when a call is refused. It
// panics if the schema cannot be built: the types are this package's.
func newInput[In any](usage string, amend func(*jsonschema.Schema)) *input[In] {
	raw := inputSchema[In](amend)
	v, err := schema.Compile(raw)
	if err != nil {
		panic(fmt.Sprintf("serve: the input schema of %T does not compile: %v", *new(In), err))
	}
	return &input[In]{schema: raw, v: v, usage: usage}
}

// tool returns t, with this input's schema, served by h. h receives the
// arguments decoded into In once they are valid against the schema: a call
// whose arguments are not is answered with a tool error that names the
// argument, says what it must be and shows the shape of a good call, and
// never reaches h. The SDK leaves validation to the handlers of tools
// registered with a raw schema, and json.Unmarshal alone would take
// {startLine: 0} or {} for what they are not.
func (in *input[In]) tool(t *mcp.Tool, h func(context.Context, *mcp.CallToolRequest, In) (*mcp.CallToolResult, error)) Tool {
	t.InputSchema = in.schema
	name := t.Name
	return Tool{Tool: t, Handler: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args any
		raw := req.Params.Arguments
		if len(raw) > 0 {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&args); err != nil {
				return errorResult(fmt.Sprintf("%s: the arguments are not JSON (%v); call it with %s", name, err, in.usage)), nil
			}
		}
		if viol := in.v.Validate(args); viol != nil {
			return errorResult(violationText(name, viol, in.usage)), nil
		}
		var decoded In
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &decoded); err != nil {
				// Valid against the schema yet not decodable: the
				// schema and the type disagree, which the golden
				// tests are there to prevent.
				return errorResult(fmt.Sprintf("%s: the arguments could not be read (%v); call it with %s", name, err, in.usage)), nil
			}
		}
		return h(ctx, req, decoded)
	}}
}

// inputSchema is the JSON Schema of the arguments that decode into T,
// generated by jsonschema-go (the SDK's own choice) from T's fields, their
// json tags (omitempty: optional) and their jsonschema tags (the
// description), then amended. It differs from jsonschema.For in two ways,
// both to describe what the handlers accept rather than how Go spells it:
//
//   - Objects do not refuse additional properties: every tool ignores an
//     argument it does not know, as it always has, and a run's limits must
//     ignore unknown keys (§3.2.4).
//   - A pointer or slice is typed as what it points to: null is tolerated
//     for an absent optional argument, but it is not what to send, and
//     "type": ["null", "array"] costs every tools/list a few tokens.
//
// An object without properties lists none ("properties": {}), which some
// clients require of an object schema.
func inputSchema[T any](amend func(*jsonschema.Schema)) json.RawMessage {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("serve: no input schema for %T: %v", *new(T), err))
	}
	plain(s)
	if amend != nil {
		amend(s)
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("serve: the input schema of %T does not encode: %v", *new(T), err))
	}
	return b
}

// plain applies inputSchema's two differences to s and its subschemas.
func plain(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if ap := s.AdditionalProperties; ap != nil && (ap.Not != nil && isEmptySchema(ap.Not) || isEmptySchema(ap)) {
		// false (Go's closed structs) is not what the handlers do; true
		// (a map's) says nothing: the default.
		s.AdditionalProperties = nil
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		s.Type = s.Types[0]
		if s.Type == "null" {
			s.Type = s.Types[1]
		}
		s.Types = nil
	}
	if s.Type == "object" && s.Properties == nil && s.AdditionalProperties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
	for _, p := range s.Properties {
		plain(p)
	}
	plain(s.Items)
	plain(s.AdditionalProperties)
}

func isEmptySchema(s *jsonschema.Schema) bool {
	b, err := json.Marshal(s)
	return err == nil && string(b) == "true"
}

// prop returns the schema of property name of s, for amending it; it panics
// if there is no such property, so that an amendment cannot outlive a
// renamed field.
func prop(s *jsonschema.Schema, name string) *jsonschema.Schema {
	p := s.Properties[name]
	if p == nil {
		panic(fmt.Sprintf("serve: the input schema has no property %q to amend", name))
	}
	return p
}

// mounted is a configured surface and the names of the tools it serves now.
type mounted struct {
	Surface
	name   string
	served map[string]bool
}

// register (re)registers the tools of every configured surface for the
// servers known so far: a tool whose definition changed is registered again,
// and one its surface no longer returns is removed. A name that an earlier
// surface already serves is skipped, with a warning (the config refuses the
// collisions it can foresee).
func (s *Server) register(servers []*catalog.Server) {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	seen := map[string]bool{}
	var stale []string
	for _, sf := range s.surfaces {
		now := map[string]bool{}
		for _, t := range sf.Tools(servers) {
			name := t.Tool.Name
			if seen[name] {
				s.log.Warn("two surfaces serve a tool of the same name; the first one wins", "tool", name, "surface", sf.name)
				continue
			}
			seen[name], now[name] = true, true
			s.addTool(t, sf.name)
		}
		for name := range sf.served {
			if !now[name] {
				stale = append(stale, name)
			}
		}
		sf.served = now
	}
	stale = slices.DeleteFunc(stale, func(n string) bool { return seen[n] })
	if len(stale) > 0 {
		s.mcp.RemoveTools(stale...)
		s.mu.Lock()
		for _, n := range stale {
			delete(s.tools, n)
		}
		s.mu.Unlock()
	}
}

// addTool registers or replaces a tool of surface if its definition
// changed.
func (s *Server) addTool(t Tool, surface string) {
	def, err := json.Marshal(t.Tool)
	if err != nil {
		s.log.Error("a tool definition does not encode; it is not served", "tool", t.Tool.Name, "err", err)
		return
	}
	s.mu.Lock()
	prev, seen := s.tools[t.Tool.Name]
	s.tools[t.Tool.Name] = string(def)
	s.mu.Unlock()
	if seen && prev == string(def) {
		return
	}
	s.mcp.AddTool(t.Tool, s.track(t.Handler, surface))
}
