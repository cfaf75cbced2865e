package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/session"
)

// replayTimeout bounds one replay: a rerun serves every model reply from
// the recording, so only a tool of the composition that hangs makes one
// long.
const replayTimeout = 2 * time.Minute

// ReplayReport is what GET /v1/sessions/{id}/replay answers: the stored
// session re-run through the server's own composition, `vigil replay
// --against` of it (replay.AgainstLog): every recorded model reply
// served from the log, never from a model, in a session of a memory
// store, so the stored session is not changed.
type ReplayReport struct {
	Session string `json:"session"`
	// Identical: every recorded request was built again the same.
	Identical bool `json:"identical"`
	// Steps counts the recorded steps; IdenticalSteps the requests built
	// again that equal the recorded ones.
	Steps          int `json:"steps"`
	IdenticalSteps int `json:"identical_steps"`
	// Diverged is the first request that differs, nil when none did.
	Diverged *Divergence `json:"diverged"`
	// Errors are the errors the re-run turns ended with.
	Errors []string `json:"errors"`
}

// Divergence is where a replay first built another request than the
// recorded one.
type Divergence struct {
	Turn int `json:"turn"`
	Step int `json:"step"`
	// Seq is the recorded step's request/digest (its step/start without
	// one; the turn/start of the turn a one-shot came before).
	Seq int64 `json:"seq"`
	// Field names what differs: "header.system", "messages[3]", …,
	// "request" for a request one side did not send.
	Field string `json:"field"`
	// OneShot is the purpose of the one-shot that differs, if it was one.
	OneShot string `json:"oneshot,omitempty"`
	// NotSent says why no request was sent for a recorded step.
	NotSent string `json:"not_sent,omitempty"`
	// HeaderDiff and MessageDiff are the lines of the diff ("- " the
	// recorded, "+ " the rebuilt, "  " context) of the header or of the
	// messages, whichever differs.
	HeaderDiff  []string `json:"header_diff"`
	MessageDiff []string `json:"message_diff"`
}

func (s *Server) handleReplay(w http.ResponseWriter, r *http.Request) (int, any, error) {
	info := admitted(r)
	select {
	case s.replays <- struct{}{}:
		defer func() { <-s.replays }()
	default:
		w.Header().Set("Retry-After", "5")
		return 0, nil, apiError(http.StatusTooManyRequests, CodeBusy, "another replay is running on this server; try again shortly")
	}
	agent, err := s.rt.Agent()
	if err != nil {
		return 0, nil, err
	}
	ctx, cancel := context.WithTimeout(r.Context(), replayTimeout)
	defer cancel()
	tail, err := s.tail(ctx, info.ID)
	if err != nil {
		return 0, nil, err
	}
	rd := s.logReader(ctx, tail.Info, tail.Next)
	data, err := io.ReadAll(rd)
	_ = rd.Close()
	if err != nil {
		return 0, nil, err
	}
	lr, err := replay.AgainstLog(ctx, s.rt.Context(), agent, data, replay.AgainstOptions{})
	if err != nil {
		if lr == nil || lr.Log == nil {
			// A log that fails verify has nothing to replay against.
			return 0, nil, apiError(http.StatusConflict, CodeConflict, "%s", err.Error())
		}
		return 0, nil, err
	}
	res := lr.Result
	out := ReplayReport{Session: info.ID, Identical: res.Divergence == nil, Steps: lr.Steps, IdenticalSteps: res.Identical, Errors: []string{}}
	for _, e := range res.Errors {
		out.Errors = append(out.Errors, e.Error())
	}
	if d := res.Divergence; d != nil {
		out.Diverged = divergenceOf(d, lr.Log.Records)
	}
	return http.StatusOK, out, nil
}

// divergenceOf is d as the API reports it, located in the recording.
func divergenceOf(d *replay.Divergence, recs []session.Record) *Divergence {
	out := &Divergence{Turn: d.Turn, Step: d.Step, Seq: -1, Field: d.Field, OneShot: d.OneShot, NotSent: d.NotSent,
		HeaderDiff: []string{}, MessageDiff: []string{}}
	for _, r := range recs {
		if r.Turn() != d.Turn {
			continue
		}
		switch {
		case d.Step == 0 && r.Type() == session.TypeTurnStart,
			d.Step > 0 && r.Step() == d.Step && r.Type() == session.TypeStepStart && out.Seq < 0,
			d.Step > 0 && r.Step() == d.Step && r.Type() == session.TypeRequestDigest:
			out.Seq = r.Seq()
		}
	}
	if d.NotSent == "" {
		lines := strings.Split(strings.TrimRight(d.Diff(), "\n"), "\n")
		if strings.HasPrefix(d.Field, "header") {
			out.HeaderDiff = lines
		} else {
			out.MessageDiff = lines
		}
	}
	return out
}
