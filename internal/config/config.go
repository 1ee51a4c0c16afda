// Package config loads the gateway's JSON configuration: the `mcpServers`
// object that Claude Desktop, Cursor and Claude Code already use, plus an
// optional `codemode` object with the gateway's own settings.
//
// Start with [Load], which finds the file ([Find]), parses it strictly and
// returns a [Config] whose servers are in declaration order and already carry
// their §5.0.1 server ids. Every mistake comes back as an [*Error] naming the
// file, the key and the fix.
package config

import (
	"os"
	"path/filepath"
	"time"

	"github.com/codemode-mcp/codemode/internal/admit"
)

// EnvVar names the environment variable consulted when no --config flag is
// given.
const EnvVar = "CODEMODE_CONFIG"

// DefaultFile is the file looked for in the working directory last.
const DefaultFile = "codemode.json"

// AuthTokenEnv holds the bearer token of `codemode serve --http`. It is the
// gateway's own credential: stdio upstreams do not inherit it (a tool that
// returns its environment would otherwise hand it to the model).
const AuthTokenEnv = "CODEMODE_AUTH_TOKEN"

// Transport is how the gateway reaches an upstream server.
type Transport string

const (
	Stdio      Transport = "stdio"
	Streamable Transport = "http" // MCP Streamable HTTP, the default for `url` entries
	SSE        Transport = "sse"  // the 2024-11-05 HTTP+SSE transport
	// Builtin marks a server that runs inside the gateway (package
	// builtin): it never comes from the file's mcpServers.
	Builtin Transport = "builtin"
)

// Server is one entry of `mcpServers`.
type Server struct {
	// ID is the module path segment of §5.0.1, unique within the config.
	ID string
	// Name is the key as written in the file.
	Name      string
	Transport Transport

	// Stdio servers.
	Command string
	Args    []string
	Env     map[string]string // set in the child's environment, over what it inherits
	// InheritEnv names the variables of the gateway's environment that the
	// child inherits besides the minimal default set (the MCP TypeScript
	// SDK's: HOME, LOGNAME, PATH, SHELL, TERM, USER; on Windows its list):
	// names, and prefixes ending in "*". ["*"] ("inheritEnv": true in the
	// file) is the whole environment less AuthTokenEnv. nil: the default
	// set only, so that a tool printing its environment cannot hand the
	// model the gateway's AWS_SECRET_ACCESS_KEY.
	InheritEnv []string
	Cwd        string

	// Remote servers.
	URL     string
	Headers map[string]string

	// CallTimeout bounds each tool call; zero means the gateway default.
	CallTimeout time.Duration

	// The tool policy (policy.go). AllowTools (nil: every tool) and
	// DenyTools are glob patterns saying which tools exist for scripts;
	// AutoApprove lists the tools that never need approval; Approval is
	// the server's approval mode, its own "approval" key or else
	// codemode.approval ("" is ApprovalNone).
	AllowTools  []string
	DenyTools   []string
	AutoApprove []string
	Approval    Approval

	// CodeMode says where the server's tools are served ("codeMode"):
	// in the sandbox catalog (the default), directly as MCP tools, or both.
	CodeMode CodeMode

	// Unresolved lists the ${VAR} references that were not set in the
	// environment and had no default. Such a server is not started; the
	// connection layer reports why with this list.
	Unresolved []string

	// Secrets are values that must never reach the model: every header
	// value, every value that came from a ${VAR}, env values whose name
	// says they are secret (TOKEN, KEY, SECRET, PASSWORD, *_PAT, *_DSN, ...),
	// the credentials of URLs, and values shaped like tokens (secrets.go
	// has the rules). The upstream manager and the run layer redact them
	// from everything that reaches the model.
	Secrets []string
}

// CodeMode is where a server's tools are served.
type CodeMode int

const (
	// CodeModeOn ("codeMode": true, the default): in the sandbox catalog,
	// for scripts, only.
	CodeModeOn CodeMode = iota
	// CodeModeOff ("codeMode": false): as ordinary MCP tools of the
	// gateway only, named <serverId>__<tool>; scripts do not see them.
	CodeModeOff
	// CodeModeBoth ("codeMode": "both"): both.
	CodeModeBoth
)

// InCodeMode reports whether the server's tools are in the sandbox
// catalog.
func (s Server) InCodeMode() bool { return s.CodeMode != CodeModeOff }

// Direct reports whether the server's tools are served as MCP tools of the
// gateway.
func (s Server) Direct() bool { return s.CodeMode != CodeModeOn }

// Limits are the §3.2.4 execution limits. A zero field means "not set".
type Limits struct {
	TimeoutMs      int64 `json:"timeoutMs,omitempty"`
	MaxMemoryBytes int64 `json:"maxMemoryBytes,omitempty"`
	MaxLogBytes    int64 `json:"maxLogBytes,omitempty"`
	MaxToolCalls   int64 `json:"maxToolCalls,omitempty"`
	MaxResultBytes int64 `json:"maxResultBytes,omitempty"`
}

// Config is a loaded configuration.
type Config struct {
	// File is the path the configuration came from; empty for the embedded
	// default used when there is no file at all.
	File    string
	Servers []Server
	// Disabled lists the keys of the servers marked "disabled": true, which
	// are not in Servers, so that a script naming one can be told why.
	Disabled []string

	// DefaultLimits apply when a request does not set a limit; MaxLimits cap
	// what a request may ask for. Both are fully populated by Load.
	DefaultLimits Limits
	MaxLimits     Limits

	// CallTimeout bounds each upstream tool call unless a server sets its own.
	CallTimeout time.Duration

	// Approval is codemode.approval, the approval mode of every server
	// that does not set its own (already applied to Servers by Parse).
	Approval Approval

	// Serve holds the settings of `codemode serve`.
	Serve Serve

	// Builtins lists the built-in servers to serve (KnownBuiltins); nil
	// means all of them, an empty list none.
	Builtins []string
	// Store bounds what the `store` built-in keeps.
	Store StoreLimits
	// Clients are the named bearer tokens of `codemode serve --http`, in
	// file order. A client's name is its identity: the built-ins keep its
	// data in its own namespace.
	Clients []Client

	// Admission bounds the runs the gateway takes on at once (package
	// admit). Fully populated by Load.
	Admission Admission
	// History is what the run history keeps (codemode.history).
	History History
}

// Admission holds the codemode.maxConcurrentRuns, maxConcurrentRunsPerSession,
// maxQueuedRuns and memoryBudgetBytes settings; see package admit for what
// each bounds. Load fills unset fields with admit.Defaults.
type Admission struct {
	MaxConcurrentRuns           int
	MaxConcurrentRunsPerSession int
	MaxQueuedRuns               int
	MemoryBudgetBytes           int64
}

// Options returns the settings as package admit takes them.
func (a Admission) Options() *admit.Options {
	return &admit.Options{MaxRuns: a.MaxConcurrentRuns, MaxRunsPerSession: a.MaxConcurrentRunsPerSession,
		MaxQueued: a.MaxQueuedRuns, MemoryBytes: a.MemoryBudgetBytes}
}

// History configures the run history: every run is recorded in the data
// store unless Disabled, and kept until it is older than MaxAge or the
// oldest runs must go to keep the history under MaxBytes.
type History struct {
	Disabled bool
	// Payloads records tool calls' inputs and outputs (redacted).
	Payloads bool
	// MaxAge and MaxBytes are the retention. Default 30 days and 256 MiB
	// (set by Load).
	MaxAge   time.Duration
	MaxBytes int64
}

// StoreLimits bound the `store` built-in's data. Both are fully populated
// by Load.
type StoreLimits struct {
	// MaxValueBytes bounds one value (its JSON). Default 1 MiB.
	MaxValueBytes int64
	// MaxNamespaceBytes bounds what one namespace holds (keys and values).
	// Default 64 MiB.
	MaxNamespaceBytes int64
}

// Client is one entry of codemode.clients: a bearer token and whose it is.
type Client struct {
	// Name is the key as written: the identity, and the namespace unless
	// Namespace says otherwise.
	Name string
	// Token is the bearer token, ${VAR} expanded. Empty when Unresolved.
	Token string
	// Namespace is where the built-ins keep this client's data; default
	// Name. Clients given the same namespace share it.
	Namespace string
	// Unresolved lists the ${VAR}s of the token that were not set: such a
	// client cannot authenticate, and `serve --http` says so.
	Unresolved []string
}

// DefaultClient is the identity (and namespace) of calls made without a
// named token: stdio, `codemode run`, and HTTP with --auth-token.
const DefaultClient = "default"

// Serve holds settings that only matter when serving MCP.
type Serve struct {
	// Surfaces lists the tool surfaces to expose, in order. Known values are
	// in KnownSurfaces. Default: ["run"].
	Surfaces []string
	// RunToolName is the name of the run surface's tool. Default
	// "codemode_run".
	RunToolName string
	// BindingLevel is "server" or "tool": how the files surface splits
	// declarations into virtual files. Default "server".
	BindingLevel string
	// TypesBudgetTokens is the largest size, in o200k_base tokens, of the
	// declarations injected into the run tool's description before the
	// gateway switches to a compact index (codemode-spec §4.4). Default 4000.
	TypesBudgetTokens int
	// IndexBudgetTokens bounds the compact index itself. Default 300.
	IndexBudgetTokens int
	// RecordDir, if set, makes every run deterministic and writes its
	// replay bundle (package replay) into this directory; relative to the
	// configuration file's directory. `codemode replay run` re-runs one
	// offline.
	RecordDir string
	// ResultTTL is how long a result too large for its response is kept
	// for its client to read (codemode.resultTTLMs). 0: the serving
	// layer's default (1h).
	ResultTTL time.Duration
	// ResultQuotaBytes bounds the bytes of kept results per client
	// (codemode.resultQuotaBytes): the oldest are deleted to make room.
	// 0: the serving layer's default (256 MiB).
	ResultQuotaBytes int64
}

// KnownBuiltins are the built-in servers, by server id.
var KnownBuiltins = []string{"thoughtbox", "store"}

// KnownSurfaces are the values Serve.Surfaces accepts.
var KnownSurfaces = []string{"run", "search-execute", "files", "emceepee", "thoughtbox"}

// SurfaceTools are the tool names each surface serves; the run surface's
// one tool is named by Serve.RunToolName.
var SurfaceTools = map[string][]string{
	"search-execute": {"search", "execute"},
	"files":          {"listToolFiles", "readToolFile", "executeToolCode"},
	"emceepee":       {"codemode_search", "codemode_execute"},
	"thoughtbox":     {"thoughtbox_search", "thoughtbox_execute"},
}

// Built-in limits. The defaults are those of the issue that introduced them;
// the maxima are what a request may raise a limit to unless the config says
// otherwise.
var (
	BuiltinDefaultLimits = Limits{
		TimeoutMs:      30_000,
		MaxMemoryBytes: 64 << 20,
		MaxLogBytes:    64 << 10,
		MaxToolCalls:   100,
		MaxResultBytes: 1 << 20,
	}
	BuiltinMaxLimits = Limits{
		TimeoutMs:      300_000,
		MaxMemoryBytes: 512 << 20,
		MaxLogBytes:    1 << 20,
		MaxToolCalls:   1000,
		MaxResultBytes: 8 << 20,
	}
)

// DefaultCallTimeout bounds one upstream tool call when the config does not.
const DefaultCallTimeout = 60 * time.Second

// Find returns the configuration file to use: flagPath if set, else
// $CODEMODE_CONFIG, else ./codemode.json if it exists. It returns "" when
// none applies, meaning the embedded default. A path given explicitly (flag
// or environment) that does not exist is an error.
func Find(flagPath string) (string, error) {
	for _, c := range []struct{ path, via string }{{flagPath, "--config"}, {os.Getenv(EnvVar), "$" + EnvVar}} {
		if c.path == "" {
			continue
		}
		if _, err := os.Stat(c.path); err != nil {
			return "", &Error{File: c.path, Problem: "cannot read the configuration file given by " + c.via + ": " + err.Error(),
				Fix: "check the path, or leave " + c.via + " unset to run with no upstream servers"}
		}
		return c.path, nil
	}
	if _, err := os.Stat(DefaultFile); err == nil {
		abs, _ := filepath.Abs(DefaultFile)
		return abs, nil
	}
	return "", nil
}

// Load finds and parses the configuration. flagPath is the value of the
// --config flag, if any. With no file at all it returns the embedded default:
// no servers and built-in settings.
func Load(flagPath string) (*Config, error) {
	path, err := Find(flagPath)
	if err != nil {
		return nil, err
	}
	if path == "" {
		return Default(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Problem: err.Error(), Fix: "make the file readable"}
	}
	return Parse(path, data, os.LookupEnv)
}

// Default is the configuration used when there is no file: no upstream
// servers, built-in limits and surfaces.
func Default() *Config {
	c := &Config{}
	c.applyDefaults()
	return c
}

func (c *Config) applyDefaults() {
	fill := func(dst *Limits, src Limits) {
		if dst.TimeoutMs == 0 {
			dst.TimeoutMs = src.TimeoutMs
		}
		if dst.MaxMemoryBytes == 0 {
			dst.MaxMemoryBytes = src.MaxMemoryBytes
		}
		if dst.MaxLogBytes == 0 {
			dst.MaxLogBytes = src.MaxLogBytes
		}
		if dst.MaxToolCalls == 0 {
			dst.MaxToolCalls = src.MaxToolCalls
		}
		if dst.MaxResultBytes == 0 {
			dst.MaxResultBytes = src.MaxResultBytes
		}
	}
	a := &c.Admission
	if a.MaxConcurrentRuns == 0 {
		a.MaxConcurrentRuns = admit.Defaults.MaxRuns
	}
	if a.MaxConcurrentRunsPerSession == 0 {
		a.MaxConcurrentRunsPerSession = admit.Defaults.MaxRunsPerSession
	}
	if a.MaxQueuedRuns == 0 {
		a.MaxQueuedRuns = admit.Defaults.MaxQueued
	}
	if a.MemoryBudgetBytes == 0 {
		a.MemoryBudgetBytes = admit.Defaults.MemoryBytes
	}
	// A built-in maximum above a smaller budget is lowered to it: a run
	// asking for more could never start. (A maximum the file sets above
	// the budget is refused by Parse.)
	builtinMax := BuiltinMaxLimits
	builtinMax.MaxMemoryBytes = min(builtinMax.MaxMemoryBytes, a.MemoryBudgetBytes)
	fill(&c.MaxLimits, builtinMax)
	fill(&c.DefaultLimits, BuiltinDefaultLimits)
	c.DefaultLimits = c.DefaultLimits.Clamp(c.MaxLimits)
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.Approval == "" {
		c.Approval = ApprovalNone
	}
	for i := range c.Servers {
		if c.Servers[i].Approval == "" {
			c.Servers[i].Approval = c.Approval
		}
	}
	if len(c.Serve.Surfaces) == 0 {
		c.Serve.Surfaces = []string{"run"}
	}
	if c.Serve.RunToolName == "" {
		c.Serve.RunToolName = "codemode_run"
	}
	if c.Serve.BindingLevel == "" {
		c.Serve.BindingLevel = "server"
	}
	if c.Serve.TypesBudgetTokens == 0 {
		c.Serve.TypesBudgetTokens = 4000
	}
	if c.Serve.IndexBudgetTokens == 0 {
		c.Serve.IndexBudgetTokens = 300
	}
	if c.History.MaxAge == 0 {
		c.History.MaxAge = 30 * 24 * time.Hour
	}
	if c.History.MaxBytes == 0 {
		c.History.MaxBytes = 256 << 20
	}
	if c.Store.MaxValueBytes == 0 {
		c.Store.MaxValueBytes = 1 << 20
	}
	if c.Store.MaxNamespaceBytes == 0 {
		c.Store.MaxNamespaceBytes = 64 << 20
	}
}

// Clamp returns l with every field capped at the corresponding field of max.
// Zero fields of l stay zero.
func (l Limits) Clamp(max Limits) Limits {
	c := func(v, m int64) int64 {
		if v > m {
			return m
		}
		return v
	}
	return Limits{
		TimeoutMs:      c(l.TimeoutMs, max.TimeoutMs),
		MaxMemoryBytes: c(l.MaxMemoryBytes, max.MaxMemoryBytes),
		MaxLogBytes:    c(l.MaxLogBytes, max.MaxLogBytes),
		MaxToolCalls:   c(l.MaxToolCalls, max.MaxToolCalls),
		MaxResultBytes: c(l.MaxResultBytes, max.MaxResultBytes),
	}
}

// Resolve returns the limits a request gets: each field the request sets
// (positive) replaces the default, and the result is capped at the maxima.
// A request can therefore lower any limit, and raise one only up to its
// maximum.
func (c *Config) Resolve(req Limits) Limits {
	l := c.DefaultLimits
	if req.TimeoutMs > 0 {
		l.TimeoutMs = req.TimeoutMs
	}
	if req.MaxMemoryBytes > 0 {
		l.MaxMemoryBytes = req.MaxMemoryBytes
	}
	if req.MaxLogBytes > 0 {
		l.MaxLogBytes = req.MaxLogBytes
	}
	if req.MaxToolCalls > 0 {
		l.MaxToolCalls = req.MaxToolCalls
	}
	if req.MaxResultBytes > 0 {
		l.MaxResultBytes = req.MaxResultBytes
	}
	return l.Clamp(c.MaxLimits)
}

// Server returns the server with the given id.
func (c *Config) Server(id string) (Server, bool) {
	for _, s := range c.Servers {
		if s.ID == id {
			return s, true
		}
	}
	return Server{}, false
}
