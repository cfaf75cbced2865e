package replay

import (
	"bytes"
	"encoding/json"
)

// schemaConfig turns a recorded header's output_schema back into the
// agent config's form. Numbers are kept as their text, so the loop's
// encoding of it (sorted keys, no white space, as the recording's own)
// is the recorded schema byte for byte; nil when there is none or it is
// not an object.
func schemaConfig(raw json.RawMessage) map[string]any {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil {
		return nil
	}
	return m
}
