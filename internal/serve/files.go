package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/transpile"
	"github.com/codemode-mcp/codemode/internal/typegen"
)

// Bifrost's three tools: a virtual tree of .d.ts files, a reader with line
// ranges, and an executor where each server is a global object.

var listFilesSchema = json.RawMessage(`{"type":"object","properties":{}}`)

var readFileSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"fileName":{"type":"string","description":"a path from listToolFiles, e.g. servers/github.d.ts"},` +
	`"startLine":{"type":"integer","minimum":1,"description":"1-based, inclusive"},` +
	`"endLine":{"type":"integer","minimum":1,"description":"1-based, inclusive"}},"required":["fileName"]}`)

const readFileUsage = `{"fileName": "servers/<id>.d.ts", "startLine"?: n ≥ 1, "endLine"?: n ≥ 1}`

func (s *Server) registerFiles(servers []*catalog.Server) {
	s.addTool(&mcp.Tool{
		Name:        "listToolFiles",
		Title:       "List tool declaration files",
		Description: "List the virtual TypeScript declaration files of the connected MCP servers' tools (and codemode.d.ts, the types they share). Read them with readToolFile, then call the tools with executeToolCode.",
		InputSchema: listFilesSchema,
		Annotations: &mcp.ToolAnnotations{Title: "List tool files", ReadOnlyHint: true},
	}, checked("listToolFiles", listFilesSchema, "{}", s.handleListFiles))
	s.addTool(&mcp.Tool{
		Name:        "readToolFile",
		Title:       "Read a tool declaration file",
		Description: "Read a .d.ts file listed by listToolFiles, whole or from startLine to endLine.",
		InputSchema: readFileSchema,
		Annotations: &mcp.ToolAnnotations{Title: "Read tool file", ReadOnlyHint: true},
	}, checked("readToolFile", readFileSchema, readFileUsage, s.handleReadFile))
	s.addTool(&mcp.Tool{
		Name:  "executeToolCode",
		Title: "Execute TypeScript with tool bindings",
		Description: "Run TypeScript as the body of an async function (`return` the result) in which each server is a global object named by its id (\"-\" becomes \"_\"): const r = await " + exampleCall(servers) + "; return r;\n" +
			unwrapDoc + "\n" + errorsDoc + "\n" + sandboxDoc + " 30 s timeout.",
		InputSchema: codeSchema,
		Annotations: &mcp.ToolAnnotations{Title: "Execute tool code", OpenWorldHint: ptr(true)},
	}, checked("executeToolCode", codeSchema, codeUsage("const r = await <server>.<tool>({...}); return r"), s.handleExecuteCode))
}

// stdlibFile is the file of the types every server file refers to
// (ToolResult, CodeMode.*), the discovery and error modules and the
// sandbox globals.
const stdlibFile = "codemode.d.ts"

// files returns the virtual tree: path → server and tool (both empty for
// stdlibFile and the tool empty for a server-level file).
func (s *Server) files(ctx context.Context) (map[string][2]string, []*catalog.Server) {
	servers, _ := s.cat.View().All(ctx)
	out := map[string][2]string{stdlibFile: {}}
	for _, srv := range servers {
		if s.cfg.Serve.BindingLevel == "tool" {
			for _, t := range srv.Tools {
				out["servers/"+srv.ID+"/"+t.ExportName+".d.ts"] = [2]string{srv.ID, t.Name}
			}
			continue
		}
		out["servers/"+srv.ID+".d.ts"] = [2]string{srv.ID, ""}
	}
	return out, servers
}

func (s *Server) handleListFiles(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	files, _ := s.files(ctx)
	paths := make([]string, 0, len(files))
	for p := range files {
		if strings.HasPrefix(p, "servers/") {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var b strings.Builder
	b.WriteString(stdlibFile + "\n")
	if len(paths) == 0 {
		b.WriteString("servers/ (empty: no MCP server is connected)")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, nil
	}
	b.WriteString("servers/\n")
	lastDir := ""
	for _, p := range paths {
		rel := strings.TrimPrefix(p, "servers/")
		if dir, file, ok := strings.Cut(rel, "/"); ok {
			if dir != lastDir {
				fmt.Fprintf(&b, "  %s/\n", dir)
				lastDir = dir
			}
			fmt.Fprintf(&b, "    %s\n", file)
			continue
		}
		fmt.Fprintf(&b, "  %s\n", rel)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimRight(b.String(), "\n")}}}, nil
}

func (s *Server) handleReadFile(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		FileName  string `json:"fileName"`
		StartLine int    `json:"startLine"`
		EndLine   int    `json:"endLine"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || in.FileName == "" {
		return errorResult("readToolFile: call it with " + readFileUsage), nil
	}
	files, servers := s.files(ctx)
	name := path.Clean(strings.TrimPrefix(in.FileName, "/"))
	ref, ok := files[name]
	if !ok {
		list := make([]string, 0, len(files))
		for p := range files {
			list = append(list, p)
		}
		sort.Strings(list)
		return errorResult(fmt.Sprintf("%q is not a tool file. %s", in.FileName, diag.ListHint("files", list, 40))), nil
	}
	var srv *catalog.Server
	for _, x := range servers {
		if x.ID == ref[0] {
			srv = x
		}
	}
	var text string
	switch {
	case name == stdlibFile:
		text = typegen.Stdlib()
	case ref[1] == "":
		text = s.decls.get(srv, globalForm).text
	default:
		t, err := typegen.ToolDecl(Declarations(srv), ref[1], nil)
		if err != nil {
			return errorResult(err.Error()), nil
		}
		text = t
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	start, end := in.StartLine, in.EndLine
	if start <= 0 {
		start = 1
	}
	if end <= 0 || end > len(lines) {
		end = len(lines)
	}
	if start > end {
		return errorResult(fmt.Sprintf("startLine %d is after endLine %d (the file has %d lines)", in.StartLine, end, len(lines))), nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(lines[start-1:end], "\n")}}}, nil
}

func (s *Server) handleExecuteCode(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	code := codeArg(req.Params.Arguments)
	// Bifrost's form: a function body that returns its result.
	resp := s.runner.RunWith(ctx, run.Request{Code: code, Limits: config.Limits{TimeoutMs: executeTimeoutMs}},
		run.Extra{Transpile: transpile.Body(), Prelude: []string{globalsModule}, Modules: s.surfaceModules, Ops: s.surfaceOps, LimitParams: fixedLimits})
	s.hintServerKeys(resp)
	return responseResult(resp, ""), nil
}

// hintServerKeys turns "x is not defined" into a hint listing the server
// objects that do exist, since a wrong server name is the usual cause.
func (s *Server) hintServerKeys(resp *run.Response) {
	for i, d := range resp.Diagnostics {
		if d.Code != diag.UncaughtException || !strings.Contains(d.Message, "ReferenceError") || !strings.Contains(d.Message, "is not defined") {
			continue
		}
		servers, _ := s.cat.View().All(context.Background())
		keys := make([]string, len(servers))
		for j, srv := range servers {
			keys[j] = typegen.GlobalName(srv.ID)
		}
		resp.Diagnostics[i].Hint = "use one of the server objects: " + strings.Join(keys, ", ") + " (listToolFiles shows their declarations)"
		if len(keys) == 0 {
			resp.Diagnostics[i].Hint = "no MCP server is connected, so there are no server objects"
		}
	}
}
