package vigil_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goBlock matches a fenced Go block of README.md, indented or not.
var goBlock = regexp.MustCompile("(?ms)^( *)```go\n(.*?)^ *```")

// readmeBlocks returns README.md's Go blocks, unindented.
func readmeBlocks(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("README.md")
	require.NoError(t, err)
	var out []string
	for _, m := range goBlock.FindAllStringSubmatch(string(data), -1) {
		indent, body := m[1], m[2]
		var b strings.Builder
		for _, line := range strings.SplitAfter(body, "\n") {
			b.WriteString(strings.TrimPrefix(line, indent))
		}
		out = append(out, b.String())
	}
	return out
}

// TestTheREADMEPluginBuildsAndItsTestPasses puts the README's in-process
// plugin, its test and the guard example into a package of this module
// (through go's -overlay, so nothing is written to the tree) and runs the
// test: the README's code is the API as it is.
func TestTheREADMEPluginBuildsAndItsTestPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a package")
	}
	var plugin, test, guard string
	for _, b := range readmeBlocks(t) {
		switch {
		case strings.HasPrefix(b, "// Package shout"):
			plugin = b
		case strings.HasPrefix(b, "func TestShout"):
			test = b
		case strings.HasPrefix(b, "var Guard"):
			guard = b
		}
	}
	require.NotEmpty(t, plugin, "README.md has the shout plugin")
	require.NotEmpty(t, test, "README.md has its test")
	require.NotEmpty(t, guard, "README.md has the guard")

	wd, err := os.Getwd()
	require.NoError(t, err)
	dir := t.TempDir()
	files := map[string]string{
		"shout.go": plugin,
		"shout_test.go": `package shout

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
)

` + test,
		"guard.go": `package shout

import (
	"context"
	"errors"
	"strings"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

` + guard,
	}
	overlay := map[string]map[string]string{"Replace": {}}
	for name, src := range files {
		real := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(real, []byte(src), 0o600))
		overlay["Replace"][filepath.Join(wd, "internal", "readme", "shout", name)] = real
	}
	spec, err := json.Marshal(overlay)
	require.NoError(t, err)
	specPath := filepath.Join(dir, "overlay.json")
	require.NoError(t, os.WriteFile(specPath, spec, 0o600))

	// The package's directory exists only in the overlay: build the test
	// binary (vet would chdir there) and run it from the temp dir.
	bin := filepath.Join(dir, "shout.test")
	out, err := exec.Command("go", "test", "-vet=off", "-overlay", specPath, "-c", "-o", bin, "./internal/readme/shout").CombinedOutput()
	require.NoError(t, err, "the README's plugin does not build:\n%s", out)
	run := exec.Command(bin, "-test.v")
	run.Dir = dir
	out, err = run.CombinedOutput()
	require.NoError(t, err, "the README's plugin test:\n%s", out)
	require.Contains(t, string(out), "--- PASS: TestShout")
}

// TestTheREADMEFirstBuildAndTestCommandsAreTrue holds the Quick start's
// words on the first build and the tests to the repository: the command
// that shows the build's progress is there as given and builds the
// command's package, .ci/postgres.sh exports the variable the PostgreSQL
// tests read, and those tests say how to run them when they skip.
func TestTheREADMEFirstBuildAndTestCommandsAreTrue(t *testing.T) {
	data, err := os.ReadFile("README.md")
	require.NoError(t, err)
	readme := strings.Join(strings.Fields(string(data)), " ")
	for _, want := range []string{
		"`go build -v -o bin/vigil ./cmd/vigil`",
		"`go install -v ./cmd/vigil`",
		"skip without `VIGIL_TEST_POSTGRES_DSN`",
		"`. .ci/postgres.sh`",
		"CPU seconds",
	} {
		assert.Contains(t, readme, want)
	}
	script, err := os.ReadFile(".ci/postgres.sh")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^\s*export VIGIL_TEST_POSTGRES_DSN=`, string(script))
	pgtest, err := os.ReadFile("session/pgstore/pgtest/pgtest.go")
	require.NoError(t, err)
	assert.Contains(t, string(pgtest), `EnvDSN = "VIGIL_TEST_POSTGRES_DSN"`)
	assert.Contains(t, string(pgtest), "`. .ci/postgres.sh` starts a throw-away server")
	if _, err := os.Stat("cmd/vigil/main.go"); err != nil {
		t.Fatalf("README builds ./cmd/vigil: %v", err)
	}
}
