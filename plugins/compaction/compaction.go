package compaction

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// Name is the plugin's registered name, as plugins.yaml and vigil.Plugin
// spell it.
const Name = "compaction"

// Defaults when the config sets no threshold.
const (
	DefaultMaxMessages = 50
	DefaultKeep        = 10
)

// DefaultPrompt is the instruction the summary request ends with, after
// the conversation it summarizes.
const DefaultPrompt = "Summarize the conversation above for your own future reference. " +
	"Keep every fact, decision, file name, tool result and open question that later turns may need. " +
	"Write plain prose, no preamble, and call no tool."

// Purpose is the purpose of the summary's one-shot request, as logged in
// request/oneshot.
const Purpose = "compaction"

// SummaryPrefix starts the user message that replaces the summarized
// range, for a reader of the log that tells a summary from what the user
// wrote.
const SummaryPrefix = "Summary of the earlier conversation:\n\n"

// Config is the plugin's config.
type Config struct {
	// MaxMessages: compact when the conversation has more messages.
	MaxMessages int `yaml:"max_messages" doc:"Compact when the conversation has more messages."`
	// MaxBytes: compact when the messages' content is larger.
	MaxBytes int `yaml:"max_bytes" doc:"Compact when the messages' content is larger."`
	// Keep is how many of the most recent messages stay verbatim.
	Keep int `yaml:"keep" doc:"How many of the most recent messages stay verbatim."`
	// Prompt replaces DefaultPrompt.
	Prompt string `yaml:"prompt" doc:"The instruction the summary is asked with; empty: the built-in one."`
}

// Validate checks the config.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxMessages < 0 || c.MaxBytes < 0 || c.Keep < 0 {
		errs = append(errs, errors.New("max_messages, max_bytes and keep must not be negative"))
	}
	if c.MaxMessages > 0 && c.Keep >= c.MaxMessages {
		errs = append(errs, fmt.Errorf("keep (%d) must be less than max_messages (%d)", c.Keep, c.MaxMessages))
	}
	return errors.Join(errs...)
}

// withDefaults fills in the defaults.
func (c Config) withDefaults() Config {
	if c.MaxMessages == 0 && c.MaxBytes == 0 {
		c.MaxMessages = DefaultMaxMessages
		if c.Keep == 0 {
			c.Keep = DefaultKeep
		}
	}
	if c.Prompt == "" {
		c.Prompt = DefaultPrompt
	}
	return c
}

// Compactor compacts sessions. Its zero value is not usable; see [New].
type Compactor struct {
	cfg Config
	c   *bus.Context
}

// New returns a compactor that dispatches its one-shot requests on c.
func New(c *bus.Context, cfg Config) (*Compactor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Compactor{cfg: cfg.withDefaults(), c: c}, nil
}

// Due reports whether msgs pass a threshold.
func (k *Compactor) Due(msgs []session.Message) bool {
	if k.cfg.MaxMessages > 0 && len(msgs) > k.cfg.MaxMessages {
		return true
	}
	if k.cfg.MaxBytes > 0 {
		n := 0
		for _, m := range msgs {
			n += len(m.Content) + len(m.Reasoning)
			for _, c := range m.ToolCalls {
				n += len(c.Arguments)
			}
		}
		return n > k.cfg.MaxBytes
	}
	return false
}

// Result describes a compaction.
type Result struct {
	// ID names the compaction in compaction/start and compaction/end.
	ID string
	// Start and End are the replaced surface range (seqs, inclusive).
	Start, End int64
	// Shadowed lists the surface events the summary replaced.
	Shadowed []int64
	// Summary is the seq of the summary's user/message.
	Summary int64
}

// Compact summarizes the part of sess before its Keep most recent
// messages with p, if the conversation passes a threshold. It must be
// called outside any turn and outside the session's own dispatches. It
// returns nil, nil when there is nothing to do.
func (k *Compactor) Compact(ctx context.Context, sess *live.Session, p agentloop.Provider, hdr session.Header) (*Result, error) {
	if !k.Due(sess.Messages()) {
		return nil, nil
	}
	recs := sess.Records()
	surf, err := surface(recs)
	if err != nil {
		return nil, err
	}
	// The last surface position to summarize: before the Keep most
	// recent surface events that are messages.
	last, kept := len(surf)-1, 0
	for ; last >= 0 && kept < k.cfg.Keep; last-- {
		if surf[last].message {
			kept++
		}
	}
	if last < 0 {
		return nil, nil
	}
	start, end := session.BalancedRange(recs, surf[0].seq, surf[last].seq)
	if start < 0 {
		return nil, nil
	}
	var shadowed []int64
	in, n := false, 0
	for _, s := range surf {
		if s.seq == start {
			in = true
		}
		if in {
			shadowed = append(shadowed, s.seq)
			if s.message {
				n++
			}
		}
		if s.seq == end {
			break
		}
	}
	if n < 2 {
		// One message (an earlier summary, say) is not worth replacing.
		return nil, nil
	}

	// A declared one-shot, made of the log: the shadowed events as the
	// model saw them, in surface order, then the prompt. The header is
	// the turn's, so the model reads the conversation under the system
	// prompt and tools it was held with (a provider refuses tool calls
	// in a request without tools); a summary is prose, so no output
	// schema and no stop sequences.
	h := session.CloneHeader(hdr)
	h.OutputSchema, h.Stop = nil, nil
	reply, err := agentloop.Complete(ctx, k.c, p, sess, agentloop.OneShot{
		Purpose:     Purpose,
		Sources:     shadowed,
		Instruction: k.cfg.Prompt,
		Header:      h,
	})
	if err != nil {
		return nil, fmt.Errorf("compaction: summary: %w", err)
	}
	summary := strings.TrimSpace(reply.Content)
	if summary == "" {
		return nil, errors.New("compaction: summary: the model returned no text")
	}

	res := &Result{ID: fmt.Sprintf("compaction-%d", sess.Len()), Start: start, End: end, Shadowed: shadowed}
	actx := context.WithoutCancel(ctx)
	if _, err := sess.Append(actx, session.Event{Type: session.TypeCompactionStart, Data: session.Compaction{ID: res.ID}}); err != nil {
		return nil, fmt.Errorf("compaction: %w", err)
	}
	rec, err := sess.Append(actx, session.Event{
		Type:    session.TypeUserMessage,
		Surface: &session.Surface{Op: session.OpReplace, Start: start, End: end},
		Sources: shadowed,
		Data:    session.UserMessage{Content: SummaryPrefix + summary},
	})
	// compaction/end closes what compaction/start opened, either way.
	_, endErr := sess.Append(actx, session.Event{Type: session.TypeCompactionEnd, Data: session.Compaction{ID: res.ID}})
	if err != nil {
		return nil, fmt.Errorf("compaction: %w", errors.Join(err, endErr))
	}
	if endErr != nil {
		return nil, fmt.Errorf("compaction: %w", endErr)
	}
	res.Summary = rec.Seq()
	return res, nil
}

// surfaceEntry is one event on the surface and whether it projects to a
// message (an assistant message with neither content nor calls does not).
type surfaceEntry struct {
	seq     int64
	message bool
}

func surface(recs []session.Record) ([]surfaceEntry, error) {
	f := session.NewFold()
	for _, r := range recs {
		if err := f.Add(r); err != nil {
			return nil, fmt.Errorf("compaction: %w", err)
		}
	}
	seqs := f.Surface()
	out := make([]surfaceEntry, len(seqs))
	for i, s := range seqs {
		e := surfaceEntry{seq: s, message: true}
		if r := recs[s]; r.Type() == session.TypeAssistantMessage {
			m, err := session.DecodeData[session.AssistantMessage](r)
			if err != nil {
				return nil, fmt.Errorf("compaction: seq %d: %w", s, err)
			}
			e.message = m.Content != "" || len(m.ToolCalls) > 0
		}
		out[i] = e
	}
	return out, nil
}
