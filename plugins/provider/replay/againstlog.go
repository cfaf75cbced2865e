package replay

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// LogReport is [AgainstLog]'s report of one stored log.
type LogReport struct {
	// Session is the log's id; Steps counts its recorded steps.
	Session string
	Steps   int
	// Log is the decoded log, Result what [Against] found.
	Log    *session.Log
	Result *AgainstResult
}

// AgainstLog re-runs a stored JSONL log through agent, the loop of the
// composition on c (see [Against]), on a new session in a memory store
// of its own, so nothing is written to any store and the stored log is
// never changed: the rerun `vigil replay --against` and the API's replay
// report both make. A log that fails verify is refused: its recorded
// requests prove nothing to compare with. With opts.Live the rerun
// session must be given in opts.Session (a fork where the caller wants
// it written).
func AgainstLog(ctx context.Context, c *bus.Context, agent *agentloop.Agent, data []byte, opts AgainstOptions) (*LogReport, error) {
	vr, err := invariants.Verify(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if len(vr.Violations) > 0 {
		msgs := make([]string, len(vr.Violations))
		for i, v := range vr.Violations {
			msgs[i] = v.String()
		}
		return nil, fmt.Errorf("refused: the log fails verify: %s", strings.Join(msgs, "; "))
	}
	log, err := session.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	rec, err := FromRecords(log.Records)
	if err != nil {
		return nil, err
	}
	rep := &LogReport{Session: log.Info.ID, Steps: len(rec.Steps), Log: log}
	mgr := live.NewManager(c, memory.New())
	defer func() { _ = mgr.Close(context.WithoutCancel(ctx)) }()
	if rep.Result, err = Against(ctx, c, mgr, agent, log.Records, opts); err != nil {
		return rep, err
	}
	return rep, nil
}
