package live_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
)

// Turns run under the store's lease, as package vigil runs them: while
// one holder runs a turn, another process (here a second store over the
// same directory) finds the session busy; the next holder's open repairs
// the turn the first one left open.
func ExampleOpenLeased() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "vigil-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	root := bus.New()
	defer root.Dispose()
	storeA, err := jsonl.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer storeA.Close()
	storeB, err := jsonl.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer storeB.Close()
	a, b := live.NewManager(root.Context(), storeA), live.NewManager(root.Context(), storeB)

	sess, done, err := live.OpenLeased(ctx, a, "", false) // a new session, leased
	if err != nil {
		fmt.Println(err)
		return
	}
	id := sess.ID()
	_, _ = sess.Append(ctx, session.Event{Type: session.TypeTurnStart, Turn: 1})
	_, _ = sess.Append(ctx, session.Event{Type: session.TypeUserMessage, Turn: 1, Data: session.UserMessage{Content: "hello"}})

	_, _, err = live.OpenLeased(ctx, b, id, false)
	fmt.Println("busy:", errors.Is(err, session.ErrLocked))

	_ = done(ctx) // the holder goes away in the middle of its turn
	sess, done, err = live.OpenLeased(ctx, b, id, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done(ctx)
	for _, r := range sess.Records() { // turn/end closes the interrupted turn
		fmt.Println(r.Seq(), r.Type())
	}
	// Output:
	// busy: true
	// 0 turn/start
	// 1 user/message
	// 2 turn/end
}
