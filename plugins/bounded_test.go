package plugins_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/internal/providerhttp"
	"github.com/vigil-run/vigil/plugins/internal/providertest"
	"github.com/vigil-run/vigil/plugins/provider/anthropic"
	"github.com/vigil-run/vigil/plugins/provider/openai"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A provider's response is bounded: a stream that stalls, or one that
// never ends, ends the step with a clear error naming the setting, logged
// in the turn's turn/end and in the host's log, and the connection is
// closed. Both official-SDK providers, against a real local server.
func TestAProvidersResponseIsBounded(t *testing.T) {
	const (
		idle     = 300 * time.Millisecond
		maxBytes = 64 << 10
	)
	providers := []struct {
		name   string
		held   string // a fixture that streams a few chunks and stops there
		repeat string // one more content event
		config func(cfg any, url string)
	}{
		{
			name:   "provider/openai",
			held:   "provider/openai/testdata/held.sse",
			repeat: `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764450084,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" and on"},"finish_reason":null}]}` + "\n\n",
			config: func(cfg any, url string) {
				c := cfg.(*openai.Config)
				c.BaseURL, c.Model = url+"/v1", "gpt-4o-mini"
				c.StreamIdleTimeout, c.MaxResponseBytes = idle, maxBytes
			},
		},
		{
			name:   "provider/anthropic",
			held:   "provider/anthropic/testdata/held.sse",
			repeat: "event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" and on"}}` + "\n\n",
			config: func(cfg any, url string) {
				c := cfg.(*anthropic.Config)
				c.BaseURL, c.APIKey, c.Model = url+"/", "sk-ant-test", "claude-sonnet-4-5"
				c.StreamIdleTimeout, c.MaxResponseBytes = idle, maxBytes
			},
		},
	}
	streams := []struct {
		name    string
		reply   func(held []byte, repeat string) providertest.Reply
		cause   error
		setting string
	}{
		{"a stream that stalls", func(held []byte, _ string) providertest.Reply {
			return providertest.Reply{Body: held, Hold: true}
		}, providerhttp.ErrStreamIdle, "stream_idle_timeout"},
		{"a stream that never ends", func(held []byte, repeat string) providertest.Reply {
			return providertest.Reply{Body: held, Repeat: []byte(repeat)}
		}, providerhttp.ErrResponseTooLarge, "max_response_bytes"},
	}
	for _, p := range providers {
		for _, s := range streams {
			t.Run(p.name+"/"+s.name, func(t *testing.T) {
				held, err := os.ReadFile(filepath.FromSlash(p.held))
				require.NoError(t, err)
				srv := providertest.NewServer(t, s.reply(held, p.repeat))
				logs := &syncBuffer{}
				root := bus.New(bus.WithLogger(hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})))
				defer root.Dispose()
				c := root.Context()
				apply(t, c, "invariants", nil)
				apply(t, c, "store/memory", nil)
				apply(t, c, p.name, func(cfg any) { p.config(cfg, srv.URL) })
				apply(t, c, "agent", nil)
				mgr, err := live.Sessions.Get(c)
				require.NoError(t, err)
				a, err := agentloop.AgentService.Get(c)
				require.NoError(t, err)
				sess, err := mgr.Create(context.Background())
				require.NoError(t, err)

				// Bounded in the test: without the limits the turn would
				// run until this deadline.
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				begun := time.Now()
				res, err := a.Run(ctx, sess, "think")
				took := time.Since(begun)
				require.ErrorIs(t, err, s.cause)
				assert.Contains(t, err.Error(), s.setting)
				var pe *agentloop.ProviderError
				require.ErrorAs(t, err, &pe)
				assert.False(t, pe.Retryable, "chunks were delivered")
				require.NotNil(t, res)
				assert.Equal(t, session.ReasonError, res.Reason)
				assert.Less(t, took, 20*time.Second)
				t.Logf("ended after %v", took)

				recs := sess.Records()
				last := recs[len(recs)-1]
				require.Equal(t, session.TypeTurnEnd, last.Type())
				end, err := session.DecodeData[session.TurnEnd](last)
				require.NoError(t, err)
				assert.Contains(t, end.Error, s.setting, "the log says why the step ended")
				for _, r := range recs {
					if r.Type() == session.TypeStepEnd {
						se, err := session.DecodeData[session.StepEnd](r)
						require.NoError(t, err)
						assert.Equal(t, session.FinishError, se.Finish)
					}
				}
				assert.Contains(t, logs.String(), s.setting, "the host's log says it too")
				// The server saw the client hang up.
				srv.WaitHandled(1, 10*time.Second)
				assert.True(t, strings.Contains(logs.String(), "response ended"))
			})
		}
	}
}
