package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/internal/cputime"
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
)

// BenchmarkPostTurn posts a turn to a session of 100 events and to one of
// 10,000 in every iteration and reports the CPU time of each 202 and
// their ratio, cpu-x, which an answer that does not read the whole log
// keeps near 1 (issue 30: at most 1.5). No worker runs: the job queued
// is cancelled off the clock, so the session's queue stays empty.
func BenchmarkPostTurn(b *testing.B) {
	rt, err := vigil.Open(context.Background(), composition(false))
	require.NoError(b, err)
	b.Cleanup(func() { _ = rt.Close() })
	s, err := server.New(rt, server.Options{})
	require.NoError(b, err)
	q, err := rt.Queue()
	require.NoError(b, err)
	sizes := []int{100, 10_000}
	ids := make([]string, len(sizes))
	for k, n := range sizes {
		ids[k] = seedEvents(b, rt, n)
	}
	cpu := make([]time.Duration, len(sizes))
	b.ReportAllocs()
	for b.Loop() {
		for k, id := range ids {
			req, err := http.NewRequest(http.MethodPost, "/v1/sessions/"+id+"/turns", strings.NewReader(`{"prompt":"one more"}`))
			require.NoError(b, err)
			req.Header.Set("Content-Type", "application/json")
			req.Host = "localhost"
			w := httptest.NewRecorder()
			c0 := cputime.Now()
			s.ServeHTTP(w, req)
			cpu[k] += cputime.Now() - c0
			require.Equal(b, http.StatusAccepted, w.Code, "%s", w.Body.String())
			b.StopTimer()
			_, err = q.Cancel(context.Background(), id)
			require.NoError(b, err)
			b.StartTimer()
		}
	}
	for k, n := range sizes {
		b.ReportMetric(float64(cpu[k].Nanoseconds())/float64(b.N), fmt.Sprintf("cpu-ns/post@%d", n))
	}
	b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "cpu-x")
}

// seedEvents makes a session of about n events, in whole turns, and
// returns its id.
func seedEvents(b *testing.B, rt *vigil.Runtime, n int) string {
	mgr, err := rt.Manager()
	require.NoError(b, err)
	var evs []session.Event
	for turn := 1; len(evs) < n-7; turn++ {
		answer := fmt.Sprintf("It is %d.", 2*turn)
		base := int64(len(evs))
		evs = append(evs,
			session.Event{Type: session.TypeTurnStart, Turn: turn},
			session.Event{Type: session.TypeUserMessage, Turn: turn, Data: session.UserMessage{Content: fmt.Sprintf("What is %d times two?", turn)}},
			session.Event{Type: session.TypeStepStart, Turn: turn, Step: 1},
			session.Event{Type: session.TypeAssistantChunk, Turn: turn, Step: 1, Data: session.AssistantChunk{Text: answer}},
			session.Event{Type: session.TypeAssistantMessage, Turn: turn, Step: 1, Sources: []int64{base + 3}, Data: session.AssistantMessage{Content: answer}},
			session.Event{Type: session.TypeStepEnd, Turn: turn, Step: 1, Data: session.StepEnd{Finish: session.FinishStop}},
			session.Event{Type: session.TypeTurnEnd, Turn: turn, Data: session.TurnEnd{Reason: session.ReasonCompleted}},
		)
	}
	s, err := mgr.Seed(context.Background(), evs...)
	require.NoError(b, err)
	require.NoError(b, s.Close(context.Background()))
	return s.ID()
}
