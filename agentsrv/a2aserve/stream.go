package a2aserve

import (
	"context"
	"iter"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/vigil-run/vigil/agentsrv"
	"github.com/vigil-run/vigil/session"
)

// recheck is how often a watched task is read again without a record
// that could change it (a job's state changes outside the log).
const recheck = 500 * time.Millisecond

// cancelWait bounds how long tasks/cancel waits for the turn to end.
const cancelWait = 10 * time.Second

// watch streams task ref: the task as it stands, then each chunk of its
// turn as an append to the answer artifact and each change of its state
// as a status update, until the task is final or waits for input (the
// last status update is final, with the receipt; a completed task's whole
// answer comes just before it), or ctx is done. It follows the log, so it
// sees the turn whichever worker runs it.
//
// With whole, the stream shows the whole turn however far a worker got
// before it was asked for (message/stream: the client just made the
// task, and a fast worker may have run it already): the task as it
// started, then every chunk from the job's start, then the updates.
// Without, it shows the task from now on (tasks/resubscribe).
func (s *Server) watch(ctx context.Context, ref taskRef, whole bool) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		v, err := s.view(ctx, ref)
		if err != nil {
			yield(nil, err)
			return
		}
		first, from, pending := s.opening(v, whole)
		if !yield(first, nil) || pending == nil && v.final() {
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		recs, errc := s.pump(ctx, ref.session, from)
		tick := time.NewTicker(recheck)
		defer tick.Stop()
		state := first.Status.State
		pos := from
		for {
			again := false
			select {
			case <-ctx.Done():
				return
			case err := <-errc:
				yield(nil, err)
				return
			case <-tick.C:
				again = pending == nil
			case rec := <-recs:
				pos = rec.Seq() + 1
				if ev := s.chunk(ref, v, rec); ev != nil && !yield(ev, nil) {
					return
				}
				again = pending == nil && changes(rec.Type())
			}
			if pending != nil && pos >= pending.next {
				s.update(*pending, yield)
				return
			}
			if !again {
				continue
			}
			if v, err = s.view(ctx, ref); err != nil {
				yield(nil, err)
				return
			}
			switch {
			case v.final() && pos < v.next:
				pending = &v
			case v.task.Status.State == state && !v.final():
			default:
				state = v.task.Status.State
				if !s.update(v, yield) || v.final() {
					return
				}
			}
		}
	}
}

// opening is how a watch of view v opens: the task it shows first, the
// seq it follows the log from and, when v is already final, the view whose
// update ends the stream once the chunks up to it were streamed (the
// stream never says more than it showed).
func (s *Server) opening(v view, whole bool) (first *a2a.Task, from int64, pending *view) {
	if !whole || v.turn == 0 || v.base < 0 {
		return v.task, v.next, nil
	}
	if v.final() {
		pending = &v
	}
	return asStarted(v.task), v.base, pending
}

// asStarted is task as it stood when its turn started: working, with no
// answer yet.
func asStarted(task *a2a.Task) *a2a.Task {
	t := *task
	t.Status = status(a2a.TaskStateWorking, "")
	now := time.Now().UTC()
	t.Status.Timestamp = &now
	t.Artifacts, t.Metadata = nil, nil
	return &t
}

// update yields the status update of view v (with the answer first when
// it completed); false when the consumer stopped.
func (s *Server) update(v view, yield func(a2a.Event, error) bool) bool {
	if v.task.Status.State == a2a.TaskStateCompleted && len(v.task.Artifacts) > 0 {
		ev := &a2a.TaskArtifactUpdateEvent{TaskID: v.task.ID, ContextID: v.task.ContextID, Artifact: v.task.Artifacts[0], LastChunk: true}
		if !yield(ev, nil) {
			return false
		}
	}
	ev := &a2a.TaskStatusUpdateEvent{TaskID: v.task.ID, ContextID: v.task.ContextID, Status: v.task.Status, Final: v.final()}
	if r, ok := v.task.Metadata[agentsrv.MetaKey]; ok {
		ev.Metadata = map[string]any{agentsrv.MetaKey: r}
	}
	return yield(ev, nil)
}

// chunk is the artifact update of rec when it is a text chunk of the
// task's turn, nil else.
func (s *Server) chunk(ref taskRef, v view, rec session.Record) a2a.Event {
	if rec.Type() != session.TypeAssistantChunk || v.turn == 0 || rec.Turn() < v.turn {
		return nil
	}
	c, err := session.DecodeData[session.AssistantChunk](rec)
	if err != nil || c.Text == "" {
		return nil
	}
	return &a2a.TaskArtifactUpdateEvent{TaskID: ref.id(), ContextID: ref.session, Append: true,
		Artifact: &a2a.Artifact{ID: AnswerArtifact, Name: "answer", Parts: a2a.ContentParts{a2a.TextPart{Text: c.Text}}}}
}

// changes reports whether a record of type typ may change a task's
// state: the task is read again after it.
func changes(typ string) bool {
	switch typ {
	case session.TypeTurnStart, session.TypeTurnEnd, session.TypeApprovalRequest, session.TypeApprovalDecision,
		session.TypeStepEnd, session.TypeCheckpoint:
		return true
	}
	return false
}

// pump follows session id's records from seq from on, on a goroutine of
// its own, until ctx is done: they come on the first channel, and the
// error that ended following, if one did, on the second.
func (s *Server) pump(ctx context.Context, id string, from int64) (<-chan session.Record, <-chan error) {
	recs := make(chan session.Record, 64)
	errc := make(chan error, 1)
	go func() {
		for rec, err := range s.rt.Follow(ctx, id, from) {
			if err != nil {
				if ctx.Err() == nil {
					errc <- err
				}
				return
			}
			select {
			case recs <- rec:
			case <-ctx.Done():
				return
			}
		}
	}()
	return recs, errc
}
