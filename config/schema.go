package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"

	"github.com/vigil-run/vigil/bus"
)

// Schema returns a JSON Schema (draft 2020-12) of plugins.yaml generated
// from the registered plugins' config structs, so editors can complete
// and check the file.
func Schema() ([]byte, error) {
	var variants []any
	for _, m := range bus.Modules() {
		entry := map[string]any{
			"type": "object",
			"properties": map[string]any{
				"name":     map[string]any{"const": m.Name, "description": m.Description},
				"id":       map[string]any{"type": "string"},
				"disabled": map[string]any{"type": "boolean"},
			},
			"required":             []string{"name"},
			"additionalProperties": false,
		}
		props := entry["properties"].(map[string]any)
		switch {
		case m.Name == GroupName:
			props["config"] = map[string]any{"$ref": "#/$defs/entries"}
		case m.Config != nil:
			props["config"] = typeSchema(reflect.TypeOf(m.Config()))
		default:
			props["config"] = map[string]any{"type": "null"}
		}
		variants = append(variants, entry)
	}
	s := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"title":                "Vigil plugins.yaml",
		"type":                 "object",
		"properties":           map[string]any{"plugins": map[string]any{"$ref": "#/$defs/entries"}},
		"additionalProperties": false,
		"$defs": map[string]any{
			"entries": map[string]any{"type": "array", "items": map[string]any{"oneOf": variants}},
		},
	}
	return json.MarshalIndent(s, "", "  ")
}

func typeSchema(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return map[string]any{"type": "string"}
	}
	if t == reflect.TypeFor[time.Duration]() {
		return map[string]any{"type": "string", "pattern": "^([0-9.]+(ns|us|µs|ms|s|m|h))+$"}
	}
	switch t.Kind() {
	case reflect.Struct:
		props := map[string]any{}
		var required []string
		addFields(t, props, &required)
		s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": typeSchema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": typeSchema(t.Elem())}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	}
	return map[string]any{}
}

func addFields(t reflect.Type, props map[string]any, required *[]string) {
	for _, f := range structFields(t) {
		sf := t.FieldByIndex(f.index)
		s := typeSchema(sf.Type)
		doc := sf.Tag.Get("doc")
		if f.path {
			// Editors show it: the rule is not visible in the value.
			doc = strings.TrimSpace(doc + " (a path: relative to the directory of plugins.yaml; ~ is your home)")
		}
		if doc != "" {
			s["description"] = doc
		}
		props[f.key] = s
		if f.required {
			*required = append(*required, f.key)
		}
	}
}
