// Package ledger gives a tool written in Go "same idempotency key, same
// result" without writing it: [Do] runs the tool's work once per key and
// returns the stored result to every later run of the call, in this
// process or another, after a crash or a continuation. The result is kept
// in the session's store ([session.Ledger]: a file beside the JSONL log, a
// table row in PostgreSQL, the memory store's map), which the loop puts
// in the context a tool is given; the tool passes nothing.
//
//	func (t refund) Execute(ctx context.Context, args json.RawMessage) (string, error) {
//		return ledger.Do(ctx, func(ctx context.Context) (string, error) {
//			return t.bank.Refund(ctx, agentloop.IdempotencyKey(ctx), args)
//		})
//	}
//
// # What it guarantees
//
// A run of the call whose result was recorded is never run again: Do
// returns the recorded result, byte for byte. A result is recorded,
// durable, before Do returns it, so a crash after that loses nothing.
// What Do cannot close alone is a crash after the work took effect and
// before its result was recorded: the next run of the call runs the work
// again. Work with an effect outside the process closes it by handing the
// key on (as above: the bank deduplicates by it), or by checking for its
// own effect first.
//
// A run that returns an error records nothing: an error says the work
// did not take effect, so a later run of the call may try it again, and
// returns its own outcome. Work that took effect and then failed returns
// the effect as its result, not as an error.
//
// Runs of one key in one process are serialized: the second waits for
// the first and returns its recorded result. Runs in two processes at
// once cannot happen to a session's call while the session's lease
// serializes its turns; if they did, both would run and both return the
// one result stored first.
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
