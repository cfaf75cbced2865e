package anthropic

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/internal/providertest"
)

// TestRequestAsksForTheOutputSchema: a header's output_schema is sent as
// output_config.format, the schema as the header holds it; without one
// there is no output_config.
func TestRequestAsksForTheOutputSchema(t *testing.T) {
	schema := `{"additionalProperties":false,"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}`
	tests := []struct {
		name   string
		schema string
		want   string // output_config as sent; "" for absent
	}{
		{"a schema", schema, `{"format":{"type":"json_schema","schema":` + schema + `}}`},
		{"none", "", ""},
		{"null", "null", ""},
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
			got, ok := body["output_config"]
			if tt.want == "" {
				assert.False(t, ok, "no output_config: %s", got)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tt.want, string(got))
		})
	}
}
