package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain makes the test binary double as the vigil command for the
// scripts under testdata/script.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"vigil": func() {
			code := run(context.Background(), &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}, os.Args[1:])
			// Scripts assert exit codes through this line.
			if os.Getenv("VIGIL_SHOW_EXIT") != "" {
				fmt.Fprintf(os.Stderr, "[exit %d]\n", code)
			}
			os.Exit(code)
		},
	})
}

// TestScripts runs every command of the CLI as a user would, one txtar
// script per behaviour under testdata/script.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			e.Setenv("VIGIL_SHOW_EXIT", "1")
			e.Setenv("NO_COLOR", "1")
			// The built-in composition's sessions stay in the script's
			// folder: HOME is /no-home, which a run as root would create
			// and share between scripts and runs.
			e.Setenv("XDG_STATE_HOME", filepath.Join(e.WorkDir, ".state"))
			return nil
		},
	})
}
