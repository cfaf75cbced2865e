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

var (
	vigilBinOnce sync.Once
	vigilBin     string
	vigilBinErr  error
)

// buildVigil builds the real command once, its version stamped with -X
// as a release build stamps it: signal handling and the stamp live in
// main, which the in-process scripts do not run. (Not -trimpath, which
// would rebuild every package instead of reusing the build cache.)
func buildVigil(t *testing.T) string {
	t.Helper()
	vigilBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vigil-bin")
		if err != nil {
			vigilBinErr = err
			return
		}
		vigilBin = filepath.Join(dir, "vigil")
		out, err := exec.Command("go", "build", "-ldflags", "-X main.version="+testVersion, "-o", vigilBin, ".").CombinedOutput()
		if err != nil {
			vigilBinErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	require.NoError(t, vigilBinErr)
	return vigilBin
}

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
