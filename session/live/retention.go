package live

import (
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
)

// RetentionService is the service under which a store plugin configured
// with a retention ([session.Retention]) provides it, for the runtime's
// prune (vigil serve, vigil sessions prune). No provider: sessions are
// kept.
var RetentionService = bus.NewService[session.Retention]("session/retention")
