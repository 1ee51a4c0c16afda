package run

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/naming"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// serverError explains why server id cannot be used, as the error agent
// code sees: ServerNotFoundError for an unknown id (listing the known ones),
// AuthenticationError for rejected credentials, ServerNotFoundError with the
// upstream's reason (and stderr tail) for a server that is configured but
// not connected.
func serverError(id string, err error, known, disabled []string) *diag.Error {
	if errors.Is(err, catalog.ErrUnknownServer) || errors.Is(err, upstream.ErrUnknownServer) {
		for _, key := range disabled {
			if naming.NormalizeServerID(key) == id {
				return &diag.Error{Class: diag.ServerNotFoundError, Message: fmt.Sprintf("server %q is disabled in the gateway's configuration", id),
					Hint:   fmt.Sprintf(`the operator must remove "disabled": true from mcpServers.%s to use it; %s`, key, diag.ListHint("server ids", known, 30)),
					Fields: map[string]any{"serverId": id, "available": nonNil(known)}}
			}
		}
		return &diag.Error{Class: diag.ServerNotFoundError, Message: fmt.Sprintf("there is no server %q", id),
			Hint: closestHint(id, known, "server ids"), Fields: map[string]any{"serverId": id, "available": nonNil(known)}}
	}
	if errors.Is(err, upstream.Auth) {
		return &diag.Error{Class: diag.AuthenticationError, Message: err.Error(), Hint: upstreamHint(err, "the gateway's credentials for this server were rejected; the operator must fix its headers or env in the config"),
			Fields: map[string]any{"serverId": id}}
	}
	var slow *stillStarting
	if errors.As(err, &slow) {
		return &diag.Error{Class: diag.ServerNotFoundError, Message: slow.Error(),
			Hint:   "catch the error and go on without this server, or retry in a later run; listServers() from @codemode/discovery shows when it is connected",
			Fields: map[string]any{"serverId": id, "available": nonNil(known)}}
	}
	return &diag.Error{Class: diag.ServerNotFoundError, Message: fmt.Sprintf("server %q is not connected: %s", id, err.Error()),
		Hint:   upstreamHint(err, "use another server, or retry later"),
		Fields: map[string]any{"serverId": id, "available": nonNil(known)}}
}

// callError maps a failed tool call to the class agent code catches.
func callError(ctx context.Context, serverID, tool string, err error) *diag.Error {
	fields := map[string]any{"serverId": serverID, "toolName": tool}
	switch {
	case errors.Is(err, upstream.Auth):
		return &diag.Error{Class: diag.AuthenticationError, Message: err.Error(), Fields: fields,
			Hint: upstreamHint(err, "the server rejected the gateway's credentials; the operator must fix them in the config")}
	case errors.Is(err, upstream.Canceled) || ctx.Err() != nil:
		return &diag.Error{Class: diag.ToolCallError, Message: fmt.Sprintf("call to %s/%s was cancelled: the run ended first", serverID, tool), Fields: fields,
			Hint: "await every tool call before the script ends, or raise limits.timeoutMs"}
	case errors.Is(err, upstream.Timeout):
		return &diag.Error{Class: diag.ToolCallError, Message: err.Error(), Fields: fields,
			Hint: upstreamHint(err, "the tool took too long; ask for less at once (smaller page, narrower query)")}
	case errors.Is(err, upstream.ErrUnknownServer):
		return serverError(serverID, err, nil, nil)
	}
	return &diag.Error{Class: diag.ToolCallError, Message: err.Error(), Fields: fields,
		Hint: upstreamHint(err, "check the input against getTool(serverId, toolName), or try again if the server was restarting")}
}

func upstreamHint(err error, fallback string) string {
	var ue *upstream.Error
	if errors.As(err, &ue) && ue.Hint != "" {
		return ue.Hint
	}
	return fallback
}

// closestHint lists what exists, nearest names first, for "not found" hints.
func closestHint(name string, known []string, what string) string {
	if len(known) == 0 {
		return "there are no " + what + " at all: check the gateway's configuration"
	}
	sorted := append([]string(nil), known...)
	lname := strings.ToLower(name)
	sort.SliceStable(sorted, func(i, j int) bool {
		return diag.Distance(lname, strings.ToLower(sorted[i])) < diag.Distance(lname, strings.ToLower(sorted[j]))
	})
	if d := diag.Distance(lname, strings.ToLower(sorted[0])); d <= max(2, len(name)/3) {
		return fmt.Sprintf("did you mean %q? %s", sorted[0], diag.ListHint(what, known, 30))
	}
	return diag.ListHint(what, known, 30)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
