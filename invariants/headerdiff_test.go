package invariants_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

func TestHeaderDiffNamesWhatDiffers(t *testing.T) {
	echo := session.ToolSpec{Name: "echo", Description: "echoes its input", Parameters: json.RawMessage(`{"type":"object"}`)}
	logged := session.Header{Provider: "scripted", Model: "m", Tools: []session.ToolSpec{echo}}
	for _, tc := range []struct {
		name   string
		change func(h *session.Header)
		want   string
	}{
		{"tool description", func(h *session.Header) { h.Tools[0].Description = "echoes something else" },
			`request-header: tool "echo": description differs from the latest request/header (expected "echoes its input", actual "echoes something else")`},
		{"tool parameters", func(h *session.Header) { h.Tools[0].Parameters = json.RawMessage(`{"type":"string"}`) },
			`request-header: tool "echo": parameters differs from the latest request/header (expected {"type":"object"}, actual {"type":"string"})`},
		{"tool idempotent", func(h *session.Header) { h.Tools[0].Idempotent = true },
			`request-header: tool "echo": idempotent differs from the latest request/header (expected false, actual true)`},
		{"tool name", func(h *session.Header) { h.Tools[0].Name = "shout" },
			`request-header: tool 0: name differs from the latest request/header (expected "echo", actual "shout")`},
		{"tool added", func(h *session.Header) { h.Tools = append(h.Tools, session.ToolSpec{Name: "calc"}) },
			`request-header: tools differs from the latest request/header (expected [echo], actual [echo calc])`},
		{"output schema", func(h *session.Header) { h.OutputSchema = json.RawMessage(`{"type":"object"}`) },
			`request-header: output_schema differs from the latest request/header (expected , actual {"type":"object"})`},
		{"model", func(h *session.Header) { h.Model = "m2" },
			`request-header: model differs from the latest request/header (expected "m", actual "m2")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sent := session.CloneHeader(logged)
			tc.change(&sent)
			v := invariants.CompareRequest(nil, logged, &agentloop.Request{Header: sent})
			require.NotNil(t, v)
			assert.Equal(t, tc.want, v.String())
		})
	}
}
