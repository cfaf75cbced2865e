//go:build unix

// The Python example plugin, run by Debian's /usr/bin/python3 and loaded
// by the real external plugin: the handshake, mutual TLS, the broker's
// Host service, a tool call inside an agent turn, a veto, the
// controller's shutdown and the lifeline, all in another language.
package python_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/external"
	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// python is Debian's interpreter, the one with python3-grpcio and
// python3-cryptography (the python3 first on PATH may be another).
const python = "/usr/bin/python3"

// script is the plugin; its shebang names python.
const script = "plugin.py"

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// requirePython skips the test when python lacks the packages the
// plugin needs, except in CI, where .ci/run installs them and their
// absence fails the test.
func requirePython(t *testing.T) {
	t.Helper()
	out, err := exec.Command(python, "-c", "import grpc, cryptography").CombinedOutput()
	if err == nil {
		return
	}
	// The traceback's last line names the missing module.
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	msg := fmt.Sprintf("%s cannot import grpc and cryptography (apt-get install -y python3-grpcio python3-cryptography): %v: %s", python, err, lines[len(lines)-1])
	if os.Getenv("CI") != "" {
		t.Fatalf("%s; .ci/run must install them", msg)
	}
	t.Skipf("%s; in CI this fails", msg)
}

// logBuffer collects the host's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// host is a bus with the invariants plugin in strict mode, so every
// model request is checked against a fresh fold of the log, and a
// session manager over a memory store.
type host struct {
	root *bus.Root
	c    *bus.Context
	mgr  *live.Manager
	logs *logBuffer
}

func newHost(t *testing.T) *host {
	t.Helper()
	logs := &logBuffer{}
	root := bus.New(bus.WithLogger(hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})))
	t.Cleanup(func() {
		_ = root.Dispose()
		if t.Failed() {
			t.Logf("host log:\n%s", logs.String())
		}
	})
	c := root.Context()
	_, err := c.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict})
	require.NoError(t, err)
	var n atomic.Int64
	clock := func() time.Time {
		return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(n.Add(1)) * time.Millisecond)
	}
	mgr := live.NewManager(c, memory.New(), live.WithClock(clock))
	_, err = live.Sessions.Provide(c, mgr)
	require.NoError(t, err)
	return &host{root: root, c: c, mgr: mgr, logs: logs}
}

func ofType(recs []session.Record, typ string) []session.Record {
	var out []session.Record
	for _, r := range recs {
		if r.Type() == typ {
			out = append(out, r)
		}
	}
	return out
}

// verify requires the session's log, as a store would hold it, to pass
// the offline invariants.
func verify(t *testing.T, s *live.Session) {
	t.Helper()
	b := session.AppendHeaderLine(nil, s.Info())
	for _, r := range s.Records() {
		b = r.AppendLine(b)
	}
	rep, err := invariants.Verify(bytes.NewReader(b))
	require.NoError(t, err)
	require.Empty(t, rep.Violations, "%v", rep.Violations)
}

func TestPythonPluginServesATurn(t *testing.T) {
	requirePython(t)
	h := newHost(t)
	var (
		mu      sync.Mutex
		emitted []*external.Emission
	)
	external.Emitted.On(h.c, func(_ context.Context, e *external.Emission) error {
		mu.Lock()
		defer mu.Unlock()
		emitted = append(emitted, e)
		return nil
	})
	f, err := h.c.Plugin(external.New(), &external.Config{Path: script, Config: map[string]any{"max_words": 8}})
	require.NoError(t, err)
	require.Equal(t, bus.StateActive, f.State())
	assert.Contains(t, h.logs.String(), "plugin ready: name=wordcount version=1.0.0 tools=1 subscriptions=1")

	prov, err := scripted.New(scripted.Config{Script: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{
			{Name: "word_count", Arguments: map[string]any{"text": "the quick brown fox"}},
			{Name: "word_count", Arguments: map[string]any{"text": 3}},
		}},
		{Text: "Four words."},
	}})
	require.NoError(t, err)
	a := agentloop.New(h.c, agentloop.Config{}, agentloop.WithProvider(prov))
	sess, err := h.mgr.Create(context.Background())
	require.NoError(t, err)

	res, err := a.Run(context.Background(), sess, "how many words has: the quick brown fox")
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Equal(t, 2, prov.Calls())

	// The Python process answered both calls; what it said is logged and
	// is what the model saw in its second request (the invariants plugin
	// checked that request against the fold of the log).
	results := ofType(sess.Records(), session.TypeToolResult)
	require.Len(t, results, 2)
	ok, err := session.DecodeData[session.ToolResult](results[0])
	require.NoError(t, err)
	assert.Equal(t, "4 words", ok.Content)
	assert.Nil(t, ok.Error)
	bad, err := session.DecodeData[session.ToolResult](results[1])
	require.NoError(t, err)
	require.NotNil(t, bad.Error)
	assert.Equal(t, "INVALID_ARGUMENTS", bad.Error.Code)
	msgs := sess.Messages()
	require.NotEmpty(t, msgs)
	assert.Equal(t, "Four words.", msgs[len(msgs)-1].Content)
	var toolMsgs []string
	for _, m := range msgs {
		if m.Role == "tool" {
			toolMsgs = append(toolMsgs, m.Content)
		}
	}
	assert.Equal(t, "4 words", toolMsgs[0])

	// The count reached the bus through the broker's Host service.
	mu.Lock()
	assert.Equal(t, []*external.Emission{{Plugin: "wordcount", Name: "words/counted", Data: json.RawMessage(`{"words": 4}`)}}, emitted)
	mu.Unlock()

	// The plugin's Validate refuses a user message over max_words: the
	// append fails and nothing of it is logged.
	before := len(sess.Records())
	_, err = a.Run(context.Background(), sess, "one two three four five six seven eight nine")
	var veto *external.VetoError
	require.ErrorAs(t, err, &veto)
	assert.Equal(t, "wordcount", veto.Plugin)
	assert.Equal(t, "TOO_LONG", veto.Code)
	assert.Equal(t, "the message has 9 words; at most 8", veto.Reason)
	for _, r := range sess.Records()[before:] {
		assert.NotEqual(t, session.TypeUserMessage, r.Type())
	}
	verify(t, sess)

	// Disposing the fiber: Dispose, then go-plugin's controller Shutdown,
	// on which the plugin exits by itself rather than being killed.
	require.NoError(t, f.Dispose())
	logs := h.logs.String()
	assert.Contains(t, logs, "plugin exited")
	assert.NotContains(t, logs, "plugin failed to exit gracefully")
	assert.NotContains(t, logs, "[ERROR]")
}

// TestPythonPluginAsksAboutALongCount: with ask_over, the plugin's
// Validate answers ask for a proposed word_count call over that many
// words; the turn suspends with a request by the plugin, and a decision
// resumes it.
func TestPythonPluginAsksAboutALongCount(t *testing.T) {
	requirePython(t)
	ctx := context.Background()
	h := newHost(t)
	_, err := h.c.Plugin(external.New(), &external.Config{Path: script, Config: map[string]any{"ask_over": 3}})
	require.NoError(t, err)
	prov, err := scripted.New(scripted.Config{Script: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{
			{Name: "word_count", Arguments: map[string]any{"text": "two words"}},
			{Name: "word_count", Arguments: map[string]any{"text": "the quick brown fox"}},
		}},
		{Text: "Four words."},
	}})
	require.NoError(t, err)
	a := agentloop.New(h.c, agentloop.Config{}, agentloop.WithProvider(prov))
	sess, err := h.mgr.Create(ctx)
	require.NoError(t, err)

	res, err := a.Run(ctx, sess, "count")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	require.Len(t, res.Pending, 1)
	p := res.Pending[0]
	assert.Equal(t, session.ApprovalRequest{ID: p.Call.ID, By: "wordcount", Reason: "a count of 4 words; more than 3 needs a person"}, p.Request)
	require.Len(t, ofType(sess.Records(), session.TypeToolResult), 1, "the short count ran")

	_, err = agentloop.Decide(ctx, sess, p.Call.ID, agentloop.Decision{Allow: true, By: "alice"})
	require.NoError(t, err)
	res, err = a.Resume(ctx, sess)
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	var contents []string
	for _, r := range ofType(sess.Records(), session.TypeToolResult) {
		tr, err := session.DecodeData[session.ToolResult](r)
		require.NoError(t, err)
		contents = append(contents, tr.Content)
	}
	assert.Equal(t, []string{"2 words", "4 words"}, contents)
	verify(t, sess)
}

// clientCert is a certificate like the one go-plugin's host sends in
// PLUGIN_CLIENT_CERT, PEM-encoded, and its key pair.
func clientCert(t *testing.T) (string, tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localhost"},
		DNSNames:              []string{"localhost"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestPythonPluginHandshakeAndLifeline runs the script as go-plugin's
// host would, by hand: its one stdout line is the handshake Vigil
// expects, with a certificate for localhost in unpadded base64 DER; it
// serves go-plugin's health service over mutual TLS with the host's
// certificate; and closing the lifeline makes it exit.
func TestPythonPluginHandshakeAndLifeline(t *testing.T) {
	requirePython(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	certPEM, keyPair := clientCert(t)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	cmd := exec.CommandContext(ctx, "./"+script)
	cmd.Env = []string{
		pluginpb.MagicCookieKey + "=" + pluginpb.MagicCookieValue,
		"PLUGIN_PROTOCOL_VERSIONS=1",
		"PLUGIN_UNIX_SOCKET_DIR=" + t.TempDir(),
		"PLUGIN_CLIENT_CERT=" + certPEM,
		pluginpb.LifelineEnv + "=3",
	}
	cmd.ExtraFiles = []*os.File{r}
	stderr := &logBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	_ = r.Close()

	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "stderr: %s", stderr.String())
	parts := strings.Split(strings.TrimSuffix(line, "\n"), "|")
	require.Len(t, parts, 6, line)
	assert.Equal(t, []string{"1", "1", "unix"}, parts[:3])
	assert.FileExists(t, parts[3])
	assert.Equal(t, "grpc", parts[4])
	der, err := base64.RawStdEncoding.DecodeString(parts[5])
	require.NoError(t, err, "go-plugin decodes the certificate as unpadded base64")
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	assert.NoError(t, cert.VerifyHostname("localhost"))

	// Dialed as go-plugin dials: its certificate is the only root, the
	// server name localhost, and the host's certificate the client's.
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	cc, err := grpc.NewClient("unix:"+parts[3], grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{keyPair},
		RootCAs:      roots,
		ServerName:   "localhost",
		MinVersion:   tls.VersionTLS12,
	})))
	require.NoError(t, err)
	defer cc.Close()
	health, err := grpc_health_v1.NewHealthClient(cc).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: "plugin"})
	require.NoError(t, err)
	assert.Equal(t, grpc_health_v1.HealthCheckResponse_SERVING, health.GetStatus())
	require.NoError(t, cc.Close())

	// The host is gone: its end of the lifeline closes.
	require.NoError(t, w.Close())
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
}

func TestPythonPluginRefusesToRunOutsideAHost(t *testing.T) {
	requirePython(t)
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"no magic cookie", nil, "This is a Vigil plugin"},
		{"another protocol version", []string{pluginpb.MagicCookieKey + "=" + pluginpb.MagicCookieValue, "PLUGIN_PROTOCOL_VERSIONS=2"}, "the host speaks protocol versions 2; this plugin speaks 1"},
		{"no AutoMTLS", []string{pluginpb.MagicCookieKey + "=" + pluginpb.MagicCookieValue, "PLUGIN_PROTOCOL_VERSIONS=1"}, "PLUGIN_CLIENT_CERT is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("./" + script)
			cmd.Env = tt.env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			assert.Equal(t, 1, exit.ExitCode())
			assert.Empty(t, stdout.String())
			assert.Contains(t, stderr.String(), tt.want)
		})
	}
}
