package providerhttp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
)

// get sends a GET to url through Bound(l).
func get(t *testing.T, url string, l Limits) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	res, err := Bound(l, nil)(req, http.DefaultClient.Do)
	require.NoError(t, err)
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

func TestBoundEndsAResponseThatStalls(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	res := get(t, srv.URL, Limits{Idle: 200 * time.Millisecond})
	begun := time.Now()
	b, err := io.ReadAll(res.Body)
	require.ErrorIs(t, err, ErrStreamIdle)
	assert.Contains(t, err.Error(), "stream_idle_timeout")
	assert.Equal(t, "data: first\n\n", string(b))
	assert.Less(t, time.Since(begun), 10*time.Second)
	_, err = res.Body.Read(make([]byte, 1))
	require.ErrorIs(t, err, ErrStreamIdle, "every later read says so too")
}

func TestBoundIsNoStallForAReaderThatTakesItsTime(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for range 3 {
			_, _ = io.WriteString(w, "data: more\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	res := get(t, srv.URL, Limits{Idle: 100 * time.Millisecond})
	// Everything is sent at once; the reader waits between reads longer
	// than the idle bound.
	time.Sleep(300 * time.Millisecond)
	buf := make([]byte, 4)
	var got strings.Builder
	for {
		n, err := res.Body.Read(buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		time.Sleep(150 * time.Millisecond)
	}
	assert.Equal(t, strings.Repeat("data: more\n\n", 3), got.String())
}

func TestBoundEndsAResponseThatNeverEnds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Bounded in the test: a megabyte at most.
		for i := 0; i < 1<<20/8 && r.Context().Err() == nil; i++ {
			_, _ = io.WriteString(w, "data: x\n")
		}
	}))
	defer srv.Close()
	res := get(t, srv.URL, Limits{MaxBytes: 4096})
	b, err := io.ReadAll(res.Body)
	require.ErrorIs(t, err, ErrResponseTooLarge)
	assert.Contains(t, err.Error(), "past 4096 bytes (max_response_bytes)")
	assert.LessOrEqual(t, len(b), 4096)
}

func TestBoundDefaults(t *testing.T) {
	assert.Equal(t, DefaultStreamIdleTimeout, Limits{}.idle())
	assert.Equal(t, int64(DefaultMaxResponseBytes), Limits{}.maxBytes())
	require.NoError(t, CheckLimits(0, 0))
	err := CheckLimits(-time.Second, -1)
	assert.ErrorContains(t, err, "stream_idle_timeout must not be negative")
	assert.ErrorContains(t, err, "max_response_bytes must not be negative")
}

func TestAStallBeforeAnyChunkIsRetryableAndTooLargeIsNot(t *testing.T) {
	for _, tc := range []struct {
		err       error
		delivered bool
		retryable bool
	}{
		{ErrStreamIdle, false, true},
		{ErrStreamIdle, true, false},
		{ErrResponseTooLarge, false, false},
	} {
		for _, event := range []StreamEvent{nil, func(error) (int, string, bool, bool) { return 0, "", false, false }} {
			err := Fail(context.Background(), "p", "", tc.err, tc.delivered, event)
			var pe *agentloop.ProviderError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.retryable, pe.Retryable, "%v delivered=%v", tc.err, tc.delivered)
			assert.ErrorIs(t, err, tc.err)
		}
	}
}
