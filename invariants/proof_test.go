package invariants_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

// provedSession is a signed two-turn session's JSONL log, and the
// auditor's verifier of its key.
func provedSession(t *testing.T) ([]byte, session.Info, note.Verifiers, note.Signer) {
	signer, keys := auditKey(t, "vigil-audit-test")
	log, info := signedLog(t, signer)
	return log, info, keys, signer
}

// auditKey is a new signing key named name and the verifiers of it.
func auditKey(tb testing.TB, name string) (note.Signer, note.Verifiers) {
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	require.NoError(tb, err)
	signer, err := note.NewSigner(skey)
	require.NoError(tb, err)
	verifier, err := note.NewVerifier(vkey)
	require.NoError(tb, err)
	return signer, note.VerifierList(verifier)
}

// signedLog is the JSONL log of a signed two-turn session.
func signedLog(t *testing.T, signer note.Signer) ([]byte, session.Info) {
	info, records, _ := signedSession(t, signer, nil)
	log := session.AppendHeaderLine(nil, info)
	for _, r := range records {
		log = r.AppendLine(log)
	}
	return log, info
}

func TestTurnProofVerifies(t *testing.T) {
	log, info, keys, _ := provedSession(t)
	for _, turn := range []int{1, 2} {
		p, err := invariants.ProveTurn(bytes.NewReader(log), turn)
		require.NoError(t, err)
		data, err := json.Marshal(p)
		require.NoError(t, err)
		p, err = invariants.DecodeTurnProof(data)
		require.NoError(t, err)
		got, err := invariants.VerifyTurnProof(p, keys)
		require.NoError(t, err)
		require.Equal(t, info.ID, got.Session)
		require.Equal(t, turn, got.Turn)
		require.Equal(t, "vigil-audit-test", got.Key)
		require.True(t, got.Ended)
		require.Equal(t, session.TypeTurnStart, got.Records[0].Type())
		require.Greater(t, got.Checkpoint.Size, got.Records[len(got.Records)-1].Seq())
		for _, r := range got.Records {
			require.Equal(t, turn, r.Turn())
		}
	}
	_, err := invariants.ProveTurn(bytes.NewReader(log), 3)
	require.Equal(t, invariants.ProofNoTurn, invariants.ProofReason(err))
}

// TestTurnProofRefusesEdits: each edit of a proof, or a proof put
// together from parts of others, is refused with its named reason.
func TestTurnProofRefusesEdits(t *testing.T) {
	log, _, keys, signer := provedSession(t)
	prove := func(t *testing.T, turn int) *invariants.TurnProof {
		p, err := invariants.ProveTurn(bytes.NewReader(log), turn)
		require.NoError(t, err)
		return p
	}
	otherLog, _ := signedLog(t, signer)
	otherSigner, _ := auditKey(t, "forger")
	resign := func(t *testing.T, p *invariants.TurnProof, s note.Signer, edit func(*session.Checkpoint)) {
		n, err := note.Open([]byte(p.Checkpoint), keys)
		require.NoError(t, err)
		c, err := session.ParseCheckpoint(n.Text)
		require.NoError(t, err)
		edit(&c)
		msg, err := session.SignCheckpoint(c, s)
		require.NoError(t, err)
		p.Checkpoint = string(msg)
	}

	cases := []struct {
		name   string
		edit   func(t *testing.T, p *invariants.TurnProof)
		reason string
	}{
		{"a line edited", func(t *testing.T, p *invariants.TurnProof) {
			l := &p.Lines[1]
			require.Contains(t, l.Line, "read a")
			l.Line = strings.Replace(l.Line, "read a", "read b", 1)
		}, invariants.ProofInclusion},
		{"a proof hash changed", func(t *testing.T, p *invariants.TurnProof) {
			h := tlog.Hash{1}
			p.Lines[2].Proof[0] = h.String()
		}, invariants.ProofInclusion},
		{"a proof hash dropped", func(t *testing.T, p *invariants.TurnProof) {
			p.Lines[0].Proof = p.Lines[0].Proof[1:]
		}, invariants.ProofInclusion},
		{"a line from another turn, with its proof against its own checkpoint", func(t *testing.T, p *invariants.TurnProof) {
			q := prove(t, 2)
			p.Lines = append(p.Lines, q.Lines[0])
		}, invariants.ProofNotCovered},
		{"a line from another turn, proved against the same checkpoint", func(t *testing.T, p *invariants.TurnProof) {
			q := prove(t, 2) // against the log's last checkpoint
			end := q.Lines[len(q.Lines)-1].Seq
			later, err := invariants.ProveTurnAt(bytes.NewReader(log), 1, end+1)
			require.NoError(t, err)
			require.Equal(t, q.Checkpoint, later.Checkpoint)
			*p = *later
			p.Lines = append(p.Lines, q.Lines[0])
		}, invariants.ProofWrongTurn},
		{"a proof of another turn relabelled", func(t *testing.T, p *invariants.TurnProof) {
			q := prove(t, 2)
			*p = *q
			p.Turn = 1
		}, invariants.ProofWrongTurn},
		{"a line left out", func(t *testing.T, p *invariants.TurnProof) {
			p.Lines = append(p.Lines[:2:2], p.Lines[3:]...)
		}, invariants.ProofIncomplete},
		{"the turn/start left out", func(t *testing.T, p *invariants.TurnProof) {
			p.Lines = p.Lines[1:]
		}, invariants.ProofIncomplete},
		{"another key", func(t *testing.T, p *invariants.TurnProof) {
			resign(t, p, otherSigner, func(*session.Checkpoint) {})
		}, invariants.ProofKeyMismatch},
		{"a signature broken", func(t *testing.T, p *invariants.TurnProof) {
			i := strings.LastIndex(p.Checkpoint, " ") + 1
			sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(p.Checkpoint[i:]))
			require.NoError(t, err)
			sig[len(sig)-1] ^= 1
			p.Checkpoint = p.Checkpoint[:i] + base64.StdEncoding.EncodeToString(sig) + "\n"
		}, invariants.ProofBadSignature},
		{"a checkpoint from another session", func(t *testing.T, p *invariants.TurnProof) {
			q, err := invariants.ProveTurn(bytes.NewReader(otherLog), 1)
			require.NoError(t, err)
			p.Checkpoint = q.Checkpoint
		}, invariants.ProofWrongSession},
		{"the session relabelled", func(t *testing.T, p *invariants.TurnProof) {
			p.Session = "01OTHERSESSION"
		}, invariants.ProofWrongSession},
		{"the header hash changed", func(t *testing.T, p *invariants.TurnProof) {
			p.Header = tlog.Hash{2}.String()
		}, invariants.ProofHeaderMismatch},
		{"a seq past the checkpoint", func(t *testing.T, p *invariants.TurnProof) {
			resign(t, p, signer, func(c *session.Checkpoint) { c.Size = p.Lines[len(p.Lines)-1].Seq })
		}, invariants.ProofNotCovered},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := prove(t, 1)
			_, err := invariants.VerifyTurnProof(p, keys)
			require.NoError(t, err, "the proof before the edit")
			tc.edit(t, p)
			data, err := json.Marshal(p)
			require.NoError(t, err)
			p, err = invariants.DecodeTurnProof(data)
			require.NoError(t, err)
			_, err = invariants.VerifyTurnProof(p, keys)
			require.Error(t, err)
			require.Equal(t, tc.reason, invariants.ProofReason(err), "%v", err)
		})
	}
}

func TestDecodeTurnProofRefuses(t *testing.T) {
	for _, in := range []string{``, `{}`, `{"version":2,"lines":[{}]}`, `{"version":1,"lines":[]}`, `{"version":1,"lines":[{}],"extra":1}`, `{"version":1,"lines":[{}]} {}`} {
		_, err := invariants.DecodeTurnProof([]byte(in))
		require.Equal(t, invariants.ProofMalformed, invariants.ProofReason(err), in)
	}
}

// FuzzDecodeTurnProof: any bytes decode to a proof or a malformed
// refusal, and a decoded proof verifies or is refused with a reason,
// never a panic; what decodes re-encodes to what decodes the same.
func FuzzDecodeTurnProof(f *testing.F) {
	signer, keys := auditKey(f, "fuzz")
	b := newLogBuilder(session.Header{Model: "m"})
	b.signer = signer
	b.turnWith("hi", stepSpec{chunks: []string{"hello"}})
	p, err := invariants.ProveTurn(bytes.NewReader(b.jsonl(b.id())), 1)
	require.NoError(f, err)
	seed, err := json.Marshal(p)
	require.NoError(f, err)
	f.Add(seed)
	f.Add([]byte(`{"version":1,"session":"s","turn":1,"header":"","checkpoint":"","lines":[{"seq":0,"line":"{}","proof":["AA=="]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := invariants.DecodeTurnProof(data)
		if err != nil {
			require.Equal(t, invariants.ProofMalformed, invariants.ProofReason(err))
			return
		}
		if _, err := invariants.VerifyTurnProof(p, keys); err != nil {
			require.NotEmpty(t, invariants.ProofReason(err), "%v", err)
		}
		again, err := json.Marshal(p)
		require.NoError(t, err)
		q, err := invariants.DecodeTurnProof(again)
		require.NoError(t, err)
		require.Equal(t, p, q)
	})
}
