package session_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vigil-run/vigil/session"
)

// Folding a session: the messages a model sees are derived from the log,
// and a compaction replaces part of the surface with a summary.
func ExampleDeriveMessages() {
	at := time.Date(2026, 11, 29, 20, 21, 24, 0, time.UTC)
	evs := []session.Event{
		{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "What is in this directory?"}},
		{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Data: session.AssistantMessage{
			ToolCalls: []session.ToolCall{{ID: "call_1", Name: "list_dir", Arguments: `{"path":"."}`}}}},
		{Type: session.TypeToolResult, Turn: 1, Step: 1, Sources: []int64{1}, Data: session.ToolResult{ID: "call_1", Name: "list_dir", Content: "a.txt"}},
		{Type: session.TypeAssistantMessage, Turn: 1, Step: 2, Data: session.AssistantMessage{Content: "One file: a.txt."}},
		// The compaction summary replaces seqs 0 through 3 on the surface.
		{Type: session.TypeUserMessage, Surface: &session.Surface{Op: session.OpReplace, Start: 0, End: 3},
			Sources: []int64{0, 1, 2, 3}, Data: session.UserMessage{Content: "Summary: the directory holds a.txt."}},
	}
	var records []session.Record
	for i, ev := range evs {
		r, err := session.NewRecord(int64(i), at, ev)
		if err != nil {
			panic(err)
		}
		records = append(records, r)
		msgs, _ := session.DeriveMessages(records)
		fmt.Printf("after seq %d: %d messages, last %s: %q\n", i, len(msgs), msgs[len(msgs)-1].Role, msgs[len(msgs)-1].Content)
	}
	// Output:
	// after seq 0: 1 messages, last user: "What is in this directory?"
	// after seq 1: 2 messages, last assistant: ""
	// after seq 2: 3 messages, last tool: "a.txt"
	// after seq 3: 4 messages, last assistant: "One file: a.txt."
	// after seq 4: 1 messages, last user: "Summary: the directory holds a.txt."
}

// Reading a log as an external tool does: the header line, then one
// record per line. A last line without its newline is a write a crash cut
// short; Decode drops it, says so, and returns the rest.
func ExampleDecode() {
	file := `{"type":"session","version":1,"id":"01JDEXAMPLE","created":"2026-11-29T20:21:24.000Z"}
{"seq":0,"type":"turn/start","time":"2026-11-29T20:21:24.100Z","turn":1,"data":{}}
{"seq":1,"type":"user/message","time":"2026-11-29T20:21:24.101Z","turn":1,"data":{"content":"hello"}}
{"seq":2,"type":"step/start","time":"2026-11-29T20:21:24.102Z","turn":1,"st`

	log, err := session.Decode(strings.NewReader(file))
	fmt.Println("torn:", errors.Is(err, session.ErrTornTail))
	fmt.Println(log.Info.ID, log.Info.Created.Format(time.RFC3339))
	for _, r := range log.Records {
		fmt.Println(r.Seq(), r.Type())
	}
	msgs, _ := session.DeriveMessages(log.Records)
	fmt.Printf("%s: %s\n", msgs[0].Role, msgs[0].Content)
	// Output:
	// torn: true
	// 01JDEXAMPLE 2026-11-29T20:21:24Z
	// 0 turn/start
	// 1 user/message
	// user: hello
}
