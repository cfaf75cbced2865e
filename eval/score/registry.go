package score

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
)

// ErrUnknownScorer is returned by [New] for a name nothing registered.
var ErrUnknownScorer = errors.New("unknown scorer")

// registry holds the factories by name. The built-in scorers register
// themselves in this package's init; a user's program adds its own
// before it runs an eval.
var registry = struct {
	sync.RWMutex
	m map[string]Factory
}{m: map[string]Factory{}}

// Register makes a scorer available to suites under name. It panics
// when name is empty, f is nil or name is taken: like database/sql's
// Register, it is called from init or main with constants, so a clash is
// the program's bug, found on its first run.
func Register(name string, f Factory) {
	if name == "" || f == nil {
		panic("score: Register with an empty name or a nil factory")
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.m[name]; dup {
		panic(fmt.Sprintf("score: Register called twice for scorer %q", name))
	}
	registry.m[name] = f
}

// Names returns the registered scorers' names, sorted.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.m))
	for n := range registry.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// New makes the scorer registered as name from its config (JSON; empty
// or null when the suite gives none). An unknown name is an
// [ErrUnknownScorer] error naming the known ones; a config the scorer
// refuses is its factory's error, a [*ConfigError] naming the key for
// the built-in scorers.
func New(name string, env Env, config json.RawMessage) (Scorer, error) {
	registry.RLock()
	f, ok := registry.m[name]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownScorer, name, strings.Join(Names(), ", "))
	}
	s, err := f(env, config)
	if err != nil {
		return nil, fmt.Errorf("scorer %s: %w", name, err)
	}
	if s == nil {
		return nil, fmt.Errorf("scorer %s: the factory returned no scorer", name)
	}
	return s, nil
}

// Check says whether New would make the scorer registered as name from
// config, and lets go of what it made: an out-of-process scorer is
// started, configured (so its binary, handshake and own config are
// checked too) and stopped. A suite is checked with it before it runs.
func Check(name string, env Env, config json.RawMessage) error {
	s, err := New(name, env, config)
	if err != nil {
		return err
	}
	return Close(s)
}

// Close closes s when it holds something (an io.Closer, like an
// out-of-process scorer); the eval calls it once done with a scorer.
func Close(s Scorer) error {
	if c, ok := s.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
