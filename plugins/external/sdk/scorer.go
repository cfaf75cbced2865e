package sdk

import (
	"context"
	"math"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
	"github.com/vigil-run/vigil/session"
)

// ScoreTurn is what one side of a pair did in one turn, as `vigil eval`
// read it from the log (eval/score.Turn, over the wire).
type ScoreTurn struct {
	// N is the turn's number in its session.
	N int
	// Prompt is the turn's user message.
	Prompt string
	// Answer is the text of the turn's last assistant message.
	Answer string
	// Calls are the turn's tool calls, in log order.
	Calls []session.ToolCall
	// Reason is the turn/end's reason ("completed", "max-steps", …).
	Reason string
	// Usage is the tokens the turn's steps reported.
	Usage session.Usage
	// CostUSD is the turn's cost at the prices the eval knows, 0 when
	// none is known.
	CostUSD float64
	// Latency is the wall time from turn/start to turn/end.
	Latency time.Duration
}

// ScorePair is one recorded turn and the candidate composition's turn on
// the same prompt, after the same history (eval/score.Pair).
type ScorePair struct {
	// Session is the recorded session's id.
	Session string
	// Diverged is the first step at which the candidate's request differs
	// from the recorded one (0: it never did).
	Diverged  int
	Recorded  ScoreTurn
	Candidate ScoreTurn
}

// ScoreResult is a scorer's verdict on one pair (eval/score.Result).
type ScoreResult struct {
	// Score is in [0, 1]; 1 is as good as the recording or better.
	Score float64
	// Pass says whether the pair passes the scorer's own bar.
	Pass bool
	// Reason says why, in one sentence.
	Reason string
}

// scorerServer adapts Plugin.Score to the gRPC Scorer service.
type scorerServer[C any] struct {
	pluginpb.UnimplementedScorerServer
	srv *server[C]
}

func (s *scorerServer[C]) Score(ctx context.Context, req *pluginpb.ScoreRequest) (_ *pluginpb.ScoreResponse, err error) {
	s.srv.mu.Lock()
	configured := s.srv.configured
	s.srv.mu.Unlock()
	if !configured {
		return nil, status.Error(codes.FailedPrecondition, "score before configure")
	}
	defer recoverTo(&err)
	r, err := s.srv.p.Score(ctx, scorePair(req))
	if err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	if math.IsNaN(r.Score) || r.Score < 0 || r.Score > 1 {
		return nil, status.Errorf(codes.Internal, "score %v is outside [0, 1]", r.Score)
	}
	return &pluginpb.ScoreResponse{Score: r.Score, Pass: r.Pass, Reason: r.Reason}, nil
}

func scorePair(req *pluginpb.ScoreRequest) ScorePair {
	return ScorePair{
		Session:   req.GetSession(),
		Diverged:  int(req.GetDiverged()),
		Recorded:  scoreTurn(req.GetRecorded()),
		Candidate: scoreTurn(req.GetCandidate()),
	}
}

func scoreTurn(t *pluginpb.ScoreTurn) ScoreTurn {
	out := ScoreTurn{
		N:       int(t.GetN()),
		Prompt:  t.GetPrompt(),
		Answer:  t.GetAnswer(),
		Reason:  t.GetReason(),
		Usage:   session.Usage{Input: int(t.GetInputTokens()), Output: int(t.GetOutputTokens())},
		CostUSD: t.GetCostUsd(),
		Latency: time.Duration(t.GetLatencyNanos()),
	}
	for _, c := range t.GetCalls() {
		out.Calls = append(out.Calls, session.ToolCall{ID: c.GetId(), Name: c.GetName(), Arguments: c.GetArguments()})
	}
	return out
}

// ScorerRequest is the wire form of p, as the host sends it: for a
// scorer's own tests, and for hosts written in Go.
func ScorerRequest(p ScorePair) *pluginpb.ScoreRequest {
	return &pluginpb.ScoreRequest{
		Session:   p.Session,
		Diverged:  int64(p.Diverged),
		Recorded:  wireTurn(p.Recorded),
		Candidate: wireTurn(p.Candidate),
	}
}

func wireTurn(t ScoreTurn) *pluginpb.ScoreTurn {
	out := &pluginpb.ScoreTurn{
		N:            int64(t.N),
		Prompt:       t.Prompt,
		Answer:       t.Answer,
		Reason:       t.Reason,
		InputTokens:  int64(t.Usage.Input),
		OutputTokens: int64(t.Usage.Output),
		CostUsd:      t.CostUSD,
		LatencyNanos: int64(t.Latency),
	}
	for _, c := range t.Calls {
		out.Calls = append(out.Calls, &pluginpb.ToolCall{Id: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return out
}
