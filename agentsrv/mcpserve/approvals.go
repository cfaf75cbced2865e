package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentsrv"
	"github.com/vigil-run/vigil/session"
)

// This file is a turn that waits for approvals, across the protocol: the
// client is asked (input-required or elicitation), its answers are the
// caller's decisions, and the turn resumes through Runtime.Decide.

// decision is a client's answer on one call.
type decision struct {
	call string
	vigil.Decision
}

// canAsk reports whether the client can answer an elicitation.
func canAsk(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	return caps != nil && caps.Elicitation != nil
}

// roundTrips reports whether the client speaks the multi round-trip
// (protocol 2026-07-28 on): the server answers input-required, and the
// client calls again with the answers. Older clients are asked by
// elicitation requests while the call waits.
func roundTrips(req *mcp.CallToolRequest) bool {
	return req.ProtocolVersion() >= "2026-07-28"
}

// undecided are the calls of a suspended turn no one decided yet.
func undecided(res *vigil.Result) []session.PendingCall {
	return (&session.Suspension{Calls: res.Pending}).Undecided()
}

// approvalSchema is what a client is asked of a call: allow it or not,
// and why.
var approvalSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"allow":  map[string]any{"type": "boolean", "title": "Allow this call"},
		"reason": map[string]any{"type": "string", "title": "Reason (shown to the model when denied)"},
	},
	"required": []string{"allow"},
}

// question is the elicitation of a decision on call c of session id.
func question(id string, c session.PendingCall) *mcp.ElicitParams {
	msg := fmt.Sprintf("The agent wants to call %s with %s (session %s, call %s).", c.Call.Name, c.Call.Arguments, id, c.Call.ID)
	if c.Request.Reason != "" {
		msg += " " + c.Request.Reason
	}
	return &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: approvalSchema}
}

// inputRequired is the result that asks a client of the multi round-trip
// for the decisions: one elicitation per undecided call, keyed by the
// call's id, and the session as the state the client echoes.
func (h *handler) inputRequired(_ context.Context, res *vigil.Result) *mcp.CallToolResult {
	asks := mcp.InputRequestMap{}
	for _, c := range undecided(res) {
		asks[c.Call.ID] = question(res.Session, c)
	}
	return &mcp.CallToolResult{InputRequests: asks, RequestState: res.Session}
}

// elicit asks the client about each undecided call of res while the call
// waits. A dismissed question leaves the turn waiting: nil decisions.
func (h *handler) elicit(ctx context.Context, req *mcp.CallToolRequest, caller Caller, res *vigil.Result) ([]decision, error) {
	var out []decision
	for _, c := range undecided(res) {
		ans, err := req.Session.Elicit(ctx, question(res.Session, c))
		if err != nil {
			return nil, err
		}
		d, ok := decisionOf(c.Call.ID, ans, caller)
		if !ok {
			return nil, nil
		}
		out = append(out, d)
	}
	return out, nil
}

// decisionOf reads the answer on call: accept with allow, or a decline
// (a denial); a dismissal decides nothing.
func decisionOf(call string, ans *mcp.ElicitResult, caller Caller) (decision, bool) {
	d := decision{call: call, Decision: vigil.Decision{By: caller.Name}}
	switch ans.Action {
	case "accept":
		d.Allow, _ = ans.Content["allow"].(bool)
		d.Reason, _ = ans.Content["reason"].(string)
	case "decline":
		d.Reason = "declined"
	default:
		return d, false
	}
	if d.Allow {
		d.Reason = ""
	} else if strings.TrimSpace(d.Reason) == "" {
		d.Reason = "denied"
	}
	return d, true
}

// errBadState is the error of a call again whose state names no session.
var errBadState = errors.New("mcpserve: the request state of a call again must be the session it waits in")

// answered takes the answers a client of the multi round-trip called
// again with: the session of its state, admitted for the caller, gets
// the decisions, and the turn resumes.
func (h *handler) answered(ctx context.Context, req *mcp.CallToolRequest, caller Caller, p *progress) (*vigil.Result, error) {
	id := req.Params.RequestState
	if !session.ValidID(id) {
		return nil, errBadState
	}
	if err := h.access.Admit(ctx, id); err != nil {
		return nil, err
	}
	if !caller.MayDecide {
		return nil, fmt.Errorf("%w: %s may not decide approvals", session.ErrInvalidDecision, caller.Name)
	}
	var decisions []decision
	for call, resp := range req.Params.InputResponses {
		ans, ok := resp.(*mcp.ElicitResult)
		if !ok {
			return nil, fmt.Errorf("%w: the answer on call %s is no elicitation result", session.ErrInvalidDecision, call)
		}
		if d, ok := decisionOf(call, ans, caller); ok {
			decisions = append(decisions, d)
		}
	}
	if len(decisions) == 0 {
		return h.suspended(ctx, id)
	}
	return h.decide(ctx, id, decisions, p)
}

// decide logs each decision on session id through Runtime.Decide; the
// last one resumes the turn, whose result it returns. When no decision
// resumed it (another call still waits), the result is the suspension.
func (h *handler) decide(ctx context.Context, id string, decisions []decision, p *progress) (*vigil.Result, error) {
	var res *vigil.Result
	p.session = id
	for _, d := range decisions {
		r, err := h.rt.Decide(ctx, vigil.DecideOptions{Session: id, Call: d.call, Decision: d.Decision, Wait: true, OnChunk: p.chunk(ctx)})
		if r != nil || err != nil {
			res = r
		}
		if err != nil {
			return res, err
		}
	}
	if res != nil {
		return res, nil
	}
	return h.suspended(ctx, id)
}

// suspended is the result of session id as it waits: its last turn,
// with the calls still undecided, and [vigil.ErrSuspended].
func (h *handler) suspended(ctx context.Context, id string) (*vigil.Result, error) {
	s, err := h.rt.Pending(ctx, id)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("session %s: %w", id, session.ErrNotSuspended)
	}
	return &vigil.Result{Session: id, Turn: s.Turn, Reason: "suspended", Pending: s.Calls}, vigil.ErrSuspended
}

// Waiting is what a call's result says of a turn that waits for
// approvals the client was not asked (see [agentsrv.Waiting]). It is in
// the result's _meta under [WaitingKey], beside the receipt.
type Waiting = agentsrv.Waiting

// WaitingCall is a call that waits for a decision.
type WaitingCall = agentsrv.WaitingCall

// WaitingKey is the _meta key of [Waiting].
const WaitingKey = "vigil/waiting"

// waiting is the result of a turn that waits for decisions the client
// was not asked.
func (h *handler) waiting(ctx context.Context, res *vigil.Result) (*mcp.CallToolResult, error) {
	r, err := agentsrv.ReceiptOf(context.WithoutCancel(ctx), h.rt, res)
	if err != nil {
		return nil, err
	}
	w := agentsrv.WaitingOf(res.Session, res.Pending)
	var b strings.Builder
	fmt.Fprintf(&b, "The turn waits for approval in session %s. Decide each call through the API (POST /v1/sessions/%s/approvals/CALL with {\"allow\": true} or false) or with 'vigil approve %s CALL' / 'vigil deny %s CALL --reason TEXT'; the turn then goes on in the session:", res.Session, res.Session, res.Session, res.Session)
	for _, c := range w.Calls {
		fmt.Fprintf(&b, "\n- call %s: %s %s", c.Call, c.Tool, c.Arguments)
	}
	return &mcp.CallToolResult{
		Meta:    mcp.Meta{agentsrv.MetaKey: r, WaitingKey: w},
		Content: []mcp.Content{&mcp.TextContent{Text: b.String()}},
	}, nil
}
