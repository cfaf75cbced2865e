package openai

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/internal/providertest"
)

// TestRequestAsksForTheOutputSchema: a header's output_schema is sent as
// response_format json_schema, the schema as the header holds it, strict
// when the schema keeps strict mode's rules; without one there is no
// response_format.
func TestRequestAsksForTheOutputSchema(t *testing.T) {
	closed := `{"additionalProperties":false,"properties":{"city":{"type":"string"},"days":{"items":{"additionalProperties":false,"properties":{"t":{"type":"number"}},"required":["t"],"type":"object"},"type":"array"}},"required":["city","days"],"title":"weather","type":"object"}`
	open := `{"properties":{"city":{"type":"string"}},"type":"object"}`
	optional := `{"additionalProperties":false,"properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city"],"type":"object"}`
	tests := []struct {
		name   string
		schema string
		want   string // response_format as sent; "" for absent
	}{
		{"a strict schema with a title", closed, `{"json_schema":{"name":"weather","strict":true,"schema":` + closed + `},"type":"json_schema"}`},
		{"an open object is not strict", open, `{"json_schema":{"name":"output","schema":` + open + `},"type":"json_schema"}`},
		{"an optional property is not strict", optional, `{"json_schema":{"name":"output","schema":` + optional + `},"type":"json_schema"}`},
		{"none", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.NewServer(t, sse(t, "text"))
			req := simpleRequest()
			req.Header.OutputSchema = json.RawMessage(tt.schema)
			s, err := newProvider(t, srv).Stream(context.Background(), req)
			require.NoError(t, err)
			_, err = providertest.Collect(s)
			require.NoError(t, err)

			var body map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body))
			got, ok := body["response_format"]
			if tt.want == "" {
				assert.False(t, ok, "no response_format: %s", got)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tt.want, string(got))
		})
	}
}
