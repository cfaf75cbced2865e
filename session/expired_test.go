package session_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-run/vigil/session"
)

// Finished jobs are kept for FinishedJobTTL, and at most the limit's
// newest of them.
func TestExpiredFinishedJobs(t *testing.T) {
	now := time.Now()
	old := now.Add(-session.FinishedJobTTL - time.Minute)
	at := func(t time.Time) time.Time { return t }
	for _, c := range []struct {
		name  string
		done  []time.Time
		limit int
		want  int
	}{
		{"none", nil, 0, 0},
		{"all recent", []time.Time{now, now}, 0, 0},
		{"the old ones first", []time.Time{old, old, now}, 0, 2},
		{"beyond the limit", []time.Time{now, now, now, now}, 3, 1},
		{"both", []time.Time{old, now, now, now}, 2, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, session.Expired(c.done, at, c.limit))
		})
	}
}
