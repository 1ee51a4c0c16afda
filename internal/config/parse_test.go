package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// configError parses src and returns its *Error, failing the test if there
// is none.
func configError(t *testing.T, src string, vars map[string]string) *Error {
	t.Helper()
	c, err := Parse("codemode.json", []byte(src), env(vars))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("Parse(%s) = %+v, %v; want a *Error", src, c, err)
	}
	return ce
}

// checkError asserts the key exactly, and that the problem and the fix say
// what they must (substrings) and not what they must not.
func checkError(t *testing.T, ce *Error, key string, problem, fix []string, notProblem ...string) {
	t.Helper()
	if ce.Key != key {
		t.Errorf("key = %q, want %q (error: %v)", ce.Key, key, ce)
	}
	for _, w := range problem {
		if !strings.Contains(ce.Problem, w) {
			t.Errorf("problem %q lacks %q", ce.Problem, w)
		}
	}
	for _, w := range notProblem {
		if strings.Contains(ce.Problem, w) {
			t.Errorf("problem %q should not contain %q", ce.Problem, w)
		}
	}
	if ce.Fix == "" {
		t.Errorf("no fix in %v", ce)
	}
	for _, w := range fix {
		if !strings.Contains(ce.Fix, w) {
			t.Errorf("fix %q lacks %q", ce.Fix, w)
		}
	}
}

// A wrong type is reported at the element or value that has it, with the
// JSON type found and the type wanted; never "got an array, use an array".
func TestTypeErrorsNameTheElement(t *testing.T) {
	const srv = `{"mcpServers": {"a": {"command": "x", `
	const rem = `{"mcpServers": {"a": {"url": "http://x/mcp", `
	for _, tc := range []struct {
		name, src, key string
		problem, fix   []string
	}{
		// Strings.
		{"command number", `{"mcpServers": {"a": {"command": 5}}}`, "mcpServers.a.command", []string{"must be a string", "got a number"}, []string{`"npx"`}},
		{"command null", `{"mcpServers": {"a": {"command": null}}}`, "mcpServers.a.command", []string{"must be a string", "got null"}, []string{"remove the key"}},
		{"cwd bool", srv + `"cwd": true}}}`, "mcpServers.a.cwd", []string{"must be a string", "got a boolean"}, []string{"directory"}},
		{"url array", `{"mcpServers": {"a": {"url": ["http://x"]}}}`, "mcpServers.a.url", []string{"must be a string", "got an array"}, []string{"http://"}},
		{"type number", `{"mcpServers": {"a": {"type": 1, "url": "http://x"}}}`, "mcpServers.a.type", []string{"must be a string", "got a number"}, []string{`"http"`, `"sse"`}},
		// Arrays of strings.
		{"args number element", srv + `"args": [1]}}}`, "mcpServers.a.args[0]", []string{"must be a string", "got a number"}, []string{`"1"`}},
		{"args later element", srv + `"args": ["-y", "pkg", {"x": 1}]}}}`, "mcpServers.a.args[2]", []string{"must be a string", "got an object"}, nil},
		{"args null element", srv + `"args": ["-y", null]}}}`, "mcpServers.a.args[1]", []string{"must be a string", "got null"}, nil},
		{"args not array", srv + `"args": "--flag"}}}`, "mcpServers.a.args", []string{"must be an array of strings", "got a string"}, []string{`["--flag"]`}},
		{"args object", srv + `"args": {"a": "b"}}}}`, "mcpServers.a.args", []string{"must be an array of strings", "got an object"}, nil},
		{"surfaces element", `{"codemode": {"surfaces": ["run", 2]}}`, "codemode.surfaces[1]", []string{"must be a string", "got a number"}, []string{`"run"`}},
		{"surfaces string", `{"codemode": {"surfaces": "run"}}`, "codemode.surfaces", []string{"must be an array of strings", "got a string"}, []string{`["run"]`}},
		{"unknown surface", `{"codemode": {"surfaces": ["run", "grpc"]}}`, "codemode.surfaces[1]", []string{`"grpc"`}, []string{`"files"`}},
		{"surface twice", `{"codemode": {"surfaces": ["run", "files", "run"]}}`, "codemode.surfaces[2]", []string{`"run"`, "twice"}, nil},
		// Objects of strings.
		{"env number value", srv + `"env": {"K": 5}}}}`, "mcpServers.a.env.K", []string{"must be a string", "got a number"}, []string{`"5"`}},
		{"env bool value", srv + `"env": {"A": "x", "DEBUG": true}}}}`, "mcpServers.a.env.DEBUG", []string{"must be a string", "got a boolean"}, []string{`"true"`}},
		{"env not object", srv + `"env": ["K=5"]}}}`, "mcpServers.a.env", []string{"must be an object", "got an array"}, []string{`{"API_KEY": `}},
		{"env duplicate name", srv + `"env": {"K": "1", "K": "2"}}}}`, "mcpServers.a.env.K", []string{"twice"}, nil},
		{"env name with =", srv + `"env": {"A=B": "1"}}}}`, "mcpServers.a.env.A=B", []string{"not a valid environment variable name"}, nil},
		{"env empty name", srv + `"env": {"": "1"}}}}`, "mcpServers.a.env.", []string{"not a valid environment variable name"}, nil},
		{"headers number value", rem + `"headers": {"A": 1}}}}`, "mcpServers.a.headers.A", []string{"must be a string", "got a number"}, []string{`"1"`}},
		{"headers not object", rem + `"headers": "Authorization: x"}}}`, "mcpServers.a.headers", []string{"must be an object", "got a string"}, nil},
		{"header bad name", rem + `"headers": {"Authorization:": "x"}}}}`, "mcpServers.a.headers.Authorization:", []string{"not a valid header name"}, nil},
		// Whole numbers.
		{"timeoutMs fraction", srv + `"timeoutMs": 1000.5}}}`, "mcpServers.a.timeoutMs", []string{"whole number", "milliseconds", "1000.5"}, []string{"1001"}},
		{"timeoutMs string", srv + `"timeoutMs": "1000"}}}`, "mcpServers.a.timeoutMs", []string{"whole number", "got a string"}, []string{"without quotes", "1000"}},
		{"timeoutMs NaN string", srv + `"timeoutMs": "NaN"}}}`, "mcpServers.a.timeoutMs", []string{"whole number", "got a string"}, []string{"use a positive whole number of milliseconds"}},
		{"timeoutMs zero", srv + `"timeoutMs": 0}}}`, "mcpServers.a.timeoutMs", []string{"positive", "got 0"}, nil},
		{"timeoutMs negative fraction", srv + `"timeoutMs": -0.5}}}`, "mcpServers.a.timeoutMs", []string{"positive", "-0.5"}, nil},
		{"timeoutMs overflow", srv + `"timeoutMs": 1e20}}}`, "mcpServers.a.timeoutMs", []string{"too large"}, []string{"at most"}},
		{"timeoutMs huge duration", srv + `"timeoutMs": 10000000000000}}}`, "mcpServers.a.timeoutMs", []string{"too large"}, []string{"at most"}},
		{"callTimeoutMs fraction", `{"codemode": {"callTimeoutMs": 1.5}}`, "codemode.callTimeoutMs", []string{"whole number", "milliseconds", "1.5"}, []string{"2"}},
		{"callTimeoutMs bool", `{"codemode": {"callTimeoutMs": true}}`, "codemode.callTimeoutMs", []string{"whole number", "got a boolean"}, nil},
		{"default limit fraction", `{"codemode": {"defaultLimits": {"maxMemoryBytes": 1536.5}}}`, "codemode.defaultLimits.maxMemoryBytes", []string{"whole number", "bytes", "1536.5"}, []string{"1537"}},
		{"max limit string", `{"codemode": {"maxLimits": {"maxToolCalls": "10"}}}`, "codemode.maxLimits.maxToolCalls", []string{"whole number", "got a string"}, []string{"without quotes"}},
		{"max limit null", `{"codemode": {"maxLimits": {"timeoutMs": null}}}`, "codemode.maxLimits.timeoutMs", []string{"whole number", "got null"}, []string{"remove the key"}},
		{"limit timeout overflow", `{"codemode": {"maxLimits": {"timeoutMs": 1e15}}}`, "codemode.maxLimits.timeoutMs", []string{"too large"}, nil},
		{"limits not object", `{"codemode": {"maxLimits": 5}}`, "codemode.maxLimits", []string{"must be an object", "got a number"}, nil},
		{"budget fraction", `{"codemode": {"typesBudgetTokens": 100.25}}`, "codemode.typesBudgetTokens", []string{"whole number", "tokens", "100.25"}, nil},
		// Booleans.
		{"disabled string", srv + `"disabled": "true"}}}`, "mcpServers.a.disabled", []string{"must be true or false", "got a string"}, []string{"without quotes"}},
		{"disabled number", srv + `"disabled": 1}}}`, "mcpServers.a.disabled", []string{"must be true or false", "got a number"}, []string{"true or false"}},
		// Other strings of the gateway.
		{"runToolName number", `{"codemode": {"runToolName": 1}}`, "codemode.runToolName", []string{"must be a string", "got a number"}, nil},
		{"bindingLevel bool", `{"codemode": {"bindingLevel": true}}`, "codemode.bindingLevel", []string{"must be a string", "got a boolean"}, []string{`"server"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ce := configError(t, tc.src, nil)
			// "has the wrong type" said neither what was wanted nor where.
			checkError(t, ce, tc.key, tc.problem, tc.fix, "wrong type")
		})
	}
}

// Whole numbers written in exponent notation are whole numbers.
func TestWholeNumbers(t *testing.T) {
	c := mustParse(t, `{"mcpServers": {"a": {"command": "x", "timeoutMs": 2e3}}, "codemode": {"maxLimits": {"maxMemoryBytes": 1e9, "timeoutMs": 600000}}}`, nil)
	if c.Servers[0].CallTimeout != 2*time.Second || c.MaxLimits.MaxMemoryBytes != 1e9 || c.MaxLimits.TimeoutMs != 600000 {
		t.Fatalf("timeout = %v, max limits = %+v", c.Servers[0].CallTimeout, c.MaxLimits)
	}
}

// Windows editors save UTF-8 with a byte order mark.
func TestByteOrderMark(t *testing.T) {
	c := mustParse(t, "\xEF\xBB\xBF{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}", nil)
	if len(c.Servers) != 1 || c.Servers[0].Command != "x" {
		t.Fatalf("servers = %+v", c.Servers)
	}
	// A syntax error after the mark is placed as the editor shows it.
	ce := configError(t, "\xEF\xBB\xBF{\"mcpServers\": x}", nil)
	if ce.Line != 1 || ce.Column != 16 {
		t.Errorf("position = %d:%d, want 1:16 (%v)", ce.Line, ce.Column, ce)
	}
	// UTF-16 (Notepad's "Unicode") is not JSON we can read: say so.
	ce = configError(t, "\xFF\xFE{\x00}\x00", nil)
	if !strings.Contains(ce.Problem, "UTF-16") || !strings.Contains(ce.Fix, "UTF-8") {
		t.Errorf("UTF-16 file: %v", ce)
	}
}

func TestVariableReferenceErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, key string
		problem, fix   []string
	}{
		{"unclosed in args", `{"mcpServers": {"a": {"command": "x", "args": ["--dir=${UNCLOSED"]}}}`, "mcpServers.a.args[0]", []string{"${UNCLOSED", `no closing "}"`}, []string{"${UNCLOSED}", "$${"}},
		{"unclosed after a good one", `{"mcpServers": {"a": {"command": "x", "args": ["${A}/${B"]}}}`, "mcpServers.a.args[0]", []string{"${B", `no closing "}"`}, []string{"${B}"}},
		{"unclosed in env", `{"mcpServers": {"a": {"command": "x", "env": {"K": "${HOME"}}}}`, "mcpServers.a.env.K", []string{"${HOME"}, []string{"${HOME}"}},
		{"unclosed in url", `{"mcpServers": {"a": {"url": "http://${HOST/mcp"}}}`, "mcpServers.a.url", []string{"${HOST/mcp"}, []string{"${HOST}"}},
		{"unclosed in header", `{"mcpServers": {"a": {"url": "http://x/mcp", "headers": {"Authorization": "Bearer ${TOKEN"}}}}`, "mcpServers.a.headers.Authorization", []string{"${TOKEN"}, []string{"${TOKEN}"}},
		{"unclosed in cwd", `{"mcpServers": {"a": {"command": "x", "cwd": "${DIR"}}}`, "mcpServers.a.cwd", []string{"${DIR"}, nil},
		{"empty name", `{"mcpServers": {"a": {"command": "x", "args": ["${}"]}}}`, "mcpServers.a.args[0]", []string{"${}", "no variable"}, []string{"$${"}},
		{"empty name with default", `{"mcpServers": {"a": {"command": "x", "args": ["${:-x}"]}}}`, "mcpServers.a.args[0]", []string{"no variable"}, nil},
		{"nested", `{"mcpServers": {"a": {"command": "x", "args": ["${A:-${B}}"]}}}`, "mcpServers.a.args[0]", []string{"inside another"}, nil},
		{"command", `{"mcpServers": {"a": {"command": "${HOME}/bin/server"}}}`, "mcpServers.a.command", []string{"not expanded", `"command"`}, []string{`"args"`, "wrapper"}},
		{"command escaped", `{"mcpServers": {"a": {"command": "$${X}"}}}`, "mcpServers.a.command", []string{"not expanded"}, nil},
		{"env name", `{"mcpServers": {"a": {"command": "x", "env": {"${NAME}": "v"}}}}`, "mcpServers.a.env.${NAME}", []string{"not expanded"}, nil},
		{"header name", `{"mcpServers": {"a": {"url": "http://x/mcp", "headers": {"${H}": "v"}}}}`, "mcpServers.a.headers.${H}", []string{"not expanded"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkError(t, configError(t, tc.src, map[string]string{"A": "1", "B": "2", "HOME": "/h"}), tc.key, tc.problem, tc.fix)
		})
	}
}

// A `$` not followed by `{` is ordinary text; `$${` is a literal `${`.
func TestDollarsThatAreNotReferences(t *testing.T) {
	c := mustParse(t, `{"mcpServers": {"s": {"command": "sh", "args": ["-c", "echo $HOME $$ $1 a$ $}{ {$}", "^x$", "$${NOT_A_VAR}", "$${A}-${A}", "cost: $$$${A}", "$$${A}", "x$"],
		"env": {"PS1": "$ ", "TPL": "$${name}"}}}}`, map[string]string{"A": "v-1234567890"})
	s := c.Servers[0]
	want := []string{"-c", "echo $HOME $$ $1 a$ $}{ {$}", "^x$", "${NOT_A_VAR}", "${A}-v-1234567890", "cost: $$${A}", "$${A}", "x$"}
	if strings.Join(s.Args, "|") != strings.Join(want, "|") {
		t.Fatalf("args = %q\nwant   %q", s.Args, want)
	}
	if s.Env["PS1"] != "$ " || s.Env["TPL"] != "${name}" {
		t.Fatalf("env = %q", s.Env)
	}
	if len(s.Unresolved) != 0 {
		t.Fatalf("unresolved = %v", s.Unresolved)
	}
}

// A disabled server is still type-checked: the mistake is found before the
// server is enabled again.
func TestDisabledServerTypeChecked(t *testing.T) {
	ce := configError(t, `{"mcpServers": {"a": {"command": "x", "args": [1], "disabled": true}}}`, nil)
	checkError(t, ce, "mcpServers.a.args[0]", []string{"must be a string"}, nil)
}
