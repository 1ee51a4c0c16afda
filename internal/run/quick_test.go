package run

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestQuick(t *testing.T) {
	r := newTestRunner(t, map[string]*mcp.Server{"calc": calcServer()})
	for _, code := range []string{
		`import { add, echo, __meta__ } from "@codemode/servers/calc";
const s = await add({ a: 1, b: 2 });
const e = await echo({ message: "hi" });
globalThis.__codemode_result__ = { s, e, meta: __meta__ };`,
		`import { add } from "@codemode/servers/calc";
await add({ a: "1", b: 2 });`,
		`import { fail, export_ } from "@codemode/servers/calc";
try { await fail({}) } catch (e) { console.log(e.name, e.message, e.hint) }
globalThis.__codemode_result__ = await export_();`,
		`import { searchTools, listServers, getTool } from "@codemode/discovery";
globalThis.__codemode_result__ = { s: await searchTools("add two numbers", {detail: "name"}), l: await listServers(), g: await getTool("calc", "echo") };`,
		`import * as x from "@codemode/servers/nope";`,
	} {
		res := mustRun(t, r, code)
		t.Log(dump(res))
	}
}
