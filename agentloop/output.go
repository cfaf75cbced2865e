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
	// ("at '/age': got string, want integer"), a cause indented under
	// the error it explains.
	Problems []string
}

func (e *OutputError) Error() string {
	var b strings.Builder
	b.WriteString(ErrOutputInvalid.Error())
	if e.Retried {
		b.WriteString(" (after one retry)")
	}
	for i, p := range e.Problems {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(strings.TrimLeft(p, " "))
	}
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
				probs := problems(ve)
				for i := range probs {
					probs[i] = strings.TrimLeft(probs[i], " ")
				}
				return nil, fmt.Errorf("output_schema is not a valid JSON Schema: %s", strings.Join(probs, "; "))
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

// problems lists what is wrong, as the library explains it: one line per
// error, each naming the JSON pointer of the value it is about ("at
// '/age': got string, want integer"), a nested line (a cause of an
// anyOf, say) indented under its parent. The library's first line, which
// names only the schema's internal URL, is left out.
func problems(ve *jsonschema.ValidationError) []string {
	lines := strings.Split(strings.TrimRight(ve.Error(), "\n"), "\n")
	if len(lines) > 1 {
		lines = lines[1:]
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		// "- at …" at the top level, "  - at …" below it.
		trimmed := strings.TrimLeft(l, " ")
		indent := l[:len(l)-len(trimmed)]
		out = append(out, indent+strings.TrimPrefix(trimmed, "- "))
	}
	return out
}

// outputFeedback is the user/message content that asks the model to
// answer again, with the problems of its answer.
func outputFeedback(problems []string) string {
	var b strings.Builder
	b.WriteString("Your answer does not match the required output JSON Schema:\n")
	for _, p := range problems {
		trimmed := strings.TrimLeft(p, " ")
		b.WriteString(p[:len(p)-len(trimmed)])
		b.WriteString("- ")
		b.WriteString(trimmed)
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
