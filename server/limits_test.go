package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/plugins/store/jsonl"
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// servedWithLimits is a server behind [server.HTTPServer], as vigil serve
// runs it, on the JSONL store (vigil serve's default).
func servedWithLimits(t *testing.T, o server.Options) *api {
	t.Helper()
	return servedWithLimitsIn(t, t.TempDir(), o, nil)
}

// servedWithLimitsIn is servedWithLimits with its sessions in dir; conn,
// when set, is told of every connection's state.
func servedWithLimitsIn(t *testing.T, dir string, o server.Options, conn func(net.Conn, http.ConnState)) *api {
	t.Helper()
	src := vigil.Compose(
		vigil.Plugin(jsonl.Name, jsonl.Config{Dir: dir}),
		vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{{Text: "ok"}}, Repeat: true}),
		vigil.Plugin("agent", agentloop.Config{System: "Be brief."}),
	)
	rt, err := vigil.Open(context.Background(), src)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	s, err := server.New(rt, o)
	require.NoError(t, err)
	ts := httptest.NewUnstartedServer(s)
	ts.Config = server.HTTPServer(s)
	ts.Config.ConnState = conn
	ts.Start()
	a := &api{t: t, rt: rt, srv: ts}
	t.Cleanup(ts.Close)
	t.Cleanup(a.stopWorker)
	return a
}

func (a *api) addr() string { return strings.TrimPrefix(a.srv.URL, "http://") }

// dial opens a raw connection to the server, closed when the test ends.
func (a *api) dial() net.Conn {
	a.t.Helper()
	c, err := net.Dial("tcp", a.addr())
	require.NoError(a.t, err)
	a.t.Cleanup(func() { c.Close() })
	return c
}

// statusLine reads c's response status line, waiting at most d.
func statusLine(c net.Conn, r *bufio.Reader, d time.Duration) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	line, err := r.ReadString('\n')
	return strings.TrimSpace(line), err
}

// closedWithin reports whether the server closes c within d (whatever it
// writes first is read and dropped).
func closedWithin(c net.Conn, r *bufio.Reader, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	for {
		if _, err := r.Read(buf); err != nil {
			ne, ok := err.(net.Error)
			return !(ok && ne.Timeout())
		}
	}
}

// A client without valid credentials that sends its body slowly (or not
// at all) gets its 401 at once, before its body is read, and the
// connection is closed: two thousand of them hold nothing.
func TestUnauthenticatedSlowBodiesGet401AtOnce(t *testing.T) {
	a := servedWithLimits(t, server.Options{Tokens: []string{"secret"}})
	clients := min(2000, (openFiles()-256)/2)
	type conn struct {
		c net.Conn
		r *bufio.Reader
	}
	conns := make([]conn, clients)
	for i := range conns {
		c := a.dial()
		framing := "Content-Length: 100000"
		if i%2 == 1 {
			framing = "Transfer-Encoding: chunked"
		}
		auth := ""
		if i%3 == 1 {
			auth = "Authorization: Bearer wrong\r\n"
		}
		_, err := fmt.Fprintf(c, "POST /v1/sessions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%s%s\r\n\r\n", a.addr(), auth, framing)
		require.NoError(t, err)
		conns[i] = conn{c, bufio.NewReader(c)}
	}
	start := time.Now()
	for i, c := range conns {
		line, err := statusLine(c.c, c.r, 5*time.Second)
		require.NoError(t, err, "client %d got no answer", i)
		require.Equal(t, "HTTP/1.1 401 Unauthorized", line, "client %d", i)
	}
	for i, c := range conns {
		assert.True(t, closedWithin(c.c, c.r, 5*time.Second), "client %d: the connection stays open", i)
	}
	assert.Less(t, time.Since(start), 10*time.Second)
}

// An authenticated client whose body stops arriving gets a 408 once the
// body timeout passes, and its connection is closed.
func TestASlowBodyTimesOut(t *testing.T) {
	a := servedWithLimits(t, server.Options{Tokens: []string{"secret"}, BodyTimeout: 500 * time.Millisecond})
	c := a.dial()
	_, err := fmt.Fprintf(c, "POST /v1/sessions HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer secret\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", a.addr())
	require.NoError(t, err)
	r := bufio.NewReader(c)
	start := time.Now()
	line, err := statusLine(c, r, 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "HTTP/1.1 408 Request Timeout", line)
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.True(t, closedWithin(c, r, 5*time.Second), "the connection stays open")

	// A body that arrives in time is read, and the connection is kept
	// for the next request past the body timeout.
	a.auth = "secret"
	code, body := a.do("POST", "/v1/sessions", `{}`)
	require.Equal(t, http.StatusCreated, code, "%s", body)
}

// A slowloris client (hundreds of connections trickling their headers)
// is cut off after the header timeout, and other clients are answered
// all along.
func TestSlowlorisClientsAreCutOffAndOthersServed(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the header timeout")
	}
	a := servedWithLimits(t, server.Options{})
	const clients = 300
	conns := make([]net.Conn, clients)
	for i := range conns {
		conns[i] = a.dial()
	}
	// Trickle a header line byte by byte, one round over every connection
	// each 100ms, until the server closes them (or far past its timeout).
	closed := make([]time.Time, clients)
	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			msg := "GET /v1/sessions HTTP/1.1\r\nX-Slow: " + strings.Repeat("a", 1<<10)
			for j := 0; time.Since(start) < server.DefaultReadHeaderTimeout+10*time.Second; j++ {
				if _, err := c.Write([]byte{msg[j%len(msg)]}); err != nil {
					break
				}
				_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				if _, err := c.Read(make([]byte, 512)); err != nil {
					if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
						break
					}
				}
			}
			mu.Lock()
			closed[i] = time.Now()
			mu.Unlock()
		})
	}
	// Others are answered meanwhile, each promptly.
	for time.Since(start) < server.DefaultReadHeaderTimeout {
		t0 := time.Now()
		code, body := a.do("GET", "/healthz", "")
		require.Equal(t, http.StatusOK, code, "%s", body)
		assert.Less(t, time.Since(t0), 5*time.Second)
		time.Sleep(500 * time.Millisecond)
	}
	wg.Wait()
	for i, at := range closed {
		assert.Less(t, at.Sub(start), server.DefaultReadHeaderTimeout+5*time.Second, "client %d was not cut off", i)
	}
}

// A flood of 2,000 server-sent event streams on one session leaves the
// server answering other clients promptly, and every stream gets the
// events of a turn posted meanwhile.
func TestAnSSEFloodLeavesTheServerAnswering(t *testing.T) {
	if testing.Short() {
		t.Skip("opens thousands of connections")
	}
	a := servedWithLimits(t, server.Options{})
	a.startWorker()
	id := a.create()
	// Each stream costs two descriptors here (both ends are in this
	// process); leave room for the rest.
	flood := min(2000, (openFiles()-256)/2)
	if flood < 2000 {
		t.Logf("the open-files limit bounds the flood to %d streams", flood)
	}
	type stream struct {
		c net.Conn
		r *bufio.Reader
	}
	streams := make([]stream, flood)
	for i := range streams {
		c := a.dial()
		_, err := fmt.Fprintf(c, "GET /v1/sessions/%s/events HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", id, a.addr())
		require.NoError(t, err)
		streams[i] = stream{c, bufio.NewReader(c)}
	}
	for i, s := range streams {
		line, err := statusLine(s.c, s.r, 10*time.Second)
		require.NoError(t, err, "stream %d", i)
		require.Equal(t, "HTTP/1.1 200 OK", line, "stream %d", i)
	}
	// Others are answered within a bound while every stream is open.
	for range 5 {
		t0 := time.Now()
		var sum server.Summary
		a.json(http.StatusOK, "GET", "/v1/sessions/"+id, "", &sum)
		assert.Less(t, time.Since(t0), 5*time.Second)
	}
	t0 := time.Now()
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"hi"}`, nil)
	assert.Less(t, time.Since(t0), 5*time.Second)
	// And every stream sees the turn end.
	for i, s := range streams {
		_ = s.c.SetReadDeadline(time.Now().Add(20 * time.Second))
		for {
			line, err := s.r.ReadString('\n')
			require.NoError(t, err, "stream %d", i)
			if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"type":"turn/end"`) {
				break
			}
		}
	}
	t.Logf("%d streams served the turn %s after it was posted", flood, time.Since(t0).Round(time.Millisecond))
}

// On the JSONL store a summary, the events without follow and verify
// read the log a piece at a time and agree on it.
func TestSummaryEventsAndVerifyAgreeOnJSONL(t *testing.T) {
	a := servedWithLimits(t, server.Options{})
	a.startWorker()
	id := a.create()
	for range 2 {
		a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"hi"}`, nil)
	}
	var recs int
	for turns := 0; turns < 2; {
		got := a.until(id, int64(recs-1), turnEnd)
		recs += len(got)
		turns++
	}
	var sum server.Summary
	a.json(http.StatusOK, "GET", "/v1/sessions/"+id, "", &sum)
	assert.Equal(t, recs, sum.Events)
	assert.Equal(t, 2, sum.Turns)
	code, body := a.do("GET", "/v1/sessions/"+id+"/events", "")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, recs, strings.Count(string(body), "\n"))
	code, body = a.do("GET", "/v1/sessions/"+id+"/events?after=3", "")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, recs-4, strings.Count(string(body), "\n"))
	var rep server.VerifyReport
	a.json(http.StatusOK, "GET", "/v1/sessions/"+id+"/verify", "", &rep)
	assert.True(t, rep.OK, "%+v", rep.Violations)
	assert.Equal(t, recs, rep.Events)
}

// A client that stops reading an event stream is let go once a write to
// it blocks longer than the stream write timeout: the server does not
// hold its stream open for ever.
func TestAStreamNobodyReadsIsLetGo(t *testing.T) {
	dir := t.TempDir()
	// A log larger than what the sockets between the two ends buffer.
	content := session.AppendHeaderLine(nil, session.Info{ID: "big", Version: session.Version, Created: time.Now()})
	for turn := 1; len(content) < 24<<20; turn++ {
		for _, r := range sessiontest.Turn(t, int64(17*(turn-1)), turn) {
			content = r.AppendLine(content)
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.jsonl"), content, 0o644))
	closed := make(chan struct{}, 1)
	a := servedWithLimitsIn(t, dir, server.Options{StreamWriteTimeout: 300 * time.Millisecond}, func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closed <- struct{}{}
		}
	})
	c := a.dial()
	require.NoError(t, c.(*net.TCPConn).SetReadBuffer(4096))
	_, err := fmt.Fprintf(c, "GET /v1/sessions/big/events HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", a.addr())
	require.NoError(t, err)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the server still writes to a client that reads nothing")
	}
}
