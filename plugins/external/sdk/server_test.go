package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
	"github.com/vigil-run/vigil/session"
)

var ctx = context.Background()

func noop(context.Context, *Event) error { return nil }

func TestDescribeSubscribesForTheHooksThatAreSet(t *testing.T) {
	cases := []struct {
		name string
		p    Plugin[struct{}]
		want []*pluginpb.Subscription
	}{
		{"no hooks", Plugin[struct{}]{Name: "p"}, nil},
		{"observer", Plugin[struct{}]{Name: "p", OnEvent: noop, Types: []string{"tool/call"}},
			[]*pluginpb.Subscription{{Event: "session/event", Types: []string{"tool/call"}, Observe: true}}},
		{"validator", Plugin[struct{}]{Name: "p", Validate: noop},
			[]*pluginpb.Subscription{{Event: "session/event", Veto: true}}},
		{"both and sessions", Plugin[struct{}]{Name: "p", OnEvent: noop, Validate: noop, OnSession: func(context.Context, string) error { return nil }},
			[]*pluginpb.Subscription{{Event: "session/event", Observe: true, Veto: true}, {Event: "session/created", Observe: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := newServer(&tc.p).Describe(ctx, &pluginpb.DescribeRequest{})
			require.NoError(t, err)
			assert.Equal(t, "p", d.GetName())
			require.Len(t, d.GetSubscriptions(), len(tc.want))
			for i, w := range tc.want {
				got := d.GetSubscriptions()[i]
				assert.Equal(t, w.GetEvent(), got.GetEvent())
				assert.Equal(t, w.GetTypes(), got.GetTypes())
				assert.Equal(t, w.GetObserve(), got.GetObserve())
				assert.Equal(t, w.GetVeto(), got.GetVeto())
			}
		})
	}
}

type testConfig struct {
	Units string `json:"units"`
	Max   int    `json:"max"`
}

func TestConfigureDecodesTheConfigStrictly(t *testing.T) {
	var got testConfig
	p := &Plugin[testConfig]{Name: "p", Configure: func(_ context.Context, _ *Host, c testConfig) error {
		if c.Max < 0 {
			return errors.New("max must not be negative")
		}
		got = c
		return nil
	}}
	cases := []struct {
		config string
		code   codes.Code
		msg    string
	}{
		{`{"units":"metric","max":3}`, codes.OK, ""},
		{`null`, codes.OK, ""},
		{``, codes.OK, ""},
		{`{"unit":"metric"}`, codes.InvalidArgument, `unknown field "unit"`},
		{`{"max":"3"}`, codes.InvalidArgument, "cannot unmarshal"},
		{`{"max":-1}`, codes.InvalidArgument, "max must not be negative"},
		{`{} {}`, codes.InvalidArgument, "trailing data"},
	}
	for _, tc := range cases {
		t.Run(tc.config, func(t *testing.T) {
			got = testConfig{}
			_, err := newServer(p).Configure(ctx, &pluginpb.ConfigureRequest{Config: []byte(tc.config)})
			assert.Equal(t, tc.code, status.Code(err), "%v", err)
			if tc.msg != "" {
				assert.Contains(t, status.Convert(err).Message(), tc.msg)
			}
		})
	}
	s := newServer(p)
	_, err := s.Configure(ctx, &pluginpb.ConfigureRequest{Config: []byte(`{"units":"imperial"}`)})
	require.NoError(t, err)
	assert.Equal(t, testConfig{Units: "imperial"}, got)
	_, err = s.Configure(ctx, &pluginpb.ConfigureRequest{})
	assert.Equal(t, codes.FailedPrecondition, status.Code(err), "configured twice")
}

func TestValidateAnswers(t *testing.T) {
	cases := []struct {
		name     string
		validate func(context.Context, *Event) error
		want     *pluginpb.ValidateResponse
		code     codes.Code
	}{
		{"allow", noop, &pluginpb.ValidateResponse{}, codes.OK},
		{"veto", func(context.Context, *Event) error { return Veto("POLICY", "no") }, &pluginpb.ValidateResponse{Veto: true, Code: "POLICY", Reason: "no"}, codes.OK},
		{"wrapped veto", func(context.Context, *Event) error { return fmt.Errorf("rule 3: %w", Veto("RULE", "three")) }, &pluginpb.ValidateResponse{Veto: true, Code: "RULE", Reason: "three"}, codes.OK},
		{"any error vetoes", func(context.Context, *Event) error { return errors.New("cannot decide") }, &pluginpb.ValidateResponse{Veto: true, Code: CodeVeto, Reason: "cannot decide"}, codes.OK},
		{"ask, a veto for hosts that predate it", func(context.Context, *Event) error { return fmt.Errorf("rule 4: %w", Ask("a person decides")) }, &pluginpb.ValidateResponse{Veto: true, Ask: true, Code: CodeAsk, Reason: "a person decides"}, codes.OK},
		{"panic", func(context.Context, *Event) error { panic("bug") }, nil, codes.Internal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(&Plugin[struct{}]{Name: "p", Validate: tc.validate})
			resp, err := s.Validate(ctx, &pluginpb.Event{Name: "session/event", Type: "user/message"})
			assert.Equal(t, tc.code, status.Code(err))
			if tc.want != nil {
				assert.Equal(t, tc.want.GetVeto(), resp.GetVeto())
				assert.Equal(t, tc.want.GetAsk(), resp.GetAsk())
				assert.Equal(t, tc.want.GetCode(), resp.GetCode())
				assert.Equal(t, tc.want.GetReason(), resp.GetReason())
			}
		})
	}
}

func TestOnEventDispatchesByName(t *testing.T) {
	var got []string
	s := newServer(&Plugin[struct{}]{
		Name:    "p",
		OnEvent: func(_ context.Context, ev *Event) error { got = append(got, ev.Type); return nil },
		OnSession: func(_ context.Context, id string) error {
			got = append(got, "created "+id)
			return errors.New("observer failed")
		},
	})
	_, err := s.OnEvent(ctx, &pluginpb.Event{Name: "session/event", Session: "s", Seq: 1, Type: "tool/call"})
	require.NoError(t, err)
	_, err = s.OnEvent(ctx, &pluginpb.Event{Name: "session/created", Session: "s"})
	assert.Equal(t, codes.Unknown, status.Code(err))
	_, err = s.OnEvent(ctx, &pluginpb.Event{Name: "agent/status"})
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Equal(t, []string{"tool/call", "created s"}, got)
}

func TestCallToolAnswers(t *testing.T) {
	type addArgs struct {
		A, B int
	}
	s := newServer(&Plugin[struct{}]{Name: "p", Tools: []Tool{
		NewTool("add", "adds", nil, func(_ context.Context, a addArgs) (string, error) { return fmt.Sprint(a.A + a.B), nil }),
		{Name: "coded", Run: func(context.Context, json.RawMessage) (string, error) {
			return "", &ToolError{Code: "QUOTA", Message: "no more"}
		}},
		{Name: "failing", Run: func(context.Context, json.RawMessage) (string, error) { return "", errors.New("boom") }},
		{Name: "panicking", Run: func(context.Context, json.RawMessage) (string, error) { panic("bug") }},
	}})
	cases := []struct {
		tool, args string
		content    string
		code       string
	}{
		{"add", `{"A":2,"B":3}`, "5", ""},
		{"add", `{"A":2,"C":3}`, "", CodeInvalidArguments},
		{"coded", `{}`, "", "QUOTA"},
		{"failing", `{}`, "", CodeToolFailed},
		{"panicking", `{}`, "", CodeToolPanic},
	}
	for _, tc := range cases {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			resp, err := s.CallTool(ctx, &pluginpb.CallToolRequest{Name: tc.tool, Arguments: []byte(tc.args)})
			require.NoError(t, err)
			assert.Equal(t, tc.content, resp.GetContent())
			assert.Equal(t, tc.code, resp.GetError().GetCode())
		})
	}
	_, err := s.CallTool(ctx, &pluginpb.CallToolRequest{Name: "nope"})
	assert.Equal(t, codes.NotFound, status.Code(err))

	list, err := s.ListTools(ctx, &pluginpb.ListToolsRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetTools(), 4)
	assert.Equal(t, "add", list.GetTools()[0].GetName())
}

func TestCheckRefusesPluginsThatCannotBeServed(t *testing.T) {
	run := func(context.Context, json.RawMessage) (string, error) { return "", nil }
	cases := []struct {
		name string
		p    Plugin[struct{}]
		msg  string
	}{
		{"no name", Plugin[struct{}]{}, "Name is empty"},
		{"duplicate tools", Plugin[struct{}]{Name: "p", Tools: []Tool{{Name: "t", Run: run}, {Name: "t", Run: run}}}, "same name"},
		{"tool without run", Plugin[struct{}]{Name: "p", Tools: []Tool{{Name: "t"}}}, `tool "t" needs a name and Run`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, newServer(&tc.p).check(), tc.msg)
		})
	}
	require.NoError(t, newServer(&Plugin[struct{}]{Name: "p", Tools: []Tool{{Name: "t", Run: run}}}).check())
}

func TestDisposeRunsOnce(t *testing.T) {
	n := 0
	s := newServer(&Plugin[struct{}]{Name: "p", Dispose: func(context.Context) error { n++; return nil }})
	_, err := s.Dispose(ctx, &pluginpb.DisposeRequest{})
	require.NoError(t, err)
	require.NoError(t, s.dispose(ctx))
	assert.Equal(t, 1, n)
}

func TestEventDecodesItsRecord(t *testing.T) {
	r, err := session.NewRecord(3, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), session.Event{
		Type: session.TypeToolCall, Turn: 1, Step: 1, Data: session.ToolCall{ID: "c1", Name: "convert", Arguments: `{"value":1}`},
	})
	require.NoError(t, err)
	ev := &Event{Session: "s", Seq: 3, Type: session.TypeToolCall, Line: r.Bytes()}
	call, err := Data[session.ToolCall](ev)
	require.NoError(t, err)
	assert.Equal(t, session.ToolCall{ID: "c1", Name: "convert", Arguments: `{"value":1}`}, call)
	rec, err := ev.Record()
	require.NoError(t, err)
	assert.Equal(t, r.Bytes(), rec.Bytes())

	_, err = (&Event{Line: []byte("not json")}).Record()
	require.Error(t, err)
	_, err = Data[session.ToolCall](&Event{Line: []byte("not json")})
	require.Error(t, err)
}
