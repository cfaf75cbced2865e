package vigil_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// The kill trials run the approval flow in a child process (this test
// binary, told so by the environment) that kills itself with SIGKILL at
// one record of the log: just before it is stored (in the veto phase of
// its append) or just after. Every trial picks another record, so the
// flow is cut at every point it has.
const (
	killDirEnv  = "VIGIL_KILL_TRIAL_DIR"
	killSeqEnv  = "VIGIL_KILL_TRIAL_SEQ"
	killWhenEnv = "VIGIL_KILL_TRIAL_WHEN"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(killDirEnv); dir != "" {
		os.Exit(killTrialChild(dir))
	}
	os.Exit(m.Run())
}

// killTrialChild runs the whole flow once: a turn that asks for two
// calls, then a decision for each (allow, deny) in the same process,
// which resumes and completes the turn. It kills itself at the record
// its environment names; it returns only when that record never came.
func killTrialChild(dir string) int {
	ctx := context.Background()
	seq, _ := strconv.ParseInt(os.Getenv(killSeqEnv), 10, 64)
	before := os.Getenv(killWhenEnv) == "before"
	rt, err := vigil.Open(ctx, askingAgent(dir, twoCalcs, scripted.Reply{Text: "Done."}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	kill := func(rec session.Record) {
		if rec.Seq() == seq {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
	bus.Veto.On(rt.Context(), func(_ context.Context, d bus.Dispatch) error {
		if cm, ok := d.Payload.(live.Commit); ok && before && d.Name == live.Committed.Name() {
			kill(cm.Record())
		}
		return nil
	})
	live.Committed.On(rt.Context(), func(_ context.Context, cm live.Commit) error {
		if !before {
			kill(cm.Record())
		}
		return nil
	})
	res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "compute"})
	if !errors.Is(err, vigil.ErrSuspended) {
		fmt.Fprintln(os.Stderr, "turn:", err)
		return 1
	}
	for i, p := range res.Pending {
		if _, err := rt.Decide(ctx, vigil.DecideOptions{Session: res.Session, Call: p.Call.ID, Decision: vigil.Decision{Allow: i == 0, By: "trial"}}); err != nil {
			fmt.Fprintln(os.Stderr, "decide:", err)
			return 1
		}
	}
	return 0
}

// TestKillAtAnyPointOfTheApprovalFlowLeavesALogThatLoadsVerifiesAndResumes:
// after a SIGKILL at each record, the log verifies, a new process opens
// it (repairing an interrupted turn, not a suspended one) and finishes
// the flow: it decides what is undecided, resumes what was decided, or
// runs a new turn after an interruption; the result verifies again.
func TestKillAtAnyPointOfTheApprovalFlowLeavesALogThatLoadsVerifiesAndResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process per trial")
	}
	// The flow writes 27 records (seqs 0 to 26): kill at each, before and after.
	const records = 27
	trials, killed := 0, 0
	for seq := int64(0); seq < records; seq++ {
		for _, when := range []string{"before", "after"} {
			t.Run(fmt.Sprintf("%s_%d", when, seq), func(t *testing.T) {
				trials++
				dir := filepath.Join(t.TempDir(), "sessions")
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), killDirEnv+"="+dir, killSeqEnv+"="+strconv.FormatInt(seq, 10), killWhenEnv+"="+when)
				out, err := cmd.CombinedOutput()
				var ee *exec.ExitError
				if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
					killed++
				} else {
					require.NoError(t, err, "the flow without a kill: %s", out)
				}
				finishAfterKill(t, dir)
			})
		}
	}
	t.Logf("%d trials, %d killed mid-flow", trials, killed)
	assert.Equal(t, 2*records, killed, "every trial's record came: the flow has %d records", records)
}

// finishAfterKill checks the log a killed flow left in dir and finishes
// the flow in a fresh runtime.
func finishAfterKill(t *testing.T, dir string) {
	ctx := context.Background()
	// The model of this process answers: the decided calls' step goes on
	// to a final answer.
	rt := open(t, askingAgent(dir, scripted.Reply{Text: "Done."}))
	infos, err := rt.Sessions(ctx)
	require.NoError(t, err)
	if len(infos) == 0 {
		return // killed before the session was created
	}
	require.Len(t, infos, 1)
	id := infos[0].ID
	verifyStored(t, dir, id)

	pending, err := rt.Pending(ctx, id)
	require.NoError(t, err)
	before, err := rt.Session(ctx, id)
	require.NoError(t, err)
	var res *vigil.Result
	switch {
	case pending != nil && pending.Ready():
		res, err = rt.Resume(ctx, id, nil)
	case pending != nil:
		for _, c := range pending.Undecided() {
			res, err = rt.Decide(ctx, vigil.DecideOptions{Session: id, Call: c.Call.ID, Decision: vigil.Decision{Allow: true, By: "after"}})
			require.NoError(t, err)
		}
	default:
		// Interrupted (repaired when opened) or done: the session goes on
		// with a turn of its own.
		res, err = rt.Turn(ctx, vigil.TurnOptions{Session: id, Prompt: "again"})
	}
	require.NoError(t, err)
	require.NotNil(t, res)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	verifyStored(t, dir, id)

	// A suspended tail is not a crash: nothing closed it as interrupted.
	after, err := rt.Session(ctx, id)
	require.NoError(t, err)
	interrupted := 0
	for _, r := range after.Records[len(before.Records):] {
		if end, err := session.DecodeData[session.TurnEnd](r); err == nil && r.Type() == session.TypeTurnEnd && end.Reason == session.ReasonInterrupted {
			interrupted++
		}
	}
	if pending != nil {
		assert.Zero(t, interrupted, "the suspended turn was resumed, not repaired")
	}
}

// verifyStored runs the offline verifier on session id's stored log.
func verifyStored(t *testing.T, dir, id string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, id+".jsonl"))
	require.NoError(t, err)
	defer f.Close()
	rep, err := invariants.Verify(f)
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
}
