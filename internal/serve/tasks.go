package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/store"
)

// MCP tasks, as a server: a tool call, a run above all, may go on as a task
// that outlives the request that started it, so that a long script
// survives a client's request timeout. The client then polls it (tasks/get),
// fetches its result (tasks/result, or inline in tasks/get) and may cancel
// it (tasks/cancel). Both generations of the protocol are served:
//
//   - 2025-11-25 (SEP-1686): the server declares capabilities.tasks and
//     every tool execution.taskSupport "optional"; a client that sends
//     params.task gets a CreateTaskResult ({task}) at once.
//   - 2026-07-28 (the io.modelcontextprotocol/tasks extension, SEP-2663):
//     the server declares the extension; when a call that declares it in
//     its capabilities has not answered within Options.TaskAfter, it goes
//     on as a task and the client gets {resultType: "task", ...}. A quick
//     call is answered as usual.
//
// A task's whole state is a row of the store's tasks feature (its status,
// result or error, whether a cancellation was asked for), written before
// the task is announced, so that behind `--stateless` replicas sharing a
// store any replica answers for a task another one runs. The replica that
// runs it cancels the run when the store says a cancellation was asked for
// (it looks every taskPoll), and at once when the request reached it.
// Tasks are kept for their TTL (the client's ttl within [1 min, 24 h],
// else defaultTaskTTL) and are one client's: another client's token sees
// none of them.

// Task timing.
const (
	// taskPoll is the pollInterval suggested to clients, and how often a
	// replica looks in the store for a cancellation or an end.
	taskPoll = 500 * time.Millisecond
	// defaultTaskAfter is Options.TaskAfter's default.
	defaultTaskAfter = time.Second
	// Task TTLs.
	defaultTaskTTL = time.Hour
	minTaskTTL     = time.Minute
	maxTaskTTL     = 24 * time.Hour
)

// tasksExtension identifies the 2026-07-28 tasks extension.
const tasksExtension = "io.modelcontextprotocol/tasks"

// relatedTaskKey is 2025-11-25's _meta key relating a message to a task.
const relatedTaskKey = "io.modelcontextprotocol/related-task"

// tasks runs tool calls as MCP tasks.
type tasks struct {
	s     *Server
	st    *store.Store
	after time.Duration

	running sync.Map // task id → *taskRun, for the tasks this process runs
}

// taskRun is one tool call running in the background.
type taskRun struct {
	cancel   context.CancelFunc
	finished chan struct{} // closed when the call has returned

	mu        sync.Mutex
	id        string // set once the call became a task
	done      bool
	res       mcp.Result
	err       error
	cancelled bool // a tasks/cancel reached this process
}

// newTasks returns the task runner, or nil when there is no store to keep
// tasks in. declare adds its capabilities; mount its middleware and
// methods.
func newTasks(s *Server) *tasks {
	if s.opts.Store == nil {
		return nil
	}
	after := s.opts.TaskAfter
	if after <= 0 {
		after = defaultTaskAfter
	}
	return &tasks{s: s, st: s.opts.Store, after: after}
}

// declare adds the 2026-07-28 extension to the server's capabilities
// (2025-11-25's capabilities.tasks is added to the initialize result by the
// middleware: the SDK's type has no field for it).
func (t *tasks) declare(caps *mcp.ServerCapabilities) {
	if t == nil {
		return
	}
	if caps.Extensions == nil {
		caps.Extensions = map[string]any{}
	}
	caps.Extensions[tasksExtension] = map[string]any{}
}

// taskParams are the params of tasks/*.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string         `json:"taskId,omitempty"`
	Cursor         string         `json:"cursor,omitempty"`
	InputResponses map[string]any `json:"inputResponses,omitempty"`
}

var taskMethods = []string{"tasks/get", "tasks/result", "tasks/cancel", "tasks/list", "tasks/update"}

func (t *tasks) mount() {
	if t == nil {
		return
	}
	for _, m := range taskMethods {
		// Answered by the middleware, which sees the request's auth; the
		// registration only makes the SDK accept the method.
		err := mcp.AddReceivingCustomMethod(t.s.mcp, m, func(context.Context, *mcp.ServerSession, *taskParams) (*rawResult, error) {
			return nil, errors.New("tasks: not reached")
		})
		if err != nil {
			panic(err) // only if the SDK made it a standard method
		}
	}
	t.s.mcp.AddReceivingMiddleware(t.middleware)
}

func (t *tasks) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize":
			return t.patchInitialize(next(ctx, method, req))
		case "tools/list":
			return t.patchTools(req)(next(ctx, method, req))
		case "tools/call":
			if creq, ok := req.(*mcp.CallToolRequest); ok {
				if explicit, ttl, ok := t.asked(creq); ok {
					return t.start(ctx, next, creq, explicit, ttl)
				}
			}
		case "tasks/get", "tasks/result", "tasks/cancel", "tasks/list", "tasks/update":
			return t.answer(ctx, method, req)
		}
		return next(ctx, method, req)
	}
}

// patchInitialize adds 2025-11-25's capabilities.tasks.
func (t *tasks) patchInitialize(res mcp.Result, err error) (mcp.Result, error) {
	ir, ok := res.(*mcp.InitializeResult)
	if err != nil || !ok {
		return res, err
	}
	r, err := newRawResult(ir)
	if err != nil {
		return res, nil
	}
	caps := map[string]json.RawMessage{}
	json.Unmarshal(r.body["capabilities"], &caps)
	b, _ := json.Marshal(map[string]any{"list": map[string]any{}, "cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}})
	caps["tasks"] = b
	r.set("capabilities", caps)
	return r, nil
}

// patchTools declares execution.taskSupport "optional" on every tool, for
// 2025-11-25 clients (2026-07-28 has the server decide).
func (t *tasks) patchTools(req mcp.Request) func(mcp.Result, error) (mcp.Result, error) {
	return func(res mcp.Result, err error) (mcp.Result, error) {
		lr, ok := res.(*mcp.ListToolsResult)
		if err != nil || !ok || newProtocol(req) {
			return res, err
		}
		r, err := newRawResult(lr)
		if err != nil {
			return res, nil
		}
		var tools []map[string]json.RawMessage
		if json.Unmarshal(r.body["tools"], &tools) != nil {
			return res, nil
		}
		for _, tool := range tools {
			tool["execution"] = json.RawMessage(`{"taskSupport":"optional"}`)
		}
		r.set("tools", tools)
		return r, nil
	}
}

// asked reports whether a tools/call asks to run as a task: explicit for
// 2025-11-25's params.task (with its ttl), or a 2026-07-28 call that
// declares the extension (it becomes a task only if it is not answered
// within t.after).
func (t *tasks) asked(req *mcp.CallToolRequest) (explicit bool, ttl time.Duration, ok bool) {
	if req.Params == nil {
		return false, 0, false
	}
	if raw, found := req.Params.Meta[taskParamKey]; found {
		delete(req.Params.Meta, taskParamKey)
		var meta struct {
			TTL *float64 `json:"ttl"`
		}
		b, _ := json.Marshal(raw)
		json.Unmarshal(b, &meta)
		ttl = defaultTaskTTL
		if meta.TTL != nil {
			ttl = min(max(time.Duration(*meta.TTL)*time.Millisecond, minTaskTTL), maxTaskTTL)
		}
		return true, ttl, true
	}
	if newProtocol(req) {
		if caps := req.ClientCapabilities(); caps != nil {
			if _, declared := caps.Extensions[tasksExtension]; declared {
				return false, defaultTaskTTL, true
			}
		}
	}
	return false, 0, false
}

// start runs a tool call in the background. An explicit task is created at
// once; otherwise the call is answered as usual if it ends within t.after,
// and becomes a task if not.
func (t *tasks) start(ctx context.Context, next mcp.MethodHandler, req *mcp.CallToolRequest, explicit bool, ttl time.Duration) (mcp.Result, error) {
	// The run outlives the request: its context keeps the request's
	// values (who asked, the session) without its end.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	run := &taskRun{cancel: cancel, finished: make(chan struct{})}
	go func() {
		defer cancel()
		res, err := next(runCtx, "tools/call", req)
		run.mu.Lock()
		run.done, run.res, run.err = true, res, err
		id, cancelled := run.id, run.cancelled
		run.mu.Unlock()
		close(run.finished)
		if id != "" {
			t.finish(id, res, err, cancelled)
			t.running.Delete(id)
		}
	}()
	if !explicit {
		timer := time.NewTimer(t.after)
		defer timer.Stop()
		select {
		case <-run.finished:
			return run.res, run.err
		case <-ctx.Done():
			// The client gave up on the request before it became a task.
			cancel()
			<-run.finished
			return run.res, run.err
		case <-timer.C:
		}
	}
	run.mu.Lock()
	if run.done {
		run.mu.Unlock()
		return run.res, run.err
	}
	created, err := t.st.Tasks().Create(ctx, store.Task{ID: store.NewID(), Client: t.s.clientOf(req.Extra), Tool: req.Params.Name,
		StatusMessage: "running as a task", PollInterval: taskPoll, TTL: ttl})
	if err != nil {
		run.mu.Unlock()
		t.s.log.Warn("a tool call could not become a task", "tool", req.Params.Name, "err", err)
		if explicit {
			cancel()
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: "codemode could not create the task: " + err.Error() + "; call the tool without a task, or fix the data store"}
		}
		// The client can wait: answer as if no task had been asked for.
		select {
		case <-run.finished:
		case <-ctx.Done():
			cancel()
			<-run.finished
		}
		return run.res, run.err
	}
	run.id = created.ID
	t.running.Store(created.ID, run)
	run.mu.Unlock()
	go t.watch(runCtx, run, created.ID)
	return t.taskResult(created, req, true), nil
}

// watch cancels a running task when the store says a cancellation was
// asked for (by a tasks/cancel another replica received).
func (t *tasks) watch(ctx context.Context, run *taskRun, id string) {
	tick := time.NewTicker(taskPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-run.finished:
			return
		case <-tick.C:
			if t.cancelAsked(id) {
				run.mu.Lock()
				run.cancelled = true
				run.mu.Unlock()
				run.cancel()
				return
			}
		}
	}
}

func (t *tasks) cancelAsked(id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	asked, err := t.st.Tasks().CancelRequested(ctx, id)
	return err == nil && asked
}

// finish records how a task's call ended.
func (t *tasks) finish(id string, res mcp.Result, err error, cancelled bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ferr error
	switch {
	case cancelled:
		_, ferr = t.st.Tasks().Finish(ctx, id, store.TaskCancelled, "cancelled by the client", nil, nil)
	case err != nil:
		_, ferr = t.st.Tasks().Finish(ctx, id, store.TaskFailed, err.Error(), nil, wireError(err))
	default:
		b, merr := json.Marshal(res)
		if merr != nil {
			_, ferr = t.st.Tasks().Finish(ctx, id, store.TaskFailed, merr.Error(), nil, wireError(merr))
			break
		}
		msg := "done"
		if cr, ok := res.(*mcp.CallToolResult); ok && cr.IsError {
			msg = "done; the tool reported an error"
		}
		_, ferr = t.st.Tasks().Finish(ctx, id, store.TaskCompleted, msg, b, nil)
	}
	if ferr != nil {
		t.s.log.Error("the end of a task could not be recorded; its client will see it working until it expires", "task", id, "err", ferr)
	}
}

// wireError is err as a JSON-RPC error object.
func wireError(err error) json.RawMessage {
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	b, _ := json.Marshal(we)
	return b
}

// taskResult renders a task for req's protocol: a CreateTaskResult when
// created, else a tasks/get (or tasks/cancel) result.
func (t *tasks) taskResult(task store.Task, req mcp.Request, created bool) *rawResult {
	r := &rawResult{body: map[string]json.RawMessage{}}
	fields := map[string]any{
		"taskId":        task.ID,
		"status":        task.Status,
		"createdAt":     task.CreatedAt.UTC().Format(time.RFC3339Nano),
		"lastUpdatedAt": task.UpdatedAt.UTC().Format(time.RFC3339Nano),
	}
	if task.StatusMessage != "" {
		fields["statusMessage"] = task.StatusMessage
	}
	var ttl any // null: kept until purged
	if task.TTL > 0 {
		ttl = task.TTL.Milliseconds()
	}
	if newProtocol(req) {
		fields["ttlMs"], fields["pollIntervalMs"] = ttl, task.PollInterval.Milliseconds()
		if created {
			r.set("resultType", "task")
		} else {
			r.set("resultType", "complete")
			switch task.Status {
			case store.TaskCompleted:
				fields["result"] = task.Result
			case store.TaskFailed:
				fields["error"] = task.Error
			}
		}
		for k, v := range fields {
			r.set(k, v)
		}
		return r
	}
	fields["ttl"], fields["pollInterval"] = ttl, task.PollInterval.Milliseconds()
	if created {
		r.set("task", fields)
		return r
	}
	for k, v := range fields {
		r.set(k, v)
	}
	return r
}

// errTaskNotFound is -32602, as both generations ask.
func errTaskNotFound(id string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Failed to retrieve task: task %q not found (it never existed, expired, or belongs to another client)", id)}
}

// answer serves tasks/*.
func (t *tasks) answer(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
	p, _ := req.GetParams().(*taskParams)
	if p == nil {
		p = &taskParams{}
	}
	if newProtocol(req) {
		caps := clientCaps(req)
		if _, ok := caps[tasksExtension]; !ok {
			return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "Missing required client capability: declare the " + tasksExtension + " extension in the request's clientCapabilities",
				Data: json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + tasksExtension + `":{}}}}`)}
		}
	}
	client := t.s.clientOf(req.GetExtra())
	ts := t.st.Tasks()
	switch method {
	case "tasks/list":
		list, more, err := ts.List(ctx, client, p.Cursor, 50)
		if err != nil {
			return nil, storeError(err)
		}
		out := make([]map[string]json.RawMessage, 0, len(list))
		for _, task := range list {
			out = append(out, t.taskResult(task, req, false).body)
		}
		r := &rawResult{body: map[string]json.RawMessage{}}
		r.set("tasks", out)
		if more && len(list) > 0 {
			r.set("nextCursor", list[len(list)-1].ID)
		}
		return r, nil
	case "tasks/update":
		// codemode's tasks never ask for input: nothing is outstanding.
		if _, ok, err := ts.Get(ctx, client, p.TaskID); err != nil {
			return nil, storeError(err)
		} else if !ok {
			return nil, errTaskNotFound(p.TaskID)
		}
		return completeType(&rawResult{body: map[string]json.RawMessage{}}, req), nil
	case "tasks/cancel":
		task, ok, err := ts.Get(ctx, client, p.TaskID)
		if err != nil {
			return nil, storeError(err)
		}
		if !ok {
			return nil, errTaskNotFound(p.TaskID)
		}
		if task.Terminal() {
			if newProtocol(req) {
				return completeType(&rawResult{body: map[string]json.RawMessage{}}, req), nil
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Cannot cancel task %q: it is already %s", p.TaskID, task.Status)}
		}
		if _, _, err := ts.RequestCancel(ctx, client, p.TaskID); err != nil {
			return nil, storeError(err)
		}
		if _, err := ts.Finish(ctx, p.TaskID, store.TaskCancelled, "cancelled by the client", nil, nil); err != nil {
			return nil, storeError(err)
		}
		if v, ok := t.running.Load(p.TaskID); ok {
			run := v.(*taskRun)
			run.mu.Lock()
			run.cancelled = true
			run.mu.Unlock()
			run.cancel()
		}
		if newProtocol(req) {
			return completeType(&rawResult{body: map[string]json.RawMessage{}}, req), nil
		}
		task, _, err = ts.Get(ctx, client, p.TaskID)
		if err != nil {
			return nil, storeError(err)
		}
		return t.taskResult(task, req, false), nil
	}
	task, ok, err := ts.Get(ctx, client, p.TaskID)
	if err != nil {
		return nil, storeError(err)
	}
	if !ok {
		return nil, errTaskNotFound(p.TaskID)
	}
	if method == "tasks/get" {
		return t.taskResult(task, req, false), nil
	}
	// tasks/result (2025-11-25) waits for the end.
	for !task.Terminal() {
		var wait <-chan struct{}
		if v, ok := t.running.Load(task.ID); ok {
			wait = v.(*taskRun).finished
		}
		timer := time.NewTimer(taskPoll)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-wait:
		case <-timer.C:
		}
		timer.Stop()
		if task, ok, err = ts.Get(ctx, client, task.ID); err != nil {
			return nil, storeError(err)
		} else if !ok {
			return nil, errTaskNotFound(p.TaskID)
		}
	}
	switch task.Status {
	case store.TaskFailed:
		var we jsonrpc.Error
		if json.Unmarshal(task.Error, &we) != nil || we.Code == 0 {
			we = jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: task.StatusMessage}
		}
		return nil, &we
	case store.TaskCancelled:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("task %q was cancelled; it has no result", task.ID)}
	}
	r := &rawResult{}
	if json.Unmarshal(task.Result, &r.body) != nil || r.body == nil {
		r.body = map[string]json.RawMessage{}
	}
	r.Meta = mcp.Meta{relatedTaskKey: map[string]any{"taskId": task.ID}}
	return r, nil
}

// clientCaps returns the extensions a 2026-07-28 request declares.
func clientCaps(req mcp.Request) map[string]any {
	type capable interface {
		ClientCapabilities() *mcp.ClientCapabilities
	}
	if c, ok := req.(capable); ok {
		if caps := c.ClientCapabilities(); caps != nil {
			return caps.Extensions
		}
	}
	return nil
}

// storeError is a store failure as a JSON-RPC internal error that says
// what went wrong and the fix.
func storeError(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "codemode's data store failed: " + err.Error()}
}
