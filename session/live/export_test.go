package live

import (
	"testing"
	"time"
)

// SetBatchDelays sets how long a batched record waits to be written (see
// batchDelay, batchCloseDelay) until t ends.
func SetBatchDelays(t testing.TB, open, closed time.Duration) {
	oldOpen, oldClosed := batchDelay, batchCloseDelay
	batchDelay, batchCloseDelay = open, closed
	t.Cleanup(func() { batchDelay, batchCloseDelay = oldOpen, oldClosed })
}
