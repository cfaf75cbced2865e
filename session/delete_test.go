package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/memory"
	"github.com/vigil-run/vigil/session/sessiontest"
)

func TestRetentionExpiredAtTheBoundary(t *testing.T) {
	last := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	r := session.Retention{MaxAge: 720 * time.Hour}
	cases := []struct {
		name string
		now  time.Time
		want bool
	}{
		{"younger", last.Add(719 * time.Hour), false},
		{"exactly max_age", last.Add(720 * time.Hour), false},
		{"a millisecond past", last.Add(720*time.Hour + time.Millisecond), true},
		{"a clock behind the record", last.Add(-time.Hour), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, r.Expired(last, c.now))
		})
	}
	assert.False(t, session.Retention{}.Expired(last, last.Add(1e6*time.Hour)), "no max_age keeps everything")
	require.Error(t, session.Retention{MaxAge: -1}.Validate())
}

func TestPruneCandidatesByLastRecord(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	created := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	add := func(id string, last time.Time, records bool) {
		require.NoError(t, st.Create(ctx, session.Info{ID: id, Version: session.Version, Created: created}))
		if records {
			recs := sessiontest.Turn(t, 0, 1)
			// Re-stamp the turn to end at last.
			for i := range recs {
				ev := sessiontest.Events(recs[i : i+1])[0]
				r, err := session.NewRecord(int64(i), last.Add(time.Duration(i-len(recs)+1)*time.Millisecond), ev)
				require.NoError(t, err)
				recs[i] = r
			}
			require.NoError(t, st.Append(ctx, id, 0, recs))
		}
	}
	now := created.Add(60 * 24 * time.Hour)
	maxAge := 30 * 24 * time.Hour
	add("old", now.Add(-maxAge-time.Second), true)
	add("boundary", now.Add(-maxAge), true)
	add("recent", now.Add(-time.Hour), true)
	add("empty", time.Time{}, false) // created 60 days ago, no records
	add("busy", now.Add(-maxAge-time.Hour), true)
	_, _, err := st.Enqueue(ctx, session.Job{Session: "busy", Kind: "turn", Input: []byte(`{}`)})
	require.NoError(t, err)

	got, err := session.PruneCandidates(ctx, st, session.Retention{MaxAge: maxAge}, now)
	require.NoError(t, err)
	assert.Equal(t, []string{"empty", "old"}, got, "a session with a job is active; one exactly max_age old is kept")

	got, err = session.PruneCandidates(ctx, st, session.Retention{}, now)
	require.NoError(t, err)
	assert.Empty(t, got, "no retention prunes nothing")
}
