package plugins_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/internal/npmtest"
)

// editorsDir holds the npm tools of these tests, pinned by its
// package-lock.json; .ci/run installs them (npm ci).
const editorsDir = "testdata/editors"

// schemaFile writes the schema `vigil plugins --schema` prints, for every
// built-in plugin, to a file of the test's.
func schemaFile(t *testing.T) string {
	t.Helper()
	s, err := config.Schema()
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "plugins.schema.json")
	require.NoError(t, os.WriteFile(p, s, 0o644))
	return p
}

// nodeLines runs a node script of editorsDir and decodes each line it
// prints as a JSON object.
func nodeLines(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = editorsDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node %s:\n%s", strings.Join(args, " "), stderr.String())
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		lines = append(lines, m)
	}
	return lines
}

// The file with four mistakes an editor is to point at: an unknown key
// (line 3), a wrong type (5), an unknown plugin (6), a value outside a
// closed set (8).
const mistakes = "mistakes.yaml"

// A JSON Schema validator (ajv, draft 2020-12, strict about the schema
// itself) names each of the four mistakes at its place: the config is
// checked against the plugin named, not against every plugin at once.
func TestAJSONSchemaValidatorNamesEachMistake(t *testing.T) {
	npmtest.Tool(t, editorsDir, "ajv/package.json")
	npmtest.Tool(t, editorsDir, "yaml/package.json")
	got := map[string]string{}
	for _, e := range nodeLines(t, "ajv.mjs", schemaFile(t), mistakes) {
		got[e["path"].(string)+" "+e["keyword"].(string)] = e["message"].(string)
		if p, ok := e["params"].(map[string]any)["additionalProperty"]; ok {
			got[e["path"].(string)+" additionalProperties"] = p.(string)
		}
	}
	assert.Equal(t, "rot", got["/plugins/0/config additionalProperties"], got)
	assert.Contains(t, got, "/plugins/1/config/max_steps type", got)
	assert.Contains(t, got, "/plugins/2/name enum", got)
	assert.Contains(t, got, "/plugins/3/config/mode enum", got)
}

// yaml-language-server, the YAML support of VS Code and of most editors
// with a language client, given the schema reports the four mistakes,
// each on its own line.
func TestYAMLLanguageServerReportsEachMistake(t *testing.T) {
	server := npmtest.Tool(t, editorsDir, "yaml-language-server/bin/yaml-language-server")
	doc, err := filepath.Abs(filepath.Join(editorsDir, mistakes))
	require.NoError(t, err)
	byLine := map[int]string{}
	for _, d := range nodeLines(t, "lsp.mjs", server, schemaFile(t), doc) {
		byLine[int(d["line"].(float64))] += d["message"].(string)
	}
	assert.Contains(t, byLine[3], "rot", byLine)
	assert.Contains(t, byLine[5], "integer", byLine)
	assert.Contains(t, byLine[6], "tools/fs", byLine)
	assert.Contains(t, byLine[8], "strict", byLine)
	assert.Len(t, byLine, 4, byLine)
}

// Every key of the schema has a description an editor shows, and the
// closed sets are enums.
func TestTheSchemaDescribesEveryKeyAndClosedSet(t *testing.T) {
	s, err := config.Schema()
	require.NoError(t, err)
	var root map[string]any
	require.NoError(t, json.Unmarshal(s, &root))
	enums := map[string][]any{}
	var undescribed []string
	var walk func(node any, path string)
	walk = func(node any, path string) {
		m, ok := node.(map[string]any)
		if !ok {
			return
		}
		if e, ok := m["enum"].([]any); ok {
			enums[path] = e
		}
		props, _ := m["properties"].(map[string]any)
		for k, v := range props {
			if _, ok := v.(map[string]any)["description"]; !ok && path != "" {
				undescribed = append(undescribed, path+"."+k)
			}
			walk(v, path+"."+k)
		}
		walk(m["items"], path+"[]")
		walk(m["additionalProperties"], path+"{}")
		for _, br := range asList(m["allOf"]) {
			name := br.(map[string]any)["if"].(map[string]any)["properties"].(map[string]any)["name"].(map[string]any)["const"].(string)
			walk(br.(map[string]any)["then"], path+"("+name+")")
		}
	}
	walk(root["$defs"].(map[string]any)["entries"].(map[string]any)["items"], "entry")
	assert.Empty(t, undescribed, "keys without a description")
	for path, want := range map[string][]any{
		"entry.name":                             nil,
		"entry(invariants).config.mode":          {"strict", "warn", "off"},
		"entry(external).config.fail":            {"closed", "open"},
		"entry(telemetry/otel).config.protocol":  {"grpc", "http"},
		"entry(approvals).config.default":        {"allow", "deny", "ask"},
		"entry(approvals).config.rules[].action": {"allow", "deny", "ask"},
	} {
		if assert.Contains(t, enums, path) && want != nil {
			assert.Equal(t, want, enums[path], path)
		}
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
