package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// This file serves @codemode/discovery (§4.1–4.3).

// ServerInfo is §4.2.1, plus the connection status: "connected", "error",
// "connecting" for a server still starting, or "backoff" for a server that
// failed or died and will be restarted on the first use after retryInMs.
type ServerInfo struct {
	ServerID     string   `json:"serverId"`
	ServerName   string   `json:"serverName"`
	Capabilities []string `json:"capabilities,omitempty"`
	Status       string   `json:"status"`
	Error        string   `json:"error,omitempty"`
	RetryInMs    int64    `json:"retryInMs,omitempty"`
}

// ServerDescription is §4.2.2.
type ServerDescription struct {
	ServerInfo
	Description string `json:"description,omitempty"`
	Version     string `json:"version,omitempty"`
	Title       string `json:"title,omitempty"`
	ToolCount   int    `json:"toolCount"`
}

// ToolDefinition is §4.2.3/4.2.4; ServerID is set in search results
// (§4.2.5). Which fields are filled depends on the detail level (§4.3).
type ToolDefinition struct {
	ServerID    string `json:"serverId,omitempty"`
	ToolName    string `json:"toolName"`
	ExportName  string `json:"exportName"`
	Description string `json:"description,omitempty"`
	Annotations any    `json:"annotations,omitempty"`
	// Execution is MCP's execution.taskSupport, when the tool declared
	// "optional" or "required" task support: such a tool runs as an MCP
	// task, which its call waits for (upstream/tasks.go).
	Execution    *Execution `json:"execution,omitempty"`
	InputSchema  any        `json:"inputSchema,omitempty"`
	OutputSchema any        `json:"outputSchema,omitempty"`
	// RequiresApproval: the gateway's policy asks the user before every
	// call of the tool (at every detail level).
	RequiresApproval bool `json:"requiresApproval,omitempty"`
}

// Execution is a tool's MCP execution properties.
type Execution struct {
	TaskSupport string `json:"taskSupport"`
}

// Detail levels (§4.3).
const (
	DetailName        = "name"
	DetailDescription = "description"
	DetailFull        = "full"
)

// Define renders a tool at a detail level.
func Define(t *catalog.Tool, detail string) ToolDefinition {
	d := ToolDefinition{ToolName: t.Name, ExportName: t.ExportName, RequiresApproval: t.NeedsApproval}
	if detail == DetailName {
		return d
	}
	d.Description = t.Tool.Description
	if t.Tool.Annotations != nil {
		d.Annotations = t.Tool.Annotations
	}
	if t.TaskSupport != "" {
		d.Execution = &Execution{TaskSupport: t.TaskSupport}
	}
	if detail == DetailFull {
		d.InputSchema = t.Tool.InputSchema
		d.OutputSchema = t.Tool.OutputSchema
	}
	return d
}

type options struct {
	Detail   string `json:"detail"`
	ServerID string `json:"serverId"`
	Limit    int    `json:"limit"`
}

// DefaultSearchLimit and MaxSearchLimit bound searchTools results.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 100
)

func badArgument(fn, msg, hint string) *diag.Error {
	return &diag.Error{Class: diag.CodemodeError, Message: fn + ": " + msg, Hint: hint}
}

// args decodes a discovery call's positional arguments: a string and an
// optional options object.
// jsonKind names a Go type of an options field as the agent wrote it.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "a whole number"
	case reflect.Bool:
		return "true or false"
	}
	return "a " + t.String()
}

func args(fn string, payload json.RawMessage, strName string) (string, options, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(payload, &raw); err != nil {
		return "", options{}, badArgument(fn, "malformed arguments", "call it as documented")
	}
	var s string
	if len(raw) < 1 || json.Unmarshal(raw[0], &s) != nil {
		return "", options{}, badArgument(fn, strName+" must be a string", fmt.Sprintf("call %s(%s: string, ...)", fn, strName))
	}
	var o options
	if len(raw) > 1 && string(raw[1]) != "null" {
		if err := json.Unmarshal(raw[1], &o); err != nil {
			var ute *json.UnmarshalTypeError
			if errors.As(err, &ute) && ute.Field != "" {
				return "", options{}, badArgument(fn, fmt.Sprintf("options.%s must be %s, not %s", ute.Field, jsonKind(ute.Type), ute.Value),
					`pass { detail?: "name" | "description" | "full", serverId?: string, limit?: integer }`)
			}
			return "", options{}, badArgument(fn, "options must be an object like { detail: \"name\" }", `pass { detail: "name" | "description" | "full" }`)
		}
	}
	switch o.Detail {
	case "":
		o.Detail = DetailDescription
	case DetailName, DetailDescription, DetailFull:
	default:
		return "", options{}, badArgument(fn, fmt.Sprintf("unknown detail %q", o.Detail), `use detail "name", "description" or "full"`)
	}
	return s, o, nil
}

// listPatience is how long listServers waits for a server that is still
// starting before reporting it as "connecting": one stuck server must not
// hold up the list of the others until the run times out.
const listPatience = 5 * time.Second

func (v *View) listServers(ctx context.Context) (json.RawMessage, error) {
	patience := listPatience
	if d, ok := ctx.Deadline(); ok {
		// Leave the script time to use the answer.
		patience = min(patience, time.Until(d)/2)
	}
	pctx, cancel := catalog.WithPatience(ctx, patience)
	defer cancel()
	servers, failed := v.cat.All(pctx)
	byID := map[string]*catalog.Server{}
	for _, s := range servers {
		byID[s.ID] = s
	}
	out := []ServerInfo{}
	for _, id := range v.cat.IDs() {
		cfg, _ := v.cat.Config(id)
		info := ServerInfo{ServerID: id, ServerName: cfg.Name, Status: "connected"}
		if s := byID[id]; s != nil {
			info.Capabilities = s.Capabilities()
		} else {
			info.Status = "error"
			if err := failed[id]; err != nil {
				info.Error = err.Error()
			}
			switch st, _ := v.cat.Status(id); st.State {
			case upstream.StateBackoff:
				info.Status = "backoff"
				info.RetryInMs = max(time.Until(st.RetryAt).Milliseconds(), 1)
			case upstream.StateConnecting:
				info.Status = "connecting"
				info.Error = "still starting: no answer to initialize yet; call listServers() again later"
			}
		}
		out = append(out, info)
	}
	return json.Marshal(out)
}

func (v *View) server(ctx context.Context, id string) (*catalog.Server, error) {
	s, err := v.connect(ctx, id)
	if err != nil {
		return nil, serverError(id, err, v.cat.IDs(), v.r.cfg.Disabled)
	}
	return s, nil
}

// connect is v.cat.Server, waiting for a server that is still starting at
// most three quarters of the time left before ctx's deadline (the run's),
// so that the script has time left to handle the failure: an import of a
// server whose handshake never completes would otherwise take the whole
// run with it, uncatchably, since the upstream's own connect timeout is as
// long as a run's default. The server goes on starting in the background;
// a later use waits for it again, on the same terms. A server still
// starting when the wait ends gives a *stillStarting.
func (v *View) connect(ctx context.Context, id string) (*catalog.Server, error) {
	if s, err, ok := v.cat.Cached(id); ok {
		return s, err // the common case: no wait, nothing to bound
	}
	dl, ok := ctx.Deadline()
	if !ok {
		return v.cat.Server(ctx, id)
	}
	patience := time.Until(dl) * 3 / 4
	pctx, cancel := catalog.WithPatience(ctx, patience)
	defer cancel()
	s, err := v.cat.Server(pctx, id)
	if err != nil && ctx.Err() == nil && pctx.Err() != nil {
		return nil, &stillStarting{id: id, waited: patience}
	}
	return s, err
}

// stillStarting: a server did not finish starting within connect's wait.
type stillStarting struct {
	id     string
	waited time.Duration
}

func (e *stillStarting) Error() string {
	return fmt.Sprintf("server %q did not finish starting within %s (no answer to initialize yet); it goes on starting in the background", e.id, roundWait(e.waited))
}

func roundWait(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

func (v *View) describeServer(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	id, _, err := args("describeServer", payload, "serverId")
	if err != nil {
		return nil, err
	}
	s, err := v.server(ctx, id)
	if err != nil {
		return nil, err
	}
	d := ServerDescription{ServerInfo: ServerInfo{ServerID: s.ID, ServerName: s.Name, Capabilities: s.Capabilities(), Status: "connected"},
		Description: s.Snapshot.Instructions, Version: s.Version(), ToolCount: len(s.Tools)}
	if info := s.Snapshot.Info; info != nil {
		d.Title = info.Title
	}
	return json.Marshal(d)
}

func (v *View) listTools(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	id, o, err := args("listTools", payload, "serverId")
	if err != nil {
		return nil, err
	}
	s, err := v.server(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]ToolDefinition, len(s.Tools))
	for i, t := range s.Tools {
		out[i] = Define(t, o.Detail)
	}
	return json.Marshal(out)
}

func (v *View) getTool(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	var raw []json.RawMessage
	var id, name string
	if json.Unmarshal(payload, &raw) != nil || len(raw) < 2 || json.Unmarshal(raw[0], &id) != nil || json.Unmarshal(raw[1], &name) != nil {
		return nil, badArgument("getTool", "serverId and toolName must be strings", "call getTool(serverId, toolName)")
	}
	s, err := v.server(ctx, id)
	if err != nil {
		return nil, err
	}
	t := s.Lookup(name)
	if t == nil {
		return nil, toolNotFound(s, name)
	}
	return json.Marshal(Define(t, DetailFull))
}

// SearchResults is §4.2.5.
type SearchResults struct {
	Query   string           `json:"query"`
	Results []ToolDefinition `json:"results"`
}

// maxQueryBytes bounds a searchTools query: search time grows with it, and
// a useful query is a few words.
const maxQueryBytes = 1000

func (v *View) searchTools(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	q, o, err := args("searchTools", payload, "query")
	if err != nil {
		return nil, err
	}
	if len(q) > maxQueryBytes {
		return nil, badArgument("searchTools", fmt.Sprintf("the query is %d bytes; at most %d are searched", len(q), maxQueryBytes), "search with a few words that describe the tool")
	}
	limit := o.Limit
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	limit = min(limit, MaxSearchLimit)
	var servers []*catalog.Server
	if o.ServerID != "" {
		s, err := v.server(ctx, o.ServerID)
		if err != nil {
			return nil, err
		}
		servers = []*catalog.Server{s}
	} else {
		servers, _ = v.cat.All(ctx)
	}
	res := SearchResults{Query: q, Results: []ToolDefinition{}}
	// Bounded by the run (its deadline, its cancellation) and by the work
	// one search may do, whatever the catalog's size.
	hits, err := catalog.SearchWithin(catalog.NewBudget(ctx, catalog.MaxSearchWork, nil), servers, q, limit)
	if errors.Is(err, catalog.ErrBudgetSpent) {
		return nil, badArgument("searchTools", fmt.Sprintf("the query %q has too many terms to rank over %d servers' tools in one search", v.r.redact.Cut(q, 80), len(servers)),
			"search with a few words that describe the tool, or pass serverId to search one server")
	}
	if err != nil {
		return nil, err
	}
	for _, h := range hits {
		d := Define(h.Tool, o.Detail)
		d.ServerID = h.Server.ID
		res.Results = append(res.Results, d)
	}
	return json.Marshal(res)
}
