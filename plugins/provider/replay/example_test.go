package replay_test

import (
	"context"
	"fmt"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// Record a turn with one model, then run it again with the recording
// answering llm/stream itself: the other model is never called and the
// requests are the same.
func ExampleListen() {
	ctx := context.Background()
	turn := func(c *bus.Context, p agentloop.Provider) *live.Session {
		sess, _ := live.NewManager(c, memory.New()).Create(ctx)
		a := agentloop.New(c, agentloop.Config{System: "Be brief."}, agentloop.WithProvider(p), agentloop.WithTools())
		_, _ = a.Run(ctx, sess, "Say hello.")
		return sess
	}

	first := bus.New()
	defer first.Dispose()
	model, _ := scripted.New(scripted.Config{Script: []scripted.Reply{{Text: "Hello!"}}})
	orig := turn(first.Context(), model)

	rec, _ := replay.FromRecords(orig.Records())
	second := bus.New()
	defer second.Dispose()
	p := replay.New(rec)
	p.Verify = true // a request whose sealed digest differs from the recorded one fails
	replay.Listen(second.Context(), p)
	unused, _ := scripted.New(scripted.Config{Script: []scripted.Reply{{Text: "never sent"}}})
	again := turn(second.Context(), unused)

	fmt.Println(again.Messages()[1].Content)
	// Nothing was handed to a provider: no request/digest is logged.
	fmt.Println("digests logged:", len(digestsOf(orig)), len(digestsOf(again)))
	fmt.Println("other model called:", unused.Calls())
	fmt.Println("recording used up:", p.Check() == nil)
	// Output:
	// Hello!
	// digests logged: 1 0
	// other model called: 0
	// recording used up: true
}

func digestsOf(s *live.Session) []string {
	var out []string
	for _, r := range s.Records() {
		if d, err := session.DecodeData[session.Digest](r); err == nil && r.Type() == session.TypeRequestDigest {
			out = append(out, d.SHA256)
		}
	}
	return out
}
