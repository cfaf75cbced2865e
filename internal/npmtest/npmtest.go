// Package npmtest finds the npm tools the tests run (a TypeScript client
// generator, a JSON Schema validator, a YAML language server), installed
// by `npm ci` in a testdata folder pinned by its package-lock.json.
package npmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Tool returns the absolute path of file (a command in node_modules/.bin,
// or any path below node_modules) of the npm folder dir, or skips the
// test when node or the folder's packages are not installed — except in
// CI, where .ci/run installs them and their absence fails the test.
func Tool(t *testing.T, dir, file string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node is missing in CI: %v", err)
		}
		t.Skipf("node is not installed: %v", err)
	}
	p, err := filepath.Abs(filepath.Join(dir, "node_modules", file))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing in CI: .ci/run must run npm ci in %s (%v)", file, dir, err)
		}
		t.Skipf("%s is not installed: run `npm ci` in %s (in CI this fails)", file, dir)
	}
	return p
}
