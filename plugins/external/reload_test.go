//go:build unix

package external_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/plugins/external"
	"github.com/vigil-run/vigil/session"
)

// secretPolicy is a plugins.yaml whose entry "secret-policy" runs the test
// plugin refusing user messages that mention secret.txt; timeout differs
// per reload, so that each one applies the entry again.
func secretPolicy(t *testing.T, timeout int, extra ...string) *config.File {
	t.Helper()
	yaml := fmt.Sprintf(`plugins:
  - id: secret-policy
    name: external
    config:
      path: %s
      timeout: %ds
      config: { veto: "secret\\.txt"%s }
`, bins["testplugin"], timeout, strings.Join(extra, ""))
	f, err := config.Parse("plugins.yaml", []byte(yaml), os.LookupEnv)
	require.NoError(t, err)
	return f
}

// A policy's veto holds at every moment of a reload: while the entry's
// process stops, while the next one starts and once it is ready, a call it
// would refuse is refused, by it or for want of it; never let through.
func TestAPolicyRefusesThroughEveryReload(t *testing.T) {
	const reloads = 25
	h := newHost(t)
	comp, err := config.Apply(h.c, secretPolicy(t, 10))
	require.NoError(t, err)
	t.Cleanup(func() { _ = comp.Dispose() })

	var tried, passed, vetoed, unavailable atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			sess := h.session()
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
				_, err := sess.Append(context.Background(), session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "read_file secret.txt"}})
				tried.Add(1)
				var veto *external.VetoError
				var down *external.UnavailableError
				switch {
				case err == nil:
					passed.Add(1)
					// A session holds one message outside a turn.
					sess = h.session()
				case errors.As(err, &veto):
					vetoed.Add(1)
				case errors.As(err, &down):
					unavailable.Add(1)
					assert.Equal(t, "secret-policy", down.Entry)
					assert.Empty(t, down.Exit, "no process exited on its own")
				default:
					assert.NoError(t, err)
				}
			}
		})
	}
	for i := range reloads {
		ch, err := comp.Reload(secretPolicy(t, 11+i%2))
		require.NoError(t, err)
		require.Equal(t, []string{"secret-policy"}, ch.Updated)
		// A moment ready, as between two edits.
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d reloads: %d calls, %d vetoed by the plugin, %d refused while it was not ready, %d let through", reloads, tried.Load(), vetoed.Load(), unavailable.Load(), passed.Load())
	assert.Zero(t, passed.Load(), "a vetoed call was let through")
	assert.NotZero(t, vetoed.Load())
	assert.NotZero(t, unavailable.Load(), "the calls raced no reload")
}

// A reload that fails leaves the entry refusing what it validated, and says
// why; the next good one lifts it.
func TestAFailedReloadKeepsRefusing(t *testing.T) {
	h := newHost(t)
	comp, err := config.Apply(h.c, secretPolicy(t, 10))
	require.NoError(t, err)
	t.Cleanup(func() { _ = comp.Dispose() })
	sess := h.session()
	secret := session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "read_file secret.txt"}}

	_, err = comp.Reload(secretPolicy(t, 10, ", fail_configure: true"))
	require.ErrorContains(t, err, "configure refused")
	_, err = sess.Append(context.Background(), secret)
	var down *external.UnavailableError
	require.ErrorAs(t, err, &down)
	assert.Equal(t, "secret-policy", down.Entry)
	assert.Empty(t, down.Exit)
	require.ErrorContains(t, down.Start, "configure refused")
	assert.Contains(t, err.Error(), `entry "secret-policy" (plugin testplugin) is being applied again; applying it again failed: `)
	assert.Equal(t, 0, sess.Len())

	_, err = comp.Reload(secretPolicy(t, 11))
	require.NoError(t, err)
	_, err = sess.Append(context.Background(), secret)
	var veto *external.VetoError
	require.ErrorAs(t, err, &veto, "the plugin is consulted again")
	_, err = sess.Append(context.Background(), session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "hello"}})
	require.NoError(t, err)
}

// A plugin's reason is quoted bounded: a veto whose reason is megabytes
// (a plugin that echoes what it refused) does not put them in the error.
func TestAPluginsReasonIsQuotedBounded(t *testing.T) {
	h := newHost(t)
	h.mustLoad(&external.Config{Path: bins["testplugin"], Config: map[string]any{"veto": "secret", "long_reason": 10 << 20}})
	_, err := h.session().Append(context.Background(), session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "secret"}})
	var veto *external.VetoError
	require.ErrorAs(t, err, &veto)
	assert.Less(t, len(veto.Reason), 2<<10)
	assert.Contains(t, veto.Reason, "the message matches secret")
	assert.Contains(t, veto.Reason, "…(+")
	assert.Less(t, len(err.Error()), 4<<10)
}
