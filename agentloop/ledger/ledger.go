package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

var (
	// ErrNoKey: Do was called outside a tool call (its context carries no
	// idempotency key).
	ErrNoKey = errors.New("ledger: no idempotency key: not in a tool call")
	// ErrNoLedger: the session's store keeps no ledger.
	ErrNoLedger = errors.New("ledger: the session's store keeps no ledger")
	// ErrNotRecorded: the work ran, but its result could not be recorded;
	// Do returns the result with it.
	ErrNotRecorded = errors.New("ledger: the result was not recorded")
)

// afterRecord is called once a result is recorded, before Do returns
// it: the crash tests kill the process there.
var afterRecord = func() {}

// Do runs fn once per idempotency key of the tool call ctx runs
// ([agentloop.IdempotencyKey]), recording its result in the session's
// ledger ([agentloop.SessionLedger]); a run of a key already recorded
// returns the recorded result without running fn. A failed fn records
// nothing (see the package doc). Outside a tool call Do fails with
// [ErrNoKey], on a store without a ledger with [ErrNoLedger]. When fn
// succeeded but its result could not be recorded, Do returns the result
// and an error matching [ErrNotRecorded]: fn may run again for the key.
func Do(ctx context.Context, fn func(ctx context.Context) (string, error)) (string, error) {
	key := agentloop.IdempotencyKey(ctx)
	if key == "" {
		return "", ErrNoKey
	}
	l := agentloop.SessionLedger(ctx)
	if l == nil {
		return "", ErrNoLedger
	}
	id, _, ok := session.ParseIdempotencyKey(key)
	if !ok {
		return "", fmt.Errorf("ledger: %w", session.ErrLedgerKey)
	}
	unlock, err := lock(ctx, key)
	if err != nil {
		return "", err
	}
	defer unlock()
	v, ok, err := l.Lookup(ctx, id, key)
	switch {
	case err != nil:
		return "", fmt.Errorf("ledger: %w", err)
	case ok:
		return string(v), nil
	}
	out, err := fn(ctx)
	if err != nil {
		return "", err
	}
	// The work is done: record it even when the turn was cancelled
	// meanwhile, or it would run again.
	stored, err := l.Record(context.WithoutCancel(ctx), id, key, []byte(out))
	if err != nil {
		return out, fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	afterRecord()
	return string(stored), nil
}
