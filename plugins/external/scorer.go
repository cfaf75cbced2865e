package external

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
)

// ErrNotScorer is a plugin named as a scorer whose Description does not
// say it serves the Scorer service.
var ErrNotScorer = errors.New("external: the plugin does not serve scorers")

// Scorer is a running out-of-process scorer for `vigil eval`: the same
// process, handshake, lifeline and errors as a plugins.yaml entry, but no
// fiber, no events and no tools; its calls are Score. Package eval/score
// adapts it to its Scorer.
type Scorer struct {
	cn   *conn
	name string
}

// StartScorer starts cfg's plugin as a scorer: the process and its
// handshake, Describe (which must say scorer, else [ErrNotScorer]) and
// Configure with cfg.Config, each bounded by the start timeout. A
// failure leaves nothing running. Close the scorer when done.
func StartScorer(ctx context.Context, cfg *Config, log hclog.Logger) (_ *Scorer, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("external: scorer: %w", err)
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	raw, err := cfg.configJSON()
	if err != nil {
		return nil, fmt.Errorf("external: scorer: config: %w", err)
	}
	cn, err := start(cfg, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cn.close()
		}
	}()
	dctx, cancel := cn.startCtx(ctx)
	desc, err := cn.rpc.Describe(dctx, &pluginpb.DescribeRequest{})
	cancel()
	if err != nil {
		return nil, cn.startErr(ctx, "describe", err)
	}
	name := desc.GetName()
	if name == "" {
		name = filepath.Base(cn.path)
	}
	if !desc.GetScorer() {
		return nil, fmt.Errorf("%w: %s (%s)", ErrNotScorer, name, cn.path)
	}
	// No Host service: a scorer sees the pairs it is sent, nothing else.
	cctx, cancel := cn.startCtx(ctx)
	_, err = cn.rpc.Configure(cctx, &pluginpb.ConfigureRequest{Config: raw})
	cancel()
	if err != nil {
		return nil, cn.startErr(ctx, "configure", err)
	}
	cn.log.Debug("scorer ready", "name", name, "version", desc.GetVersion(), "pid", cn.pid())
	return &Scorer{cn: cn, name: name}, nil
}

// Name is the name the plugin describes itself by.
func (s *Scorer) Name() string { return s.name }

// Score sends the plugin one pair, bounded by the call timeout. The
// plugin's error, a crash ([ErrExited]), no answer in time ([ErrTimeout])
// or a score outside [0, 1] is an error: a scorer that could not score.
func (s *Scorer) Score(ctx context.Context, req *pluginpb.ScoreRequest) (*pluginpb.ScoreResponse, error) {
	cctx, cancel := s.cn.callCtx(ctx)
	defer cancel()
	resp, err := s.cn.scorer.Score(cctx, req)
	if err != nil {
		return nil, s.cn.callErr(ctx, "score", err)
	}
	if v := resp.GetScore(); math.IsNaN(v) || v < 0 || v > 1 {
		return nil, fmt.Errorf("external: score: %s answered a score of %v, outside [0, 1]", s.name, v)
	}
	return resp, nil
}

// Close disposes the plugin and stops its process.
func (s *Scorer) Close() error {
	s.cn.close()
	return nil
}
