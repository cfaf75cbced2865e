package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
)

// server adapts a Plugin's hooks to the gRPC Plugin service.
type server[C any] struct {
	pluginpb.UnimplementedPluginServer
	p      *Plugin[C]
	broker *plugin.GRPCBroker

	mu         sync.Mutex
	configured bool
	host       *Host
	tools      map[string]*Tool
}

func newServer[C any](p *Plugin[C]) *server[C] {
	s := &server[C]{p: p, tools: make(map[string]*Tool, len(p.Tools))}
	for i := range p.Tools {
		s.tools[p.Tools[i].Name] = &p.Tools[i]
	}
	return s
}

// check reports a plugin that cannot be served, before anything starts.
func (s *server[C]) check() error {
	var errs []error
	if s.p.Name == "" {
		errs = append(errs, errors.New("Plugin.Name is empty"))
	}
	if len(s.tools) != len(s.p.Tools) {
		errs = append(errs, errors.New("two tools have the same name"))
	}
	for _, t := range s.p.Tools {
		if t.Name == "" || t.Run == nil {
			errs = append(errs, fmt.Errorf("tool %q needs a name and Run", t.Name))
		}
	}
	return errors.Join(errs...)
}

func (s *server[C]) Describe(context.Context, *pluginpb.DescribeRequest) (*pluginpb.Description, error) {
	d := &pluginpb.Description{Name: s.p.Name, Version: s.p.Version, Scorer: s.p.Score != nil}
	if s.p.OnEvent != nil || s.p.Validate != nil {
		d.Subscriptions = append(d.Subscriptions, &pluginpb.Subscription{
			Event:   "session/event",
			Types:   s.p.Types,
			Observe: s.p.OnEvent != nil,
			Veto:    s.p.Validate != nil,
		})
	}
	if s.p.OnSession != nil {
		d.Subscriptions = append(d.Subscriptions, &pluginpb.Subscription{Event: "session/created", Observe: true})
	}
	return d, nil
}

func (s *server[C]) Configure(ctx context.Context, req *pluginpb.ConfigureRequest) (_ *pluginpb.ConfigureResponse, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.configured {
		return nil, status.Error(codes.FailedPrecondition, "already configured")
	}
	var cfg C
	if err := strictJSON(req.GetConfig(), &cfg); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "config: %v", err)
	}
	if s.broker != nil && req.GetHostBrokerId() != 0 {
		conn, err := s.broker.Dial(req.GetHostBrokerId())
		if err != nil {
			return nil, status.Errorf(codes.Unavailable, "dialing the host: %v", err)
		}
		s.host = newHost(conn)
	}
	if s.p.Configure != nil {
		defer recoverTo(&err)
		if err := s.p.Configure(ctx, s.host, cfg); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
	}
	s.configured = true
	return &pluginpb.ConfigureResponse{}, nil
}

func (s *server[C]) OnEvent(ctx context.Context, ev *pluginpb.Event) (_ *pluginpb.OnEventResponse, err error) {
	defer recoverTo(&err)
	switch ev.GetName() {
	case "session/created":
		if s.p.OnSession != nil {
			if err := s.p.OnSession(ctx, ev.GetSession()); err != nil {
				return nil, status.Error(codes.Unknown, err.Error())
			}
		}
	case "session/event":
		if s.p.OnEvent != nil {
			if err := s.p.OnEvent(ctx, event(ev)); err != nil {
				return nil, status.Error(codes.Unknown, err.Error())
			}
		}
	default:
		return nil, status.Errorf(codes.InvalidArgument, "unknown event %q", ev.GetName())
	}
	return &pluginpb.OnEventResponse{}, nil
}

func (s *server[C]) Validate(ctx context.Context, ev *pluginpb.Event) (_ *pluginpb.ValidateResponse, err error) {
	if s.p.Validate == nil {
		return &pluginpb.ValidateResponse{}, nil
	}
	defer recoverTo(&err)
	verr := s.p.Validate(ctx, event(ev))
	if verr == nil {
		return &pluginpb.ValidateResponse{}, nil
	}
	var (
		v   *VetoError
		ask *AskError
	)
	if errors.As(verr, &ask) {
		// Veto too: a host that predates ask refuses the call.
		return &pluginpb.ValidateResponse{Veto: true, Ask: true, Code: CodeAsk, Reason: ask.Reason}, nil
	}
	if errors.As(verr, &v) {
		return &pluginpb.ValidateResponse{Veto: true, Code: v.Code, Reason: v.Reason}, nil
	}
	return &pluginpb.ValidateResponse{Veto: true, Code: CodeVeto, Reason: verr.Error()}, nil
}

func (s *server[C]) ListTools(context.Context, *pluginpb.ListToolsRequest) (*pluginpb.ListToolsResponse, error) {
	out := &pluginpb.ListToolsResponse{Tools: make([]*pluginpb.Tool, len(s.p.Tools))}
	for i, t := range s.p.Tools {
		out.Tools[i] = &pluginpb.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters, ConcurrencySafe: t.ConcurrencySafe, Idempotent: t.Idempotent}
	}
	return out, nil
}

func (s *server[C]) CallTool(ctx context.Context, req *pluginpb.CallToolRequest) (resp *pluginpb.CallToolResponse, _ error) {
	t, ok := s.tools[req.GetName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no tool named %q", req.GetName())
	}
	defer func() {
		if v := recover(); v != nil {
			resp = &pluginpb.CallToolResponse{Error: &pluginpb.ToolError{Code: CodeToolPanic, Message: fmt.Sprint(v)}}
		}
	}()
	content, err := t.Run(withIdempotencyKey(ctx, req.GetIdempotencyKey()), req.GetArguments())
	if err != nil {
		var te *ToolError
		if errors.As(err, &te) {
			return &pluginpb.CallToolResponse{Error: &pluginpb.ToolError{Code: te.Code, Message: te.Message}}, nil
		}
		return &pluginpb.CallToolResponse{Error: &pluginpb.ToolError{Code: CodeToolFailed, Message: err.Error()}}, nil
	}
	return &pluginpb.CallToolResponse{Content: content}, nil
}

func (s *server[C]) Dispose(ctx context.Context, _ *pluginpb.DisposeRequest) (_ *pluginpb.DisposeResponse, err error) {
	if err := s.dispose(ctx); err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	return &pluginpb.DisposeResponse{}, nil
}

// dispose runs the Dispose hook at most once and closes the host
// connection.
func (s *server[C]) dispose(ctx context.Context) (err error) {
	s.mu.Lock()
	p, h := s.p.Dispose, s.host
	s.p.Dispose, s.host = nil, nil
	s.mu.Unlock()
	if h != nil {
		defer h.close()
	}
	if p == nil {
		return nil
	}
	defer recoverTo(&err)
	return p(ctx)
}

func event(ev *pluginpb.Event) *Event {
	return &Event{Session: ev.GetSession(), Seq: ev.GetSeq(), Type: ev.GetType(), Line: ev.GetRecord(), Proposed: ev.GetProposed()}
}

// recoverTo turns a hook's panic into an Internal error.
func recoverTo(err *error) {
	if v := recover(); v != nil {
		*err = status.Errorf(codes.Internal, "panic: %v", v)
	}
}

// grpcPlugin is the go-plugin side of the server.
type grpcPlugin[C any] struct {
	plugin.NetRPCUnsupportedPlugin
	srv *server[C]
}

func (g *grpcPlugin[C]) GRPCServer(b *plugin.GRPCBroker, s *grpc.Server) error {
	g.srv.broker = b
	pluginpb.RegisterPluginServer(s, g.srv)
	if g.srv.p.Score != nil {
		pluginpb.RegisterScorerServer(s, &scorerServer[C]{srv: g.srv})
	}
	return nil
}

func (g *grpcPlugin[C]) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("sdk: a plugin serves, it is not a client")
}

var (
	_ pluginpb.PluginServer = (*server[struct{}])(nil)
	_ plugin.GRPCPlugin     = (*grpcPlugin[struct{}])(nil)
)
