package session

import (
	"context"
	"errors"
)

// ErrUnavailable: the store cannot be reached now (its database is down
// or restarting); the same call may succeed later. Stores wrap it in the
// errors of calls that failed for that reason alone.
var ErrUnavailable = errors.New("session: store unavailable")

// Pinger is implemented by stores that can tell cheaply whether they
// answer now, for a readiness probe: store/postgres asks the database
// (a round trip on a pooled connection), store/jsonl reads its
// directory. A store without it is taken to answer.
type Pinger interface {
	// Ping returns nil when the store answers; an error wrapping
	// ErrUnavailable when it cannot be reached.
	Ping(ctx context.Context) error
}
