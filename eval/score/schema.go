package score

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vigil-run/vigil/agentloop"
)

// JSONSchemaConfig is the config of `json_schema`: the candidate's
// answer must be one JSON value that a JSON Schema accepts, checked as
// the loop checks an output_schema. The schema is inline or in a file,
// exactly one of the two.
type JSONSchemaConfig struct {
	Bar
	// Schema is the schema, inline (a mapping).
	Schema map[string]any `json:"schema,omitempty"`
	// SchemaFile is a JSON file holding it, relative to the suite's
	// folder.
	SchemaFile string `json:"schema_file,omitempty"`
}

func (c *JSONSchemaConfig) check() error {
	if (c.Schema == nil) == (c.SchemaFile == "") {
		return &ConfigError{Err: errors.New("exactly one of schema and schema_file is required")}
	}
	return c.Bar.Check()
}

type jsonSchema struct {
	cfg    JSONSchemaConfig
	schema *agentloop.AnswerSchema
}

func newJSONSchema(env Env, raw json.RawMessage) (Scorer, error) {
	var cfg JSONSchemaConfig
	if err := decodeChecked(raw, &cfg); err != nil {
		return nil, err
	}
	key, doc := "schema", cfg.Schema
	if cfg.SchemaFile != "" {
		key = "schema_file"
		var err error
		if doc, err = readSchema(env.Dir, cfg.SchemaFile); err != nil {
			return nil, &ConfigError{Key: key, Err: err}
		}
	}
	sch, err := agentloop.CompileAnswerSchema(doc)
	if err != nil {
		return nil, &ConfigError{Key: key, Err: err}
	}
	return jsonSchema{cfg: cfg, schema: sch}, nil
}

// readSchema reads a schema file, relative to dir, as one JSON mapping.
func readSchema(dir, name string) (map[string]any, error) {
	if !filepath.IsAbs(name) {
		name = filepath.Join(dir, name)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: not a JSON Schema mapping: %w", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: more than one JSON value", name)
	}
	if doc == nil {
		return nil, fmt.Errorf("%s: null is not a schema", name)
	}
	return doc, nil
}

func (s jsonSchema) Score(_ context.Context, p Pair) (Result, error) {
	probs := s.schema.Problems(p.Candidate.Answer)
	if len(probs) == 0 {
		return s.cfg.Result(1, "the answer matches the schema"), nil
	}
	return s.cfg.Result(0, "the answer does not match the schema: "+strings.TrimLeft(probs[0], " ")), nil
}
