package mcpserve

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigil-run/vigil/agentsrv"
)

// Caller is who makes a tool call.
type Caller = agentsrv.Caller

// Access says who calls and what they may touch. The HTTP API gives its
// own (its principals, roles and tenants); [Local] is a process's own
// user over stdio.
type Access interface {
	// Caller returns who makes req, and ctx carrying what Admit needs
	// to know of them. An error refuses the call.
	Caller(ctx context.Context, req *mcp.CallToolRequest) (context.Context, Caller, error)
	// Admit refuses a session the caller of ctx may not run turns on.
	// A session the caller may not see must be refused as one that does
	// not exist.
	Admit(ctx context.Context, session string) error
}

// Local is the access of the user who started the process: one caller,
// who may do everything in the default tenant.
type Local struct {
	// Name is logged as who asked and decided.
	Name string
}

// Caller implements [Access].
func (l Local) Caller(ctx context.Context, _ *mcp.CallToolRequest) (context.Context, Caller, error) {
	return ctx, Caller{Name: l.Name, MayDecide: true}, nil
}

// Admit implements [Access]: every session of the store.
func (Local) Admit(context.Context, string) error { return nil }
