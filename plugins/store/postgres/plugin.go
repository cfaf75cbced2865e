package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/internal/storeplugin"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	pg "github.com/vigil-run/vigil/session/pgstore"
)

// Name is the plugin's registered name, as plugins.yaml and vigil.Plugin
// spell it.
const Name = "store/postgres"

// Config is the plugin's config.
type Config struct {
	// DSN locates the database: a libpq URL
	// (postgres://user:password@host:5432/db?sslmode=require) or key=value
	// string. Use ${VAR} to keep the password out of the file.
	DSN string `yaml:"dsn" vigil:"required" doc:"Locates the database: a libpq URL (postgres://user:password@host:5432/db?sslmode=require) or key=value string. Use ${VAR} to keep the password out of the file."`
	// Schema keeps the tables in this PostgreSQL schema (created if
	// missing). Default: the first schema of the search_path.
	Schema string `yaml:"schema" doc:"Keeps the tables in this PostgreSQL schema (created if missing). Default: the first schema of the search_path."`
	// LeaseTTL is how long a turn lease lives without renewal: how long a
	// session stays busy after the process running its turn died. Default
	// 30s.
	LeaseTTL time.Duration `yaml:"lease_ttl" doc:"How long a turn lease lives without renewal: how long a session stays busy after the process running its turn died. Default 30s."`
	// MaxConns bounds the pooled connections. Default 8.
	MaxConns int `yaml:"max_conns" doc:"Bounds the pooled connections. Default 8."`
	// DurableAppends writes each event as it is appended, one synchronous
	// commit each, rather than a turn's events in batches at its
	// durability points.
	DurableAppends bool `yaml:"durable_appends" doc:"Writes each event as it is appended, one synchronous commit each, rather than a turn's events in batches at its durability points."`
	// Retention deletes the sessions older than max_age (by their last
	// record), run by vigil serve and vigil sessions prune.
	Retention session.Retention `yaml:"retention" doc:"Deletes the sessions older than max_age (by their last record), run by vigil serve and vigil sessions prune."`
	// Signing names the key that signs the sessions' checkpoints, and
	// whether every session must be signed.
	Signing live.Signing `yaml:"signing" doc:"The key that signs the sessions' checkpoints, and whether every session must be signed."`
}

// Validate checks the config.
func (c *Config) Validate() error {
	var errs []error
	if c.DSN == "" {
		errs = append(errs, errors.New("dsn must not be empty"))
	}
	if c.LeaseTTL < 0 {
		errs = append(errs, errors.New("lease_ttl must not be negative"))
	}
	if c.MaxConns < 0 {
		errs = append(errs, errors.New("max_conns must not be negative"))
	}
	errs = append(errs, c.Retention.Validate(), storeplugin.ValidateSigning(c.Signing))
	return errors.Join(errs...)
}

// openTimeout bounds connecting and migrating when the plugin is applied.
const openTimeout = 30 * time.Second

// Plugin opens the store and provides it and a manager over it.
// A Go program or test may apply it with bus.Context.Plugin.
var Plugin = bus.RegisterFunc(Name, "sessions in PostgreSQL, shared by many processes (one turn at a time per session)", func(c *bus.Context, cfg Config) error {
	opts := []pg.Option{pg.WithLogger(c.Logger())}
	if cfg.Schema != "" {
		opts = append(opts, pg.WithSchema(cfg.Schema))
	}
	if cfg.LeaseTTL > 0 {
		opts = append(opts, pg.WithLeaseTTL(cfg.LeaseTTL))
	}
	if cfg.MaxConns > 0 {
		opts = append(opts, pg.WithMaxConns(cfg.MaxConns))
	}
	if cfg.DurableAppends {
		opts = append(opts, pg.WithDurableAppends())
	}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	store, err := pg.Open(ctx, cfg.DSN, opts...)
	if err != nil {
		return err
	}
	if _, err = storeplugin.Provide(c, store, cfg.Signing); err != nil {
		return err
	}
	return storeplugin.ProvideRetention(c, cfg.Retention)
})
