package a2aserve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentsrv"
	"github.com/vigil-run/vigil/session"
)

// taskRef is what a task id names: the session (the task's context) and
// the queued job that started its turn; and the entry id of the agent
// whose endpoint was asked (a task of another agent is none of its).
type taskRef struct {
	session, job string
	agent        string
}

// id is the task's id: "<session>.<job>" (a session id has no dot).
func (r taskRef) id() a2a.TaskID { return a2a.TaskID(r.session + "." + r.job) }

// parseTaskID reads a task id; one that names no session and job is a
// task that does not exist.
func parseTaskID(id a2a.TaskID) (taskRef, error) {
	sess, job, ok := strings.Cut(string(id), ".")
	if !ok || !session.ValidID(sess) || job == "" {
		return taskRef{}, fmt.Errorf("%w: %q", a2a.ErrTaskNotFound, id)
	}
	return taskRef{session: sess, job: job}, nil
}

// view is a task as the queue and the log say it is now.
type view struct {
	task *a2a.Task
	// turn is the task's turn (the last of a chain of continuations), 0
	// before it started.
	turn int
	// next is the log's length as read: a follower takes it up there.
	next int64
	// base is the log's length when a worker started the task's job (-1
	// before): the task's records are from there on.
	base int64
	// waiting: the turn waits for decisions no job carries yet.
	waiting *agentsrv.Waiting
}

// final reports whether a stream of the task ends at this view: the
// task is terminal or waits for input.
func (v view) final() bool {
	return v.task.Status.State.Terminal() || v.task.Status.State == a2a.TaskStateInputRequired
}

// AnswerArtifact is the id of the artifact that holds the turn's answer.
const AnswerArtifact a2a.ArtifactID = "answer"

// view reads task ref.
func (s *Server) view(ctx context.Context, ref taskRef) (view, error) {
	q, err := s.rt.Queue()
	if err != nil {
		return view{}, err
	}
	job, log, jobs, err := s.read(ctx, q, ref)
	if err != nil {
		return view{}, err
	}
	v := view{next: int64(len(log.Records)), base: job.Base, task: &a2a.Task{ID: ref.id(), ContextID: ref.session}}
	if job.Base >= 0 {
		v.turn = turnOf(log.Records, job.Base)
	}
	busy := len(jobs) > 0
	if v.turn == 0 {
		v.task.Status = statusOfJob(job)
		return v, nil
	}
	t := readTurn(log.Records, v.turn)
	if t.prompt != "" {
		v.task.History = []*a2a.Message{{ID: fmt.Sprintf("%s.%d.user", ref.session, v.turn), ContextID: ref.session, TaskID: ref.id(), Role: a2a.MessageRoleUser, Parts: a2a.ContentParts{a2a.TextPart{Text: t.prompt}}}}
	}
	switch {
	case t.ended && continuable(t.reason) && !job.State.Finished():
		// A worker carries the turn on (a crash cut it short).
		v.task.Status = status(a2a.TaskStateWorking, "")
	case t.ended:
		v.task.Status = statusOfEnd(t)
		if v.task.Status.State == a2a.TaskStateCompleted {
			v.task.Artifacts = []*a2a.Artifact{{ID: AnswerArtifact, Name: "answer", Parts: a2a.ContentParts{a2a.TextPart{Text: t.answer}}}}
		}
	case t.suspended != nil && !busy:
		w := agentsrv.WaitingOf(ref.session, t.suspended.Calls)
		v.waiting = &w
		v.task.Status = a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: question(ref, w)}
	default:
		v.task.Status = status(a2a.TaskStateWorking, "")
	}
	if v.final() {
		res := &vigil.Result{Session: ref.session, Turn: v.turn}
		r, err := agentsrv.ReceiptOf(ctx, s.rt, res)
		if err != nil {
			return view{}, err
		}
		v.task.Metadata = map[string]any{agentsrv.MetaKey: r}
	}
	now := time.Now().UTC()
	v.task.Status.Timestamp = &now
	return v, nil
}

// read reads task ref's job, its session's log and unfinished jobs, as
// one moment: the job is read again after the log, and all of it again
// when the job changed in between (a worker started or ended it), so a
// view never pairs a job not yet started with a log its turn is already
// in (a stream would follow the log from past the turn's chunks).
func (s *Server) read(ctx context.Context, q session.Queue, ref taskRef) (session.Job, *session.Log, []session.Job, error) {
	for attempt := 0; ; attempt++ {
		job, err := q.Job(ctx, ref.job)
		if errors.Is(err, session.ErrNotFound) || err == nil && (job.Session != ref.session || job.Kind != vigil.JobTurn || vigil.JobAgent(job) != ref.agent) {
			return session.Job{}, nil, nil, fmt.Errorf("%w: %s", a2a.ErrTaskNotFound, ref.id())
		}
		if err != nil {
			return session.Job{}, nil, nil, err
		}
		log, err := s.rt.Session(ctx, ref.session)
		if err != nil {
			return session.Job{}, nil, nil, err
		}
		jobs, err := q.Jobs(ctx, ref.session)
		if err != nil {
			return session.Job{}, nil, nil, err
		}
		again, err := q.Job(ctx, ref.job)
		if err != nil {
			return session.Job{}, nil, nil, err
		}
		if again.Base == job.Base && again.State == job.State && again.Attempts == job.Attempts || attempt == 4 {
			return again, log, jobs, nil
		}
	}
}

// continuable reports whether a turn that ended with reason is carried
// on by the next worker of its job (see vigil.Runtime.Work).
func continuable(reason string) bool {
	return reason == session.ReasonInterrupted
}

// turnOf is the turn job started: the first to start at or after seq
// base, or the continuation of it that carries it on (after a crash),
// the last of the chain. 0 when none started yet.
func turnOf(records []session.Record, base int64) int {
	n := 0
	for _, rec := range records[min(base, int64(len(records))):] {
		if rec.Type() != session.TypeTurnStart {
			continue
		}
		if n == 0 {
			n = rec.Turn()
			continue
		}
		if ts, err := session.DecodeData[session.TurnStart](rec); err == nil && ts.Continues == n {
			n = rec.Turn()
		}
	}
	return n
}

// turnRead is what the log says of one turn.
type turnRead struct {
	prompt, answer string
	ended          bool
	reason, err    string
	suspended      *session.Suspension
}

// readTurn reads turn n of records.
func readTurn(records []session.Record, n int) turnRead {
	var t turnRead
	for _, rec := range records {
		if rec.Turn() != n {
			continue
		}
		switch rec.Type() {
		case session.TypeUserMessage:
			if m, err := session.DecodeData[session.UserMessage](rec); err == nil && m.Origin == "" && t.prompt == "" {
				t.prompt = m.Content
			}
		case session.TypeAssistantMessage:
			if m, err := session.DecodeData[session.AssistantMessage](rec); err == nil {
				t.answer = m.Content
			}
		case session.TypeTurnEnd:
			if e, err := session.DecodeData[session.TurnEnd](rec); err == nil {
				t.ended, t.reason, t.err = true, e.Reason, e.Error
			}
		}
	}
	if s := session.Suspended(records); !t.ended && s != nil && s.Turn == n {
		t.suspended = s
	}
	return t
}

// statusOfEnd is the status of a turn that ended.
func statusOfEnd(t turnRead) a2a.TaskStatus {
	switch t.reason {
	case session.ReasonCompleted, session.ReasonMaxSteps:
		return a2a.TaskStatus{State: a2a.TaskStateCompleted, Message: agentMessage(t.answer)}
	case session.ReasonAborted:
		return status(a2a.TaskStateCanceled, "The turn was cancelled.")
	}
	msg := "The turn ended " + t.reason
	if t.err != "" {
		msg += ": " + t.err
	}
	return status(a2a.TaskStateFailed, msg)
}

// statusOfJob is the status of a task whose turn did not start: as its
// job stands.
func statusOfJob(job session.Job) a2a.TaskStatus {
	switch job.State {
	case session.JobQueued:
		return status(a2a.TaskStateSubmitted, "")
	case session.JobRunning:
		return status(a2a.TaskStateWorking, "")
	case session.JobCancelled:
		return status(a2a.TaskStateCanceled, "The task was cancelled before its turn started.")
	}
	msg := "The task ended before its turn started"
	if e := job.Outcome.Error; e != nil {
		msg += ": " + e.Message
	}
	return status(a2a.TaskStateFailed, msg)
}

func status(state a2a.TaskState, text string) a2a.TaskStatus {
	return a2a.TaskStatus{State: state, Message: agentMessage(text)}
}

// agentMessage is a message of the agent's with text, nil for none.
func agentMessage(text string) *a2a.Message {
	if text == "" {
		return nil
	}
	return a2a.NewMessage(a2a.MessageRoleAgent, a2a.TextPart{Text: text})
}

// question is the status message of a task that waits for decisions:
// what waits, in words and as data, and how to answer.
func question(ref taskRef, w agentsrv.Waiting) *a2a.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "The agent waits for approval in session %s. Answer with a message on task %s: \"allow\", or \"deny\" and a reason (or a data part {\"allow\": true|false, \"reason\": \"...\", \"call\": \"CALL\"} to decide one call):", ref.session, ref.id())
	for _, c := range w.Calls {
		fmt.Fprintf(&b, "\n- call %s: %s %s", c.Call, c.Tool, c.Arguments)
	}
	return a2a.NewMessage(a2a.MessageRoleAgent, a2a.TextPart{Text: b.String()},
		a2a.DataPart{Data: map[string]any{"session": w.Session, "calls": w.Calls}})
}
