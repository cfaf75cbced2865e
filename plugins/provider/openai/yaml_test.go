package openai_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/plugins/provider/openai"
)

// TestPluginsYAMLDecodesIntoConfig runs entries through the real
// plugins.yaml loader, which decodes strictly into Config.
func TestPluginsYAMLDecodesIntoConfig(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": "sk-env"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		name string
		yaml string
		want *openai.Config
		err  string
	}{
		{
			name: "deepseek with key from the environment",
			yaml: "plugins:\n  - name: provider/openai\n    config: { base_url: https://api.deepseek.com, api_key: \"${OPENAI_API_KEY}\", model: deepseek-chat }\n",
			want: &openai.Config{BaseURL: "https://api.deepseek.com", APIKey: "sk-env", Model: "deepseek-chat"},
		},
		{
			name: "ollama without key",
			yaml: "plugins:\n  - name: provider/openai\n    config: { base_url: http://localhost:11434/v1, model: llama3.2 }\n",
			want: &openai.Config{BaseURL: "http://localhost:11434/v1", Model: "llama3.2"},
		},
		{
			name: "unknown key",
			yaml: "plugins:\n  - name: provider/openai\n    config: { model: m, base_url: http://x, temprature: 1 }\n",
			err:  "temprature",
		},
		{
			name: "missing model",
			yaml: "plugins:\n  - name: provider/openai\n    config: { base_url: http://localhost:11434/v1 }\n",
			err:  "model",
		},
		{
			name: "openai without key",
			yaml: "plugins:\n  - name: provider/openai\n    config: { model: gpt-4o-mini }\n",
			err:  "api_key is required",
		},
		{
			name: "base_url with an empty port",
			yaml: "plugins:\n  - name: provider/openai\n    config: { base_url: \"http://localhost:/v1\", model: m }\n",
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
