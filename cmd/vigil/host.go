package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
)

// configError marks a configuration problem (exit 2).
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// host is a running composition: a bus root with plugins.yaml applied.
type host struct {
	root *bus.Root
	comp *config.Composition
	path string
	log  hclog.Logger
	// status is the progress line of the command (see progress.go).
	status *status
}

// newLogger returns the CLI's logger: stderr, level from VIGIL_LOG
// (default warn), colour unless NO_COLOR is set or stderr is not a terminal.
func newLogger(e *env) hclog.Logger { return newLoggerOn(e, e.stderr) }

// newLoggerOn is newLogger writing to w (the status line's log writer).
func newLoggerOn(e *env, w io.Writer) hclog.Logger {
	level := hclog.LevelFromString(e.getenv("VIGIL_LOG"))
	if level == hclog.NoLevel {
		level = hclog.Warn
	}
	color := hclog.ColorOff
	if e.getenv("NO_COLOR") == "" && isTerminal(e.stderr) {
		color = hclog.AutoColor
	}
	return hclog.New(&hclog.LoggerOptions{Name: "vigil", Level: level, Output: w, Color: color})
}

// openHost loads the file at path and applies it. A file that fails to
// load, an entry that fails to apply and a plugin left waiting for a
// service are configuration errors.
func openHost(e *env, path string) (*host, error) {
	return applyHost(e, path, config.Load)
}

// openStoreHost is openHost for the commands that only read stored
// sessions (sessions list, show, export, tail; verify ID): only the store
// entries (plugins named store/…) are applied, so that a variable the
// other entries name (a provider's API key) need not be set for them. A
// broken store entry is still an error.
func openStoreHost(e *env, path string) (*host, error) {
	return applyHost(e, path, func(path string) (*config.File, error) {
		return config.LoadOnly(path, isStore)
	})
}

// isStore reports whether a plugin name is a session store's.
func isStore(name string) bool { return strings.HasPrefix(name, "store/") }

func applyHost(e *env, path string, load func(string) (*config.File, error)) (*host, error) {
	f, err := load(path)
	if err != nil {
		return nil, &configError{err}
	}
	st := newStatus(e)
	log := newLoggerOn(e, st.logWriter())
	root := bus.New(bus.WithLogger(log))
	comp, err := config.Apply(root.Context(), f, startingEntry(st))
	if err != nil {
		st.close()
		_ = root.Dispose()
		return nil, &configError{fmt.Errorf("%s: %w", path, err)}
	}
	if waiting := root.Pending(); len(waiting) > 0 {
		var parts []string
		for _, w := range waiting {
			parts = append(parts, fmt.Sprintf("%s waits for %s", w.Plugin, strings.Join(w.Missing, ", ")))
		}
		st.close()
		_ = root.Dispose()
		return nil, &configError{fmt.Errorf("%s: %s (is a plugin that provides it missing or disabled?)", path, strings.Join(parts, "; "))}
	}
	return &host{root: root, comp: comp, path: path, log: log, status: st}, nil
}

func (h *host) close() error {
	h.status.close()
	return h.root.Dispose()
}

// service reads a service from the host's root context.
func service[T any](h *host, s bus.Service[T]) (T, error) {
	v, err := s.Get(h.root.Context())
	if err != nil {
		var zero T
		if errors.Is(err, bus.ErrServiceMissing) {
			return zero, &configError{fmt.Errorf("%s: no plugin provides %q", h.path, s.Name())}
		}
		return zero, err
	}
	return v, nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	type fder interface{ Fd() uintptr }
	f, ok := w.(fder)
	if !ok {
		return false
	}
	return isatty(f.Fd())
}
