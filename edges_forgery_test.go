package vigil_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	pgplugin "github.com/vigil-run/vigil/plugins/store/postgres"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
)

// TestASwappedChildBreaksTheParentsRoot: a delegation's tool/result binds
// the child's log by the root of its tree, so a child log edited where
// no delegation check looks (its system prompt) is an edge-mismatch of
// verify --tree, in a file as in PostgreSQL rows rewritten in place,
// while the untouched child and an unbound result (a log written before
// results carried a root) pass as before.
func TestASwappedChildBreaksTheParentsRoot(t *testing.T) {
	for _, c := range []struct {
		name  string
		store func(t *testing.T) (config.Entry, func(t *testing.T, child *session.Log) *session.Log)
	}{
		{"a log's bytes", func(t *testing.T) (config.Entry, func(t *testing.T, child *session.Log) *session.Log) {
			return vigil.Plugin("store/memory", nil), func(t *testing.T, child *session.Log) *session.Log {
				var data []byte
				data = session.AppendHeaderLine(data, child.Info)
				for _, r := range child.Records {
					data = r.AppendLine(data)
				}
				require.Contains(t, string(data), "You research.")
				swapped, err := session.DecodeBytes(bytes.ReplaceAll(data, []byte("You research."), []byte("You obey.")))
				require.NoError(t, err)
				return swapped
			}
		}},
		{"postgres rows", func(t *testing.T) (config.Entry, func(t *testing.T, child *session.Log) *session.Log) {
			dsn, schema := pgtest.DSN(t), pgtest.Schema(t)
			entry := vigil.Plugin("store/postgres", &pgplugin.Config{DSN: dsn, Schema: schema})
			return entry, func(t *testing.T, child *session.Log) *session.Log {
				ctx := context.Background()
				conn, err := pgx.Connect(ctx, dsn)
				require.NoError(t, err)
				defer func() { _ = conn.Close(ctx) }()
				tag, err := conn.Exec(ctx, `UPDATE `+schema+`.vigil_events
					SET line = convert_to(replace(convert_from(line, 'UTF8'), 'You research.', 'You obey.'), 'UTF8')
					WHERE session_id = $1 AND convert_from(line, 'UTF8') LIKE '%You research.%'`, child.Info.ID)
				require.NoError(t, err)
				require.Positive(t, tag.RowsAffected())
				store, err := pgstore.Open(ctx, dsn, pgstore.WithSchema(schema))
				require.NoError(t, err)
				defer func() { _ = store.Close() }()
				swapped, err := store.Load(ctx, child.Info.ID)
				require.NoError(t, err)
				return swapped
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			store, swap := c.store(t)
			checkChildSwap(t, store, swap)
		})
	}
}

// checkChildSwap runs a delegation on store and swaps the child's log
// with swap.
func checkChildSwap(t *testing.T, store config.Entry, swap func(t *testing.T, child *session.Log) *session.Log) {
	ctx := context.Background()
	rt := open(t, delegatingOn(store, agentloop.Config{},
		scripted.Reply{ToolCalls: []scripted.ToolCall{research("why?")}},
		scripted.Reply{Text: "because"},
		scripted.Reply{Text: "done"},
	))
	res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "plan"})
	require.NoError(t, err)
	parent, err := rt.Session(ctx, res.Session)
	require.NoError(t, err)
	rs := results(t, parent)
	require.Len(t, rs, 1)
	require.NotNil(t, rs[0].Child)
	child, err := rt.Session(ctx, rs[0].Child.ID)
	require.NoError(t, err)
	assert.Equal(t, session.RootOf(child.Records[:rs[0].Child.Seq+1]), rs[0].Child.Root, "the result binds the child's log as it stood")

	errs, checked := session.CheckDelegations(parent, map[string]*session.Log{child.Info.ID: child})
	require.Empty(t, errs)
	require.Equal(t, 1, checked)

	// The swapped child: the same task and answer, another system prompt.
	swapped := swap(t, child)
	errs, _ = session.CheckDelegations(parent, map[string]*session.Log{child.Info.ID: swapped})
	require.Len(t, errs, 1)
	assert.Equal(t, session.RuleEdgeMismatch, errs[0].Rule)
	assert.Contains(t, errs[0].Msg, "swapped or edited")

	// A result without a root is not bound: the same swap passes the
	// delegation checks, as it did before results bound their child.
	var unbound []byte
	unbound = session.AppendHeaderLine(unbound, parent.Info)
	for _, r := range parent.Records {
		unbound = r.AppendLine(unbound)
	}
	unbound = bytes.ReplaceAll(unbound, []byte(`,"root":"`+rs[0].Child.Root+`"`), nil)
	old, err := session.DecodeBytes(unbound)
	require.NoError(t, err)
	errs, _ = session.CheckDelegations(old, map[string]*session.Log{child.Info.ID: swapped})
	assert.Empty(t, errs)
}
