package storeplugin_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/store/jsonl"
	"github.com/vigil-run/vigil/plugins/store/memory"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

func apply(t *testing.T, r *bus.Root, name string, configure func(cfg any)) *bus.Fiber {
	t.Helper()
	m, ok := bus.LookupModule(name)
	require.True(t, ok, name)
	var cfg any
	if m.Config != nil {
		cfg = m.Config()
		if configure != nil {
			configure(cfg)
		}
	}
	f, err := r.Context().Plugin(m.New(), cfg)
	require.NoError(t, err)
	return f
}

func TestStorePluginsProvideSessionsAndStore(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name      string
		configure func(any)
		durable   bool
	}{
		{memory.Name, nil, false},
		{jsonl.Name, func(cfg any) { cfg.(*jsonl.Config).Dir = dir }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := bus.New()
			defer r.Dispose()
			f := apply(t, r, tc.name, tc.configure)
			mgr, err := live.Sessions.Get(r.Context())
			require.NoError(t, err)
			store, err := live.StoreService.Get(r.Context())
			require.NoError(t, err)
			assert.Same(t, store, mgr.Store())

			s, err := mgr.Create(ctx)
			require.NoError(t, err)
			_, err = s.Append(ctx, session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "kept"}})
			require.NoError(t, err)

			// Disposing closes the sessions (flushing them) and the store.
			require.NoError(t, f.Dispose())
			_, err = live.Sessions.Get(r.Context())
			require.ErrorIs(t, err, bus.ErrServiceMissing)
			if !tc.durable {
				return
			}
			_, err = os.Stat(filepath.Join(dir, s.ID()+".jsonl"))
			require.NoError(t, err)
			apply(t, r, tc.name, tc.configure)
			mgr, err = live.Sessions.Get(r.Context())
			require.NoError(t, err)
			again, err := mgr.Open(ctx, s.ID())
			require.NoError(t, err)
			assert.Equal(t, "kept", again.Messages()[0].Content)
		})
	}
}

func TestJSONLDefaultsToDotVigil(t *testing.T) {
	t.Chdir(t.TempDir())
	r := bus.New()
	defer r.Dispose()
	apply(t, r, jsonl.Name, nil)
	mgr, err := live.Sessions.Get(r.Context())
	require.NoError(t, err)
	s, err := mgr.Create(context.Background())
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(jsonl.DefaultDir, s.ID()+".jsonl"))
	assert.NoError(t, err)
}
