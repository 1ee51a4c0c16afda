package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP tasks, as a client. An upstream tool call may be answered with a task
// handle instead of its result; the call then polls the task until it ends,
// within the caller's context (a run's deadline), and cancels it if the
// caller gives up first. Two generations of the protocol are spoken:
//
//   - 2025-11-25 (SEP-1686): a tool that declares execution.taskSupport
//     "optional" or "required" is called with params.task; the answer is a
//     CreateTaskResult ({task}); tasks/get polls, tasks/result fetches the
//     result (and, while the task is input_required, carries the server's
//     own requests to the client), tasks/cancel cancels.
//   - 2026-07-28 (the io.modelcontextprotocol/tasks extension, SEP-2663):
//     every request declares the extension in its capabilities, the server
//     decides per call, and a CreateTaskResult is {resultType: "task", ...};
//     tasks/get returns the result inline once the task is completed, its
//     inputRequests while it is input_required (answered with tasks/update),
//     tasks/cancel cancels.
//
// The official Go SDK (v1.8.0) implements neither: its CallToolParams has no
// task field and its CallToolResult keeps none of a CreateTaskResult. So a
// sending middleware (taskParams) adds params.task, the connection moves a
// CreateTaskResult under the _meta of the result the SDK decodes
// (taskwire.go), and tasks/* are the SDK's custom methods.

// TasksExtension is the identifier of the MCP tasks extension.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Task statuses, the same in both generations.
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// taskMetaKey is where the connection puts a CreateTaskResult, in the _meta
// of the CallToolResult the SDK decodes instead (taskwire.go). It never
// leaves this package.
const taskMetaKey = "codemode/createdTask"

// taskPoll bounds the interval between two tasks/get: a server's
// pollInterval is honoured within these bounds.
const (
	minTaskPoll     = 50 * time.Millisecond
	maxTaskPoll     = 5 * time.Second
	defaultTaskPoll = 500 * time.Millisecond
)

// taskCancelTimeout bounds the tasks/cancel sent when the caller gave up.
const taskCancelTimeout = 5 * time.Second

// task is a task as either generation describes it.
type task struct {
	ID            string
	Status        string
	StatusMessage string
	PollInterval  time.Duration // 0: not given
	// 2026-07-28 only: the inline result, error and input requests of
	// tasks/get.
	Result        json.RawMessage
	Error         *jsonrpc.Error
	InputRequests map[string]json.RawMessage
}

func (t *task) terminal() bool {
	return t.Status == TaskCompleted || t.Status == TaskFailed || t.Status == TaskCancelled
}

// taskWire is a Task of either generation: 2025-11-25 names pollInterval,
// 2026-07-28 pollIntervalMs.
type taskWire struct {
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	StatusMessage  string                     `json:"statusMessage,omitempty"`
	PollInterval   *float64                   `json:"pollInterval,omitempty"`
	PollIntervalMs *float64                   `json:"pollIntervalMs,omitempty"`
	Result         json.RawMessage            `json:"result,omitempty"`
	Error          *jsonrpc.Error             `json:"error,omitempty"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests,omitempty"`
}

// parseTask reads a Task, a CreateTaskResult of either generation, or a
// tasks/get result.
func parseTask(raw json.RawMessage) (*task, error) {
	var w struct {
		taskWire
		Task *taskWire `json:"task"` // 2025-11-25 CreateTaskResult
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("the task is not JSON: %w", err)
	}
	tw := &w.taskWire
	if w.Task != nil {
		tw = w.Task
	}
	if tw.TaskID == "" || tw.Status == "" {
		return nil, errors.New("the task has no taskId or status")
	}
	t := &task{ID: tw.TaskID, Status: tw.Status, StatusMessage: tw.StatusMessage, Result: tw.Result, Error: tw.Error, InputRequests: tw.InputRequests}
	for _, ms := range []*float64{tw.PollIntervalMs, tw.PollInterval} {
		if ms != nil && *ms > 0 {
			t.PollInterval = time.Duration(*ms * float64(time.Millisecond))
			break
		}
	}
	return t, nil
}

// takeTask returns the task a CreateTaskResult answered with, if res is
// one (see taskwire.go).
func takeTask(res *mcp.CallToolResult) (*task, error) {
	if res == nil || res.Meta == nil {
		return nil, nil
	}
	v, ok := res.Meta[taskMetaKey]
	if !ok {
		return nil, nil
	}
	delete(res.Meta, taskMetaKey)
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return parseTask(raw)
}

// The parameters and results of tasks/*, as the SDK's custom methods.
type taskIDParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type taskUpdateParams struct {
	mcp.ParamsBase
	TaskID         string         `json:"taskId"`
	InputResponses map[string]any `json:"inputResponses"`
}

// rawResult keeps a result as the JSON it arrived as.
type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawResult) UnmarshalJSON(b []byte) error {
	r.raw = append(json.RawMessage(nil), b...)
	return nil
}

// registerTaskMethods lets the client send tasks/*.
func registerTaskMethods(c *mcp.Client) {
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		if err := mcp.AddSendingCustomMethod[*taskIDParams, *rawResult](c, m); err != nil {
			panic(err) // only if the SDK made it a standard method
		}
	}
	if err := mcp.AddSendingCustomMethod[*taskUpdateParams, *rawResult](c, "tasks/update"); err != nil {
		panic(err)
	}
}

// taskCall marks the context of a tools/call that may be answered with a
// task: ask is set when params.task must be sent (2025-11-25), ttl is what
// to ask for.
type taskCall struct {
	ask bool
	ttl time.Duration
}

type taskCallKey struct{}

func taskCallFrom(ctx context.Context) *taskCall {
	t, _ := ctx.Value(taskCallKey{}).(*taskCall)
	return t
}

// taskCallParams are a tools/call's params with 2025-11-25's task field.
type taskCallParams struct {
	*mcp.CallToolParams
	Task *taskMetadata `json:"task,omitempty"`
}

type taskMetadata struct {
	TTL int64 `json:"ttl,omitempty"`
}

// taskParams is the client's sending middleware that adds params.task to a
// tools/call whose context asks for it.
func taskParams(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		tc := taskCallFrom(ctx)
		p, ok := req.GetParams().(*mcp.CallToolParams)
		cs, okSession := req.GetSession().(*mcp.ClientSession)
		if tc == nil || !tc.ask || !ok || !okSession {
			return next(ctx, method, req)
		}
		tp := &taskCallParams{CallToolParams: p, Task: &taskMetadata{TTL: tc.ttl.Milliseconds()}}
		return next(ctx, method, &mcp.ClientRequest[*taskCallParams]{Session: cs, Params: tp})
	}
}

// newProtocol reports whether the session speaks 2026-07-28 or later.
func (s *session) newProtocol() bool {
	ir := s.cs.InitializeResult()
	return ir != nil && ir.ProtocolVersion >= "2026-07-28"
}

// taskSupport is the execution.taskSupport the server declared for tool in
// its latest tool list ("" if none).
func (c *serverConn) taskSupport(tool string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snaps.cur == nil {
		return ""
	}
	return c.snaps.cur.TaskSupport[tool]
}

// startCall sends one tools/call on s. If the server answers with a task,
// it returns the task instead of a result.
func (c *serverConn) startCall(ctx context.Context, outer context.Context, s *session, p *mcp.CallToolParams) (*mcp.CallToolResult, *task, error) {
	tc := &taskCall{}
	switch c.taskSupport(p.Name) {
	case "optional", "required":
		tc.ask = !s.newProtocol()
	}
	// What the task may live: the caller's time, and a minute to fetch
	// the result after.
	tc.ttl = 10 * time.Minute
	if dl, ok := outer.Deadline(); ok {
		tc.ttl = time.Until(dl) + time.Minute
	}
	if s.newProtocol() {
		callCapabilities(outer, p) // the run's client's (forward.go)
	}
	if s.direct != nil && !tc.ask {
		// A stdio server on a protocol before 2026-07-28, and no task to
		// ask for (which needs the SDK's sending middleware): the call
		// goes out on the direct path (directcall.go).
		res, err := s.direct.callTool(ctx, p)
		return res, nil, err
	}
	res, err := s.cs.CallTool(context.WithValue(ctx, taskCallKey{}, tc), p)
	if err != nil {
		return nil, nil, err
	}
	t, err := takeTask(res)
	if err != nil {
		return nil, nil, fmt.Errorf("the server answered with a task codemode cannot read: %w", err)
	}
	return res, t, nil
}

// awaitTask follows a task the server created for a call of tool until it
// ends, and returns its result. The wait is bounded by ctx (the caller's
// deadline), each request by the call timeout. If ctx ends first, the task
// is cancelled (tasks/cancel) in the background.
func (c *serverConn) awaitTask(ctx context.Context, tool string, t *task) (res *mcp.CallToolResult, err error) {
	op := "tools/call " + tool + " (task " + t.ID + ")"
	defer c.ownTask(ctx, t.ID)() // its requests are the call's (forward.go)
	defer func() {
		if !t.terminal() && ctx.Err() != nil {
			c.cancelTask(t.ID)
		}
	}()
	report := progressFrom(ctx)
	lastMsg := ""
	answered := map[string]bool{} // input requests answered: a poll may list them again""
	var timer *time.Timer
	for {
		if report != nil && t.StatusMessage != "" && t.StatusMessage != lastMsg {
			lastMsg = t.StatusMessage
			report(0, 0, c.m.redact.String(t.StatusMessage))
		}
		switch t.Status {
		case TaskCompleted, TaskFailed:
			if t.Result != nil || t.Error != nil {
				res, err := t.outcome()
				if err != nil {
					kind := Rejected
					if t.Error == nil {
						kind = Protocol
					}
					return nil, &Error{ServerID: c.cfg.ID, Kind: kind, Op: op, Err: err}
				}
				return res, nil
			}
			return c.taskResult(ctx, op, t.ID)
		case TaskCancelled:
			msg := "the server cancelled the task"
			if t.StatusMessage != "" {
				msg += ": " + t.StatusMessage
			}
			return nil, &Error{ServerID: c.cfg.ID, Kind: Rejected, Op: op, Err: errors.New(msg), Hint: "call the tool again; if it keeps being cancelled, ask for less work"}
		case TaskInputRequired:
			if t.InputRequests == nil {
				// 2025-11-25: the server's requests come with tasks/result,
				// which waits for the task to end.
				return c.taskResult(ctx, op, t.ID)
			}
			if err := c.answerTask(ctx, op, t, answered); err != nil {
				return nil, err
			}
		case TaskWorking:
		default:
			return nil, &Error{ServerID: c.cfg.ID, Kind: Protocol, Op: op, Err: fmt.Errorf("unknown task status %q", t.Status)}
		}
		wait := t.PollInterval
		if wait <= 0 {
			wait = defaultTaskPoll
		}
		wait = min(max(wait, minTaskPoll), maxTaskPoll)
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return nil, &Error{ServerID: c.cfg.ID, Kind: Canceled, Op: op, Err: ctx.Err()}
		case <-timer.C:
		}
		next, err := c.taskRequest(ctx, "tasks/get", op, t.ID)
		if err != nil {
			return nil, err
		}
		if t, err = parseTask(next); err != nil {
			return nil, &Error{ServerID: c.cfg.ID, Kind: Protocol, Op: op, Err: err}
		}
	}
}

// outcome is a 2026-07-28 task's inline result or error.
func (t *task) outcome() (*mcp.CallToolResult, error) {
	if t.Error != nil {
		return nil, t.Error
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(t.Result, &res); err != nil {
		return nil, fmt.Errorf("the task's result is not a tool result: %w", err)
	}
	return &res, nil
}

// taskResult fetches a 2025-11-25 task's result with tasks/result, which
// waits for the task to end.
func (c *serverConn) taskResult(ctx context.Context, op, id string) (*mcp.CallToolResult, error) {
	raw, err := c.taskRequest(ctx, "tasks/result", op, id)
	if err != nil {
		return nil, err
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, &Error{ServerID: c.cfg.ID, Kind: Protocol, Op: op, Err: fmt.Errorf("the task's result is not a tool result: %w", err)}
	}
	delete(res.Meta, taskMetaKey)
	return &res, nil
}

// taskRequest sends tasks/get, tasks/result or tasks/cancel.
func (c *serverConn) taskRequest(ctx context.Context, method, op, id string) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.do(ctx, method+" for "+op, func(ctx context.Context, s *session) error {
		r, err := mcp.CallCustomMethod[*taskIDParams, *rawResult](ctx, s.cs, method, &taskIDParams{TaskID: id})
		if err == nil {
			out = r.raw
		}
		return err
	})
	return out, err
}

// cancelTask sends tasks/cancel for a task its caller gave up on, in the
// background: the caller's context is over.
func (c *serverConn) cancelTask(id string) {
	c.m.goBackground(func() {
		ctx, cancel := context.WithTimeout(c.m.base, taskCancelTimeout)
		defer cancel()
		if _, err := c.taskRequest(ctx, "tasks/cancel", "cancelling a task", id); err != nil {
			c.log.Debug("tasks/cancel failed", "task", id, "err", err)
		}
	})
}

// answerTask answers a 2026-07-28 task's inputRequests with tasks/update,
// through the client of the run that made the call (forward.go).
func (c *serverConn) answerTask(ctx context.Context, op string, t *task, answered map[string]bool) error {
	fresh := map[string]json.RawMessage{}
	for k, r := range t.InputRequests {
		if !answered[k] {
			fresh[k] = r
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	responses, err := c.answerInputs(ctx, fresh)
	if err != nil {
		return &Error{ServerID: c.cfg.ID, Kind: Rejected, Op: op, Err: err,
			Hint: "call this tool from a run started by an MCP client that supports elicitation and sampling"}
	}
	return c.do(ctx, "tasks/update for "+op, func(ctx context.Context, s *session) error {
		_, err := mcp.CallCustomMethod[*taskUpdateParams, *rawResult](ctx, s.cs, "tasks/update", &taskUpdateParams{TaskID: t.ID, InputResponses: responses})
		if err == nil {
			for k := range fresh {
				answered[k] = true
			}
		}
		return err
	})
}
