package vigil

import (
	"errors"
)

// SessionOption says whose a session is and who acts on it: the options
// of [Runtime.NewSession], [Runtime.Fork] and [Runtime.QueueTurn].
type SessionOption func(*sessionOptions)

type sessionOptions struct {
	tenant, by string
	agent      string
}

// Tenant makes a new session belong to tenant (none: the default tenant,
// session.DefaultTenant). A fork or a sub-agent's child session belongs
// to its parent's tenant: [Runtime.Fork] and [Runtime.QueueTurn] refuse
// it.
func Tenant(tenant string) SessionOption {
	return func(o *sessionOptions) { o.tenant = tenant }
}

// By names who creates the session, or posts the turn: it is logged in
// the session's header, or on the turn's turn/start.
func By(name string) SessionOption {
	return func(o *sessionOptions) { o.by = name }
}

// RunAgent makes a queued turn, or the resumption a queued decision
// starts, run with the agent of entry id entry ([Runtime.AgentNamed])
// rather than the session's (the composition's entry point, or a child
// session's own): what a protocol server that offers each agent queues.
func RunAgent(entry string) SessionOption {
	return func(o *sessionOptions) { o.agent = entry }
}

// errTenantOption refuses a [Tenant] where the tenant is not the caller's
// to choose.
var errTenantOption = errors.New("vigil: a fork, and a turn, belong to their session's tenant: Tenant is not their option")

func sessionOpts(opts []SessionOption, tenantOK bool) (sessionOptions, error) {
	var o sessionOptions
	for _, fn := range opts {
		fn(&o)
	}
	if o.tenant != "" && !tenantOK {
		return o, errTenantOption
	}
	return o, nil
}
