#!/bin/sh
# Regenerates the Python stubs in pb/ with Debian's python3-grpc-tools
# (apt-get install -y python3-grpc-tools), whose output matches Debian's
# python3-grpcio and python3-protobuf runtime:
#
#   - plugin_pb2*.py from Vigil's protocol, plugins/external/proto/plugin.proto;
#   - grpc_broker_pb2*.py and grpc_controller_pb2*.py from the go-plugin
#     version in go.mod (its broker and controller services);
#   - health_pb2*.py from proto/health.proto (gRPC's health service).
set -eu
cd "$(dirname "$0")"
root=../../..
goplugin=$(cd "$root" && go mod download github.com/hashicorp/go-plugin && go list -m -f '{{.Dir}}' github.com/hashicorp/go-plugin)
rm -f pb/*_pb2.py pb/*_pb2_grpc.py
/usr/bin/python3 -m grpc_tools.protoc \
	-I "$root/plugins/external/proto" -I "$goplugin/internal/plugin" -I proto \
	--python_out=pb --grpc_python_out=pb \
	plugin.proto grpc_broker.proto grpc_controller.proto health.proto
