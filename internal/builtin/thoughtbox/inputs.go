package thoughtbox

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/codemode-mcp/codemode/internal/builtin"
)

// The seven thought types.
var ThoughtTypes = []string{"reasoning", "decision_frame", "action_report", "belief_snapshot", "assumption_update", "context_snapshot", "progress"}

// The five entity types and nine relation types of the knowledge graph.
var (
	EntityTypes   = []string{"Insight", "Concept", "Workflow", "Decision", "Agent"}
	RelationTypes = []string{"RELATES_TO", "BUILDS_ON", "CONTRADICTS", "EXTRACTED_FROM", "APPLIED_IN", "LEARNED_BY", "DEPENDS_ON", "SUPERSEDES", "MERGED_FROM"}
	Visibilities  = []string{"public", "agent-private", "user-private", "team-private"}
	Confidences   = []string{"high", "medium", "low"}
	ExportFormats = []string{"markdown", "json", "cipher"}
	MomentTypes   = []string{"decision", "pivot", "insight", "revision", "branch"}
	LearningTypes = []string{"pattern", "anti-pattern", "signal"}
)

type option struct {
	Label    string `json:"label" jsonschema:"the option"`
	Selected bool   `json:"selected" jsonschema:"whether it is the one chosen"`
	Reason   string `json:"reason,omitempty" jsonschema:"why"`
}

type actionResult struct {
	Success     bool     `json:"success" jsonschema:"whether the action worked"`
	Reversible  string   `json:"reversible" jsonschema:"yes, no or partial"`
	Tool        string   `json:"tool" jsonschema:"the tool or command used"`
	Target      string   `json:"target" jsonschema:"what it acted on"`
	SideEffects []string `json:"sideEffects,omitempty" jsonschema:"effects beyond the target"`
}

type beliefEntity struct {
	Name  string `json:"name"`
	State string `json:"state"`
}

type beliefs struct {
	Entities    []beliefEntity `json:"entities" jsonschema:"what is believed about each thing"`
	Constraints []string       `json:"constraints,omitempty"`
	Risks       []string       `json:"risks,omitempty"`
}

type assumptionChange struct {
	Text       string `json:"text" jsonschema:"the assumption"`
	OldStatus  string `json:"oldStatus" jsonschema:"its status before"`
	NewStatus  string `json:"newStatus" jsonschema:"believed, uncertain or refuted"`
	Trigger    string `json:"trigger,omitempty" jsonschema:"what changed it"`
	Downstream []int  `json:"downstream,omitempty" jsonschema:"numbers of the thoughts that relied on it"`
}

type contextData struct {
	ToolsAvailable      []string `json:"toolsAvailable,omitempty"`
	SystemPromptHash    string   `json:"systemPromptHash,omitempty"`
	ModelID             string   `json:"modelId,omitempty"`
	Constraints         []string `json:"constraints,omitempty"`
	DataSourcesAccessed []string `json:"dataSourcesAccessed,omitempty"`
}

type progressData struct {
	Task   string `json:"task" jsonschema:"the task"`
	Status string `json:"status" jsonschema:"pending, in_progress, done or blocked"`
	Note   string `json:"note,omitempty"`
}

// thoughtInput is tb.thought's argument.
type thoughtInput struct {
	Thought           string            `json:"thought" jsonschema:"the reasoning step, in your own words"`
	ThoughtType       string            `json:"thoughtType" jsonschema:"what kind of thought this is; the structured types take their payload field"`
	NextThoughtNeeded bool              `json:"nextThoughtNeeded" jsonschema:"false ends the session: the next tb.thought starts a new one (unless you resume this one)"`
	Confidence        string            `json:"confidence,omitempty" jsonschema:"high, medium or low"`
	BranchID          string            `json:"branchId,omitempty" jsonschema:"names the branch this thought is on (with branchFromThought)"`
	BranchFromThought int               `json:"branchFromThought,omitempty" jsonschema:"number of the thought this branch starts from"`
	IsRevision        bool              `json:"isRevision,omitempty" jsonschema:"this thought revises an earlier one (name it in revisesThought)"`
	RevisesThought    int               `json:"revisesThought,omitempty" jsonschema:"number (not id) of the thought revised"`
	SessionTitle      string            `json:"sessionTitle,omitempty" jsonschema:"titles (or retitles) the session"`
	SessionTags       []string          `json:"sessionTags,omitempty" jsonschema:"sets the session's tags"`
	Options           []option          `json:"options,omitempty" jsonschema:"decision_frame: the options weighed"`
	ActionResult      *actionResult     `json:"actionResult,omitempty" jsonschema:"action_report: what an action did"`
	Beliefs           *beliefs          `json:"beliefs,omitempty" jsonschema:"belief_snapshot: the current beliefs"`
	AssumptionChange  *assumptionChange `json:"assumptionChange,omitempty" jsonschema:"assumption_update: how an assumption changed"`
	ContextData       *contextData      `json:"contextData,omitempty" jsonschema:"context_snapshot: the working context"`
	ProgressData      *progressData     `json:"progressData,omitempty" jsonschema:"progress: a task's status"`
	// Fields of Thoughtbox's own thought tool that scripts written for it
	// pass (its test suite passes totalThoughts and verbose on every call).
	TotalThoughts     int    `json:"totalThoughts,omitempty" jsonschema:"your estimate of how many thoughts this takes (kept with the thought)"`
	NeedsMoreThoughts bool   `json:"needsMoreThoughts,omitempty" jsonschema:"the estimate was too low (kept with the thought)"`
	AgentID           string `json:"agentId,omitempty" jsonschema:"the agent writing the thought (kept with it)"`
	AgentName         string `json:"agentName,omitempty" jsonschema:"the agent's display name (kept with the thought)"`
	ThoughtNumber     int    `json:"thoughtNumber,omitempty" jsonschema:"accepted and ignored: thoughts are numbered in the order they are recorded"`
	Verbose           bool   `json:"verbose,omitempty" jsonschema:"accepted; the whole stored thought is always returned"`
	IncludeGuide      bool   `json:"includeGuide,omitempty" jsonschema:"accepted and ignored"`
}

type sessionListInput struct {
	Limit  int      `json:"limit,omitempty" jsonschema:"sessions per page (default 20, at most 100)"`
	Offset int      `json:"offset,omitempty" jsonschema:"sessions to skip"`
	Tags   []string `json:"tags,omitempty" jsonschema:"only sessions carrying every one of these tags"`
}

type sessionIDInput struct {
	SessionID string `json:"sessionId" jsonschema:"the session's id"`
}

type sessionSearchInput struct {
	Query string `json:"query" jsonschema:"words to find (stemmed; every word must match)"`
	Limit int    `json:"limit,omitempty" jsonschema:"sessions to return (default 10, at most 100)"`
}

type sessionExportInput struct {
	SessionID string `json:"sessionId" jsonschema:"the session's id"`
	Format    string `json:"format,omitempty" jsonschema:"markdown (default), json or cipher"`
	// Thoughtbox's own export takes it; every export here carries the
	// session's metadata.
	IncludeMetadata bool `json:"includeMetadata,omitempty" jsonschema:"accepted; the export always has the session's metadata"`
}

type keyMoment struct {
	ThoughtNumber int     `json:"thoughtNumber" jsonschema:"the thought's number"`
	Type          string  `json:"type" jsonschema:"decision, pivot, insight, revision or branch"`
	Significance  float64 `json:"significance,omitempty" jsonschema:"1 to 10"`
	Summary       string  `json:"summary,omitempty" jsonschema:"why it matters"`
}

type extractInput struct {
	SessionID   string      `json:"sessionId" jsonschema:"the session's id"`
	KeyMoments  []keyMoment `json:"keyMoments,omitempty" jsonschema:"the moments to learn from; absent: decisions, revisions and branch points are found automatically"`
	TargetTypes []string    `json:"targetTypes,omitempty" jsonschema:"pattern, anti-pattern, signal (default all)"`
}

type createEntityInput struct {
	Name       string         `json:"name" jsonschema:"a stable, unique name within its type, e.g. rate-limiting-strategy"`
	Type       string         `json:"type" jsonschema:"Insight, Concept, Workflow, Decision or Agent"`
	Label      string         `json:"label" jsonschema:"a human-readable title"`
	Properties map[string]any `json:"properties,omitempty" jsonschema:"any further fields"`
	Visibility string         `json:"visibility,omitempty" jsonschema:"public (default), agent-private, user-private or team-private"`
}

type entityIDInput struct {
	EntityID string `json:"entity_id" jsonschema:"the entity's id"`
}

type listEntitiesInput struct {
	Types       []string `json:"types,omitempty" jsonschema:"only these entity types"`
	NamePattern string   `json:"name_pattern,omitempty" jsonschema:"names containing this, ignoring case; * matches anything"`
	Limit       int      `json:"limit,omitempty" jsonschema:"entities per page (default 50, at most 500)"`
	Offset      int      `json:"offset,omitempty"`
}

type addObservationInput struct {
	EntityID      string `json:"entity_id" jsonschema:"the entity's id"`
	Content       string `json:"content" jsonschema:"the observation"`
	SourceSession string `json:"source_session,omitempty" jsonschema:"the session it came from"`
}

type createRelationInput struct {
	FromID       string `json:"from_id" jsonschema:"the source entity's id"`
	ToID         string `json:"to_id" jsonschema:"the target entity's id"`
	RelationType string `json:"relation_type" jsonschema:"one of the nine relation types"`
}

type queryGraphInput struct {
	StartEntityID string   `json:"start_entity_id" jsonschema:"where to start"`
	MaxDepth      int      `json:"max_depth,omitempty" jsonschema:"hops to follow (default 2, at most 5)"`
	RelationTypes []string `json:"relation_types,omitempty" jsonschema:"only these relation types"`
}

type empty struct{}

// schema is T's input schema, with enums set on the named properties
// (dotted paths reach into objects and array items).
func schema[T any](enums map[string][]string) *jsonschema.Schema {
	s := builtin.InputSchema[T]()
	for path, values := range enums {
		p := s
		for _, name := range splitPath(path) {
			if p.Items != nil {
				p = p.Items
			}
			p = p.Properties[name]
		}
		if p.Items != nil {
			p = p.Items
		}
		p.Enum = make([]any, len(values))
		for i, v := range values {
			p.Enum[i] = v
		}
	}
	return s
}

func splitPath(p string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(p); i++ {
		if i == len(p) || p[i] == '.' {
			out = append(out, p[start:i])
			start = i + 1
		}
	}
	return out
}

func decode(args json.RawMessage, v any) error {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return json.Unmarshal(args, v)
}
