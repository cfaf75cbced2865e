package replay_test

import (
	"slices"

	"github.com/vigil-run/vigil/session"
)

// Until tool/retry and tool/reconcile are core types (branch
// h/reconcile), a process registers them to log and read them. Once they
// are, this does nothing.
func init() {
	for _, typ := range []string{session.TypeToolRetry, session.TypeToolReconcile} {
		if !slices.Contains(session.CoreTypes(), typ) {
			session.RegisterType(typ)
		}
	}
}
