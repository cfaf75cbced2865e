package sdk_test

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
	"github.com/vigil-run/vigil/plugins/external/sdk"
	"github.com/vigil-run/vigil/session"
)

// fakeHost records what a plugin asks of the host.
type fakeHost struct {
	pluginpb.UnimplementedHostServer
	emitted []*pluginpb.EmitRequest
	logged  []*pluginpb.LogRequest
}

func (f *fakeHost) Emit(_ context.Context, r *pluginpb.EmitRequest) (*pluginpb.EmitResponse, error) {
	if r.GetName() == "refused" {
		return nil, status.Error(codes.Aborted, "a listener refused")
	}
	f.emitted = append(f.emitted, r)
	return &pluginpb.EmitResponse{}, nil
}

func (f *fakeHost) Messages(_ context.Context, r *pluginpb.MessagesRequest) (*pluginpb.MessagesResponse, error) {
	if r.GetSession() != "s1" {
		return nil, status.Error(codes.NotFound, "no such session")
	}
	return &pluginpb.MessagesResponse{Messages: []*pluginpb.Message{
		{Role: "user", Content: "hi"},
		{Role: "assistant", ToolCalls: []*pluginpb.ToolCall{{Id: "c1", Name: "convert", Arguments: "{}"}}},
		{Role: "tool", Content: "1 mi", ToolCallId: "c1", Name: "convert"},
	}}, nil
}

func (f *fakeHost) Log(_ context.Context, r *pluginpb.LogRequest) (*pluginpb.LogResponse, error) {
	f.logged = append(f.logged, r)
	return &pluginpb.LogResponse{}, nil
}

func TestHostCallsTheHostService(t *testing.T) {
	fake := &fakeHost{}
	conn, srv := plugin.TestGRPCConn(t, func(s *grpc.Server) { pluginpb.RegisterHostServer(s, fake) })
	defer srv.Stop()
	defer conn.Close()
	h := sdk.NewHost(pluginpb.NewHostClient(conn))
	ctx := context.Background()

	msgs, err := h.Messages(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, []session.Message{
		{Role: "user", Content: "hi"},
		{Role: "assistant", ToolCalls: []session.ToolCall{{ID: "c1", Name: "convert", Arguments: "{}"}}},
		{Role: "tool", Content: "1 mi", ToolCallID: "c1", Name: "convert"},
	}, msgs)
	_, err = h.Messages(ctx, "s2")
	assert.Equal(t, codes.NotFound, status.Code(err))

	require.NoError(t, h.Emit(ctx, "units/converted", "s1", map[string]int{"n": 1}))
	require.Len(t, fake.emitted, 1)
	assert.Equal(t, "units/converted", fake.emitted[0].GetName())
	assert.Equal(t, "s1", fake.emitted[0].GetSession())
	assert.JSONEq(t, `{"n":1}`, string(fake.emitted[0].GetData()))
	err = h.Emit(ctx, "refused", "", nil)
	assert.Equal(t, codes.Aborted, status.Code(err))
	require.Error(t, h.Emit(ctx, "bad", "", func() {}), "data that is not JSON")

	require.NoError(t, h.Log(ctx, hclog.Warn, "hello", "a", 1, "b"))
	require.Len(t, fake.logged, 1)
	assert.Equal(t, pluginpb.LogRequest_LEVEL_WARN, fake.logged[0].GetLevel())
	assert.Equal(t, map[string]string{"a": "1", "EXTRA_VALUE_AT_END": "b"}, fake.logged[0].GetFields())
}
