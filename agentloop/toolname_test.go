package agentloop_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
)

// A tool name no model API accepts is refused where tools are provided,
// with a reason that quotes no more than 64 bytes of it.
func TestProvideToolRefusesANameNoModelAccepts(t *testing.T) {
	tests := []struct {
		name string
		why  string // "" when valid
	}{
		{"read_file", ""},
		{"A-z_0-9", ""},
		{strings.Repeat("x", 64), ""},
		{"", "the name is empty"},
		{"../../etc/passwd", `"../../etc/passwd" holds '.'`},
		{"files.read", `"files.read" holds '.'`},
		{"tab\there", `"tab\there" holds '\t'`},
		{"naïve", `"naïve" holds 'ï'`},
		{strings.Repeat("x", 65), "is 65 bytes long, more than 64"},
		{strings.Repeat("y", 10<<20), `"` + strings.Repeat("y", 64) + `"… is 10485760 bytes long`},
	}
	for _, tt := range tests {
		t.Run(tt.name[:min(len(tt.name), 20)], func(t *testing.T) {
			e := newEnv(t)
			noop := func(context.Context, json.RawMessage) (string, error) { return "", nil }
			_, err := agentloop.ProvideTool(e.c, funcTool{name: tt.name, fn: noop})
			if tt.why == "" {
				require.NoError(t, err)
				_, err := bus.NewService[agentloop.Tool](agentloop.ToolServicePrefix + tt.name).Get(e.c)
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, agentloop.ErrToolName)
			assert.Contains(t, err.Error(), tt.why)
			assert.Less(t, len(err.Error()), 200, "the reason does not echo the name whole")
			named, err := bus.Lookup[agentloop.Tool](e.c, agentloop.ToolServicePrefix)
			require.NoError(t, err)
			assert.Empty(t, named, "nothing was provided")
		})
	}
}
