package agentloop

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// Reply is a whole model reply collected from a stream.
type Reply struct {
	Content   string
	Reasoning string
	ToolCalls []session.ToolCall
	Usage     *session.Usage
	Finish    string
}

// OneShot is a declared model call on behalf of a session that is not a
// step of a turn: a compaction summary, a title. Its request is made of
// the log and of what its record logs, nothing else: the projections of
// Sources, then Instruction as a user message, under Header
// ([session.OneshotRequest] re-derives it).
type OneShot struct {
	// Purpose says why the call is made ("compaction", "title", …); it is
	// logged and required.
	Purpose string
	// Sources are the seqs of the session's records the request shows the
	// model, in that order: each one's projection (as the fold projects
	// it) is a message; a record that projects to none adds none. Logged
	// as the sources of request/oneshot.
	Sources []int64
	// Instruction is the request's last message, a user message (what to
	// do with the records: "Summarize the conversation above"); logged and
	// required.
	Instruction string
	// Header is the request's header, logged. Complete copies it, and
	// fills the provider's name and default model when it names none (see
	// [DefaultModeler]), as a step's header is filled.
	Header session.Header
}

// ErrOneShotInTurn is returned by [Complete] while a turn of the session
// is open: the model calls of a turn are its steps, built from the log
// and checked, and nothing answers a step with a one-shot.
var ErrOneShotInTurn = errors.New("agentloop: a one-shot request inside an open turn")

// ErrOneShotInStep is returned by [Complete] when it is called from inside
// a step's model call — an llm/stream listener of any session's step, or
// its provider (the context of a step's dispatch says so): a step's reply
// comes from its own request, never from a one-shot, of its session or of
// another.
var ErrOneShotInStep = errors.New("agentloop: a one-shot request from inside a step's model call")

// stepKey is the context key that marks a step's llm/stream dispatch.
type stepKey struct{}

// stepRef names the step whose dispatch a context belongs to.
type stepRef struct {
	session    string
	turn, step int
}

// withinStep marks ctx as the context of req's llm/stream dispatch.
func withinStep(ctx context.Context, req *Request) context.Context {
	return context.WithValue(ctx, stepKey{}, stepRef{req.Session, req.Turn, req.Step})
}

// Complete is the one way to send a model a request that is not a step
// of a turn. It builds the request from the log ([session.OneshotMessages]
// over o.Sources and o.Instruction, under o.Header), logs request/oneshot
// in sess — {"purpose","sha256","messages","instruction","header"} with
// the digest ([session.RequestDigest]) of the request sent and o.Sources as
// its sources — seals the request as a one-shot, dispatches it through
// llm/stream with p as the innermost fallback, and collects the reply;
// the reply's usage, when the provider reports it, is logged after it as
// request/usage citing the request/oneshot. The request/oneshot record is
// appended when the request is handed to the provider, so a one-shot a
// listener refused leaves none.
//
// A one-shot is refused from inside a step's model call
// ([ErrOneShotInStep]) and while a turn of sess is open
// ([ErrOneShotInTurn]), and so is one with no session, no purpose, no
// instruction or a source that is not a seq of the log. p may be the
// provider from [ProviderService] or any other: Complete wraps it like
// every provider.
func Complete(ctx context.Context, c *bus.Context, p Provider, sess *live.Session, o OneShot) (Reply, error) {
	switch {
	case sess == nil:
		return Reply{}, errors.New("agentloop: one-shot request: no session to log it in")
	case o.Purpose == "":
		return Reply{}, errors.New("agentloop: one-shot request: no purpose")
	case o.Instruction == "":
		return Reply{}, errors.New("agentloop: one-shot request: no instruction")
	case p == nil:
		return Reply{}, errors.New("agentloop: one-shot request: no provider")
	}
	if in, ok := ctx.Value(stepKey{}).(stepRef); ok {
		return Reply{}, fmt.Errorf("%w: session %s, from session %s turn %d step %d", ErrOneShotInStep, sess.ID(), in.session, in.turn, in.step)
	}
	if n, open := lastTurn(sess); open {
		return Reply{}, fmt.Errorf("%w: session %s, turn %d", ErrOneShotInTurn, sess.ID(), n)
	}
	msgs, err := session.OneshotMessages(sess.Records(), o.Sources, o.Instruction)
	if err != nil {
		return Reply{}, fmt.Errorf("agentloop: one-shot request in session %s: %w", sess.ID(), err)
	}
	g := guardProvider(p)
	h := session.CloneHeader(o.Header)
	fillHeader(&h, g)
	built := Request{Session: sess.ID(), StepStart: -1, Header: h, Messages: session.NewMessages(msgs)}
	digest := session.RequestDigest(built.Header, msgs)
	sources := append([]int64(nil), o.Sources...)
	data := session.Oneshot{Purpose: o.Purpose, SHA256: digest, Messages: len(msgs), Instruction: o.Instruction}
	if !session.HeaderEquals(h, session.Header{}) {
		logged := session.CloneHeader(h)
		data.Header = &logged
	}
	var logged session.Record
	req := mint(built, nil, o.Purpose, digest, func() error {
		var err error
		logged, err = sess.Append(context.WithoutCancel(ctx), session.Event{Type: session.TypeRequestOneshot, Sources: sources, Data: data})
		return err
	})
	s, err := LLMStream.Run(ctx, c, req, sealedFallback(g, req))
	if err == nil && req.seal.logErr != nil {
		err = req.seal.logErr
	}
	if err != nil {
		return Reply{}, fmt.Errorf("agentloop: one-shot request: %w", err)
	}
	if s == nil {
		return Reply{}, errors.New("agentloop: one-shot request: no stream")
	}
	var asm assembler
	for ch, err := range s {
		if err != nil {
			return Reply{}, fmt.Errorf("agentloop: one-shot request: %w", err)
		}
		asm.add(&ch, 0, 0)
	}
	if u := asm.usage; u != nil && !logged.IsZero() {
		// What the call cost, for budgets and sessions show; a one-shot a
		// listener answered itself sent nothing and cost nothing.
		if _, err := sess.Append(context.WithoutCancel(ctx), session.Event{Type: session.TypeRequestUsage, Sources: []int64{logged.Seq()}, Data: *u}); err != nil {
			return Reply{}, fmt.Errorf("agentloop: one-shot request: usage: %w", err)
		}
	}
	m := asm.message()
	return Reply{Content: m.Content, Reasoning: m.Reasoning, ToolCalls: m.ToolCalls, Usage: asm.usage, Finish: asm.finish}, nil
}
