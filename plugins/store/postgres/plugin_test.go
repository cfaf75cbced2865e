package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/invariants"
	_ "github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/plugins/store/postgres"
	_ "github.com/vigil-run/vigil/plugins/tools/calc"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	pg "github.com/vigil-run/vigil/session/pgstore"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
)

// compose applies a plugins.yaml whose store is store/postgres in a fresh
// schema, its DSN taken from the environment by ${VAR} expansion.
func compose(t *testing.T, schema string, extra string) *bus.Root {
	t.Helper()
	dsn := pgtest.DSN(t)
	yaml := fmt.Sprintf(`plugins:
  - name: store/postgres
    config: { dsn: "${PGDSN}", schema: %s, lease_ttl: 5s }
  - name: provider/scripted
    config:
      repeat: true
      script:
        - tool_calls: [{ name: calc, arguments: { expression: "6*7" } }]
        - text: "It is 42."
  - name: agent
    config: { system: "Use the calculator.", model: scripted, max_steps: 4 }
  - name: tools/calc
  - name: invariants
    config: { mode: strict }
%s`, schema, extra)
	f, err := config.Parse("plugins.yaml", []byte(yaml), func(name string) (string, bool) {
		if name == "PGDSN" {
			return dsn, true
		}
		return os.LookupEnv(name)
	})
	require.NoError(t, err)
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	_, err = config.Apply(root.Context(), f)
	require.NoError(t, err)
	require.Empty(t, root.Pending())
	return root
}

func TestPluginRunsTurnsThatVerify(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	root := compose(t, schema, "")
	c := root.Context()
	store, err := live.StoreService.Get(c)
	require.NoError(t, err)
	require.IsType(t, &pg.Store{}, store)
	mgr, err := live.Sessions.Get(c)
	require.NoError(t, err)
	agent, err := agentloop.AgentService.Get(c)
	require.NoError(t, err)

	// Two turns, each the way the CLI runs one: under the lease.
	sess, done, err := live.OpenLeased(ctx, mgr, "", false)
	require.NoError(t, err)
	id := sess.ID()
	res, err := agent.Run(ctx, sess, "What is six times seven?")
	require.NoError(t, err)
	require.Equal(t, session.ReasonCompleted, res.Reason)
	require.NoError(t, done(ctx))

	sess, done, err = live.OpenLeased(ctx, mgr, id, false)
	require.NoError(t, err)
	res, err = agent.Run(ctx, sess, "And again?")
	require.NoError(t, err)
	require.Equal(t, session.ReasonCompleted, res.Reason)
	require.NoError(t, done(ctx))

	// Another process's view: the same bytes, and they verify.
	other := pgtest.StoreIn(t, schema)
	data, err := other.Export(ctx, id)
	require.NoError(t, err)
	rep, err := invariants.Verify(bytes.NewReader(data))
	require.NoError(t, err)
	require.Empty(t, rep.Violations)
	require.Greater(t, rep.Events, 20)

	// Disposal closes the store.
	require.NoError(t, root.Dispose())
	_, err = store.Load(ctx, id)
	require.Error(t, err)
}

func TestPluginConfigErrors(t *testing.T) {
	cases := []struct {
		name, config, want string
	}{
		{"missing dsn", `{ schema: x }`, `missing required key "dsn"`},
		{"unknown key", `{ dsn: "x", dns: "y" }`, `dns`},
		{"negative ttl", `{ dsn: "x", lease_ttl: -1s }`, "lease_ttl must not be negative"},
		{"unset variable", `{ dsn: "${VIGIL_NO_SUCH_VARIABLE}" }`, "VIGIL_NO_SUCH_VARIABLE is not set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Parse("plugins.yaml", []byte("plugins:\n  - name: store/postgres\n    config: "+c.config+"\n"), nil)
			require.ErrorContains(t, err, c.want)
		})
	}
}

func TestPluginFailsToApplyWithoutADatabase(t *testing.T) {
	root := bus.New()
	defer root.Dispose()
	_, err := root.Context().Plugin(postgres.Plugin, &postgres.Config{DSN: "postgres://u:secret@127.0.0.1:1/x?sslmode=disable&connect_timeout=1"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "secret")
	_, err = live.Sessions.Get(root.Context())
	require.ErrorIs(t, err, bus.ErrServiceMissing)
}

func TestPluginIsRegistered(t *testing.T) {
	m, ok := bus.LookupModule(postgres.Name)
	require.True(t, ok)
	require.IsType(t, &postgres.Config{}, m.Config())
}
