package external

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
	"github.com/vigil-run/vigil/session"
)

// TestAnswersHoldOnlyForTheProposedRecord: the answer to a proposed call
// is taken, once, by the commit of the same call of the same step; a
// commit of that call that differs from the proposal drops it (the
// record is validated again).
func TestAnswersHoldOnlyForTheProposedRecord(t *testing.T) {
	call := func(turn, step int, id, args string) session.Record {
		r, err := session.NewRecord(7, time.Now(), session.Event{Type: session.TypeToolCall, Turn: turn, Step: step, Data: session.ToolCall{ID: id, Name: "echo", Arguments: args}})
		require.NoError(t, err)
		return r
	}
	ask := &pluginpb.ValidateResponse{Veto: true, Ask: true}
	cases := []struct {
		name   string
		commit session.Record
		held   bool
		// kept: the answer still waits for the commit of the call.
		kept bool
	}{
		{"the proposed call", call(1, 2, "c1", `{"x":1}`), true, false},
		{"other arguments", call(1, 2, "c1", `{"x":2}`), false, false},
		{"another step", call(1, 3, "c1", `{"x":1}`), false, true},
		{"another call", call(1, 2, "c2", `{"x":1}`), false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var a answers
			a.put("s1", 1, 2, "c1", answer{data: call(1, 2, "c1", `{"x":1}`).Data(), resp: ask})
			_, ok := a.take("s2", tc.commit)
			assert.False(t, ok, "another session")
			ans, ok := a.take("s1", tc.commit)
			assert.Equal(t, tc.held, ok)
			if ok {
				assert.Same(t, ask, ans.resp)
			}
			_, ok = a.take("s1", call(1, 2, "c1", `{"x":1}`))
			assert.Equal(t, tc.kept, ok, "an answer is taken once")
		})
	}
}
