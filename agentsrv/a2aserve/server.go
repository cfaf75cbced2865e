package a2aserve

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/hashicorp/go-hclog"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentsrv"
	"github.com/vigil-run/vigil/session"
)

// Options configure [New].
type Options struct {
	// Access says who calls and which sessions they may touch (default:
	// Local{Name: "a2a"}).
	Access Access
	// Version is the agents' version as their cards say it (default:
	// the main module's).
	Version string
	// Logger logs requests that fail on the server's side (default:
	// nothing).
	Logger hclog.Logger
}

// Server offers rt's agents over A2A. Its store must keep a queue
// (store/jsonl, store/postgres) and a worker run it ([vigil.Runtime.Work]).
type Server struct {
	rt      *vigil.Runtime
	access  Access
	log     hclog.Logger
	version string
	agents  map[string]agentsrv.Agent // by tool name
}

// New returns the A2A server of rt's agents.
func New(rt *vigil.Runtime, o Options) (*Server, error) {
	if _, err := rt.Queue(); err != nil {
		return nil, fmt.Errorf("a2aserve: %w", err)
	}
	if o.Access == nil {
		o.Access = Local{Name: "a2a"}
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Version == "" {
		o.Version = agentsrv.Version()
	}
	agents, err := agentsrv.Offered(rt, o.Logger, "A2A")
	if err != nil {
		return nil, err
	}
	s := &Server{rt: rt, access: o.Access, log: o.Logger, version: o.Version, agents: map[string]agentsrv.Agent{}}
	for _, a := range agents {
		s.agents[a.Tool.Name] = a
	}
	return s, nil
}

// Agents are the names of the agents offered, sorted: the path element
// of their endpoints.
func (s *Server) Agents() []string {
	var out []string
	for n := range s.agents {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Handler returns the A2A request handler of the agent named name (serve
// it with a2asrv.NewJSONRPCHandler), false for an agent not offered.
func (s *Server) Handler(name string) (a2asrv.RequestHandler, bool) {
	a, ok := s.agents[name]
	if !ok {
		return nil, false
	}
	return &handler{s: s, agent: a}, true
}

// handler answers the A2A methods for one agent.
type handler struct {
	s     *Server
	agent agentsrv.Agent
}

var _ a2asrv.RequestHandler = (*handler)(nil)

// OnGetTask answers tasks/get: the task as the queue and the log say.
func (h *handler) OnGetTask(ctx context.Context, q *a2a.TaskQueryParams) (*a2a.Task, error) {
	ref, ctx, _, err := h.admitted(ctx, q.ID)
	if err != nil {
		return nil, err
	}
	v, err := h.s.view(ctx, ref)
	if err != nil {
		return nil, err
	}
	if q.HistoryLength != nil && *q.HistoryLength < len(v.task.History) {
		v.task.History = v.task.History[len(v.task.History)-max(*q.HistoryLength, 0):]
	}
	return v.task, nil
}

// OnSendMessage answers message/send: the task once it is final or waits
// for input, or at once, submitted, when the client does not block.
func (h *handler) OnSendMessage(ctx context.Context, p *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	ctx, ref, err := h.send(ctx, p)
	if err != nil {
		return nil, err
	}
	if p.Config != nil && p.Config.Blocking != nil && !*p.Config.Blocking {
		v, err := h.s.view(ctx, ref)
		if err != nil {
			return nil, err
		}
		return v.task, nil
	}
	for _, err := range h.s.watch(ctx, ref, false) {
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := h.s.view(ctx, ref)
	if err != nil {
		return nil, err
	}
	return v.task, nil
}

// OnSendMessageStream answers message/stream: the task, then its chunks
// and status changes until it is final or waits for input.
func (h *handler) OnSendMessageStream(ctx context.Context, p *a2a.MessageSendParams) iter.Seq2[a2a.Event, error] {
	ctx, ref, err := h.send(ctx, p)
	if err != nil {
		return func(yield func(a2a.Event, error) bool) { yield(nil, err) }
	}
	return h.s.watch(ctx, ref, true)
}

// OnResubscribeToTask answers tasks/resubscribe: as a stream, from now
// on; any process serving the store can.
func (h *handler) OnResubscribeToTask(ctx context.Context, p *a2a.TaskIDParams) iter.Seq2[a2a.Event, error] {
	ref, ctx, _, err := h.admitted(ctx, p.ID)
	if err != nil {
		return func(yield func(a2a.Event, error) bool) { yield(nil, err) }
	}
	return h.s.watch(ctx, ref, false)
}

// OnCancelTask answers tasks/cancel: the session's work is cancelled as
// the API cancels it, and the task answered once it ended (or as it
// stands after cancelWait).
func (h *handler) OnCancelTask(ctx context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) {
	ref, ctx, caller, err := h.admitted(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	v, err := h.s.view(ctx, ref)
	if err != nil {
		return nil, err
	}
	if v.task.Status.State.Terminal() {
		return nil, fmt.Errorf("%w: task %s is %s", a2a.ErrTaskNotCancelable, p.ID, v.task.Status.State)
	}
	if _, err := h.s.rt.CancelSession(ctx, ref.session, caller.Name); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, cancelWait)
	defer cancel()
	for range h.s.watch(wctx, ref, false) {
	}
	v, err = h.s.view(ctx, ref)
	if err != nil {
		return nil, err
	}
	return v.task, nil
}

// OnGetTaskPushConfig: push notifications are not offered.
func (h *handler) OnGetTaskPushConfig(context.Context, *a2a.GetTaskPushConfigParams) (*a2a.TaskPushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

// OnListTaskPushConfig: push notifications are not offered.
func (h *handler) OnListTaskPushConfig(context.Context, *a2a.ListTaskPushConfigParams) ([]*a2a.TaskPushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

// OnSetTaskPushConfig: push notifications are not offered.
func (h *handler) OnSetTaskPushConfig(context.Context, *a2a.TaskPushConfig) (*a2a.TaskPushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

// OnDeleteTaskPushConfig: push notifications are not offered.
func (h *handler) OnDeleteTaskPushConfig(context.Context, *a2a.DeleteTaskPushConfigParams) error {
	return a2a.ErrPushNotificationNotSupported
}

// OnGetExtendedAgentCard: the public card is all there is.
func (h *handler) OnGetExtendedAgentCard(context.Context) (*a2a.AgentCard, error) {
	return nil, a2a.ErrAuthenticatedExtendedCardNotConfigured
}

// admitted reads task id and admits its session for the caller; a task
// of a session the caller may not see is one that does not exist.
func (h *handler) admitted(ctx context.Context, id a2a.TaskID) (taskRef, context.Context, agentsrv.Caller, error) {
	ref, err := parseTaskID(id)
	if err != nil {
		return ref, ctx, agentsrv.Caller{}, err
	}
	ref.agent = h.agent.Entry
	ctx, caller, err := h.s.access.Caller(ctx)
	if err != nil {
		return ref, ctx, caller, err
	}
	err = h.s.access.Admit(ctx, ref.session)
	if errors.Is(err, vigil.ErrNotFound) || errors.Is(err, session.ErrNotFound) {
		return ref, ctx, caller, fmt.Errorf("%w: %s", a2a.ErrTaskNotFound, id)
	}
	return ref, ctx, caller, err
}
