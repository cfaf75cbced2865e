package agentsrv

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// SessionArg is the argument a call names the session it continues by:
// absent, the call's turn runs in a new session. Its value is the
// session of an earlier answer's receipt. An agent whose own parameters
// have a property of that name keeps it; its calls always start a new
// session.
const SessionArg = "session"

// Agent is an agent of the composition as a protocol server offers it:
// one tool.
type Agent struct {
	// Entry is the agent's entry id, which runs its turns
	// ([vigil.TurnOptions].Agent).
	Entry string
	// Tool is its name, description and parameters: the agent's as_tool
	// when it has one (the tool other agents call it by), else its entry
	// id and [session.TaskParameters].
	Tool session.ToolSpec
	// continues reports whether SessionArg is the server's argument
	// (the agent's parameters have no property of that name).
	continues bool
}

// ErrBadArguments is matched by the error of a call whose arguments do
// not make a turn.
var ErrBadArguments = errors.New("agentsrv: bad arguments")

// Agents lists the agents of rt's composition, in entry-id order. An
// agent that cannot be offered — its name is no tool name (an entry id
// with a dot), or another agent is offered under it, which a client
// could not tell apart — is left out, and the error says why; the others
// are returned with it.
func Agents(rt *vigil.Runtime) ([]Agent, error) {
	named, err := agentloop.AgentServices.Lookup(rt.Context())
	if err != nil {
		return nil, err
	}
	var out []Agent
	var errs []error
	for _, n := range named {
		a, err := agentOf(strings.TrimPrefix(n.Name, agentsPrefix), n.Value.Config())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b Agent) int { return strings.Compare(a.Entry, b.Entry) })
	byName := map[string][]string{}
	for _, a := range out {
		byName[a.Tool.Name] = append(byName[a.Tool.Name], a.Entry)
	}
	out = slices.DeleteFunc(out, func(a Agent) bool { return len(byName[a.Tool.Name]) > 1 })
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		if entries := byName[name]; len(entries) > 1 {
			errs = append(errs, fmt.Errorf("agentsrv: agents %s are all offered as %q: none of them is", strings.Join(entries, ", "), name))
		}
	}
	return out, errors.Join(errs...)
}

// agentOf is the agent of entry with config cfg as a client sees it.
func agentOf(entry string, cfg agentloop.Config) (Agent, error) {
	spec := session.ToolSpec{Name: entry, Description: "Runs a turn of the Vigil agent " + entry + " on the task given.", Parameters: session.TaskParameters}
	if cfg.AsTool != nil {
		var err error
		if spec, err = cfg.AsTool.Spec(); err != nil {
			return Agent{}, err
		}
	}
	if err := agentloop.CheckToolName(spec.Name); err != nil {
		return Agent{}, fmt.Errorf("agentsrv: agent %s: %w", entry, err)
	}
	props, err := properties(spec.Parameters)
	if err != nil {
		return Agent{}, fmt.Errorf("agentsrv: agent %s: parameters: %w", entry, err)
	}
	_, taken := props[SessionArg]
	return Agent{Entry: entry, Tool: spec, continues: !taken}, nil
}

// properties returns the properties of an object schema.
func properties(schema json.RawMessage) (map[string]json.RawMessage, error) {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, err
	}
	return s.Properties, nil
}

// sessionProperty is the schema of SessionArg.
var sessionProperty = json.RawMessage(`{"type":"string","description":"The id of a session to continue: the session of an earlier answer's receipt (_meta vigil/receipt). Leave it out to start a new session."}`)

// InputSchema is the JSON Schema of the tool's arguments: the agent's
// parameters, with SessionArg added unless they have it.
func (a Agent) InputSchema() (json.RawMessage, error) {
	if !a.continues {
		return a.Tool.Parameters, nil
	}
	var s map[string]json.RawMessage
	if err := json.Unmarshal(a.Tool.Parameters, &s); err != nil {
		return nil, err
	}
	props, err := properties(a.Tool.Parameters)
	if err != nil {
		return nil, err
	}
	props = maps.Clone(props)
	if props == nil {
		props = map[string]json.RawMessage{}
	}
	props[SessionArg] = sessionProperty
	if s["properties"], err = json.Marshal(props); err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// Call is the turn a call asks for.
type Call struct {
	// Session is the session to continue; "" for a new one.
	Session string
	// Prompt is the turn's user message: the arguments' task with the
	// default parameters, else the arguments' JSON (without SessionArg),
	// as a delegation's child gets it (session.DelegatedTask).
	Prompt string
}

// Call reads a call's arguments. Arguments that are no JSON object, a
// session that is no string or no valid id, and a missing task are
// ErrBadArguments.
func (a Agent) Call(args json.RawMessage) (Call, error) {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return Call{}, fmt.Errorf("%w: %s: the arguments must be a JSON object", ErrBadArguments, a.Tool.Name)
	}
	var c Call
	if raw, ok := m[SessionArg]; ok && a.continues {
		if err := json.Unmarshal(raw, &c.Session); err != nil || !session.ValidID(c.Session) {
			return Call{}, fmt.Errorf("%w: %s: %s must be a session id (1 to 128 letters, digits, '-' and '_')", ErrBadArguments, a.Tool.Name, SessionArg)
		}
		delete(m, SessionArg)
	}
	rest, err := json.Marshal(m)
	if err != nil {
		return Call{}, err
	}
	if c.Prompt, err = session.DelegatedTask(a.Tool.Parameters, string(rest)); err != nil {
		return Call{}, fmt.Errorf("%w: %s: %w", ErrBadArguments, a.Tool.Name, err)
	}
	return c, nil
}

// agentsPrefix is the prefix of agentloop.AgentServices' names.
const agentsPrefix = "agents/"
