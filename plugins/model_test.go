package plugins_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/budget"
	"github.com/vigil-run/vigil/plugins/compaction"
	"github.com/vigil-run/vigil/plugins/internal/providertest"
	"github.com/vigil-run/vigil/plugins/provider/anthropic"
	"github.com/vigil-run/vigil/plugins/provider/openai"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// openaiText is a chat-completions stream answering text, with usage.
func openaiText(text string) providertest.Reply {
	r := sse(
		`{"index":0,"delta":{"role":"assistant","content":`+fmt.Sprintf("%q", text)+`},"finish_reason":null}`,
		`{"index":0,"delta":{},"finish_reason":"stop"}`,
	)
	usage := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764450084,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":40,"completion_tokens":6,"total_tokens":46}}` + "\n\n"
	r.Body = append(r.Body[:len(r.Body)-len("data: [DONE]\n\n")], usage+"data: [DONE]\n\n"...)
	return r
}

// anthropicText is a Messages stream answering text, with usage.
func anthropicText(text string) providertest.Reply {
	return messagesSSE(anthropicStart,
		`content_block_start:{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`content_block_delta:{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+fmt.Sprintf("%q", text)+`}}`,
		`content_block_stop:{"type":"content_block_stop","index":0}`,
		`message_delta:{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":6}}`,
		`message_stop:{"type":"message_stop"}`,
	)
}

// TestTheLoggedHeaderNamesTheModelOnTheWire: with the model set on the
// provider only (as the README's examples do) and not on the agent, every
// request the official SDKs put on the wire — each step's and a
// compaction's one-shot — names the model its logged header names; a
// budget with a cost limit prices it (and refuses nothing), and counts
// the one-shot's usage; the log verifies, one-shot included.
func TestTheLoggedHeaderNamesTheModelOnTheWire(t *testing.T) {
	for _, tc := range []struct {
		provider, model string
		reply           func(string) providertest.Reply
		set             func(cfg any, url, model string)
	}{
		{"provider/openai", "gpt-4o-mini", openaiText, func(cfg any, url, model string) {
			oc := cfg.(*openai.Config)
			oc.BaseURL, oc.Model = url+"/v1", model
		}},
		{"provider/anthropic", "claude-sonnet-4-5", anthropicText, func(cfg any, url, model string) {
			ac := cfg.(*anthropic.Config)
			ac.BaseURL, ac.APIKey, ac.Model = url+"/", "sk-ant-test", model
		}},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			srv := providertest.NewServer(t, tc.reply("one"), tc.reply("two"), tc.reply("a summary"), tc.reply("three"))
			root := bus.New()
			defer root.Dispose()
			c := root.Context()
			apply(t, c, "invariants", nil)
			apply(t, c, "store/memory", nil)
			apply(t, c, tc.provider, func(cfg any) { tc.set(cfg, srv.URL, tc.model) })
			apply(t, c, "budget", func(cfg any) {
				bc := cfg.(*budget.Config)
				bc.Session.Cost = 1
				bc.Prices = map[string]budget.Price{tc.model: {Input: 1, Output: 2}}
			})
			apply(t, c, "compaction", func(cfg any) { *cfg.(*compaction.Config) = compaction.Config{MaxMessages: 2, Keep: 1} })
			apply(t, c, "agent", func(cfg any) { cfg.(*agentloop.Config).System = "You are terse." })

			mgr, err := live.Sessions.Get(c)
			require.NoError(t, err)
			a, err := agentloop.AgentService.Get(c)
			require.NoError(t, err)
			sess, err := mgr.Create(context.Background())
			require.NoError(t, err)
			for _, p := range []string{"1", "2", "3"} {
				res, err := a.Run(context.Background(), sess, p)
				require.NoError(t, err, "the budget prices the provider's model")
				assert.Equal(t, session.ReasonCompleted, res.Reason)
			}

			// The model of each request's logged header, in log order.
			recs := sess.Records()
			var logged []string
			hdr := ""
			for _, r := range recs {
				switch r.Type() {
				case session.TypeRequestHeader:
					hdr = decodeData[session.RequestHeader](t, r).Header.Model
				case session.TypeRequestDigest:
					logged = append(logged, hdr)
				case session.TypeRequestOneshot:
					o := decodeData[session.Oneshot](t, r)
					require.NotNil(t, o.Header)
					logged = append(logged, o.Header.Model)
				}
			}
			reqs := srv.Requests()
			require.Len(t, reqs, 4, "three steps and a compaction")
			require.Len(t, logged, 4)
			for i, r := range reqs {
				var body struct {
					Model string `json:"model"`
				}
				require.NoError(t, json.Unmarshal(r.Body, &body))
				assert.Equal(t, tc.model, body.Model, "request %d on the wire", i)
				assert.Equal(t, body.Model, logged[i], "request %d: the logged header names the model on the wire", i)
			}

			acc := budget.Tally(recs, map[string]budget.Price{tc.model: {Input: 1, Output: 2}})
			require.NotNil(t, acc.Session.Cost)
			assert.Positive(t, acc.OneShots.Tokens(), "the compaction's usage is logged and counted")
			assert.Equal(t, acc.Session.Tokens(), acc.OneShots.Tokens()+acc.Turns[0].Tokens()+acc.Turns[1].Tokens()+acc.Turns[2].Tokens())

			data := session.AppendHeaderLine(nil, session.Info{ID: sess.ID(), Created: recs[0].Time()})
			for _, r := range recs {
				data = r.AppendLine(data)
			}
			rep, err := invariants.Verify(bytes.NewReader(data))
			require.NoError(t, err)
			assert.Empty(t, rep.Violations)
			assert.Empty(t, rep.OneshotsUnderived)
		})
	}
}

func decodeData[T any](t *testing.T, r session.Record) T {
	t.Helper()
	v, err := session.DecodeData[T](r)
	require.NoError(t, err)
	return v
}
