package memory_test

import (
	"testing"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/memory"
	"github.com/vigil-run/vigil/session/sessiontest"
)

func TestDeleteConformance(t *testing.T) {
	sessiontest.RunDelete(t, sessiontest.QueueHarness{
		New: func(t *testing.T) func(t *testing.T) session.Store {
			first := memory.New()
			return func(t *testing.T) session.Store { return first.Handle() }
		},
		Crash: func(t *testing.T, s session.Store) { memory.Crash(s.(*memory.Store)) },
	})
}
