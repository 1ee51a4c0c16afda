package serve

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/normalize"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/typegen"
)

// The files surface: Bifrost's three tools, a virtual tree of .d.ts files, a
// reader with line ranges, and an executor where each server is a global
// object.

// readFileArgs are readToolFile's arguments.
type readFileArgs struct {
	FileName  string `json:"fileName" jsonschema:"a path from listToolFiles, e.g. servers/github.d.ts"`
	StartLine int    `json:"startLine,omitempty" jsonschema:"1-based, inclusive"`
	EndLine   int    `json:"endLine,omitempty" jsonschema:"1-based, inclusive"`
}

var (
	listFilesInput = newInput[struct{}]("{}", nil)
	readFileInput  = newInput[readFileArgs](`{"fileName": "servers/<id>.d.ts", "startLine"?: n ≥ 1, "endLine"?: n ≥ 1}`,
		func(s *jsonschema.Schema) {
			prop(s, "startLine").Minimum = ptr(1.0)
			prop(s, "endLine").Minimum = ptr(1.0)
		})
	executeCodeInput = execInput("const r = await <server>.<tool>({...}); return r")
)

type filesSurface struct{ s *Server }

func newFilesSurface(s *Server) Surface { return filesSurface{s} }

func (f filesSurface) Tools(servers []*catalog.Server) []Tool {
	return []Tool{
		listFilesInput.tool(&mcp.Tool{
			Name:        "listToolFiles",
			Title:       "List tool declaration files",
			Description: "List the virtual TypeScript declaration files of the connected MCP servers' tools (and codemode.d.ts, the types they share). Read them with readToolFile, then call the tools with executeToolCode.",
			Annotations: &mcp.ToolAnnotations{Title: "List tool files", ReadOnlyHint: true},
		}, f.listFiles),
		readFileInput.tool(&mcp.Tool{
			Name:        "readToolFile",
			Title:       "Read a tool declaration file",
			Description: "Read a .d.ts file listed by listToolFiles, whole or from startLine to endLine.",
			Annotations: &mcp.ToolAnnotations{Title: "Read tool file", ReadOnlyHint: true},
		}, f.readFile),
		executeCodeInput.tool(&mcp.Tool{
			Name:  "executeToolCode",
			Title: "Execute TypeScript with tool bindings",
			Description: "Run TypeScript as the body of an async function (`return` the result) in which each server is a global object named by its id (\"-\" becomes \"_\"): const r = await " + exampleCall(servers) + "; return r;\n" +
				unwrapDoc + "\n" + errorsDoc + "\n" + policyDoc(f.s.cfg) + sandboxDoc + " 30 s timeout.",
			Annotations: &mcp.ToolAnnotations{Title: "Execute tool code", OpenWorldHint: ptr(true)},
		}, f.executeCode),
	}
}

// stdlibFile is the file of the types every server file refers to
// (ToolResult, CodeMode.*), the discovery and error modules and the
// sandbox globals.
const stdlibFile = "codemode.d.ts"

// files returns the virtual tree: path → server and tool (both empty for
// stdlibFile and the tool empty for a server-level file).
func (f filesSurface) files(ctx context.Context) (map[string][2]string, []*catalog.Server) {
	s := f.s
	// A server that never finishes listing its tools must not hold the
	// answer for as long as its calls may take (callTimeoutMs): it waits
	// as long as tools/list does, then the files are those of the others.
	ctx, cancel := context.WithTimeout(ctx, s.opts.WarmupTimeout)
	defer cancel()
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

func (f filesSurface) listFiles(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
	files, _ := f.files(ctx)
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

func (f filesSurface) readFile(ctx context.Context, _ *mcp.CallToolRequest, in readFileArgs) (*mcp.CallToolResult, error) {
	if in.FileName == "" {
		return errorResult("readToolFile: call it with " + readFileInput.usage), nil
	}
	files, servers := f.files(ctx)
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
		text = f.s.decls.get(srv, globalForm).text
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
	if start > len(lines) {
		return errorResult(fmt.Sprintf("startLine %d is past the end of %s, which has %d lines", in.StartLine, name, len(lines))), nil
	}
	if start > end {
		return errorResult(fmt.Sprintf("startLine %d is after endLine %d (%s has %d lines)", in.StartLine, in.EndLine, name, len(lines))), nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(lines[start-1:end], "\n")}}}, nil
}

func (f filesSurface) executeCode(ctx context.Context, _ *mcp.CallToolRequest, in execArgs) (*mcp.CallToolResult, error) {
	// Bifrost's form: a function body that returns its result.
	resp := f.s.runner.RunWith(ctx, run.Request{Code: in.Code, Limits: config.Limits{TimeoutMs: executeTimeoutMs}, DryRun: in.DryRun},
		run.Extra{Normalize: &normalize.Options{Mode: normalize.Body, Imports: interfacesImport(in.Code), Async: f.s.serverGlobals()}, Prelude: []string{globalsModule}, Modules: f.s.globalsModules, Ops: f.s.interfacesOps, LimitParams: fixedLimits})
	f.s.hintServerKeys(ctx, resp, "listToolFiles shows their declarations")
	hintUndefined(resp, f.s.globalsFix("listToolFiles and readToolFile show the tools' declarations, and __interfaces holds them as text"))
	f.s.missingTools(ctx, resp)
	return responseResult(resp, ""), nil
}
