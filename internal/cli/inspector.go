package cli

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/redact"
	"github.com/codemode-mcp/codemode/internal/scripts"
	"github.com/codemode-mcp/codemode/internal/ui"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// inspector returns the pages of serve --http at /ui: the history, the
// saved scripts and the live state of g's servers, behind token and the
// clients' tokens.
func (e *env) inspector(g *gateway, obs *observers, saved *scripts.Scripts, token string) *ui.UI {
	tokens := []string{token}
	for _, c := range g.cfg.Clients {
		tokens = append(tokens, c.Token)
	}
	o := &ui.Options{History: g.store.History(), Scripts: saved, Configured: configured(g.cfg), Surfaces: g.cfg.Serve.Surfaces,
		Auth: ui.TokenChecker(tokens...), Servers: func(ctx context.Context) []ui.Server { return liveServers(ctx, g) }, Logger: g.log}
	if obs.history != nil {
		o.Wake = obs.history.Subscribe
	}
	return ui.New(o)
}

func configured(cfg *config.Config) []ui.Server {
	var out []ui.Server
	for _, s := range cfg.Servers {
		out = append(out, ui.Server{ID: s.ID, Name: s.Name})
	}
	return out
}

// liveServers is the servers page of a running gateway: each server's
// state and last error, and, for those connected once, its tools and
// declared capabilities.
func liveServers(ctx context.Context, g *gateway) []ui.Server {
	red := redact.ForServers(g.cfg.Servers)
	all, failed := g.cat.View().All(ctx)
	byID := map[string]ui.Server{}
	for _, s := range all {
		v := ui.Server{ID: s.ID, Name: s.Name, Tools: len(s.Tools)}
		if snap := s.Snapshot; snap != nil && snap.Capabilities != nil {
			c := snap.Capabilities
			if c.Tools != nil {
				v.Capabilities = append(v.Capabilities, withFlag("tools", c.Tools.ListChanged, "list_changed"))
			}
			if c.Resources != nil {
				n := "resources"
				if c.Resources.Subscribe {
					n += " (subscribe)"
				}
				v.Capabilities = append(v.Capabilities, withFlag(n, c.Resources.ListChanged, "list_changed"))
			}
			if c.Prompts != nil {
				v.Capabilities = append(v.Capabilities, withFlag("prompts", c.Prompts.ListChanged, "list_changed"))
			}
			if c.Logging != nil {
				v.Capabilities = append(v.Capabilities, "logging")
			}
			if c.Completions != nil {
				v.Capabilities = append(v.Capabilities, "completions")
			}
			for _, k := range slices.Sorted(maps.Keys(c.Experimental)) {
				v.Capabilities = append(v.Capabilities, "experimental: "+k)
			}
		}
		byID[s.ID] = v
	}
	var out []ui.Server
	for _, st := range g.mgr.Statuses() {
		v, ok := byID[st.ServerID]
		if !ok {
			v = ui.Server{ID: st.ServerID, Name: st.Name}
		}
		v.State = string(st.State)
		if st.Err != nil {
			v.LastError = red.String(st.Err.Error())
		} else if err := failed[st.ServerID]; err != nil && !errors.Is(err, upstream.ErrClosed) {
			v.LastError = red.String(err.Error())
		}
		out = append(out, v)
	}
	return out
}

func withFlag(name string, on bool, flag string) string {
	if on {
		return name + " (" + flag + ")"
	}
	return name
}
