package otel

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// idKeys are the OTLP fields holding trace and span ids. Only protobuf
// field names become JSON object keys here (attributes are arrays of
// {key, value}), so a key of this name is always an id.
var idKeys = map[string]bool{"traceId": true, "spanId": true, "parentSpanId": true}

// otlpJSON encodes m as the OTLP specification's JSON encoding (its
// "JSON Protobuf Encoding" section), which is
// the protobuf JSON mapping with two exceptions the collector holds to:
// trace and span ids are hex strings, not base64, and enum values are
// integers, not names.
func otlpJSON(m proto.Message) ([]byte, error) {
	raw, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // int64s are strings already; doubles stay as written
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if err := hexIDs(v); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// hexIDs rewrites every id in v, a decoded protobuf JSON document, from
// base64 to hex.
func hexIDs(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if !idKeys[k] {
				if err := hexIDs(x); err != nil {
					return err
				}
				continue
			}
			s, ok := x.(string)
			if !ok {
				return fmt.Errorf("%s: not a string", k)
			}
			id, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			v[k] = hex.EncodeToString(id)
		}
	case []any:
		for _, x := range v {
			if err := hexIDs(x); err != nil {
				return err
			}
		}
	}
	return nil
}
