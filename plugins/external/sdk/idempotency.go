package sdk

import "context"

// keyOfCall is the context key of a running call's idempotency key.
type keyOfCall struct{}

func withIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyOfCall{}, key)
}

// IdempotencyKey returns the idempotency key of the tool call ctx runs
// (a [Tool]'s Run is given such a context): the session id, "/", and the
// call's session-unique id (session.IdempotencyKey), the same on every
// run of the call, a continuation after a crash included. "" outside a
// call, or from a host too old to send one. A tool with an effect
// outside the process passes it on so that the effect happens once.
func IdempotencyKey(ctx context.Context) string {
	k, _ := ctx.Value(keyOfCall{}).(string)
	return k
}
