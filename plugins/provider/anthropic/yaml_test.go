package anthropic_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/plugins/provider/anthropic"
)

// TestPluginsYAMLDecodesIntoConfig runs entries through the real
// plugins.yaml loader, which decodes strictly into Config.
func TestPluginsYAMLDecodesIntoConfig(t *testing.T) {
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-env"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		name string
		yaml string
		want *anthropic.Config
		err  string
	}{
		{
			name: "anthropic with key from the environment",
			yaml: "plugins:\n  - name: provider/anthropic\n    config: { api_key: \"${ANTHROPIC_API_KEY}\", model: claude-sonnet-4-5, max_tokens: 4096 }\n",
			want: &anthropic.Config{APIKey: "sk-env", Model: "claude-sonnet-4-5", MaxTokens: 4096},
		},
		{
			name: "unknown key",
			yaml: "plugins:\n  - name: provider/anthropic\n    config: { model: m, api_key: k, maxtokens: 1 }\n",
			err:  "maxtokens",
		},
		{
			name: "missing model",
			yaml: "plugins:\n  - name: provider/anthropic\n    config: { api_key: k }\n",
			err:  "model",
		},
		{
			name: "max_tokens of the wrong type",
			yaml: "plugins:\n  - name: provider/anthropic\n    config: { model: m, api_key: k, max_tokens: lots }\n",
			err:  `cannot use "lots" as an integer`,
		},
		{
			name: "anthropic without key",
			yaml: "plugins:\n  - name: provider/anthropic\n    config: { model: claude-sonnet-4-5 }\n",
			err:  "api_key is required",
		},
		{
			name: "base_url with an empty port",
			yaml: "plugins:\n  - name: provider/anthropic\n    config: { base_url: \"http://localhost:/v1\", model: m }\n",
			err:  "base_url has a colon but no port",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := config.Parse("plugins.yaml", []byte(tt.yaml), lookup)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				assert.Contains(t, err.Error(), "plugins.yaml:", "errors name the position")
				return
			}
			require.NoError(t, err)
			require.Len(t, f.Entries, 1)
			assert.Equal(t, tt.want, f.Entries[0].Config)
		})
	}
}
