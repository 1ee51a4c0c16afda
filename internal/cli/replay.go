package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/replay"
)

const replayUsage = `Usage:
  codemode replay step [--config FILE] [FILE|-]   one step of a code block: request JSON in, response JSON out
  codemode replay run BUNDLE                      re-run a bundle written by codemode run --record, offline

A step request is {"messages": [{"role": "code", "id", "code"}, assistant tool_calls,
tool results...], "tools": [OpenAI-style functions], "limits"?}; the response's
message is the next batch of tool calls for the client, or the code_result.
`

// maxRequestBytes bounds a step request read from a file or stdin.
const maxRequestBytes = 10 << 20

func (e *env) replay(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, replayUsage)
		return ExitUsage
	}
	switch args[0] {
	case "step":
		return e.replayStep(args[1:])
	case "run":
		return e.replayRun(args[1:])
	case "help", "-h", "--help", "-help":
		fmt.Fprint(e.stdout, replayUsage)
		return ExitOK
	}
	fmt.Fprintf(e.stderr, "codemode replay: unknown command %q\n\n%s", args[0], replayUsage)
	return ExitUsage
}

// replayStep: exit 0 when the step asks for tool calls or the code
// succeeded, 1 when the code result is an error, 2 when the request is
// malformed (its error, as JSON, on stdout too).
func (e *env) replayStep(args []string) int {
	fs := newFlagSet("replay step", e.stderr, "replay step [--config FILE] [FILE|-]")
	var c common
	c.register(fs, "warn")
	pos, err := parse(fs, args)
	if err != nil {
		return e.usageErr(err)
	}
	if len(pos) > 1 {
		return e.usageErr(fmt.Errorf("replay step takes one FILE (or - for stdin), got %q", pos))
	}
	path := "-"
	if len(pos) == 1 {
		path = pos[0]
	}
	log, err := c.logger(e.stderr)
	if err != nil {
		return e.usageErr(err)
	}
	cfg, err := config.Load(c.config)
	if err != nil {
		fmt.Fprintln(e.stderr, "codemode: configuration error:", err)
		return ExitUsage
	}
	var data []byte
	if path == "-" {
		data, err = io.ReadAll(io.LimitReader(e.stdin, maxRequestBytes+1))
	} else {
		data, err = os.ReadFile(path)
	}
	if err == nil && len(data) > maxRequestBytes {
		err = fmt.Errorf("the request is larger than %d bytes", maxRequestBytes)
	}
	if err != nil {
		return e.stepError(&replay.Error{Code: diag.InvalidRequest, Message: "reading the request: " + err.Error(), Hint: "pass a step request as a JSON file, or - to read it from stdin"})
	}
	var req replay.Request
	if err := json.Unmarshal(data, &req); err != nil {
		return e.stepError(&replay.Error{Code: diag.InvalidRequest, Message: "the request is not valid JSON for a step: " + err.Error(),
			Hint: `send {"messages": [{"role": "code", "id": "c1", "code": "..."}], "tools": [...]}`})
	}
	resp, err := replay.New(&replay.Options{Config: cfg, Logger: log, Admission: admission(cfg)}).Step(e.ctx, req)
	if err != nil {
		var re *replay.Error
		if !errors.As(err, &re) {
			re = &replay.Error{Code: diag.InvalidRequest, Message: err.Error()}
		}
		return e.stepError(re)
	}
	e.printJSON(resp)
	if r := resp.Message.Result; r != nil && r.Status == "error" {
		return ExitFailed
	}
	return ExitOK
}

func (e *env) stepError(re *replay.Error) int {
	e.printJSON(map[string]any{"error": re})
	fmt.Fprintln(e.stderr, "codemode replay step:", re.Error())
	return ExitUsage
}

// printJSON writes v as the commands' output: indented, unescaped ("<b>&"
// stays readable).
func (e *env) printJSON(v any) {
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// replayRun: exit 0 when the bundle reproduced, 1 when it diverged.
func (e *env) replayRun(args []string) int {
	fs := newFlagSet("replay run", e.stderr, "replay run BUNDLE")
	pos, err := parse(fs, args)
	if err != nil {
		return e.usageErr(err)
	}
	if len(pos) != 1 {
		fs.Usage()
		return e.usageErr(errors.New("replay run needs exactly one BUNDLE (written by codemode run --record FILE)"))
	}
	b, err := replay.ReadFile(pos[0])
	if err != nil {
		fmt.Fprintln(e.stderr, "codemode replay run:", err)
		return ExitUsage
	}
	rep, err := replay.Replay(e.ctx, b)
	if err != nil {
		fmt.Fprintln(e.stderr, "codemode replay run:", err)
		return ExitUsage
	}
	e.printJSON(rep)
	if !rep.Reproduced {
		fmt.Fprintln(e.stderr, "codemode replay run: diverged:", rep.Diverged.Message)
		return ExitFailed
	}
	return ExitOK
}
