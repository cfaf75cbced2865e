package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/note"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/budget"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	jsonlstore "github.com/vigil-run/vigil/plugins/store/jsonl"
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// stored is a composition over a JSONL store in dir: calc, a scripted
// model that calls it then answers, the system prompt given, checkpoints
// signed with keyFile when it is not empty, and calc's tokens priced.
func storedComposition(dir, system, keyFile string) vigil.Source {
	return vigil.Compose(
		vigil.Plugin("store/jsonl", &jsonlstore.Config{Dir: dir, Signing: live.Signing{KeyFile: keyFile}}),
		vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{calc, {Text: "42."}}, Repeat: true}),
		vigil.Plugin("tools/calc", nil),
		vigil.Plugin("budget", &budget.Config{Prices: map[string]budget.Price{"": {Input: 1, Output: 2}}}),
		vigil.Plugin("agent", agentloop.Config{System: system}),
		vigil.Plugin("invariants", invariants.Config{Mode: "strict"}))
}

// recordTurn runs one turn on a new session of a runtime over src, closes
// it, and returns the session's id: the log is then only on disk.
func recordTurn(t *testing.T, src vigil.Source) string {
	t.Helper()
	ctx := context.Background()
	rt, err := vigil.Open(ctx, src)
	require.NoError(t, err)
	id, err := rt.NewSession(ctx)
	require.NoError(t, err)
	_, err = rt.Turn(ctx, vigil.TurnOptions{Session: id, Prompt: "6 times 7?"})
	require.NoError(t, err)
	require.NoError(t, rt.Close())
	return id
}

// checkpointKey writes a new checkpoint signing key to a file and returns
// the file and the public key.
func checkpointKey(t *testing.T, name string) (string, note.Verifiers) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), name+".key")
	require.NoError(t, os.WriteFile(path, []byte(skey+"\n"), 0o600))
	v, err := note.NewVerifier(vkey)
	require.NoError(t, err)
	return path, note.VerifierList(v)
}

// The step list and each step's request re-derive what the model got:
// the second step's request is the prompt, the call and its result,
// under the logged header, and its digest is the one the log recorded.
func TestAStepsRequestIsReDerivedFromTheLog(t *testing.T) {
	dir := t.TempDir()
	key, pub := checkpointKey(t, "proof-test")
	id := recordTurn(t, storedComposition(dir, "Be brief.", key))
	a := newAPI(t, storedComposition(dir, "Be brief.", ""), server.Options{CheckpointKeys: pub})

	var steps server.StepList
	a.json(http.StatusOK, "GET", "/v1/sessions/"+id+"/steps", "", &steps)
	require.Len(t, steps.Steps, 2)
	for i, st := range steps.Steps {
		assert.Equal(t, 1, st.Turn)
		assert.Equal(t, i+1, st.Step)
		assert.True(t, st.DigestMatch, "%+v", st)
	}
	assert.Equal(t, "tool_calls", steps.Steps[0].Finish)

	var req server.StepRequest
	a.json(http.StatusOK, "GET", "/v1/sessions/"+id+"/steps/1/2/request", "", &req)
	assert.Equal(t, steps.Steps[1].Seq, req.Seq)
	require.Len(t, req.Messages, 3)
	assert.Equal(t, session.Message{Role: "user", Content: "6 times 7?"}, req.Messages[0])
	require.Len(t, req.Messages[1].ToolCalls, 1)
	assert.Equal(t, "calc", req.Messages[1].ToolCalls[0].Name)
	assert.Equal(t, "tool", req.Messages[2].Role)
	assert.Equal(t, "Be brief.", req.Header.System)
	assert.True(t, req.Digest.Match)
	assert.Equal(t, req.Digest.Recorded, req.Digest.Derived)
	assert.Equal(t, session.RequestDigest(req.Header, req.Messages), req.Digest.Derived)
	assert.True(t, req.Invariants.OK, "%v", req.Invariants.Findings)

	// The recorded digest is the log's own, read from the events.
	log, err := a.rt.Session(context.Background(), id)
	require.NoError(t, err)
	rec := log.Records[req.Seq]
	require.Equal(t, session.TypeRequestDigest, rec.Type())
	d, err := session.DecodeData[session.Digest](rec)
	require.NoError(t, err)
	assert.Equal(t, d.SHA256, req.Digest.Recorded)

	// The turn/end's checkpoint covers it, signed by the key given.
	c := req.Checkpoint
	assert.True(t, c.Signed)
	assert.True(t, c.Verified)
	assert.True(t, c.Covered)
	assert.Greater(t, c.CheckpointSeq, req.Seq)
	assert.Greater(t, c.TreeSize, req.Seq)
	assert.True(t, strings.HasPrefix(c.Key, "proof-test+"), c.Key)

	for path, code := range map[string]int{
		"/steps/1/3/request":                    http.StatusNotFound,
		"/steps/2/1/request":                    http.StatusNotFound,
		"/steps/0/1/request":                    http.StatusBadRequest,
		"/steps/1/-1/request":                   http.StatusBadRequest,
		"/steps/x/1/request":                    http.StatusBadRequest,
		"/steps/1/99999999999999999999/request": http.StatusBadRequest,
	} {
		got, body := a.do("GET", "/v1/sessions/"+id+path, "")
		assert.Equal(t, code, got, "%s: %s", path, body)
		var e server.Error
		require.NoError(t, json.Unmarshal(body, &e), "%s", body)
		if code == http.StatusNotFound {
			assert.Equal(t, server.CodeNotFound, e.Code)
		}
	}
}

// A checkpoint signed by a key the server does not hold is signed, not
// verified, and covers nothing; without keys the server says unverified.
func TestACheckpointIsVerifiedOnlyAgainstTheServersKeys(t *testing.T) {
	dir := t.TempDir()
	key, _ := checkpointKey(t, "theirs")
	_, other := checkpointKey(t, "ours")
	id := recordTurn(t, storedComposition(dir, "Be brief.", key))

	a := newAPI(t, storedComposition(dir, "Be brief.", ""), server.Options{CheckpointKeys: other})
	var req server.StepRequest
	a.json(http.StatusOK, "GET", "/v1/sessions/"+id+"/steps/1/1/request", "", &req)
	assert.True(t, req.Checkpoint.Signed)
	assert.False(t, req.Checkpoint.Verified)
	assert.False(t, req.Checkpoint.Covered)
	assert.True(t, strings.HasPrefix(req.Checkpoint.Key, "theirs+"), req.Checkpoint.Key)

	b := newAPI(t, storedComposition(dir, "Be brief.", ""), server.Options{})
	b.json(http.StatusOK, "GET", "/v1/sessions/"+id+"/steps/1/1/request", "", &req)
	assert.True(t, req.Checkpoint.Signed)
	assert.False(t, req.Checkpoint.Verified)
	assert.True(t, req.Checkpoint.Covered)
}

// A log whose user message was edited on disk re-derives another
// request: the digest does not match, and the invariants say so.
func TestAForgedMessageDoesNotMatchItsDigest(t *testing.T) {
	dir := t.TempDir()
	id := recordTurn(t, storedComposition(dir, "Be brief.", ""))
	path := filepath.Join(dir, id+".jsonl")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	forged := bytes.Replace(data, []byte(`6 times 7?`), []byte(`6 times 9?`), 1)
	require.NotEqual(t, data, forged)
	require.NoError(t, os.WriteFile(path, forged, 0o600))

	a := newAPI(t, storedComposition(dir, "Be brief.", ""), server.Options{})
	var steps server.StepList
	a.json(http.StatusOK, "GET", "/v1/sessions/"+id+"/steps", "", &steps)
	require.NotEmpty(t, steps.Steps)
	for _, st := range steps.Steps {
		assert.False(t, st.DigestMatch, "%+v", st)
	}
	var req server.StepRequest
	a.json(http.StatusOK, "GET", "/v1/sessions/"+id+"/steps/1/1/request", "", &req)
	assert.False(t, req.Digest.Match)
	assert.NotEqual(t, req.Digest.Recorded, req.Digest.Derived)
	assert.Equal(t, "6 times 9?", req.Messages[0].Content, "the request shown is the log's, forged")
	assert.False(t, req.Invariants.OK)
	assert.NotEmpty(t, req.Invariants.Findings)

	// A forged log is not replayed: its recording proves nothing.
	got, body := a.do("GET", "/v1/sessions/"+id+"/replay", "")
	assert.Equal(t, http.StatusConflict, got, "%s", body)
}

// A fork at a boundary is a new session of the caller's, its parent
// named; a seq inside the turn or past the end is 400 with the sentence
// naming where a fork can start.
func TestForkAtASeq(t *testing.T) {
	dir := t.TempDir()
	id := recordTurn(t, storedComposition(dir, "Be brief.", ""))
	a := newAPI(t, storedComposition(dir, "Be brief.", ""), server.Options{})
	log, err := a.rt.Session(context.Background(), id)
	require.NoError(t, err)
	end := int64(len(log.Records)) - 1
	bs := session.Boundaries(log.Records)

	var f server.ForkInfo
	a.json(http.StatusCreated, "POST", "/v1/sessions/"+id+"/forks", `{"at":`+itoa(bs[len(bs)-1])+`}`, &f)
	assert.Equal(t, id, f.Parent)
	assert.Equal(t, bs[len(bs)-1], f.At)
	var sum server.Summary
	a.json(http.StatusOK, "GET", "/v1/sessions/"+f.ID, "", &sum)
	require.NotNil(t, sum.Parent)
	assert.Equal(t, id, sum.Parent.ID)
	assert.Equal(t, "local", sum.By)

	for _, body := range []string{`{"at":2}`, `{"at":` + itoa(end+5) + `}`, `{}`, `{"at":"x"}`, `{"at":-2}`} {
		got, data := a.do("POST", "/v1/sessions/"+id+"/forks", body)
		assert.Equal(t, http.StatusBadRequest, got, "%s: %s", body, data)
		var e server.Error
		require.NoError(t, json.Unmarshal(data, &e))
		if body == `{"at":2}` {
			assert.Contains(t, e.Message, "nearest boundaries")
		}
		if strings.Contains(body, itoa(end+5)) {
			assert.Contains(t, e.Message, "is past the end of session "+id)
			assert.Contains(t, e.Message, "a fork can start at a turn boundary")
			assert.Contains(t, e.Message, itoa(bs[len(bs)-1]))
		}
	}
}

// The trace is the telemetry fold's spans: a turn's span is the root of
// the chat and tool spans of its steps, with nanosecond times.
func TestTraceIsTheTelemetryFold(t *testing.T) {
	dir := t.TempDir()
	id := recordTurn(t, storedComposition(dir, "Be brief.", ""))
	a := newAPI(t, storedComposition(dir, "Be brief.", ""), server.Options{})
	got, body := a.do("GET", "/v1/sessions/"+id+"/trace", "")
	require.Equal(t, http.StatusOK, got, "%s", body)
	var raw struct {
		Spans []map[string]any `json:"spans"`
	}
	require.NoError(t, json.Unmarshal(body, &raw))
	for _, sp := range raw.Spans {
		for _, k := range []string{"start", "end"} {
			_, err := time.Parse(time.RFC3339Nano, sp[k].(string))
			assert.NoError(t, err)
		}
	}
	var tr server.Trace
	require.NoError(t, json.Unmarshal(body, &tr))
	require.NotEmpty(t, tr.Spans)
	root := tr.Spans[len(tr.Spans)-1]
	assert.Empty(t, root.Parent)
	assert.Equal(t, 1, root.Turn)
	chats, tools := 0, 0
	for _, sp := range tr.Spans[:len(tr.Spans)-1] {
		assert.Equal(t, root.TraceID, sp.TraceID)
		assert.NotEmpty(t, sp.Parent)
		// The log's time format is fixed-width: its strings order as times.
		assert.Len(t, sp.Start, len("2006-01-02T15:04:05.000Z"))
		assert.LessOrEqual(t, sp.Start, sp.End)
		if strings.HasPrefix(sp.Name, "chat") {
			chats++
		}
		if strings.HasPrefix(sp.Name, "execute_tool") {
			tools++
		}
	}
	assert.Equal(t, 2, chats)
	assert.Equal(t, 1, tools)
}

// Usage is the budget tally, priced by the composition's budget entry.
func TestUsagePerTurn(t *testing.T) {
	dir := t.TempDir()
	id := recordTurn(t, storedComposition(dir, "Be brief.", ""))
	a := newAPI(t, storedComposition(dir, "Be brief.", ""), server.Options{})
	var u server.Usage
	a.json(http.StatusOK, "GET", "/v1/sessions/"+id+"/usage", "", &u)
	log, err := a.rt.Session(context.Background(), id)
	require.NoError(t, err)
	acc := budget.Tally(log.Records, map[string]budget.Price{"": {Input: 1, Output: 2}})
	require.Len(t, u.Turns, 1)
	assert.Equal(t, 2, u.Turns[0].Steps)
	assert.Equal(t, acc.Session.Input, u.Total.Input)
	assert.Equal(t, acc.Session.Output, u.Total.Output)
	require.NotNil(t, u.Total.CostUSD)
	assert.Equal(t, *acc.Session.Cost, *u.Total.CostUSD)
	assert.Positive(t, u.Total.Input+u.Total.Output)
}

// A replay against the composition that recorded the session is
// identical; against one with another system prompt it diverges at the
// first step's header, and the stored session is not changed.
func TestReplayAgainstTheServersComposition(t *testing.T) {
	dir := t.TempDir()
	id := recordTurn(t, storedComposition(dir, "Be brief.", ""))
	path := filepath.Join(dir, id+".jsonl")
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	same := newAPI(t, storedComposition(dir, "Be brief.", ""), server.Options{})
	var rep server.ReplayReport
	same.json(http.StatusOK, "GET", "/v1/sessions/"+id+"/replay", "", &rep)
	assert.True(t, rep.Identical, "%+v", rep)
	assert.Equal(t, 2, rep.Steps)
	assert.Equal(t, 2, rep.IdenticalSteps)
	assert.Nil(t, rep.Diverged)

	other := newAPI(t, storedComposition(dir, "Be verbose.", ""), server.Options{})
	other.json(http.StatusOK, "GET", "/v1/sessions/"+id+"/replay", "", &rep)
	assert.False(t, rep.Identical)
	require.NotNil(t, rep.Diverged)
	assert.Equal(t, 1, rep.Diverged.Turn)
	assert.Equal(t, 1, rep.Diverged.Step)
	assert.Equal(t, "header.system", rep.Diverged.Field)
	assert.Positive(t, rep.Diverged.Seq)
	assert.NotEmpty(t, rep.Diverged.HeaderDiff)
	assert.Empty(t, rep.Diverged.MessageDiff)
	assert.Contains(t, strings.Join(rep.Diverged.HeaderDiff, "\n"), "+ ")

	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after, "a replay writes nothing to the stored session")
	infos, err := other.rt.Sessions(context.Background())
	require.NoError(t, err)
	assert.Len(t, infos, 1, "nor any session to the store")
}

// A fork made through the route is in its parent's tenant, by the
// caller; an admin forking another tenant's session makes it there too.
func TestAForkIsInItsParentsTenantByTheCaller(t *testing.T) {
	f := newTenantFixture(t)
	for _, tok := range []string{"acme-user", "admin"} {
		f.auth = tokenOf(tok)
		var fk server.ForkInfo
		f.json(http.StatusCreated, "POST", "/v1/sessions/"+f.acme+"/forks", `{"at":-1}`, &fk)
		assert.Equal(t, f.acme, fk.Parent)
		var sum server.Summary
		f.json(http.StatusOK, "GET", "/v1/sessions/"+fk.ID, "", &sum)
		assert.Equal(t, "acme", sum.Tenant, tok)
		assert.Equal(t, people[tok].Name, sum.By)
	}
	// The step the acme session is suspended in is shown, its digest
	// matched, to its tenant's viewer.
	f.auth = tokenOf("acme-viewer")
	var req server.StepRequest
	f.json(http.StatusOK, "GET", "/v1/sessions/"+f.acme+"/steps/1/1/request", "", &req)
	assert.True(t, req.Digest.Match)
	assert.False(t, req.Checkpoint.Signed)
	assert.Equal(t, int64(-1), req.Checkpoint.CheckpointSeq)
}
