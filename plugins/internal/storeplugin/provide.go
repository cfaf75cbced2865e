package storeplugin

import (
	"context"
	"io"
	"time"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// closeTimeout bounds how long disposal waits for sessions to flush.
const closeTimeout = 10 * time.Second

// Provide provides store (as live.StoreService) and a manager over it
// (as live.Sessions), owned by c's fiber: the body of every store
// plugin. The manager signs with the key signing names (see [Signer]);
// a signing setting is provided as live.SigningService. On dispose the
// manager's sessions are closed first, then the store, if it is an
// io.Closer.
func Provide(c *bus.Context, store session.Store, signing live.Signing, opts ...live.ManagerOption) (*live.Manager, error) {
	if cl, ok := store.(io.Closer); ok {
		if err := c.Effect(func() func() {
			return func() {
				if err := cl.Close(); err != nil {
					c.Logger().Error("closing store", "error", err)
				}
			}
		}); err != nil {
			_ = cl.Close()
			return nil, err
		}
	}
	signer, err := Signer(signing)
	if err != nil {
		return nil, err
	}
	if signer != nil {
		opts = append([]live.ManagerOption{live.WithSigner(signer)}, opts...)
	} else if signing.Require {
		c.Logger().Warn("signing.require is set but no signing key is: this process writes unsigned sessions", "set", "signing.key_file or "+SigningKeyFileEnv)
	}
	if signing != (live.Signing{}) {
		if _, err := live.SigningService.Provide(c, signing); err != nil {
			return nil, err
		}
	}
	mgr := live.NewManager(c, store, opts...)
	if err := c.Effect(func() func() {
		return func() {
			ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
			defer cancel()
			if err := mgr.Close(ctx); err != nil {
				c.Logger().Error("closing sessions", "error", err)
			}
		}
	}); err != nil {
		return nil, err
	}
	if _, err := live.StoreService.Provide(c, store); err != nil {
		return nil, err
	}
	if _, err := live.Sessions.Provide(c, mgr); err != nil {
		return nil, err
	}
	return mgr, nil
}
