package external

import (
	"context"
	"errors"
	"sort"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vigil-run/vigil/bus"
	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
	"github.com/vigil-run/vigil/session/live"
)

// hostService is the Host service one plugin calls back through the
// broker.
type hostService struct {
	pluginpb.UnimplementedHostServer
	c    *bus.Context
	name string
	log  hclog.Logger
}

func (h *hostService) Emit(ctx context.Context, req *pluginpb.EmitRequest) (*pluginpb.EmitResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "emit: name is required")
	}
	data := req.GetData()
	if len(data) == 0 {
		data = []byte("null")
	}
	err := Emitted.Emit(ctx, h.c, &Emission{Plugin: h.name, Name: req.GetName(), Session: req.GetSession(), Data: data})
	if err != nil {
		return nil, status.Error(codes.Aborted, err.Error())
	}
	return &pluginpb.EmitResponse{}, nil
}

func (h *hostService) Messages(_ context.Context, req *pluginpb.MessagesRequest) (*pluginpb.MessagesResponse, error) {
	mgr, err := live.Sessions.Get(h.c)
	if err != nil {
		if errors.Is(err, bus.ErrServiceMissing) {
			return nil, status.Error(codes.Unavailable, "no session manager on the host")
		}
		return nil, status.Error(codes.Internal, err.Error())
	}
	s, ok := mgr.Get(req.GetSession())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no live session %q", req.GetSession())
	}
	msgs := s.Messages()
	out := &pluginpb.MessagesResponse{Messages: make([]*pluginpb.Message, len(msgs))}
	for i, m := range msgs {
		pm := &pluginpb.Message{Role: m.Role, Content: m.Content, Reasoning: m.Reasoning, ToolCallId: m.ToolCallID, Name: m.Name}
		for _, c := range m.ToolCalls {
			pm.ToolCalls = append(pm.ToolCalls, &pluginpb.ToolCall{Id: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		out.Messages[i] = pm
	}
	return out, nil
}

func (h *hostService) Log(_ context.Context, req *pluginpb.LogRequest) (*pluginpb.LogResponse, error) {
	keys := make([]string, 0, len(req.GetFields()))
	for k := range req.GetFields() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		args = append(args, k, req.GetFields()[k])
	}
	h.log.Log(hclogLevel(req.GetLevel()), req.GetMessage(), args...)
	return &pluginpb.LogResponse{}, nil
}

func hclogLevel(l pluginpb.LogRequest_Level) hclog.Level {
	switch l {
	case pluginpb.LogRequest_LEVEL_TRACE:
		return hclog.Trace
	case pluginpb.LogRequest_LEVEL_DEBUG:
		return hclog.Debug
	case pluginpb.LogRequest_LEVEL_WARN:
		return hclog.Warn
	case pluginpb.LogRequest_LEVEL_ERROR:
		return hclog.Error
	default:
		return hclog.Info
	}
}

var _ pluginpb.HostServer = (*hostService)(nil)
