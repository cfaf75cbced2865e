package agentloop

import (
	"context"

	"github.com/vigil-run/vigil/session"
)

// ledgerOfSession is the context key of the ledger of the session whose
// turn a context runs.
type ledgerOfSession struct{}

// withLedger returns ctx carrying l, the ledger of the session a turn
// runs on (every turn's context carries its session's, so a tool finds
// it without being handed it).
func withLedger(ctx context.Context, l session.Ledger) context.Context {
	return context.WithValue(ctx, ledgerOfSession{}, l)
}

// SessionLedger returns the ledger of the session whose turn ctx runs (a
// Tool's Execute is given such a context): where its store keeps the
// results of the session's tool calls by idempotency key (see package
// agentloop/ledger). It is nil outside a turn and when the store keeps no
// ledger.
func SessionLedger(ctx context.Context) session.Ledger {
	l, _ := ctx.Value(ledgerOfSession{}).(session.Ledger)
	return l
}

// ToolContext returns ctx carrying what the loop gives a Tool's Execute
// for a call: its idempotency key ([IdempotencyKey]) and its session's
// ledger ([SessionLedger]). The loop does not need it; it is for running a
// tool outside a turn as the loop would (a tool's tests, a host that
// reruns a call).
func ToolContext(ctx context.Context, key string, l session.Ledger) context.Context {
	return withKey(withLedger(ctx, l), key)
}
