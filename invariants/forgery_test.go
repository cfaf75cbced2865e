package invariants_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/note"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	jsonlstore "github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// signedSession runs a turn per prompt (two when none is given: a tool
// call, then an answer; then an answer; any later turn an answer) on a
// manager that signs with signer, and returns the log's header and
// records and each turn's receipt, on store (a memory store when nil).
func signedSession(t *testing.T, signer note.Signer, store session.Store, prompts ...string) (session.Info, []session.Record, []string) {
	if len(prompts) == 0 {
		prompts = []string{"read a", "thanks"}
	}
	if store == nil {
		store = memory.New()
	}
	ctx := context.Background()
	root := bus.New()
	defer func() { _ = root.Dispose() }()
	c := root.Context()
	_, err := c.Plugin(invariants.New(), &invariants.Config{})
	require.NoError(t, err)
	var tick int64
	mgr := live.NewManager(c, store, live.WithSigner(signer), live.WithClock(func() time.Time {
		tick++
		return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(tick) * time.Millisecond)
	}))
	sess, err := mgr.Create(ctx)
	require.NoError(t, err)
	prov, err := scripted.New(scripted.Config{Script: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "read_file", Arguments: map[string]any{"path": "a"}}}},
		{Text: "the file says a"}, {Text: "bye"}, {Text: "ok"},
	}})
	require.NoError(t, err)
	a := agentloop.New(c, agentloop.Config{Model: "m-1"}, agentloop.WithProvider(prov), agentloop.WithTools(echoTool("read_file")))
	var receipts []string
	for _, prompt := range prompts {
		res, err := a.Run(ctx, sess, prompt)
		require.NoError(t, err)
		require.NotEmpty(t, res.Checkpoint, "the turn's receipt")
		receipts = append(receipts, res.Checkpoint)
	}
	require.NoError(t, sess.Close(ctx))
	return sess.Info(), sess.Records(), receipts
}

// forged is a log being edited as a forger would: every line made by the
// session package, times kept, digests recomputed, so that only what
// the forger changed differs.
type forged struct {
	info  session.Info
	specs []spec
	times []time.Time
}

func forge(info session.Info, records []session.Record) *forged {
	f := &forged{info: info, specs: specsOf(records)}
	for _, r := range records {
		f.times = append(f.times, r.Time())
	}
	return f
}

func (f *forged) delete(from, to int) {
	f.specs = renumber(append(f.specs[:from:from], f.specs[to:]...))
	f.times = append(f.times[:from:from], f.times[to:]...)
}

// jsonl renders the log, each request/digest recomputed from the log
// before it, as the documented digest has it.
func (f *forged) jsonl(t *testing.T) []byte {
	out := session.AppendHeaderLine(nil, f.info)
	var recs []session.Record
	stepStart := 0
	for i, s := range f.specs {
		ev := s.ev
		switch ev.Type {
		case session.TypeStepStart:
			stepStart = len(recs)
		case session.TypeRequestDigest:
			h, ok := session.DeriveHeader(recs)
			require.True(t, ok)
			msgs, err := session.DeriveMessages(recs[:stepStart])
			require.NoError(t, err)
			sp := spec{ev: ev}
			setData(&sp, session.Digest{SHA256: session.RequestDigest(h, msgs), Messages: len(msgs)})
			ev = sp.ev
		}
		r, err := session.NewRecord(int64(i), f.times[i], ev)
		require.NoError(t, err)
		recs = append(recs, r)
		out = r.AppendLine(out)
	}
	return out
}

// edit rewrites the data of the n-th record of type typ.
func (f *forged) edit(typ string, n int, change func(map[string]any)) {
	i := find(f.specs, typ, n)
	var m map[string]any
	if err := json.Unmarshal(f.specs[i].ev.Data.(json.RawMessage), &m); err != nil {
		panic(err)
	}
	change(m)
	setData(&f.specs[i], m)
}

func lastIndex(specs []spec, typ string) int {
	for i := len(specs) - 1; i >= 0; i-- {
		if specs[i].ev.Type == typ {
			return i
		}
	}
	return -1
}

func kinds(in *invariants.Integrity) []string {
	var out []string
	for _, f := range in.Findings {
		out = append(out, f.Kind)
	}
	return out
}

// forgery is one edit of a signed log, as a forger without the key
// makes it, and the finding that names it.
type forgery struct {
	name   string
	forge  func(t *testing.T, f *forged) []byte
	anchor bool // verified against the last turn's receipt
	// finding is what verify --key names; when anchor, with the receipt.
	finding string
}

// resign replaces every checkpoint with one signer signs over the forged
// log, as a forger with a key of their own can.
func resign(t *testing.T, f *forged, signer note.Signer) []byte {
	for i := range f.specs {
		if f.specs[i].ev.Type != session.TypeCheckpoint {
			continue
		}
		var tree session.MerkleTree
		for _, l := range bytes.SplitAfter(f.jsonl(t), []byte("\n"))[1 : i+1] {
			tree.Add(l)
		}
		c := session.Checkpoint{Origin: session.CheckpointOrigin(f.info.ID), Size: int64(i), Root: tree.Root(), Header: session.HeaderHashOf(f.info)}
		msg, err := session.SignCheckpoint(c, signer)
		require.NoError(t, err)
		f.specs[i].ev = session.CheckpointEvent(msg)
	}
	return f.jsonl(t)
}

// dropTurn deletes turn n (its records and the checkpoint after its
// turn/end) and renumbers what follows: seqs, the seqs records cite and
// the later turns' numbers, so the log reads as if turn n never was.
func (f *forged) dropTurn(n int) {
	from := find(f.specs, session.TypeTurnStart, n-1)
	to := find(f.specs, session.TypeTurnStart, n)
	for i := to; i < len(f.specs); i++ {
		if f.specs[i].ev.Turn > 0 {
			f.specs[i].ev.Turn--
		}
	}
	f.delete(from, to)
}

// forgeries are the edits of a signed three-turn session (a tool
// call and its answer; then two answers), each keeping the log consistent.
func forgeries(other note.Signer) []forgery {
	return []forgery{
		{"a tool result changed, digests recomputed", func(t *testing.T, f *forged) []byte {
			f.edit(session.TypeToolResult, 0, func(m map[string]any) { m["content"] = "the file says b" })
			return f.jsonl(t)
		}, false, invariants.FindingCheckpointMismatch},
		{"a user message changed, every later digest recomputed", func(t *testing.T, f *forged) []byte {
			f.edit(session.TypeUserMessage, 0, func(m map[string]any) { m["content"] = "read b" })
			return f.jsonl(t)
		}, false, invariants.FindingCheckpointMismatch},
		{"usage changed", func(t *testing.T, f *forged) []byte {
			f.edit(session.TypeStepEnd, 0, func(m map[string]any) { m["usage"] = map[string]any{"input": 1, "output": 1} })
			return f.jsonl(t)
		}, false, invariants.FindingCheckpointMismatch},
		{"the request header's model changed", func(t *testing.T, f *forged) []byte {
			f.edit(session.TypeRequestHeader, 0, func(m map[string]any) { m["header"].(map[string]any)["model"] = "m-2" })
			return f.jsonl(t)
		}, false, invariants.FindingCheckpointMismatch},
		{"the header line changed", func(t *testing.T, f *forged) []byte {
			f.info.By = "mallory"
			return f.jsonl(t)
		}, false, invariants.FindingCheckpointMismatch},
		{"the session's creation time moved", func(t *testing.T, f *forged) []byte {
			f.info.Created = f.info.Created.Add(-24 * time.Hour)
			return f.jsonl(t)
		}, false, invariants.FindingCheckpointMismatch},
		{"the times of the second turn on moved an hour later", func(t *testing.T, f *forged) []byte {
			for i := find(f.specs, session.TypeTurnStart, 1); i < len(f.times); i++ {
				f.times[i] = f.times[i].Add(time.Hour)
			}
			return f.jsonl(t)
		}, false, invariants.FindingCheckpointMismatch},
		{"a middle turn dropped, seqs and turns renumbered, digests recomputed", func(t *testing.T, f *forged) []byte {
			f.dropTurn(2)
			return f.jsonl(t)
		}, false, invariants.FindingCheckpointMismatch},
		{"a fabricated turn appended with consistent digests", func(t *testing.T, f *forged) []byte {
			start := lastIndex(f.specs, session.TypeTurnStart)
			end := lastIndex(f.specs, session.TypeTurnEnd)
			turn := append([]spec(nil), f.specs[start:end+1]...)
			// The copy's seqs, and the seqs it cites, follow the log.
			shift := int64(len(f.specs) - start)
			for i := range turn {
				turn[i].seq += shift
				turn[i].ev.Turn++
				src := make([]int64, len(turn[i].ev.Sources))
				for j, x := range turn[i].ev.Sources {
					src[j] = x + shift
				}
				turn[i].ev.Sources = src
			}
			f.specs = renumber(append(f.specs, turn...))
			f.times = append(f.times, f.times[start:end+1]...)
			return f.jsonl(t)
		}, false, invariants.FindingUnsignedTail},
		{"every checkpoint stripped", func(t *testing.T, f *forged) []byte {
			for i := len(f.specs) - 1; i >= 0; i-- {
				if f.specs[i].ev.Type == session.TypeCheckpoint {
					f.delete(i, i+1)
				}
			}
			return f.jsonl(t)
		}, false, invariants.FindingUnsigned},
		{"a tool result changed and re-signed with another key", func(t *testing.T, f *forged) []byte {
			f.edit(session.TypeToolResult, 0, func(m map[string]any) { m["content"] = "the file says b" })
			return resign(t, f, other)
		}, false, invariants.FindingKeyMismatch},
		{"the last turn deleted", func(t *testing.T, f *forged) []byte {
			f.delete(lastIndex(f.specs, session.TypeTurnStart), len(f.specs))
			return f.jsonl(t)
		}, true, invariants.FindingBrokenAnchor},
		{"rewritten and re-signed, held to the receipt", func(t *testing.T, f *forged) []byte {
			f.edit(session.TypeUserMessage, 1, func(m map[string]any) { m["content"] = "no thanks" })
			return resign(t, f, other)
		}, true, invariants.FindingBrokenAnchor},
	}
}

// testKeys returns the auditor's key (its signer and an audit with its
// verifier) and a forger's signer.
func testKeys(t *testing.T) (signer note.Signer, audit *invariants.Audit, forger note.Signer) {
	skey, vkey, err := note.GenerateKey(rand.Reader, "vigil-audit-test")
	require.NoError(t, err)
	signer, err = note.NewSigner(skey)
	require.NoError(t, err)
	verifier, err := note.NewVerifier(vkey)
	require.NoError(t, err)
	otherKey, _, err := note.GenerateKey(rand.Reader, "forger")
	require.NoError(t, err)
	forger, err = note.NewSigner(otherKey)
	require.NoError(t, err)
	return signer, &invariants.Audit{Verifiers: note.VerifierList(verifier)}, forger
}

// forgeryPrompts are the three turns of the sessions the suite forges.
var forgeryPrompts = []string{"read a", "thanks", "bye"}

// checkForgeries runs every forgery of the session on a store: stored
// puts a forged log into it as a forger would (a file written, rows
// rewritten) and returns the log the store then loads, exported. Each
// forgery is consistent (verify alone finds nothing) and named by
// verify --key, or by --anchor with the last turn's receipt.
func checkForgeries(t *testing.T, info session.Info, records []session.Record, receipts []string, audit *invariants.Audit, forger note.Signer, stored func(t *testing.T, data []byte) []byte) {
	untouched := forge(info, records).jsonl(t)
	rep, err := invariants.VerifyAudited(bytes.NewReader(stored(t, untouched)), audit)
	require.NoError(t, err)
	require.Empty(t, rep.Violations)
	require.Empty(t, rep.Integrity.Findings, "the untouched log")
	assert.Equal(t, int64(len(records)-1), rep.Integrity.Covered)
	assert.Equal(t, []string{"vigil-audit-test"}, rep.Integrity.Keys)

	last := receipts[len(receipts)-1]
	for _, tc := range forgeries(forger) {
		t.Run(tc.name, func(t *testing.T) {
			data := stored(t, tc.forge(t, forge(info, records)))
			require.NotEqual(t, untouched, data, "the forgery changed the log")
			plain, err := invariants.Verify(bytes.NewReader(data))
			require.NoError(t, err)
			require.Empty(t, plain.Violations, "the forgery is consistent: verify alone finds nothing")
			a := audit
			if tc.anchor {
				a = &invariants.Audit{Verifiers: audit.Verifiers, Anchors: [][]byte{[]byte(last)}}
			}
			rep, err := invariants.VerifyAudited(bytes.NewReader(data), a)
			require.NoError(t, err)
			assert.Contains(t, kinds(rep.Integrity), tc.finding)
			assert.Equal(t, invariants.VerdictInvalid, rep.Verdict())
		})
	}
}

// exported renders a loaded log as JSONL.
func exported(log *session.Log) []byte {
	out := session.AppendHeaderLine(nil, log.Info)
	for _, r := range log.Records {
		out = r.AppendLine(out)
	}
	return out
}

// TestForgeriesAreFoundWithThePublicKey: each forgery of a signed log
// kept by store/jsonl (the file rewritten) is a named finding of
// verify --key (forgery_pg_test.go: the same on PostgreSQL).
func TestForgeriesAreFoundWithThePublicKey(t *testing.T) {
	signer, audit, forger := testKeys(t)
	info, records, receipts := signedSession(t, signer, nil, forgeryPrompts...)
	ctx := context.Background()
	checkForgeries(t, info, records, receipts, audit, forger, func(t *testing.T, data []byte) []byte {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, info.ID+".jsonl"), data, 0o600))
		store, err := jsonlstore.Open(dir)
		require.NoError(t, err)
		defer store.Close()
		log, err := store.Load(ctx, info.ID)
		require.NoError(t, err)
		return exported(log)
	})

	t.Run("the untouched log extends every receipt", func(t *testing.T) {
		a := &invariants.Audit{Verifiers: audit.Verifiers}
		for _, r := range receipts {
			a.Anchors = append(a.Anchors, []byte(r))
		}
		rep, err := invariants.VerifyAudited(bytes.NewReader(forge(info, records).jsonl(t)), a)
		require.NoError(t, err)
		assert.Empty(t, rep.Integrity.Findings)
		assert.Equal(t, len(receipts), rep.Integrity.Anchors)
	})
	t.Run("an unsigned log verifies as before, reported unsigned", func(t *testing.T) {
		rep, err := invariants.Verify(bytes.NewReader(sampleLog().jsonl("old")))
		require.NoError(t, err)
		assert.Equal(t, invariants.VerdictValid, rep.Verdict())
		assert.Zero(t, rep.Checkpoints)
	})
}
