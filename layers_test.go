package vigil_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The layers of docs/architecture.md, checked on the packages' imports.

const module = "github.com/vigil-run/vigil"

// goList runs go list with args in the module and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// pluginRoot returns the plugin package a path under plugins/ belongs to
// ("plugins/tools/mcp" for plugins/tools/mcp/internal/testserver), or ""
// for a path outside any plugin (plugins itself, plugins/internal/…).
func pluginRoot(p string) string {
	parts := strings.Split(p, "/")
	if parts[0] != "plugins" || len(parts) < 2 || parts[1] == "internal" {
		return ""
	}
	switch parts[1] {
	case "provider", "tools", "store": // the areas of the plugin names
		if len(parts) < 3 {
			return ""
		}
		return strings.Join(parts[:3], "/")
	}
	return strings.Join(parts[:2], "/")
}

// allowed reports whether package p (a path inside the module) may import
// package q of the module.
func allowed(p, q string) bool {
	if ok, decided := coreAllows(p, q); decided {
		return ok
	}
	return outerAllows(p, q)
}

// core is layers 1 to 4, the stores among them.
var core = []string{"bus", "session", "session/", "agentloop", "agentloop/ledger", "invariants"}

// in reports whether q is one of pkgs, or inside one of those that end
// in a slash.
func in(q string, pkgs ...string) bool {
	for _, x := range pkgs {
		if q == x || strings.HasSuffix(x, "/") && strings.HasPrefix(q, x) {
			return true
		}
	}
	return false
}

// coreAllows decides for a package p of the core: decided is false when
// p is not one.
func coreAllows(p, q string) (ok, decided bool) {
	switch {
	case p == "bus" || strings.HasPrefix(p, "bus/"):
		return strings.HasPrefix(q, "bus/"), true
	case p == "session/live", p == "session/sessiontest":
		return in(q, "bus", "session", "session/live"), true
	case p == "session" || strings.HasPrefix(p, "session/"):
		// The pure log, the stores and the approval engine: no bus, no
		// live session, none of them another.
		return in(q, "session") || strings.HasPrefix(q, p+"/") || strings.HasPrefix(p, q+"/"), true
	case p == "agentloop":
		return in(q, "bus", "session", "session/approval", "session/live"), true
	case p == "agentloop/ledger":
		return in(q, "session", "agentloop"), true
	case p == "invariants":
		return in(q, "bus", "session", "session/approval", "session/live", "agentloop"), true
	}
	return false, false
}

// outerAllows decides for the packages above the core: plugins, the
// plugin wire, config, the face, and the linking layers.
func outerAllows(p, q string) bool {
	switch {
	case p == "eval/score":
		// The scorers: the core (a judge's one-shot, the loop's schema
		// check) and the out-of-process scorer's host and wire; no other
		// plugin.
		return in(q, core...) || in(q, "plugins/external", "plugins/external/sdk", "plugins/external/proto")
	case p == "plugins/external/proto":
		return false
	case p == "plugins/external/sdk":
		return in(q, "plugins/external/proto", "session")
	case strings.HasPrefix(p, "examples/plugins/"):
		return in(q, "plugins/external/sdk", "plugins/external/proto", "session")
	case strings.HasPrefix(p, "plugins/internal/"):
		return in(q, core...) || in(q, "plugins/internal/")
	case pluginRoot(p) != "":
		// A plugin: the core, what plugins share, its own tree, and the
		// wire a plugin process speaks; never another plugin.
		return in(q, core...) || in(q, "plugins/internal/") || pluginRoot(q) == pluginRoot(p) ||
			(pluginRoot(p) == "plugins/external" && in(q, "plugins/external/proto", "plugins/external/sdk"))
	case p == "config":
		return in(q, "bus")
	case p == "webui":
		// The web UI's assets: a page that calls the API over HTTP like
		// any client, so it needs no package of ours (server mounts it).
		return false
	case p == "eval":
		// The eval runner links the core, the replay plugin's rerun, the
		// scorers and the budget's price table; a program opens the
		// compositions it runs.
		return in(q, core...) || in(q, "config", "eval/score", "plugins/provider/replay", "plugins/budget")
	case p == "":
		// The face: the core and config, no plugin (the program picks).
		return in(q, core...) || in(q, "config")
	}
	return true // the linking and composing layers and the programs
}

func TestImportsPointDown(t *testing.T) {
	lines := goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	require.NotEmpty(t, lines)
	for _, line := range lines {
		fields := strings.Fields(line)
		p := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		for _, imp := range fields[1:] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			q := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			assert.True(t, allowed(p, q), "%s imports %s, which its layer may not (docs/architecture.md)", p, q)
		}
	}
}

// TestExamplePluginsLinkOnlyTheSDKAndThePureLog: an out-of-process plugin
// written with the SDK links no package of the module but the SDK, the
// protocol and the pure log, whatever those import in turn.
func TestExamplePluginsLinkOnlyTheSDKAndThePureLog(t *testing.T) {
	mains := goList(t, "-f", "{{if eq .Name \"main\"}}{{.ImportPath}}{{end}}", "./examples/plugins/...")
	var n int
	for _, m := range mains {
		if m == "" {
			continue
		}
		n++
		for _, dep := range goList(t, "-deps", m) {
			if dep == m || !strings.HasPrefix(dep, module+"/") {
				continue
			}
			q := strings.TrimPrefix(dep, module+"/")
			assert.Contains(t, []string{"plugins/external/sdk", "plugins/external/proto", "session"}, q, "%s links %s", m, q)
		}
	}
	assert.Positive(t, n, "the example plugins are main packages")
}

// TestTheBinaryCompilesNoProviderSDK: the providers speak their one
// endpoint each with wire types of their own, so the binary compiles
// neither official SDK (before, most of a cold build's CPU time); the
// providers' tests still do, as the oracle the wire types are held to
// (plugins/provider/*/oracle_test.go).
func TestTheBinaryCompilesNoProviderSDK(t *testing.T) {
	sdks := []string{"github.com/openai/openai-go/", "github.com/anthropics/anthropic-sdk-go/"}
	uses := func(deps []string, sdk string) bool {
		for _, d := range deps {
			if strings.HasPrefix(d, sdk) {
				return true
			}
		}
		return false
	}
	deps := goList(t, "-deps", "./cmd/vigil")
	require.Contains(t, deps, module+"/plugins/provider/openai")
	require.Contains(t, deps, module+"/plugins/provider/anthropic")
	tests := goList(t, "-deps", "-test", "./plugins/provider/openai", "./plugins/provider/anthropic")
	for _, sdk := range sdks {
		assert.False(t, uses(deps, sdk), "the binary compiles %s", sdk)
		assert.True(t, uses(tests, sdk), "the providers' tests no longer hold the wire types to %s", sdk)
	}
	// gjson, which the SDKs read with, checks eventstream's reading in
	// its tests only.
	assert.False(t, uses(deps, "github.com/tidwall/"), "the binary compiles gjson")
}
