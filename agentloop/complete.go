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
// step of a turn: a compaction summary, a title.
type OneShot struct {
	// Purpose says why the call is made ("compaction", "title", …); it is
	// logged and required.
	Purpose string
	// Sources are the seqs of the session's records the messages derive
	// from (the surface events summarized, say); logged as the sources of
	// request/oneshot.
	Sources []int64
	// Header and Messages are the request. Complete copies them.
	Header   session.Header
	Messages []session.Message
}

// ErrOneShotInTurn is returned by [Complete] while a turn of the session
// is open: the model calls of a turn are its steps, built from the log
// and checked, and nothing answers a step with a one-shot.
var ErrOneShotInTurn = errors.New("agentloop: a one-shot request inside an open turn")

// Complete is the one way to send a model a request that is not a step
// of a turn. It logs request/oneshot in sess — {"purpose","sha256",
// "messages"} with the digest ([session.RequestDigest]) of the request sent
// and o.Sources as its sources — seals the request as a one-shot,
// dispatches it through llm/stream with p as the innermost fallback, and
// collects the reply. The record is appended when the request is handed
// to the provider, so a one-shot a listener refused leaves none.
//
// A one-shot is refused while a turn of sess is open ([ErrOneShotInTurn]),
// and so is one with no session, no purpose, no message or a source that
// is not a seq of the log. p may be the provider from [ProviderService]
// or any other: Complete wraps it like every provider.
func Complete(ctx context.Context, c *bus.Context, p Provider, sess *live.Session, o OneShot) (Reply, error) {
	switch {
	case sess == nil:
		return Reply{}, errors.New("agentloop: one-shot request: no session to log it in")
	case o.Purpose == "":
		return Reply{}, errors.New("agentloop: one-shot request: no purpose")
	case len(o.Messages) == 0:
		return Reply{}, errors.New("agentloop: one-shot request: no messages")
	case p == nil:
		return Reply{}, errors.New("agentloop: one-shot request: no provider")
	}
	if n, open := lastTurn(sess); open {
		return Reply{}, fmt.Errorf("%w: session %s, turn %d", ErrOneShotInTurn, sess.ID(), n)
	}
	n := int64(sess.Len())
	for _, s := range o.Sources {
		if s < 0 || s >= n {
			return Reply{}, fmt.Errorf("agentloop: one-shot request: source %d is not a seq of session %s", s, sess.ID())
		}
	}
	built := Request{Session: sess.ID(), StepStart: -1, Header: session.CloneHeader(o.Header), Messages: session.CloneMessages(o.Messages)}
	digest := session.RequestDigest(built.Header, built.Messages)
	sources := append([]int64(nil), o.Sources...)
	req := mint(built, nil, o.Purpose, digest, func() error {
		_, err := sess.Append(context.WithoutCancel(ctx), session.Event{Type: session.TypeRequestOneshot, Sources: sources,
			Data: session.Oneshot{Purpose: o.Purpose, SHA256: digest, Messages: len(built.Messages)}})
		return err
	})
	s, err := LLMStream.Run(ctx, c, req, sealedFallback(guardProvider(p), req))
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
	m := asm.message()
	return Reply{Content: m.Content, Reasoning: m.Reasoning, ToolCalls: m.ToolCalls, Usage: asm.usage, Finish: asm.finish}, nil
}
