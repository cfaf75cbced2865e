package storeplugin

import (
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// ProvideRetention provides a store plugin's retention config as
// live.RetentionService, when it has one (a positive max_age).
func ProvideRetention(c *bus.Context, r session.Retention) error {
	if r.MaxAge <= 0 {
		return nil
	}
	_, err := live.RetentionService.Provide(c, r)
	return err
}
