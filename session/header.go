package session

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Header is everything model-visible in a request besides the messages:
// provider, model, system prompt, tools and sampling. It is logged in
// request/header events; the latest snapshot wins.
type Header struct {
	Provider    string     `json:"provider,omitempty"`
	Model       string     `json:"model,omitempty"`
	System      string     `json:"system,omitempty"`
	Tools       []ToolSpec `json:"tools,omitempty"`
	Temperature *float64   `json:"temperature,omitempty"`
	MaxTokens   int        `json:"max_tokens,omitempty"`
	Stop        []string   `json:"stop,omitempty"`
	// OutputSchema, when set, is the JSON Schema the final answer must
	// match; providers ask for it with their structured-output modes. It
	// is last so that the digests of headers without it are unchanged.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// ToolSpec describes a tool to the model. Parameters is a JSON Schema.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	// Idempotent declares that running a call again with the same
	// idempotency key ([IdempotencyKey]) is safe: the tool has its effect
	// at most once per key. The default, false, means a retry may repeat
	// the effect. The model does not see it; it is logged, last and only
	// when true, so headers without it encode and digest as before.
	Idempotent bool `json:"idempotent,omitempty"`
}

// HeaderEquals reports whether two headers are model-visibly the same,
// and declare the same retry semantics (a tool's Idempotent). Empty system and empty tools count as absent; tool parameters
// and the output schema compare as JSON text after compaction of
// insignificant white space (absent and null are the same). Text
// compares as a record holds it (see [ValidText]): a header that differs
// from the one logged only where the record replaced invalid UTF-8 is the
// same.
func HeaderEquals(a, b Header) bool {
	return headerEquals(a, b) || headerEquals(ValidText(a), ValidText(b))
}

func headerEquals(a, b Header) bool {
	if a.Provider != b.Provider || a.Model != b.Model || a.System != b.System ||
		a.MaxTokens != b.MaxTokens || !slices.Equal(a.Stop, b.Stop) || len(a.Tools) != len(b.Tools) ||
		!jsonTextEqual(a.OutputSchema, b.OutputSchema) {
		return false
	}
	if (a.Temperature == nil) != (b.Temperature == nil) || (a.Temperature != nil && *a.Temperature != *b.Temperature) {
		return false
	}
	for i := range a.Tools {
		x, y := a.Tools[i], b.Tools[i]
		if x.Name != y.Name || x.Description != y.Description || !jsonTextEqual(x.Parameters, y.Parameters) || x.Idempotent != y.Idempotent {
			return false
		}
	}
	return true
}

func jsonTextEqual(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	if len(a) == 0 || len(b) == 0 {
		return isEmptyJSON(a) && isEmptyJSON(b)
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

func isEmptyJSON(m json.RawMessage) bool {
	s := string(bytes.TrimSpace(m))
	return s == "" || s == "null"
}
