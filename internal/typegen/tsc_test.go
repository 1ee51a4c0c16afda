package typegen

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/testutil"
)

// These tests run the real TypeScript compiler (testdata/npm, TypeScript 7)
// once over everything the generator produces for the corpus, the golden
// cases and random schemas, together with agent scripts that must and must
// not type-check; and the command codemode.d.ts prints, as printed, with
// TypeScript 7 and 5.4.

// The compilers of testdata/npm: TypeScript 7 is the package "typescript",
// 5.4 the alias "typescript5". Both install a bin named tsc, so .bin/tsc is
// whichever npm linked last: the tests run each package's own.
const (
	typeScript7 = "typescript"
	typeScript5 = "typescript5"
)

// requireTSC returns the tsc script of package pkg (see typeScript7).
func requireTSC(t *testing.T, pkg string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "npm", "node_modules", pkg, "bin", "tsc"))
	if err == nil {
		_, err = os.Stat(p)
	}
	if err != nil {
		t.Fatalf("TypeScript is not installed (%v): run `make test` or `npm ci --prefix testdata/npm`", err)
	}
	return p
}

// tscError is one diagnostic of `tsc --pretty false`.
type tscError struct {
	file string
	line int
	code string
	msg  string
}

var tscLine = regexp.MustCompile(`^(.+?)\((\d+),(\d+)\): error (TS\d+): (.*)$`)

// stdlibLibs is the --lib list the header of codemode.d.ts tells scripts to
// be checked with (§3.5: es2023 without what the sandbox deletes, no DOM).
func stdlibLibs(t *testing.T) []string {
	m := regexp.MustCompile(`--lib (es5\S*)`).FindStringSubmatch(Stdlib())
	if m == nil {
		t.Fatal("codemode.d.ts does not state its --lib list")
	}
	return strings.Split(m[1], ",")
}

// runTSC writes files (relative path → content) and a tsconfig.json into a
// temporary directory, runs tsc once with the options a script is checked
// with (the libs of stdlibLibs, no @types), and returns its errors by file.
func runTSC(t *testing.T, files map[string]string) map[string][]tscError {
	t.Helper()
	tsc := requireTSC(t, typeScript7)
	dir := t.TempDir()
	names := make([]string, 0, len(files))
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, strconv.Quote(name))
	}
	sort.Strings(names)
	libs := stdlibLibs(t)
	for i, l := range libs {
		libs[i] = strconv.Quote(l)
	}
	tsconfig := `{
  "compilerOptions": {
    "strict": true, "noEmit": true, "target": "es2023", "lib": [` + strings.Join(libs, ",") + `], "types": [],
    "module": "esnext", "moduleResolution": "bundler", "skipLibCheck": false,
    "noUnusedLocals": false, "pretty": false
  },
  "files": [` + strings.Join(names, ",") + `]
}`
	if err := os.WriteFile(filepath.Join(dir, "tsconfig.json"), []byte(tsconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := testutil.Context(t)
	cmd := exec.CommandContext(ctx, testutil.Node(t), tsc, "-p", "tsconfig.json")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running tsc: %v\n%s", err, out)
	}
	errs := map[string][]tscError{}
	var last *tscError
	for _, l := range strings.Split(string(out), "\n") {
		m := tscLine.FindStringSubmatch(l)
		if m == nil {
			if last != nil && strings.HasPrefix(l, " ") {
				last.msg += "\n" + l // continuation of a multi-line message
			} else if strings.TrimSpace(l) != "" {
				errs[""] = append(errs[""], tscError{msg: l})
			}
			continue
		}
		n, _ := strconv.Atoi(m[2])
		file := filepath.ToSlash(m[1])
		errs[file] = append(errs[file], tscError{file: file, line: n, code: m[4], msg: m[5]})
		last = &errs[file][len(errs[file])-1]
	}
	if err != nil && len(errs) == 0 {
		t.Fatalf("tsc failed without diagnostics:\n%s", out)
	}
	return errs
}

// generatedFiles renders the stdlib, every corpus server (module and global
// form, and every tool's declaration), every golden case and 150 servers of
// random schemas (random_test.go).
func generatedFiles(t *testing.T) map[string]string {
	files := map[string]string{"codemode.d.ts": Stdlib()}
	add := func(prefix string, s Server, opts *Options) {
		mod, _ := ServerModule(s, opts)
		glob, _ := ServerGlobal(s, opts)
		files[prefix+"/module/"+s.ID+".d.ts"] = mod
		files[prefix+"/global/"+s.ID+".d.ts"] = glob
		for i, d := range ToolDecls(s, opts) {
			// Each tool file declares the server's global on its own: make it
			// a module so that they can be checked side by side.
			files[fmt.Sprintf("%s/tool/%s/%d.d.ts", prefix, s.ID, i)] = d + "export {};\n"
		}
	}
	for _, cs := range loadCorpus(t) {
		add("corpus", cs.server(), nil)
	}
	ids := map[string]string{}
	for _, c := range loadGolden(t) {
		if other, dup := ids[c.server.ID]; dup {
			t.Fatalf("golden cases %s and %s use the same server id %q", other, c.name, c.server.ID)
		}
		ids[c.server.ID] = c.name
		add("golden", c.server, c.opts)
	}
	for _, s := range randomServers(t, 1, 150) {
		add("random", s, nil)
	}
	return files
}

var (
	commentsAndStrings = regexp.MustCompile("(?s)/\\*.*?\\*/|\"(?:[^\"\\\\]|\\\\.)*\"|`(?:[^`\\\\]|\\\\.)*`")
	anyType            = regexp.MustCompile(`\bany\b\s*[^?:\s]`)
)

// typesMentionAny reports whether TypeScript declarations use the type
// `any` (outside comments and string literals; a property named any is
// fine).
func typesMentionAny(src string) bool {
	return anyType.MatchString(commentsAndStrings.ReplaceAllString(src, "") + " ;")
}

// expectations reads `// error` markers: each marked line of a script must
// have at least one tsc error, and unmarked lines none.
func expectations(src string) map[int]bool {
	want := map[int]bool{}
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, "// error") {
			want[i+1] = true
		}
	}
	return want
}

func TestTypeScript(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tsc over the whole corpus")
	}
	files := generatedFiles(t)
	for name, src := range agentScripts {
		files["scripts/"+name] = src
	}
	for name, src := range files {
		if strings.HasPrefix(name, "scripts/") || name == "codemode.d.ts" {
			continue
		}
		if typesMentionAny(src) {
			t.Errorf("%s: the declarations use any", name)
		}
	}
	errs := runTSC(t, files)
	n := 0
	for _, es := range errs {
		n += len(es)
	}
	t.Logf("tsc checked %d files: %d errors in total", len(files), n)

	for file, es := range errs {
		if strings.HasPrefix(file, "scripts/") {
			continue
		}
		for i, e := range es {
			if i == 10 {
				t.Errorf("%s: … %d more errors", file, len(es)-10)
				break
			}
			t.Errorf("%s(%d): %s: %s", file, e.line, e.code, e.msg)
		}
	}
	var scripts []string
	for name := range agentScripts {
		scripts = append(scripts, name)
	}
	sort.Strings(scripts)
	for _, name := range scripts {
		want := expectations(agentScripts[name])
		got := map[int][]tscError{}
		for _, e := range errs["scripts/"+name] {
			got[e.line] = append(got[e.line], e)
		}
		for line := range want {
			if len(got[line]) == 0 {
				t.Errorf("scripts/%s:%d: expected a type error, tsc accepted the line", name, line)
			}
		}
		for line, es := range got {
			if !want[line] {
				for _, e := range es {
					t.Errorf("scripts/%s:%d: unexpected %s: %s", name, line, e.code, e.msg)
				}
			}
		}
	}
}

// agentScripts are scripts an agent could write against the corpus servers
// and the standard library, each checked as its own module. Lines marked
// `// error` must be rejected; all others must type-check.
var agentScripts = map[string]string{
	"good.ts": `import * as everything from "@codemode/servers/server-everything";
import * as memory from "@codemode/servers/server-memory";
import * as fs from "@codemode/servers/server-filesystem";
import { searchTools, getTool, listServers, describeServer, listTools, specVersion } from "@codemode/discovery";
import { CodemodeError, SchemaValidationError, ToolCallError, SandboxLimitError } from "@codemode/errors";

const sum = await everything.get_sum({ a: 1, b: 2 });
if (typeof sum === "string") console.log(sum.toUpperCase());
else if (Array.isArray(sum.content)) console.log(sum.content.length, sum.isError);
else console.log(Object.keys(sum)); // structuredContent
const weather = await everything.get_structured_content({ location: "Chicago" });
const celsius: number = weather.temperature;
await everything.echo({ message: "hi" });
await everything.get_env();
await everything.get_env({});
await everything.get_resource_links();
await everything.gzip_file_as_resource({ outputType: "resource" });
const graph = await memory.read_graph();
for (const e of graph.entities) console.log(e.name, e.entityType, e.observations.join(","));
for (const r of graph.relations) console.log(r.from, r.to, r.relationType);
await memory.create_entities({ entities: [{ name: "a", entityType: "person", observations: [] }] });
await memory.create_relations({ relations: [{ from: "a", to: "b", relationType: "knows" }] });
const file = await fs.read_text_file({ path: "/tmp/x", head: 3 });
console.log(file.content.length);
await fs.edit_file({ path: "/tmp/x", edits: [{ oldText: "a", newText: "b" }], dryRun: true });
try {
  await fs.write_file({ path: "/tmp/y", content: "z" });
} catch (e) {
  if (e instanceof SchemaValidationError) console.error(e.path, e.expected, e.received, e.hint, e.exportName);
  else if (e instanceof ToolCallError) console.error(e.toolName, e.result);
  else if (e instanceof SandboxLimitError) console.error(e.limit, e.value ?? "no value");
  else if (e instanceof CodemodeError) console.error(e.hint, e.message);
  throw new CodemodeError("write failed", { hint: "retry", cause: e });
}
const found = await searchTools("github issues", { detail: "full", limit: 3 });
for (const r of found.results) console.log(r.serverId, r.exportName, r.inputSchema, r.annotations?.readOnlyHint);
const servers = await listServers();
for (const s of servers) if (s.status === "backoff" || s.status === "connecting") console.log(s.retryInMs ?? 0, s.error);
const desc = await describeServer(servers[0].serverId);
console.log(desc.toolCount, specVersion, (await listTools("server-memory", { detail: "name" })).length);
const tool = await getTool("server-memory", "read_graph");
console.log(tool.description, everything.__meta__.serverId, everything.__meta__.tools[0].exportName);
const timer = setTimeout((x: number) => console.debug(x), 10, 1);
clearTimeout(timer);
clearTimeout();
const bytes = new TextEncoder().encode("x");
console.warn(new TextDecoder().decode(bytes), new URL("https://example.com/?a=1").searchParams.get("a"));
const parsed: URL | null = URL.parse("/a", "https://example.com");
console.log(URL.canParse("nope"), parsed?.pathname);
const params = new URLSearchParams({ q: "x" });
for (const [k, v] of params) console.log(k, v);
const encoded: string = btoa("hi"), decoded: string = atob(encoded);
const copy = structuredClone({ when: new Date(), tags: new Set(["a"]) }, { transfer: [new ArrayBuffer(1)] });
console.log(copy.when.getTime(), copy.tags.has("a"), decoded, new ArrayBuffer().byteLength);
queueMicrotask(() => console.log("later"));
try { atob("%"); } catch (e) { if (e instanceof DOMException) console.log(e.name, e.code === DOMException.INVALID_CHARACTER_ERR); }
globalThis.__codemode_result__ = { celsius, entities: graph.entities.length };
`,
	"bad.ts": `import * as everything from "@codemode/servers/server-everything";
import * as memory from "@codemode/servers/server-memory";
import * as fs from "@codemode/servers/server-filesystem";
import { no_such_tool } from "@codemode/servers/server-everything"; // error
await everything.get_sum({ a: "1", b: 2 }); // error
await everything.echo({}); // error
await everything.get_structured_content({ location: "Paris" }); // error
await memory.create_entities({ entities: [{ name: "a", entityType: "person" }] }); // error
await fs.list_directory_with_sizes({ path: "/", sortBy: "date" }); // error
await fs.read_text_file("/tmp/x"); // error
const w = await everything.get_structured_content({ location: "Chicago" });
const s: string = w.temperature; // error
const meta: number = everything.__meta__.serverId; // error
const sum = await everything.get_sum({ a: 1, b: 2 });
if (typeof sum !== "string") console.log(sum.content.length); // error
import { SandboxLimitError, SchemaValidationError } from "@codemode/errors";
declare const e: unknown;
if (e instanceof SandboxLimitError) console.log(e.value.toFixed()); // error
if (e instanceof SchemaValidationError) console.log(e.path.length); // error
`,
	"forbidden.ts": `const r = await fetch("https://example.com"); // error
setInterval(() => {}, 1000); // error
const m = require("fs"); // error
console.log(process.env.HOME); // error
console.info("info", console.trace("t"), console.table([1]), console.dir({})); // logged at level "log"
console.group("no group"); // error
new XMLHttpRequest(); // error
new WebSocket("wss://x"); // error
new SharedArrayBuffer(8); // error
Atomics.load(new Int32Array(1), 0); // error
new WeakRef({}); // error
new FinalizationRegistry(() => {}); // error
new Intl.ListFormat("en"); // error
new Intl.Segmenter("en"); // error
queueMicrotask("not a function"); // error
btoa(); // error
export {};
`,
	// Scripts against golden cases: calls the schemas allow must type-check
	// (branches that declare no property forbid nothing, properties named
	// after Object members can be left out, integer enums written as floats
	// keep their values), and calls they forbid must not.
	"golden_good.ts": `import * as branches from "@codemode/servers/branches";
import * as inherited from "@codemode/servers/inherited";
import * as numbers from "@codemode/servers/numbers";
await branches.conditional({ mode: "y" });
await branches.conditional({ mode: "x", c: "z" });
await branches.conditional();
await branches.negated_branch({ c: "z" });
await branches.all_empty({ opt: { k: "v" } });
await branches.all_empty({ opt: null, other: 1 });
await branches.closed_branch({});
await branches.closed_branch({ a: "x", b: 1 });
await branches.ref_sibling({ first: { x: "1" }, second: { y: 2 } });
await inherited.props({ a: "x", toLocaleString: "y" });
await inherited.props({ a: "x", toLocaleString: "y", constructor: "c", toString: 1, valueOf: { v: 1 }, hasOwnProperty: true, isPrototypeOf: ["p"], propertyIsEnumerable: 0 });
await inherited.props({ a: "x", toLocaleString: "y", nested: {} });
await inherited.props({ a: "x", toLocaleString: "y", nested: { constructor: "a" } });
await numbers.nums({ i: 2, j: 100, k: 5, n: 1e21, c: 2 });
await numbers.nums({ i: 1, j: 3, k: "5.0", n: 0.0000001 });
export {};
`,
	"golden_bad.ts": `import * as branches from "@codemode/servers/branches";
import * as inherited from "@codemode/servers/inherited";
import * as numbers from "@codemode/servers/numbers";
await branches.conditional({ mode: "z" }); // error
await branches.conditional({ mode: "x", c: 1 }); // error
await branches.closed_branch({ b: "x" }); // error
await branches.ref_sibling({ first: { x: 1 } }); // error
await inherited.props({ a: "x", toLocaleString: "y", constructor: 5 }); // error
await inherited.props({ a: "x", toLocaleString: "y", toString: "s" }); // error
await inherited.props({ a: "x", toLocaleString: "y", valueOf: { w: 1 } }); // error
await inherited.props({ a: "x", toLocaleString: "y", nested: { constructor: "c" } }); // error
await inherited.props({ a: "x" }); // error
await numbers.nums({ i: 3 }); // error
await numbers.nums({ i: 1, j: 2.5 }); // error
await numbers.nums({ i: 1, k: 0.5 }); // error
export {};
`,
	"global_good.ts": `const sum = await server_everything.get_sum({ a: 1, b: 2 });
const graph = await server_memory.read_graph();
console.log(sum, graph.entities.length);
const file = await server_filesystem.read_text_file({ path: "/x" });
console.log(file.content);
export {};
`,
	"global_bad.ts": `await server_everything.get_sum({ a: "1", b: 2 }); // error
await server_memory.create_entities({}); // error
await server_everything.get_structured_content({ location: "Paris" }); // error
await server_everything.no_such_tool(); // error
export {};
`,
}

// printedTSC returns the arguments of the tsc command that the header of
// codemode.d.ts prints (the line that starts with "tsc ").
func printedTSC(t *testing.T) []string {
	t.Helper()
	for _, l := range strings.Split(Stdlib(), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimLeft(l, " *"), "tsc "); ok {
			return strings.Fields(rest)
		}
	}
	t.Fatal("codemode.d.ts does not print a tsc command")
	return nil
}

// The command printed in codemode.d.ts works as printed with TypeScript 7
// and with 5.4, the oldest it promises: a script with top-level await, a
// server module and the sandbox's globals passes; one that uses what the
// sandbox lacks fails on exactly those lines, even with an @types package
// for Node installed where tsc runs.
func TestPrintedTSCCommand(t *testing.T) {
	args := printedTSC(t)
	var everything Server
	for _, cs := range loadCorpus(t) {
		if cs.id == "server-everything" {
			everything = cs.server()
		}
	}
	decl, _ := ServerModule(everything, nil)
	good := `import { get_sum, echo } from "@codemode/servers/server-everything";
import { listServers } from "@codemode/discovery";
import { SchemaValidationError } from "@codemode/errors";
const servers = await listServers();
const sum = await get_sum({ a: 1, b: 2 });
try { await echo({ message: "hi" }); } catch (e) { if (e instanceof SchemaValidationError) console.log(e.path); }
const bytes = new TextEncoder().encode(btoa("x") + atob("eA=="));
queueMicrotask(() => console.log(bytes.length));
globalThis.__codemode_result__ = structuredClone({ n: servers.length, sum, at: new Date(0), big: 10n ** 20n });
`
	bad := `import { get_sum } from "@codemode/servers/server-everything";
await get_sum({ a: "1", b: 2 }); // error
console.log(process.env.HOME); // error
const fs = require("fs"); // error
setInterval(() => {}, 1); // error
await fetch("https://example.com"); // error
new Intl.Segmenter("en"); // error
new SharedArrayBuffer(8); // error
export {};
`
	for _, pkg := range []string{typeScript7, typeScript5} {
		t.Run(pkg, func(t *testing.T) {
			tsc := requireTSC(t, pkg)
			dir := t.TempDir()
			files := map[string]string{
				"codemode.d.ts":                         Stdlib(),
				"server-everything.d.ts":                decl,
				"node_modules/@types/node/index.d.ts":   "declare var process: { env: Record<string, string> };\ndeclare function require(id: string): unknown;\n",
				"node_modules/@types/node/package.json": `{"name": "@types/node", "version": "22.0.0", "types": "index.d.ts"}`,
			}
			for name, text := range files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			run := func(script string) (string, error) {
				if err := os.WriteFile(filepath.Join(dir, "script.ts"), []byte(script), 0o644); err != nil {
					t.Fatal(err)
				}
				cmdArgs := []string{tsc}
				for _, a := range args {
					if a == "<servers>.d.ts" {
						a = "server-everything.d.ts"
					}
					cmdArgs = append(cmdArgs, a)
				}
				ctx := testutil.Context(t)
				cmd := exec.CommandContext(ctx, testutil.Node(t), cmdArgs...)
				cmd.Dir = dir
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			if out, err := run(good); err != nil || out != "" {
				t.Errorf("the good script: %v\n%s", err, out)
			}
			out, err := run(bad)
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the bad script: %v\n%s", err, out)
			}
			got := map[int]bool{}
			for _, l := range strings.Split(out, "\n") {
				if m := tscLine.FindStringSubmatch(l); m != nil {
					if m[1] != "script.ts" {
						t.Errorf("an error outside the script: %s", l)
						continue
					}
					n, _ := strconv.Atoi(m[2])
					got[n] = true
				} else if strings.HasPrefix(l, "error ") {
					t.Errorf("a command-line error: %s", l)
				}
			}
			want := expectations(bad)
			for line := range want {
				if !got[line] {
					t.Errorf("script.ts:%d: expected a type error\n%s", line, out)
				}
			}
			for line := range got {
				if !want[line] {
					t.Errorf("script.ts:%d: unexpected error\n%s", line, out)
				}
			}
		})
	}
}
