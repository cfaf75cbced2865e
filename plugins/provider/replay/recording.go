package replay

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// Step is the recorded model output of one step.
type Step struct {
	Turn, Step int
	// Digest is the step's request/digest, "" when none was logged.
	Digest string
	// Header is the request header in force at the step: the latest
	// request/header up to the step's request.
	Header session.Header
	Chunks []agentloop.Chunk
	Usage  *session.Usage
	Finish string
	// Err is why the step's stream failed ("" when it did not): the error
	// of the turn/end that followed a step that finished with "error".
	Err string
}

// Recording is a log's model output, step by step, in log order.
type Recording struct {
	// Provider is the provider named by the first request/header.
	Provider string
	Steps    []Step
}

// FromRecords groups records by turn and step.
func FromRecords(recs []session.Record) (*Recording, error) {
	rec := &Recording{}
	var cur *Step
	var failed []int // steps of the open turn that finished with "error"
	var hdr session.Header
	for i, r := range recs {
		switch r.Type() {
		case session.TypeRequestHeader:
			if _, err := session.DecodeData[session.RequestHeader](r); err != nil {
				return nil, fmt.Errorf("replay: seq %d: %w", r.Seq(), err)
			}
			hdr, _ = session.DeriveHeader(recs[i : i+1])
			if rec.Provider == "" {
				rec.Provider = hdr.Provider
			}
			if cur != nil {
				cur.Header = hdr
			}
		case session.TypeStepStart:
			rec.Steps = append(rec.Steps, Step{Turn: r.Turn(), Step: r.Step(), Header: hdr})
			cur = &rec.Steps[len(rec.Steps)-1]
		case session.TypeRequestDigest:
			if cur != nil {
				d, err := session.DecodeData[session.Digest](r)
				if err != nil {
					return nil, fmt.Errorf("replay: seq %d: %w", r.Seq(), err)
				}
				cur.Digest = d.SHA256
			}
		case session.TypeAssistantChunk:
			if cur == nil {
				return nil, fmt.Errorf("replay: seq %d: chunk outside a step", r.Seq())
			}
			c, err := session.DecodeData[session.AssistantChunk](r)
			if err != nil {
				return nil, fmt.Errorf("replay: seq %d: %w", r.Seq(), err)
			}
			ch := agentloop.Chunk{Text: c.Text, Reasoning: c.Reasoning}
			if tc := c.ToolCall; tc != nil {
				ch.ToolCall = &session.ChunkToolCall{Index: tc.Index, ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments}
			}
			cur.Chunks = append(cur.Chunks, ch)
		case session.TypeStepEnd:
			if cur == nil {
				continue
			}
			e, err := session.DecodeData[session.StepEnd](r)
			if err != nil {
				return nil, fmt.Errorf("replay: seq %d: %w", r.Seq(), err)
			}
			cur.Finish = e.Finish
			if u := e.Usage; u != nil {
				cur.Usage = &session.Usage{Input: u.Input, Output: u.Output}
			}
			if e.Finish == session.FinishError {
				failed = append(failed, len(rec.Steps)-1)
			}
			cur = nil
		case session.TypeTurnEnd:
			e, err := session.DecodeData[session.TurnEnd](r)
			if err != nil {
				return nil, fmt.Errorf("replay: seq %d: %w", r.Seq(), err)
			}
			// Only a turn that failed (or was aborted) failed in its
			// stream: one closed by crash repair died after the chunks
			// recorded, one a veto blocked was refused an event.
			for _, i := range failed {
				if e.Reason != session.ReasonError && e.Reason != session.ReasonAborted {
					break
				}
				rec.Steps[i].Err = e.Error
				if rec.Steps[i].Err == "" {
					rec.Steps[i].Err = "recorded step failed (" + e.Reason + ")"
				}
			}
			failed, cur = nil, nil
		}
	}
	return rec, nil
}

// Load reads the recording of the session log file at path.
func Load(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	log, err := session.Decode(f)
	if err != nil && !errors.Is(err, session.ErrTornTail) {
		return nil, fmt.Errorf("replay: %s: %w", path, err)
	}
	return FromRecords(log.Records)
}

// LoadSession reads the recording of session id from store.
func LoadSession(ctx context.Context, store session.Store, id string) (*Recording, error) {
	log, err := store.Load(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("replay: session %s: %w", id, err)
	}
	return FromRecords(log.Records)
}
