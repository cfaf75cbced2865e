package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/replay"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/memory"
)

// cmdReplay re-runs a stored session through provider/replay, with the
// invariants plugin strict and the recorded tool results, and reports
// whether every request re-derives identically: the digest each replayed
// step sends must equal the digest the original step recorded.
func cmdReplay(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	cfg := fs.String("c", "plugins.yaml", "the plugins.yaml whose store holds the session")
	asJSON := fs.Bool("json", false, "print the step-by-step comparison as JSON")
	if err := fs.Parse(flagsFirst(args, map[string]bool{"json": true})); err != nil {
		return usageError{err}
	}
	if fs.NArg() != 1 {
		return usagef("replay takes one session id or log file")
	}
	orig, err := loadLog(ctx, e, *cfg, fs.Arg(0))
	if err != nil {
		return err
	}
	steps, err := replayLog(ctx, e, orig)
	if err != nil {
		return err
	}
	same := 0
	for _, s := range steps {
		if s.Same {
			same++
		}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"session": orig.Info.ID, "steps": steps, "identical": same == len(steps)}); err != nil {
			return err
		}
	} else {
		for _, s := range steps {
			mark := "✓"
			if !s.Same {
				mark = "✗"
			}
			fmt.Fprintf(e.stdout, "%s turn %d step %d  %s\n", mark, s.Turn, s.Step, s.Note)
		}
		fmt.Fprintf(e.stdout, "%d of %d requests re-derived identically\n", same, len(steps))
	}
	if same != len(steps) {
		return silentError{exitFailed}
	}
	return nil
}

// replayedStep compares one step's request between the original log and
// the replay.
type replayedStep struct {
	Turn     int    `json:"turn"`
	Step     int    `json:"step"`
	Original string `json:"original"`
	Replayed string `json:"replayed"`
	Same     bool   `json:"same"`
	Note     string `json:"note"`
}

// loadLog reads a log file, or the log of a session id from the store of
// the composition in cfg.
func loadLog(ctx context.Context, e *env, cfg, arg string) (*session.Log, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		f, err := os.Open(arg)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return session.Decode(f)
	}
	if !session.ValidID(arg) {
		return nil, usagef("%s: no such file or session id", arg)
	}
	h, err := openHost(e, cfg)
	if err != nil {
		return nil, err
	}
	defer h.close()
	mgr, err := service(h, session.Sessions)
	if err != nil {
		return nil, err
	}
	return mgr.Store().Load(ctx, arg)
}

// replayLog runs every turn of orig again on a fresh in-memory session:
// the model answers from the recording, tools answer with their recorded
// results, and events outside turns (compactions) are copied as they are.
func replayLog(ctx context.Context, e *env, orig *session.Log) ([]replayedStep, error) {
	header, ok := session.DeriveHeader(orig.Records)
	if !ok {
		return nil, fmt.Errorf("%s: the log has no request/header: nothing to replay", orig.Info.ID)
	}
	rec, err := replay.FromRecords(orig.Records)
	if err != nil {
		return nil, err
	}
	root := bus.New(bus.WithLogger(newLogger(e)))
	defer root.Dispose()
	c := root.Context()
	if _, err := c.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict}); err != nil {
		return nil, err
	}
	mgr := session.NewManager(c, memory.New())
	tools := recordedTools(orig.Records, header)
	cfg := agentloop.Config{System: header.System, Model: header.Model, Temperature: header.Temperature,
		MaxTokens: header.MaxTokens, Stop: header.Stop, MaxSteps: maxSteps(orig.Records)}
	agent := agentloop.New(c, cfg, agentloop.WithProvider(replay.New(rec)), agentloop.WithTools(tools...))
	defer agent.Close()

	sess, err := mgr.Create(ctx)
	if err != nil {
		return nil, err
	}
	var runErr error
	for i := 0; i < len(orig.Records); i++ {
		r := orig.Records[i]
		switch {
		case r.Type() == session.TypeTurnStart:
			prompt := ""
			if i+1 < len(orig.Records) && orig.Records[i+1].Type() == session.TypeUserMessage {
				m, _ := session.DecodeData[session.UserMessage](orig.Records[i+1])
				prompt = m.Content
			}
			if _, err := agent.Run(ctx, sess, prompt); err != nil && runErr == nil {
				runErr = err
			}
			for i+1 < len(orig.Records) && orig.Records[i+1].Turn() == r.Turn() {
				i++
			}
		case r.Turn() == 0 && r.Type() != session.TypeEndSeed:
			ev := session.Event{Type: r.Type(), Sources: r.Sources(), Ignorable: r.Ignorable(), Data: json.RawMessage(r.Data())}
			if sf := r.Surface(); sf.Op == session.OpReplace {
				ev.Surface = &sf
			}
			if _, err := sess.Append(ctx, ev); err != nil && runErr == nil {
				runErr = err
			}
		}
	}
	steps := compareDigests(orig.Records, sess.Records())
	var ie *invariants.InvariantError
	if errors.As(runErr, &ie) {
		steps = append(steps, replayedStep{Note: "refused by the invariants plugin: " + ie.Error()})
	} else if runErr != nil && len(steps) == 0 {
		return nil, runErr
	}
	return steps, nil
}

func maxSteps(records []*session.Record) int {
	n := 1
	for _, r := range records {
		n = max(n, r.Step())
	}
	return n
}

type digestAt struct {
	turn, step int
	sha        string
}

func digests(records []*session.Record) []digestAt {
	var out []digestAt
	for _, r := range records {
		if r.Type() == session.TypeRequestDigest {
			d, _ := session.DecodeData[session.Digest](r)
			out = append(out, digestAt{r.Turn(), r.Step(), d.SHA256})
		}
	}
	return out
}

func compareDigests(orig, again []*session.Record) []replayedStep {
	a, b := digests(orig), digests(again)
	var out []replayedStep
	for i, d := range a {
		s := replayedStep{Turn: d.turn, Step: d.step, Original: d.sha}
		switch {
		case i >= len(b):
			s.Note = "not replayed"
		case b[i].sha == d.sha:
			s.Replayed, s.Same, s.Note = b[i].sha, true, "request "+short(d.sha)
		default:
			s.Replayed, s.Note = b[i].sha, fmt.Sprintf("request differs: recorded %s, replayed %s", short(d.sha), short(b[i].sha))
		}
		out = append(out, s)
	}
	for i := len(a); i < len(b); i++ {
		out = append(out, replayedStep{Turn: b[i].turn, Step: b[i].step, Replayed: b[i].sha, Note: "a request the original did not send"})
	}
	return out
}

// recordedTool answers calls with the results the original log recorded
// for the same tool, in order: the replayed model makes the same calls in
// the same order.
type recordedTool struct {
	spec    session.ToolSpec
	mu      sync.Mutex
	results []session.ToolResult
}

func recordedTools(records []*session.Record, h session.Header) []agentloop.Tool {
	byName := map[string]*recordedTool{}
	var out []agentloop.Tool
	for _, spec := range h.Tools {
		t := &recordedTool{spec: spec}
		byName[spec.Name] = t
		out = append(out, t)
	}
	for _, r := range records {
		if r.Type() != session.TypeToolResult {
			continue
		}
		res, err := session.DecodeData[session.ToolResult](r)
		if err != nil {
			continue
		}
		if t, ok := byName[res.Name]; ok {
			t.results = append(t.results, res)
		}
	}
	return out
}

func (t *recordedTool) Spec() session.ToolSpec { return t.spec }

func (t *recordedTool) Execute(context.Context, json.RawMessage) (string, error) {
	t.mu.Lock()
	if len(t.results) == 0 {
		t.mu.Unlock()
		return "", &agentloop.ToolError{Code: "REPLAY_NO_RESULT", Message: "the recording has no more results of this tool"}
	}
	res := t.results[0]
	t.results = t.results[1:]
	t.mu.Unlock()
	if res.Error != nil {
		return res.Content, &agentloop.ToolError{Code: res.Error.Code, Message: res.Error.Message}
	}
	return res.Content, nil
}
