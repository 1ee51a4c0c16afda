package upstream

import (
	"maps"
	"runtime"
	"slices"
	"strings"

	"github.com/codemode-mcp/codemode/internal/config"
)

// DefaultInheritedEnv lists the variables of the gateway's environment that
// every stdio server inherits: those of the MCP TypeScript SDK's
// getDefaultEnvironment (DEFAULT_INHERITED_ENV_VARS, "inspired by the
// default env inheritance of sudo"), which Claude Desktop and most clients
// give their servers. A server's "inheritEnv" adds to it.
//
// Only these, rather than the whole environment, because a child's
// environment is something a tool can hand back (server-everything's
// get-env prints it): the gateway's shell may hold AWS_SECRET_ACCESS_KEY or
// a GITHUB_TOKEN that no configured value names, so that redaction knows
// nothing of them.
func DefaultInheritedEnv() []string {
	if runtime.GOOS == "windows" {
		return []string{"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PROCESSOR_ARCHITECTURE",
			"SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE", "PROGRAMFILES"}
	}
	return []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
}

// childEnv is a stdio server's environment: what it inherits of environ
// (DefaultInheritedEnv and s.InheritEnv), then s.Env, which wins over an
// inherited value of the same name (a later duplicate wins in os/exec). Like
// the TypeScript SDK it drops inherited values that start with "()", bash's
// exported functions. The gateway's own credential (config.AuthTokenEnv) is
// never inherited through "*" or a prefix, only when named exactly.
func childEnv(environ []string, s config.Server) []string {
	var env []string
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || name == "" || strings.HasPrefix(val, "()") || !inherits(s, name) {
			continue
		}
		env = append(env, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		env = append(env, k+"="+s.Env[k])
	}
	return env
}

// inherits reports whether server s inherits the gateway's variable name.
func inherits(s config.Server, name string) bool {
	eq := func(a, b string) bool { return a == b }
	hasPrefix := strings.HasPrefix
	if runtime.GOOS == "windows" { // names are case-insensitive there
		eq = strings.EqualFold
		hasPrefix = func(s, p string) bool { return len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) }
	}
	for _, d := range DefaultInheritedEnv() {
		if eq(name, d) {
			return true
		}
	}
	for _, pat := range s.InheritEnv {
		if prefix, wild := strings.CutSuffix(pat, "*"); wild {
			if hasPrefix(name, prefix) && !eq(name, config.AuthTokenEnv) {
				return true
			}
		} else if eq(name, pat) {
			return true
		}
	}
	return false
}

// environSecrets returns the values of environ whose names say they are
// secret (config.SecretName). The Manager redacts them from what servers
// send: a server given "inheritEnv": true sees them, and any server may
// read them elsewhere (the gateway's /proc/<pid>/environ, the
// ~/.aws/credentials that holds the same key).
func environSecrets(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, val, _ := strings.Cut(kv, "=")
		if config.SecretName(name) && len(strings.TrimSpace(val)) >= config.MinSecretBytes {
			out = append(out, val)
		}
	}
	return out
}
