package agentsrv

// Caller is who calls an agent over a protocol: what a server's access
// says of a request.
type Caller struct {
	// Name is logged as who asked for the turn and who decided.
	Name string
	// Tenant is the tenant a new session is written with ("" for the
	// default one).
	Tenant string
	// MayDecide says the caller may answer approvals: only then is it
	// asked them.
	MayDecide bool
}
