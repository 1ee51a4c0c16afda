// Package thoughtbox is the `thoughtbox` built-in server: Thoughtbox's tb
// SDK (thoughts in reasoning sessions, session search, export and
// analysis, a knowledge graph) on the data store.
//
// Start with [New]. Each tb method is one MCP tool ([Operations] lists
// them: tb.session.list is the tool session_list), so scripts on every
// surface reach it as @codemode/servers/thoughtbox; the `thoughtbox`
// surface (thoughtbox_search, thoughtbox_execute) puts the `tb` object of
// [SDKSource] in scope, which turns tb.session.get(id) into
// session_get({sessionId: id}).
//
// "The current session", which tb.thought appends to, belongs to the
// caller's MCP session (builtin.Caller.Session): over stdio the whole
// connection, over HTTP each Mcp-Session-Id, and under stateless HTTP and
// `codemode run` each run. A thought with nextThoughtNeeded: false ends
// it; the next tb.thought starts a new session unless tb.session.resume
// picked one. All data is kept per client namespace.
package thoughtbox

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/builtin"
	"github.com/codemode-mcp/codemode/internal/store"
)

// ID is the server's id: @codemode/servers/thoughtbox.
const ID = "thoughtbox"

// Operation is one tb SDK method and the tool behind it.
type Operation struct {
	Module string // "thought", "session" or "knowledge"
	Method string // as in tb.<Module>.<Method>; tb.thought is module and method "thought"
	Tool   string // the MCP tool name
	// Positional lists the parameters a call may also pass positionally,
	// in order: tb.session.export(sessionId, format). Nil: the method
	// takes one object, and any other argument is refused with "Missing
	// required parameter".
	Positional []string
	// Rest, if set, names the positional parameter after which one more
	// object argument is merged in: tb.session.extractLearnings(id, {keyMoments}).
	Rest        bool
	Required    []string
	Description string
	Schema      *jsonschema.Schema
	ReadOnly    bool
	handler     func(s *server) builtin.Handler
}

// Signature is how the method is called, for descriptions.
func (o Operation) Signature() string {
	name := "tb." + o.Module + "." + o.Method
	if o.Module == o.Method {
		name = "tb." + o.Method
	}
	switch {
	case o.Positional != nil && o.Rest:
		return name + "(" + strings.Join(o.Positional, ", ") + ", args?)"
	case o.Positional != nil:
		ps := slices.Clone(o.Positional)
		for i, p := range ps {
			if !slices.Contains(o.Required, p) {
				ps[i] = p + "?"
			}
		}
		return name + "(" + strings.Join(ps, ", ") + ")"
	case len(o.Schema.Properties) == 0:
		return name + "()"
	}
	var ps []string
	for _, p := range o.Schema.PropertyOrder {
		if !slices.Contains(o.Required, p) {
			p += "?"
		}
		ps = append(ps, p)
	}
	if len(ps) > 8 {
		ps = append(ps[:8], "...")
	}
	return name + "({ " + strings.Join(ps, ", ") + " })"
}

// Operations are the tb SDK's methods, in catalog order.
var Operations = []Operation{
	{Module: "thought", Method: "thought", Tool: "thought", Required: []string{"thought", "thoughtType", "nextThoughtNeeded"},
		Description: "Record one thought in the current session (one is created if there is none), numbered after the last. thoughtType is one of reasoning, decision_frame (with options), action_report (with actionResult), belief_snapshot (with beliefs), assumption_update (with assumptionChange), context_snapshot (with contextData), progress (with progressData). Returns the stored thought with its thoughtNumber and sessionId.",
		Schema: schema[thoughtInput](map[string][]string{"thoughtType": ThoughtTypes, "confidence": Confidences, "actionResult.reversible": {"yes", "no", "partial"},
			"assumptionChange.newStatus": {"believed", "uncertain", "refuted"}, "progressData.status": {"pending", "in_progress", "done", "blocked"}}),
		handler: func(s *server) builtin.Handler { return s.thought }},

	{Module: "session", Method: "list", Tool: "session_list", ReadOnly: true,
		Description: "List sessions, most recently updated first, optionally only those carrying every tag given. Returns {sessions: [{id, title, tags, status, thoughtCount, createdAt, updatedAt}], total, limit, offset}.",
		Schema:      schema[sessionListInput](nil), handler: func(s *server) builtin.Handler { return s.sessionList }},
	{Module: "session", Method: "get", Tool: "session_get", Positional: []string{"sessionId"}, Required: []string{"sessionId"}, ReadOnly: true,
		Description: "Get a session and all its thoughts: {id, title, tags, status, thoughtCount, createdAt, updatedAt, thoughts: [...]}.",
		Schema:      schema[sessionIDInput](nil), handler: func(s *server) builtin.Handler { return s.sessionGet }},
	{Module: "session", Method: "search", Tool: "session_search", Positional: []string{"query", "limit"}, Required: []string{"query"}, ReadOnly: true,
		Description: "Full-text search across sessions (every word must match; stemmed, so retries finds retry). Returns {query, results: [{sessionId, title, tags, matches: [{thoughtNumber, thoughtType, excerpt}]}]}, best first.",
		Schema:      schema[sessionSearchInput](nil), handler: func(s *server) builtin.Handler { return s.sessionSearch }},
	{Module: "session", Method: "resume", Tool: "session_resume", Positional: []string{"sessionId"}, Required: []string{"sessionId"},
		Description: "Continue an existing session: later tb.thought calls of this MCP session append to it. Returns {session, lastThought, nextThoughtNumber}.",
		Schema:      schema[sessionIDInput](nil), handler: func(s *server) builtin.Handler { return s.sessionResume }},
	{Module: "session", Method: "export", Tool: "session_export", Positional: []string{"sessionId", "format"}, Required: []string{"sessionId"}, ReadOnly: true,
		Description: `Export a session: "markdown" (default) and "cipher" (a compact one-line-per-thought notation) as a string, "json" as an object.`,
		Schema:      schema[sessionExportInput](map[string][]string{"format": ExportFormats}), handler: func(s *server) builtin.Handler { return s.sessionExport }},
	{Module: "session", Method: "analyze", Tool: "session_analyze", Positional: []string{"sessionId"}, Required: []string{"sessionId"}, ReadOnly: true,
		Description: "Structural metrics of a session, each from 0 to 1 except depth and density: linearity (share of thoughts on the main line that revise nothing), revisionRate (share of revisions), depth (deepest branch nesting), density (words per thought), convergence (1 ended on the main line, 0.5 ended on a branch, 0 still open); with counts by type.",
		Schema:      schema[sessionIDInput](nil), handler: func(s *server) builtin.Handler { return s.sessionAnalyze }},
	{Module: "session", Method: "extractLearnings", Tool: "session_extractLearnings", Positional: []string{"sessionId"}, Rest: true, Required: []string{"sessionId"}, ReadOnly: true,
		Description: "Pull learnings from a session's key moments: patterns (from decisions, insights, branches), anti-patterns (from revisions and pivots) and a signal (the session's metrics). args is {keyMoments: [{thoughtNumber, type, significance?, summary?}], targetTypes: [...]}; without keyMoments, decisions, revisions and branch points are used.",
		Schema:      schema[extractInput](map[string][]string{"keyMoments.type": MomentTypes, "targetTypes": LearningTypes}),
		handler:     func(s *server) builtin.Handler { return s.extractLearnings }},

	{Module: "knowledge", Method: "createEntity", Tool: "knowledge_createEntity", Required: []string{"name", "type", "label"},
		Description: "Create an entity of the knowledge graph (type Insight, Concept, Workflow, Decision or Agent). Returns it with its id. An entity of the same type and name that exists already is returned as it is, with existing: true.",
		Schema:      schema[createEntityInput](map[string][]string{"type": EntityTypes, "visibility": Visibilities}), handler: func(s *server) builtin.Handler { return s.createEntity }},
	{Module: "knowledge", Method: "getEntity", Tool: "knowledge_getEntity", Positional: []string{"entity_id"}, Required: []string{"entity_id"}, ReadOnly: true,
		Description: "Get an entity by id, with its observations.",
		Schema:      schema[entityIDInput](nil), handler: func(s *server) builtin.Handler { return s.getEntity }},
	{Module: "knowledge", Method: "listEntities", Tool: "knowledge_listEntities", ReadOnly: true,
		Description: "List entities, oldest first, optionally by type and name. Returns {entities, total}.",
		Schema:      schema[listEntitiesInput](map[string][]string{"types": EntityTypes}), handler: func(s *server) builtin.Handler { return s.listEntities }},
	{Module: "knowledge", Method: "addObservation", Tool: "knowledge_addObservation", Required: []string{"entity_id", "content"},
		Description: "Add a timestamped observation to an entity. Takes one object: {entity_id, content}.",
		Schema:      schema[addObservationInput](nil), handler: func(s *server) builtin.Handler { return s.addObservation }},
	{Module: "knowledge", Method: "createRelation", Tool: "knowledge_createRelation", Required: []string{"from_id", "to_id", "relation_type"},
		Description: "Create a directed edge from_id → to_id of one of nine types: RELATES_TO, BUILDS_ON, CONTRADICTS, EXTRACTED_FROM, APPLIED_IN, LEARNED_BY, DEPENDS_ON, SUPERSEDES, MERGED_FROM. An edge that exists already is returned with existing: true.",
		Schema:      schema[createRelationInput](map[string][]string{"relation_type": RelationTypes}), handler: func(s *server) builtin.Handler { return s.createRelation }},
	{Module: "knowledge", Method: "queryGraph", Tool: "knowledge_queryGraph", Required: []string{"start_entity_id"}, ReadOnly: true,
		Description: "Traverse the graph from an entity, following relations both ways, breadth first. Takes one object: {start_entity_id, max_depth?, relation_types?}. Returns {entities: [{..., depth}], relations}.",
		Schema:      schema[queryGraphInput](map[string][]string{"relation_types": RelationTypes}), handler: func(s *server) builtin.Handler { return s.queryGraph }},
	{Module: "knowledge", Method: "stats", Tool: "knowledge_stats", ReadOnly: true,
		Description: "Aggregate counts: entities and relations by type, observations, sessions and thoughts.",
		Schema:      schema[empty](nil), handler: func(s *server) builtin.Handler { return s.stats }},
}

// Operation returns the operation of a tool name.
func OperationOf(tool string) (Operation, bool) {
	for _, o := range Operations {
		if o.Tool == tool {
			return o, true
		}
	}
	return Operation{}, false
}

const instructions = `Thoughtbox: a reasoning ledger. Record thoughts (thought), which go into the current session of this MCP session; list, search, resume, export and analyze sessions (session_*); and keep a knowledge graph of entities, observations and relations (knowledge_*). On the thoughtbox surface the same operations are the tb SDK: tb.thought(...), tb.session.list(...), tb.knowledge.createEntity(...).`

// Options configure the server.
type Options struct {
	// MaxCurrentSessions bounds how many MCP sessions' current sessions
	// are remembered; the least recently used is forgotten first (its next
	// thought starts a new session). Default 10,000.
	MaxCurrentSessions int
}

type server struct {
	st   *store.Store
	opts Options

	mu      sync.Mutex
	current map[string]*list.Element // caller key → *cursor
	lru     *list.List
}

// cursor is an MCP session's current session.
type cursor struct {
	key string
	mu  sync.Mutex // held while a thought is recorded: one session is created, numbers follow call order
	id  string
}

// New returns the thoughtbox server over st.
func New(st *store.Store, opts *Options) *builtin.Server {
	s := &server{st: st, current: map[string]*list.Element{}, lru: list.New()}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.MaxCurrentSessions <= 0 {
		s.opts.MaxCurrentSessions = 10_000
	}
	srv := builtin.NewServer(ID, "1.0.0", instructions)
	for _, o := range Operations {
		ann := &mcp.ToolAnnotations{ReadOnlyHint: o.ReadOnly}
		if !o.ReadOnly {
			ann.DestructiveHint = ptr(false)
		}
		srv.AddTool(&mcp.Tool{Name: o.Tool, Title: o.Signature(), Description: o.Description, InputSchema: o.Schema, Annotations: ann}, o.handler(s))
	}
	return srv
}

func ptr[T any](v T) *T { return &v }

func (s *server) cursor(c builtin.Caller) *cursor {
	key := c.Client + "\x00" + c.Session
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.current[key]; ok {
		s.lru.MoveToFront(el)
		return el.Value.(*cursor)
	}
	cur := &cursor{key: key}
	s.current[key] = s.lru.PushFront(cur)
	for s.lru.Len() > s.opts.MaxCurrentSessions {
		old := s.lru.Back()
		s.lru.Remove(old)
		delete(s.current, old.Value.(*cursor).key)
	}
	return cur
}

// missing is the error of a required parameter left out, as Thoughtbox
// words it.
func missing(name, usage string) error {
	return fmt.Errorf("Missing required parameter: %s (%s)", name, usage)
}

// notFound words a store.NotFoundError for the model.
func notFound(err error, how string) error {
	var nf *store.NotFoundError
	if errors.As(err, &nf) {
		return fmt.Errorf("no %s with id %q in this namespace; %s", nf.What, nf.ID, how)
	}
	return err
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func oneOf(field, v string, allowed []string) error {
	if v == "" || slices.Contains(allowed, v) {
		return nil
	}
	return fmt.Errorf("%s is %q; use one of %s", field, v, strings.Join(allowed, ", "))
}

// sessionJSON is a session as scripts see it.
type sessionJSON struct {
	ID           string   `json:"id"`
	Title        string   `json:"title"`
	Tags         []string `json:"tags"`
	Status       string   `json:"status"`
	ThoughtCount int      `json:"thoughtCount"`
	CreatedAt    string   `json:"createdAt"`
	UpdatedAt    string   `json:"updatedAt"`
}

func sessionOut(s store.Session) sessionJSON {
	tags := s.Tags
	if tags == nil {
		tags = []string{}
	}
	return sessionJSON{ID: s.ID, Title: s.Title, Tags: tags, Status: s.Status, ThoughtCount: s.ThoughtCount, CreatedAt: stamp(s.CreatedAt), UpdatedAt: stamp(s.UpdatedAt)}
}

// thoughtOut is a stored thought as scripts see it: its fields as given,
// its number and session, and the type-specific payload fields.
func thoughtOut(t store.Thought) map[string]any {
	m := map[string]any{}
	if len(t.Payload) > 0 {
		json.Unmarshal(t.Payload, &m)
	}
	m["sessionId"] = t.SessionID
	m["thoughtNumber"] = t.Number
	m["thought"] = t.Thought
	m["thoughtType"] = t.Type
	m["nextThoughtNeeded"] = t.NextThoughtNeeded
	m["createdAt"] = stamp(t.CreatedAt)
	if t.Confidence != "" {
		m["confidence"] = t.Confidence
	}
	if t.BranchID != "" {
		m["branchId"] = t.BranchID
	}
	if t.BranchFromThought != 0 {
		m["branchFromThought"] = t.BranchFromThought
	}
	if t.IsRevision {
		m["isRevision"] = true
	}
	if t.RevisesThought != 0 {
		m["revisesThought"] = t.RevisesThought
	}
	return m
}

// payloadFor checks that a structured thought carries its payload and
// returns the payload fields to store.
func payloadFor(in *thoughtInput) (json.RawMessage, error) {
	p := map[string]any{}
	need := func(field string, present bool, shape string) error {
		if !present {
			return missing(field, "a "+in.ThoughtType+" thought carries "+field+": "+shape)
		}
		return nil
	}
	var err error
	switch in.ThoughtType {
	case "decision_frame":
		if err = need("options", len(in.Options) > 0, `[{label, selected, reason?}, ...], the options weighed`); err == nil {
			for i, o := range in.Options {
				if strings.TrimSpace(o.Label) == "" {
					return nil, missing(fmt.Sprintf("options[%d].label", i), "each option has a label")
				}
			}
		}
	case "action_report":
		if err = need("actionResult", in.ActionResult != nil, "{success, reversible: yes|no|partial, tool, target, sideEffects?}"); err == nil {
			err = oneOf("actionResult.reversible", in.ActionResult.Reversible, []string{"yes", "no", "partial"})
		}
	case "belief_snapshot":
		err = need("beliefs", in.Beliefs != nil && len(in.Beliefs.Entities) > 0, "{entities: [{name, state}], constraints?, risks?}")
	case "assumption_update":
		if err = need("assumptionChange", in.AssumptionChange != nil, "{text, oldStatus, newStatus: believed|uncertain|refuted, trigger?, downstream?}"); err == nil {
			err = oneOf("assumptionChange.newStatus", in.AssumptionChange.NewStatus, []string{"believed", "uncertain", "refuted"})
		}
	case "context_snapshot":
		err = need("contextData", in.ContextData != nil, "{toolsAvailable?, systemPromptHash?, modelId?, constraints?, dataSourcesAccessed?}")
	case "progress":
		if err = need("progressData", in.ProgressData != nil, "{task, status: pending|in_progress|done|blocked, note?}"); err == nil {
			err = oneOf("progressData.status", in.ProgressData.Status, []string{"pending", "in_progress", "done", "blocked"})
		}
	}
	if err != nil {
		return nil, err
	}
	// Every payload given is kept, whatever the type: a reasoning thought
	// may list options too.
	if len(in.Options) > 0 {
		p["options"] = in.Options
	}
	for k, v := range map[string]any{"actionResult": in.ActionResult, "beliefs": in.Beliefs, "assumptionChange": in.AssumptionChange, "contextData": in.ContextData, "progressData": in.ProgressData} {
		if !reflectNil(v) {
			p[k] = v
		}
	}
	if in.TotalThoughts > 0 {
		p["totalThoughts"] = in.TotalThoughts
	}
	if in.NeedsMoreThoughts {
		p["needsMoreThoughts"] = true
	}
	if in.AgentID != "" {
		p["agentId"] = in.AgentID
	}
	if in.AgentName != "" {
		p["agentName"] = in.AgentName
	}
	if len(p) == 0 {
		return nil, nil
	}
	return json.Marshal(p)
}

func reflectNil(v any) bool {
	switch x := v.(type) {
	case *actionResult:
		return x == nil
	case *beliefs:
		return x == nil
	case *assumptionChange:
		return x == nil
	case *contextData:
		return x == nil
	case *progressData:
		return x == nil
	}
	return v == nil
}

func (s *server) thought(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in thoughtInput
	// Required booleans: a missing nextThoughtNeeded must not read as false.
	var present map[string]json.RawMessage
	if err := decode(args, &present); err != nil {
		return nil, fmt.Errorf("tb.thought takes one object: %v", err)
	}
	if err := decode(args, &in); err != nil {
		return nil, fmt.Errorf("tb.thought: %v", err)
	}
	usage := "tb.thought({ thought, thoughtType, nextThoughtNeeded, ... })"
	if strings.TrimSpace(in.Thought) == "" {
		return nil, missing("thought", usage)
	}
	if in.ThoughtType == "" {
		return nil, missing("thoughtType", "one of "+strings.Join(ThoughtTypes, ", "))
	}
	if err := oneOf("thoughtType", in.ThoughtType, ThoughtTypes); err != nil {
		return nil, err
	}
	if _, ok := present["nextThoughtNeeded"]; !ok {
		return nil, missing("nextThoughtNeeded", "true to continue the session, false to end it")
	}
	if err := oneOf("confidence", in.Confidence, Confidences); err != nil {
		return nil, err
	}
	if in.IsRevision && in.RevisesThought == 0 {
		return nil, missing("revisesThought", "the number of the thought this one revises, with isRevision: true")
	}
	if in.RevisesThought < 0 || in.BranchFromThought < 0 {
		return nil, errors.New("revisesThought and branchFromThought are thought numbers, from 1")
	}
	if in.BranchFromThought != 0 && in.BranchID == "" {
		return nil, missing("branchId", "a name for the branch that starts at branchFromThought")
	}
	payload, err := payloadFor(&in)
	if err != nil {
		return nil, err
	}
	th := store.Thought{Thought: in.Thought, Type: in.ThoughtType, NextThoughtNeeded: in.NextThoughtNeeded, Confidence: in.Confidence,
		BranchID: in.BranchID, BranchFromThought: in.BranchFromThought, IsRevision: in.IsRevision || in.RevisesThought != 0, RevisesThought: in.RevisesThought, Payload: payload}

	cur := s.cursor(c)
	cur.mu.Lock()
	defer cur.mu.Unlock()
	th2, ses, err := s.appendCurrent(ctx, c, cur, in, th)
	if err != nil {
		return nil, err
	}
	if !in.NextThoughtNeeded {
		cur.id = "" // the session ended; the next thought starts another
	}
	out := thoughtOut(th2)
	out["session"] = sessionOut(ses)
	return out, nil
}

func (s *server) appendCurrent(ctx context.Context, c builtin.Caller, cur *cursor, in thoughtInput, th store.Thought) (store.Thought, store.Session, error) {
	t := s.st.Thoughts()
	a := store.Append{Thought: th, Title: in.SessionTitle, Tags: in.SessionTags}
	if cur.id != "" {
		got, ses, err := t.AppendThought(ctx, c.Client, cur.id, a)
		var nf *store.NotFoundError
		if !errors.As(err, &nf) {
			return got, ses, thoughtErr(err)
		}
	}
	title := in.SessionTitle
	if title == "" {
		title = clip(in.Thought, 80)
	}
	ses, err := t.CreateSession(ctx, c.Client, title, in.SessionTags)
	if err != nil {
		return store.Thought{}, store.Session{}, err
	}
	cur.id = ses.ID
	a.Title, a.Tags = "", nil
	got, ses, err := t.AppendThought(ctx, c.Client, ses.ID, a)
	return got, ses, thoughtErr(err)
}

func thoughtErr(err error) error {
	var te *store.ThoughtError
	if errors.As(err, &te) {
		return errors.New(te.Msg)
	}
	return err
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func (s *server) sessionList(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in sessionListInput
	if err := decode(args, &in); err != nil {
		return nil, err
	}
	if in.Limit <= 0 {
		in.Limit = 20
	}
	in.Limit = min(in.Limit, 100)
	list, total, err := s.st.Thoughts().List(ctx, c.Client, in.Limit, in.Offset, in.Tags)
	if err != nil {
		return nil, err
	}
	out := make([]sessionJSON, len(list))
	for i, ses := range list {
		out[i] = sessionOut(ses)
	}
	// count and hasMore are the names Thoughtbox's own list gives.
	return map[string]any{"sessions": out, "total": total, "count": len(out), "hasMore": max(0, in.Offset)+len(out) < total,
		"limit": in.Limit, "offset": max(0, in.Offset)}, nil
}

func needSession(id string) error {
	if strings.TrimSpace(id) == "" {
		return missing("sessionId", "a session's id, from tb.session.list() or a thought's sessionId")
	}
	return nil
}

const findSessions = "list them with tb.session.list() or find one with tb.session.search(query)"

func (s *server) sessionGet(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in sessionIDInput
	if err := decode(args, &in); err != nil {
		return nil, err
	}
	if err := needSession(in.SessionID); err != nil {
		return nil, err
	}
	ses, ths, err := s.st.Thoughts().Get(ctx, c.Client, in.SessionID)
	if err != nil {
		return nil, notFound(err, findSessions)
	}
	return sessionWithThoughts(ses, ths), nil
}

// sessionWithThoughts is a session's fields with its thoughts, also in the
// shape of Thoughtbox's own session get: the session under "session" and
// the branches' thoughts by branch id under "branches".
func sessionWithThoughts(ses store.Session, ths []store.Thought) map[string]any {
	out := map[string]any{}
	b, _ := json.Marshal(sessionOut(ses))
	json.Unmarshal(b, &out)
	list := make([]map[string]any, len(ths))
	branches := map[string][]map[string]any{}
	for i, t := range ths {
		list[i] = thoughtOut(t)
		if t.BranchID != "" {
			branches[t.BranchID] = append(branches[t.BranchID], list[i])
		}
	}
	out["thoughts"] = list
	out["session"] = sessionOut(ses)
	out["branches"] = branches
	return out
}

func (s *server) sessionSearch(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in sessionSearchInput
	if err := decode(args, &in); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Query) == "" {
		return nil, missing("query", "the words to find, e.g. tb.session.search(\"retry backoff\")")
	}
	if in.Limit <= 0 {
		in.Limit = 10
	}
	in.Limit = min(in.Limit, 100)
	hits, err := s.st.Thoughts().Search(ctx, c.Client, in.Query, in.Limit*5)
	if err != nil {
		return nil, err
	}
	type match struct {
		ThoughtNumber int    `json:"thoughtNumber"`
		ThoughtType   string `json:"thoughtType"`
		Excerpt       string `json:"excerpt"`
	}
	type result struct {
		SessionID string   `json:"sessionId"`
		Title     string   `json:"title"`
		Tags      []string `json:"tags"`
		Matches   []match  `json:"matches"`
	}
	results := []*result{}
	by := map[string]*result{}
	for _, h := range hits {
		r := by[h.SessionID]
		if r == nil {
			if len(results) == in.Limit {
				continue
			}
			ses, err := s.st.Thoughts().Session(ctx, c.Client, h.SessionID)
			if err != nil {
				return nil, err
			}
			r = &result{SessionID: ses.ID, Title: ses.Title, Tags: ses.Tags}
			by[h.SessionID] = r
			results = append(results, r)
		}
		if len(r.Matches) < 5 {
			r.Matches = append(r.Matches, match{h.Number, h.Type, clip(h.Thought, 200)})
		}
	}
	return map[string]any{"query": in.Query, "results": results}, nil
}

func (s *server) sessionResume(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in sessionIDInput
	if err := decode(args, &in); err != nil {
		return nil, err
	}
	if err := needSession(in.SessionID); err != nil {
		return nil, err
	}
	ses, ths, err := s.st.Thoughts().Get(ctx, c.Client, in.SessionID)
	if err != nil {
		return nil, notFound(err, findSessions)
	}
	cur := s.cursor(c)
	cur.mu.Lock()
	cur.id = ses.ID
	cur.mu.Unlock()
	out := map[string]any{"resumed": true, "session": sessionOut(ses), "nextThoughtNumber": ses.ThoughtCount + 1, "lastThought": nil}
	if len(ths) > 0 {
		out["lastThought"] = thoughtOut(ths[len(ths)-1])
	}
	return out, nil
}

func (s *server) sessionExport(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in sessionExportInput
	if err := decode(args, &in); err != nil {
		return nil, err
	}
	if err := needSession(in.SessionID); err != nil {
		return nil, err
	}
	if in.Format == "" {
		in.Format = "markdown"
	}
	if err := oneOf("format", in.Format, ExportFormats); err != nil {
		return nil, err
	}
	ses, ths, err := s.st.Thoughts().Get(ctx, c.Client, in.SessionID)
	if err != nil {
		return nil, notFound(err, findSessions)
	}
	switch in.Format {
	case "json":
		out := sessionWithThoughts(ses, ths)
		out["format"] = "json"
		return out, nil
	case "cipher":
		return builtin.Text(Cipher(ses, ths)), nil
	}
	return builtin.Text(Markdown(ses, ths)), nil
}

func (s *server) sessionAnalyze(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in sessionIDInput
	if err := decode(args, &in); err != nil {
		return nil, err
	}
	if err := needSession(in.SessionID); err != nil {
		return nil, err
	}
	ses, ths, err := s.st.Thoughts().Get(ctx, c.Client, in.SessionID)
	if err != nil {
		return nil, notFound(err, findSessions)
	}
	return Analyze(ses, ths), nil
}

func (s *server) extractLearnings(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in extractInput
	if err := decode(args, &in); err != nil {
		return nil, err
	}
	if err := needSession(in.SessionID); err != nil {
		return nil, err
	}
	for _, t := range in.TargetTypes {
		if err := oneOf("targetTypes[]", t, LearningTypes); err != nil {
			return nil, err
		}
	}
	for i, m := range in.KeyMoments {
		if err := oneOf(fmt.Sprintf("keyMoments[%d].type", i), m.Type, MomentTypes); err != nil {
			return nil, err
		}
	}
	ses, ths, err := s.st.Thoughts().Get(ctx, c.Client, in.SessionID)
	if err != nil {
		return nil, notFound(err, findSessions)
	}
	return ExtractLearnings(ses, ths, in.KeyMoments, in.TargetTypes)
}

// Knowledge graph.

func entityOut(e store.Entity) map[string]any {
	var props any = map[string]any{}
	json.Unmarshal(e.Properties, &props)
	return map[string]any{"id": e.ID, "entity_id": e.ID, "name": e.Name, "type": e.Type, "label": e.Label, "properties": props,
		"visibility": e.Visibility, "created_at": stamp(e.CreatedAt), "updated_at": stamp(e.UpdatedAt)}
}

func (s *server) createEntity(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in createEntityInput
	if err := decode(args, &in); err != nil {
		return nil, err
	}
	usage := "tb.knowledge.createEntity({ name, type, label, properties?, visibility? })"
	for _, f := range []struct{ name, v string }{{"name", in.Name}, {"type", in.Type}, {"label", in.Label}} {
		if strings.TrimSpace(f.v) == "" {
			return nil, missing(f.name, usage)
		}
	}
	if err := oneOf("type", in.Type, EntityTypes); err != nil {
		return nil, err
	}
	if err := oneOf("visibility", in.Visibility, Visibilities); err != nil {
		return nil, err
	}
	var props json.RawMessage
	if in.Properties != nil {
		props, _ = json.Marshal(in.Properties)
	}
	e, existing, err := s.st.Knowledge().CreateEntity(ctx, c.Client, store.Entity{Name: in.Name, Type: in.Type, Label: in.Label, Properties: props, Visibility: in.Visibility})
	if err != nil {
		return nil, err
	}
	out := entityOut(e)
	out["existing"] = existing
	return out, nil
}

const findEntities = "find entities with tb.knowledge.listEntities({ name_pattern })"

func (s *server) getEntity(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in entityIDInput
	if err := decode(args, &in); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.EntityID) == "" {
		return nil, missing("entity_id", "tb.knowledge.getEntity(entityId)")
	}
	e, obs, err := s.st.Knowledge().Entity(ctx, c.Client, in.EntityID)
	if err != nil {
		return nil, notFound(err, findEntities)
	}
	out := entityOut(e)
	list := make([]map[string]any, len(obs))
	for i, o := range obs {
		list[i] = observationOut(o)
	}
	out["observations"] = list
	return out, nil
}

func observationOut(o store.Observation) map[string]any {
	m := map[string]any{"id": o.ID, "observation_id": o.ID, "entity_id": o.EntityID, "content": o.Content, "added_at": stamp(o.CreatedAt)}
	if o.SourceSession != "" {
		m["source_session"] = o.SourceSession
	}
	return m
}

func (s *server) listEntities(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in listEntitiesInput
	if err := decode(args, &in); err != nil {
		return nil, err
	}
	for _, t := range in.Types {
		if err := oneOf("types[]", t, EntityTypes); err != nil {
			return nil, err
		}
	}
	if in.Limit <= 0 {
		in.Limit = 50
	}
	in.Limit = min(in.Limit, 500)
	list, total, err := s.st.Knowledge().ListEntities(ctx, c.Client, store.EntityFilter{Types: in.Types, NamePattern: in.NamePattern, Limit: in.Limit, Offset: in.Offset})
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, len(list))
	for i, e := range list {
		out[i] = entityOut(e)
	}
	return map[string]any{"entities": out, "total": total, "count": len(out)}, nil
}

func (s *server) addObservation(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in addObservationInput
	if err := decode(args, &in); err != nil {
		return nil, err
	}
	usage := "tb.knowledge.addObservation takes one object: { entity_id, content }"
	if strings.TrimSpace(in.EntityID) == "" {
		return nil, missing("entity_id", usage)
	}
	if strings.TrimSpace(in.Content) == "" {
		return nil, missing("content", usage)
	}
	o, err := s.st.Knowledge().AddObservation(ctx, c.Client, in.EntityID, in.Content, in.SourceSession)
	if err != nil {
		return nil, notFound(err, findEntities)
	}
	return observationOut(o), nil
}

func relationOut(r store.Relation) map[string]any {
	return map[string]any{"id": r.ID, "from_id": r.FromID, "to_id": r.ToID, "relation_type": r.Type, "created_at": stamp(r.CreatedAt)}
}

func (s *server) createRelation(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in createRelationInput
	if err := decode(args, &in); err != nil {
		return nil, err
	}
	usage := "tb.knowledge.createRelation({ from_id, to_id, relation_type })"
	for _, f := range []struct{ name, v string }{{"from_id", in.FromID}, {"to_id", in.ToID}, {"relation_type", in.RelationType}} {
		if strings.TrimSpace(f.v) == "" {
			return nil, missing(f.name, usage)
		}
	}
	if err := oneOf("relation_type", in.RelationType, RelationTypes); err != nil {
		return nil, err
	}
	r, existing, err := s.st.Knowledge().CreateRelation(ctx, c.Client, in.FromID, in.ToID, in.RelationType)
	if err != nil {
		return nil, notFound(err, findEntities)
	}
	out := relationOut(r)
	out["existing"] = existing
	return out, nil
}

func (s *server) queryGraph(ctx context.Context, c builtin.Caller, args json.RawMessage) (any, error) {
	var in queryGraphInput
	if err := decode(args, &in); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.StartEntityID) == "" {
		return nil, missing("start_entity_id", "tb.knowledge.queryGraph takes one object: { start_entity_id, max_depth?, relation_types? }")
	}
	for _, t := range in.RelationTypes {
		if err := oneOf("relation_types[]", t, RelationTypes); err != nil {
			return nil, err
		}
	}
	if in.MaxDepth <= 0 {
		in.MaxDepth = 2
	}
	in.MaxDepth = min(in.MaxDepth, 5)
	nodes, rels, err := s.st.Knowledge().QueryGraph(ctx, c.Client, in.StartEntityID, in.MaxDepth, in.RelationTypes)
	if err != nil {
		return nil, notFound(err, findEntities)
	}
	ents := make([]map[string]any, len(nodes))
	for i, n := range nodes {
		ents[i] = entityOut(n.Entity)
		ents[i]["depth"] = n.Depth
	}
	rs := make([]map[string]any, len(rels))
	for i, r := range rels {
		rs[i] = relationOut(r)
	}
	return map[string]any{"start_entity_id": in.StartEntityID, "max_depth": in.MaxDepth, "entity_count": len(ents), "relation_count": len(rs), "entities": ents, "relations": rs}, nil
}

func (s *server) stats(ctx context.Context, c builtin.Caller, _ json.RawMessage) (any, error) {
	st, err := s.st.Knowledge().Stats(ctx, c.Client)
	if err != nil {
		return nil, err
	}
	sessions, thoughts, err := s.st.Thoughts().Stats(ctx, c.Client)
	if err != nil {
		return nil, err
	}
	return map[string]any{"entities": st.Entities, "relations": st.Relations, "observations": st.Observations,
		"entity_types": st.EntityTypes, "relation_types": st.RelationTypes, "sessions": sessions, "thoughts": thoughts}, nil
}
