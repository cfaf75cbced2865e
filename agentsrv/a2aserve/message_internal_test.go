package a2aserve

import (
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// An answer on a task is read as a decision: the first word of its text,
// the rest a denial's reason, or a data part; anything else is refused.
func TestDecisionOfAnAnswer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts a2a.ContentParts
		want  decision
		bad   bool
	}{
		{"allow", a2a.ContentParts{a2a.TextPart{Text: "allow"}}, decision{allow: true}, false},
		{"yes with a reason dropped", a2a.ContentParts{a2a.TextPart{Text: " Yes, go on"}}, decision{allow: true}, false},
		{"deny with a reason", a2a.ContentParts{a2a.TextPart{Text: "deny not today"}}, decision{reason: "not today"}, false},
		{"no without a reason", a2a.ContentParts{a2a.TextPart{Text: "no"}}, decision{reason: "denied"}, false},
		{"data for one call", a2a.ContentParts{a2a.DataPart{Data: map[string]any{"allow": false, "reason": "r", "call": "c1"}}}, decision{reason: "r", call: "c1"}, false},
		{"data without allow", a2a.ContentParts{a2a.DataPart{Data: map[string]any{"reason": "r"}}}, decision{}, true},
		{"data allow not a bool", a2a.ContentParts{a2a.DataPart{Data: map[string]any{"allow": "yes"}}}, decision{}, true},
		{"something else", a2a.ContentParts{a2a.TextPart{Text: "maybe"}}, decision{}, true},
		{"nothing", nil, decision{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decisionOf(&a2a.Message{Parts: tc.parts})
			if tc.bad {
				require.ErrorIs(t, err, a2a.ErrInvalidParams)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// A new task's message is the agent's arguments: its data part, else its
// text as the task; a file part is refused.
func TestArgumentsOfAMessage(t *testing.T) {
	got, err := argumentsOf(&a2a.Message{Parts: a2a.ContentParts{a2a.TextPart{Text: "a"}, a2a.TextPart{Text: "b"}}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"task":"a\nb"}`, string(got))
	got, err = argumentsOf(&a2a.Message{Parts: a2a.ContentParts{a2a.TextPart{Text: "ignored"}, a2a.DataPart{Data: map[string]any{"text": "x"}}}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"text":"x"}`, string(got))
	_, err = argumentsOf(&a2a.Message{Parts: a2a.ContentParts{a2a.FilePart{File: a2a.FileURI{URI: "file:///etc/passwd"}}}})
	require.ErrorIs(t, err, a2a.ErrUnsupportedContentType)
}

// A task id is <session>.<job>; anything else is a task that does not
// exist, and what parses prints back as itself.
func FuzzParseTaskID(f *testing.F) {
	for _, s := range []string{"01ABC.0001", "a.b.c", ".x", "x.", "../x.y", "", "s p.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		ref, err := parseTaskID(a2a.TaskID(id))
		if err != nil {
			require.ErrorIs(t, err, a2a.ErrTaskNotFound)
			return
		}
		assert.True(t, session.ValidID(ref.session))
		assert.Equal(t, a2a.TaskID(id), ref.id())
	})
}

// Reading any answer text never panics; what it accepts has a reason
// exactly when it denies.
func FuzzDecisionOf(f *testing.F) {
	for _, s := range []string{"allow", "deny x", "", "no", "OK."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		d, err := decisionOf(&a2a.Message{Parts: a2a.ContentParts{a2a.TextPart{Text: text}}})
		if err != nil {
			return
		}
		assert.Equal(t, d.allow, d.reason == "")
	})
}
