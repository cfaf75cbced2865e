package a2aserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentsrv"
	"github.com/vigil-run/vigil/session"
)

// send takes a message: a new task, queued, or the answer to a task that
// waits for input. It returns the task and ctx as the caller's.
func (h *handler) send(ctx context.Context, p *a2a.MessageSendParams) (context.Context, taskRef, error) {
	if p == nil || p.Message == nil {
		return ctx, taskRef{}, fmt.Errorf("%w: a message is required", a2a.ErrInvalidParams)
	}
	if p.Config != nil && p.Config.PushConfig != nil {
		return ctx, taskRef{}, a2a.ErrPushNotificationNotSupported
	}
	if p.Message.TaskID != "" {
		ref, ctx, caller, err := h.admitted(ctx, p.Message.TaskID)
		if err != nil {
			return ctx, ref, err
		}
		return ctx, ref, h.answer(ctx, ref, caller, p.Message)
	}
	ctx, caller, err := h.s.access.Caller(ctx)
	if err != nil {
		return ctx, taskRef{}, err
	}
	ref, err := h.queue(ctx, caller, p.Message)
	return ctx, ref, err
}

// queue queues the turn a new task's message asks for: in the session
// its contextId names, else in a new one of the caller's tenant.
func (h *handler) queue(ctx context.Context, caller agentsrv.Caller, msg *a2a.Message) (taskRef, error) {
	args, err := argumentsOf(msg)
	if err != nil {
		return taskRef{}, err
	}
	call, err := h.agent.Call(args)
	if err != nil {
		return taskRef{}, fmt.Errorf("%w: %w", a2a.ErrInvalidParams, err)
	}
	id := msg.ContextID
	if id == "" {
		id = call.Session
	}
	switch {
	case id == "":
		if id, err = h.s.rt.NewSession(ctx, vigil.Tenant(caller.Tenant), vigil.By(caller.Name)); err != nil {
			return taskRef{}, err
		}
	case !session.ValidID(id):
		return taskRef{}, fmt.Errorf("%w: contextId %q is no session of this server", a2a.ErrInvalidParams, id)
	default:
		if err := h.admit(ctx, id); err != nil {
			return taskRef{}, err
		}
		if s, err := h.s.rt.Pending(ctx, id); err != nil {
			return taskRef{}, err
		} else if s != nil {
			return taskRef{}, fmt.Errorf("%w: context %s waits for approvals: answer its task that is input-required first", a2a.ErrInvalidParams, id)
		}
	}
	job, _, err := h.s.rt.QueueTurn(ctx, id, call.Prompt, vigil.By(caller.Name), vigil.RunAgent(h.agent.Entry))
	if err != nil {
		return taskRef{}, err
	}
	return taskRef{session: id, job: job.ID, agent: h.agent.Entry}, nil
}

// admit admits session id for the caller of ctx: one it may not see is
// a context that does not exist.
func (h *handler) admit(ctx context.Context, id string) error {
	err := h.s.access.Admit(ctx, id)
	if errors.Is(err, vigil.ErrNotFound) || errors.Is(err, session.ErrNotFound) {
		return fmt.Errorf("%w: no context %s", a2a.ErrInvalidParams, id)
	}
	return err
}

// argumentsOf reads a new task's message as the agent's arguments: its
// data part, else its text as the task.
func argumentsOf(msg *a2a.Message) (json.RawMessage, error) {
	var text []string
	for _, p := range msg.Parts {
		switch p := p.(type) {
		case a2a.DataPart:
			return json.Marshal(p.Data)
		case *a2a.DataPart:
			return json.Marshal(p.Data)
		case a2a.TextPart:
			text = append(text, p.Text)
		case *a2a.TextPart:
			text = append(text, p.Text)
		default:
			return nil, fmt.Errorf("%w: only text and data parts are read", a2a.ErrUnsupportedContentType)
		}
	}
	return json.Marshal(map[string]string{"task": strings.Join(text, "\n")})
}

// answer takes a message on a task that waits for input: the decision
// it says, on each undecided call (or the one it names), queued as the
// caller's, by the path the API's decisions take.
func (h *handler) answer(ctx context.Context, ref taskRef, caller agentsrv.Caller, msg *a2a.Message) error {
	v, err := h.s.view(ctx, ref)
	if err != nil {
		return err
	}
	if v.waiting == nil {
		return fmt.Errorf("%w: task %s is %s, not input-required: it takes no message", a2a.ErrInvalidParams, ref.id(), v.task.Status.State)
	}
	if !caller.MayDecide {
		return fmt.Errorf("%w: %s may not decide approvals (the approver role)", a2a.ErrInvalidRequest, caller.Name)
	}
	d, err := decisionOf(msg)
	if err != nil {
		return err
	}
	calls := v.waiting.Calls
	if d.call != "" {
		i := slices.IndexFunc(calls, func(c agentsrv.WaitingCall) bool { return c.Call == d.call })
		if i < 0 {
			return fmt.Errorf("%w: call %s does not wait for a decision in task %s", a2a.ErrInvalidParams, d.call, ref.id())
		}
		calls = calls[i : i+1]
	}
	for _, c := range calls {
		dec := vigil.Decision{Allow: d.allow, By: caller.Name, Reason: d.reason}
		if _, _, err := h.s.rt.QueueDecision(ctx, ref.session, c.Call, dec, vigil.RunAgent(ref.agent)); err != nil {
			return fmt.Errorf("%w: call %s: %w", a2a.ErrInvalidParams, c.Call, err)
		}
	}
	return nil
}

// decision is what an answer says.
type decision struct {
	allow  bool
	reason string
	call   string
}

// decisionOf reads an answer: a data part {"allow", "reason", "call"},
// or text whose first word is allow (approve, yes) or deny (no), the
// rest a denial's reason.
func decisionOf(msg *a2a.Message) (decision, error) {
	var text []string
	for _, p := range msg.Parts {
		var data map[string]any
		switch p := p.(type) {
		case a2a.DataPart:
			data = p.Data
		case *a2a.DataPart:
			data = p.Data
		case a2a.TextPart:
			text = append(text, p.Text)
		case *a2a.TextPart:
			text = append(text, p.Text)
		}
		if data != nil {
			d := decision{}
			var ok bool
			if d.allow, ok = data["allow"].(bool); !ok {
				return d, fmt.Errorf("%w: the answer's data needs \"allow\": true or false", a2a.ErrInvalidParams)
			}
			d.reason, _ = data["reason"].(string)
			d.call, _ = data["call"].(string)
			return finish(d), nil
		}
	}
	word, rest, _ := strings.Cut(strings.TrimSpace(strings.Join(text, " ")), " ")
	d := decision{reason: strings.TrimSpace(rest)}
	switch strings.ToLower(strings.Trim(word, ".,!:")) {
	case "allow", "approve", "approved", "yes", "y", "ok":
		d.allow = true
	case "deny", "denied", "reject", "no", "n":
	default:
		return d, fmt.Errorf("%w: answer \"allow\", or \"deny\" and a reason", a2a.ErrInvalidParams)
	}
	return finish(d), nil
}

// finish gives a denial a reason and an allow none.
func finish(d decision) decision {
	if d.allow {
		d.reason = ""
	} else if d.reason == "" {
		d.reason = "denied"
	}
	return d
}
