#!/usr/bin/python3 -B
"""wordcount: a Vigil out-of-process plugin in Python.

It provides one tool, word_count, which counts the words of a text, and,
with max_words configured, vetoes user messages longer than that; with
ask_over configured, a word_count call whose text has more words than
that waits for a person's decision (Validate answers ask). Each
count is also emitted on the host's bus (external/event "words/counted")
through the Host service, which a plugin reaches through go-plugin's
broker.

It runs on Debian's /usr/bin/python3 with python3-grpcio and
python3-cryptography; the stubs in pb/ come from gen.sh. The protocol,
handshake and process contract are in plugins/external/proto/doc.go.

    plugins:
      - id: wordcount
        name: external
        config:
          path: examples/plugins/python/plugin.py
          config: { max_words: 50, ask_over: 1000 }
"""

import base64
import datetime
import json
import os
import signal
import sys
import tempfile
import threading
from concurrent import futures

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "pb"))

import grpc  # noqa: E402
from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID  # noqa: E402

import grpc_broker_pb2_grpc  # noqa: E402
import grpc_controller_pb2  # noqa: E402
import grpc_controller_pb2_grpc  # noqa: E402
import health_pb2  # noqa: E402
import health_pb2_grpc  # noqa: E402
import plugin_pb2 as pb  # noqa: E402
import plugin_pb2_grpc  # noqa: E402

# The go-plugin handshake of Vigil's protocol (plugins/external/proto/handshake.go).
CORE_PROTOCOL_VERSION = 1  # go-plugin's own
PROTOCOL_VERSION = 1  # pluginpb.ProtocolVersion
MAGIC_COOKIE_KEY = "VIGIL_PLUGIN"
MAGIC_COOKIE_VALUE = "4f2c8d0e-vigil-plugin-v1-a3e9b6f1"
LIFELINE_ENV = "VIGIL_PLUGIN_LIFELINE"
LOG_LEVEL_ENV = "VIGIL_PLUGIN_LOG_LEVEL"

NAME = "wordcount"
VERSION = "1.0.0"

# How long a Host call waits for the broker to announce the Host service.
BROKER_WAIT = 5.0


# --- logging: hclog's JSON lines on stderr, which the host re-emits ------

LEVELS = {"trace": 0, "debug": 1, "info": 2, "warn": 3, "error": 4}
_min_level = LEVELS.get(os.environ.get(LOG_LEVEL_ENV, "info"), LEVELS["info"])
_log_lock = threading.Lock()


def log(level, message, **fields):
    if LEVELS[level] < _min_level:
        return
    now = datetime.datetime.now(datetime.timezone.utc)
    entry = {
        "@level": level,
        "@message": message,
        # go-plugin parses exactly this layout (microseconds, a zone).
        "@timestamp": now.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z",
    }
    entry.update(fields)
    with _log_lock:
        sys.stderr.write(json.dumps(entry) + "\n")
        sys.stderr.flush()


# --- TLS: go-plugin's AutoMTLS ------------------------------------------


def server_certificate():
    """A self-signed certificate naming localhost (the host dials with
    ServerName "localhost"), usable for both ends of TLS: the plugin
    serves with it and presents it when it dials the host's broker."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(seconds=30))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=True, key_cert_sign=True,
                crl_sign=False, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert, key_pem


# --- the broker: where the host serves the Host service -----------------


class Broker(grpc_broker_pb2_grpc.GRPCBrokerServicer):
    """go-plugin's plugin.GRPCBroker. The host opens one StartStream and
    sends a ConnInfo (service id, network, address) for each service it
    serves; the plugin dials that address to reach it."""

    def __init__(self):
        self._cond = threading.Condition()
        self._addrs = {}
        self._streams = []  # one event per open stream, set when it ends
        self._closed = False

    def StartStream(self, request_iterator, context):
        def receive():
            try:
                for info in request_iterator:
                    with self._cond:
                        self._addrs[info.service_id] = (info.network, info.address)
                        self._cond.notify_all()
            except grpc.RpcError:
                pass  # the stream ended: the host is closing

        threading.Thread(target=receive, daemon=True).start()
        # Nothing to send: this plugin asks the host for no connections.
        # Returning would end the stream, so hold it until it ends or the
        # plugin stops.
        ended = threading.Event()
        context.add_callback(ended.set)
        with self._cond:
            if self._closed:
                ended.set()
            self._streams.append(ended)
        ended.wait()
        return iter(())

    def close(self):
        with self._cond:
            self._closed = True
            for ended in self._streams:
                ended.set()

    def address(self, service_id, timeout):
        with self._cond:
            if not self._cond.wait_for(lambda: service_id in self._addrs, timeout):
                raise TimeoutError("the broker announced no service %d" % service_id)
            return self._addrs[service_id]


class Controller(grpc_controller_pb2_grpc.GRPCControllerServicer):
    """go-plugin's plugin.GRPCController: the host calls Shutdown after
    Dispose, and the plugin exits (else it is killed 2 seconds later)."""

    def __init__(self, stopping):
        self._stopping = stopping

    def Shutdown(self, request, context):
        self._stopping.set()
        return grpc_controller_pb2.Empty()


class Health(health_pb2_grpc.HealthServicer):
    """grpc.health.v1.Health: go-plugin's client checks service "plugin"."""

    def Check(self, request, context):
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


# --- the plugin ----------------------------------------------------------

WORD_COUNT_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "the text whose words to count"}},
    "required": ["text"],
}


def count_words(text):
    return len(text.split())


class WordCount(plugin_pb2_grpc.PluginServicer):
    def __init__(self, broker, credentials):
        self._broker = broker
        self._credentials = credentials
        self._lock = threading.Lock()
        self._max_words = 0
        self._ask_over = 0
        self._host_id = None
        self._host = None
        self._channel = None

    def Describe(self, request, context):
        return pb.Description(
            name=NAME,
            version=VERSION,
            subscriptions=[pb.Subscription(event="session/event", types=["user/message", "tool/call"], veto=True)],
        )

    def Configure(self, request, context):
        cfg = json.loads(request.config or b"null") or {}
        if not isinstance(cfg, dict):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "config must be an object")
        unknown = sorted(set(cfg) - {"max_words", "ask_over"})
        if unknown:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "unknown config keys: %s" % ", ".join(unknown))
        limits = {}
        for key in ("max_words", "ask_over"):
            v = cfg.get(key, 0)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "%s must be a non-negative integer" % key)
            limits[key] = v
        with self._lock:
            self._max_words = limits["max_words"]
            self._ask_over = limits["ask_over"]
            self._host_id = request.host_broker_id
        log("debug", "configured", **limits)
        return pb.ConfigureResponse()

    def ListTools(self, request, context):
        return pb.ListToolsResponse(tools=[
            pb.Tool(
                name="word_count",
                description="Count the words of a text.",
                parameters=json.dumps(WORD_COUNT_SCHEMA).encode(),
                concurrency_safe=True,
            ),
        ])

    def CallTool(self, request, context):
        if request.name != "word_count":
            return pb.CallToolResponse(error=pb.ToolError(code="UNKNOWN_TOOL", message=request.name))
        try:
            args = json.loads(request.arguments)
            text = args["text"]
            if not isinstance(text, str):
                raise TypeError("text must be a string")
        except (ValueError, KeyError, TypeError) as e:
            return pb.CallToolResponse(error=pb.ToolError(code="INVALID_ARGUMENTS", message=str(e)))
        n = count_words(text)
        # A failed emit is the plugin's problem, not the model's: log it.
        try:
            self.host().Emit(pb.EmitRequest(name="words/counted", data=json.dumps({"words": n}).encode()))
        except (grpc.RpcError, TimeoutError) as e:
            log("error", "emit failed", error=str(e))
        return pb.CallToolResponse(content="%d words" % n)

    def Validate(self, request, context):
        with self._lock:
            max_words, ask_over = self._max_words, self._ask_over
        record = json.loads(request.record)
        if request.type == "tool/call":
            # Only a proposed call (sent before it is logged) can wait for
            # a decision; veto is set too, so that an older host refuses it.
            call = record.get("data", {})
            if ask_over == 0 or not request.proposed or call.get("name") != "word_count":
                return pb.ValidateResponse()
            try:
                text = json.loads(call.get("arguments") or "{}").get("text")
            except (ValueError, AttributeError):
                text = None
            if not isinstance(text, str):
                return pb.ValidateResponse()  # the tool answers INVALID_ARGUMENTS
            n = count_words(text)
            if n > ask_over:
                return pb.ValidateResponse(
                    veto=True, ask=True, code="ASK", reason="a count of %d words; more than %d needs a person" % (n, ask_over))
            return pb.ValidateResponse()
        if max_words == 0 or request.type != "user/message":
            return pb.ValidateResponse()
        n = count_words(record.get("data", {}).get("content", ""))
        if n > max_words:
            return pb.ValidateResponse(
                veto=True, code="TOO_LONG", reason="the message has %d words; at most %d" % (n, max_words))
        return pb.ValidateResponse()

    def OnEvent(self, request, context):
        return pb.OnEventResponse()

    def Dispose(self, request, context):
        log("debug", "disposed")
        with self._lock:
            channel, self._channel, self._host = self._channel, None, None
        if channel is not None:
            channel.close()
        return pb.DisposeResponse()

    def host(self):
        """The Host service, dialed once through the broker with the same
        mutual TLS as the plugin's own server."""
        with self._lock:
            if self._host is not None:
                return self._host
            host_id = self._host_id
        network, address = self._broker.address(host_id, BROKER_WAIT)
        if network != "unix":
            raise TimeoutError("the broker offers the Host service over %s; this plugin dials unix sockets" % network)
        channel = grpc.secure_channel(
            "unix:" + address,
            self._credentials,
            # The host's certificate names localhost, not the socket path.
            options=[("grpc.ssl_target_name_override", "localhost")],
        )
        with self._lock:
            if self._host is None:
                self._channel, self._host = channel, plugin_pb2_grpc.HostStub(channel)
            else:
                channel.close()
            return self._host


# --- serving ---------------------------------------------------------------


def watch_lifeline():
    """Exit when the host dies: it holds the write end of the pipe whose
    read end is this fd, and never writes; end of file means it is gone."""
    fd = os.environ.get(LIFELINE_ENV)
    if not fd or not fd.isdigit() or int(fd) <= 2:
        return

    def run():
        try:
            while os.read(int(fd), 4096):
                pass
        except OSError:
            pass
        log("debug", "host gone: lifeline closed")
        os._exit(0)

    threading.Thread(target=run, daemon=True).start()


def main():
    if os.environ.get(MAGIC_COOKIE_KEY) != MAGIC_COOKIE_VALUE:
        sys.stderr.write("This is a Vigil plugin: load it with the external plugin in plugins.yaml.\n")
        return 1
    versions = os.environ.get("PLUGIN_PROTOCOL_VERSIONS", "").split(",")
    if str(PROTOCOL_VERSION) not in versions:
        sys.stderr.write("the host speaks protocol versions %s; this plugin speaks %d\n"
                         % (",".join(versions), PROTOCOL_VERSION))
        return 1
    client_pem = os.environ.get("PLUGIN_CLIENT_CERT", "").encode()
    if not client_pem:
        sys.stderr.write("PLUGIN_CLIENT_CERT is not set: the host must use AutoMTLS\n")
        return 1

    # Ctrl-C at a terminal reaches the plugin too; the host decides when
    # it stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_lifeline()

    cert, key_pem = server_certificate()
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    stopping = threading.Event()
    broker = Broker()
    # Dialing the host's broker: trust its certificate, present ours.
    host_creds = grpc.ssl_channel_credentials(
        root_certificates=client_pem, private_key=key_pem, certificate_chain=cert_pem)

    # The broker stream holds a worker for the plugin's life; the rest
    # serve calls, which the host makes concurrently.
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    plugin_pb2_grpc.add_PluginServicer_to_server(WordCount(broker, host_creds), server)
    grpc_broker_pb2_grpc.add_GRPCBrokerServicer_to_server(broker, server)
    grpc_controller_pb2_grpc.add_GRPCControllerServicer_to_server(Controller(stopping), server)
    health_pb2_grpc.add_HealthServicer_to_server(Health(), server)

    sock_dir = os.environ.get("PLUGIN_UNIX_SOCKET_DIR") or tempfile.mkdtemp(prefix="wordcount-")
    sock = os.path.join(sock_dir, "plugin-%d.sock" % os.getpid())
    creds = grpc.ssl_server_credentials(
        [(key_pem, cert_pem)], root_certificates=client_pem, require_client_auth=True)
    if server.add_secure_port("unix:" + sock, creds) == 0:
        sys.stderr.write("cannot listen on %s\n" % sock)
        return 1
    server.start()

    # The handshake: the only line this process writes on stdout. The
    # certificate is its DER, base64 without padding.
    der = cert.public_bytes(serialization.Encoding.DER)
    b64 = base64.b64encode(der).decode().rstrip("=")
    sys.stdout.write("%d|%d|unix|%s|grpc|%s\n" % (CORE_PROTOCOL_VERSION, PROTOCOL_VERSION, sock, b64))
    sys.stdout.flush()
    log("debug", "serving", socket=sock)

    stopping.wait()
    broker.close()
    server.stop(grace=1).wait()
    try:
        os.unlink(sock)
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
