package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// The tool policy (per server in mcpServers, and codemode.approval): which
// of a server's tools exist for scripts at all, and which of those need the
// user's approval before a call reaches the server.
//
//	"memory": {"command": "...",
//	           "allowTools": ["*"], "denyTools": ["delete_*"],
//	           "autoApprove": ["read_graph"], "approval": "writes"}
//
// allowTools and denyTools are glob patterns over the upstream's own tool
// names ("*" any run of characters, "?" one character, everything else
// literal). A tool exists when it matches allowTools (absent: every tool)
// and no denyTools pattern; deny wins. denyTools ignores case, so that an
// upstream renaming delete_file to Delete_File does not slip out of it;
// allowTools and autoApprove match case exactly, so that neither widens by
// accident. autoApprove is Cline's key; Roo's alwaysAllow is accepted as
// its alias and Roo's disabledTools as one of denyTools.

// Approval says which of a server's tools need the user's approval before a
// call reaches them. Tools in autoApprove never do.
type Approval string

const (
	// ApprovalNone: no tool needs approval (the default).
	ApprovalNone Approval = "none"
	// ApprovalDestructive: tools that may destroy data by their MCP
	// annotations: destructiveHint true, or, as MCP's defaults say, a tool
	// not marked readOnlyHint that does not say destructiveHint false.
	ApprovalDestructive Approval = "destructive"
	// ApprovalWrites: every tool not marked readOnlyHint: true.
	ApprovalWrites Approval = "writes"
	// ApprovalAll: every tool.
	ApprovalAll Approval = "all"
)

// Approvals lists the values "approval" accepts.
var Approvals = []Approval{ApprovalNone, ApprovalDestructive, ApprovalWrites, ApprovalAll}

// Requires reports whether a tool with these annotations needs approval
// under a. readOnly and destructive are the tool's readOnlyHint and
// destructiveHint (nil: absent, which MCP defines as true).
func (a Approval) Requires(readOnly bool, destructive *bool) bool {
	switch a {
	case ApprovalAll:
		return true
	case ApprovalWrites:
		return !readOnly
	case ApprovalDestructive:
		return !readOnly && (destructive == nil || *destructive)
	}
	return false
}

// ToolAllowed reports whether the server's tool name exists for scripts:
// it matches allowTools (or there is none) and no denyTools pattern.
func (s Server) ToolAllowed(name string) bool {
	if s.AllowTools != nil && !matchAny(s.AllowTools, name, false) {
		return false
	}
	return !matchAny(s.DenyTools, name, true)
}

// AutoApproved reports whether the server's tool name runs without asking,
// whatever the approval mode.
func (s Server) AutoApproved(name string) bool { return matchAny(s.AutoApprove, name, false) }

// NeedsApproval reports whether the server's tool, with these annotations
// (see Approval.Requires), needs the user's approval.
func (s Server) NeedsApproval(name string, readOnly bool, destructive *bool) bool {
	return !s.AutoApproved(name) && s.Approval.Requires(readOnly, destructive)
}

// ApprovalPossible reports whether any server of c may need approval for
// some tool: only then does a run have to be ready to ask.
func (c *Config) ApprovalPossible() bool {
	for _, s := range c.Servers {
		if s.Approval != "" && s.Approval != ApprovalNone {
			return true
		}
	}
	return false
}

func matchAny(patterns []string, name string, fold bool) bool {
	if fold {
		name = strings.ToLower(name)
	}
	for _, p := range patterns {
		if fold {
			p = strings.ToLower(p)
		}
		if Glob(p, name) {
			return true
		}
	}
	return false
}

// Glob reports whether name matches pattern, where "*" matches any run of
// characters (including none) and "?" exactly one; every other character
// matches itself. It runs in O(len(pattern)·len(name)) at worst.
func Glob(pattern, name string) bool {
	// The classic greedy matcher: on a mismatch, retry from the last "*"
	// with one more character swallowed.
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		if p < len(pattern) {
			switch pattern[p] {
			case '*':
				star, mark = p, n
				p++
				continue
			case '?':
				_, size := utf8.DecodeRuneInString(name[n:])
				p++
				n += size
				continue
			default:
				if pattern[p] == name[n] {
					p++
					n++
					continue
				}
			}
		}
		if star < 0 {
			return false
		}
		_, size := utf8.DecodeRuneInString(name[mark:])
		mark += size
		p, n = star+1, mark
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// patterns reads a list of tool names or glob patterns.
func (p *parser) patterns(key string, raw json.RawMessage) ([]string, error) {
	list, err := p.strs(key, raw, `use an array of tool names or patterns, e.g. ["read_*", "search"]`, `use a tool name or a pattern such as "read_*"`)
	if err != nil {
		return nil, err
	}
	for i, s := range list {
		if strings.TrimSpace(s) == "" {
			return nil, p.errf(fmt.Sprintf("%s[%d]", key, i), `write a tool name or a pattern ("*" matches any characters), or remove the element`, "is empty")
		}
	}
	return list, nil
}

// approval reads an approval mode.
func (p *parser) approval(key string, raw json.RawMessage) (Approval, error) {
	use := `use "none", "destructive", "writes" or "all"`
	s, err := p.str(key, raw, use, true)
	if err != nil {
		return "", err
	}
	for _, a := range Approvals {
		if Approval(s) == a {
			return a, nil
		}
	}
	fix := use + `: "none" asks for nothing, "destructive" for tools marked destructive, "writes" for every tool not marked read-only, "all" for every tool`
	if a := closest(s, []string{"none", "destructive", "writes", "all"}); a != "" {
		fix = fmt.Sprintf("did you mean %q? ", a) + fix
	}
	return "", p.errf(key, fix, "unknown approval mode %q", s)
}

// UnmatchedPatterns describes each allowTools, denyTools and autoApprove
// pattern of s that matches none of the server's tool names: a pattern
// written with the script's export name (get_env for the tool get-env) or
// a typo would otherwise do nothing without a word, and a denyTools entry
// that does nothing leaves the tool it meant to hide in every script's
// reach. Each description names the key and the pattern, and the tool it
// probably meant when one differs from it only in case, "-" and "_".
func (s Server) UnmatchedPatterns(names []string) []string {
	var out []string
	check := func(key string, patterns []string, fold bool) {
		for _, p := range patterns {
			if slices.ContainsFunc(names, func(n string) bool { return matchAny([]string{p}, n, fold) }) {
				continue
			}
			msg := fmt.Sprintf("%s %q matches none of the tools of server %q", key, p, s.ID)
			if i := slices.IndexFunc(names, func(n string) bool { return looseName(n) == looseName(p) }); i >= 0 {
				msg += fmt.Sprintf(": did you mean %q? (patterns match the server's own tool names, not the names scripts import)", names[i])
			}
			out = append(out, msg)
		}
	}
	check("allowTools", s.AllowTools, false)
	check("denyTools", s.DenyTools, true)
	check("autoApprove", s.AutoApprove, false)
	return out
}

// looseName folds case and treats "-" and "_" alike.
func looseName(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), "-", "_")
}
