package bus_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
)

var errNoLimit = errors.New("limit must be positive")

// limits validates itself through a pointer receiver, as the plugins'
// configs do; its zero value is invalid.
type limits struct{ Max int }

func (l *limits) Validate() error {
	if l.Max <= 0 {
		return errNoLimit
	}
	return nil
}

// valueLimits validates itself through a value receiver.
type valueLimits struct{ Max int }

func (l valueLimits) Validate() error {
	if l.Max <= 0 {
		return errNoLimit
	}
	return nil
}

// panicky's Validate panics, as a buggy plugin's may.
type panicky struct{}

func (panicky) Validate() error { panic("validate blew up") }

func TestApplyingValidatesConfigBeforeThePluginRuns(t *testing.T) {
	cases := []struct {
		name    string
		plugin  func(ran *int) bus.Plugin
		cfg     any
		wantErr error // nil: the config is valid and the plugin runs
	}{
		{"func, pointer config", limitsFunc, &limits{}, errNoLimit},
		{"func, value config with pointer Validate", limitsFunc, limits{}, errNoLimit},
		{"func, nil config is the zero config", limitsFunc, nil, errNoLimit},
		{"func, valid config", limitsFunc, &limits{Max: 1}, nil},
		{"func, value Validate", func(ran *int) bus.Plugin {
			return bus.PluginFunc("test/value", func(*bus.Context, valueLimits) error { *ran++; return nil })
		}, valueLimits{}, errNoLimit},
		{"func, pointer C given nil is not validated", func(ran *int) bus.Plugin {
			return bus.PluginFunc("test/ptr", func(*bus.Context, *limits) error { *ran++; return nil })
		}, nil, nil},
		{"func, config of another type", limitsFunc, 42, bus.ErrConfigType},
		{"func, panicking Validate", func(ran *int) bus.Plugin {
			return bus.PluginFunc("test/panicky", func(*bus.Context, panicky) error { *ran++; return nil })
		}, panicky{}, bus.ErrPanic},
		{"own plugin type, value config with pointer Validate", ownFunc, limits{}, errNoLimit},
		{"own plugin type, pointer config", ownFunc, &limits{}, errNoLimit},
		{"own plugin type, valid config", ownFunc, &limits{Max: 2}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := newRoot(t)
			ran := 0
			p := tc.plugin(&ran)
			f, err := root.Context().Plugin(p, tc.cfg)
			require.NotNil(t, f)
			if tc.wantErr == nil {
				require.NoError(t, err)
				assert.Equal(t, 1, ran)
				assert.Equal(t, bus.StateActive, f.State())
				return
			}
			assert.ErrorIs(t, err, tc.wantErr)
			var perr *bus.PluginError
			require.ErrorAs(t, err, &perr)
			assert.Equal(t, "validate", perr.Op)
			assert.Equal(t, p.Name(), perr.Plugin)
			assert.Zero(t, ran, "the plugin ran with an invalid config")
			assert.Equal(t, bus.StateFailed, f.State())
			assert.Equal(t, err, f.Err())
		})
	}
}

func limitsFunc(ran *int) bus.Plugin {
	return bus.PluginFunc("test/limits", func(*bus.Context, limits) error { *ran++; return nil })
}

// ownFunc adapts ownPlugin to the table: ran counts its applies.
func ownFunc(ran *int) bus.Plugin { return &countingOwn{ran: ran} }

type countingOwn struct{ ran *int }

func (p *countingOwn) Name() string                  { return "test/own" }
func (p *countingOwn) Apply(*bus.Context, any) error { *p.ran++; return nil }

// An invalid update is refused before anything is undone: the active
// plugin keeps running with the config it had.
func TestInvalidUpdateIsRefusedAndThePluginKeepsRunning(t *testing.T) {
	cases := []struct {
		name   string
		plugin func(applied *[]int) bus.Plugin
	}{
		{"reloaded plugin", func(applied *[]int) bus.Plugin {
			return bus.PluginFunc("test/limits", func(_ *bus.Context, l limits) error { *applied = append(*applied, l.Max); return nil })
		}},
		{"reconfigured plugin", func(applied *[]int) bus.Plugin { return &reconfigLimits{applied: applied} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := newRoot(t)
			var applied []int
			f := apply(t, root.Context(), tc.plugin(&applied), &limits{Max: 1})
			err := f.Update(&limits{})
			assert.ErrorIs(t, err, errNoLimit)
			var perr *bus.PluginError
			require.ErrorAs(t, err, &perr)
			assert.Equal(t, "validate", perr.Op)
			assert.Equal(t, bus.StateActive, f.State())
			assert.Equal(t, &limits{Max: 1}, f.Config())
			assert.Equal(t, uint64(1), f.Generation())
			assert.Equal(t, []int{1}, applied)

			require.NoError(t, f.Update(&limits{Max: 3}))
			assert.Equal(t, []int{1, 3}, applied)
		})
	}
}

type reconfigLimits struct{ applied *[]int }

func (p *reconfigLimits) Name() string { return "test/reconfig" }
func (p *reconfigLimits) Apply(_ *bus.Context, cfg any) error {
	return p.Reconfigure(nil, cfg)
}
func (p *reconfigLimits) Reconfigure(_ *bus.Context, cfg any) error {
	l, err := bus.ConfigAs[limits](cfg)
	if err != nil {
		return err
	}
	*p.applied = append(*p.applied, l.Max)
	return nil
}

// A pending plugin's config is validated too: it fails at once rather
// than waiting for services to learn its config was wrong.
func TestPendingPluginWithInvalidConfigFailsAtOnce(t *testing.T) {
	root := newRoot(t)
	svc := bus.NewService[int]("test/never")
	ran := false
	p := bus.PluginFunc("test/limits", func(*bus.Context, limits) error { ran = true; return nil }, bus.Requires(svc))
	f, err := root.Context().Plugin(p, &limits{})
	assert.ErrorIs(t, err, errNoLimit)
	assert.Equal(t, bus.StateFailed, f.State())
	assert.Empty(t, root.Pending())
	_, err = svc.Provide(root.Context(), 1)
	require.NoError(t, err)
	assert.False(t, ran)
	assert.Equal(t, bus.StateFailed, f.State())
}

// Dependencies are declared with the typed keys: a required Service keeps
// the plugin pending until it is provided, an optional ServiceSet lets it
// read the set's current members.
func TestDependenciesAreDeclaredWithTypedKeys(t *testing.T) {
	root := newRoot(t)
	db := bus.NewService[*store]("test/db")
	tools := bus.NewServiceSet[int]("test/tool/")
	var got []bus.Named[int]
	applies := 0
	p := bus.PluginFunc("test/reader", func(c *bus.Context, _ struct{}) error {
		applies++
		if _, err := db.Get(c); err != nil {
			return err
		}
		var err error
		got, err = tools.Lookup(c)
		return err
	}, bus.Requires(db), bus.Optional(tools))
	_, err := tools.Key("a").Provide(root.Context(), 1)
	require.NoError(t, err)

	f := apply(t, root.Context(), p, nil)
	assert.Equal(t, bus.StatePending, f.State())
	assert.Equal(t, []bus.Waiting{{Plugin: "test/reader", Missing: []string{"test/db"}}}, root.Pending())

	_, err = db.Provide(root.Context(), &store{"pg"})
	require.NoError(t, err)
	assert.Equal(t, bus.StateActive, f.State())
	assert.Equal(t, []bus.Named[int]{{Name: "test/tool/a", Value: 1}}, got)

	// A new member of an optional set does not reload the plugin.
	_, err = tools.Key("b").Provide(root.Context(), 2)
	require.NoError(t, err)
	assert.Equal(t, 1, applies)
	assert.Equal(t, "test/tool/*", tools.Name())
}
