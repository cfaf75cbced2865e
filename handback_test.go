package vigil_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	jsonlstore "github.com/vigil-run/vigil/plugins/store/jsonl"
	pgplugin "github.com/vigil-run/vigil/plugins/store/postgres"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
)

// hanger is a tool that runs until the test lets it go, whatever its
// context says: a turn that outlasts any drain.
type hanger struct {
	mu      sync.Mutex
	started chan struct{}
	release chan struct{}
}

func (h *hanger) reset() (started, release chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.started, h.release = make(chan struct{}, 1), make(chan struct{})
	return h.started, h.release
}

func (h *hanger) Spec() session.ToolSpec {
	return session.ToolSpec{Name: "hang", Description: "hangs", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (h *hanger) Execute(context.Context, json.RawMessage) (string, error) {
	h.mu.Lock()
	started, release := h.started, h.release
	h.mu.Unlock()
	started <- struct{}{}
	<-release
	return "let go", nil
}

var theHanger = &hanger{}

func init() {
	bus.RegisterFunc("test/hang", "a tool that hangs until the test lets it go", func(c *bus.Context, _ struct{}) error {
		_, err := agentloop.ProvideTool(c, theHanger)
		return err
	})
}

// TestADrainThatRunsOutHandsTheJobBack: a worker whose drain runs out
// with a turn still running hands the job back at once: another worker
// (another store on the same directory or database, as another process
// has) claims it right away, not once a lease expired (30 s here), and
// carries the turn on to its end; the first worker's turn, let go after
// the hand-back, writes nothing more, and the log verifies.
func TestADrainThatRunsOutHandsTheJobBack(t *testing.T) {
	for _, c := range []struct {
		name  string
		store func(t *testing.T) storeEntry
	}{
		{"jsonl", func(t *testing.T) storeEntry {
			dir := t.TempDir()
			return func() config.Entry { return vigil.Plugin("store/jsonl", &jsonlstore.Config{Dir: dir}) }
		}},
		{"postgres", func(t *testing.T) storeEntry {
			dsn, schema := pgtest.DSN(t), pgtest.Schema(t)
			return func() config.Entry {
				return vigil.Plugin("store/postgres", &pgplugin.Config{DSN: dsn, Schema: schema, LeaseTTL: 30 * time.Second})
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := c.store(t)
			started, release := theHanger.reset()
			ctx := context.Background()
			a := open(t, handBackAgent(store, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "hang", Arguments: map[string]any{}}}}))
			b := open(t, handBackAgent(store, scripted.Reply{Text: "carried on"}))
			id, err := a.NewSession(ctx)
			require.NoError(t, err)
			_, _, err = a.QueueTurn(ctx, id, "hang")
			require.NoError(t, err)

			stopA, cancelA := context.WithCancel(ctx)
			worked := make(chan error, 1)
			go func() { worked <- a.Work(stopA, vigil.WorkOptions{Worker: "a", Drain: 100 * time.Millisecond}) }()
			select {
			case <-started:
			case <-time.After(30 * time.Second):
				t.Fatal("the turn did not reach the tool")
			}
			cancelA()
			select {
			case err := <-worked:
				require.ErrorIs(t, err, vigil.ErrHandedBack)
			case <-time.After(30 * time.Second):
				t.Fatal("the drain did not end")
			}

			// The first worker's turn goes on, and must write nothing: the
			// job is not its own any more.
			close(release)
			time.Sleep(300 * time.Millisecond)

			handedBack := time.Now()
			done := make(chan session.Job, 1)
			stopB, cancelB := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Go(func() {
				_ = b.Work(stopB, vigil.WorkOptions{Worker: "b", OnJob: func(j session.Job, _ *vigil.Result, err error) {
					assert.NoError(t, err)
					done <- j
				}})
			})
			defer func() { cancelB(); wg.Wait() }()
			select {
			case j := <-done:
				assert.Equal(t, 2, j.Attempts, "claimed again")
				t.Logf("the other worker carried the job on %s after the hand-back", time.Since(handedBack).Round(time.Millisecond))
			case <-time.After(10 * time.Second):
				t.Fatal("the other worker did not claim the job within 10 s of the hand-back")
			}

			log, err := b.Session(ctx, id)
			require.NoError(t, err)
			verified(t, log)
			var ends []string
			for _, r := range log.Records {
				if r.Type() == session.TypeTurnEnd {
					te, err := session.DecodeData[session.TurnEnd](r)
					require.NoError(t, err)
					ends = append(ends, te.Reason)
				}
				if r.Type() == session.TypeToolResult {
					res, err := session.DecodeData[session.ToolResult](r)
					require.NoError(t, err)
					assert.NotEqual(t, "let go", res.Content, "the first worker wrote after handing the job back")
				}
			}
			assert.Equal(t, []string{session.ReasonInterrupted, session.ReasonCompleted}, ends)
			q, err := b.Queue()
			require.NoError(t, err)
			left, err := q.Jobs(ctx, id)
			require.NoError(t, err)
			assert.Empty(t, left)
		})
	}
}

// storeEntry makes the store's composition entry anew for each runtime.
type storeEntry func() config.Entry

func handBackAgent(store storeEntry, reply scripted.Reply) vigil.Source {
	return vigil.Compose(
		store(),
		vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{reply}, Repeat: true}),
		vigil.Plugin("test/hang", nil),
		vigil.Plugin("agent", nil),
	)
}
