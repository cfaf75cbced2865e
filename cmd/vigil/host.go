package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/vigil-run/vigil/session/live"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
)

// configError marks a configuration problem (exit 2).
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// host is a running composition: the vigil runtime of a plugins.yaml (or
// the built-in one), and what the commands print about it.
type host struct {
	rt   *vigil.Runtime
	comp *config.Composition
	// path is the file applied, or builtinName.
	path string
	// builtin is set when no plugins.yaml was found and the built-in
	// composition runs: there is no file to watch.
	builtin bool
	log     hclog.Logger
	// status is the progress line of the command (see progress.go).
	status *status
}

// newLogger returns the CLI's logger: stderr, level from --log-level, else
// VIGIL_LOG (default warn), colour unless NO_COLOR is set or stderr is not
// a terminal.
func newLogger(e *env) hclog.Logger {
	return newLoggerTo(e, e.stderr)
}

// newLoggerTo is newLogger writing to w, a writer in front of e.stderr
// (the status line's log writer).
func newLoggerTo(e *env, w io.Writer) hclog.Logger {
	level := hclog.LevelFromString(e.logLevel)
	if level == hclog.NoLevel {
		level = hclog.LevelFromString(e.getenv("VIGIL_LOG"))
	}
	if level == hclog.NoLevel {
		level = hclog.Warn
	}
	json := e.logFormat == logFormatJSON
	color := hclog.ColorOff
	if !json && e.getenv("NO_COLOR") == "" && isTerminal(e.stderr) {
		color = hclog.ForceColor
	}
	return hclog.New(&hclog.LoggerOptions{Name: "vigil", Level: level, Output: w, Color: color, JSONFormat: json})
}

// openHost loads the composition -c names (cfg; see resolveConfig) and
// applies it. A file that fails to load, an entry that fails to apply and
// a plugin left waiting for a service are configuration errors. Without
// a plugins.yaml it says on stderr that the built-in composition runs.
func openHost(e *env, cfg string) (*host, error) {
	path, builtin := resolveConfig(cfg)
	if builtin {
		f, err := builtinFile(e, nil)
		if err != nil {
			return nil, err
		}
		e.notef("no plugins.yaml here: running the built-in composition (an offline scripted model; 'vigil init' writes it to a file to edit)")
		return applyHost(e, f, true)
	}
	f, err := config.Load(path)
	if err != nil {
		return nil, &configError{err}
	}
	return applyHost(e, f, false)
}

// openStoreHost is openHost for the commands that only read stored
// sessions (sessions list, show, export, tail; verify ID; completions):
// only the store entries (plugins named store/…) are applied, so that a
// variable the other entries name (a provider's API key) need not be set
// for them. A broken store entry is still an error.
func openStoreHost(e *env, cfg string) (*host, error) {
	path, builtin := resolveConfig(cfg)
	if builtin {
		f, err := builtinFile(e, isStore)
		if err != nil {
			return nil, err
		}
		return applyHost(e, f, true)
	}
	f, err := config.LoadOnly(path, isStore)
	if err != nil {
		return nil, &configError{err}
	}
	return applyHost(e, f, false)
}

// isStore reports whether a plugin name is a session store's.
func isStore(name string) bool { return strings.HasPrefix(name, "store/") }

func applyHost(e *env, f *config.File, builtin bool) (*host, error) {
	path := f.Path
	st := newStatus(e)
	out := &startupLog{w: st.logWriter(), holding: true}
	log := newLoggerTo(e, out)
	rt, err := vigil.Open(context.Background(), func() (*config.File, error) { return f, nil },
		vigil.WithLogger(log), vigil.WithApplyOptions(startingEntry(st)))
	out.release(err)
	if err != nil {
		// A file that fails to apply, a plugin left waiting for a service.
		st.close()
		return nil, &configError{err}
	}
	return &host{rt: rt, comp: rt.Composition(), path: path, builtin: builtin, log: log, status: st}, nil
}

// startupLog is the log's output while a composition is applied. The bus
// logs a plugin's failure to apply ("apply failed", "invalid config") and
// also returns it, and config.Apply returns it with the entry's line,
// which the command prints: such lines are held until Apply returns, and
// only those whose error Apply did not return (a plugin that failed when a
// later entry provided what it waited for) are written then. Every other
// line passes at once.
type startupLog struct {
	w       io.Writer
	mu      sync.Mutex
	holding bool
	held    [][]byte
}

// failureLine finds the error of a bus failure line: `… apply failed:
// error="…"`.
var failureLine = regexp.MustCompile(` (?:apply failed|invalid config): error=("(?:[^"\\]|\\.)*"|\S+)`)

func (l *startupLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holding && failureLine.Match(p) {
		l.held = append(l.held, append([]byte(nil), p...))
		return len(p), nil
	}
	return l.w.Write(p)
}

// release writes the held lines whose error applyErr does not contain and
// lets every later line pass.
func (l *startupLog) release(applyErr error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holding = false
	for _, line := range l.held {
		if applyErr != nil {
			m := failureLine.FindSubmatch(line)
			msg := string(m[1])
			if u, err := strconv.Unquote(msg); err == nil {
				msg = u
			}
			// The command's message may say the plugin's name once where
			// the plugin's error began with it.
			_, rest, _ := strings.Cut(msg, ": ")
			if strings.Contains(applyErr.Error(), msg) || rest != "" && strings.Contains(applyErr.Error(), rest) {
				continue
			}
		}
		_, _ = l.w.Write(line)
	}
	l.held = nil
}

func (h *host) close() error {
	h.status.close()
	return h.rt.Close()
}

// service reads a service from the host's root context.
// storedSessions returns the session manager of the -c composition's
// store, opening the store host the first time (*h keeps it for the
// command's other arguments).
func storedSessions(e *env, cfg string, h **host) (*live.Manager, error) {
	if *h == nil {
		var err error
		if *h, err = openStoreHost(e, cfg); err != nil {
			return nil, err
		}
	}
	return service(*h, live.Sessions)
}

func service[T any](h *host, s bus.Service[T]) (T, error) {
	v, err := s.Get(h.rt.Context())
	if err != nil {
		var zero T
		if errors.Is(err, bus.ErrServiceMissing) {
			return zero, &configError{fmt.Errorf("%s: no plugin provides %q", h.path, s.Name())}
		}
		return zero, err
	}
	return v, nil
}

// isTerminal reports whether the stream s (an io.Reader or io.Writer)
// is a terminal.
func isTerminal(s any) bool {
	type fder interface{ Fd() uintptr }
	f, ok := s.(fder)
	if !ok {
		return false
	}
	return isatty(f.Fd())
}
