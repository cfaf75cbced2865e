package main

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil/config"
	jsonlplugin "github.com/vigil-run/vigil/plugins/store/jsonl"

	// The built-in plugins register themselves by name when imported.
	_ "github.com/vigil-run/vigil/invariants"
	_ "github.com/vigil-run/vigil/plugins"
)

// defaultConfigFile is the file -c defaults to, in the working directory.
const defaultConfigFile = "plugins.yaml"

// builtinName names the built-in composition in messages.
const builtinName = "built-in plugins.yaml"

// defaultComposition is the built-in composition, which runs where no
// plugins.yaml is found (after `go install`, outside a project), and the
// file `vigil init` writes.
//
//go:embed default.yaml
var defaultComposition []byte

// resolveConfig returns the plugins.yaml that -c (flag) names: flag when
// given, else ./plugins.yaml when it exists, else none (builtin).
func resolveConfig(flag string) (path string, builtin bool) {
	if flag != "" {
		return flag, false
	}
	if _, err := os.Stat(defaultConfigFile); errors.Is(err, fs.ErrNotExist) {
		return builtinName, true
	}
	return defaultConfigFile, false
}

// builtinFile decodes the built-in composition, with store/jsonl keeping
// sessions in the per-user state directory instead of the working one:
// runs from anywhere share them. Entries only refuses are disabled.
func builtinFile(e *env, only func(string) bool) (*config.File, error) {
	f, err := config.Parse(builtinName, defaultComposition, func(string) (string, bool) { return "", false })
	if err != nil {
		return nil, &configError{err}
	}
	dir, err := stateDir(e)
	if err != nil {
		return nil, &configError{err}
	}
	for i := range f.Entries {
		ent := &f.Entries[i]
		if c, ok := ent.Config.(*jsonlplugin.Config); ok && ent.Name == jsonlplugin.Name {
			c.Dir = filepath.Join(dir, "sessions")
		}
		if only != nil && !only(ent.Name) {
			ent.Disabled = true
		}
	}
	return f, nil
}

// stateDir is Vigil's per-user state directory (XDG Base Directory):
// $XDG_STATE_HOME/vigil, or ~/.local/state/vigil when it is unset or not
// absolute.
func stateDir(e *env) (string, error) {
	if d := e.getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "vigil"), nil
	}
	home := e.getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("no per-user state directory for sessions (set XDG_STATE_HOME or HOME, or write a plugins.yaml with 'vigil init'): %w", err)
		}
	}
	return filepath.Join(home, ".local", "state", "vigil"), nil
}

func newInitCmd(e *env) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "init [FILE]",
		Short: "Write a commented plugins.yaml to start from",
		Long: `Write the built-in composition, commented, to FILE (default plugins.yaml in
the current directory): an offline scripted model, with OpenAI-compatible and
Anthropic providers ready to enable, the tools/fs and tools/calc tools, strict
invariants, and sessions under .vigil/sessions. An existing file is kept
unless --force is given (exit 1).`,
		Example: `  vigil init
  vigil init agents/dev.yaml && vigil run -c agents/dev.yaml "hi"`,
		Args: cobra.MaximumNArgs(1),
		RunE: action(func(_ *cobra.Command, args []string) error {
			path := defaultConfigFile
			if len(args) == 1 {
				path = args[0]
			}
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, flags, 0o644)
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s exists; not overwritten (--force overwrites it)", path)
			}
			if err != nil {
				return err
			}
			if _, err := f.Write(defaultComposition); err != nil {
				_ = f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "wrote %s; try: vigil run%s \"What is in this folder?\"\n", path, configArg(path))
			return nil
		}),
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite an existing file")
	return cmd
}

// configArg is the -c argument that selects path, none for the default.
func configArg(path string) string {
	if path == defaultConfigFile {
		return ""
	}
	return " -c " + path
}
