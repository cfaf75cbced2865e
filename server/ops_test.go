package server_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/server"
)

func TestReadyzAnswersOnceTheStoreDoes(t *testing.T) {
	a := newAPI(t, composition(false), server.Options{Tokens: []string{"tok"}})
	var body struct{ Status string }
	a.json(http.StatusOK, "GET", "/readyz", "", &body) // open: no token
	assert.Equal(t, "ready", body.Status)
	a.json(http.StatusOK, "GET", "/healthz", "", &body)
	assert.Equal(t, "ok", body.Status)
	require.NoError(t, a.rt.Close())
	status, data := a.do("GET", "/readyz", "")
	assert.Equal(t, http.StatusServiceUnavailable, status, "%s", data)
	assert.Contains(t, string(data), `"code":"unavailable"`)
}

// TestDurationHistogramsHaveSecondsBuckets: the histograms measured in
// seconds count in buckets of seconds (5 ms to 10 min), not in the SDK's
// default ones, made for milliseconds (0 to 10000); and the queue-depth
// gauge counts the jobs waiting, by kind and state.
func TestDurationHistogramsHaveSecondsBuckets(t *testing.T) {
	m, err := server.NewMetrics()
	require.NoError(t, err)
	a := newAPI(t, composition(false, scripted.Reply{Text: "ok"}), server.Options{Metrics: m})
	require.NoError(t, m.WatchQueue(a.rt, hclog.NewNullLogger()))
	metrics := func() string {
		status, body := a.do("GET", "/metrics", "")
		require.Equal(t, http.StatusOK, status)
		return string(body)
	}
	id := a.create()
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"hi"}`, nil)
	text := metrics()
	assert.Regexp(t, `vigil_queue_jobs\{[^}]*vigil_job_kind="turn",vigil_job_state="queued"[^}]*\} 1\n`, text)
	assert.Regexp(t, `vigil_queue_jobs\{[^}]*vigil_job_kind="decide",vigil_job_state="running"[^}]*\} 0\n`, text)

	a.opts = vigil.WorkOptions{OnJob: m.OnJob()}
	a.startWorker()
	a.until(id, -1, turnEnd)
	require.Eventually(t, func() bool {
		return regexp.MustCompile(`vigil_job_duration_seconds_count\{`).MatchString(metrics())
	}, 10*time.Second, 20*time.Millisecond)
	text = metrics()
	for _, name := range []string{"http_server_request_duration_seconds", "vigil_job_duration_seconds"} {
		assert.Equal(t, server.SecondsBuckets, bucketsOf(t, text, name), name)
	}
	assert.Equal(t, 0.005, server.SecondsBuckets[0])
	assert.Equal(t, 600.0, server.SecondsBuckets[len(server.SecondsBuckets)-1])
	assert.Regexp(t, `vigil_queue_jobs\{[^}]*vigil_job_kind="turn",vigil_job_state="queued"[^}]*\} 0\n`, text)
}

// bucketsOf returns the le bounds of histogram name's first series in a
// Prometheus text exposition, in order.
func bucketsOf(t *testing.T, text, name string) []float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + name + `_bucket\{([^}]*)le="([^"]+)"\} `)
	var out []float64
	first := ""
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		if first == "" {
			first = m[1]
		}
		if m[1] != first || m[2] == "+Inf" {
			continue
		}
		f, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		out = append(out, f)
	}
	return out
}

// The probes of a process that serves no API answer the Host a scraper
// sends on a wildcard bind (this machine's address, an allowed name) and
// refuse a foreign one, as the API does.
func TestProbesAnswerTheirBoundAddressesHosts(t *testing.T) {
	a := newAPI(t, composition(false), server.Options{})
	metrics, err := server.NewMetrics()
	require.NoError(t, err)
	probes := server.NewProbes(a.rt, server.Options{Metrics: metrics, Addr: "0.0.0.0:9464", AllowedHosts: []string{"metrics.internal"}})
	hosts := []string{"127.0.0.1:9464", "localhost:9464", "metrics.internal:9464"}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, ad := range addrs {
			if ipn, ok := ad.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				hosts = append(hosts, net.JoinHostPort(ipn.IP.String(), "9464"))
			}
		}
	}
	for _, host := range hosts {
		req := httptest.NewRequest("GET", "http://"+host+"/metrics", nil)
		rec := httptest.NewRecorder()
		probes.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusOK, rec.Code, "%s: %s", host, rec.Body)
	}
	req := httptest.NewRequest("GET", "http://attacker.example:9464/healthz", nil)
	rec := httptest.NewRecorder()
	probes.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusMisdirectedRequest, rec.Code, "%s", rec.Body)
}
