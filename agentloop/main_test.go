package agentloop_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every turn's goroutines (concurrent tools, streams) end with the turn.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
