package replay_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// TestRunReplaysTheLogsThePropertyFound: the logs in testdata/found are
// sessions the real loop recorded that a rerun once did not follow (the
// property tests found them; each file's name says what the rerun got
// wrong, and below, the rapid seed). Each verifies and reruns
// event for event, every request the same.
//
//   - continuation-without-the-tool (seed 12659156690246245004): the
//     continuation of a fork was offered no tool, so it ran nothing
//     again, and its process died before its first request/header.
//   - budget-refused-a-step-past-the-limit (seed 13601066015327027756):
//     a turn a budget refused at step n ran under an instance allowing n
//     steps or more.
//   - resumed-by-another-process-without-a-header (seed 25679414): a
//     turn's first step was the previous turn's instance's, and another
//     process, of a lower step limit, resumed its suspended step.
//   - ignorable-record-inside-a-turn: an ignorable record between a
//     turn's records stopped the rerun (a rapid failfile once kept it,
//     which the generator has since outgrown).
func TestRunReplaysTheLogsThePropertyFound(t *testing.T) {
	files, err := filepath.Glob("testdata/found/*.jsonl")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			log, err := session.DecodeBytes(data)
			require.NoError(t, err)
			root := quietRoot()
			defer root.Dispose()
			rr := rerunIdentically(t, root.Context(), log.Records)
			sameEvents(t, log.Records, rr.Session.Records())
		})
	}
}
