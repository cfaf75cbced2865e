package memory_test

import (
	"testing"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/memory"
	"github.com/vigil-run/vigil/session/sessiontest"
)

func TestLedgerConformance(t *testing.T) {
	sessiontest.RunLedger(t, func(t *testing.T) func(t *testing.T) session.Store {
		first := memory.New()
		return func(t *testing.T) session.Store { return first.Handle() }
	})
}
