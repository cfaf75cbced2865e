package providertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// Turn is one turn the real agent loop ran with a provider.
type Turn struct {
	Result *agentloop.TurnResult
	Err    error
	// Log is the session's log, one canonical line per event.
	Log string
}

// RunTurn runs one turn of the agent loop on a fresh in-memory session
// with p as the provider, retrying without delay, so a test sees how many
// attempts the loop made (count the server's requests) and what the log
// recorded.
func RunTurn(t testing.TB, p agentloop.Provider, prompt string) Turn {
	t.Helper()
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sess, err := live.NewManager(root.Context(), memory.New()).Create(ctx)
	if err != nil {
		t.Fatalf("providertest: creating a session: %v", err)
	}
	agent := agentloop.New(root.Context(), agentloop.Config{},
		agentloop.WithProvider(p),
		agentloop.WithTools(),
		agentloop.WithBackoff(func(int, *agentloop.ProviderError) time.Duration { return 0 }))
	res, err := agent.Run(ctx, sess, prompt)
	var log strings.Builder
	for _, r := range sess.Records() {
		log.WriteString(r.String())
		log.WriteByte('\n')
	}
	return Turn{Result: res, Err: err, Log: log.String()}
}
