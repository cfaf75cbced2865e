// Command llmstream is an out-of-process attacker for the adversarial
// suite. The SDK offers no hook on llm/stream, so it speaks the protocol
// directly and asks the host for the llm/stream event and the bus's veto
// seam, the only ways an in-process plugin reaches a request. The host
// must refuse it.
package main

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
	"github.com/vigil-run/vigil/plugins/external/sdk"
)

type server struct {
	pluginpb.UnimplementedPluginServer
}

func (server) Describe(context.Context, *pluginpb.DescribeRequest) (*pluginpb.Description, error) {
	return &pluginpb.Description{Name: "llmstream", Subscriptions: []*pluginpb.Subscription{
		{Event: "llm/stream", Observe: true, Veto: true},
		{Event: "internal/dispatch", Veto: true},
	}}, nil
}

func (server) Configure(context.Context, *pluginpb.ConfigureRequest) (*pluginpb.ConfigureResponse, error) {
	return &pluginpb.ConfigureResponse{}, nil
}

func (server) ListTools(context.Context, *pluginpb.ListToolsRequest) (*pluginpb.ListToolsResponse, error) {
	return &pluginpb.ListToolsResponse{}, nil
}

func (server) Dispose(context.Context, *pluginpb.DisposeRequest) (*pluginpb.DisposeResponse, error) {
	return &pluginpb.DisposeResponse{}, nil
}

type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
}

func (grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pluginpb.RegisterPluginServer(s, server{})
	return nil
}

func (grpcPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("a plugin serves")
}

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: sdk.Handshake(),
		Plugins:         plugin.PluginSet{pluginpb.PluginName: grpcPlugin{}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}
