package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// follower is implemented by stores that can stream a log as it grows
// (store/postgres: LISTEN/NOTIFY, so appends from any process).
type follower interface {
	Follow(ctx context.Context, id string, from int64) iter.Seq2[session.Record, error]
}

// tailPoll is how often a store that cannot follow is read again.
const tailPoll = 250 * time.Millisecond

// sessionsTail prints the log of session id in the JSONL format (the
// header line, then every record) and then each new record as it is
// appended, by this process or any other, until ctx is done (Ctrl-C),
// which ends it without an error. Stores that cannot follow a log are
// read again every quarter second.
func sessionsTail(ctx context.Context, e *env, mgr *live.Manager, id string) error {
	store := mgr.Store()
	log, err := store.Load(ctx, id)
	if err != nil {
		return err
	}
	out := session.AppendHeaderLine(nil, log.Info)
	for _, r := range log.Records {
		out = r.AppendLine(out)
	}
	if _, err := e.stdout.Write(out); err != nil {
		return err
	}
	next := int64(len(log.Records))
	if f, ok := store.(follower); ok {
		for r, err := range f.Follow(ctx, id, next) {
			if err != nil {
				return err
			}
			if _, err := e.stdout.Write(r.AppendLine(out[:0])); err != nil {
				return err
			}
		}
		return nil
	}
	t := time.NewTicker(tailPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		log, err := store.Load(ctx, id)
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil
			}
			return err
		}
		if int64(len(log.Records)) < next {
			return fmt.Errorf("session %s: the log shrank from %d to %d events", id, next, len(log.Records))
		}
		out = out[:0]
		for _, r := range log.Records[next:] {
			out = r.AppendLine(out)
		}
		if _, err := e.stdout.Write(out); err != nil {
			return err
		}
		next = int64(len(log.Records))
	}
}
