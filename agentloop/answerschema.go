package agentloop

// AnswerSchema is a compiled JSON Schema that answers are checked against
// the way the loop checks a final answer against Config.OutputSchema:
// the same compiler, the same refusal of $refs outside the schema, the
// same problems. `vigil eval`'s json_schema scorer uses it, so an answer
// passes the scorer exactly when it would pass the loop.
type AnswerSchema struct{ o *outputSchema }

// CompileAnswerSchema compiles schema (a JSON Schema as decoded JSON). A
// schema that does not compile is an error listing its problems; an
// empty one (nil) accepts any JSON value.
func CompileAnswerSchema(schema map[string]any) (*AnswerSchema, error) {
	if schema == nil {
		schema = map[string]any{}
	}
	o, err := compileOutputSchema(schema)
	if err != nil {
		return nil, err
	}
	return &AnswerSchema{o: o}, nil
}

// Problems returns what is wrong with answer: none when it is one JSON
// value that the schema accepts; else one line per problem ("the answer
// is not JSON: …", "at '/age': got string, want integer").
func (s *AnswerSchema) Problems(answer string) []string { return s.o.check(answer) }
