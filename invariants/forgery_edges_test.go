package invariants_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/note"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// signingWorld is a manager on a memory store that signs with the
// returned key's signer, under strict invariants and an approvals policy
// that asks for every read_file; audit holds the key's verifier.
func signingWorld(t *testing.T) (c *bus.Context, mgr *live.Manager, signer note.Signer, audit *invariants.Audit) {
	return signingWorldOn(t, memory.New())
}

// signingWorldOn is signingWorld on store.
func signingWorldOn(t *testing.T, store session.Store) (c *bus.Context, mgr *live.Manager, signer note.Signer, audit *invariants.Audit) {
	skey, vkey, err := note.GenerateKey(rand.Reader, "vigil-audit-test")
	require.NoError(t, err)
	signer, err = note.NewSigner(skey)
	require.NoError(t, err)
	verifier, err := note.NewVerifier(vkey)
	require.NoError(t, err)
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	c = root.Context()
	_, err = c.Plugin(invariants.New(), &invariants.Config{})
	require.NoError(t, err)
	var tick int64
	mgr = live.NewManager(c, store, live.WithSigner(signer), live.WithClock(func() time.Time {
		tick++
		return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(tick) * time.Millisecond)
	}))
	_, err = live.Sessions.Provide(c, mgr)
	require.NoError(t, err)
	_, err = c.Plugin(approvals.Plugin, &approvals.Config{Rules: []approvals.Rule{{Tool: "read_file", Action: "ask", Reason: "reads need a yes"}}})
	require.NoError(t, err)
	return c, mgr, signer, &invariants.Audit{Verifiers: note.VerifierList(verifier)}
}

func scriptedAgent(t *testing.T, c *bus.Context, replies ...scripted.Reply) *agentloop.Agent {
	prov, err := scripted.New(scripted.Config{Script: replies})
	require.NoError(t, err)
	return agentloop.New(c, agentloop.Config{Model: "m-1"}, agentloop.WithProvider(prov), agentloop.WithTools(echoTool("read_file")))
}

// audited verifies data with audit: a consistent log (verify alone finds
// nothing), and its integrity.
func audited(t *testing.T, data []byte, audit *invariants.Audit) *invariants.Integrity {
	t.Helper()
	plain, err := invariants.Verify(bytes.NewReader(data))
	require.NoError(t, err)
	require.Empty(t, plain.Violations, "the log is consistent: verify alone finds nothing")
	rep, err := invariants.VerifyAudited(bytes.NewReader(data), audit)
	require.NoError(t, err)
	return rep.Integrity
}

// TestAnEditedForkPrefixBreaksItsHeadersRoot: a fork's header binds the
// prefix it inherits by the root of its tree, so editing the prefix (a
// user message of the parent's turn, digests recomputed) is an
// edge-mismatch; the untouched fork is bound and clean, its inherited
// checkpoints verified under the parent's origin; a fork without a root
// (as written before forks bound their prefix) verifies, not bound.
func TestAnEditedForkPrefixBreaksItsHeadersRoot(t *testing.T) {
	c, mgr, signer, audit := signingWorld(t)
	checkForkForgery(t, c, mgr, signer, audit, func(_ *testing.T, data []byte) []byte { return data })
}

// checkForkForgery forks a session of mgr and edits the fork's prefix;
// stored is as for checkDeciderForgery.
func checkForkForgery(t *testing.T, c *bus.Context, mgr *live.Manager, signer note.Signer, audit *invariants.Audit, stored func(t *testing.T, data []byte) []byte) {
	ctx := context.Background()
	parent, err := mgr.Create(ctx)
	require.NoError(t, err)
	a := scriptedAgent(t, c, scripted.Reply{Text: "one"}, scripted.Reply{Text: "two"})
	_, err = a.Run(ctx, parent, "first")
	require.NoError(t, err)
	at := int64(lastIndex(specsOf(parent.Records()), session.TypeTurnEnd))
	fork, err := mgr.Fork(ctx, parent.ID(), at)
	require.NoError(t, err)
	require.NotEmpty(t, fork.Info().Parent.Root)
	_, err = a.Run(ctx, fork, "second")
	require.NoError(t, err)
	require.NoError(t, fork.Close(ctx))
	info, records := fork.Info(), fork.Records()

	in := audited(t, stored(t, forge(info, records).jsonl(t)), audit)
	assert.Empty(t, in.Findings, "the untouched fork")
	assert.Equal(t, "bound", in.Fork)

	f := forge(info, records)
	f.edit(session.TypeUserMessage, 0, func(m map[string]any) { m["content"] = "something else" })
	in = audited(t, stored(t, f.jsonl(t)), audit)
	assert.Contains(t, kinds(in), invariants.FindingEdgeMismatch)

	// An old fork: no root in its header, its own checkpoints signed over
	// that header (as its writer did).
	f = forge(info, records)
	old := *info.Parent
	old.Root = ""
	f.info.Parent = &old
	for i := range f.specs {
		if f.specs[i].ev.Type != session.TypeCheckpoint || int64(i) <= at {
			continue
		}
		var tree session.MerkleTree
		for _, l := range bytes.SplitAfter(f.jsonl(t), []byte("\n"))[1 : i+1] {
			tree.Add(l)
		}
		msg, err := session.SignCheckpoint(session.Checkpoint{Origin: session.CheckpointOrigin(info.ID), Size: int64(i), Root: tree.Root(), Header: session.HeaderHashOf(f.info)}, signer)
		require.NoError(t, err)
		f.specs[i].ev = session.CheckpointEvent(msg)
	}
	in = audited(t, stored(t, f.jsonl(t)), audit)
	assert.Empty(t, in.Findings)
	assert.Equal(t, "not bound", in.Fork)
}

// TestAnApprovalsDeciderIsUnderASignedRoot: a decision is signed as soon
// as it is logged, so changing its by (who allowed the call) breaks a
// checkpoint, even while the turn still waits to resume.
func TestAnApprovalsDeciderIsUnderASignedRoot(t *testing.T) {
	c, mgr, _, audit := signingWorld(t)
	checkDeciderForgery(t, c, mgr, audit, func(_ *testing.T, data []byte) []byte { return data })
}

// checkDeciderForgery runs the decided turn on mgr and forges its
// decision's by; stored puts a log into mgr's store as a forger would
// and returns what the store then loads (see checkForgeries).
func checkDeciderForgery(t *testing.T, c *bus.Context, mgr *live.Manager, audit *invariants.Audit, stored func(t *testing.T, data []byte) []byte) {
	ctx := context.Background()
	sess, err := mgr.Create(ctx)
	require.NoError(t, err)
	a := scriptedAgent(t, c, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "read_file", Arguments: map[string]any{"path": "a"}}}}, scripted.Reply{Text: "done"})
	res, err := a.Run(ctx, sess, "read a")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	_, err = agentloop.Decide(ctx, sess, res.Pending[0].Call.ID, agentloop.Decision{Allow: true, By: "ann"})
	require.NoError(t, err)
	info, records := sess.Info(), sess.Records()
	require.Equal(t, session.TypeCheckpoint, records[len(records)-1].Type(), "the decision is signed at once")

	in := audited(t, stored(t, forge(info, records).jsonl(t)), audit)
	assert.Empty(t, in.Findings)
	assert.Zero(t, in.After)

	f := forge(info, records)
	f.edit(session.TypeApprovalDecision, 0, func(m map[string]any) {
		require.Equal(t, "ann", m["by"])
		m["by"] = "mallory"
	})
	data := stored(t, f.jsonl(t))
	require.True(t, strings.Contains(string(data), `"by":"mallory"`))
	in = audited(t, data, audit)
	assert.Contains(t, kinds(in), invariants.FindingCheckpointMismatch)
}
