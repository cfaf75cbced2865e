package server_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/internal/browsertest"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/server"
)

// streamPage is a web page of another origin than the API's: with its
// bearer token it POSTs for a stream ticket (a CORS request the API
// allows its origin), then follows the session's events through an
// EventSource, which cannot send the token itself.
const streamPage = `<!doctype html>
<meta charset="utf-8">
<title>stream</title>
<pre id="log"></pre>
<script>
const api = %q, session = %q, token = %q;
window.seen = [];
window.failures = [];
async function ticket() {
  const res = await fetch(api + '/v1/sessions/' + session + '/events/tickets', {
    method: 'POST',
    headers: { 'Authorization': 'Bearer ' + token, 'Content-Type': 'application/json' },
  });
  if (res.status !== 201) throw new Error('ticket: ' + res.status);
  return (await res.json()).ticket;
}
// follow opens a stream with the ticket; it resolves with the
// EventSource once it is open, or rejects when it is refused.
function follow(t) {
  return new Promise((resolve, reject) => {
    const es = new EventSource(api + '/v1/sessions/' + session + '/events?ticket=' + encodeURIComponent(t));
    es.onopen = () => resolve(es);
    es.onmessage = (e) => {
      const rec = JSON.parse(e.data);
      window.seen.push(rec.type);
      document.getElementById('log').textContent += e.lastEventId + ' ' + rec.type + '\n';
    };
    es.onerror = () => {
      if (es.readyState === EventSource.CLOSED) { es.close(); reject(new Error('refused')); }
    };
  });
}
window.start = async () => {
  const t = await ticket();
  window.stream = await follow(t);
  // The same ticket again, and no ticket: both refused.
  for (const again of [t, '']) {
    try { (await follow(again)).close(); window.failures.push('a stream opened with ' + JSON.stringify(again)); }
    catch (e) { window.refused = (window.refused || 0) + 1; }
  }
  return 'open';
};
</script>`

// TestABrowserFollowsAStreamWithATicket drives headless Chromium: a page
// of another origin, with tokens on, gets a ticket with its bearer token
// and sees a turn's events arrive through its EventSource.
func TestABrowserFollowsAStreamWithATicket(t *testing.T) {
	toks, err := server.NewTokens("", "alice default viewer "+aliceTok+"; carol default admin "+carolTok)
	require.NoError(t, err)

	page := httptest.NewUnstartedServer(nil)
	origin := "http://" + page.Listener.Addr().String()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a := newAPI(t, composition(false, calc, scripted.Reply{Text: "42."}), server.Options{})
	a.srv.Close()
	s, err := server.New(a.rt, server.Options{Auth: toks, Addr: ln.Addr().String(), CORSOrigins: []string{origin}})
	require.NoError(t, err)
	a.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: s}}
	a.srv.Start()
	t.Cleanup(a.srv.Close)
	a.startWorker()
	a.auth = carolTok
	id := a.create()

	page.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprintf(w, streamPage, a.srv.URL, id, aliceTok)
	})
	page.Start()
	t.Cleanup(page.Close)

	ctx := browsertest.New(t) // goes first, ending its streams
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(origin+"/")))
	state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.start()`, chromedp.EvalAwaitPromise))
	require.NoError(t, err, "the page's stream did not open")
	assert.Equal(t, "open", state)

	// A turn posted now reaches the page's EventSource as it runs.
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"6 times 7?"}`, nil)
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`window.seen.includes('turn/end')`, chromedp.WithPollingTimeout(30*time.Second)))
	require.NoError(t, err, "the turn's events did not reach the page")
	seen, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.seen`))
	require.NoError(t, err)
	recs := a.until(id, -1, turnEnd)
	require.Len(t, seen, len(recs), "every event, once")
	for i, rec := range recs {
		assert.Equal(t, rec.Type(), seen[i], "event %d", i)
	}
	assert.Contains(t, seen, "tool/result")

	refused, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.refused`))
	require.NoError(t, err)
	assert.Equal(t, 2, refused, "a used ticket and no ticket are refused")
	failures, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.failures`))
	require.NoError(t, err)
	assert.Empty(t, failures)
	log, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#log")))
	require.NoError(t, err)
	assert.Contains(t, log, strconv.Itoa(len(recs)-1)+" turn/end", "the page shows each event's seq")
	assert.Len(t, strings.Split(strings.TrimSpace(log), "\n"), len(recs))
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`window.stream.close(), true`))
	require.NoError(t, err)
}
