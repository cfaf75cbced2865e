package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/plugins/tools/calc"
	"github.com/vigil-run/vigil/session/memory"
)

// TestAgainstNamesTheFirstFieldThatDiffers: a recording re-run by an
// agent whose config differs in one model-visible field reports that
// field at turn 1 step 1; one that differs in nothing reports nothing;
// a conversation that differs reports the message.
func TestAgainstNamesTheFirstFieldThatDiffers(t *testing.T) {
	ctx := context.Background()
	dir := folder(t)
	base := agentloop.Config{System: "be helpful", Model: "m1"}
	w := newWorld(t, memory.New(), dir)
	prov, err := scripted.New(scripted.Config{})
	require.NoError(t, err)
	orig := w.run(t, prov)
	temp := 0.3
	for _, tc := range []struct {
		name  string
		cfg   func(agentloop.Config) agentloop.Config
		extra []agentloop.Tool
		field string
		step  int
	}{
		{"same", func(c agentloop.Config) agentloop.Config { return c }, nil, "", 0},
		{"system", func(c agentloop.Config) agentloop.Config { c.System = "be terse"; return c }, nil, "header.system", 1},
		{"model", func(c agentloop.Config) agentloop.Config { c.Model = "m2"; return c }, nil, "header.model", 1},
		{"temperature", func(c agentloop.Config) agentloop.Config { c.Temperature = &temp; return c }, nil, "header.temperature", 1},
		{"max_tokens", func(c agentloop.Config) agentloop.Config { c.MaxTokens = 9; return c }, nil, "header.max_tokens", 1},
		{"a tool added", func(c agentloop.Config) agentloop.Config { return c }, []agentloop.Tool{calc.Tool{}}, "header.tools", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			again := newWorld(t, memory.New(), dir)
			p, err := scripted.New(scripted.Config{})
			require.NoError(t, err)
			a := agentloop.New(again.c, tc.cfg(base), agentloop.WithProvider(p), agentloop.WithTools(append(again.tools, tc.extra...)...))
			defer a.Close()
			res, err := replay.Against(ctx, again.c, again.mgr, a, orig.Records(), replay.AgainstOptions{})
			require.NoError(t, err)
			if tc.field == "" {
				assert.Nil(t, res.Divergence)
				assert.Equal(t, res.Steps, res.Identical)
				assert.Positive(t, res.Identical)
				return
			}
			require.NotNil(t, res.Divergence)
			assert.Equal(t, tc.field, res.Divergence.Field)
			assert.Equal(t, 1, res.Divergence.Turn)
			assert.Equal(t, tc.step, res.Divergence.Step)
			assert.NotEqual(t, res.Divergence.Expected, res.Divergence.Actual)
			assert.Contains(t, res.Divergence.Diff(), "- ")
			assert.Contains(t, res.Divergence.Diff(), "+ ")
		})
	}
}
