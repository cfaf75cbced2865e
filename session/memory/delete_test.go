package memory_test

import (
	"testing"

	"github.com/vigil-run/vigil/session/sessiontest"
)

func TestDeleteConformance(t *testing.T) { sessiontest.RunDelete(t, queueHarness) }
