// Package cli implements the codemode command line: `codemode run`,
// `codemode types`, `codemode serve`, `codemode replay` and `codemode
// proxy`. Start with [Main]. The commands are thin: their logic lives in
// the packages they call.
//
// Conventions: stdout carries the command's output (the response JSON, the
// declarations, or the MCP protocol itself for `serve` over stdio); logs go
// to stderr through slog. Exit status 0 means success, 1 that the script
// reported an error diagnostic, 2 a usage or configuration error.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/codemode-mcp/codemode/internal/buildinfo"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/admit"
	"github.com/codemode-mcp/codemode/internal/builtin"
	"github.com/codemode-mcp/codemode/internal/builtin/state"
	"github.com/codemode-mcp/codemode/internal/builtin/thoughtbox"
	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// Exit statuses.
const (
	ExitOK     = 0
	ExitFailed = 1 // the run reported an error diagnostic
	ExitUsage  = 2 // bad flags, bad config
)

// env is what a command runs with.
type env struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

const usage = `codemode puts MCP servers behind Code Mode.

Usage:
  codemode serve [--config FILE] [--http ADDR]   serve MCP over stdio (default) or Streamable HTTP
  codemode run [flags] SCRIPT|-                  run one script and print the response JSON
                                                 (--record FILE also writes a replay bundle)
  codemode types [--config FILE] [--out DIR]     print or write TypeScript declarations
  codemode replay step [FILE|-]                  one step of a code block whose tools the client runs
  codemode replay run BUNDLE                     re-run a recorded run offline, report if it reproduced
  codemode proxy --upstream URL [--model M]      OpenAI-compatible chat completions with code orchestration
  codemode history [list|show ID|rerun ID|export ID]
                                                 the recorded runs of every surface
  codemode scripts [save NAME FILE|list|show NAME|delete NAME]
                                                 saved scripts, run with {"script": NAME, "args": {...}}
  codemode ui [--data-dir D]                     the inspector pages over a local store (serve --http has them at /ui)
  codemode version

The configuration is --config FILE, else $CODEMODE_CONFIG, else ./codemode.json,
else no upstream servers. Run "codemode <command> -h" for a command's flags.
`

// Main runs the command line args (without the program name) and returns
// the exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	switch args[0] {
	case "run":
		return e.run(args[1:])
	case "types":
		return e.types(args[1:])
	case "serve":
		return e.serve(args[1:])
	case "replay":
		return e.replay(args[1:])
	case "proxy":
		return e.proxy(args[1:])
	case "history":
		return e.history(args[1:])
	case "scripts":
		return e.scripts(args[1:])
	case "ui":
		return e.ui(args[1:])
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "codemode", buildinfo.Describe())
		return ExitOK
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return ExitOK
	}
	fmt.Fprintf(stderr, "codemode: unknown command %q\n\n%s", args[0], usage)
	return ExitUsage
}

// common are the flags every command has.
type common struct {
	config   string
	logLevel string
	dataDir  string
}

func (c *common) register(fs *flag.FlagSet, defaultLevel string) {
	fs.StringVar(&c.config, "config", "", "configuration file (default $"+config.EnvVar+", else ./"+config.DefaultFile+")")
	fs.StringVar(&c.logLevel, "log-level", defaultLevel, "log level on stderr: debug, info, warn or error")
	fs.StringVar(&c.dataDir, "data-dir", "", "directory of the built-in servers' data (default $"+store.DataDirEnv+", else $XDG_STATE_HOME/codemode, else ~/.local/state/codemode; $"+store.URLEnv+"=postgres://... uses PostgreSQL instead)")
}

func (c *common) logger(stderr io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", c.logLevel)
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: l})), nil
}

// parse parses flags that may come before or after the positional
// arguments (`codemode run script.ts --timeout-ms 500`).
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, suggestFlag(fs, err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// suggestFlag adds to the flag package's "flag provided but not defined"
// the command's flag within edit distance 2 of the one given, or that it
// begins (or that begins it), if any.
func suggestFlag(fs *flag.FlagSet, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !ok {
		return err
	}
	name = strings.TrimLeft(name, "-")
	best, bestD := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		d := diag.Distance(name, f.Name)
		if strings.HasPrefix(f.Name, name) || strings.HasPrefix(name, f.Name) {
			d = min(d, 1) // --timeout for --timeout-ms
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	})
	if best == "" {
		return err
	}
	return fmt.Errorf("%w; did you mean --%s?", err, best)
}

func newFlagSet(name string, stderr io.Writer, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: codemode %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// usageErr reports a usage error and returns ExitUsage.
func (e *env) usageErr(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	fmt.Fprintln(e.stderr, "codemode:", err)
	return ExitUsage
}

// gateway is what every command builds from the configuration.
type gateway struct {
	cfg      *config.Config
	mgr      *upstream.Manager
	cat      *catalog.Catalog
	log      *slog.Logger
	store    *store.Store
	builtins *builtin.Set
}

// caller is the gateway's tool caller: the built-ins' tools are answered
// in process (builtin.Set.Caller), every other tool by the upstream
// manager.
func (g *gateway) caller() run.Caller { return g.builtins.Caller(g.mgr) }

func (e *env) open(c common, opts *upstream.Options) (*gateway, int) {
	log, err := c.logger(e.stderr)
	if err != nil {
		return nil, e.usageErr(err)
	}
	cfg, err := config.Load(c.config)
	if err != nil {
		fmt.Fprintln(e.stderr, "codemode: configuration error:", err)
		return nil, ExitUsage
	}
	so := store.Locate(c.dataDir, os.Getenv)
	so.Logger = log
	st := store.New(&so)
	set := builtin.NewSet(thoughtbox.New(st, nil), state.New(st, &state.Options{Limits: cfg.Store}))
	set.Configure(cfg, log)
	var o upstream.Options
	if opts != nil {
		o = *opts
	}
	o.Logger = log
	o.CallTimeout = cfg.CallTimeout
	dial := set.Dial()
	if o.Dial != nil {
		next := o.Dial
		o.Dial = func(ctx context.Context, s config.Server) (mcp.Transport, error) {
			if s.Transport == config.Builtin {
				return dial(ctx, s)
			}
			return next(ctx, s)
		}
	} else {
		o.Dial = dial
	}
	mgr := upstream.New(cfg.Servers, &o)
	return &gateway{cfg: cfg, mgr: mgr, cat: catalog.New(mgr), log: log, store: st, builtins: set}, ExitOK
}

func (g *gateway) close() {
	g.mgr.Close()
	g.store.Close()
}

// admission returns the Controller that admits the command's runs against
// the configured bounds and memory budget (package admit); it also holds
// the Go heap to what the budget leaves over the running sandboxes, unless
// GOMEMLIMIT says otherwise.
func (g *gateway) admission() *admit.Controller { return admission(g.cfg) }

func admission(cfg *config.Config) *admit.Controller {
	o := cfg.Admission.Options()
	o.LimitGoHeap = os.Getenv("GOMEMLIMIT") == ""
	return admit.New(o)
}

// readScript reads a script from a file or, for "-", from stdin.
func (e *env) readScript(path string) (string, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(io.LimitReader(e.stdin, 10<<20))
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("reading the script: %w", err)
	}
	code := strings.TrimPrefix(string(b), "\ufeff")
	if strings.TrimSpace(code) == "" {
		if path == "-" {
			return "", errors.New("the script read from stdin is empty: pipe it in, e.g. echo 'globalThis.__codemode_result__ = 6 * 7' | codemode run -")
		}
		return "", fmt.Errorf("the script %s is empty", path)
	}
	return code, nil
}
