package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/session"
)

// Plugin is an out-of-process plugin: a name and hooks, all optional but
// Name. C is the type the entry's config is decoded into (strictly:
// unknown keys are an error); use struct{} for a plugin without config.
type Plugin[C any] struct {
	// Name names the plugin in logs.
	Name string
	// Version is the plugin's own version, free-form.
	Version string

	// Configure is called once, before any other hook, with the config
	// and the host. An error fails the plugin's fiber on the host.
	Configure func(ctx context.Context, host *Host, config C) error

	// Types limits OnEvent and Validate to session records of these
	// types (like session.TypeToolCall); empty means every type.
	Types []string
	// OnEvent observes each committed session record. Its error is
	// logged by the host and changes nothing.
	OnEvent func(ctx context.Context, ev *Event) error
	// Validate sees each session record before it is committed. A
	// non-nil error refuses it: return [Veto] to give a code and a reason.
	// A tool call the agent loop proposes is seen once, before it is
	// logged ([Event.Proposed]); return [Ask] to have a person decide it
	// rather than refuse it. For any other event Ask refuses.
	Validate func(ctx context.Context, ev *Event) error
	// OnSession observes sessions made available by the host: created,
	// loaded, forked or seeded.
	OnSession func(ctx context.Context, sessionID string) error

	// Tools are the tools the plugin provides.
	Tools []Tool

	// Score makes the plugin a scorer for `vigil eval`: it scores one
	// pair of turns, the recorded one and the candidate's. An error is a
	// scorer that could not score (the eval reports it), never a low
	// score; a score outside [0, 1] is one too. A scorer is configured
	// with the suite's config for it and gets no [Host].
	Score func(ctx context.Context, p ScorePair) (ScoreResult, error)

	// Dispose is called when the plugin is unloaded or its host exits.
	Dispose func(ctx context.Context) error
}

// Tool is a tool the model can call.
type Tool struct {
	// Name is the name the model calls the tool by; unique on the host.
	Name        string
	Description string
	// Parameters is a JSON Schema of the arguments object.
	Parameters json.RawMessage
	// ConcurrencySafe lets calls run concurrently with other
	// concurrency-safe calls of the same step.
	ConcurrencySafe bool
	// Idempotent declares that running a call again with the same
	// idempotency key ([IdempotencyKey]) is safe: the tool has its effect
	// at most once per key. False, the default, says a retry may repeat
	// the effect.
	Idempotent bool
	// Run runs one call with the model's arguments (a JSON object) and
	// returns the text the model sees. An error is shown to the model
	// as an error result; return a [*ToolError] to give it a code.
	Run func(ctx context.Context, args json.RawMessage) (string, error)
}

// NewTool returns a tool whose arguments are decoded strictly into A
// before run sees them; arguments that do not decode are an
// INVALID_ARGUMENTS error result.
func NewTool[A any](name, description string, parameters json.RawMessage, run func(ctx context.Context, args A) (string, error)) Tool {
	return Tool{
		Name:        name,
		Description: description,
		Parameters:  parameters,
		Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
			var a A
			if err := strictJSON(raw, &a); err != nil {
				return "", &ToolError{Code: CodeInvalidArguments, Message: err.Error()}
			}
			return run(ctx, a)
		},
	}
}

// Tool error codes the SDK produces itself, for a plugin's own tests
// (the host logs them in the tool/result).
const (
	// CodeInvalidArguments: the arguments do not decode into the tool's type.
	CodeInvalidArguments = "INVALID_ARGUMENTS"
	// CodeToolFailed: the tool returned an error without a code.
	CodeToolFailed = "TOOL_ERROR"
	// CodeToolPanic: the tool panicked.
	CodeToolPanic = "TOOL_PANIC"
	// CodeVeto: Validate refused an event with an error other than a
	// [*VetoError].
	CodeVeto = "VETO"
)

// ToolError is a tool failure with a code, shown to the model.
type ToolError struct {
	Code    string
	Message string
}

func (e *ToolError) Error() string { return e.Code + ": " + e.Message }

// VetoError refuses a session event: see [Plugin.Validate].
type VetoError struct {
	Code   string
	Reason string
}

func (e *VetoError) Error() string { return "veto " + e.Code + ": " + e.Reason }

// Veto returns the error that refuses an event with a code (like
// "POLICY") and a reason for humans.
func Veto(code, reason string) error { return &VetoError{Code: code, Reason: reason} }

// CodeAsk is the code of the veto an ask also is, for a host that
// predates ask (which refuses the call rather than run it).
const CodeAsk = "ASK"

// AskError answers a proposed tool call with ask: see [Ask].
type AskError struct {
	Reason string
}

func (e *AskError) Error() string {
	if e.Reason == "" {
		return "ask"
	}
	return "ask: " + e.Reason
}

// Ask returns the error with which Validate asks a person to decide a
// tool call the agent loop proposes (an [Event] with Proposed set): the
// host logs the call with an approval/request by this plugin carrying
// reason, and the turn waits for the decision. For any other event the
// host refuses it, as a veto coded [CodeAsk].
func Ask(reason string) error { return &AskError{Reason: reason} }

// Event is one session event delivered to OnEvent or Validate.
type Event struct {
	// Session is the id of the session.
	Session string
	// Seq and Type are the record's.
	Seq  int64
	Type string
	// Line is the record's canonical JSON line, exactly as the log
	// stores it (without the newline).
	Line []byte
	// Proposed: a tool call the agent loop is about to log, seen by
	// Validate before it is logged (Seq is 0, its place not known yet),
	// and only then; [Ask] answers only such an event.
	Proposed bool
}

// Record decodes the event's line into a session record.
func (e *Event) Record() (session.Record, error) {
	r, err := session.DecodeRecord(e.Line)
	if err != nil {
		return session.Record{}, fmt.Errorf("sdk: record %d: %w", e.Seq, err)
	}
	return r, nil
}

// Data decodes the data of the event's record into a T, like
// session.ToolCall for a tool/call event.
func Data[T any](e *Event) (T, error) {
	var w struct {
		Data T `json:"data"`
	}
	if err := json.Unmarshal(e.Line, &w); err != nil {
		return w.Data, fmt.Errorf("sdk: data of %s %d: %w", e.Type, e.Seq, err)
	}
	return w.Data, nil
}

// strictJSON decodes one JSON value into v, refusing unknown fields.
func strictJSON(data []byte, v any) error {
	if len(data) == 0 {
		data = []byte("null")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}
