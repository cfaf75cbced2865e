package main

import (
	"context"
	"fmt"
	"regexp"

	"github.com/vigil-run/vigil/plugins/external/sdk"
	"github.com/vigil-run/vigil/session"
)

// Config is the plugin's config.
type Config struct {
	Rules []Rule `json:"rules"`
}

// Rule refuses the tool calls it matches. Tool and Arguments are regular
// expressions (Go syntax) matched against the tool's name and the JSON
// text of its arguments; an empty one matches everything.
type Rule struct {
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	// Reason is shown in the veto.
	Reason string `json:"reason"`
}

// CodePolicy is the veto code of a matched rule.
const CodePolicy = "POLICY"

type rule struct {
	tool, args *regexp.Regexp
	reason     string
}

type policy struct {
	rules []rule
}

func (p *policy) configure(cfg Config) error {
	for i, r := range cfg.Rules {
		var c rule
		var err error
		if c.tool, err = regexp.Compile(r.Tool); err != nil {
			return fmt.Errorf("rules[%d].tool: %w", i, err)
		}
		if c.args, err = regexp.Compile(r.Arguments); err != nil {
			return fmt.Errorf("rules[%d].arguments: %w", i, err)
		}
		c.reason = r.Reason
		if c.reason == "" {
			c.reason = fmt.Sprintf("matches rules[%d]", i)
		}
		p.rules = append(p.rules, c)
	}
	return nil
}

// validate vetoes a tool/call that matches a rule.
func (p *policy) validate(_ context.Context, ev *sdk.Event) error {
	call, err := sdk.Data[session.ToolCall](ev)
	if err != nil {
		return err
	}
	for _, r := range p.rules {
		if r.tool.MatchString(call.Name) && r.args.MatchString(call.Arguments) {
			return sdk.Veto(CodePolicy, fmt.Sprintf("tool call %s %s refused: %s", call.Name, session.Excerpt(call.Arguments, 200), r.reason))
		}
	}
	return nil
}
