package agentloop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vigil-run/vigil/session"
)

// ErrOutputInvalid is matched by the error of a turn whose final answer
// did not match Config.OutputSchema, after its one retry (see
// [*OutputError]).
var ErrOutputInvalid = errors.New("agentloop: the answer does not match the output schema")

// OutputError is the cause of a turn that ended with reason error because
// its final answer did not match the output schema.
type OutputError struct {
	// Retried says the model was given the one retry, with the problems of
	// its first answer as an output-validation user/message.
	Retried bool
	// Problems are the validation errors of the last answer, one a line
	// ("/age: got string, want integer").
	Problems []string
}

func (e *OutputError) Error() string {
	var b strings.Builder
	b.WriteString(ErrOutputInvalid.Error())
	if e.Retried {
		b.WriteString(" (after one retry)")
	}
	b.WriteString(": ")
	b.WriteString(strings.Join(e.Problems, "; "))
	return b.String()
}

// Unwrap makes the error match ErrOutputInvalid.
func (e *OutputError) Unwrap() error { return ErrOutputInvalid }

// schemaURL names the output schema inside its compiler; it only shows in
// the library's own messages, which outputProblems does not repeat.
const schemaURL = "urn:vigil:output_schema"

// outputSchema is Config.OutputSchema, compiled: its JSON text (what the
// request header carries) and the validator.
type outputSchema struct {
	text   json.RawMessage
	schema *jsonschema.Schema
}

// compileOutputSchema compiles a config's output_schema; nil for none.
// References are resolved within the schema only: a $ref to a file or a
// URL is refused, so a schema cannot make the loop read anything.
func compileOutputSchema(v map[string]any) (*outputSchema, error) {
	if v == nil {
		return nil, nil
	}
	text, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("output_schema: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("output_schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("output_schema: %w", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		var sve *jsonschema.SchemaValidationError
		if errors.As(err, &sve) {
			if ve, ok := errors.AsType[*jsonschema.ValidationError](sve.Err); ok {
				return nil, fmt.Errorf("output_schema is not a valid JSON Schema: %s", strings.Join(problems(ve), "; "))
			}
		}
		return nil, fmt.Errorf("output_schema is not a valid JSON Schema: %w", err)
	}
	return &outputSchema{text: text, schema: sch}, nil
}

// check returns the problems of answer against the schema: none when it
// is a JSON value that matches.
func (o *outputSchema) check(answer string) []string {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(answer))
	if err != nil {
		if strings.TrimSpace(answer) == "" {
			return []string{"the answer is empty; a JSON value is required"}
		}
		return []string{"the answer is not JSON: " + err.Error()}
	}
	err = o.schema.Validate(v)
	if err == nil {
		return nil
	}
	if ve, ok := errors.AsType[*jsonschema.ValidationError](err); ok {
		return problems(ve)
	}
	return []string{err.Error()}
}

// problems lists the leaf errors of a validation, each with the JSON
// pointer of the value it is about ("(root)" for the whole value).
func problems(ve *jsonschema.ValidationError) []string {
	var out []string
	for _, u := range ve.BasicOutput().Errors {
		if u.Error == nil {
			continue
		}
		at := u.InstanceLocation
		if at == "" {
			at = "(root)"
		}
		out = append(out, at+": "+u.Error.String())
	}
	if len(out) == 0 {
		out = append(out, ve.Error())
	}
	return out
}

// outputFeedback is the user/message content that asks the model to
// answer again, with the problems of its answer.
func outputFeedback(problems []string) string {
	var b strings.Builder
	b.WriteString("Your answer does not match the required output JSON Schema:\n")
	for _, p := range problems {
		b.WriteString("- ")
		b.WriteString(p)
		b.WriteByte('\n')
	}
	b.WriteString("Answer again with only a JSON value that matches the schema.")
	return b.String()
}

// retriedOutput reports whether the open turn already logged its one
// output-validation retry. It reads the log, not the turn's memory, so a
// turn resumed after an approval keeps the bound.
func (t *turn) retriedOutput() bool {
	for r := range t.sess.Backward() {
		switch r.Type() {
		case session.TypeTurnStart:
			return false
		case session.TypeUserMessage:
			if r.Turn() != t.n {
				continue
			}
			if um, err := session.DecodeData[session.UserMessage](r); err == nil && um.Origin == session.OriginOutputValidation {
				return true
			}
		}
	}
	return false
}

// checkOutput validates the final answer of a completed step against the
// output schema. It returns retry when the answer is invalid and the turn
// may still retry (it then logged the feedback), or the turn's cause when
// the answer is invalid for good; neither when the answer is valid or
// there is no schema.
func (t *turn) checkOutput(step int, answer string) (retry bool, cause error, err error) {
	o := t.a.schema
	if o == nil {
		return false, nil, nil
	}
	probs := o.check(answer)
	if probs == nil {
		return false, nil, nil
	}
	retried := t.retriedOutput()
	if retried || step >= t.a.cfg.MaxSteps {
		return false, &OutputError{Retried: retried, Problems: probs}, nil
	}
	if _, err := t.append(session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: outputFeedback(probs), Origin: session.OriginOutputValidation}}); err != nil {
		return false, nil, err
	}
	return true, nil, nil
}
