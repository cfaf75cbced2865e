package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
)

// defaultFormatName names the response format when the schema's title
// cannot: the API requires a name.
const defaultFormatName = "output"

var formatName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// responseFormat maps the header's output schema to Structured Outputs:
// response_format {type: json_schema, json_schema: {name, schema,
// strict}}, the schema sent as the exact text the header holds. strict is
// set only when the schema keeps the rules strict mode imposes (every
// object closed with additionalProperties false and all its properties
// required); the API refuses others in strict mode, and the loop
// validates the answer either way. nil when there is no schema.
func responseFormat(schema json.RawMessage) (*jsonFormat, error) {
	s := bytes.TrimSpace(schema)
	if len(s) == 0 || string(s) == "null" {
		return nil, nil
	}
	var doc any
	if err := json.Unmarshal(s, &doc); err != nil {
		return nil, errors.New("output_schema is not valid JSON")
	}
	name := defaultFormatName
	if m, ok := doc.(map[string]any); ok {
		if t, ok := m["title"].(string); ok && formatName.MatchString(t) {
			name = t
		}
	}
	js := jsonSchema{Name: name, Schema: json.RawMessage(s), Strict: strictCompatible(doc)}
	return &jsonFormat{JSONSchema: js, Type: "json_schema"}, nil
}

// strictCompatible reports whether every object schema inside v (a map
// with properties, or of type object) is closed and requires all its
// properties, as OpenAI's strict mode demands.
func strictCompatible(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		props, hasProps := x["properties"].(map[string]any)
		if hasProps || x["type"] == "object" {
			if x["additionalProperties"] != false {
				return false
			}
			req, _ := x["required"].([]any)
			for k := range props {
				if !slices.Contains(req, any(k)) {
					return false
				}
			}
		}
		for k, e := range x {
			// Values of these keywords are data, not schemas.
			if k == "enum" || k == "const" || k == "default" || k == "examples" {
				continue
			}
			if k == "properties" || k == "$defs" || k == "definitions" || k == "patternProperties" {
				m, _ := e.(map[string]any)
				for _, sub := range m {
					if !strictCompatible(sub) {
						return false
					}
				}
				continue
			}
			if !strictCompatible(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !strictCompatible(e) {
				return false
			}
		}
	}
	return true
}
