package vigil

import (
	"context"
	"fmt"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// jobAgent is the agent a queued job runs with: the one its input names
// (entry), else the session's.
func (r *Runtime) jobAgent(ctx context.Context, sess *live.Session, entry string) (*agentloop.Agent, error) {
	if entry != "" {
		return r.AgentNamed(entry)
	}
	return r.agentOf(ctx, sess)
}

// agentOf is the agent that runs sess's turns: for a sub-agent's child
// session, the agent offered as the tool its parent called; for any other
// session, the composition's entry point. A decision on a child that
// waits for an approval so resumes it with its own agent, not the
// parent's.
func (r *Runtime) agentOf(ctx context.Context, sess *live.Session) (*agentloop.Agent, error) {
	p := sess.Info().Parent
	if p == nil || p.Call == "" {
		return r.Agent()
	}
	mgr, err := r.Manager()
	if err != nil {
		return nil, err
	}
	parent, err := mgr.Store().Load(ctx, p.ID)
	if err != nil {
		return nil, fmt.Errorf("the parent of session %s: %w", sess.ID(), err)
	}
	if p.Seq < 0 || p.Seq >= int64(len(parent.Records)) || parent.Records[p.Seq].Type() != session.TypeToolCall {
		return nil, fmt.Errorf("session %s names seq %d of %s, which is no tool call", sess.ID(), p.Seq, p.ID)
	}
	call, err := session.DecodeData[session.ToolCall](parent.Records[p.Seq])
	if err != nil {
		return nil, fmt.Errorf("session %s: its parent's call: %w", sess.ID(), err)
	}
	named, err := agentloop.AgentServices.Lookup(r.root.Context())
	if err != nil {
		return nil, err
	}
	for _, n := range named {
		if t := n.Value.Config().AsTool; t != nil && t.Name == call.Name {
			return n.Value, nil
		}
	}
	return nil, fmt.Errorf("%w: no agent of the composition is offered as the tool %q that made session %s", ErrNoAgent, call.Name, sess.ID())
}
