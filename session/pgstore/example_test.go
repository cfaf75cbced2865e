package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/pgstore"
)

// Running one turn of a shared session: take its lease (or learn that a
// turn is running elsewhere), open it afresh, append, and let go.
func Example_leased() {
	ctx := context.Background()
	store, err := pgstore.Open(ctx, os.Getenv("VIGIL_POSTGRES_DSN"), pgstore.WithSchema("vigil"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	root := bus.New()
	defer root.Dispose()
	mgr := live.NewManager(root.Context(), store)

	sess, done, err := live.OpenLeased(ctx, mgr, "01JDSESSION", false)
	if errors.Is(err, pgstore.ErrBusy) {
		fmt.Println("busy:", err) // names the holder and when its lease expires
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done(ctx)
	_, err = sess.Append(ctx, session.Event{Type: session.TypeTurnStart, Turn: 1})
	fmt.Println(err)
}

// Following a session as any process appends to it.
func ExampleStore_Follow() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := pgstore.Open(ctx, os.Getenv("VIGIL_POSTGRES_DSN"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	for r, err := range store.Follow(ctx, "01JDSESSION", 0) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(r) // the canonical JSONL line
	}
}
