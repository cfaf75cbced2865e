package scripted

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// ErrScriptExhausted is returned for a model call past the end of a
// script that does not repeat.
var ErrScriptExhausted = errors.New("provider/scripted: script exhausted")

// ProviderName is the provider's name in request headers, for a reader
// of the log or a test that recognizes a scripted run.
const ProviderName = "scripted"

// Provider is the scripted model. It is safe for concurrent use; replies
// are handed out in call order.
type Provider struct {
	script []reply
	repeat bool

	mu    sync.Mutex
	next  int
	calls int
	sizes inputSizes
}

// reply is a Reply with its tool-call arguments rendered.
type reply struct {
	Reply
	args []string
}

// New returns a provider playing cfg's script.
func New(cfg Config) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("provider/scripted: %w", err)
	}
	p := &Provider{repeat: cfg.Repeat}
	for _, r := range cfg.Script {
		rr := reply{Reply: r}
		for _, tc := range r.ToolCalls {
			a, _ := argumentsJSON(tc.Arguments)
			rr.args = append(rr.args, a)
		}
		p.script = append(p.script, rr)
	}
	return p, nil
}

// Name implements agentloop.Namer.
func (p *Provider) Name() string { return ProviderName }

// Calls returns how many model calls the provider has answered.
func (p *Provider) Calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// Remaining returns how many scripted replies are left (0 for the default
// script and for a repeating one), for a test that checks its script was
// used up.
func (p *Provider) Remaining() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.repeat || len(p.script) == 0 {
		return 0
	}
	return len(p.script) - p.next
}

// take returns the reply for req.
func (p *Provider) take(req *agentloop.Request) (reply, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if len(p.script) == 0 {
		return defaultReply(req), nil
	}
	if p.next >= len(p.script) {
		if !p.repeat {
			return reply{}, fmt.Errorf("%w after %d replies", ErrScriptExhausted, len(p.script))
		}
		p.next = 0
	}
	r := p.script[p.next]
	p.next++
	return r, nil
}

// Stream implements agentloop.Provider: the reply's reasoning and text
// stream word by word, each tool call in two fragments, then a final
// chunk with usage and finish.
func (p *Provider) Stream(ctx context.Context, req *agentloop.Request) (agentloop.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := p.take(req)
	if err != nil {
		return nil, &agentloop.ProviderError{Provider: ProviderName, Err: err}
	}
	p.mu.Lock()
	in := p.sizes.size(req)
	p.mu.Unlock()
	chunks := render(req, r, in)
	fail := r.Error
	if fail != nil && fail.After == 0 {
		return nil, failure(fail)
	}
	return func(yield func(agentloop.Chunk, error) bool) {
		for i, c := range chunks {
			if fail != nil && i == fail.After {
				yield(agentloop.Chunk{}, failure(fail))
				return
			}
			if err := ctx.Err(); err != nil {
				yield(agentloop.Chunk{}, err)
				return
			}
			if !yield(c, nil) {
				return
			}
		}
		if fail != nil {
			yield(agentloop.Chunk{}, failure(fail))
		}
	}, nil
}

func failure(f *Failure) error {
	msg := f.Message
	if msg == "" {
		msg = "scripted failure"
	}
	return &agentloop.ProviderError{
		Provider:  ProviderName,
		Status:    f.Status,
		Retryable: f.Status == 429 || f.Status >= 500,
		Err:       errors.New(msg),
	}
}

// render turns a reply into its chunks; in is the request's size (see
// inputSizes).
func render(req *agentloop.Request, r reply, in int) []agentloop.Chunk {
	out := make([]agentloop.Chunk, 0, countWords(r.Reasoning)+countWords(r.Text)+2*len(r.ToolCalls)+1)
	for w := range words(r.Reasoning) {
		out = append(out, agentloop.Chunk{Reasoning: w})
	}
	for w := range words(r.Text) {
		out = append(out, agentloop.Chunk{Text: w})
	}
	// The calls' fragments in one array.
	frags := make([]session.ChunkToolCall, 0, 2*len(r.ToolCalls))
	for i, tc := range r.ToolCalls {
		id := "call_" + strconv.Itoa(req.Turn) + "_" + strconv.Itoa(req.Step) + "_" + strconv.Itoa(i)
		args := r.args[i]
		half := len(args) / 2
		for half > 0 && half < len(args) && !utf8.RuneStart(args[half]) {
			half-- // a model's fragments are text: no character cut in two
		}
		frags = append(frags, session.ChunkToolCall{Index: i, ID: id, Name: tc.Name, Arguments: args[:half]})
		out = append(out, agentloop.Chunk{ToolCall: &frags[len(frags)-1]})
		if half < len(args) {
			frags = append(frags, session.ChunkToolCall{Index: i, Arguments: args[half:]})
			out = append(out, agentloop.Chunk{ToolCall: &frags[len(frags)-1]})
		}
	}
	finish := session.FinishStop
	if len(r.ToolCalls) > 0 {
		finish = session.FinishToolCalls
	}
	outLen := len(r.Text) + len(r.Reasoning)
	for _, a := range r.args {
		outLen += len(a)
	}
	out = append(out, agentloop.Chunk{Usage: &session.Usage{Input: tokens(in), Output: tokens(outLen)}, Finish: finish})
	return out
}

// tokens estimates tokens from bytes, deterministically.
func tokens(n int) int { return (n + 3) / 4 }

// words yields s in chunks of one word with its trailing white space,
// so that joining them gives s back.
func words(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for rest := s; len(rest) > 0; {
			i := strings.IndexAny(rest, " \n")
			if i < 0 {
				yield(rest)
				return
			}
			j := i + 1
			for j < len(rest) && (rest[j] == ' ' || rest[j] == '\n') {
				j++
			}
			if !yield(rest[:j]) {
				return
			}
			rest = rest[j:]
		}
	}
}

// countWords is how many chunks words yields.
func countWords(s string) int {
	n := 0
	for range words(s) {
		n++
	}
	return n
}

var _ agentloop.Provider = (*Provider)(nil)
var _ agentloop.Namer = (*Provider)(nil)
