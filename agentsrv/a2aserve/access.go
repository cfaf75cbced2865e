package a2aserve

import (
	"context"

	"github.com/vigil-run/vigil/agentsrv"
)

// Access says who calls and what they may touch. `vigil serve` gives
// the API's own (its principals, roles and tenants); [Local] is a
// process's own user.
type Access interface {
	// Caller returns who makes the request of ctx, and ctx carrying what
	// Admit needs to know of them. An error refuses the request.
	Caller(ctx context.Context) (context.Context, agentsrv.Caller, error)
	// Admit refuses a session the caller of ctx may not touch. A session
	// the caller may not see must be refused as one that does not exist.
	Admit(ctx context.Context, session string) error
}

// Local is the access of the user who started the process: one caller,
// who may do everything in the default tenant.
type Local struct {
	// Name is logged as who asked and decided.
	Name string
}

// Caller implements [Access].
func (l Local) Caller(ctx context.Context) (context.Context, agentsrv.Caller, error) {
	return ctx, agentsrv.Caller{Name: l.Name, MayDecide: true}, nil
}

// Admit implements [Access]: every session of the store.
func (Local) Admit(context.Context, string) error { return nil }
