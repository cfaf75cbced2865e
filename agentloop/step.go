package agentloop

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/session"
)

// stepOutcome says how a step ended. A fatal error (an append that
// failed) is returned separately by step.
type stepOutcome struct {
	toolCalls bool   // the model asked for tools and they ran
	suspended bool   // the step waits for approvals: it stays open
	reason    string // non-empty: the turn ends with this reason
	err       error  // the cause of reason
	// notStarted: the step was refused before its step/start.
	notStarted bool
	// content is the step's answer: its assistant message's content.
	content string
}

// step runs step n of the turn: step/start, request/header when needed,
// llm/stream (whose fallback logs request/digest), chunks,
// assistant/message, tool calls and results, step/end.
func (t *turn) step(ctx context.Context, n int) (stepOutcome, error) {
	a := t.a
	a.awaitTools(ctx) // a tool list change announced so far is in force
	prov, tools, err := a.resolve()
	if err != nil {
		return stepOutcome{reason: session.ReasonError, err: err}, nil
	}
	want, refused := t.checkStep(ctx, n, a.header(prov, tools))
	if refused != nil {
		return *refused, nil
	}
	start, err := t.openStep(n)
	if err != nil {
		return stepOutcome{}, err
	}
	req, err := t.buildRequest(n, start, want)
	if err != nil {
		return stepOutcome{}, err
	}
	asm := assembler{ids: t.ids}
	msg, streamErr, err := t.streamStep(ctx, n, prov, req, &asm)
	if err != nil {
		return stepOutcome{}, err
	}
	out := stepOutcome{toolCalls: len(msg.ToolCalls) > 0, content: msg.Content}
	finish := asm.finish
	switch {
	case streamErr != nil:
		// The delivered prefix is kept; calls it holds never run, and each
		// is answered so the next request stays well-formed.
		out = stepOutcome{reason: session.ReasonError, err: streamErr}
		if ctx.Err() != nil {
			out.reason = session.ReasonAborted
		}
		finish = session.FinishError
		if err := t.skipTools(n, msg.ToolCalls, "the turn ended before the tool ran: "+streamErr.Error()); err != nil {
			return stepOutcome{}, err
		}
	case out.toolCalls:
		suspended, err := t.runGated(ctx, n, msg.ToolCalls, tools)
		if err != nil {
			return stepOutcome{}, err
		}
		if suspended {
			return t.suspendStep(n, asm.usage)
		}
		if ctx.Err() != nil {
			out = stepOutcome{reason: session.ReasonAborted, err: context.Cause(ctx)}
		}
	}
	if err := t.endStep(n, finish, out.toolCalls, asm.usage); err != nil {
		return stepOutcome{}, err
	}
	return out, nil
}

// checkStep asks the limits (agent/step) about step n before anything of
// it is logged; a cap goes into the header the step logs, so the request
// stays derivable. It returns the header to log, or the outcome of a
// refused step.
func (t *turn) checkStep(ctx context.Context, n int, want session.Header) (session.Header, *stepOutcome) {
	a := t.a
	chk := &StepCheck{Agent: a.id, Session: t.sess, Turn: t.n, Step: n, Model: want.Model, maxTokens: want.MaxTokens}
	if err := StepBegin.Emit(ctx, a.c, chk); err != nil {
		if be, ok := errors.AsType[*BudgetError](err); ok {
			return want, &stepOutcome{reason: session.ReasonBudget, err: be, notStarted: true}
		}
		return want, &stepOutcome{reason: session.ReasonError, err: fmt.Errorf("agentloop: agent/step: %w", err), notStarted: true}
	}
	want.MaxTokens = chk.maxTokens
	return want, nil
}

// openStep logs step/start. The request's messages are the fold of the
// log strictly before step/start: the loop's own (see reqView), brought
// up to the records before step/start; if anything else was appended
// between, those are folded too.
func (t *turn) openStep(n int) (session.Record, error) {
	before := int64(t.sess.Len())
	if err := t.view.catchUp(t.sess, before); err != nil {
		return session.Record{}, err
	}
	start, err := t.append(session.Event{Type: session.TypeStepStart, Step: n, Data: session.StepStart{}})
	if err != nil {
		return session.Record{}, err
	}
	if start.Seq() != before {
		if err := t.view.catchUp(t.sess, start.Seq()); err != nil {
			return session.Record{}, err
		}
	}
	return start, nil
}

// buildRequest logs request/header when the header the step wants is not
// the one in force, and mints the step's sealed request.
//
// The fold and the header read here are the loop's own: the seal keeps
// them, computes the digest over them and compares the request with
// them; listeners and the provider get a read-only view of the fold and
// copies of the header.
// request/digest is logged by the fallback, once the request passed the
// check and is handed to the provider, so a refused step leaves no
// digest.
func (t *turn) buildRequest(n int, start session.Record, want session.Header) (*Request, error) {
	fold, view, same := t.view.request()
	logged, err := t.logHeader(want)
	if err != nil {
		return nil, err
	}
	digest := t.dig.digestFrom(logged, fold, same)
	built := Request{Session: t.sess.ID(), Turn: t.n, Step: n, StepStart: start.Seq(), Header: logged, Messages: view}
	return mint(built, &t.view.hdrs, "", digest, func() error {
		_, err := t.append(session.Event{Type: session.TypeRequestDigest, Step: n, Data: session.Digest{SHA256: digest, Messages: len(fold)}})
		return err
	}), nil
}

// logHeader logs want as request/header when there is none yet, when the
// turn has not logged one since it (re)started, or when it changed; it
// returns the header in force.
func (t *turn) logHeader(want session.Header) (session.Header, error) {
	logged, ok := t.view.header()
	reason := ""
	switch {
	case !ok:
		reason = session.HeaderInitial
	case !t.headed:
		reason = session.HeaderResume
	case !session.HeaderEquals(logged, want):
		reason = session.HeaderChange
	}
	if reason != "" {
		rec, err := t.append(session.Event{Type: session.TypeRequestHeader, Data: session.RequestHeader{Reason: reason, Header: want}})
		if err != nil {
			return session.Header{}, err
		}
		t.view.sawHeader(rec)
		logged, _ = t.view.header()
	}
	t.headed = true
	return logged, nil
}

// streamStep streams req into asm, logging each content chunk, then the
// assistant/message the chunks make, and adds the reply's usage to the
// turn's. It returns that message, the error that ended the stream and,
// separately, a fatal one.
func (t *turn) streamStep(ctx context.Context, n int, prov Provider, req *Request, asm *assembler) (_ session.AssistantMessage, streamErr, fatal error) {
	// Call ids are made unique against the whole log so far.
	t.ids.sync(t.sess)
	var sources []int64
	streamErr, err := t.stream(ctx, prov, req, func(c *Chunk) error {
		asm.add(c, t.n, n)
		if !c.content() {
			return nil
		}
		for _, d := range chunkData(c) {
			rec, err := t.append(session.Event{Type: session.TypeAssistantChunk, Step: n, Data: d})
			if err != nil {
				return err
			}
			sources = append(sources, rec.Seq())
		}
		if t.onChunk != nil {
			t.onChunk(*c)
		}
		return nil
	})
	if err == nil {
		err = req.seal.logErr // request/digest could not be logged
	}
	if err != nil || streamErr != nil {
		// A refusal may have been a write to the listeners' header (or by
		// the provider to its own): build the view and the digest again.
		*t.view, *t.dig = reqView{}, digester{}
	}
	if err != nil {
		return session.AssistantMessage{}, nil, err
	}
	msg := asm.message()
	if len(sources) > 0 {
		if _, err := t.append(session.Event{Type: session.TypeAssistantMessage, Step: n, Sources: sources, Data: msg}); err != nil {
			return session.AssistantMessage{}, nil, err
		}
		t.res.Content = msg.Content
	}
	if u := asm.usage; u != nil {
		t.res.Usage.Input += u.Input
		t.res.Usage.Output += u.Output
	}
	return msg, streamErr, nil
}

// suspendStep leaves step n open on its approvals. The step/end that
// closes it is logged later, maybe by another process: the reply's usage
// goes into the log now.
func (t *turn) suspendStep(n int, usage *session.Usage) (stepOutcome, error) {
	if usage != nil {
		if _, err := t.append(session.Event{Type: session.TypeStepUsage, Step: n, Data: *usage}); err != nil {
			return stepOutcome{}, err
		}
	}
	return stepOutcome{suspended: true}, nil
}

// endStep logs step n's step/end, with finish (or, when the reply gave
// none, stop or tool_calls) and the reply's usage.
func (t *turn) endStep(n int, finish string, toolCalls bool, usage *session.Usage) error {
	if finish == "" {
		finish = session.FinishStop
		if toolCalls {
			finish = session.FinishToolCalls
		}
	}
	end := session.StepEnd{Finish: finish}
	if usage != nil {
		u := *usage
		end.Usage = &u
	}
	_, err := t.append(session.Event{Type: session.TypeStepEnd, Step: n, Data: end})
	return err
}

// stream dispatches req through llm/stream and hands each chunk to
// consume, retrying a retryable provider failure that happened before any
// chunk. It returns the error that ended the stream (nil when it ended
// normally) and, separately, a fatal error from consume.
func (t *turn) stream(ctx context.Context, prov Provider, req *Request, consume func(*Chunk) error) (streamErr, fatal error) {
	a := t.a
	// The dispatch's listeners and provider run inside the step: a
	// one-shot from there is refused (ErrOneShotInStep).
	sctx := withinStep(ctx, req)
	for attempt := 1; ; attempt++ {
		delivered := 0
		s, err := LLMStream.Run(sctx, a.c, req, sealedFallback(prov, req))
		if err == nil && s == nil {
			err = errors.New("agentloop: llm/stream returned no stream")
		}
		if err == nil {
			for c, e := range s {
				if e != nil {
					err = e
					break
				}
				delivered++
				if f := consume(&c); f != nil {
					return nil, f
				}
				if ctx.Err() != nil {
					// A provider that does not watch ctx is left here.
					err = context.Cause(ctx)
					break
				}
			}
		}
		if err == nil {
			return nil, nil
		}
		if ctx.Err() != nil {
			return context.Cause(ctx), nil
		}
		var pe *ProviderError
		if delivered > 0 || !errors.As(err, &pe) || !pe.Retryable || attempt >= a.cfg.MaxAttempts {
			return err, nil
		}
		d := a.backoff(attempt, pe)
		a.c.Logger().Warn("provider failed; retrying", "session", req.Session, "turn", req.Turn, "step", req.Step, "attempt", attempt, "delay", d, "error", err)
		if err := sleep(ctx, d); err != nil {
			return context.Cause(ctx), nil
		}
	}
}

// skipTools logs each call with a TOOL_NOT_STARTED result.
func (t *turn) skipTools(n int, calls []session.ToolCall, why string) error {
	for _, c := range calls {
		rec, err := t.append(session.Event{Type: session.TypeToolCall, Step: n, Data: c})
		if err != nil {
			return err
		}
		res := session.ToolResult{ID: c.ID, Name: c.Name, Error: &session.ToolResultError{Code: session.CodeToolNotStarted, Message: why}}
		if _, err := t.append(session.Event{Type: session.TypeToolResult, Step: n, Sources: []int64{rec.Seq()}, Data: res}); err != nil {
			return err
		}
	}
	return nil
}

// runTools logs and runs the calls in call order. Consecutive calls of
// concurrency-safe tools form a batch: their tool/call events are logged,
// they run concurrently, and their results are logged in call order.
//
// A sub-agent's call logs its tool/start once its child's turn returned;
// a child that waits for an approval makes the call wait too: it is
// logged with an approval/request of its own instead of a result, and
// returned among the pending calls, which suspend the step.
func (t *turn) runTools(ctx context.Context, n int, calls []session.ToolCall, tools []Tool) (pending []session.PendingCall, _ error) {
	byName := toolsByName(tools)
	safe := func(c session.ToolCall) bool {
		tl := byName[c.Name]
		return tl != nil && concurrencySafe(tl)
	}
	for i := 0; i < len(calls); {
		j := i + 1
		if safe(calls[i]) {
			for j < len(calls) && safe(calls[j]) {
				j++
			}
		}
		waiting, err := t.runToolBatch(ctx, n, calls[i:j], byName)
		if err != nil {
			return nil, err
		}
		pending = append(pending, waiting...)
		i = j
	}
	return pending, nil
}

// runToolBatch logs the batch's tool/call events, starts the calls that
// can run, runs them concurrently and logs their results in call order.
func (t *turn) runToolBatch(ctx context.Context, n int, batch []session.ToolCall, byName map[string]Tool) ([]session.PendingCall, error) {
	seqs := make([]int64, len(batch))
	for k, c := range batch {
		rec, err := t.append(session.Event{Type: session.TypeToolCall, Step: n, Data: c})
		if err != nil {
			return nil, err
		}
		seqs[k] = rec.Seq()
	}
	outs := make([]ToolOutput, len(batch))
	invs, idx, err := t.startTools(ctx, n, batch, seqs, byName, outs)
	if err != nil {
		return nil, err
	}
	ran := make([]bool, len(batch))
	for _, k := range idx {
		ran[k] = true
	}
	if len(invs) > 0 {
		for m, o := range t.a.runBatch(ctx, invs) {
			outs[idx[m]] = o
		}
	}
	return t.logOutputs(n, batch, seqs, ran, outs, byName)
}

// startTools readies the batch's calls: a call of an aborted turn or
// with bad arguments gets its error output in outs and does not run; the
// others get their tool/start (unless the tool defers it) and an
// invocation. It returns the invocations and their indexes in batch. A
// tool/start is made durable before any tool runs.
func (t *turn) startTools(ctx context.Context, n int, batch []session.ToolCall, seqs []int64, byName map[string]Tool, outs []ToolOutput) ([]*ToolInvocation, []int, error) {
	var (
		invs    []*ToolInvocation
		idx     []int
		started bool // a tool/start was appended: made durable before any tool runs
	)
	for k, c := range batch {
		if ctx.Err() != nil {
			outs[k] = ToolOutput{Error: &session.ToolResultError{Code: session.CodeToolNotStarted, Message: "the turn was aborted before the tool ran"}}
			continue
		}
		args, bad := checkArguments(c.Arguments)
		if bad != nil {
			outs[k] = ToolOutput{Error: bad}
			continue
		}
		if !deferredStart(byName[c.Name]) {
			if _, err := t.append(session.Event{Type: session.TypeToolStart, Step: n, Data: session.ToolStart{ID: c.ID}}); err != nil {
				return nil, nil, err
			}
			started = true
		}
		invs = append(invs, &ToolInvocation{
			Session: t.sess.ID(), Turn: t.n, Step: n,
			Call:    session.ToolCall{ID: c.ID, Name: c.Name, Arguments: args},
			CallSeq: seqs[k],
			Tool:    byName[c.Name],
		})
		idx = append(idx, k)
	}
	if started {
		if err := t.durable(); err != nil {
			return nil, nil, err
		}
	}
	return invs, idx, nil
}

// logOutputs logs the batch's results in call order: a deferred
// tool/start before the result of a call that ran, and, for a call whose
// sub-agent waits for an approval, a request of its own instead of a
// result (returned among the pending calls).
func (t *turn) logOutputs(n int, batch []session.ToolCall, seqs []int64, ran []bool, outs []ToolOutput, byName map[string]Tool) (pending []session.PendingCall, _ error) {
	for k, c := range batch {
		if w := outs[k].waiting; w != nil {
			p, err := t.await(n, c, seqs[k], w)
			if err != nil {
				return nil, err
			}
			pending = append(pending, p)
			continue
		}
		if ran[k] && deferredStart(byName[c.Name]) {
			if _, err := t.append(session.Event{Type: session.TypeToolStart, Step: n, Data: session.ToolStart{ID: c.ID}}); err != nil {
				return nil, err
			}
		}
		res := session.ToolResult{ID: c.ID, Name: c.Name, Content: outs[k].Content, Error: outs[k].Error, Child: outs[k].Child}
		if _, err := t.append(session.Event{Type: session.TypeToolResult, Step: n, Sources: []int64{seqs[k]}, Data: res}); err != nil {
			return nil, err
		}
	}
	return pending, nil
}
