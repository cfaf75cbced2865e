package score

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// TypeAnswer is the plugin-owned, ignorable record [AskIn] logs after a
// one-shot: the model's answer, citing its request/oneshot, so the log
// holds what a judge was asked and what it said, and a score can be
// re-derived from it.
const TypeAnswer = "eval/answer"

// Answer is the data of an eval/answer record.
type Answer struct {
	// Purpose is the one-shot's purpose, as its request/oneshot logs it.
	Purpose string `json:"purpose"`
	// Content is the text the model answered.
	Content string `json:"content"`
}

// AskIn returns an [Env].Ask that logs every call in sess, the eval's own
// session, outside any turn: each shown text as a user/message of no
// turn (a record whose projection is that text as a user message, legal
// between turns), then the one-shot ([agentloop.Complete] through c, with
// p, under h) citing exactly those records as its sources and the
// instruction as its last message, then the answer as an eval/answer
// citing the request/oneshot. The request is thus re-derived from the
// log by `vigil verify` like any one-shot's. The shown texts are never
// spliced into the instruction: what a candidate wrote stays one
// message, whatever it holds.
//
// Calls may run at once: each cites its own records by seq. (Two calls
// of one purpose that show nothing at all cannot be told apart: an
// eval/answer of such a call may cite the other's one-shot.)
func AskIn(c *bus.Context, p agentloop.Provider, sess *live.Session, h session.Header) func(ctx context.Context, purpose string, shown []string, instruction string) (string, error) {
	return func(ctx context.Context, purpose string, shown []string, instruction string) (string, error) {
		switch {
		case sess == nil:
			return "", errors.New("score: ask: no eval session")
		case purpose == "" || instruction == "":
			return "", errors.New("score: ask: a purpose and an instruction are required")
		}
		// Once shown records are logged, they stay whatever the call's
		// context does, like every append the loop makes.
		actx := context.WithoutCancel(ctx)
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("score: ask %s: %w", purpose, err)
		}
		sources := make([]int64, 0, len(shown))
		for i, text := range shown {
			rec, err := sess.Append(actx, session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: text}})
			if err != nil {
				return "", fmt.Errorf("score: ask %s: shown text %d: %w", purpose, i, err)
			}
			sources = append(sources, rec.Seq())
		}
		// This call's one-shot comes after every record logged so far.
		after := int64(sess.Len()) - 1
		reply, err := agentloop.Complete(ctx, c, p, sess, agentloop.OneShot{
			Purpose:     purpose,
			Sources:     sources,
			Instruction: instruction,
			Header:      h,
		})
		if err != nil {
			return "", fmt.Errorf("score: ask %s: %w", purpose, err)
		}
		ev := session.Event{Type: TypeAnswer, Ignorable: true, Data: Answer{Purpose: purpose, Content: reply.Content}}
		if seq, ok := oneshotCiting(sess, after, sources, purpose); ok {
			ev.Sources = []int64{seq}
		}
		if _, err := sess.Append(actx, ev); err != nil {
			return "", fmt.Errorf("score: ask %s: answer: %w", purpose, err)
		}
		return reply.Content, nil
	}
}

// oneshotCiting finds the request/oneshot of purpose, logged after seq
// after, whose sources are sources: the shown records are this call's
// own, so it is this call's one-shot even when others run at once. A
// listener that answered the one-shot itself logs none.
func oneshotCiting(sess *live.Session, after int64, sources []int64, purpose string) (int64, bool) {
	// From the end back to where the call began: a long eval session is
	// not read whole.
	for r := range sess.Backward() {
		if r.Seq() <= after {
			break
		}
		if r.Type() != session.TypeRequestOneshot || !slices.Equal(r.Sources(), sources) {
			continue
		}
		if o, err := session.DecodeData[session.Oneshot](r); err == nil && o.Purpose == purpose {
			return r.Seq(), true
		}
	}
	return 0, false
}
