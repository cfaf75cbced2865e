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
