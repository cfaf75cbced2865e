package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/agentsrv"
	"github.com/vigil-run/vigil/session"
)

// Options configure [New].
type Options struct {
	// Access says who calls and which sessions they may continue
	// (default: Local{Name: "mcp"}).
	Access Access
	// Version is the server's version as clients are told it (default:
	// the main module's).
	Version string
	// Logger logs calls that fail on the server's side (default:
	// nothing).
	Logger hclog.Logger
}

// New returns an MCP server offering rt's agents as tools. Serve it with
// Run over a transport (stdio) or with mcp.NewStreamableHTTPHandler.
func New(rt *vigil.Runtime, o Options) (*mcp.Server, error) {
	if o.Access == nil {
		o.Access = Local{Name: "mcp"}
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Version == "" {
		o.Version = agentsrv.Version()
	}
	agents, err := agentsrv.Offered(rt, o.Logger, "MCP")
	if err != nil {
		return nil, err
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "vigil", Version: o.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	h := &handler{rt: rt, access: o.Access, log: o.Logger}
	for _, a := range agents {
		schema, err := a.InputSchema()
		if err != nil {
			return nil, fmt.Errorf("mcpserve: agent %s: %w", a.Entry, err)
		}
		srv.AddTool(&mcp.Tool{Name: a.Tool.Name, Description: a.Tool.Description, InputSchema: schema}, h.tool(a))
	}
	return srv, nil
}

// instructions tell a client what the tools are and how to continue.
const instructions = `Each tool runs one turn of a Vigil agent and answers with its reply. ` +
	`A call starts a new session unless it names one to continue in its "session" argument: ` +
	`the session of an earlier answer's receipt (_meta "vigil/receipt"). ` +
	`The receipt names the session, the seq and the digest of the model request the answer came from, ` +
	`and the turn's signed checkpoint where the log is signed: 'vigil verify' checks it.`

// handler runs the calls of the tools.
type handler struct {
	rt     *vigil.Runtime
	access Access
	log    hclog.Logger
}

// tool is the handler of agent a's tool.
func (h *handler) tool(a agentsrv.Agent) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, caller, err := h.access.Caller(ctx, req)
		if err != nil {
			return nil, err
		}
		p := newProgress(req)
		var res *vigil.Result
		if req.Params.RequestState != "" || len(req.Params.InputResponses) > 0 {
			// A call again, with the answers to the approvals it asked.
			res, err = h.answered(ctx, req, caller, p)
		} else {
			res, err = h.turn(ctx, a, req, caller, p)
		}
		out, err := h.settle(ctx, req, caller, p, res, err)
		if err != nil {
			h.log.Error("an MCP call failed", "tool", a.Tool.Name, "caller", caller.Name, "error", err)
		}
		return out, err
	}
}

// turn runs the turn the call asks for.
func (h *handler) turn(ctx context.Context, a agentsrv.Agent, req *mcp.CallToolRequest, caller Caller, p *progress) (*vigil.Result, error) {
	call, err := a.Call(req.Params.Arguments)
	if err != nil {
		return nil, err
	}
	if call.Session != "" {
		if err := h.access.Admit(ctx, call.Session); err != nil {
			return nil, err
		}
	} else {
		// A new session, in the caller's tenant, made by the caller.
		if call.Session, err = h.rt.NewSession(ctx, vigil.Tenant(caller.Tenant), vigil.By(caller.Name)); err != nil {
			return nil, err
		}
	}
	p.session = call.Session
	return h.rt.Turn(ctx, vigil.TurnOptions{Session: call.Session, Prompt: call.Prompt, Agent: a.Entry, By: caller.Name, OnChunk: p.chunk(ctx)})
}

// settle answers the call: its result with its receipt, the approvals
// it waits for asked of the client, or the refusal of a turn that could
// not run. A failure of the server's own (the store) is a protocol error.
func (h *handler) settle(ctx context.Context, req *mcp.CallToolRequest, caller Caller, p *progress, res *vigil.Result, err error) (*mcp.CallToolResult, error) {
	for errors.Is(err, vigil.ErrSuspended) && res != nil {
		switch {
		case !caller.MayDecide || !canAsk(req):
			return h.waiting(ctx, res)
		case roundTrips(req):
			return h.inputRequired(ctx, res), nil
		}
		var decisions []decision
		if decisions, err = h.elicit(ctx, req, caller, res); err != nil {
			return nil, err
		}
		if decisions == nil { // dismissed: it waits
			return h.waiting(ctx, res)
		}
		res, err = h.decide(ctx, res.Session, decisions, p)
	}
	if res == nil {
		return refusal(err)
	}
	return h.answer(ctx, res, err)
}

// answer is the result of a turn that ended: its last message, or why
// it ended otherwise, and its receipt.
func (h *handler) answer(ctx context.Context, res *vigil.Result, err error) (*mcp.CallToolResult, error) {
	r, rerr := agentsrv.ReceiptOf(context.WithoutCancel(ctx), h.rt, res)
	if rerr != nil {
		return nil, rerr
	}
	out := &mcp.CallToolResult{Meta: mcp.Meta{agentsrv.MetaKey: r}}
	text := res.Content
	if err != nil || !completed(res.Reason) {
		out.IsError = true
		text = fmt.Sprintf("The turn ended %s in session %s", res.Reason, res.Session)
		if err != nil {
			text += ": " + err.Error()
		}
	}
	out.Content = []mcp.Content{&mcp.TextContent{Text: text}}
	return out, nil
}

// completed reports whether a turn's end reason is an answer.
func completed(reason string) bool { return reason == "completed" || reason == "max-steps" }

// refusal is the result of a call whose turn never ran: bad arguments,
// an unknown or busy session, one with a turn open. The caller can fix
// these, so they are tool errors; anything else is the server's.
func refusal(err error) (*mcp.CallToolResult, error) {
	switch {
	case err == nil:
		return nil, errors.New("mcpserve: a turn without a result")
	case slices.ContainsFunc(callersErrors, func(e error) bool { return errors.Is(err, e) }):
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
	}
	return nil, err
}

// callersErrors are the refusals a caller can fix.
var callersErrors = []error{agentsrv.ErrBadArguments, vigil.ErrNotFound, vigil.ErrBusy, vigil.ErrSuspended,
	session.ErrOpenTurn, session.ErrNotSuspended, session.ErrAlreadyDecided, session.ErrUnknownCall,
	session.ErrInvalidDecision, errBadState, context.Canceled}

// progress sends a call's chunks as progress notifications, when the
// call gave a progress token. Each names the session in its _meta
// ([SessionKey]), so a client that cancels a call knows where its turn
// was.
type progress struct {
	req     *mcp.CallToolRequest
	session string
	n       float64
}

// SessionKey is the _meta key of the session a progress notification's
// turn runs in.
const SessionKey = "vigil/session"

func newProgress(req *mcp.CallToolRequest) *progress { return &progress{req: req} }

// chunk returns the turn's chunk callback.
func (p *progress) chunk(ctx context.Context) func(agentloop.Chunk) {
	token := p.req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	return func(c agentloop.Chunk) {
		msg := c.Text
		if c.ToolCall != nil && c.ToolCall.Name != "" {
			msg = "[calling " + c.ToolCall.Name + "]"
		}
		if msg == "" {
			return
		}
		p.n++
		// A client gone is told nothing more; the turn goes on and is logged.
		_ = p.req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{Meta: mcp.Meta{SessionKey: p.session}, ProgressToken: token, Progress: p.n, Message: msg})
	}
}
