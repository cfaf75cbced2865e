package session_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-run/vigil/session"
)

func TestBalancedRangeKeepsCallsWithResults(t *testing.T) {
	call := func(id string) session.ToolCall { return session.ToolCall{ID: id, Name: "f", Arguments: "{}"} }
	// seq: 0 user, 1 assistant(c1), 2 result c1, 3 assistant(c2,c3), 4 result c2,
	// 5 result c3, 6 turn/start (not on the surface), 7 user, 8 assistant(c4, unanswered)
	recs := records(t,
		user("q"), assistant("", call("c1")), result("c1", "r1"), assistant("", call("c2"), call("c3")),
		result("c2", "r2"), result("c3", "r3"), session.Event{Type: session.TypeTurnStart, Turn: 2}, user("q2"),
		assistant("", call("c4")),
	)
	tests := []struct {
		name       string
		start, end int64
		wantStart  int64
		wantEnd    int64
	}{
		{"already balanced", 0, 2, 0, 2},
		{"a call pulls in its result", 0, 1, 0, 2},
		{"a result pulls in its call", 2, 2, 1, 2},
		{"every result of a multi-call message", 3, 4, 3, 5},
		{"a result pulls in the call, which pulls in its other result", 5, 5, 3, 5},
		{"an off-surface bound snaps to the surface", 0, 6, 0, 5},
		{"an unanswered call ends the range before its message", 0, 8, 0, 7},
		{"nothing balanced is left", 8, 8, -1, -1},
		{"an empty range", 7, 6, -1, -1},
		{"a range past the end", 9, 12, -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, e := session.BalancedRange(recs, tt.start, tt.end)
			assert.Equal(t, [2]int64{tt.wantStart, tt.wantEnd}, [2]int64{s, e})
		})
	}
}

func TestBalancedRangeRespectsEarlierReplaces(t *testing.T) {
	call := session.ToolCall{ID: "c1", Name: "f", Arguments: "{}"}
	recs := records(t, user("a"), user("b"), replace(0, 1, "ab", 0, 1), assistant("", call), result("c1", "r"))
	s, e := session.BalancedRange(recs, 0, 3)
	assert.Equal(t, [2]int64{2, 4}, [2]int64{s, e}, "the range starts at the summary, seqs 0 and 1 are off the surface")
}
