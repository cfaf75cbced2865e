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
	"github.com/vigil-run/vigil/session/sessiontest"
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
	s, err := mgr.Seed(context.Background(), sessiontest.TextTurns(n-7)...)
	require.NoError(b, err)
	require.NoError(b, s.Close(context.Background()))
	return s.ID()
}
