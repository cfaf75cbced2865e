package invariants_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/vigil-run/vigil/session"
)

// logBuilder writes valid session logs in the shape the agent loop
// produces, for tests and benchmarks.
type logBuilder struct {
	records []session.Record
	fold    *session.Fold
	header  session.Header
	headed  bool
	turn    int
	step    int
	calls   int
	now     time.Time
	// stepStart is the seq of the open step's step/start.
	stepStart int64
	// signer, when set, signs a checkpoint after every turn/end, as a
	// signing session does; tree is the log's so far.
	signer note.Signer
	tree   session.MerkleTree
}

func newLogBuilder(h session.Header) *logBuilder {
	return &logBuilder{fold: session.NewFold(), header: h, now: time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)}
}

func (b *logBuilder) add(ev session.Event) session.Record {
	r, err := session.NewRecord(int64(len(b.records)), b.now, ev)
	if err != nil {
		panic(fmt.Sprintf("logBuilder: %s: %v", ev.Type, err))
	}
	if err := b.fold.Add(r); err != nil {
		panic(fmt.Sprintf("logBuilder: fold: %v", err))
	}
	b.records = append(b.records, r)
	if b.signer != nil && ev.Type == session.TypeTurnEnd {
		b.checkpoint()
	}
	return r
}

// checkpoint appends a checkpoint signed by b.signer.
func (b *logBuilder) checkpoint() {
	for _, r := range b.records[b.tree.Size():] {
		b.tree.AddRecord(r)
	}
	n := int64(len(b.records))
	c := session.Checkpoint{Origin: session.CheckpointOrigin(b.id()), Size: n, Root: b.tree.Root(), Header: session.HeaderHashOf(b.info(b.id()))}
	msg, err := session.SignCheckpoint(c, b.signer)
	if err != nil {
		panic(err)
	}
	r, err := session.NewRecord(n, b.now, session.CheckpointEvent(msg))
	if err != nil {
		panic(err)
	}
	b.records = append(b.records, r)
}

// id is the session id of a signed builder's log.
func (b *logBuilder) id() string { return "signed" }

func (b *logBuilder) info(id string) session.Info { return session.Info{ID: id, Created: b.now} }

type toolCallSpec struct {
	name, args, result string
}

type stepSpec struct {
	chunks []string
	calls  []toolCallSpec
}

// turnWith appends a whole turn: the user message, then each step with
// its request header (first time), digest, chunks, message and tools.
func (b *logBuilder) turnWith(user string, steps ...stepSpec) {
	b.turn++
	b.step = 0
	b.add(session.Event{Type: session.TypeTurnStart, Turn: b.turn, Data: session.TurnStart{}})
	b.add(session.Event{Type: session.TypeUserMessage, Turn: b.turn, Data: session.UserMessage{Content: user}})
	for _, s := range steps {
		b.stepWith(s)
	}
	b.add(session.Event{Type: session.TypeTurnEnd, Turn: b.turn, Data: session.TurnEnd{Reason: session.ReasonCompleted}})
}

func (b *logBuilder) stepWith(s stepSpec) {
	b.step++
	t, st := b.turn, b.step
	msgs := b.fold.Messages()
	b.stepStart = b.add(session.Event{Type: session.TypeStepStart, Turn: t, Step: st, Data: session.StepStart{}}).Seq()
	if !b.headed {
		b.add(session.Event{Type: session.TypeRequestHeader, Turn: t, Data: session.RequestHeader{Reason: session.HeaderInitial, Header: b.header}})
		b.headed = true
	}
	b.add(session.Event{Type: session.TypeRequestDigest, Turn: t, Step: st, Data: session.Digest{SHA256: session.RequestDigest(b.header, msgs), Messages: len(msgs)}})
	var sources []int64
	var content strings.Builder
	for _, c := range s.chunks {
		sources = append(sources, b.add(session.Event{Type: session.TypeAssistantChunk, Turn: t, Step: st, Data: session.AssistantChunk{Text: c}}).Seq())
		content.WriteString(c)
	}
	var calls []session.ToolCall
	for i, c := range s.calls {
		b.calls++
		id := fmt.Sprintf("call_%d", b.calls)
		half := len(c.args) / 2
		sources = append(sources,
			b.add(session.Event{Type: session.TypeAssistantChunk, Turn: t, Step: st, Data: session.AssistantChunk{ToolCall: &session.ChunkToolCall{Index: i, ID: id, Name: c.name, Arguments: c.args[:half]}}}).Seq(),
			b.add(session.Event{Type: session.TypeAssistantChunk, Turn: t, Step: st, Data: session.AssistantChunk{ToolCall: &session.ChunkToolCall{Index: i, Arguments: c.args[half:]}}}).Seq())
		calls = append(calls, session.ToolCall{ID: id, Name: c.name, Arguments: c.args})
	}
	b.add(session.Event{Type: session.TypeAssistantMessage, Turn: t, Step: st, Sources: sources, Data: session.AssistantMessage{Content: content.String(), ToolCalls: calls}})
	for i, c := range s.calls {
		call := b.add(session.Event{Type: session.TypeToolCall, Turn: t, Step: st, Data: calls[i]})
		b.add(session.Event{Type: session.TypeToolStart, Turn: t, Step: st, Data: session.ToolStart{ID: calls[i].ID}})
		b.add(session.Event{Type: session.TypeToolResult, Turn: t, Step: st, Sources: []int64{call.Seq()}, Data: session.ToolResult{ID: calls[i].ID, Name: c.name, Content: c.result}})
	}
	finish := session.FinishStop
	if len(s.calls) > 0 {
		finish = session.FinishToolCalls
	}
	b.add(session.Event{Type: session.TypeStepEnd, Turn: t, Step: st, Data: session.StepEnd{Finish: finish, Usage: &session.Usage{Input: 100, Output: 20}}})
}

// jsonl renders the log in the stored format.
func (b *logBuilder) jsonl(id string) []byte {
	out := session.AppendHeaderLine(nil, b.info(id))
	for _, r := range b.records {
		out = r.AppendLine(out)
	}
	return out
}

// realisticHeader is the header of the benchmark sessions: a 4,000-char
// system prompt and three tool schemas.
func realisticHeader() session.Header {
	schema := func(props ...string) json.RawMessage {
		var p []string
		for _, x := range props {
			p = append(p, fmt.Sprintf(`%q:{"type":"string","description":"the %s"}`, x, x))
		}
		return json.RawMessage(`{"type":"object","properties":{` + strings.Join(p, ",") + `},"required":["` + props[0] + `"]}`)
	}
	return session.Header{
		Provider: "scripted", Model: "bench-model",
		System: strings.Repeat("You are a careful assistant. ", 138)[:4000],
		Tools: []session.ToolSpec{
			{Name: "read_file", Description: "Read a file under the root.", Parameters: schema("path")},
			{Name: "list_dir", Description: "List a directory under the root.", Parameters: schema("path")},
			{Name: "search", Description: "Search files for a pattern.", Parameters: schema("pattern", "path")},
		},
		MaxTokens: 1024,
	}
}

// realisticTurn appends one turn of the benchmark shape: a ~200-char user
// message; a step with ~10 text chunks and one tool call (~80 chars of
// arguments) with a ~800-char result; a second step answering in ~7
// chunks (~400 chars): 4 messages per turn.
func (b *logBuilder) realisticTurn() {
	n := b.turn + 1
	user := fmt.Sprintf("Turn %d: ", n) + strings.Repeat("please look into the build failure and tell me what changed. ", 4)[:190]
	var think []string
	for i := 0; i < 10; i++ {
		think = append(think, fmt.Sprintf("thinking %d ", i))
	}
	args := fmt.Sprintf(`{"path":"src/module_%04d/handler.go","context":"%s"}`, n, strings.Repeat("x", 30))
	result := strings.Repeat(fmt.Sprintf("line %d of the file; ", n), 40)[:800]
	var answer []string
	for i := 0; i < 7; i++ {
		answer = append(answer, strings.Repeat(fmt.Sprintf("answer part %d ", i), 5)[:57])
	}
	b.turnWith(user,
		stepSpec{chunks: think, calls: []toolCallSpec{{name: "read_file", args: args, result: result}}},
		stepSpec{chunks: answer})
}
