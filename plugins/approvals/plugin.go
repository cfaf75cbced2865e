package approvals

import (
	"context"
	"fmt"
	"slices"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/approval"
	"github.com/vigil-run/vigil/session/live"
)

// Name is the plugin's registered name, and the by of what it logs.
const Name = "approvals"

// Config is the plugin's config.
type Config struct {
	// Default is the action for a call no rule matches: allow (when
	// empty), deny or ask.
	Default string `yaml:"default" enum:"allow,deny,ask" doc:"allow (default), deny or ask: the action for calls no rule matches"`
	// Rules are tried in order; the first that matches decides.
	Rules []Rule `yaml:"rules" doc:"Tried in order; the first that matches decides."`
}

// Rule is one rule of the policy.
type Rule struct {
	// Tool is a path.Match glob on the tool name.
	Tool string `yaml:"tool" vigil:"required" doc:"A path.Match glob on the tool name."`
	// Arguments, when set, is a regular expression (RE2, unanchored) the
	// call's JSON arguments must match.
	Arguments string `yaml:"arguments" doc:"When set, is a regular expression (RE2, unanchored) the call's JSON arguments must match."`
	// Action is allow, deny or ask.
	Action string `yaml:"action" vigil:"required" enum:"allow,deny,ask" doc:"Allow, deny or ask."`
	// Reason is shown to the person asked, or to the model for a denial.
	Reason string `yaml:"reason" doc:"Shown to the person asked, or to the model for a denial."`
}

// Policy returns the policy c describes, as approval/policy logs it.
func (c *Config) Policy() session.ApprovalPolicy {
	p := session.ApprovalPolicy{By: Name, Default: c.Default}
	if p.Default == "" {
		p.Default = session.ActionAllow
	}
	for _, r := range c.Rules {
		p.Rules = append(p.Rules, session.ApprovalRule{Tool: r.Tool, Arguments: r.Arguments, Action: r.Action, Reason: r.Reason})
	}
	return p
}

// Validate checks the actions, globs and regular expressions.
func (c *Config) Validate() error {
	_, err := approval.Compile(c.Policy())
	return err
}

// Plugin is the registered plugin.
var Plugin = bus.RegisterFunc(Name, "approval policy: rules by tool and arguments pattern → allow, deny or ask a person", apply, bus.Optional(live.Sessions))

func apply(c *bus.Context, cfg Config) error {
	m, err := approval.Compile(cfg.Policy())
	if err != nil {
		return err
	}
	policy := m.Policy()
	agentloop.ToolApprove.On(c, func(ctx context.Context, q *agentloop.ApprovalQuery) (agentloop.Verdict, error) {
		// The policy that answers is the one the log holds in force, even
		// when the config changed in the middle of a turn.
		if err := logPolicy(ctx, q.Session, policy); err != nil {
			return agentloop.Verdict{}, err
		}
		action, reason := m.Match(q.Call.Name, q.Call.Arguments)
		return agentloop.Verdict{Action: action, By: Name, Reason: reason}, nil
	})
	agentloop.TurnPrepare.On(c, func(ctx context.Context, p *agentloop.Prepare) error {
		return logPolicy(ctx, p.Session, policy)
	})
	// Mounted or changed: the live sessions between turns learn it now;
	// the others before their next turn.
	if mgr, err := live.Sessions.Get(c); err == nil {
		for _, s := range mgr.Live() {
			if session.OpenTurn(s.Records()) != 0 {
				continue
			}
			if err := logPolicy(c.Context(), s, policy); err != nil {
				c.Logger().Warn("could not log the approval policy", "session", s.ID(), "error", err)
			}
		}
	}
	return nil
}

// logPolicy appends p to s unless it is already the policy in force.
func logPolicy(ctx context.Context, s *live.Session, p session.ApprovalPolicy) error {
	for r := range s.Backward() {
		if r.Type() != session.TypeApprovalPolicy {
			continue
		}
		cur, err := session.DecodeData[session.ApprovalPolicy](r)
		if err == nil && cur.By == p.By && cur.Default == p.Default && slices.Equal(cur.Rules, p.Rules) {
			return nil
		}
		break
	}
	if _, err := s.Append(ctx, session.Event{Type: session.TypeApprovalPolicy, Data: p}); err != nil {
		return fmt.Errorf("%s: log the policy: %w", Name, err)
	}
	return nil
}
