//go:build unix

package external_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/external"
	"github.com/vigil-run/vigil/plugins/external/sdk"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// roundTrip is one user/message record and the commit that dispatches it.
func roundTrip(b *testing.B, c *bus.Context) (*live.Session, live.Commit) {
	b.Helper()
	mgr := live.NewManager(c, memory.New())
	sess, err := mgr.Create(context.Background())
	require.NoError(b, err)
	// A commit is made only by an append: the one of this record,
	// observed, is dispatched again by the benchmarks.
	var commit live.Commit
	dispose := live.Committed.On(c, func(_ context.Context, cm live.Commit) error {
		commit = cm
		return nil
	})
	_, err = sess.Append(context.Background(), session.Event{
		Type: session.TypeUserMessage, Data: session.UserMessage{Content: "what is the distance to the moon in miles?"},
	})
	dispose()
	require.NoError(b, err)
	require.False(b, commit.IsZero())
	return sess, commit
}

// BenchmarkExternalEventRoundTrip measures one session event sent to an
// out-of-process plugin for pre-commit validation and its answer: the
// veto phase of an append, over gRPC with mutual TLS on a unix socket.
func BenchmarkExternalEventRoundTrip(b *testing.B) {
	root := bus.New()
	defer root.Dispose()
	c := root.Context()
	_, err := c.Plugin(external.New(), &external.Config{Path: bins["testplugin"]})
	require.NoError(b, err)
	sess, commit := roundTrip(b, c)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := live.Committed.Check(ctx, sess.Context(), commit); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInProcessEventRoundTrip is the same validation by an
// in-process plugin: a veto listener that hands the record to the same
// kind of hook.
func BenchmarkInProcessEventRoundTrip(b *testing.B) {
	root := bus.New()
	defer root.Dispose()
	c := root.Context()
	validate := func(_ context.Context, ev *sdk.Event) error {
		if ev.Type != session.TypeUserMessage {
			return nil
		}
		return nil
	}
	_, err := c.Plugin(bus.PluginFunc("inproc", func(c *bus.Context, _ struct{}) error {
		bus.Veto.On(c, func(ctx context.Context, d bus.Dispatch) error {
			if d.Name != live.Committed.Name() {
				return nil
			}
			cm, ok := d.Payload.(live.Commit)
			if !ok || cm.Record().Type() != session.TypeUserMessage {
				return nil
			}
			return validate(ctx, &sdk.Event{Session: cm.Session().ID(), Seq: cm.Record().Seq(), Type: cm.Record().Type(), Line: cm.Record().Bytes()})
		})
		return nil
	}), nil)
	require.NoError(b, err)
	sess, commit := roundTrip(b, c)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := live.Committed.Check(ctx, sess.Context(), commit); err != nil {
			b.Fatal(err)
		}
	}
}
