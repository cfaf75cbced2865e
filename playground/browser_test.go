package playground

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/internal/browsertest"
)

// browser starts the headless chromium the test drives.
func browser(t *testing.T) context.Context { return browsertest.New(t) }

// screenshotDir is where the browser test leaves its screenshots:
// $VIGIL_PLAYGROUND_SHOTS when set (to look at them), else a temporary
// directory.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("VIGIL_PLAYGROUND_SHOTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.TempDir()
}

func TestBrowserPlaysThenRefusesTheForgedRequest(t *testing.T) {
	ctx := browser(t)
	pg := newPlayground(t, Options{Delay: 10 * time.Millisecond})
	srv := httptest.NewServer(lateAnswers(pg, opPlay))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { _ = pg.Close() }) // ends the page's event stream first

	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, steps...))
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err)
		return v
	}
	count := func(sel string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+quoteJS(sel)+`).length`))
		require.NoError(t, err)
		return n
	}
	shownSeqs := func() string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#log .ev .seq')].map((e) => e.textContent).join(' ')`))
		require.NoError(t, err)
		return v
	}
	until := func(expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(20*time.Second))
	}
	shots := screenshotDir(t)
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		path := filepath.Join(shots, name)
		require.NoError(t, os.WriteFile(path, png, 0o644))
		t.Logf("screenshot: %s", path)
	}

	var mu sync.Mutex
	var exceptions []string
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			mu.Lock()
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			exceptions = append(exceptions, fmt.Sprintf("%s:%d: %s", d.URL, d.LineNumber+1, msg))
			mu.Unlock()
		}
	}))

	// Count the page's controls, and those whose answer it has taken in:
	// a timer set when the body is read fires after the microtasks that
	// hand the answer to the page's state.
	_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: countControls})
	require.NoError(t, err)
	controlsSettled := until(`window.__controls.sent > 0 && window.__controls.settled === window.__controls.sent`)

	// Step twice with the keyboard: exactly two events, the loop waits.
	do(
		chromedp.Navigate(srv.URL),
		chromedp.WaitVisible(chromedp.CSS(`body[data-play="idle"]`)),
		chromedp.KeyEvent(kb.ArrowRight),
		until(`document.querySelectorAll('#log .ev').length === 1`),
		chromedp.KeyEvent(kb.ArrowRight),
		until(`document.querySelectorAll('#log .ev').length === 2`),
		chromedp.Sleep(100*time.Millisecond),
	)
	assert.Equal(t, 2, count(`#log .ev`), "a step shows one event")
	assert.Contains(t, text(`#status`), "paused")
	// Four more: the first step's request is in flight.
	do(
		chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.ArrowRight),
		until(`document.querySelectorAll('#log .ev').length === 6`),
	)
	assert.Equal(t, "approval/policy", text(`#log .ev[data-seq="0"] .type`))
	assert.Equal(t, "request/digest", text(`#log .ev[data-seq="5"] .type`))
	assert.Equal(t, "0 1 2 3 4 5", shownSeqs(), "the log shows events in seq order")
	assert.Contains(t, text(`#req-meta`), "in flight · turn 1 step 1")
	assert.Equal(t, 1, count(`#request .msg`))
	shot("playground-stepping.png")

	// Space plays on, paced by the runtime, up to the calc call, which
	// waits for a decision. The answer to the play control ("playing")
	// reaches the page after the event "waiting", as on a loaded machine
	// (lateAnswers): the page stays waiting.
	do(
		chromedp.KeyEvent(" "),
		chromedp.WaitVisible(chromedp.CSS(`body[data-play="waiting"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#pending .pcall button.allow`)),
		controlsSettled,
	)
	state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.play`))
	require.NoError(t, err)
	assert.Equal(t, stateWaiting, state, "a late answer does not undo the wait")
	// The step logged its reply's usage just before it suspended.
	assert.Equal(t, "step/usage", text(`#log .ev:last-child .type`))
	assert.Equal(t, "approval/request", text(`#log .ev[data-seq="14"] .type`))
	assert.Equal(t, 1, count(`#pending .pcall`))
	assert.Contains(t, text(`#pending .ptool`), `calc({"expression":"7*24*60*60"})`)
	assert.Contains(t, text(`#pending .pwhy`), "asked by approvals: "+approvalConfig.Rules[0].Reason)
	assert.Equal(t, 3, count(`#pending .pcall button`), "allow, deny, always for this session")
	assert.Regexp(t, `^waiting for your decision on calc\(\{"expression":"7\*24\*60\*60"\}\) · demo · 16 events$`, text(`#status`))
	assert.Equal(t, "disabled: Nothing to send: the turn waits for your decision on its pending call",
		tab{t, ctx}.send())
	shot("playground-waiting.png")

	// Allow: the decision is logged, the turn resumes and plays to the end.
	do(
		chromedp.Click(chromedp.CSS(`#pending .pcall button.allow`)),
		chromedp.WaitVisible(chromedp.CSS(`body[data-play="done"]`)),
		until(`document.querySelectorAll('#log .ev').length === 52`),
	)
	assert.Contains(t, text(`#result .verdict`), "Allowed: call_1_1_0, logged as approval/decision at seq 16")
	assert.Equal(t, "approval/decision", text(`#log .ev[data-seq="16"] .type`))
	assert.Equal(t, "tool/start", text(`#log .ev[data-seq="17"] .type`))
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('#pending').hidden`))
	require.NoError(t, err)
	assert.True(t, hidden, "nothing waits any more")
	shot("playground-played.png")
	assert.Equal(t, 2, count(`#log .g-turn`), "events grouped by turn")
	assert.Equal(t, 3, count(`#log .g-step`), "and by step")
	assert.Equal(t, 2, count(`#log .g-compaction .ev.k-compaction`), "compaction/start and compaction/end, grouped")
	assert.Equal(t, 3, count(`#log .ev.shadowed`), "the question, tool call and result the summary replaced")
	assert.Equal(t, 4, count(`#messages .msg`))
	inOrder := make([]string, 52)
	for i := range inOrder {
		inOrder[i] = fmt.Sprint(i)
	}
	assert.Equal(t, strings.Join(inOrder, " "), shownSeqs())
	assert.Equal(t, 5, count(`#request .msg`), "the fold and this turn's message")
	assert.Contains(t, text(`#status`), "done")

	// Be the bad actor: delete the second question, send the next request.
	const second = `#log .ev[data-type="user/message"][data-seq="36"]`
	do(
		chromedp.Click(chromedp.CSS(second)),
		chromedp.Click(chromedp.CSS(second+` .op-del`)),
		chromedp.WaitVisible(chromedp.CSS(`#log .ev.doomed[data-seq="36"]`)),
	)
	assert.Contains(t, text(`#staged`), "seq 36")
	do(
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitVisible(chromedp.CSS(`#result .violation code.rule`)),
		chromedp.Sleep(1500*time.Millisecond), // let the ticks appear
	)
	shot("playground-refused.png")
	assert.Contains(t, text(`#result .verdict`), "Refused by the invariants plugin")
	assert.Equal(t, "request-reconstruction", text(`#result .violation code.rule`))
	assert.Equal(t, "message 2 differs from the fold of the log", text(`#result .violation .vmsg`))
	assert.Equal(t, "✗", strings.TrimSpace(text(`#result td.mark.bad`)), "a red cross at the first divergence")
	assert.Equal(t, 1, count(`#result td.mark.bad`))
	assert.Equal(t, 2, count(`#result td.mark.ok`), "a tick for each message before it")

	// The forged session is shown; verify names what the deletion broke.
	assert.Contains(t, text(`#tabs .tab[aria-selected="true"]`), "demo−36")
	assert.Regexp(t, `^forged demo−36 · \d+ events · the demo is done$`, text(`#status`), "the status line names the session shown")
	do(
		chromedp.KeyEvent("v"),
		until(`(document.querySelector('#result .verdict') || {textContent: ''}).textContent.includes('Verify')`),
	)
	assert.Contains(t, text(`#result`), "request-digest")

	// Back on the demo: edit a message of the next request, bypassing the
	// log, and send it with the keyboard.
	do(
		chromedp.Click(chromedp.CSS(`#tabs .tab[data-kind="demo"]`)),
		chromedp.Click(chromedp.CSS(`#request .msg[data-index="1"] .edit`)),
		chromedp.SetValue(chromedp.CSS(`#request textarea.editbox`), "A week has 1 second."),
		chromedp.Click(chromedp.CSS(`#request .editbtns .primary`)),
		chromedp.WaitVisible(chromedp.CSS(`#request .msg.tampered[data-index="1"]`)),
	)
	assert.Contains(t, text(`#staged`), "message #1")
	do(
		chromedp.KeyEvent(kb.Enter),
		until(`(document.querySelector('#result .violation .vmsg') || {textContent: ''}).textContent.includes('message 1')`),
		chromedp.Sleep(1200*time.Millisecond),
	)
	shot("playground-edited.png")
	assert.Equal(t, "request-reconstruction", text(`#result .violation code.rule`))
	assert.Equal(t, 1, count(`#result td.mark.ok`))
	assert.Equal(t, 1, count(`#result td.mark.bad`))
	assert.Contains(t, text(`#tabs .tab[aria-selected="true"]`), "demo@51")
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, exceptions, "no script error on the page")
}

// countControls counts, in window.__controls, the page's /api/control
// requests and those whose answer the page has taken in.
const countControls = `
window.__controls = { sent: 0, settled: 0 };
const fetch0 = window.fetch;
window.fetch = function (input, init) {
  const p = fetch0.apply(this, arguments);
  if (!String(input).includes('/api/control')) return p;
  window.__controls.sent++;
  const settled = () => setTimeout(() => { window.__controls.settled++; }, 0);
  return p.then((res) => {
    const json = res.json.bind(res);
    res.json = () => json().finally(settled);
    return res;
  }, (err) => { settled(); throw err; });
};`

// lateAnswers serves pg, but holds the answer to a control op until the
// demo is no longer playing, so that the page gets the answer after the
// play events that followed it — what a loaded machine may do.
func lateAnswers(pg *Server, op string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.URL.Path != "/api/control" || !bytes.Contains(body, []byte(`"`+op+`"`)) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			pg.ServeHTTP(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		v, err := pg.visitorOf(r)
		if err != nil {
			writeError(w, err)
			return
		}
		rec := httptest.NewRecorder()
		pg.ServeHTTP(rec, r)
		events, cancel := v.hub.subscribe()
		defer cancel()
		for f := range events {
			if st, ok := playOf(f); ok && st != statePlaying {
				break
			}
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// playOf returns the player's state in a hello or play event frame.
func playOf(frame []byte) (string, bool) {
	name, rest, _ := bytes.Cut(frame, []byte("\n"))
	data, ok := bytes.CutPrefix(bytes.TrimSpace(rest), []byte("data: "))
	if !ok {
		return "", false
	}
	var v struct {
		State string    `json:"state"`
		Play  playState `json:"play"`
	}
	if json.Unmarshal(data, &v) != nil {
		return "", false
	}
	switch string(name) {
	case "event: play":
		return v.State, true
	case "event: hello":
		return v.Play.State, true
	}
	return "", false
}

func quoteJS(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// tab drives one browser tab in a test.
type tab struct {
	t   *testing.T
	ctx context.Context
}

func (p tab) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	require.NoError(p.t, chromedp.Do(p.ctx, steps...))
}

func (p tab) eval(expr string) string {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](expr))
	require.NoError(p.t, err)
	return v
}

func (p tab) events() string {
	p.t.Helper()
	return p.eval(`String(document.querySelectorAll('#log .ev').length)`)
}

func (p tab) status() string {
	p.t.Helper()
	return p.eval(`document.querySelector('#status').textContent`)
}

// send describes the send button: "disabled: why" or "enabled".
func (p tab) send() string {
	p.t.Helper()
	return p.eval(`(() => { const b = document.querySelector('#send'); return b.disabled ? 'disabled: ' + b.title : 'enabled'; })()`)
}

func until(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(20*time.Second))
}

// TestBrowserEveryTabHasItsOwnDemo opens the playground in two tabs of
// one browser: each plays its own demo, the status line says what the
// tab shows, and "Send next request" waits for something to send.
func TestBrowserEveryTabHasItsOwnDemo(t *testing.T) {
	ctx := browser(t)
	pg := newPlayground(t, Options{Delay: time.Hour})
	srv := httptest.NewServer(pg)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { _ = pg.Close() }) // ends the pages' event streams first

	a := tab{t, ctx}
	a.do(
		chromedp.Navigate(srv.URL),
		until(`document.querySelector('#status').textContent.startsWith('idle')`),
	)
	assert.Equal(t, "disabled: Nothing to send: play or step the demo first", a.send())
	a.do(
		chromedp.KeyEvent(kb.ArrowRight), until(`document.querySelectorAll('#log .ev').length === 1`),
		chromedp.KeyEvent(kb.ArrowRight), until(`document.querySelectorAll('#log .ev').length === 2`),
		chromedp.KeyEvent(kb.ArrowRight), until(`document.querySelectorAll('#log .ev').length === 3`),
	)
	assert.Equal(t, "demo paused · 3 events — → for the next one", a.status())
	assert.Equal(t, "disabled: Nothing to send: a turn is running; step or play it to its end", a.send())

	// A second tab: a demo of its own, not the first tab's.
	bctx, bcancel := chromedp.NewContext(ctx)
	t.Cleanup(bcancel)
	b := tab{t, bctx}
	b.do(
		chromedp.Navigate(srv.URL),
		until(`document.querySelector('#status').textContent.startsWith('idle')`),
	)
	assert.Equal(t, "0", b.events(), "a new tab shows no other tab's session")
	assert.Equal(t, "0", b.eval(`String(document.querySelectorAll('#tabs .tab').length)`))
	assert.Equal(t, "idle — press Space to play, → to step", b.status())
	assert.Equal(t, "disabled: Nothing to send: play or step the demo first", b.send())
	b.do(chromedp.KeyEvent(kb.ArrowRight), until(`document.querySelectorAll('#log .ev').length === 1`))
	assert.Equal(t, "demo paused · 1 events — → for the next one", b.status())

	// The first tab runs its demo to the end; the second is left as it is.
	a.do(
		chromedp.KeyEvent("e"),
		chromedp.WaitVisible(chromedp.CSS(`#pending .pcall button.allow`)),
		chromedp.Click(chromedp.CSS(`#pending .pcall button.allow`)),
		chromedp.WaitVisible(chromedp.CSS(`body[data-play="done"]`)),
		until(`document.querySelectorAll('#log .ev').length === 52`),
	)
	assert.Equal(t, "demo done · 52 events — now break it", a.status())
	assert.Equal(t, "enabled", a.send())
	assert.Equal(t, "1", b.events())
	assert.Equal(t, "paused", b.eval(`document.body.dataset.play`))

	// A fork in view: the status line names it, not the demo.
	a.do(
		chromedp.KeyEvent(kb.ArrowUp), // the last event: the second turn's turn/end
		chromedp.KeyEvent("f"),
		until(`(document.querySelector('#tabs .tab[aria-selected="true"]') || {dataset: {}}).dataset.kind === 'fork'`),
	)
	assert.Equal(t, "fork demo@51 · 53 events · the demo is done", a.status())
	assert.Equal(t, "enabled", a.send())
	assert.Equal(t, "1", b.events())
}
