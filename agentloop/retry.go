package agentloop

import (
	"context"
	"time"
)

// Backoff returns how long to wait before attempt+1 after attempt (from
// 1) failed with the retryable err.
type Backoff func(attempt int, err *ProviderError) time.Duration

// DefaultBackoff honours the provider's RetryAfter (up to a minute) and
// otherwise doubles from 250ms up to 8s.
func DefaultBackoff(attempt int, err *ProviderError) time.Duration {
	if err != nil && err.RetryAfter > 0 {
		return min(err.RetryAfter, time.Minute)
	}
	d := 250 * time.Millisecond << min(attempt-1, 5)
	return min(d, 8*time.Second)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
