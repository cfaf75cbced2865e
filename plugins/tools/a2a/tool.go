package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
)

// Name is the plugin's registered name, as plugins.yaml and vigil.Plugin
// spell it.
const Name = "tools/a2a"

// The codes of a call's tool errors (the tool/result's error code).
const (
	// CodeBadArguments: the arguments are not {task, context}.
	CodeBadArguments = "INVALID_ARGUMENTS"
	// CodeUnreachable: the agent could not be reached or refused the
	// request.
	CodeUnreachable = "A2A_UNREACHABLE"
	// CodeTaskFailed: the remote task failed, was cancelled or rejected.
	CodeTaskFailed = "A2A_TASK_FAILED"
)

// parameters are the tool's parameters.
var parameters = json.RawMessage(`{"type":"object","properties":{` +
	`"task":{"type":"string","description":"What the agent is asked to do."},` +
	`"context":{"type":"string","description":"The context of an earlier call's result, to continue that conversation; leave it out to start a new one."}},` +
	`"required":["task"],"additionalProperties":false}`)

// Tool is one remote A2A agent as a tool.
type Tool struct {
	spec    session.ToolSpec
	card    *sdk.AgentCard
	http    *http.Client
	timeout time.Duration
}

// Result is what a call answers, as JSON: the remote task, its context
// (to continue in), its state, the agent's answer (or status message),
// and the receipt a Vigil agent sends.
type Result struct {
	Task    string `json:"task,omitempty"`
	Context string `json:"context,omitempty"`
	State   string `json:"state"`
	Answer  string `json:"answer,omitempty"`
	Receipt any    `json:"receipt,omitempty"`
}

// New resolves agent a's card and returns its tool.
func New(ctx context.Context, a Agent, timeout time.Duration) (*Tool, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	hc := &http.Client{Transport: headers{a.Headers, http.DefaultTransport}}
	base, path := cardLocation(a.Card)
	var opts []agentcard.ResolveOption
	if path != "" {
		opts = append(opts, agentcard.WithPath(path))
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	card, err := agentcard.NewResolver(hc).Resolve(rctx, base, opts...)
	if err != nil {
		return nil, fmt.Errorf("tools/a2a: the agent card at %s: %w", a.Card, err)
	}
	spec := session.ToolSpec{Name: a.Name, Description: a.Description, Parameters: parameters}
	if spec.Name == "" {
		spec.Name = toolName(card.Name)
	}
	if spec.Description == "" {
		spec.Description = card.Description
	}
	if spec.Description == "" {
		spec.Description = "Asks the A2A agent " + card.Name + "."
	}
	return &Tool{spec: spec, card: card, http: hc, timeout: timeout}, nil
}

// cardLocation splits a card URL into the base the resolver takes and
// the card's path ("" for the well-known one under the URL given).
func cardLocation(raw string) (base, path string) {
	u, err := url.Parse(raw)
	if err != nil || !strings.HasSuffix(u.Path, ".json") {
		return raw, ""
	}
	path, u.Path, u.RawPath = u.Path, "", ""
	return u.String(), path
}

var notToolName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// toolName makes a card's name a tool name.
func toolName(name string) string {
	n := strings.Trim(notToolName.ReplaceAllString(name, "_"), "_")
	if n == "" {
		n = "agent"
	}
	return "a2a_" + n[:min(len(n), 60)]
}

// Spec implements [agentloop.Tool].
func (t *Tool) Spec() session.ToolSpec { return t.spec }

// ConcurrencySafe implements [agentloop.ConcurrencySafe]: each call is a
// task of its own.
func (t *Tool) ConcurrencySafe() bool { return true }

// Execute implements [agentloop.Tool]: it sends the task and waits for
// the remote task to complete, fail or wait for input.
func (t *Tool) Execute(ctx context.Context, args json.RawMessage) (string, error) {
	var in struct {
		Task    string `json:"task"`
		Context string `json:"context"`
	}
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || strings.TrimSpace(in.Task) == "" {
		return "", &agentloop.ToolError{Code: CodeBadArguments, Message: `arguments must be {"task": string, "context"?: string}`}
	}
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	c, err := a2aclient.NewFromCard(ctx, t.card, a2aclient.WithJSONRPCTransport(t.http))
	if err != nil {
		return "", &agentloop.ToolError{Code: CodeUnreachable, Message: err.Error()}
	}
	defer func() { _ = c.Destroy() }()
	msg := sdk.NewMessage(sdk.MessageRoleUser, sdk.TextPart{Text: in.Task})
	msg.ContextID = in.Context
	blocking := true
	res, err := c.SendMessage(ctx, &sdk.MessageSendParams{Message: msg, Config: &sdk.MessageSendConfig{Blocking: &blocking}})
	if err != nil {
		return "", &agentloop.ToolError{Code: CodeUnreachable, Message: err.Error()}
	}
	out := resultOf(res)
	text, err := json.Marshal(out)
	if err != nil {
		return "", err
	}
	switch sdk.TaskState(out.State) {
	case sdk.TaskStateFailed, sdk.TaskStateCanceled, sdk.TaskStateRejected:
		return "", &agentloop.ToolError{Code: CodeTaskFailed, Message: string(text)}
	}
	return string(text), nil
}

// resultOf reads the answer of message/send: a task, or a message.
func resultOf(res sdk.SendMessageResult) Result {
	switch r := res.(type) {
	case *sdk.Task:
		out := Result{Task: string(r.ID), Context: r.ContextID, State: string(r.Status.State), Receipt: r.Metadata["vigil/receipt"]}
		for _, a := range r.Artifacts {
			out.Answer += textOf(a.Parts)
		}
		if out.Answer == "" && r.Status.Message != nil {
			out.Answer = textOf(r.Status.Message.Parts)
		}
		return out
	case *sdk.Message:
		return Result{Task: string(r.TaskID), Context: r.ContextID, State: string(sdk.TaskStateCompleted), Answer: textOf(r.Parts)}
	}
	return Result{State: string(sdk.TaskStateUnknown)}
}

// textOf joins the text of parts.
func textOf(parts sdk.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case sdk.TextPart:
			b.WriteString(p.Text)
		case *sdk.TextPart:
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// headers sets the configured headers on every request.
type headers struct {
	set  map[string]string
	next http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.set) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.set {
			r.Header.Set(k, v)
		}
	}
	return h.next.RoundTrip(r)
}

// Plugin provides a tool per configured agent.
var Plugin = bus.RegisterFunc(Name, "remote A2A agents as tools (a2a)", func(c *bus.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	for _, a := range cfg.Agents {
		t, err := New(c.Context(), a, cfg.Timeout)
		if err != nil {
			return err
		}
		if _, err := agentloop.ProvideTool(c, t); err != nil {
			return err
		}
	}
	return nil
})

var (
	_ agentloop.Tool            = (*Tool)(nil)
	_ agentloop.ConcurrencySafe = (*Tool)(nil)
)
