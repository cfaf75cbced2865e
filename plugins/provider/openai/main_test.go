package openai

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind, which
// is how an unclosed response body shows up.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
