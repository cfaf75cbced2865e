package score_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// binDir holds the scorer plugins the tests build, once.
var binDir struct {
	once sync.Once
	dir  string
	err  error
}

// pluginBins are the scorer plugins, by the package they are built from.
var pluginBins = map[string]string{
	"lengthscorer": "../../examples/plugins/lengthscorer",
	"unruly":       "./testdata/unruly",
}

// pluginBin builds the scorer plugins (on first use) and returns the
// path of name's binary.
func pluginBin(t *testing.T, name string) string {
	t.Helper()
	binDir.once.Do(func() {
		binDir.dir, binDir.err = os.MkdirTemp("", "vigil-score-test-")
		for n, pkg := range pluginBins {
			if binDir.err != nil {
				return
			}
			out, err := exec.Command("go", "build", "-o", filepath.Join(binDir.dir, n), pkg).CombinedOutput()
			if err != nil {
				binDir.err = fmt.Errorf("building %s: %w\n%s", pkg, err, out)
			}
		}
	})
	if binDir.err != nil {
		t.Fatal(binDir.err)
	}
	return filepath.Join(binDir.dir, name)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir.dir != "" {
		_ = os.RemoveAll(binDir.dir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
