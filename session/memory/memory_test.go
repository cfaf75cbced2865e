package memory_test

import (
	"testing"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/memory"
	"github.com/vigil-run/vigil/session/sessiontest"
)

func TestStoreConformance(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store { return memory.New() })
}
