package plugins_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/internal/providertest"
	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// The output schema of the structured-output tests, as plugins.yaml
// writes it, and as the request header carries it (keys sorted).
const (
	cityYAML = `{ type: object, additionalProperties: false, required: [city, population], properties: { city: { type: string }, population: { type: integer, minimum: 0 } } }`
	cityJSON = `{"additionalProperties":false,"properties":{"city":{"type":"string"},"population":{"minimum":0,"type":"integer"}},"required":["city","population"],"type":"object"}`
)

// wire is one provider's wire format: its plugins.yaml entry for a
// server at url, a reply streaming text, and where its requests carry
// the output schema and the conversation.
type wire struct {
	name   string
	entry  func(url string) string
	reply  func(text string) providertest.Reply
	schema func(t *testing.T, body map[string]json.RawMessage) string
	// last is the text of the request's last user message.
	last func(t *testing.T, body map[string]json.RawMessage) string
}

var wires = []wire{
	{
		name: "openai",
		entry: func(url string) string {
			return fmt.Sprintf(`{ name: provider/openai, config: { base_url: %q, model: gpt-4o-mini } }`, url+"/v1")
		},
		reply: func(text string) providertest.Reply {
			q, _ := json.Marshal(text)
			return sse(`{"index":0,"delta":{"role":"assistant","content":`+string(q)+`},"finish_reason":null}`, `{"index":0,"delta":{},"finish_reason":"stop"}`)
		},
		schema: func(t *testing.T, body map[string]json.RawMessage) string {
			var rf struct {
				Type       string `json:"type"`
				JSONSchema struct {
					Name   string          `json:"name"`
					Strict bool            `json:"strict"`
					Schema json.RawMessage `json:"schema"`
				} `json:"json_schema"`
			}
			require.NoError(t, json.Unmarshal(body["response_format"], &rf))
			assert.Equal(t, "json_schema", rf.Type)
			assert.Equal(t, "output", rf.JSONSchema.Name)
			assert.True(t, rf.JSONSchema.Strict, "the schema keeps strict mode's rules")
			return string(rf.JSONSchema.Schema)
		},
		last: func(t *testing.T, body map[string]json.RawMessage) string {
			var msgs []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			}
			require.NoError(t, json.Unmarshal(body["messages"], &msgs))
			require.NotEmpty(t, msgs)
			m := msgs[len(msgs)-1]
			require.Equal(t, "user", m.Role)
			return m.Content
		},
	},
	{
		name: "anthropic",
		entry: func(url string) string {
			return fmt.Sprintf(`{ name: provider/anthropic, config: { base_url: %q, api_key: sk-test, model: claude-sonnet-4-5 } }`, url)
		},
		reply: func(text string) providertest.Reply {
			q, _ := json.Marshal(text)
			return messagesSSE(anthropicStart,
				`content_block_start:{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
				`content_block_delta:{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(q)+`}}`,
				`content_block_stop:{"type":"content_block_stop","index":0}`,
				`message_delta:{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}`,
				`message_stop:{"type":"message_stop"}`,
			)
		},
		schema: func(t *testing.T, body map[string]json.RawMessage) string {
			var oc struct {
				Format struct {
					Type   string          `json:"type"`
					Schema json.RawMessage `json:"schema"`
				} `json:"format"`
			}
			require.NoError(t, json.Unmarshal(body["output_config"], &oc))
			assert.Equal(t, "json_schema", oc.Format.Type)
			return string(oc.Format.Schema)
		},
		last: func(t *testing.T, body map[string]json.RawMessage) string {
			var msgs []struct {
				Role    string `json:"role"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			}
			require.NoError(t, json.Unmarshal(body["messages"], &msgs))
			require.NotEmpty(t, msgs)
			m := msgs[len(msgs)-1]
			require.Equal(t, "user", m.Role)
			require.NotEmpty(t, m.Content)
			return m.Content[len(m.Content)-1].Text
		},
	},
}

// TestStructuredOutputOverBothWires runs a turn of an agent with an
// output_schema, composed from plugins.yaml with a jsonl store and the
// strict invariants plugin, against a server speaking each provider's
// wire: every request asks for the schema natively; a valid answer
// completes; an invalid one is retried once with an output-validation
// user/message the retry's request carries, then completes or ends the
// turn with an error naming the problem. The log verifies, and a replay
// re-derives every request identically.
func TestStructuredOutputOverBothWires(t *testing.T) {
	valid := `{"city":"Paris","population":2102650}`
	cases := []struct {
		name     string
		answers  []string
		reason   string
		feedback string // in the retry's feedback ("": no retry)
		problem  string // in the turn's error
	}{
		{"valid at once", []string{valid}, session.ReasonCompleted, "", ""},
		{"valid after one retry", []string{`{"city":"Paris","population":"2.1 million"}`, valid}, session.ReasonCompleted, "- at '/population': got string, want integer", ""},
		{"invalid twice", []string{`Paris has 2.1 million people.`, `{"city":"Paris"}`}, session.ReasonError, "- the answer is not JSON: invalid character 'P'", "(after one retry): at '': missing property 'population'"},
	}
	for _, w := range wires {
		for _, tc := range cases {
			t.Run(w.name+"/"+tc.name, func(t *testing.T) {
				replies := make([]providertest.Reply, len(tc.answers))
				for i, a := range tc.answers {
					replies[i] = w.reply(a)
				}
				srv := providertest.NewServer(t, replies...)
				dir := t.TempDir()
				yml := fmt.Sprintf("plugins:\n  - { name: store/jsonl, config: { dir: %q } }\n  - %s\n  - name: agent\n    config:\n      system: Answer in JSON.\n      output_schema: %s\n  - { name: invariants, config: { mode: strict } }\n",
					filepath.Join(dir, "sessions"), w.entry(srv.URL), cityYAML)
				f, err := config.Parse("plugins.yaml", []byte(yml), func(string) (string, bool) { return "", false })
				require.NoError(t, err)
				root := bus.New()
				defer root.Dispose()
				c := root.Context()
				_, err = config.Apply(c, f)
				require.NoError(t, err)

				mgr, err := live.Sessions.Get(c)
				require.NoError(t, err)
				a, err := agentloop.AgentService.Get(c)
				require.NoError(t, err)
				sess, err := mgr.Create(context.Background())
				require.NoError(t, err)
				res, err := a.Run(context.Background(), sess, "Which city is the capital of France, and how many live there?")
				require.NotNil(t, res)
				assert.Equal(t, tc.reason, res.Reason)
				assert.Equal(t, tc.answers[len(tc.answers)-1], res.Content)
				if tc.reason == session.ReasonError {
					require.ErrorIs(t, err, agentloop.ErrOutputInvalid)
					var oe *agentloop.OutputError
					require.ErrorAs(t, err, &oe)
					assert.True(t, oe.Retried)
					assert.Contains(t, err.Error(), tc.problem)
				} else {
					require.NoError(t, err)
					var v map[string]any
					require.NoError(t, json.Unmarshal([]byte(res.Content), &v), "the answer is JSON")
				}

				// Every request asks for the schema natively.
				reqs := srv.Requests()
				require.Len(t, reqs, len(tc.answers))
				for i, r := range reqs {
					var body map[string]json.RawMessage
					require.NoError(t, json.Unmarshal(r.Body, &body))
					assert.JSONEq(t, cityJSON, w.schema(t, body), "request %d", i)
					if i > 0 {
						assert.Contains(t, w.last(t, body), tc.feedback, "the retry's request carries the feedback")
					}
				}

				// The log: the header holds the schema; the feedback is a
				// user/message of origin output-validation between the steps.
				recs := sess.Records()
				hdr, ok := session.DeriveHeader(recs)
				require.True(t, ok)
				assert.Equal(t, cityJSON, string(hdr.OutputSchema))
				var feedback []session.UserMessage
				for _, r := range recs {
					if r.Type() == session.TypeUserMessage {
						um, err := session.DecodeData[session.UserMessage](r)
						require.NoError(t, err)
						if um.Origin != "" {
							assert.Equal(t, session.OriginOutputValidation, um.Origin)
							assert.Equal(t, 0, r.Step(), "between steps")
							feedback = append(feedback, um)
						}
					}
				}
				if tc.feedback != "" {
					require.Len(t, feedback, 1, "one retry")
					assert.Contains(t, feedback[0].Content, tc.feedback)
				} else {
					assert.Empty(t, feedback)
				}
				end, err := session.DecodeData[session.TurnEnd](recs[len(recs)-1])
				require.NoError(t, err)
				assert.Equal(t, tc.reason, end.Reason)
				if tc.reason == session.ReasonError {
					assert.Contains(t, end.Error, "does not match the output schema "+tc.problem)
				}

				require.NoError(t, sess.Flush(context.Background()))
				rep, err := invariants.VerifyFile(filepath.Join(dir, "sessions", sess.ID()+".jsonl"))
				require.NoError(t, err)
				assert.Empty(t, rep.Violations)
				assert.Equal(t, len(recs), rep.Events)

				rr := rerun(t, recs)
				assert.True(t, rr.Identical(), "%+v %v", rr.Steps, rr.Errors)
				assert.Len(t, rr.Steps, len(tc.answers))
			})
		}
	}
}

// rerun replays a log on a fresh runtime under the strict invariants, as
// vigil replay does.
func rerun(t *testing.T, recs []session.Record) *replay.Rerun {
	t.Helper()
	root := bus.New()
	defer root.Dispose()
	c := root.Context()
	_, err := c.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict})
	require.NoError(t, err)
	rr, err := replay.Run(context.Background(), c, live.NewManager(c, memory.New()), recs)
	require.NoError(t, err)
	for _, e := range rr.Errors {
		assert.NotErrorIs(t, e, agentloop.ErrInvariant)
	}
	return rr
}

// TestOutputSchemaThatIsNotJSONSchemaIsRefusedAtLoad: plugins.yaml with
// an output_schema that does not compile is refused with the entry's
// position and what is wrong.
func TestOutputSchemaThatIsNotJSONSchemaIsRefusedAtLoad(t *testing.T) {
	cases := []struct {
		name, schema, want string
	}{
		{"an unknown type", `{ type: strin }`, "at '/type': value must be one of"},
		{"a negative minLength", `{ type: string, minLength: -1 }`, "/minLength"},
		{"a reference outside the schema", `{ $ref: "file:///etc/passwd" }`, "file:///etc/passwd"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			yml := "plugins:\n  - name: agent\n    config:\n      output_schema: " + tc.schema + "\n"
			_, err := config.Parse("plugins.yaml", []byte(yml), func(string) (string, bool) { return "", false })
			require.ErrorIs(t, err, config.ErrInvalid)
			msg := err.Error()
			assert.True(t, strings.HasPrefix(msg, "plugins.yaml:4:7: agent: output_schema"), msg)
			assert.Contains(t, msg, tc.want)
		})
	}
}
