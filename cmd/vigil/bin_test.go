package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testVersion is the version the test binary is stamped with, as a
// release build stamps one.
const testVersion = "v0.0.0-test.1"

// binary is a program the tests build once, on first use.
type binary struct {
	once sync.Once
	path string
	err  error
	name string
	args []string // go build's, before -o
	pkg  string
}

// build builds b once and returns its path.
func (b *binary) build(t *testing.T) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "vigil-bin")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, b.name)
		args := append(append([]string{"build"}, b.args...), "-o", b.path, b.pkg)
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	require.NoError(t, b.err)
	return b.path
}

// vigilBin is the real command, its version stamped with -X as a
// release build stamps it: signal handling and the stamp live in main,
// which the in-process scripts do not run. (Not -trimpath, which would
// rebuild every package instead of reusing the build cache.)
var vigilBin = &binary{name: "vigil", args: []string{"-ldflags", "-X main.version=" + testVersion}, pkg: "."}

// buildVigil builds the real command once.
func buildVigil(t *testing.T) string { return vigilBin.build(t) }

// TestVersionIsTheStampOfAReleaseBuild: `vigil version` and `vigil
// --version` print the version -ldflags "-X main.version=…" stamped.
func TestVersionIsTheStampOfAReleaseBuild(t *testing.T) {
	bin := buildVigil(t)
	out, err := exec.Command(bin, "version").Output()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(out), "vigil "+testVersion+" go1."), "%s", out)
	out, err = exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	assert.Equal(t, "vigil "+testVersion+"\n", string(out))
}
