package a2a

import (
	"errors"
	"fmt"
	"time"
)

// DefaultTimeout bounds a call (resolving the card, the remote task) when
// Config.Timeout is zero.
const DefaultTimeout = 5 * time.Minute

// ErrConfig marks an invalid config.
var ErrConfig = errors.New("tools/a2a: invalid config")

// Config is the plugin's config: the remote agents.
type Config struct {
	// Agents are the remote agents offered as tools, one each.
	Agents []Agent `yaml:"agents" doc:"The remote A2A agents offered as tools, one tool each."`
	// Timeout bounds each call: the remote task's wait included. Zero
	// means DefaultTimeout.
	Timeout time.Duration `yaml:"timeout" doc:"Bounds each call, the wait for the remote task included. Zero means 5m."`
}

// Agent is one remote agent.
type Agent struct {
	// Card is the URL of the agent card, or of the agent, whose card is
	// then at /.well-known/agent-card.json under it.
	Card string `yaml:"card" doc:"The URL of the agent's card (…/.well-known/agent-card.json), or of the agent itself, whose card is then at /.well-known/agent-card.json under it."`
	// Name is the tool's name; empty is the card's name, made a tool
	// name (letters, digits, '_' and '-').
	Name string `yaml:"name" doc:"The tool's name; empty is the card's name made a tool name."`
	// Description replaces the card's description when set.
	Description string `yaml:"description" doc:"Replaces the card's description, as the model reads it."`
	// Headers are sent with every request (for example an Authorization
	// header, from "${VAR}").
	Headers map[string]string `yaml:"headers" doc:"Sent with every request to the agent (for example an Authorization header, from '${VAR}')."`
}

// Validate checks the config.
func (c Config) Validate() error {
	if len(c.Agents) == 0 {
		return fmt.Errorf("%w: agents: at least one agent card is needed", ErrConfig)
	}
	for i, a := range c.Agents {
		if a.Card == "" {
			return fmt.Errorf("%w: agents[%d]: card is required", ErrConfig, i)
		}
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%w: timeout must not be negative", ErrConfig)
	}
	return nil
}
