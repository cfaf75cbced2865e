package vigil_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/provider/openai"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	jsonlstore "github.com/vigil-run/vigil/plugins/store/jsonl"
	_ "github.com/vigil-run/vigil/plugins/tools/calc" // tools/calc, by name
	fstools "github.com/vigil-run/vigil/plugins/tools/fs"
	"github.com/vigil-run/vigil/session"
)

func research(task string) scripted.ToolCall {
	return scripted.ToolCall{Name: "research", Arguments: map[string]any{"task": task}}
}

// delegating is a planner offered a researcher as a tool, over one
// scripted model (the calls are sequential, so the script's order is the
// calls' order), under strict invariants.
func delegating(researcher agentloop.Config, script ...scripted.Reply) vigil.Source {
	return delegatingOn(vigil.Plugin("store/memory", nil), researcher, script...)
}

// delegatingOn is delegating with the store entry store.
func delegatingOn(store config.Entry, researcher agentloop.Config, script ...scripted.Reply) vigil.Source {
	if researcher.AsTool == nil {
		researcher.AsTool = &agentloop.AsTool{Name: "research", Description: "Research a question."}
	}
	researcher.System = "You research."
	return vigil.Compose(
		store,
		vigil.Plugin("provider/scripted", scripted.Config{Script: script}),
		config.Entry{ID: "researcher", Name: "agent", Config: researcher},
		config.Entry{ID: "planner", Name: "agent", Config: agentloop.Config{System: "You plan.", Delegation: agentloop.Delegation{Tools: agentloop.Refs("research")}}},
		vigil.Plugin("invariants", nil),
	)
}

// results returns the tool results of a log.
func results(t *testing.T, log *session.Log) []session.ToolResult {
	t.Helper()
	var out []session.ToolResult
	for _, r := range log.Records {
		if r.Type() == session.TypeToolResult {
			var res session.ToolResult
			require.NoError(t, json.Unmarshal(r.Data(), &res))
			out = append(out, res)
		}
	}
	return out
}

func TestAFailedSubagentIsAToolErrorTheParentModelSees(t *testing.T) {
	rt := open(t, delegating(agentloop.Config{},
		scripted.Reply{ToolCalls: []scripted.ToolCall{research("why?")}},
		scripted.Reply{Error: &scripted.Failure{Status: 400, Message: "bad model"}},
		scripted.Reply{Text: "it failed"},
	))
	res, err := rt.Turn(context.Background(), vigil.TurnOptions{Prompt: "plan"})
	require.NoError(t, err)
	assert.Equal(t, "it failed", res.Content)
	log, err := rt.Session(context.Background(), res.Session)
	require.NoError(t, err)
	rs := results(t, log)
	require.Len(t, rs, 1)
	require.NotNil(t, rs[0].Error)
	assert.Equal(t, agentloop.CodeSubagentFailed, rs[0].Error.Code)
	assert.Contains(t, rs[0].Error.Message, "bad model")
	require.NotNil(t, rs[0].Child, "the failed child is named, so its log can be read")
	child, err := rt.Session(context.Background(), rs[0].Child.ID)
	require.NoError(t, err)
	assert.Equal(t, &session.Parent{ID: res.Session, Seq: 8, Call: rs[0].ID}, child.Info.Parent)
}

func TestASubagentCallWithoutATaskIsInvalidArguments(t *testing.T) {
	rt := open(t, delegating(agentloop.Config{},
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "research", Arguments: map[string]any{"topic": "x"}}}},
		scripted.Reply{Text: "ok"},
	))
	res, err := rt.Turn(context.Background(), vigil.TurnOptions{Prompt: "plan"})
	require.NoError(t, err)
	log, err := rt.Session(context.Background(), res.Session)
	require.NoError(t, err)
	rs := results(t, log)
	require.Len(t, rs, 1)
	require.NotNil(t, rs[0].Error)
	assert.Equal(t, agentloop.CodeInvalidArguments, rs[0].Error.Code)
	assert.Nil(t, rs[0].Child, "no child session was made")
}

func TestCustomParametersMakeTheArgumentsTheChildsMessage(t *testing.T) {
	rt := open(t, delegating(agentloop.Config{Delegation: agentloop.Delegation{AsTool: &agentloop.AsTool{
		Name: "research", Parameters: map[string]any{"type": "object", "properties": map[string]any{"topic": map[string]any{"type": "string"}}},
	}}},
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "research", Arguments: map[string]any{"topic": "tides"}}}},
		scripted.Reply{Text: "tides are lunar"},
		scripted.Reply{Text: "done"},
	))
	res, err := rt.Turn(context.Background(), vigil.TurnOptions{Prompt: "plan"})
	require.NoError(t, err)
	log, err := rt.Session(context.Background(), res.Session)
	require.NoError(t, err)
	rs := results(t, log)
	require.Len(t, rs, 1)
	assert.Nil(t, rs[0].Error)
	assert.Equal(t, "tides are lunar", rs[0].Content)
	child, err := rt.Session(context.Background(), rs[0].Child.ID)
	require.NoError(t, err)
	msgs, err := session.DeriveMessages(child.Records)
	require.NoError(t, err)
	require.NotEmpty(t, msgs)
	assert.Equal(t, `{"topic":"tides"}`, msgs[0].Content)
	assert.Equal(t, int64(len(child.Records)-1), rs[0].Child.Seq)
}

func TestTheAgentOptionNamesTheAgentThatRunsTheTurn(t *testing.T) {
	src := vigil.Compose(
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{{Text: "hi"}}, Repeat: true}),
		config.Entry{ID: "alice", Name: "agent", Config: agentloop.Config{System: "You are Alice."}},
		config.Entry{ID: "bob", Name: "agent", Config: agentloop.Config{System: "You are Bob."}},
	)
	rt := open(t, src)
	_, err := rt.Turn(context.Background(), vigil.TurnOptions{Prompt: "hello"})
	require.ErrorIs(t, err, vigil.ErrNoAgent)
	assert.Contains(t, err.Error(), "alice, bob")
	_, err = rt.Turn(context.Background(), vigil.TurnOptions{Prompt: "hello", Agent: "carol"})
	require.ErrorIs(t, err, vigil.ErrNoAgent)

	res, err := rt.Turn(context.Background(), vigil.TurnOptions{Prompt: "hello", Agent: "bob"})
	require.NoError(t, err)
	log, err := rt.Session(context.Background(), res.Session)
	require.NoError(t, err)
	h, ok := session.DeriveHeader(log.Records)
	require.True(t, ok)
	assert.Equal(t, "You are Bob.", h.System)
}

func TestToolSelectionByPatternAndSubagentsOnlyWhenNamed(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name  string
		tools []string
		want  []string
	}{
		{"absent: every tool but sub-agents", nil, []string{"list_dir", "read_file"}},
		{"a pattern", []string{"read_*"}, []string{"read_file"}},
		{"a sub-agent by name", []string{"research", "list_dir"}, []string{"list_dir", "research"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			planner := agentloop.Config{System: "You plan."}
			if tt.tools != nil {
				planner.Tools = agentloop.Refs(tt.tools...)
			}
			rt := open(t, vigil.Compose(
				vigil.Plugin("store/memory", nil),
				vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{{Text: "hi"}}}),
				vigil.Plugin("tools/fs", fstools.Config{Root: dir}),
				config.Entry{ID: "researcher", Name: "agent", Config: agentloop.Config{Delegation: agentloop.Delegation{Tools: agentloop.Refs(), AsTool: &agentloop.AsTool{Name: "research"}}}},
				config.Entry{ID: "planner", Name: "agent", Config: planner},
			))
			res, err := rt.Turn(context.Background(), vigil.TurnOptions{Prompt: "hello"})
			require.NoError(t, err)
			log, err := rt.Session(context.Background(), res.Session)
			require.NoError(t, err)
			h, ok := session.DeriveHeader(log.Records)
			require.True(t, ok)
			var names []string
			for _, s := range h.Tools {
				names = append(names, s.Name)
			}
			assert.Equal(t, tt.want, names)
		})
	}
}

func TestConfigErrorsOfAgentsNameTheCycleAndThePosition(t *testing.T) {
	for _, tt := range []struct {
		name, yaml, want string
		is               error
	}{
		{"a cycle", `plugins:
  - id: a
    name: agent
    config: { tools: [b_tool], as_tool: { name: a_tool } }
  - id: b
    name: agent
    config: { tools: [a_tool], as_tool: { name: b_tool } }
`, "plugins.yaml:2:5: a: agents delegate to each other in a cycle: a → b → a", agentloop.ErrAgentCycle},
		{"an agent offered to itself", `plugins:
  - id: a
    name: agent
    config: { tools: ["*"], as_tool: { name: a_tool } }
  - id: main
    name: agent
    config: { tools: [a_tool] }
`, "a → a", agentloop.ErrAgentCycle},
		{"an unknown tool", `plugins:
  - name: tools/fs
  - id: main
    name: agent
    config:
      tools:
        - list_dir
        - reed_*
`, "plugins.yaml:8:11: main: tool \"reed_*\" names nothing in the composition (tools: list_dir, read_file)", agentloop.ErrUnknownRef},
		{"an unknown provider entry", `plugins:
  - id: fast
    name: provider/scripted
  - name: agent
    config: { provider: slow }
`, "plugins.yaml:5:25: agent: provider \"slow\" names nothing in the composition (provider entries: fast)", agentloop.ErrUnknownRef},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("plugins.yaml", []byte(tt.yaml), func(string) (string, bool) { return "", false })
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.is)
			assert.Contains(t, err.Error(), tt.want)
			var ce *config.Error
			assert.True(t, errors.As(err, &ce))
		})
	}
}

func TestAComposedCycleIsRefusedToo(t *testing.T) {
	_, err := vigil.Open(context.Background(), vigil.Compose(
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/scripted", nil),
		config.Entry{ID: "a", Name: "agent", Config: agentloop.Config{Delegation: agentloop.Delegation{Tools: agentloop.Refs("a_tool"), AsTool: &agentloop.AsTool{Name: "a_tool"}}}},
	))
	require.ErrorIs(t, err, agentloop.ErrAgentCycle)
	assert.True(t, strings.HasPrefix(err.Error(), "vigil.Compose:"), err.Error())
}

// TestCancellingTheParentAbortsTheChild: the researcher's model call
// hangs (an OpenAI-compatible server that answers only the planner);
// cancelling the planner's turn aborts the child's turn too, and both
// logs end their turn aborted.
func TestCancellingTheParentAbortsTheChild(t *testing.T) {
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), "You research.") {
			arrived <- struct{}{}
			<-r.Context().Done() // the child's call hangs until cancelled
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"research","arguments":"{\"task\":\"Q\"}"}}]},"finish_reason":"tool_calls"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	rt := open(t, vigil.Compose(
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/openai", openai.Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "m"}),
		config.Entry{ID: "researcher", Name: "agent", Config: agentloop.Config{System: "You research.", Delegation: agentloop.Delegation{AsTool: &agentloop.AsTool{Name: "research"}}}},
		config.Entry{ID: "planner", Name: "agent", Config: agentloop.Config{System: "You plan.", Delegation: agentloop.Delegation{Tools: agentloop.Refs("research")}}},
		vigil.Plugin("invariants", nil),
	))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "plan"})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, session.ReasonAborted, res.Reason)
	log, err := rt.Session(context.Background(), res.Session)
	require.NoError(t, err)
	rs := results(t, log)
	require.Len(t, rs, 1)
	require.NotNil(t, rs[0].Error)
	assert.Equal(t, agentloop.CodeSubagentFailed, rs[0].Error.Code)
	require.NotNil(t, rs[0].Child)
	child, err := rt.Session(context.Background(), rs[0].Child.ID)
	require.NoError(t, err)
	last := child.Records[len(child.Records)-1]
	require.Equal(t, session.TypeTurnEnd, last.Type())
	assert.Contains(t, string(last.Data()), `"reason":"aborted"`)
}

// TestAnAgentUsesTheProviderEntryItNames: two providers mounted; the
// agent that names the second gets its replies, the other the first's.
func TestAnAgentUsesTheProviderEntryItNames(t *testing.T) {
	rt := open(t, vigil.Compose(
		vigil.Plugin("store/memory", nil),
		config.Entry{ID: "fast", Name: "provider/scripted", Config: scripted.Config{Script: []scripted.Reply{{Text: "from fast"}}, Repeat: true}},
		config.Entry{ID: "slow", Name: "provider/scripted", Config: scripted.Config{Script: []scripted.Reply{{Text: "from slow"}}, Repeat: true}},
		config.Entry{ID: "a", Name: "agent", Config: agentloop.Config{}},
		config.Entry{ID: "b", Name: "agent", Config: agentloop.Config{Delegation: agentloop.Delegation{Provider: agentloop.Ref{Name: "slow"}}}},
	))
	for agent, want := range map[string]string{"a": "from fast", "b": "from slow"} {
		res, err := rt.Turn(context.Background(), vigil.TurnOptions{Prompt: "hi", Agent: agent})
		require.NoError(t, err)
		assert.Equal(t, want, res.Content, agent)
	}
}

// TestAChildWaitingForAnApprovalSuspendsTheParent: a researcher's calc
// call asks; the planner's research call waits too, with an
// approval/request of its own that names the child, so both logs are
// suspended, neither repaired as a crash. Deciding the planner's call
// decides the child's and resumes the tree; deciding the child first
// (with its own agent) leaves the planner's call to take its answer.
func TestAChildWaitingForAnApprovalSuspendsTheParent(t *testing.T) {
	for _, tc := range []struct{ childFirst, deny bool }{{false, false}, {true, false}, {false, true}} {
		childFirst := tc.childFirst
		t.Run(fmt.Sprintf("child decided first: %v, denied: %v", tc.childFirst, tc.deny), func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "sessions")
			src := func(script ...scripted.Reply) vigil.Source {
				return vigil.Compose(
					vigil.Plugin("store/jsonl", &jsonlstore.Config{Dir: dir}),
					vigil.Plugin("provider/scripted", scripted.Config{Script: script}),
					vigil.Plugin("tools/calc", nil),
					vigil.Plugin("approvals", approvals.Config{Rules: []approvals.Rule{{Tool: "calc", Action: "ask", Reason: "arithmetic needs a yes"}}}),
					config.Entry{ID: "researcher", Name: "agent", Config: agentloop.Config{System: "You research.", Delegation: agentloop.Delegation{Tools: agentloop.Refs("calc"), AsTool: &agentloop.AsTool{Name: "research"}}}},
					config.Entry{ID: "planner", Name: "agent", Config: agentloop.Config{System: "You plan.", Delegation: agentloop.Delegation{Tools: agentloop.Refs("research")}}},
					vigil.Plugin("invariants", nil),
				)
			}
			a := open(t, src(
				scripted.Reply{ToolCalls: []scripted.ToolCall{research("add")}},
				scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expression": "1+1"}}}},
			))
			res, err := a.Turn(ctx, vigil.TurnOptions{Prompt: "plan"})
			require.ErrorIs(t, err, vigil.ErrSuspended)
			require.Len(t, res.Pending, 1)
			parent, call := res.Session, res.Pending[0]
			assert.Equal(t, "research", call.Call.Name)
			assert.Equal(t, "sub-agent research", call.Request.By)
			assert.Contains(t, call.Request.Reason, "arithmetic needs a yes")
			require.NoError(t, a.Close())

			// Another runtime (another process) finds both suspended.
			b := open(t, src(scripted.Reply{Text: "2"}, scripted.Reply{Text: "the answer is 2"}))
			var child string
			for _, in := range mustSessions(t, b) {
				if in.Parent != nil && in.Parent.ID == parent && in.Parent.Call == call.Call.ID {
					child = in.ID
				}
			}
			require.NotEmpty(t, child)
			assert.Equal(t, &session.Parent{ID: parent, Seq: call.CallSeq, Call: call.Call.ID}, mustLog(t, b, child).Info.Parent)
			cp, err := b.Pending(ctx, child)
			require.NoError(t, err)
			require.NotNil(t, cp, "the child is suspended, not crashed")
			pp, err := b.Pending(ctx, parent)
			require.NoError(t, err)
			require.NotNil(t, pp, "the parent is suspended, not crashed")
			assert.Contains(t, call.Request.Reason, child)
			for _, id := range []string{parent, child} {
				rep, err := invariants.VerifyFile(filepath.Join(dir, id+".jsonl"))
				require.NoError(t, err)
				assert.Empty(t, rep.Violations, "suspended %s verifies", id)
			}

			if childFirst {
				got, err := b.Decide(ctx, vigil.DecideOptions{Session: child, Call: cp.Calls[0].Call.ID, Decision: vigil.Decision{Allow: true, By: "ana"}})
				require.NoError(t, err)
				assert.Equal(t, "2", got.Content)
			}
			got, err := b.Decide(ctx, vigil.DecideOptions{Session: parent, Call: call.Call.ID, Decision: vigil.Decision{Allow: !tc.deny, By: "ana"}})
			require.NoError(t, err)
			assert.Equal(t, "the answer is 2", got.Content)

			plog, clog := mustLog(t, b, parent), mustLog(t, b, child)
			rs := results(t, plog)
			require.Len(t, rs, 1)
			if tc.deny {
				require.NotNil(t, rs[0].Error)
				assert.Equal(t, session.CodeApprovalDenied, rs[0].Error.Code)
				crs := results(t, clog)
				require.Len(t, crs, 1)
				require.NotNil(t, crs[0].Error, "the child's call was denied too")
				assert.Equal(t, session.CodeApprovalDenied, crs[0].Error.Code)
			} else {
				assert.Nil(t, rs[0].Error)
				assert.Equal(t, "2", rs[0].Content)
			}
			assert.Equal(t, &session.ChildRef{ID: child, Seq: int64(len(clog.Records) - 1), Root: session.RootOf(clog.Records)}, rs[0].Child)
			errs, checked := session.CheckDelegations(plog, map[string]*session.Log{child: clog})
			assert.Empty(t, errs)
			assert.Equal(t, 1, checked)
			// Every model call of the tree logged its usage, the suspended
			// steps' too (their step/end was written by another runtime).
			ends := 0
			for _, log := range []*session.Log{plog, clog} {
				for _, r := range log.Records {
					if r.Type() == session.TypeStepEnd {
						ends++
						var e session.StepEnd
						require.NoError(t, json.Unmarshal(r.Data(), &e))
						assert.NotNil(t, e.Usage, "%s seq %d: step/end without usage", log.Info.ID, r.Seq())
					}
				}
			}
			assert.Equal(t, 4, ends, "two steps each")
			for _, id := range []string{parent, child} {
				rep, err := invariants.VerifyFile(filepath.Join(dir, id+".jsonl"))
				require.NoError(t, err)
				assert.Empty(t, rep.Violations, "resumed %s verifies", id)
			}
			for _, r := range clog.Records {
				if r.Type() == session.TypeRequestHeader {
					assert.Contains(t, string(r.Data()), `"system":"You research."`)
				}
				if r.Type() == session.TypeApprovalDecision {
					assert.Contains(t, string(r.Data()), `"by":"ana"`)
				}
			}
		})
	}
}

func mustSessions(t *testing.T, rt *vigil.Runtime) []session.Info {
	t.Helper()
	infos, err := rt.Sessions(context.Background())
	require.NoError(t, err)
	return infos
}

func mustLog(t *testing.T, rt *vigil.Runtime, id string) *session.Log {
	t.Helper()
	log, err := rt.Session(context.Background(), id)
	require.NoError(t, err)
	return log
}
