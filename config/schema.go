package config

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/vigil-run/vigil/bus"
)

// Schema returns a JSON Schema (draft 2020-12) of plugins.yaml generated
// from the registered plugins' config structs, so editors can complete
// and check the file. An entry's config is discriminated by its name
// (if the name is X, the config is X's), so a validator reports a
// mistake inside the config of the plugin named rather than that no
// plugin matches; closed sets are enums and every key has a description.
func Schema() ([]byte, error) {
	names := moduleNames()
	slices.Sort(names)
	names = slices.Compact(names) // group is registered too
	var byName []any
	for _, m := range bus.Modules() {
		byName = append(byName, map[string]any{
			"if": map[string]any{
				"properties": map[string]any{"name": map[string]any{"const": m.Name}},
				"required":   []string{"name"},
			},
			"then": map[string]any{
				"properties": map[string]any{"config": configSchema(m)},
			},
		})
	}
	entry := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name": map[string]any{
				"description": "The registered plugin this entry runs (`vigil plugins` lists them with what each does).",
				"enum":        names,
			},
			"id": map[string]any{
				"type":        "string",
				"description": "Identifies the entry across reloads and in errors; defaults to the name. Two entries of one plugin need distinct ids.",
			},
			"disabled": map[string]any{
				"type":        "boolean",
				"description": "Keep the entry in the file without applying it; its ${VAR}s need not be set.",
			},
			"config": map[string]any{
				"description": "The plugin's settings; which keys it takes depends on the name.",
			},
		},
		"required":             []string{"name"},
		"additionalProperties": false,
		"allOf":                byName,
	}
	s := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"title":       "Vigil plugins.yaml",
		"description": "A composition: the plugins a Vigil runtime applies, in order.",
		"type":        "object",
		"properties": map[string]any{"plugins": map[string]any{
			"$ref":        "#/$defs/entries",
			"description": "The plugins to apply, in order.",
		}},
		"additionalProperties": false,
		"$defs": map[string]any{
			"entries": map[string]any{"type": "array", "items": entry},
		},
	}
	return json.MarshalIndent(s, "", "  ")
}

// configSchema is the schema of module m's config.
func configSchema(m bus.Module) map[string]any {
	var s map[string]any
	switch {
	case m.Name == GroupName:
		s = map[string]any{"$ref": "#/$defs/entries"}
	case m.Config != nil:
		s = typeSchema(reflect.TypeOf(m.Config()))
	default:
		s = map[string]any{"type": "null"}
	}
	s["description"] = m.Name + ": " + m.Description
	return s
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
		if len(f.enum) > 0 {
			enumOf(s, f.enum)
		}
		props[f.key] = s
		if f.required {
			*required = append(*required, f.key)
		}
	}
}

// enumOf sets the closed set of values of s, a string or a list of them.
func enumOf(s map[string]any, values []string) {
	if items, ok := s["items"].(map[string]any); ok && s["type"] == "array" {
		items["enum"] = values
		return
	}
	s["enum"] = values
}
