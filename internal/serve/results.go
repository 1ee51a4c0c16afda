package serve

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/store"
)

// Large results as resources. What a run's limits would lose (a result
// over maxResultBytes, the log entry maxLogBytes cut, a tool result too
// large for the sandbox; see run/spill.go) is kept in the store and served
// as the MCP resource codemode://results/<id>, declared under the resources
// capability. Only the session that made it can read it (under stateless
// HTTP, where every request is a session, any request of the same client),
// until it expires (Options.ResultTTL, default 1 h; codemode.resultTTLMs).
// The tool result that links to it carries a resource_link block.

// ResultURIPrefix starts the URI of every kept result.
const ResultURIPrefix = "codemode://results/"

// defaultResultTTL is Options.ResultTTL's default.
const defaultResultTTL = time.Hour

// defaultResultQuota is codemode.resultQuotaBytes' default: what one
// client may have kept at once.
const defaultResultQuota = 256 << 20

// results serves kept results.
type results struct {
	s     *Server
	st    *store.Store
	ttl   time.Duration
	quota int64
}

// newResults returns the results feature, or nil without a store.
func newResults(s *Server) *results {
	if s.opts.Store == nil {
		return nil
	}
	ttl := s.opts.ResultTTL
	if ttl <= 0 {
		ttl = s.cfg.Serve.ResultTTL
	}
	if ttl <= 0 {
		ttl = defaultResultTTL
	}
	quota := s.cfg.Serve.ResultQuotaBytes
	if quota <= 0 {
		quota = defaultResultQuota
	}
	return &results{s: s, st: s.opts.Store, ttl: ttl, quota: quota}
}

func (r *results) declare(caps *mcp.ServerCapabilities) {
	if r != nil {
		caps.Resources = &mcp.ResourceCapabilities{}
	}
}

func (r *results) mount() {
	if r == nil {
		return
	}
	r.s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "result",
		Title:       "A result too large for its response",
		Description: "The whole of a run's result (or a log entry, or a tool result) that did not fit its limit; the response that made it links to it. Readable by the session that made it, for " + r.ttl.String() + ".",
		URITemplate: ResultURIPrefix + "{id}",
	}, r.read)
}

// owner is who may read what a call keeps: the client's namespace and the
// session ("" under stateless HTTP: any of the client's requests).
func (r *results) owner(extra *mcp.RequestExtra, session *mcp.ServerSession) (client, key string) {
	client = r.s.clientOf(extra)
	if session != nil && !r.s.stateless.Load() {
		key = r.s.sessionKey(session)
	}
	return client, key
}

func (r *results) read(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := strings.CutPrefix(uri, ResultURIPrefix)
	if !ok || id == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	client, session := r.owner(req.Extra, req.Session)
	res, found, err := r.st.Results().Get(ctx, client, session, id)
	if err != nil {
		return nil, storeError(err)
	}
	if !found {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: res.MIMEType, Text: res.Data}}}, nil
}

// forCall gives a tool call a run.Spill that keeps data for its client and
// session; link adds a resource_link block for each result kept to the
// call's result. Without the feature, ctx is unchanged.
func (r *results) forCall(ctx context.Context, req *mcp.CallToolRequest) (_ context.Context, link func(*mcp.CallToolResult) *mcp.CallToolResult) {
	if r == nil {
		return ctx, func(res *mcp.CallToolResult) *mcp.CallToolResult { return res }
	}
	client, session := r.owner(req.Extra, req.Session)
	var mu sync.Mutex
	var kept []*mcp.ResourceLink
	spill := func(ctx context.Context, data []byte, mimeType string) (string, error) {
		res, err := r.st.Results().Put(context.WithoutCancel(ctx), store.Result{ID: store.NewID(), Client: client, Session: session, MIMEType: mimeType, Data: string(data)}, r.ttl, r.quota)
		if err != nil {
			r.s.log.Warn("a large result could not be kept", "bytes", len(data), "err", err)
			return "", err
		}
		uri := ResultURIPrefix + res.ID
		size := int64(len(data))
		mu.Lock()
		kept = append(kept, &mcp.ResourceLink{URI: uri, Name: "result " + res.ID, MIMEType: mimeType, Size: &size,
			Description: "kept whole until " + res.ExpiresAt.UTC().Format(time.RFC3339)})
		mu.Unlock()
		return uri, nil
	}
	return run.WithSpill(ctx, spill), func(res *mcp.CallToolResult) *mcp.CallToolResult {
		mu.Lock()
		defer mu.Unlock()
		if res != nil {
			for _, l := range kept {
				res.Content = append(res.Content, l)
			}
		}
		return res
	}
}
