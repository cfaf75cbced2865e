package mcptools_test

import (
	"testing"
	"time"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/vigil-run/vigil/plugins/mcptools"
	"github.com/vigil-run/vigil/plugins/mcptools/internal/testserver"
)

func TestZZHTTPServerGone(t *testing.T) {
	srv := testserver.New(testserver.Options{})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	h := newHost(t)
	f := h.mcp(&mcptools.Config{URL: ts.URL})
	ts.CloseClientConnections()
	ts.Close()
	start := time.Now()
	for i := 0; i < 300; i++ {
		if f.State().String() != "active" { break }
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("state %v after %v: %v tools=%v", f.State(), time.Since(start), f.Err(), h.toolNames())
	_, err := h.call2("echo", `{"text":"x"}`)
	t.Logf("call: %v", err)
	t.Log(h.logs.String())
}
func (h *host) call2(name, args string) (string, error) {
	tl, err := (func() (any, error) { return nil, nil })()
	_ = tl
	return "", err
}
