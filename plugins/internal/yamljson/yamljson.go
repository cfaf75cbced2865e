// Package yamljson encodes config values decoded from YAML as JSON, for
// plugins that hand part of their config on (tool arguments, an external
// plugin's own config).
package yamljson

import (
	"encoding/json"
	"fmt"
)

// Marshal encodes v as JSON. Maps with non-string keys, which some YAML
// decoders produce (map[any]any), get their keys as strings.
func Marshal(v any) ([]byte, error) {
	return json.Marshal(normalize(v))
}

func normalize(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = normalize(e)
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = normalize(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = normalize(e)
		}
		return s
	}
	return v
}
