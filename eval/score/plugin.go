package score

import (
	"context"
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/vigil-run/vigil/plugins/external"
	"github.com/vigil-run/vigil/plugins/external/sdk"
)

// PluginConfig is the config of `plugin`: a custom scorer that runs as
// its own process over the plugin protocol (a main that hands an
// sdk.Plugin with a Score hook to sdk.Serve; see package
// plugins/external/sdk). The keys are a plugins.yaml external entry's.
type PluginConfig struct {
	// Path is the scorer's executable, relative to the suite's folder.
	Path string `json:"path"`
	// SHA256, when set, is the hex SHA-256 the executable must have.
	SHA256 string `json:"sha256,omitempty"`
	// Args are the process's arguments after the path.
	Args []string `json:"args,omitempty"`
	// Env is the environment allow-list: "NAME" passes the eval's value,
	// "NAME=value" sets one; nothing else reaches the process.
	Env []string `json:"env,omitempty"`
	// Config is the scorer's own config, sent as JSON to its Configure.
	Config json.RawMessage `json:"config,omitempty"`
	// Timeout bounds each Score call (a Go duration; default 10s);
	// StartTimeout the start.
	Timeout      string `json:"timeout,omitempty"`
	StartTimeout string `json:"start_timeout,omitempty"`
}

// external returns the plugins/external config of c, paths relative to
// dir.
func (c *PluginConfig) external(dir string) (*external.Config, error) {
	if c.Path == "" {
		return nil, keyError("path", "required")
	}
	cfg := &external.Config{Path: c.Path, SHA256: c.SHA256, Args: c.Args, Env: c.Env}
	if !filepath.IsAbs(cfg.Path) {
		cfg.Path = filepath.Join(dir, cfg.Path)
	}
	var err error
	if cfg.Timeout, err = positiveDuration("timeout", c.Timeout); err != nil {
		return nil, err
	}
	if cfg.StartTimeout, err = positiveDuration("start_timeout", c.StartTimeout); err != nil {
		return nil, err
	}
	if len(c.Config) > 0 {
		if err := json.Unmarshal(c.Config, &cfg.Config); err != nil {
			return nil, &ConfigError{Key: "config", Err: err}
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, &ConfigError{Err: err}
	}
	return cfg, nil
}

// positiveDuration parses the duration s of key; "" is 0 (the default).
func positiveDuration(key, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return 0, keyError(key, "%q is not a positive duration (\"10s\")", s)
	}
	return v, nil
}

// pluginScorer is a running out-of-process scorer.
type pluginScorer struct {
	proc *external.Scorer
}

func newPlugin(env Env, raw json.RawMessage) (Scorer, error) {
	var c PluginConfig
	if err := DecodeConfig(raw, &c); err != nil {
		return nil, err
	}
	cfg, err := c.external(env.Dir)
	if err != nil {
		return nil, err
	}
	// The plugin refusing its config, or not starting, is the error.
	proc, err := external.StartScorer(context.Background(), cfg, env.Log)
	if err != nil {
		return nil, err
	}
	return &pluginScorer{proc: proc}, nil
}

// Score sends the pair to the process. Turn and sdk.ScoreTurn are the
// same struct, field for field: the conversion keeps them so.
func (s *pluginScorer) Score(ctx context.Context, p Pair) (Result, error) {
	req := sdk.ScorerRequest(sdk.ScorePair{
		Session:   p.Session,
		Diverged:  p.Diverged,
		Recorded:  sdk.ScoreTurn(p.Recorded),
		Candidate: sdk.ScoreTurn(p.Candidate),
	})
	resp, err := s.proc.Score(ctx, req)
	if err != nil {
		return Result{}, err
	}
	return Result{Score: resp.GetScore(), Pass: resp.GetPass(), Reason: resp.GetReason()}, nil
}

// Close stops the process.
func (s *pluginScorer) Close() error { return s.proc.Close() }
