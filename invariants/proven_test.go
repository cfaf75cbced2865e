package invariants_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

func verifyData(t *testing.T, data []byte) *invariants.Report {
	t.Helper()
	rep, err := invariants.Verify(bytes.NewReader(data))
	require.NoError(t, err)
	return rep
}

// TestVerifyRefusesModelOutputNoDigestProves: a step's reply is proven
// only by the request/digest the loop logs before it hands the request
// to the provider. Deleting every digest, moving one after the reply, or
// logging a second one is request-digest, once per step.
func TestVerifyRefusesModelOutputNoDigestProves(t *testing.T) {
	specs := specsOf(sampleLog().records)
	steps := 0
	var noDigest []spec
	for _, s := range specs {
		if s.ev.Type == session.TypeStepStart {
			steps++
		}
		if s.ev.Type != session.TypeRequestDigest {
			noDigest = append(noDigest, s)
		}
	}
	moved := slices.Clone(specs)
	d := find(moved, session.TypeRequestDigest, 1)
	m := find(moved, session.TypeAssistantMessage, 1)
	dg := moved[d]
	moved = slices.Insert(slices.Delete(moved, d, d+1), m, dg)
	second := slices.Clone(specs)
	d = find(second, session.TypeRequestDigest, 2)
	second = slices.Insert(second, d+1, second[d])

	cases := []struct {
		name  string
		specs []spec
		want  int // request-digest violations
		msg   string
	}{
		{"every digest deleted", noDigest, steps, "which has no request/digest"},
		{"a digest after the reply", moved, 1, "which has no request/digest"},
		{"a second digest", second, 1, "a second request/digest in turn 2 step 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data, err := jsonlOf("s1", renumber(tc.specs))
			require.NoError(t, err)
			rep := verifyData(t, data)
			var got []invariants.Violation
			for _, v := range rep.Violations {
				if v.Rule == invariants.RuleRequestDigest {
					got = append(got, v)
				}
			}
			require.Len(t, got, tc.want, "%v", rep.Violations)
			assert.Contains(t, got[0].Message, tc.msg)
			assert.Equal(t, invariants.VerdictInvalid, rep.Verdict())
		})
	}
}

// TestVerifyNoPrefixInsideATurnPassesAsComplete: every prefix of a log
// verifies, but only one that ends outside a turn is valid; any other
// is open, and says which turn and where the log ends. A suspended step
// is open too, and says it waits.
func TestVerifyNoPrefixInsideATurnPassesAsComplete(t *testing.T) {
	b := sampleLog()
	lines := bytes.SplitAfter(b.jsonl("cut"), []byte("\n"))
	lines = lines[:len(lines)-1] // the empty string after the last newline
	inTurn := false
	for n := 1; n < len(lines); n++ {
		rep := verifyData(t, bytes.Join(lines[:n+1], nil))
		require.Empty(t, rep.Violations, "prefix of %d records", n)
		last := b.records[n-1]
		switch last.Type() {
		case session.TypeTurnStart:
			inTurn = true
		case session.TypeTurnEnd:
			inTurn = false
		}
		if !inTurn {
			assert.Equal(t, invariants.VerdictValid, rep.Verdict(), "prefix of %d records", n)
			assert.Nil(t, rep.Open)
			continue
		}
		require.NotNil(t, rep.Open, "prefix of %d records", n)
		assert.Equal(t, invariants.VerdictOpen, rep.Verdict())
		assert.Equal(t, last.Turn(), rep.Open.Turn)
		assert.Equal(t, last.Seq(), rep.Open.LastSeq)
		assert.False(t, rep.Open.Suspended)
		assert.Contains(t, rep.Open.String(), "no process closed it")
	}

	suspended := approvedLog(t, "a", []string{allow}, []int{0})
	at := slices.IndexFunc(suspended, func(r session.Record) bool { return r.Type() == session.TypeApprovalRequest })
	data := session.AppendHeaderLine(nil, session.Info{ID: "waits"})
	for _, r := range suspended[:at+1] {
		data = r.AppendLine(data)
	}
	rep := verifyData(t, data)
	require.Empty(t, rep.Violations)
	require.NotNil(t, rep.Open)
	assert.Equal(t, invariants.OpenTurn{Turn: 1, Step: 1, LastSeq: int64(at), Suspended: true}, *rep.Open)
	assert.Equal(t, fmt.Sprintf("turn 1 is open: the log ends at seq %d (step 1 waits for approval decisions)", at), rep.Open.String())
}

// TestVerifyCountsWhatItProved: the report says what the log proves: the
// steps, the requests re-derived and the digests that matched, the
// approvals and the delegations, and the SHA-256 of the bytes read.
func TestVerifyCountsWhatItProved(t *testing.T) {
	data := sampleLog().jsonl("counted")
	rep := verifyData(t, data)
	sum := sha256.Sum256(data)
	assert.Equal(t, hex.EncodeToString(sum[:]), rep.SHA256)
	assert.Equal(t, invariants.Proven{Steps: 4, Requests: 4, DigestsMatched: 4}, rep.Proven)
	assert.Equal(t, invariants.VerdictValid, rep.Verdict())

	specs := specsOf(sampleLog().records)
	i := find(specs, session.TypeUserMessage, 1)
	setData(&specs[i], session.UserMessage{Content: "edited"})
	tampered, err := jsonlOf("s1", specs)
	require.NoError(t, err)
	rep = verifyData(t, tampered)
	assert.Equal(t, invariants.Proven{Steps: 4, Requests: 4, DigestsMatched: 2}, rep.Proven, "turn 2's two requests no longer match")

	records := approvedLog(t, "aad", []string{deny, allow}, []int{0, 1})
	data = session.AppendHeaderLine(nil, session.Info{ID: "approved"})
	for _, r := range records {
		data = r.AppendLine(data)
	}
	rep = verifyData(t, data)
	require.Empty(t, rep.Violations)
	assert.Equal(t, 3, rep.Proven.Approvals, "two decisions in turn 1, one in turn 2")
}
