package session_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

// FuzzRecordText: for any Go string s in any string field of any core
// record type (and in the type and data of a plugin's record), the record
// holds valid UTF-8, s as encoding/json reads it (each invalid byte a
// U+FFFD); its line decodes to a record with the same line, whose payload
// re-encodes to that line again; and a log whose every free text is s
// passes vigil verify's check. (FuzzDecode cannot find a string the
// encoder writes and the decoder refuses: it starts from lines.)
func FuzzRecordText(f *testing.F) {
	for _, s := range []string{"", "x", "caf\xc3", "\xff", "\uFFFD", `\ufffd`, "\xe2\x98", "a\u2028<>&\"\\\n\x00", "\uFDD0\xff", "😀"} {
		f.Add(s)
	}
	types := slices.Sorted(maps.Keys(session.CorePayloadTypes()))
	f.Fuzz(func(t *testing.T, s string) {
		for _, typ := range types {
			fuzzCoreFields(t, typ, s)
		}
		for _, data := range []any{map[string]string{"k" + s: s}, json.RawMessage(rawJSON(s))} {
			r, err := session.NewRecord(5, epoch, session.Event{Type: "x/" + s, Ignorable: true, Data: data})
			if err != nil {
				t.Fatalf("plugin record of %q: %v", s, err)
			}
			if r.Type() != "x/"+jsonRead(s) {
				t.Fatalf("type %q, want %q", r.Type(), "x/"+jsonRead(s))
			}
			checkHeld(t, r)
		}
		fuzzLog(t, s)
	})
}

// fuzzCoreFields makes a record of typ for each of its payload's text
// fields, holding s there and a valid value elsewhere, and checks it.
func fuzzCoreFields(t *testing.T, typ, s string) {
	pt := session.CorePayloadTypes()[typ]
	for field := 0; ; field++ {
		v := reflect.New(pt).Elem()
		fillPayload(v)
		name, isRaw, ok := setText(v, field, s)
		if !ok {
			return
		}
		r, err := makeCore(typ, v.Interface())
		if err != nil {
			// Only an id may not be empty, and only the fields that
			// are names of a set may not be any text.
			if s == "" && errors.Is(err, session.ErrNoCallID) || enumField[name] {
				continue
			}
			t.Fatalf("%s with %s = %q: %v", typ, name, s, err)
		}
		checkHeld(t, r)
		held, err := session.DecodeData[any](r)
		if err != nil {
			t.Fatal(err)
		}
		var got any
		getText(reflect.ValueOf(held), field, &got)
		want := jsonRead(s)
		if isRaw {
			var m map[string]string
			if err := json.Unmarshal(got.([]byte), &m); err != nil || m["d"] != want {
				t.Fatalf("%s %s holds %q (%v), want the JSON of %q", typ, name, got, err, want)
			}
		} else if got != want {
			t.Fatalf("%s %s holds %q, want %q", typ, name, got, want)
		}
	}
}

// enumField names the fields whose values are one of a few words or a
// pattern: any text is not a valid value.
var enumField = map[string]bool{
	"ApprovalDecision.Scope": true, "ApprovalPolicy.Default": true,
	"ApprovalRule.Tool": true, "ApprovalRule.Action": true, "ApprovalRule.Arguments": true,
}

// makeCore makes a record of a core type at the first scope it takes.
func makeCore(typ string, data any) (session.Record, error) {
	var err error
	for _, sc := range [][2]int{{1, 1}, {1, 0}, {0, 0}} {
		var r session.Record
		if r, err = session.NewRecord(5, epoch, session.Event{Type: typ, Turn: sc[0], Step: sc[1], Data: data}); err == nil {
			return r, nil
		}
		if !errors.Is(err, session.ErrInvalidScope) {
			return session.Record{}, err
		}
	}
	return session.Record{}, err
}

// fillPayload gives every field of v a valid value: text "x", JSON `{}`,
// slices one element, pointers a value, and the words of a set.
func fillPayload(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes([]byte(`{}`))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillPayload(v.Index(0))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillPayload(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			fillPayload(v.Field(i))
		}
		switch p := v.Addr().Interface().(type) {
		case *session.ApprovalDecision:
			p.Scope = session.ScopeCall
		case *session.ApprovalPolicy:
			p.Default = "allow"
		case *session.ApprovalRule:
			p.Action = "ask"
		}
	case reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
	default:
		panic(fmt.Sprintf("a core payload field of kind %s: teach fillPayload and setText about it", v.Kind()))
	}
}

// textFields calls fn with each text field of v (a string or JSON text),
// its name (Struct.Field) and whether it is JSON, in order, until fn
// returns false.
func textFields(v reflect.Value, name string, fn func(f reflect.Value, name string, raw bool) bool) bool {
	switch v.Kind() {
	case reflect.String:
		return fn(v, name, false)
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			return fn(v, name, true)
		}
		for i := range v.Len() {
			if !textFields(v.Index(i), name, fn) {
				return false
			}
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return textFields(v.Elem(), name, fn)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if !textFields(v.Field(i), v.Type().Name()+"."+v.Type().Field(i).Name, fn) {
				return false
			}
		}
	}
	return true
}

// setText sets the n-th text field of v to s (JSON text holding s, for
// JSON) and returns its name; ok is false when v has no n-th.
func setText(v reflect.Value, n int, s string) (name string, raw, ok bool) {
	textFields(v, "", func(f reflect.Value, fname string, isRaw bool) bool {
		if n > 0 {
			n--
			return true
		}
		if isRaw {
			f.SetBytes([]byte(rawJSON(s)))
		} else {
			f.SetString(s)
		}
		name, raw, ok = fname, isRaw, true
		return false
	})
	return name, raw, ok
}

// getText stores the n-th text field of v in *out.
func getText(v reflect.Value, n int, out *any) {
	textFields(v, "", func(f reflect.Value, _ string, _ bool) bool {
		if n > 0 {
			n--
			return true
		}
		*out = f.Interface()
		if b, ok := (*out).(json.RawMessage); ok {
			*out = []byte(b)
		}
		return false
	})
}

// jsonRead is s as encoding/json reads it back from its encoding.
func jsonRead(s string) string {
	b, _ := json.Marshal(s)
	var out string
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// rawJSON is the JSON object {"d": s} with s's bytes as they are, valid
// UTF-8 or not, escaping only what JSON requires.
func rawJSON(s string) string {
	var b strings.Builder
	b.WriteString(`{"d":"`)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteString(`"}`)
	return b.String()
}

// checkHeld checks what every record must be: valid UTF-8 in its line,
// its type and every string of its payload; a line that decodes to the
// same line and payload; a payload that re-encodes to the line.
func checkHeld(t *testing.T, r session.Record) {
	t.Helper()
	line := r.Bytes()
	if !utf8.Valid(line) || !utf8.ValidString(r.Type()) {
		t.Fatalf("a record that is not valid UTF-8: %q", line)
	}
	held, err := session.DecodeData[any](r)
	if err != nil {
		t.Fatal(err)
	}
	textFields(reflect.ValueOf(held), "", func(f reflect.Value, name string, _ bool) bool {
		if f.Kind() == reflect.String && !utf8.ValidString(f.String()) || f.Kind() == reflect.Slice && !utf8.Valid(f.Bytes()) {
			t.Fatalf("%s holds invalid UTF-8: %q", name, f.Interface())
		}
		return true
	})
	again, err := session.DecodeRecord(line)
	if err != nil {
		t.Fatalf("the line of a record does not decode: %v\n%q", err, line)
	}
	if !bytes.Equal(again.Bytes(), line) {
		t.Fatalf("decoded to another line:\n%q\n%q", line, again.Bytes())
	}
	decoded, err := session.DecodeData[any](again)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(held, decoded) {
		t.Fatalf("decoded another payload:\n%#v\n%#v", held, decoded)
	}
	datas := []any{again.Data()}
	if session.CorePayloadTypes()[r.Type()] != nil {
		// A plugin's data is held as the JSON text it was given (see
		// docs/log-format.md), not as a Go value would encode.
		datas = append(datas, decoded)
	}
	for _, data := range datas {
		re, err := session.NewRecord(again.Seq(), again.Time(), session.Event{Type: again.Type(), Turn: again.Turn(), Step: again.Step(), Ignorable: again.Ignorable(), Data: data})
		if err != nil {
			t.Fatalf("the decoded payload does not make a record: %v", err)
		}
		if !bytes.Equal(re.Bytes(), line) {
			t.Fatalf("the decoded payload re-encodes to another line:\n%q\n%q", line, re.Bytes())
		}
	}
}

// fuzzLog builds a log of two turns, a tool call with an approval, and a
// compaction, whose every free text holds s, as the loop logs it (each
// digest over the fold of what was logged), and checks that its bytes
// decode to themselves and pass vigil verify's check.
func fuzzLog(t *testing.T, s string) {
	var recs []session.Record
	start := 0
	add := func(ev session.Event) session.Record {
		r, err := session.NewRecord(int64(len(recs)), epoch, ev)
		if err != nil {
			t.Fatalf("%s with %q: %v", ev.Type, s, err)
		}
		recs = append(recs, r)
		return r
	}
	step := func(turn, n int) {
		start = len(recs)
		add(session.Event{Type: session.TypeStepStart, Turn: turn, Step: n})
	}
	digest := func(turn, n int) {
		msgs, h, _, err := session.DeriveRequest(recs, start)
		if err != nil {
			t.Fatal(err)
		}
		add(session.Event{Type: session.TypeRequestDigest, Turn: turn, Step: n, Data: session.Digest{SHA256: session.RequestDigest(h, msgs), Messages: len(msgs)}})
	}
	text := func(chunks ...session.Record) string {
		var b strings.Builder
		for _, c := range chunks {
			d, _ := session.DecodeData[session.AssistantChunk](c)
			b.WriteString(d.Text + d.Reasoning)
		}
		return b.String()
	}
	args := `{"q":"` + rawJSON(s)[len(`{"d":"`):]
	call := session.ToolCall{ID: "c1", Name: "t", Arguments: args}

	add(session.Event{Type: session.TypeTurnStart, Turn: 1})
	add(session.Event{Type: session.TypeUserMessage, Turn: 1, Data: session.UserMessage{Content: "u" + s}})
	step(1, 1)
	add(session.Event{Type: session.TypeRequestHeader, Turn: 1, Data: session.RequestHeader{Reason: session.HeaderInitial, Header: session.Header{
		Provider: "p" + s, Model: "m" + s, System: s, Stop: []string{"s" + s},
		Tools: []session.ToolSpec{{Name: "t", Description: s, Parameters: json.RawMessage(rawJSON(s))}},
	}}})
	digest(1, 1)
	reasoning := add(session.Event{Type: session.TypeAssistantChunk, Turn: 1, Step: 1, Data: session.AssistantChunk{Reasoning: "r" + s}})
	chunk := add(session.Event{Type: session.TypeAssistantChunk, Turn: 1, Step: 1, Data: session.AssistantChunk{Text: "a" + s}})
	callChunk := add(session.Event{Type: session.TypeAssistantChunk, Turn: 1, Step: 1, Data: session.AssistantChunk{ToolCall: &session.ChunkToolCall{ID: call.ID, Name: call.Name, Arguments: call.Arguments}}})
	msg := add(session.Event{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Sources: []int64{reasoning.Seq(), chunk.Seq(), callChunk.Seq()},
		Data: session.AssistantMessage{Content: text(chunk), Reasoning: text(reasoning), ToolCalls: []session.ToolCall{call}}})
	callRec := add(session.Event{Type: session.TypeToolCall, Turn: 1, Step: 1, Data: call})
	add(session.Event{Type: session.TypeApprovalRequest, Turn: 1, Step: 1, Data: session.ApprovalRequest{ID: call.ID, By: "b" + s, Reason: s}})
	add(session.Event{Type: session.TypeApprovalDecision, Turn: 1, Step: 1, Data: session.ApprovalDecision{ID: call.ID, Allow: true, By: "ann" + s, Reason: s}})
	add(session.Event{Type: session.TypeToolStart, Turn: 1, Step: 1, Data: session.ToolStart{ID: call.ID}})
	result := add(session.Event{Type: session.TypeToolResult, Turn: 1, Step: 1, Sources: []int64{callRec.Seq()}, Data: session.ToolResult{ID: call.ID, Name: call.Name, Content: s}})
	add(session.Event{Type: session.TypeStepEnd, Turn: 1, Step: 1, Data: session.StepEnd{Finish: session.FinishToolCalls}})
	step(1, 2)
	digest(1, 2)
	chunk = add(session.Event{Type: session.TypeAssistantChunk, Turn: 1, Step: 2, Data: session.AssistantChunk{Text: "b" + s}})
	answer := add(session.Event{Type: session.TypeAssistantMessage, Turn: 1, Step: 2, Sources: []int64{chunk.Seq()}, Data: session.AssistantMessage{Content: text(chunk)}})
	add(session.Event{Type: session.TypeStepEnd, Turn: 1, Step: 2, Data: session.StepEnd{Finish: session.FinishStop}})
	add(session.Event{Type: session.TypeTurnEnd, Turn: 1, Data: session.TurnEnd{Reason: session.ReasonCompleted}})

	add(session.Event{Type: session.TypeCompactionStart, Data: session.Compaction{ID: "k"}})
	add(session.Event{Type: session.TypeUserMessage, Surface: &session.Surface{Op: session.OpReplace, Start: 1, End: answer.Seq()},
		Sources: []int64{1, msg.Seq(), result.Seq(), answer.Seq()}, Data: session.UserMessage{Content: "summary " + s}})
	add(session.Event{Type: session.TypeCompactionEnd, Data: session.Compaction{ID: "k"}})

	add(session.Event{Type: session.TypeTurnStart, Turn: 2})
	add(session.Event{Type: session.TypeUserMessage, Turn: 2, Data: session.UserMessage{Content: "v" + s}})
	step(2, 1)
	digest(2, 1)
	chunk = add(session.Event{Type: session.TypeAssistantChunk, Turn: 2, Step: 1, Data: session.AssistantChunk{Text: "c" + s}})
	add(session.Event{Type: session.TypeAssistantMessage, Turn: 2, Step: 1, Sources: []int64{chunk.Seq()}, Data: session.AssistantMessage{Content: text(chunk)}})
	add(session.Event{Type: session.TypeStepEnd, Turn: 2, Step: 1, Data: session.StepEnd{Finish: session.FinishStop}})
	add(session.Event{Type: session.TypeTurnEnd, Turn: 2, Data: session.TurnEnd{Reason: session.ReasonCompleted}})

	// Turn 3 dies while its call runs; a person reconciles the call with
	// s as its outcome, which turn 4's request shows the model.
	add(session.Event{Type: session.TypeTurnStart, Turn: 3})
	add(session.Event{Type: session.TypeUserMessage, Turn: 3, Data: session.UserMessage{Content: "w" + s}})
	step(3, 1)
	digest(3, 1)
	lost := session.ToolCall{ID: "c3", Name: "t", Arguments: args}
	callChunk = add(session.Event{Type: session.TypeAssistantChunk, Turn: 3, Step: 1, Data: session.AssistantChunk{ToolCall: &session.ChunkToolCall{ID: lost.ID, Name: lost.Name, Arguments: lost.Arguments}}})
	add(session.Event{Type: session.TypeAssistantMessage, Turn: 3, Step: 1, Sources: []int64{callChunk.Seq()}, Data: session.AssistantMessage{ToolCalls: []session.ToolCall{lost}}})
	callRec = add(session.Event{Type: session.TypeToolCall, Turn: 3, Step: 1, Data: lost})
	add(session.Event{Type: session.TypeToolStart, Turn: 3, Step: 1, Data: session.ToolStart{ID: lost.ID}})
	unknown := add(session.Event{Type: session.TypeToolResult, Turn: 3, Step: 1, Sources: []int64{callRec.Seq()}, Data: session.ToolResult{ID: lost.ID, Name: lost.Name, Error: &session.ToolResultError{Code: session.CodeToolOutcomeUnknown, Message: s}}})
	add(session.Event{Type: session.TypeStepEnd, Turn: 3, Step: 1, Data: session.StepEnd{Finish: session.FinishError}})
	add(session.Event{Type: session.TypeTurnEnd, Turn: 3, Data: session.TurnEnd{Reason: session.ReasonInterrupted}})
	add(session.Event{Type: session.TypeToolReconcile, Sources: []int64{unknown.Seq()}, Data: session.ToolReconcile{ID: lost.ID, Name: lost.Name, Content: s, Error: &session.ToolResultError{Code: session.CodeToolError, Message: s}, By: "p" + s}})
	add(session.Event{Type: session.TypeTurnStart, Turn: 4})
	step(4, 1)
	digest(4, 1)
	chunk = add(session.Event{Type: session.TypeAssistantChunk, Turn: 4, Step: 1, Data: session.AssistantChunk{Text: "d" + s}})
	add(session.Event{Type: session.TypeAssistantMessage, Turn: 4, Step: 1, Sources: []int64{chunk.Seq()}, Data: session.AssistantMessage{Content: text(chunk)}})
	add(session.Event{Type: session.TypeStepEnd, Turn: 4, Step: 1, Data: session.StepEnd{Finish: session.FinishStop}})
	add(session.Event{Type: session.TypeTurnEnd, Turn: 4, Data: session.TurnEnd{Reason: session.ReasonCompleted}})

	data := session.AppendHeaderLine(nil, session.Info{ID: "s1", Version: session.Version, Created: epoch})
	for _, r := range recs {
		data = r.AppendLine(data)
	}
	log, err := session.DecodeBytes(data)
	if err != nil {
		t.Fatalf("the log does not decode: %v", err)
	}
	enc := session.AppendHeaderLine(nil, log.Info)
	for _, r := range log.Records {
		enc = r.AppendLine(enc)
	}
	if !bytes.Equal(enc, data) {
		t.Fatalf("the log decodes to other bytes:\n%s\n%s", data, enc)
	}
	rep, err := invariants.Verify(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if len(rep.Violations) > 0 {
		t.Fatalf("verify: %+v\n%s", rep.Violations, data)
	}
}
