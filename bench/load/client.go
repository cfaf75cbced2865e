package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// errNotLoopback refuses a target that is not this machine: the tool
// sends thousands of requests a second.
var errNotLoopback = errors.New("not a loopback address")

// checkLoopback accepts an http URL whose host is a loopback IP, or
// localhost when every address it resolves to is one.
func checkLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("--url %q: %w", raw, err)
	}
	if u.Scheme != "http" {
		return fmt.Errorf("--url %q: only http:// (loopback) is supported", raw)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() {
			return fmt.Errorf("--url %q: %w", raw, errNotLoopback)
		}
		return nil
	}
	if host != "localhost" {
		return fmt.Errorf("--url %q: %w (use an IP literal or localhost)", raw, errNotLoopback)
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return fmt.Errorf("--url %q: %w", raw, err)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Errorf("--url %q: localhost is %s: %w", raw, ip, errNotLoopback)
		}
	}
	return nil
}

// dsnHost is the host:port of a PostgreSQL URL or key=value DSN.
func dsnHost(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Host != "" {
		return u.Host
	}
	host, port := "", ""
	for _, kv := range strings.Fields(dsn) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "host":
			host = v
		case "port":
			port = v
		}
	}
	if port != "" {
		return net.JoinHostPort(host, port)
	}
	return host
}

// event is what the tool reads of a record line.
type event struct {
	Seq  int64     `json:"seq"`
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	Turn int       `json:"turn"`
	Step int       `json:"step"`
	// Ignorable records (a signed checkpoint after the last turn's end)
	// may come before the turn starts.
	Ignorable bool `json:"ignorable"`
}

// sseReader reads server-sent events: the data line of each event (the
// record's JSONL line) with its id; comments and retry: lines are skipped.
type sseReader struct {
	r *bufio.Reader
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReaderSize(r, 64<<10)} }

// next returns the next event's id and data (without the line end).
func (s *sseReader) next() (int64, []byte, error) {
	id := int64(-1)
	var data []byte
	for {
		line, err := s.r.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return 0, nil, fmt.Errorf("sse: a line over %d bytes", s.r.Size())
			}
			if errors.Is(err, io.EOF) && len(line) == 0 && data == nil {
				return 0, nil, io.EOF
			}
			return 0, nil, fmt.Errorf("sse: %w", err)
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		switch {
		case len(line) == 0:
			if data != nil {
				return id, data, nil
			}
		case line[0] == ':':
		case bytes.HasPrefix(line, []byte("id: ")):
			v, err := strconv.ParseInt(string(line[4:]), 10, 64)
			if err != nil {
				return 0, nil, fmt.Errorf("sse: id %q: %w", line[4:], err)
			}
			id = v
		case bytes.HasPrefix(line, []byte("data: ")):
			if data != nil {
				return 0, nil, fmt.Errorf("sse: an event with two data lines")
			}
			data = append([]byte{}, line[6:]...)
		case bytes.HasPrefix(line, []byte("retry: ")):
		default:
			return 0, nil, fmt.Errorf("sse: unexpected line %q", line)
		}
	}
}

// api is the HTTP client of one run.
type api struct {
	base    string // http://host:port
	hc      *http.Client
	timeout time.Duration // every wait's bound
}

func newAPI(base string, conns int, timeout time.Duration) *api {
	tr := &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     30 * time.Second,
		DialContext:         (&net.Dialer{Timeout: timeout}).DialContext,
	}
	// No Client.Timeout: it would cut streams; each call has its own
	// context deadline instead.
	return &api{base: strings.TrimSuffix(base, "/"), hc: &http.Client{Transport: tr}, timeout: timeout}
}

// call sends a JSON request and decodes a JSON answer of status want.
func (a *api) call(ctx context.Context, method, path string, body, out any, want int) error {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = data
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}

func (a *api) create(ctx context.Context) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	if err := a.call(ctx, http.MethodPost, "/v1/sessions", struct{}{}, &out, http.StatusCreated); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", errors.New("POST /v1/sessions: no id")
	}
	return out.ID, nil
}

// stream is an open SSE stream of one session.
type stream struct {
	body   io.Closer
	rd     *sseReader
	cancel context.CancelFunc
}

// follow opens session id's SSE stream after seq after, returning once
// the server answered (the stream is open). ctx bounds the whole stream.
func (a *api) follow(ctx context.Context, id string, after int64) (*stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/v1/sessions/"+id+"/events", nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if after >= 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	// The answer's headers must come within the timeout; the stream then
	// lives as long as ctx.
	t := time.AfterFunc(a.timeout, cancel)
	resp, err := a.hc.Do(req)
	t.Stop()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("GET events of %s: %w", id, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("GET events of %s: %s", id, resp.Status)
	}
	return &stream{body: resp.Body, rd: newSSEReader(resp.Body), cancel: cancel}, nil
}

func (s *stream) close() {
	s.cancel()
	_ = s.body.Close()
}

// turnResult is what one turn measured.
type turnResult struct {
	FirstEvent time.Duration // post → first event of the turn
	Total      time.Duration // post → turn/end
	Steps      int
	StepWall   time.Duration // sum of step/start → step/end, from the log's times
}

// sessionRun is one session driven through its turns: what its streams
// delivered, in order.
type sessionRun struct {
	ID    string
	Lines [][]byte
	last  int64 // the last seq received
	Turns []turnResult
}

// turn runs one turn of r: opens the stream after the last seq received,
// posts the prompt, reads until the turn's turn/end.
func (a *api) turn(ctx context.Context, r *sessionRun, prompt string) error {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	st, err := a.follow(ctx, r.ID, r.last)
	if err != nil {
		return err
	}
	defer st.close()
	posted := time.Now()
	var q struct {
		Job string `json:"job"`
	}
	if err := a.call(ctx, http.MethodPost, "/v1/sessions/"+r.ID+"/turns", map[string]string{"prompt": prompt}, &q, http.StatusAccepted); err != nil {
		return err
	}
	res := turnResult{}
	turn := 0
	var stepStart time.Time
	for {
		id, data, err := st.rd.next()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("session %s: turn %d: no turn/end within %s (last seq %d)", r.ID, turn, a.timeout, r.last)
			}
			return fmt.Errorf("session %s: %w", r.ID, err)
		}
		var ev event
		if err := json.Unmarshal(data, &ev); err != nil {
			return fmt.Errorf("session %s: event %d: %w", r.ID, id, err)
		}
		if ev.Seq != id || ev.Seq != r.last+1 {
			return fmt.Errorf("session %s: event id %d seq %d after seq %d", r.ID, id, ev.Seq, r.last)
		}
		if res.FirstEvent == 0 && !ev.Ignorable {
			res.FirstEvent = time.Since(posted)
			if ev.Type != "turn/start" {
				return fmt.Errorf("session %s: the turn's first event is %s (seq %d)", r.ID, ev.Type, ev.Seq)
			}
			turn = ev.Turn
		}
		r.Lines = append(r.Lines, data)
		r.last = ev.Seq
		switch ev.Type {
		case "step/start":
			stepStart = ev.Time
		case "step/end":
			res.Steps++
			res.StepWall += ev.Time.Sub(stepStart)
		case "turn/end":
			if ev.Turn == turn {
				res.Total = time.Since(posted)
				r.Turns = append(r.Turns, res)
				return nil
			}
		}
	}
}

// check compares what r's streams delivered with the stored log (GET
// events, which ends at the tail) and asks the server to verify it.
func (a *api) check(ctx context.Context, r *sessionRun) error {
	var stored []byte
	if err := a.call(ctx, http.MethodGet, "/v1/sessions/"+r.ID+"/events", nil, &stored, http.StatusOK); err != nil {
		return err
	}
	after, err := sameLines(r.Lines, stored)
	if err != nil {
		return fmt.Errorf("session %s: %w", r.ID, err)
	}
	var v struct {
		OK         bool              `json:"ok"`
		Events     int               `json:"events"`
		Violations []json.RawMessage `json:"violations"`
	}
	if err := a.call(ctx, http.MethodGet, "/v1/sessions/"+r.ID+"/verify", nil, &v, http.StatusOK); err != nil {
		return err
	}
	if !v.OK {
		return fmt.Errorf("session %s: verify: %d violation(s), first %s", r.ID, len(v.Violations), v.Violations[0])
	}
	if v.Events != len(r.Lines)+after {
		return fmt.Errorf("session %s: verify counted %d events, the streams delivered %d (and %d ignorable after the last turn)", r.ID, v.Events, len(r.Lines), after)
	}
	return nil
}

// errMismatch is a stream that differs from the stored log.
var errMismatch = errors.New("the streamed events differ from the stored log")

// sameLines reports whether got, the streamed record lines in order, are
// stored (JSONL, one record a line) byte for byte, with seqs 0, 1, 2, ….
// The stored log may go on past the last turn's end with ignorable
// records (its signed checkpoint), which no turn's stream waits for:
// after is how many.
func sameLines(got [][]byte, stored []byte) (after int, err error) {
	n := 0
	for len(stored) > 0 {
		nl := bytes.IndexByte(stored, '\n')
		if nl < 0 {
			return 0, fmt.Errorf("%w: the stored log ends in a partial line", errMismatch)
		}
		line := stored[:nl]
		stored = stored[nl+1:]
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			return 0, fmt.Errorf("event %d: %w", n, err)
		}
		if ev.Seq != int64(n) {
			return 0, fmt.Errorf("%w: line %d has seq %d", errMismatch, n, ev.Seq)
		}
		switch {
		case n >= len(got) && ev.Ignorable:
			after++
		case n >= len(got):
			return 0, fmt.Errorf("%w: %d streamed, more stored (lost events)", errMismatch, len(got))
		case !bytes.Equal(line, got[n]):
			return 0, fmt.Errorf("%w: event %d: streamed %.80q, stored %.80q", errMismatch, n, got[n], line)
		}
		n++
	}
	if n-after != len(got) {
		return 0, fmt.Errorf("%w: %d streamed, %d stored (duplicates)", errMismatch, len(got), n)
	}
	return after, nil
}
