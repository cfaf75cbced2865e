package sdk

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
	"github.com/vigil-run/vigil/session"
)

func TestScorePairRoundTripsOverTheWire(t *testing.T) {
	p := ScorePair{
		Session:  "s",
		Diverged: 2,
		Recorded: ScoreTurn{N: 3, Prompt: "q", Answer: "a", Reason: "completed",
			Calls: []session.ToolCall{{ID: "c1", Name: "ls", Arguments: `{"path":"."}`}},
			Usage: session.Usage{Input: 10, Output: 4}, CostUSD: 0.5, Latency: time.Second},
		Candidate: ScoreTurn{N: 3, Prompt: "q", Answer: "b", Reason: "max-steps", Latency: time.Millisecond},
	}
	assert.Equal(t, p, scorePair(ScorerRequest(p)))
}

func TestScorerServesOnlyAfterConfigure(t *testing.T) {
	calls := 0
	p := &Plugin[struct{}]{Name: "s", Score: func(_ context.Context, sp ScorePair) (ScoreResult, error) {
		calls++
		switch sp.Candidate.Answer {
		case "fail":
			return ScoreResult{}, errors.New("no")
		case "high":
			return ScoreResult{Score: 1.5}, nil
		case "panic":
			panic("bug")
		}
		return ScoreResult{Score: 0.5, Reason: "half"}, nil
	}}
	srv := newServer(p)
	d, err := srv.Describe(context.Background(), nil)
	require.NoError(t, err)
	assert.True(t, d.GetScorer())
	sc := &scorerServer[struct{}]{srv: srv}
	req := func(answer string) *pluginpb.ScoreRequest {
		return ScorerRequest(ScorePair{Candidate: ScoreTurn{Answer: answer}})
	}

	_, err = sc.Score(context.Background(), req("x"))
	assert.Equal(t, codes.FailedPrecondition, status.Code(err))
	assert.Zero(t, calls)

	_, err = srv.Configure(context.Background(), &pluginpb.ConfigureRequest{Config: []byte("null")})
	require.NoError(t, err)
	r, err := sc.Score(context.Background(), req("x"))
	require.NoError(t, err)
	assert.Equal(t, 0.5, r.GetScore())
	assert.Equal(t, "half", r.GetReason())
	for answer, code := range map[string]codes.Code{"fail": codes.Unknown, "high": codes.Internal, "panic": codes.Internal} {
		_, err = sc.Score(context.Background(), req(answer))
		assert.Equal(t, code, status.Code(err), answer)
	}

	d, err = newServer(&Plugin[struct{}]{Name: "t"}).Describe(context.Background(), nil)
	require.NoError(t, err)
	assert.False(t, d.GetScorer(), "a plugin without Score is no scorer")
}
